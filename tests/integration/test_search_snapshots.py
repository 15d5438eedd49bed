"""The plain tier keeps each tenant's memories in memory between searches. These tests hold it
to what a search over the database would return: every writer, in this process or another,
is seen by the next retrieve, and nothing of another tenant leaks in.

Two ``LongTermMemory`` instances share nothing but the database (each has its own searcher
and kept corpora), so one stands for another process; the last test uses a real one.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from asyncio.subprocess import PIPE
from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.memory.episodic.memory import EpisodicMemory
from agent_memory.memory.long_term.decay import DecayJob
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import NewMemory
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.search.snapshots import GENERATIONS
from agent_memory.tenancy import Tenant

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")


@pytest.fixture
async def two(connection, embedder):
    """A reader and a writer over the same database, as two processes would be."""
    await IndexManager(connection, embedder.signature).setup()
    reader, writer = LongTermMemory(connection, embedder), LongTermMemory(connection, embedder)
    await writer.store_many(ALICE, [NewMemory(f"Alice note {i} about gardening") for i in range(8)])
    await reader.retrieve(ALICE, "gardening")  # the reader now keeps Alice's memories
    yield reader, writer
    await reader.aclose()
    await writer.aclose()


def contents(hits):
    return [hit.memory.content for hit in hits]


async def test_a_memory_stored_elsewhere_is_found_by_the_next_retrieve(two):
    reader, writer = two
    await writer.store(ALICE, "Alice adopted a greyhound called Biscuit")
    assert contents(await reader.retrieve(ALICE, "greyhound Biscuit", k=1)) == [
        "Alice adopted a greyhound called Biscuit"
    ]


async def test_forgotten_and_superseded_memories_are_gone_for_the_reader(two):
    reader, writer = two
    first = await writer.store(ALICE, "Alice lives in Berlin", key="home")
    assert "Alice lives in Berlin" in contents(await reader.retrieve(ALICE, "where does she live"))
    await writer.store(ALICE, "Alice lives in Lisbon", key="home")
    found = contents(await reader.retrieve(ALICE, "where does she live", k=3))
    assert "Alice lives in Lisbon" in found and "Alice lives in Berlin" not in found
    history = await reader.retrieve(ALICE, "Berlin", k=3, include_history=True)
    assert first.id in [hit.memory.id for hit in history]
    gone = await writer.store(ALICE, "Alice keeps a diary")
    await writer.forget(ALICE, gone.id)
    assert "Alice keeps a diary" not in contents(await reader.retrieve(ALICE, "diary", k=10))
    await writer.forget_user(ALICE)
    assert await reader.retrieve(ALICE, "gardening") == []


async def test_feedback_from_elsewhere_changes_the_readers_ranking(two, connection, embedder):
    reader, _ = two
    # learn=False: the question does not teach the keyword trust, so relevance is the same
    # in both retrieves and only the feedback moves the score.
    hits = await reader.retrieve(ALICE, "gardening", k=8, learn=False)
    top = hits[0].memory.id
    episodic = EpisodicMemory(connection, embedder)
    for _ in range(3):
        action = await episodic.log_action(
            ALICE,
            session_id="s",
            action_type="query_response",
            outcome="success",
            memory_ids=[top],
            embed=False,
        )
        await episodic.add_feedback(ALICE, action, rating=1)
    after = await reader.retrieve(ALICE, "gardening", k=8, learn=False)
    demoted = next(hit for hit in after if hit.memory.id == top)
    assert demoted.breakdown.utility == pytest.approx(-3 / (3 + 2))  # three 1/5 ratings
    assert demoted.score == pytest.approx(hits[0].score - 0.2 * 3 / 5)


async def test_decay_from_elsewhere_reaches_the_reader(two, connection):
    reader, _ = two
    later = datetime.now(UTC) + timedelta(days=90)
    report = await DecayJob(connection).run(now=later)
    assert report.decayed == 8
    hits = await reader.retrieve(ALICE, "gardening", k=8, now=later)
    assert {round(hit.breakdown.importance, 3) for hit in hits} == {0.475}


async def test_a_tag_added_by_reinforcement_is_filterable_for_the_reader(two):
    reader, writer = two
    await writer.store(ALICE, "Alice waters the roses at dawn")
    assert await reader.retrieve(ALICE, "roses", tags="garden") == []
    await writer.store(ALICE, "Alice waters the roses at dawn", tags=["garden"])  # a repeat
    assert contents(await reader.retrieve(ALICE, "roses", tags="garden")) == [
        "Alice waters the roses at dawn"
    ]


async def test_a_write_around_the_class_is_seen_once_announced(two, connection):
    reader, writer = two
    hits = await reader.retrieve(ALICE, "gardening", k=1)
    await connection.collection("memories").update_one(
        {"_id": hits[0].memory.id}, {"$set": {"importance": 0.01}}
    )
    await writer.announce(ALICE)
    again = await reader.retrieve(ALICE, "gardening", k=8)
    assert next(h for h in again if h.memory.id == hits[0].memory.id).breakdown.importance == 0.01


async def test_tenants_stay_apart_and_tokens_name_their_tenant(two, connection):
    reader, writer = two
    await writer.store(BOB, "Bob also gardens, secretly")
    assert all(h.memory.user_id == "alice" for h in await reader.retrieve(ALICE, "gardens", k=20))
    assert contents(await reader.retrieve(BOB, "gardens")) == ["Bob also gardens, secretly"]
    tokens = await connection.collection(GENERATIONS).find({}).to_list(None)
    assert {(t["agent_id"], t["user_id"]) for t in tokens} == {("agent", "alice"), ("agent", "bob")}
    await writer.forget_user(BOB)
    assert await connection.collection(GENERATIONS).count_documents({"user_id": "bob"}) == 0


async def test_a_missing_or_foreign_token_only_makes_the_reader_read_again(two, connection):
    reader, _ = two
    await connection.collection(GENERATIONS).delete_many({})
    assert len(await reader.retrieve(ALICE, "gardening", k=8)) == 8
    await connection.collection(GENERATIONS).update_many({}, {"$set": {"token": 42}})
    assert len(await reader.retrieve(ALICE, "gardening", k=8)) == 8


async def test_a_memory_stored_by_another_process_is_found(two, settings, embedded_server):
    reader, _ = two
    script = textwrap.dedent(
        f"""
        import asyncio
        from agent_memory.config import load_settings
        from agent_memory.tenancy import Tenant
        from agent_memory.memory.long_term.memory import LongTermMemory
        from agent_memory.mongo.connection import connect
        from agent_memory.providers.embedders.fake import FakeEmbedder

        async def main():
            settings = load_settings(
                mongodb_uri={embedded_server.uri!r}, database={settings.database!r},
                embedder="fake",
            )
            async with await connect(settings) as connection:
                memory = LongTermMemory(connection, FakeEmbedder())
                await memory.store(Tenant("agent", "alice"), "Alice learned to play the oboe")
                await memory.aclose()

        asyncio.run(main())
        """
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=PIPE, stderr=PIPE
    )
    _, stderr = await asyncio.wait_for(child.communicate(), timeout=120)
    assert child.returncode == 0, stderr.decode()[-2000:]
    assert contents(await reader.retrieve(ALICE, "oboe", k=1)) == ["Alice learned to play the oboe"]


async def test_a_first_read_is_one_find_and_new_vectors_come_in_bounded_batches(
    counted, embedder, monkeypatch
):
    from agent_memory.mongo.search import snapshots

    connection, counter = counted
    await IndexManager(connection, embedder.signature).setup()
    writer = LongTermMemory(connection, embedder)
    await writer.store_many(ALICE, [NewMemory(f"Alice fact {i} about kites") for i in range(12)])
    reader = LongTermMemory(connection, embedder)
    vector = await embedder.embed_query("kites")
    with counter.count() as sent:
        assert len(await reader.retrieve(ALICE, "kites", k=20, query_vector=vector)) == 12
    # token, token created for the tenant if missing (not here), the documents with vectors
    assert sent == ["find", "find"]
    await reader.drain()  # its access statistics, written in the background
    monkeypatch.setattr(snapshots, "VECTOR_BATCH", 3)
    await writer.store_many(
        ALICE, [NewMemory(f"Alice new fact {i} about kites") for i in range(7)], consolidate=False
    )
    with counter.count() as sent:
        hits = await reader.retrieve(ALICE, "kites", k=30, query_vector=vector)
    assert len(hits) == 19
    # token, the writes logged since the reader's token, then the 7 new documents 3 at a time
    assert sent == ["find", "find", "find", "find", "find"]
    await reader.aclose()
    await writer.aclose()


def _finds(counter, since):
    return [body for name, body in counter.documents[since:] if name == "find"]


async def test_a_reader_behind_by_a_few_writes_reads_only_what_they_touched(counted, embedder):
    """Another process's write costs a reader the documents it touched, not the tenant's
    history: the reader follows the writes logged in the generation document."""
    connection, counter = counted
    await IndexManager(connection, embedder.signature).setup()
    writer, reader = LongTermMemory(connection, embedder), LongTermMemory(connection, embedder)
    stored = await writer.store_many(
        ALICE, [NewMemory(f"Alice note {i} about kites") for i in range(40)], consolidate=False
    )
    await reader.retrieve(ALICE, "kites")
    await reader.drain()
    added = await writer.store(ALICE, "Alice flew a red box kite at the beach")
    await writer.forget(ALICE, stored[0].id)
    await writer.edit(ALICE, stored[1].id, content="Alice repaired a torn kite sail")
    since = len(counter.documents)
    found = await reader.retrieve(ALICE, "kite", k=50)
    ids = {hit.memory.id for hit in found}
    assert added.id in ids and stored[0].id not in ids
    assert "Alice repaired a torn kite sail" in [hit.memory.content for hit in found]
    reads = [body for body in _finds(counter, since) if "memories" in str(body.get("find"))]
    assert reads, "the reader read nothing"
    for body in reads:  # only the touched documents, never the tenant's whole history
        assert set(body["filter"]["_id"]["$in"]) <= {added.id, stored[0].id, stored[1].id}
    assert reader._searcher.snapshots.followed == 1
    await reader.aclose()
    await writer.aclose()


async def test_a_reader_reads_again_when_the_log_cannot_say_what_changed(counted, embedder):
    from agent_memory.mongo.search import snapshots

    connection, counter = counted
    await IndexManager(connection, embedder.signature).setup()
    writer, reader = LongTermMemory(connection, embedder), LongTermMemory(connection, embedder)
    await writer.store_many(ALICE, [NewMemory(f"Alice note {i} about owls") for i in range(6)])
    await reader.retrieve(ALICE, "owls")
    # A write around the class names nothing: the reader reads the tenant again.
    await connection.collection("memories").update_many(
        {"user_id": "alice"}, {"$set": {"tags": ["birds"]}}
    )
    await writer.announce(ALICE)
    since = len(counter.documents)
    assert len(await reader.retrieve(ALICE, "owls", k=10, tags="birds")) == 6
    whole = [b for b in _finds(counter, since) if "_id" not in b.get("filter", {})]
    assert any("memories" in str(b.get("find")) for b in whole)
    # Too far behind: more writes than the log remembers.
    await reader.retrieve(ALICE, "owls")
    for i in range(snapshots.LOG_LENGTH + 1):
        await writer.store(ALICE, f"Alice saw barn owl number {i}", consolidate=False)
    before = reader._searcher.snapshots.refreshes
    assert len(await reader.retrieve(ALICE, "barn owl", k=100)) == 6 + snapshots.LOG_LENGTH + 1
    assert reader._searcher.snapshots.refreshes == before + 1
    # A link missing: a writer set its token and failed before logging it; the next write
    # is logged, but the reader cannot know what the unlogged one touched.
    await connection.collection("memories").update_many(
        {"user_id": "alice", "content": "Alice saw barn owl number 0"},
        {"$set": {"tags": ["lost"]}},
    )
    await connection.collection(snapshots.GENERATIONS).update_one(
        {"_id": snapshots.generation_id("memories", ALICE.filter())},
        {"$set": {"token": "set-by-a-writer-that-died"}},
    )
    await writer.store(ALICE, "Alice saw a snowy owl", consolidate=False)
    before = reader._searcher.snapshots.refreshes
    assert contents(await reader.retrieve(ALICE, "barn owl", k=5, tags="lost")) == [
        "Alice saw barn owl number 0"
    ]
    assert reader._searcher.snapshots.refreshes == before + 1
    await reader.aclose()
    await writer.aclose()


async def test_a_memory_edited_beyond_the_log_is_searched_by_its_new_vector(two):
    """A reader too far behind to follow the log reads the tenant again without the vectors
    it holds: a held memory whose text changed meanwhile gets its new vector too."""
    from agent_memory.mongo.search import snapshots

    reader, writer = two
    first = await writer.store(ALICE, "Alice keeps a goldfish called Bubbles")
    await reader.retrieve(ALICE, "goldfish")  # kept, with the goldfish's vector
    await writer.edit(ALICE, first.id, content="Alice adopted a greyhound named Comet")
    for i in range(snapshots.LOG_LENGTH + 1):
        await writer.store(ALICE, f"Alice planted tulip bulb number {i}", consolidate=False)
    ((memory, cosine),) = await reader.similar(ALICE, "Alice adopted a greyhound named Comet", k=1)
    assert memory.id == first.id
    assert cosine == pytest.approx(1.0, abs=1e-4)


async def test_the_token_read_at_every_search_stays_small_however_long_the_log(
    counted, embedder, monkeypatch
):
    """The log of writes is a document of its own: the token document every search reads
    holds the token and the tenant, not the ids of the last writes (the embedded engine
    decodes a whole document to return one field of it). A token document written by an
    earlier version, with its log inside, loses the log at the next write."""
    from bson import encode

    from agent_memory.mongo.search import snapshots

    # A log of 8 writes behaves as one of 64, in an eighth of the writes (90 s on 2 cores).
    monkeypatch.setattr(snapshots, "LOG_LENGTH", 8)

    connection, _ = counted
    await IndexManager(connection, embedder.signature).setup()
    generations = connection.collection(snapshots.GENERATIONS)
    token_id = snapshots.generation_id("memories", ALICE.filter())
    writer, reader = LongTermMemory(connection, embedder), LongTermMemory(connection, embedder)
    await writer.store(ALICE, "Alice keeps bees", consolidate=False)
    await reader.retrieve(ALICE, "bees")
    await generations.update_one({"_id": token_id}, {"$set": {"log": ["x" * 40] * 3_000}})
    for batch in range(snapshots.LOG_LENGTH + 2):
        await writer.store_many(
            ALICE,
            [NewMemory(f"Alice hive {batch} frame {i}") for i in range(50)],
            consolidate=False,
        )
    document = await generations.find_one({"_id": token_id})
    assert set(document) == {"_id", "token", "agent_id", "user_id", "updated_at"}
    assert len(encode(document)) < 1_000
    log = await generations.find_one({"_id": snapshots.log_id("memories", ALICE.filter())})
    assert len(log["log"]) == snapshots.LOG_LENGTH
    assert [len(json.loads(entry["ids"])) for entry in log["log"]] == [50] * snapshots.LOG_LENGTH
    await reader.retrieve(ALICE, "bees")  # too far behind: read again, then kept
    before = reader._searcher.snapshots.followed
    await writer.store(ALICE, "Alice bought a smoker for the hives", consolidate=False)
    assert contents(await reader.retrieve(ALICE, "smoker for the hives", k=1)) == [
        "Alice bought a smoker for the hives"
    ]
    assert reader._searcher.snapshots.followed == before + 1
    await writer.forget_user(ALICE)
    assert await generations.count_documents({"user_id": "alice"}) == 0
    await reader.aclose()
    await writer.aclose()


async def test_a_corpus_slow_to_read_is_read_for_its_age_less_often(two, monkeypatch):
    """A full read for the corpus's age takes at most FULL_READ_SHARE of the time it is kept:
    a corpus that took 10 s to read is not read again after the 300 s maximum age."""
    import time

    from agent_memory.mongo.search import snapshots as module

    reader, _ = two
    snapshots = reader._searcher.snapshots
    kept = next(iter(snapshots._kept.values()))
    kept.read_at = time.monotonic() - 2 * module.DEFAULT_MAX_AGE_SECONDS
    assert not snapshots.current(kept, kept.token)
    kept.read_seconds = 10.0  # a long history: 10 s / 0.01 = 1,000 s between full reads
    assert snapshots.current(kept, kept.token)
    kept.read_at = time.monotonic() - 10.0 / module.FULL_READ_SHARE - 1
    assert not snapshots.current(kept, kept.token)


async def test_a_write_whose_announcement_failed_is_still_found_by_this_process(
    connection, embedder
):
    from pymongo.errors import AutoReconnect

    from agent_memory.errors import StorageUnavailableError

    await IndexManager(connection, embedder.signature).setup()
    memory = LongTermMemory(connection, embedder)
    await memory.store(ALICE, "Alice collects stamps")
    await memory.retrieve(ALICE, "stamps")  # kept
    snapshots = memory._searcher.snapshots
    generations = snapshots._generations

    class Down:
        """The token collection refuses every write; reads go through."""

        def __getattr__(self, name):
            return getattr(generations, name)

        async def update_one(self, *args, **kwargs):
            raise AutoReconnect("connection lost")

        bulk_write = find_one_and_update = update_one

    snapshots._generations = Down()
    memory._generations = Down()
    with pytest.raises(StorageUnavailableError):
        await memory.store(ALICE, "Alice bought a rare Penny Black stamp")
    snapshots._generations = generations
    memory._generations = generations
    # The memory landed; no token changed, yet this process does not answer from what it kept.
    found = [h.memory.content for h in await memory.retrieve(ALICE, "Penny Black", k=2)]
    assert found[0] == "Alice bought a rare Penny Black stamp"
    await memory.aclose()


# --- generation tokens read together ------------------------------------------------------------


async def test_tokens_asked_for_at_once_are_read_in_one_find(counted, embedder):
    """Searches of several tenants at the same moment (the users of a busy agent) read their
    generation tokens in one command, and each gets its own tenant's answer."""
    connection, counter = counted
    await IndexManager(connection, embedder.signature).setup()
    memory = LongTermMemory(connection, embedder)
    await memory.store(ALICE, "Alice plays the cello")
    await memory.store(BOB, "Bob plays the drums")
    vector = await embedder.embed_query("which instrument")
    for tenant in (ALICE, BOB):
        await memory.retrieve(tenant, "instrument", query_vector=vector)  # now kept
    await memory.drain()
    with counter.count() as sent:
        alice, bob = await asyncio.gather(
            memory.retrieve(ALICE, "instrument", query_vector=vector),
            memory.retrieve(BOB, "instrument", query_vector=vector),
        )
    assert [c for c in sent if c == "find"] == ["find"]
    assert contents(alice) == ["Alice plays the cello"] and contents(bob) == ["Bob plays the drums"]
    # A write between two searches is seen by the second (its token is read afresh).
    await memory.store(BOB, "Bob also plays the banjo")
    assert "Bob also plays the banjo" in contents(
        await memory.retrieve(BOB, "banjo", query_vector=await embedder.embed_query("banjo"))
    )
    await memory.aclose()


async def test_a_failed_token_read_fails_each_search_that_waited_for_it_and_only_those(
    connection, embedder
):
    from pymongo.errors import AutoReconnect

    from agent_memory.errors import StorageUnavailableError

    await IndexManager(connection, embedder.signature).setup()
    memory = LongTermMemory(connection, embedder)
    await memory.store(ALICE, "Alice grows tomatoes")
    await memory.store(BOB, "Bob grows peppers")
    reads = connection.token_reads
    generations = reads._generations

    class Down:
        def __getattr__(self, name):
            return getattr(generations, name)

        def find(self, *args, **kwargs):
            raise AutoReconnect("connection lost")

    reads._generations = Down()
    try:
        results = await asyncio.gather(
            memory.retrieve(ALICE, "grows"), memory.retrieve(BOB, "grows"), return_exceptions=True
        )
    finally:
        reads._generations = generations
    assert [type(r) for r in results] == [StorageUnavailableError] * 2
    # Nothing is left waiting or stuck: the next searches read and answer.
    assert contents(await memory.retrieve(ALICE, "tomatoes")) == ["Alice grows tomatoes"]
    await memory.aclose()


async def test_a_search_cancelled_while_its_token_is_read_leaves_the_others_answered(
    connection, embedder
):
    await IndexManager(connection, embedder.signature).setup()
    memory = LongTermMemory(connection, embedder)
    await memory.store(ALICE, "Alice reads poetry")
    await memory.store(BOB, "Bob reads novels")
    vector = await embedder.embed_query("reads")
    cancelled = asyncio.create_task(memory.retrieve(ALICE, "reads", query_vector=vector))
    answered = asyncio.create_task(memory.retrieve(BOB, "reads", query_vector=vector))
    reads = connection.token_reads
    for _ in range(100):  # until both wait for the one token read (a few turns of the loop)
        if len(reads._asked) == 2:
            break
        await asyncio.sleep(0)
    assert len(reads._asked) == 2
    cancelled.cancel()
    assert contents(await answered) == ["Bob reads novels"]
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert contents(await memory.retrieve(ALICE, "poetry")) == ["Alice reads poetry"]
    await memory.aclose()


async def test_a_write_that_says_only_which_memories_it_touched_reaches_every_reader(two):
    """Tags added to some memories (one update of many, no description of each): the writer's
    kept copy and another reader both read just those memories again, and filter by the tag."""
    reader, writer = two
    await writer.retrieve(ALICE, "gardening")  # the writer keeps Alice's memories too
    notes = await writer.list_memories(ALICE, limit=3)
    ids = [memory.id for memory in notes]
    writer_snapshots, reader_snapshots = writer._searcher.snapshots, reader._searcher.snapshots
    refreshes = (writer_snapshots.refreshes, reader_snapshots.refreshes)
    assert await writer.tag_memories(ALICE, ids, "favourite") == 3
    for memory in (writer, reader):
        found = await memory.retrieve(ALICE, "gardening", k=10, tags="favourite")
        assert sorted(hit.memory.id for hit in found) == sorted(ids)
    assert (writer_snapshots.refreshes, reader_snapshots.refreshes) == refreshes
    assert reader_snapshots.followed == 1

"""Commands each long-term-memory operation sends, held to the documented numbers.

The numbers are in the docstrings of ``agent_memory.memory.long_term.memory``, ``.decay`` and
``.profile``; a change that adds a round trip must change the documentation too.
"""

from __future__ import annotations

from agent_memory.memory.long_term.decay import DecayJob
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.profile import ProfileMemory
from agent_memory.memory.long_term.records import NewMemory
from agent_memory.mongo.indexes import IndexManager
from agent_memory.tenancy import Tenant

T = Tenant("agent", "user")


async def test_long_term_round_trips(counted, embedder):
    connection, counter = counted
    await IndexManager(connection, embedder.signature).setup()
    memory = LongTermMemory(connection, embedder)
    expected = []

    async def measure(name, operation, limit):
        with counter.count() as sent:
            result = await operation
        expected.append((name, len(sent), limit, list(sent)))
        return result

    await measure("store on first use", memory.store(T, "first fact about tea"), 6)
    await measure("store", memory.store(T, "second fact about coffee"), 3)
    await measure("store new key", memory.store(T, "lives in Berlin", key="home"), 3)
    await measure("store supersede", memory.store(T, "lives in Rome", key="home"), 4)
    await measure("store repeat", memory.store(T, "lives in Rome", key="home"), 2)
    await measure(
        "store_many unconsolidated",
        memory.store_many(T, [NewMemory(f"note {i}") for i in range(10)], consolidate=False),
        2,
    )
    await measure(
        "store_many consolidated, 10 new",
        memory.store_many(T, [NewMemory(f"fact {i} about kites") for i in range(10)]),
        12,
    )
    hits = await measure("retrieve", memory.retrieve(T, "tea"), 1)
    await memory.drain()
    await measure("get", memory.get(T, hits[0].memory.id), 1)
    await measure("history", memory.history(T, key="home"), 1)
    await measure("decay", DecayJob(connection).run(), 3)
    profiles = ProfileMemory(connection, memory)
    # A patch reads, writes and announces its write (profiles are kept between reads).
    await measure("profile patch (new)", profiles.patch(T, {"home": "Rome"}), 3)
    await measure("profile patch", profiles.patch(T, {"home": "Oslo"}), 3)
    await measure("profile get (changed)", profiles.get(T), 2)
    await measure("profile get (kept)", profiles.get(T), 1)
    await measure("forget_user", memory.forget_user(T), 3)  # memories, field vectors, token
    await memory.aclose()

    over = [(name, count, limit, sent) for name, count, limit, sent in expected if count > limit]
    assert not over, f"more commands than documented: {over}"


async def test_retrieve_reads_only_the_generation_token_while_nothing_changed(counted, embedder):
    """The plain tier keeps the tenant's memories between searches: a retrieve sends one small
    read (the tenant's generation token, by ``_id``) and ranks what it keeps; the tenant's own
    writes are followed without reading the memories again."""
    connection, counter = counted
    await IndexManager(connection, embedder.signature).setup()
    memory = LongTermMemory(connection, embedder)
    await memory.store_many(T, [NewMemory(f"fact {i} about tea") for i in range(20)])
    await memory.retrieve(T, "tea")  # keeps the corpus
    await memory.store(T, "one more fact about coffee")  # followed, not read back
    vector = await embedder.embed_query("coffee")
    await memory.drain()  # the first retrieve's access statistics, written in the background
    with counter.count() as sent:
        hits = await memory.retrieve(T, "coffee", query_vector=vector)
    assert sent == ["find"]
    assert hits[0].memory.content == "one more fact about coffee"
    snapshots = memory._searcher.snapshots
    assert snapshots.refreshes == 1
    await memory.aclose()

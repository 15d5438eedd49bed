"""The knowledge base on the embedded server: ingest, retrieve, scopes, re-ingest, delete."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from agent_memory.errors import EmbeddingMismatchError, InvalidInputError
from agent_memory.memory.knowledge.base import (
    SHARED_USER,
    KnowledgeBase,
    KnowledgeConfig,
    SharedKnowledge,
)
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.search import SearchQuery
from agent_memory.providers.embedders.fake import FakeEmbedder
from agent_memory.tenancy import Tenant

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")
SHARED = SharedKnowledge("agent")
SMALL = KnowledgeConfig(chunk_tokens=40, overlap_tokens=8)

MANUAL = "\n\n".join(
    [
        "Installation. Download the installer from the portal and run it as administrator. "
        "The installer asks for a licence key during setup.",
        "Billing. Invoices are sent on the first day of each month. Refunds are issued within "
        "fourteen days when a subscription is cancelled before renewal.",
        "Security. Passwords are hashed with bcrypt and sessions expire after thirty minutes "
        "of inactivity. Two factor authentication is available for every account.",
        "Troubleshooting. If the printer shows error 42, clean the paper tray and restart the "
        "spooler service. Error 43 means the toner cartridge is empty.",
    ]
)


@pytest.fixture
async def kb(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    return KnowledgeBase(connection, embedder, config=SMALL)


async def chunks_of(connection, **where):
    return await connection.collection("knowledge_chunks").find(where).to_list(None)


async def test_ingest_then_retrieve_ranks_the_right_chunk_first(kb):
    report = await kb.ingest(ALICE, source="manual.txt", text=MANUAL, title="Manual")
    assert report.action == "inserted" and report.chunks >= 4
    hits = await kb.retrieve(ALICE, "printer error 42 paper tray", k=3)
    assert "error 42" in hits[0].content
    assert hits[0].source == "manual.txt" and hits[0].title == "Manual"
    assert set(hits[0].sources) == {"vector", "text"}
    assert hits[0].sources["vector"].rank == 1
    assert "vector #1" in hits[0].explain() and "manual.txt#" in hits[0].explain()
    refund = await kb.retrieve(ALICE, "when are refunds issued?", k=1)
    assert "Refunds" in refund[0].content


async def test_stored_chunks_have_the_documented_shape(connection, kb):
    await kb.ingest(ALICE, source="manual.txt", text=MANUAL, metadata={"lang": "en"}, tags=["ops"])
    docs = sorted(await chunks_of(connection, source="manual.txt"), key=lambda d: d["chunk_index"])
    assert [d["chunk_index"] for d in docs] == list(range(len(docs)))
    first = docs[0]
    assert {"agent_id", "user_id", "source", "chunk_count", "title", "content", "metadata"} <= set(
        first
    )
    assert {"embedding", "content_hash", "ingested_at", "version", "state", "tags"} <= set(first)
    assert first["embedding"].subtype == 9  # binary vector
    assert {d["state"] for d in docs} == {"live"} and {d["chunk_count"] for d in docs} == {
        len(docs)
    }
    assert all(MANUAL[d["start"] : d["end"]] == d["content"] for d in docs)
    assert first["metadata"] == {"lang": "en"} and first["tags"] == ["ops"]


async def test_users_see_their_own_and_shared_knowledge_never_each_others(kb):
    await kb.ingest(ALICE, source="notes", text="Alice's locker code is 4711.")
    await kb.ingest(BOB, source="notes", text="Bob's locker code is 9999.")
    await kb.ingest(SHARED, source="policy", text="Lockers are emptied every Friday evening.")
    await kb.ingest(SharedKnowledge("other-agent"), source="x", text="Lockers of another agent.")
    alice = await kb.retrieve(ALICE, "locker code lockers", k=10)
    bob = await kb.retrieve(BOB, "locker code lockers", k=10)
    assert {(h.content, h.shared) for h in alice} == {
        ("Alice's locker code is 4711.", False),
        ("Lockers are emptied every Friday evening.", True),
    }
    assert {h.content for h in bob} == {
        "Bob's locker code is 9999.",
        "Lockers are emptied every Friday evening.",
    }
    # Per-source ranks are over both scopes: exactly one hit is first by vector.
    assert sorted(h.sources["vector"].rank for h in alice) == [1, 2]
    own_only = await kb.retrieve(ALICE, "locker code", k=10, include_shared=False)
    assert [h.content for h in own_only] == ["Alice's locker code is 4711."]


async def test_the_reserved_shared_user_id_is_refused_as_a_tenant(kb):
    reserved = Tenant("agent", SHARED_USER)
    with pytest.raises(InvalidInputError, match="reserved"):
        await kb.ingest(reserved, source="s", text="text")
    with pytest.raises(InvalidInputError, match="reserved"):
        await kb.retrieve(reserved, "text")
    with pytest.raises(InvalidInputError, match="reserved"):
        await kb.forget_user(reserved)
    with pytest.raises(InvalidInputError):
        await kb.forget_user(SHARED)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        await kb.retrieve(SHARED, "text")  # type: ignore[arg-type]


async def test_reingest_replaces_and_unchanged_text_is_a_no_op(connection, kb, embedder):
    first = await kb.ingest(ALICE, source="faq", text="The office opens at nine o'clock.")
    embedder.calls.clear()
    same = await kb.ingest(ALICE, source="faq", text="The office opens at nine o'clock.")
    assert (same.action, same.version, embedder.calls) == ("unchanged", first.version, [])
    second = await kb.ingest(ALICE, source="faq", text=MANUAL)
    assert second.action == "replaced" and second.removed == first.chunks
    docs = await chunks_of(connection, source="faq")
    assert len(docs) == second.chunks and {d["version"] for d in docs} == {second.version}
    hits = await kb.retrieve(ALICE, "office opens nine o'clock", k=10)
    assert all("office opens" not in h.content for h in hits)
    # A new title re-ingests (the stored chunks carry it).
    retitled = await kb.ingest(ALICE, source="faq", text=MANUAL, title="FAQ")
    assert retitled.action == "replaced"
    assert {d["title"] for d in await chunks_of(connection, source="faq")} == {"FAQ"}


async def test_readers_never_see_two_versions_or_pending_chunks(connection, kb):
    old = await kb.ingest(ALICE, source="doc", text="Version one says the answer is red.")
    stale = await chunks_of(connection, source="doc")
    new = await kb.ingest(ALICE, source="doc", text="Version two says the answer is blue.")
    collection = connection.collection("knowledge_chunks")
    # As between a new version's update and the old one's delete: both live.
    await collection.insert_many(stale)
    # As after a crash during an insert: pending chunks of an abandoned version.
    abandoned = [{**d, "_id": d["_id"] + "p", "version": "0", "state": "pending"} for d in stale]
    await collection.insert_many(abandoned)
    hits = await kb.retrieve(ALICE, "version answer red blue", k=10)
    assert [h.content for h in hits] == ["Version two says the answer is blue."]
    assert [s.version for s in await kb.list_sources(ALICE)] == [new.version]
    again = await kb.ingest(ALICE, source="doc", text="Version two says the answer is blue.")
    assert again.action == "unchanged" and again.removed == 2  # leftovers cleaned up
    assert old.version < new.version
    assert len(await chunks_of(connection, source="doc")) == 1


async def test_concurrent_reingests_leave_one_visible_version(connection, kb):
    await kb.ingest(ALICE, source="doc", text="Start text about apples.")
    texts = [f"Edition {i} about apples and pears." for i in range(4)]
    await asyncio.gather(*(kb.ingest(ALICE, source="doc", text=t) for t in texts))
    hits = await kb.retrieve(ALICE, "apples", k=10)
    assert len(hits) == 1 and hits[0].content in texts
    assert len(await kb.list_sources(ALICE)) == 1


async def test_delete_source_and_list_sources(connection, kb):
    await kb.ingest(ALICE, source="a", text=MANUAL, title="A")
    await kb.ingest(ALICE, source="b", text="Other text about gardening.")
    await kb.ingest(SHARED, source="a", text="Shared text about gardening.")
    listed = await kb.list_sources(ALICE)
    assert [(s.source, s.title, s.shared) for s in listed] == [
        ("a", "A", False),
        ("b", None, False),
    ]
    assert listed[0].chunk_count == len(await chunks_of(connection, user_id="alice", source="a"))
    assert [(s.source, s.shared) for s in await kb.list_sources(SHARED)] == [("a", True)]
    # Another tenant's (or scope's) source is not found: nothing is deleted.
    assert await kb.delete_source(BOB, "a") == 0
    assert await kb.delete_source(SharedKnowledge("other"), "a") == 0
    assert await kb.delete_source(ALICE, "a") == listed[0].chunk_count
    assert [s.source for s in await kb.list_sources(ALICE)] == ["b"]
    assert await kb.retrieve(ALICE, "printer error", k=5, sources="a") != []  # the shared "a"
    assert all(h.shared for h in await kb.retrieve(ALICE, "gardening", sources=["a"]))


async def test_forget_user_deletes_only_that_users_knowledge(connection, kb):
    await kb.ingest(ALICE, source="a", text="Alice private text.")
    await kb.ingest(BOB, source="b", text="Bob private text.")
    await kb.ingest(SHARED, source="s", text="Shared text.")
    assert await kb.forget_user(ALICE) == {"knowledge_chunks": 1}
    remaining = await chunks_of(connection)
    assert sorted(d["user_id"] for d in remaining) == [SHARED_USER, "bob"]


async def test_filters_by_source_and_tags(kb):
    await kb.ingest(ALICE, source="x", text="Tea grows in Assam.", tags=["drinks"])
    await kb.ingest(ALICE, source="y", text="Tea is served at four.", tags=["etiquette"])
    assert [h.source for h in await kb.retrieve(ALICE, "tea", sources="y")] == ["y"]
    assert [h.source for h in await kb.retrieve(ALICE, "tea", tags=["drinks"])] == ["x"]


async def test_adjacent_chunks_merge_without_repeating_the_overlap(kb):
    text = " ".join(f"Sentence {i} mentions the harbour lighthouse keeper." for i in range(12))
    await kb.ingest(ALICE, source="lh", text=text)
    hits = await kb.retrieve(ALICE, "harbour lighthouse keeper", k=4, merge_adjacent=True)
    merged = [h for h in hits if len(h.chunk_indexes) > 1]
    assert merged
    for hit in merged:
        assert list(hit.chunk_indexes) == list(range(hit.chunk_index, hit.chunk_indexes[-1] + 1))
        assert hit.content == text[hit.start : hit.end]


async def test_cjk_documents(kb):
    text = (
        "机器学习是人工智能的一个分支。它使计算机能够从数据中学习。" * 4
        + "\n\n"
        + "咖啡馆每天早上八点开门，周日休息。" * 4
    )
    report = await kb.ingest(ALICE, source="zh", text=text)
    assert report.chunks > 1
    hits = await kb.retrieve(ALICE, "咖啡馆几点开门", k=1)
    assert "咖啡馆" in hits[0].content


@pytest.mark.parametrize(
    "kwargs",
    [
        {"text": ""},
        {"text": "   \n "},
        {"text": 42},
        {"text": None},
        {"text": "ok\x00"},
        {"source": {"$ne": None}},
        {"source": ""},
        {"metadata": {"$set": {"x": 1}}},
        {"metadata": {"a.b": 1}},
        {"metadata": {"nested": {"$where": "1"}}},
        {"metadata": "not a mapping"},
        {"tags": [{"$ne": 1}]},
        {"title": 5},
        {"text": "x " * 600_000},  # over max_text_chars
    ],
)
async def test_bad_input_writes_nothing(connection, kb, embedder, kwargs):
    args = {"source": "s", "text": "valid text", **kwargs}
    with pytest.raises(InvalidInputError):
        await kb.ingest(ALICE, **args)
    assert await chunks_of(connection) == [] and embedder.calls == []


async def test_too_many_chunks_is_refused_before_embedding(connection, embedder):
    kb = KnowledgeBase(
        connection,
        embedder,
        config=KnowledgeConfig(chunk_tokens=16, overlap_tokens=4, max_chunks=3),
    )
    with pytest.raises(InvalidInputError, match="at most 3"):
        await kb.ingest(ALICE, source="big", text=MANUAL)
    assert await chunks_of(connection) == [] and embedder.calls == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"k": 0},
        {"k": True},
        {"k": 500},
        {"query": ""},
        {"sources": []},
        {"tags": [{"$ne": 1}]},
        {"sources": [{"$gt": ""}]},
        {"query_vector": np.ones(3)},
    ],
)
async def test_bad_retrieval_arguments(kb, kwargs):
    args = {"query": "anything", **kwargs}
    with pytest.raises(InvalidInputError):
        await kb.retrieve(ALICE, **args)


async def test_a_different_embedder_is_refused(connection, kb):
    await kb.ingest(ALICE, source="s", text="Alice likes jazz.")
    other = KnowledgeBase(connection, FakeEmbedder(dimensions=64))
    with pytest.raises(EmbeddingMismatchError):
        await other.ingest(ALICE, source="t", text="Alice likes blues.")
    with pytest.raises(EmbeddingMismatchError):
        await other.retrieve(ALICE, "jazz")
    assert len(await chunks_of(connection)) == 1


async def test_round_trips_match_the_documented_table(counted, embedder):
    connection, counter = counted
    await IndexManager(connection, embedder.signature).setup()
    kb = KnowledgeBase(connection, embedder, config=SMALL)

    async def sent_by(operation):
        with counter.count() as sent:
            await operation
        return sorted(sent)

    # Every write ends with its announcement: the scope's generation token swapped (one
    # update: the write names no chunks, so it is not logged and a reader behind it reads
    # the scope again).
    assert await sent_by(kb.ingest(ALICE, source="m", text=MANUAL)) == sorted(
        ["find", "find", "insert", "update", "update"]  # + the embedder record, once
    )
    assert await sent_by(kb.ingest(SHARED, source="m", text=MANUAL)) == [
        "find",
        "insert",
        "update",
        "update",
    ]
    assert await sent_by(kb.ingest(ALICE, source="m", text=MANUAL + " More.")) == [
        "delete",
        "find",
        "insert",
        "update",
        "update",
    ]
    embedder.calls.clear()
    assert await sent_by(kb.ingest(ALICE, source="m", text=MANUAL + " More.")) == ["find"]
    assert embedder.calls == []
    # First search: both scopes' tokens in one find, then each scope's chunks.
    assert await sent_by(kb.retrieve(ALICE, "refunds")) == ["find"] * 3
    assert embedder.calls == [("query", 1)]
    vector = await embedder.embed_query("refunds")
    embedder.calls.clear()
    # Nothing changed since: the two tokens only, in one find.
    assert await sent_by(kb.retrieve(ALICE, "refunds", query_vector=vector)) == ["find"]
    assert embedder.calls == []
    assert await sent_by(kb.retrieve(ALICE, "refunds", include_shared=False)) == ["find"]
    assert await sent_by(kb.list_sources(ALICE)) == ["find"]
    assert await sent_by(kb.delete_source(SHARED, "m")) == ["delete", "update"]
    assert await sent_by(kb.forget_user(ALICE)) == ["delete", "delete"]


async def test_searches_see_every_writer_of_another_instance(connection, embedder):
    """Each instance keeps the scopes it searched in memory (as another process would); what
    another instance ingests, replaces, deletes or forgets is seen by the next search."""
    await IndexManager(connection, embedder.signature).setup()
    reader = KnowledgeBase(connection, embedder, config=SMALL)
    writer = KnowledgeBase(connection, embedder, config=SMALL)
    await writer.ingest(ALICE, source="tea", text="Tea grows in Assam.")
    await writer.ingest(SHARED, source="faq", text="Tea is served at four.")

    async def found(query, **kwargs):
        return sorted((h.source, h.content) for h in await reader.retrieve(ALICE, query, **kwargs))

    assert await found("tea") == [("faq", "Tea is served at four."), ("tea", "Tea grows in Assam.")]
    await writer.ingest(ALICE, source="coffee", text="Coffee grows in Kerala.")
    assert ("coffee", "Coffee grows in Kerala.") in await found("coffee Kerala")
    await writer.ingest(SHARED, source="faq", text="Tea is served at five.")
    assert [c for s, c in await found("tea served") if s == "faq"] == ["Tea is served at five."]
    await writer.delete_source(ALICE, "coffee")
    assert "coffee" not in {s for s, _ in await found("coffee Kerala")}
    await writer.forget_user(ALICE)
    assert await found("tea") == [("faq", "Tea is served at five.")]
    # Bob never sees Alice's (kept or not), and the shared scope is kept once for both.
    await writer.ingest(ALICE, source="secret", text="Alice keeps tea in the attic.")
    assert await found("attic") != []
    assert {h.source for h in await reader.retrieve(BOB, "tea attic")} == {"faq"}


async def test_both_scopes_are_searched_at_once(kb, embedder, monkeypatch):
    """Retrieval over two scopes runs their searches at once: each read of a scope's chunks
    waits until the other scope's read has started too, which only searches that overlap can do
    (one after the other, the first would wait in vain and the test fail with a timeout).
    Nothing here depends on how fast the machine is."""
    await kb.ingest(ALICE, source="a", text="Tea grows in Assam.")
    await kb.ingest(SHARED, source="s", text="Tea is served at four.")
    await kb.retrieve(ALICE, "tea")  # the embedder record is read once, on first use
    # Changed since they were kept: both scopes are read again.
    await kb.ingest(ALICE, source="a2", text="Tea is picked by hand.")
    await kb.ingest(SHARED, source="s2", text="Tea comes with milk.")
    snapshots = kb._snapshots
    original = snapshots.refresh
    started: list[int] = []
    both = asyncio.Event()

    async def meeting(*args, **kwargs):
        started.append(1)
        if len(started) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), timeout=60)
        return await original(*args, **kwargs)

    monkeypatch.setattr(snapshots, "refresh", meeting)
    vector = await embedder.embed_query("tea")
    hits = await kb.retrieve(ALICE, "tea", query_vector=vector)
    assert len(started) == 2
    assert {h.shared for h in hits} == {True, False}


async def test_scopes_merge_by_the_relevance_the_searcher_gives(kb, embedder):
    """The search tier owns the fusion: retrieve merges the two scopes' hits by the relevance
    (0 to 1) the searcher gave each and fuses nothing again, so an empty shared scope changes
    nothing, and every hit's score is its relevance, best first."""
    query = "printer error 42 paper tray"
    await kb.ingest(ALICE, source="manual.txt", text=MANUAL)
    own = await kb.retrieve(ALICE, query, k=10, include_shared=False)
    with_empty_shared = await kb.retrieve(ALICE, query, k=10)
    assert [(h.id, h.score) for h in with_empty_shared] == [(h.id, h.score) for h in own]

    await kb.ingest(SHARED, source="faq", text=MANUAL.replace("error 42", "code 7"))
    hits = await kb.retrieve(ALICE, query, k=10)
    vector = await embedder.embed_query(query)
    relevance = {}
    for scope in (ALICE.filter(), SHARED.filter()):
        search = SearchQuery(
            tenant=scope, text=query, vector=vector, filters={"state": "live"}, limit=40
        )
        relevance.update(
            {hit.id: hit.relevance for hit in await kb._searcher.search(kb.target, search)}
        )
    scores = [hit.score for hit in hits]
    assert {hit.shared for hit in hits} == {True, False} and len(hits) == 10
    assert scores == pytest.approx([relevance[hit.id] for hit in hits])
    assert scores == sorted(scores, reverse=True) and 0 <= scores[-1] <= scores[0] <= 1
    assert "error 42" in hits[0].content and not hits[0].shared

"""The vector layout: Atlas with three search indexes (a free M0 cluster), issue 16 point 6.

Through the wire-level double (tests/integration/atlas_double.py) holding M0's limit of three
search indexes and refusing to list them, as M0 does:

- ``indexes setup`` on ``auto`` creates the three vector indexes, is refused the first text
  index, records the vector layout and says so; every later connection reads the record.
- Searches then run ``$vectorSearch`` for similarity and rank keywords in the framework (BM25
  over the tenant's documents): hybrid retrieval still works, no ``$search`` is sent, and the
  keyword ranking sees a memory the lagging search index has not caught up with yet.
- The setting overrides the record both ways; the first search checks only the vector index.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from agent_memory.config import load_settings
from agent_memory.memory._common import Tenant
from agent_memory.memory.long_term import LongTermMemory
from agent_memory.mongo.connection import META_COLLECTION, connect
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.search import AtlasSearcher, index_watch, make_searcher
from agent_memory.mongo.search.index_watch import IndexWatch
from agent_memory.mongo.search.layout import LAYOUT_META_ID
from agent_memory.providers.embedders.fake import FakeEmbedder
from tests.integration.atlas_double import ATLAS_NOT_ALLOWED, AtlasDouble, ManualClock

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")
VECTOR_INDEXES = {"memories_vector", "knowledge_vector", "action_logs_vector"}


@pytest.fixture(autouse=True)
def clock(monkeypatch) -> ManualClock:
    clock = ManualClock()
    monkeypatch.setattr(index_watch, "_WATCH", IndexWatch(clock=clock, interval=600.0))
    return clock


@pytest.fixture
async def double(embedded_server) -> AsyncIterator[AtlasDouble]:
    """A free cluster: three search indexes, no listing, builds that finish as polled."""
    info = embedded_server.info
    async with AtlasDouble(info.host, info.port, info.secret) as running:
        running.max_search_indexes = 3
        running.refuse(
            "$listSearchIndexes", 8000, "AtlasError", ATLAS_NOT_ALLOWED.format("$listSearchIndexes")
        )
        yield running


@pytest.fixture
async def set_up(through, double) -> AsyncIterator[Any]:
    """``indexes setup`` run once on auto (the default); the database dropped afterwards."""
    async with await connect(through()) as conn:
        try:
            with capture_logs() as logs:
                states = await IndexManager(conn, FakeEmbedder().signature).setup(
                    timeout=10, poll_interval=0.001
                )
            double.ready()  # M0 lists nothing, so setup cannot wait: the builds finish later
            yield conn, states, logs
        finally:
            await conn.client.drop_database(conn.db.name)


async def test_setup_on_a_free_cluster_chooses_and_records_the_vector_layout(set_up, double):
    conn, states, logs = set_up
    assert {name for _, name in double.index_states} == VECTOR_INDEXES
    search = {s.name: s.state for s in states if s.kind in ("search", "vectorSearch")}
    assert {name for name, state in search.items() if state == "created"} == VECTOR_INDEXES
    assert {name for name, state in search.items() if state == "not used"} == {
        "memories_text",
        "knowledge_text",
        "action_logs_text",
    }
    assert not [s for s in states if s.problem]
    [warning] = [event for event in logs if event["event"] == "search_layout_vector"]
    assert "search-index limit" in warning["reason"] and "text" in warning["reason"]
    record = await conn.collection(META_COLLECTION).find_one({"_id": LAYOUT_META_ID})
    assert record["layout"] == "vector"
    # The connection that ran setup searches the new layout from now on.
    assert conn.search_layout == "vector"
    assert "search layout vector" in conn.tier_reason


async def test_a_later_connection_reads_the_layout_and_searches_keywords_itself(
    set_up, through, double
):
    async with await connect(through()) as conn:
        assert conn.search_layout == "vector"
        assert "recorded by `agent-memory indexes setup`" in conn.layout_reason
        searcher = make_searcher(conn, dimensions=FakeEmbedder().dimensions)
        assert isinstance(searcher, AtlasSearcher)
        assert searcher.keywords is not None and not searcher.rank_fusion
        memory = LongTermMemory(conn, FakeEmbedder())
        for text in (
            "My sister Ingrid lives in Trondheim",
            "I play the cello on Sundays",
            "I am allergic to walnuts",
        ):
            await memory.store(ALICE, text)
        await memory.store(BOB, "Ingrid from Trondheim is my landlady")
        await double.sync()  # the vector index catches up with those
        await memory.store(ALICE, "The zeppelin museum opens at nine")  # not yet indexed

        before = len(double.answered)
        hits = await memory.retrieve(ALICE, "where does Ingrid live?", k=3)
        assert hits[0].memory.content == "My sister Ingrid lives in Trondheim"
        assert hits[0].sources["text"].rank == 1 and "vector" in hits[0].sources
        # Bob's memory shares the keywords; it is Bob's.
        assert all(hit.memory.user_id == "alice" for hit in hits)
        # Similarity from $vectorSearch, keywords from the framework: no $search, no fusion stage.
        assert double.answered[before:] == ["$vectorSearch"]

        # The keyword ranking reads the collection, so a memory the search index has not
        # caught up with is found by its words.
        [fresh] = await memory.retrieve(ALICE, "zeppelin museum", k=1)
        assert fresh.memory.content == "The zeppelin museum opens at nine"
        assert set(fresh.sources) == {"text"}
        await memory.aclose()


async def test_the_first_search_checks_only_the_vector_index(set_up, through, double):
    """The text indexes are not used: their absence is no warning. (Listing is allowed here,
    as on a dedicated cluster, so the check runs.)"""
    double.allow("$listSearchIndexes")
    double.ready()
    async with await connect(through()) as conn:
        memory = LongTermMemory(conn, FakeEmbedder())
        await memory.store(ALICE, "I am allergic to walnuts")
        await double.sync()
        with capture_logs() as logs:
            await memory.retrieve(ALICE, "what am I allergic to?", k=1)
        assert not [e for e in logs if e["event"] == "search_indexes_not_ready"]
        await memory.aclose()

        # The full layout forced on the same indexes: the missing text index is reported.
        index_watch._WATCH.started.clear()
        async with await connect(through(atlas_layout="full")) as full:
            assert full.search_layout == "full"
            memory = LongTermMemory(full, FakeEmbedder())
            with capture_logs() as logs:
                await memory.retrieve(ALICE, "what am I allergic to?", k=1)
            [warning] = [e for e in logs if e["event"] == "search_indexes_not_ready"]
            assert "memories_text (missing)" in warning["indexes"]
            await memory.aclose()


async def test_the_vector_setting_creates_only_the_vector_indexes(through, double):
    double.max_search_indexes = None  # a cluster that would take all six
    async with await connect(through(atlas_layout="vector")) as conn:
        try:
            assert conn.search_layout == "vector"
            assert "AGENT_MEMORY_ATLAS_LAYOUT=vector" in conn.layout_reason
            await IndexManager(conn, FakeEmbedder().signature).setup(
                timeout=10, poll_interval=0.001
            )
            assert {name for _, name in double.index_states} == VECTOR_INDEXES
            record = await conn.collection(META_COLLECTION).find_one({"_id": LAYOUT_META_ID})
            assert record["layout"] == "vector"
        finally:
            await conn.client.drop_database(conn.db.name)


async def test_a_connection_without_a_recorded_layout_uses_the_full_one(through, double):
    async with await connect(through()) as conn:
        try:
            assert conn.search_layout == "full"
            assert "no layout recorded" in conn.layout_reason
            searcher = make_searcher(conn, dimensions=FakeEmbedder().dimensions)
            assert isinstance(searcher, AtlasSearcher) and searcher.keywords is None
        finally:
            await conn.client.drop_database(conn.db.name)


async def test_an_unknown_recorded_layout_is_not_trusted(through, double):
    """A record this version does not know (written by hand, or by a later version) reads
    as none: the full layout, and ``indexes setup`` writes a valid one."""
    async with await connect(through()) as conn:
        try:
            await conn.collection(META_COLLECTION).insert_one(
                {"_id": LAYOUT_META_ID, "layout": {"$gt": ""}, "reason": 3}
            )
            async with await connect(through()) as again:
                assert again.search_layout == "full"
        finally:
            await conn.client.drop_database(conn.db.name)


async def test_the_layout_setting_is_checked():
    from agent_memory.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="atlas_layout: Input should be 'auto', "):
        load_settings(embedder="fake", atlas_layout="compact")

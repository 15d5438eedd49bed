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
from agent_memory.errors import StorageError
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.mongo.connection import META_COLLECTION, connect
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.search import AtlasSearcher, index_watch, make_searcher
from agent_memory.mongo.search.index_watch import IndexWatch
from agent_memory.mongo.search.layout import LAYOUT_META_ID
from agent_memory.providers.embedders.fake import FakeEmbedder
from agent_memory.tenancy import Tenant
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
        assert await searcher.ranks_keywords_here()
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
            assert isinstance(searcher, AtlasSearcher)
            assert not await searcher.ranks_keywords_here()
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


async def test_a_process_connected_before_setup_follows_the_recorded_layout(through, double):
    """A process that connected before ``indexes setup`` chose the vector layout searches
    the full layout's text indexes (which do not exist, so keywords find nothing); it reads
    the record again within a minute and ranks keywords itself from then on."""
    async with await connect(through()) as early:
        try:
            assert early.search_layout == "full"
            clock = ManualClock()
            early.layout_watch.clock = clock
            early.layout_watch.set(early.search_layout, early.layout_reason)
            memory = LongTermMemory(early, FakeEmbedder())
            async with await connect(through()) as operator:
                await IndexManager(operator, FakeEmbedder().signature).setup(
                    timeout=10, poll_interval=0.001
                )
            double.ready()
            await memory.store(ALICE, "The zeppelin museum opens at nine")
            await double.sync()

            before = len(double.answered)
            await memory.retrieve(ALICE, "zeppelin museum", k=1)
            # Not due yet: still the full layout, whose text index does not exist.
            assert set(double.answered[before:]) & {"$search", "$rankFusion"}

            clock.now += 61
            before = len(double.answered)
            with capture_logs() as logs:
                [hit] = await memory.retrieve(ALICE, "zeppelin museum", k=1)
            assert double.answered[before:] == ["$vectorSearch"]
            assert "text" in hit.sources
            [changed] = [e for e in logs if e["event"] == "search_layout_changed"]
            assert changed["layout"] == "vector"
            assert early.search_layout == "vector"
            await memory.aclose()
        finally:
            await early.client.drop_database(early.db.name)


async def test_the_full_layout_is_recorded_only_once_its_text_indexes_serve(
    set_up, through, double
):
    conn, _, _ = set_up
    assert conn.search_layout == "vector"
    double.max_search_indexes = None  # moved to a cluster that takes all six
    double.allow("$listSearchIndexes")
    manager = IndexManager(conn, FakeEmbedder().signature)
    with capture_logs() as logs:
        await manager.setup(wait=False)  # the text indexes are created, still PENDING
    assert [e for e in logs if e["event"] == "search_layout_not_recorded"]
    record = await conn.collection(META_COLLECTION).find_one({"_id": LAYOUT_META_ID})
    assert record["layout"] == "vector" and conn.search_layout == "vector"

    double.auto_advance = True
    await manager.setup(timeout=10, poll_interval=0.001)
    record = await conn.collection(META_COLLECTION).find_one({"_id": LAYOUT_META_ID})
    assert record["layout"] == "full" and conn.search_layout == "full"
    assert set(double.index_states.values()) == {"READY"} and len(double.index_states) == 6


async def test_text_indexes_created_before_the_limit_are_dropped_again(through, double):
    """A cluster with room for four: one text index fits, the second does not. The one that
    fit would hold a slot no search uses, so setup drops it again and says so."""
    double.max_search_indexes = 4
    async with await connect(through()) as conn:
        try:
            states = await IndexManager(conn, FakeEmbedder().signature).setup(
                timeout=10, poll_interval=0.001
            )
            assert {name for _, name in double.index_states} == VECTOR_INDEXES
            [first] = [s for s in states if s.name == "action_logs_text"]
            assert first.state == "not used"
            assert first.detail.startswith("created, then dropped again")
            assert conn.search_layout == "vector"
        finally:
            await conn.client.drop_database(conn.db.name)


async def test_another_illegal_operation_is_not_taken_for_the_limit(through, double):
    """Code 20 (IllegalOperation) is generic: only the limit's message means the limit."""
    double.max_search_indexes = None
    double.refuse("createSearchIndexes", 20, "IllegalOperation", "something else entirely")
    async with await connect(through()) as conn:
        try:
            with pytest.raises(StorageError) as raised:
                await IndexManager(conn, FakeEmbedder().signature).setup(
                    timeout=10, poll_interval=0.001
                )
            assert "search-index limit" not in str(raised.value)
            assert "something else entirely" in str(raised.value)
            assert await conn.collection(META_COLLECTION).find_one({"_id": LAYOUT_META_ID}) is None
        finally:
            await conn.client.drop_database(conn.db.name)


async def test_the_vector_layout_is_recorded_even_when_the_wait_for_builds_times_out(
    through, double
):
    """Whether the text indexes fit does not depend on how long the vector indexes take to
    build: a wait that times out still leaves the vector layout recorded."""
    double.allow("$listSearchIndexes")  # listed, so setup waits for the builds
    async with await connect(through()) as conn:
        try:
            with pytest.raises(StorageError, match="not queryable after"):
                await IndexManager(conn, FakeEmbedder().signature).setup(
                    timeout=0.05, poll_interval=0.001
                )
            record = await conn.collection(META_COLLECTION).find_one({"_id": LAYOUT_META_ID})
            assert record["layout"] == "vector" and conn.search_layout == "vector"
        finally:
            await conn.client.drop_database(conn.db.name)

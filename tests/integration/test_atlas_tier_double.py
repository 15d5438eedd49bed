"""The Atlas tier as users meet it, through the wire-level Atlas double (issue 16, points 3b-5).

Everything goes over the wire to :class:`tests.integration.atlas_double.AtlasDouble`, which
answers the search-index commands and the search stages as MongoDB documents them (a lagging
mongot view moved only by ``sync()``, builds moved only by ``advance()``/``ready()``, or one
step per listing with ``auto_advance``). Nothing waits on time: the searchers' rate limit runs
on a clock the test moves.

- ``indexes setup --update`` returns once the *new* definition serves, not when the listing
  first shows it (Atlas keeps serving the old one meanwhile); a listing without status
  (self-managed mongot) is not waited on; a failed build says why, from where Atlas puts it.
- A missing, building or lagging search index finds nothing, without an error: the first
  search of a collection says so once (``search_indexes_not_ready``), an empty
  ``$vectorSearch`` of a tenant that has documents says so at most once per interval
  (``search_index_unusable``), and a refused listing is said once and never fails a search.
- ``IndexManager.status`` reports search indexes it may not list as ``unknown``; setup on a
  cluster at its search-index limit stops with one line saying so.
- A document that passed mongot's stale pre-filter but no longer matches is not returned.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from structlog.testing import capture_logs
from typer.testing import CliRunner

from agent_memory.cli import app
from agent_memory.errors import StorageError, StorageUnavailableError
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.mongo import _driver
from agent_memory.mongo.catalog import IndexCatalog
from agent_memory.mongo.connection import META_COLLECTION, connect
from agent_memory.mongo.embedding_record import EMBEDDING_META_ID
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.search import SearchQuery, index_watch, make_searcher
from agent_memory.mongo.search.atlas import text_search_pipeline, vector_search_pipeline
from agent_memory.mongo.search.index_watch import IndexWatch
from agent_memory.mongo.vectors import to_bson_vector
from agent_memory.providers.embedders.fake import FakeEmbedder
from agent_memory.tenancy import Tenant
from tests.integration.atlas_double import ATLAS_NOT_ALLOWED, AtlasDouble, ManualClock

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")
VECTOR_INDEXES = {"memories_vector", "knowledge_vector", "action_logs_vector"}
SEARCH_INDEXES = VECTOR_INDEXES | {"memories_text", "knowledge_text", "action_logs_text"}
M0_REFUSAL = (8000, "AtlasError", ATLAS_NOT_ALLOWED.format("$listSearchIndexes"))
FORBIDDEN = (
    8000,
    "AtlasError",
    "user is not allowed to do action [listSearchIndexes] on [db.memories]",
)


@pytest.fixture
def clock(monkeypatch) -> ManualClock:
    """A fresh watch of the search indexes for each test (the process's one is shared), on a
    clock the test moves."""
    clock = ManualClock()
    monkeypatch.setattr(index_watch, "_WATCH", IndexWatch(clock=clock, interval=600.0))
    return clock


@pytest.fixture
async def double(embedded_server, clock) -> AsyncIterator[AtlasDouble]:
    info = embedded_server.info
    async with AtlasDouble(info.host, info.port, info.secret) as running:
        yield running


@pytest.fixture
async def conn(through) -> AsyncIterator[Any]:
    """A connection on the Atlas tier through the double (no indexes yet)."""
    async with await connect(through()) as connection:
        try:
            yield connection
        finally:
            await connection.client.drop_database(connection.db.name)


async def ready_indexes(conn: Any, double: AtlasDouble) -> None:
    """Every catalog index in place and READY, as ``indexes setup`` leaves them."""
    double.auto_advance = True
    await IndexManager(conn, FakeEmbedder().signature).setup(timeout=10, poll_interval=0.001)
    double.auto_advance = False
    assert set(double.index_states.values()) == {"READY"}


def forget_first_use() -> None:
    """As in a process that did not run setup itself: no collection's indexes seen yet."""
    index_watch._WATCH.started.clear()


def events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [event for event in logs if event["event"] == name]


def since(items: list[str], before: int) -> list[str]:
    return items[before:]


# --- 5: setup --update waits until the new definition serves -------------------------------------


async def test_setup_update_returns_only_once_the_new_definition_serves(conn, double):
    """Right after ``updateSearchIndex`` Atlas lists the index BUILDING *and* queryable, with the
    new latestDefinition, while mainIndex still serves the old definition version: setup must
    not take that for done."""
    await ready_indexes(conn, double)
    await conn.collection(META_COLLECTION).delete_one({"_id": EMBEDDING_META_ID})
    manager = IndexManager(conn, FakeEmbedder(dimensions=128).signature)
    double.auto_advance = True  # one build step per listing: PENDING, BUILDING, served
    seen: list[Any] = []
    states = await manager.setup(
        update=True, timeout=10, poll_interval=0.001, on_progress=seen.append
    )
    assert {s.name for s in states if s.state == "updated"} == VECTOR_INDEXES
    for name in VECTOR_INDEXES:
        index = double.index(name)
        assert (index.serving, index.latest) == (1, 1), name  # the new definition serves
        assert index.definition["fields"][0]["numDimensions"] == 128
    assert set(double.index_states.values()) == {"READY"}
    building = {s.detail for s in seen if s.state == "building" and s.name in VECTOR_INDEXES}
    assert building == {"serving definition v0 while v1 builds"}


async def test_status_shows_an_update_building_until_its_definition_serves(conn, double):
    await ready_indexes(conn, double)
    await conn.collection(META_COLLECTION).delete_one({"_id": EMBEDDING_META_ID})
    manager = IndexManager(conn, FakeEmbedder(dimensions=128).signature)
    await manager.setup(update=True, wait=False)

    def vector_states(states: list[Any]) -> set[tuple[str, str]]:
        return {(s.state, s.detail) for s in states if s.name in VECTOR_INDEXES}

    for _ in range(2):  # PENDING, then BUILDING: the old definition serves throughout
        assert vector_states(await manager.status()) == {
            ("building", "serving definition v0 while v1 builds")
        }
        double.advance()
    assert vector_states(await manager.status()) == {("ok", "")}


async def test_a_deployment_that_lists_no_status_is_not_waited_for(conn, double):
    """Self-managed mongot lists no status, queryable or statusDetail: nothing would ever say
    the build ended, so setup does not wait for it (it would wait until the timeout)."""
    double.listing = "on_prem"  # and no build ever moves: auto_advance is off
    manager = IndexManager(conn, FakeEmbedder().signature)
    await manager.setup(timeout=5, poll_interval=0.001)
    search = [s for s in await manager.status() if s.name in SEARCH_INDEXES]
    assert {(s.state, s.detail) for s in search} == {
        ("ok", "status not reported by this deployment")
    }


async def test_a_failed_build_says_why_from_where_atlas_puts_it(conn, double):
    manager = IndexManager(conn, FakeEmbedder().signature)
    await manager.setup(wait=False)
    double.fail("knowledge_text", "Invalid analyzer: lucene.nope")
    [failed] = [s for s in await manager.status() if s.state == "failed"]
    assert (failed.name, failed.detail) == ("knowledge_text", "Invalid analyzer: lucene.nope")
    with pytest.raises(StorageError, match="knowledge_text failed to build: Invalid analyzer"):
        await manager.setup(timeout=5, poll_interval=0.001)

    # A failed rebuild: the message is on the staged index, the old definition still serves.
    double.ready("memories_vector")
    await conn.collection(META_COLLECTION).delete_one({"_id": EMBEDDING_META_ID})
    other = IndexManager(conn, FakeEmbedder(dimensions=128).signature)
    await other.setup(update=True, wait=False)
    double.fail("memories_vector", "numDimensions too large")
    states = {s.name: s for s in await other.status()}
    assert (states["memories_vector"].state, states["memories_vector"].detail) == (
        "failed",
        "numDimensions too large",
    )


# --- 4c: status when listing is refused; setup at the tier's limit ----------------------------


@pytest.mark.parametrize("refusal", [M0_REFUSAL, FORBIDDEN], ids=["m0", "forbidden"])
async def test_status_reports_search_indexes_unknown_when_listing_is_refused(conn, double, refusal):
    await ready_indexes(conn, double)
    double.refuse("$listSearchIndexes", *refusal)
    manager = IndexManager(conn, FakeEmbedder().signature)
    states = await manager.status()
    search = [s for s in states if s.name in SEARCH_INDEXES]
    assert {s.state for s in search} == {"unknown"} and len(search) == 6
    assert all(refusal[2] in s.detail and "indexes status" in s.detail for s in search)
    assert {s.state for s in states if s.kind == "regular"} == {"ok"}  # still read
    # Not known to be in place: validate lists them.
    assert {s.name for s in await manager.validate()} == SEARCH_INDEXES


async def test_a_transient_listing_error_is_still_an_error(conn, double):
    await ready_indexes(conn, double)
    double.refuse("$listSearchIndexes", 6, "HostUnreachable", "Error connecting to mongot")
    with pytest.raises(StorageUnavailableError):
        await IndexManager(conn, FakeEmbedder().signature).status()


async def test_setup_right_after_a_drop_waits_for_the_deletion(conn, double):
    """Atlas deletes a search index asynchronously and its name stays taken meanwhile:
    setup right after ``indexes drop`` waits until the listing no longer shows it DELETING,
    then creates it (before, the create failed with "already exists")."""
    manager = IndexManager(conn, FakeEmbedder().signature)
    await ready_indexes(conn, double)
    double.slow_drops = 3
    await manager.drop()
    assert set(double.index_states.values()) == {"DELETING"}
    double.auto_advance = True
    states = await manager.setup(timeout=10, poll_interval=0.001)
    search = {s.name: s.state for s in states if s.kind in ("search", "vectorSearch")}
    assert search == dict.fromkeys(SEARCH_INDEXES, "created")
    assert set(double.index_states.values()) == {"READY"}


async def test_setup_says_when_a_deletion_outlasts_its_timeout(conn, double):
    manager = IndexManager(conn, FakeEmbedder().signature)
    await ready_indexes(conn, double)
    double.slow_drops = 1_000
    await manager.drop()
    with pytest.raises(StorageError) as raised:
        await manager.setup(timeout=0.05, poll_interval=0.001)
    message = str(raised.value)
    assert "\n" not in message
    assert " is still being deleted by an earlier drop; run `agent-memory indexes setup` " in (
        message
    )


async def test_setup_at_the_clusters_search_index_limit_stops_with_one_clear_line(through, double):
    """With the full layout asked for, M0's limit stops setup at the first text index (the
    vector indexes come first), with one line naming the way out."""
    double.max_search_indexes = 3  # M0
    async with await connect(through(atlas_layout="full")) as full:
        with pytest.raises(StorageError) as raised:
            await IndexManager(full, FakeEmbedder().signature).setup(timeout=5, poll_interval=0.001)
        created = {name for _, name in double.index_states}
        await full.client.drop_database(full.db.name)
    message = str(raised.value)
    assert "\n" not in message
    # Collections in catalog order; the first text index is the one refused.
    assert message.startswith("Atlas refused to create search index action_logs.action_logs_text: ")
    assert "search-index limit was reached (M0 free clusters allow 3, Flex clusters 10)" in message
    assert "the full layout needs 6; set AGENT_MEMORY_ATLAS_LAYOUT=auto or vector" in message
    assert "use a Flex or dedicated (M10+) cluster" in message
    assert created == VECTOR_INDEXES


async def test_a_cluster_that_refuses_even_the_vector_indexes_says_so(conn, double):
    """Other applications hold two of M0's three: the vector layout does not fit either."""
    double.max_search_indexes = 1
    with pytest.raises(StorageError) as raised:
        await IndexManager(conn, FakeEmbedder().signature).setup(timeout=5, poll_interval=0.001)
    message = str(raised.value)
    assert "\n" not in message
    assert "search-index limit was reached" in message
    assert "agent_memory needs at least 3 (the vector layout)" in message


async def test_setup_where_search_indexes_cannot_be_listed(conn, double):
    """M0 and Flex clusters refuse $listSearchIndexes but create search indexes: setup
    creates them without listing first, reaches M0's limit with its one line, and on a
    second run leaves the ones that exist; nothing is waited for that cannot be seen."""
    double.refuse("$listSearchIndexes", *M0_REFUSAL)
    double.max_search_indexes = 3
    manager = IndexManager(conn, FakeEmbedder().signature)
    states = await manager.setup(timeout=5, poll_interval=0.001)  # M0: the vector layout
    search = {s.name: s for s in states if s.kind in ("search", "vectorSearch")}
    assert {name for _, name in double.index_states} == VECTOR_INDEXES
    assert {name for name, s in search.items() if s.state == "created"} == VECTOR_INDEXES
    assert {name for name, s in search.items() if s.state == "not used"} == (
        SEARCH_INDEXES - VECTOR_INDEXES
    )
    assert conn.search_layout == "vector"

    double.max_search_indexes = None  # Flex: ten allowed, none listed
    states = await manager.setup(timeout=5, poll_interval=0.001)
    search = {s.name: s for s in states if s.kind in ("search", "vectorSearch")}
    assert len(double.index_states) == 6
    created = {name for name, s in search.items() if s.state == "created"}
    kept = {name for name, s in search.items() if s.state == "unknown"}
    assert created == SEARCH_INDEXES - VECTOR_INDEXES and kept == VECTOR_INDEXES
    assert all(search[name].detail.startswith("exists; the server refused") for name in kept)
    assert conn.search_layout == "full"  # the bigger cluster takes the full layout


def _cli(args: list[str], env: dict[str, str]) -> Any:
    return CliRunner().invoke(app, args, env=env, catch_exceptions=False)


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


async def test_the_command_line_on_a_free_cluster(double, settings):
    """``agent-memory indexes setup | status | validate`` where the cluster takes three search
    indexes and refuses to list them (the command runs in a thread: the double serves here)."""
    env = {
        "MONGODB_URI": double.uri,
        "AGENT_MEMORY_DATABASE": settings.database,
        "AGENT_MEMORY_EMBEDDER": "fake",
        "AGENT_MEMORY_SEARCH_TIER": "atlas",
    }
    double.max_search_indexes = 3
    try:
        full = {**env, "AGENT_MEMORY_ATLAS_LAYOUT": "full"}
        result = await asyncio.to_thread(_cli, ["indexes", "setup", "--timeout", "5"], full)
        assert result.exit_code == 1, result.output
        [line] = _error_lines(result.output)
        assert line.startswith("error: Atlas refused to create search index ")
        assert "search-index limit was reached" in line and "the full layout needs 6" in line

        # On auto (the default) the same cluster gets the vector layout, and says so.
        double.auto_advance = True
        result = await asyncio.to_thread(_cli, ["indexes", "setup", "--timeout", "5"], env)
        double.auto_advance = False
        assert result.exit_code == 0, result.output
        assert "Search layout vector: vector search indexes only; keywords ranked in the " in (
            " ".join(result.output.split())
        )
        assert "│ not used" in result.output
        result = await asyncio.to_thread(_cli, ["indexes", "status"], env)
        assert result.exit_code == 0, result.output
        assert "search layout vector" in " ".join(result.output.split())

        # A bigger cluster takes them all (the full layout is recorded once its text indexes
        # serve); then listing is refused (as M0 and Flex do).
        double.max_search_indexes = None
        result = await asyncio.to_thread(_cli, ["indexes", "setup", "--no-wait"], env)
        assert result.exit_code == 0, result.output
        assert "Search layout vector" in result.output  # building: not switched yet
        double.auto_advance = True
        result = await asyncio.to_thread(_cli, ["indexes", "setup", "--timeout", "5"], env)
        double.auto_advance = False
        assert result.exit_code == 0, result.output
        assert "Search layout full" in result.output
        double.refuse("$listSearchIndexes", *M0_REFUSAL)
        result = await asyncio.to_thread(_cli, ["indexes", "status"], env)
        assert result.exit_code == 0, result.output
        assert "│ unknown" in result.output

        result = await asyncio.to_thread(_cli, ["indexes", "validate"], env)
        assert result.exit_code == 4, result.output
        [line] = _error_lines(result.output)
        assert line.startswith("error: 6 search indexes could not be checked: the server ")
        assert M0_REFUSAL[2] in line
        assert "`agent-memory indexes status` as the provisioning user" in line

        # A chat is not refused for indexes whose state cannot be read: on M0 and Flex that
        # would be every chat.
        chat = await asyncio.to_thread(
            lambda: CliRunner().invoke(
                app, ["chat", "--user", "ada"], input="hello\n", env=env, catch_exceptions=False
            )
        )
        assert chat.exit_code == 0, chat.output
        assert not _error_lines(chat.output)
    finally:
        from pymongo import AsyncMongoClient

        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(double.uri)
        await client.drop_database(settings.database)
        await client.close()


# --- 4a: the first search of a collection checks its search indexes once -------------------------


async def test_the_first_search_says_once_which_indexes_are_not_ready(conn, double, clock):
    await IndexManager(conn, FakeEmbedder().signature).setup(wait=False)  # all PENDING
    await conn.collection("memories").drop_search_index("memories_text")
    memory = LongTermMemory(conn, FakeEmbedder())
    try:
        before = len(double.answered)
        with capture_logs() as logs:
            assert await memory.retrieve(ALICE, "where does Alice live?") == []
            assert await memory.retrieve(ALICE, "what does Alice drink?") == []
            await memory.store(ALICE, "Alice lives in Paris")
        [warning] = events(logs, "search_indexes_not_ready")
        assert warning["log_level"] == "warning"
        assert warning["collection"] == "memories"
        assert warning["indexes"] == "memories_vector (building: pending), memories_text (missing)"
        assert "`agent-memory indexes setup`" in warning["remedy"]
        # Listed once, at the first search: not again for later searches of the collection.
        assert since(double.answered, before).count("$listSearchIndexes") == 1
    finally:
        await memory.aclose()


async def test_a_process_that_just_saw_the_indexes_serving_does_not_list_them(conn, double):
    await ready_indexes(conn, double)  # setup waited until they served: noted
    memory = LongTermMemory(conn, FakeEmbedder())
    try:
        before = len(double.answered)
        with capture_logs() as logs:
            await memory.retrieve(ALICE, "where does Alice live?")
        assert "$listSearchIndexes" not in since(double.answered, before)
        assert not events(logs, "search_indexes_not_ready")
    finally:
        await memory.aclose()


async def test_serving_indexes_draw_no_warning_at_first_use(conn, double, clock):
    await ready_indexes(conn, double)
    forget_first_use()
    memory = LongTermMemory(conn, FakeEmbedder())
    try:
        before = len(double.answered)
        with capture_logs() as logs:
            await memory.retrieve(ALICE, "where does Alice live?")
        assert since(double.answered, before) == ["$rankFusion", "$listSearchIndexes"]
        assert not events(logs, "search_indexes_not_ready")
    finally:
        await memory.aclose()


@pytest.mark.parametrize("refusal", [M0_REFUSAL, FORBIDDEN], ids=["m0", "forbidden"])
async def test_a_refused_listing_is_said_once_and_never_fails_a_search(
    conn, double, clock, refusal
):
    await ready_indexes(conn, double)
    forget_first_use()
    double.refuse("$listSearchIndexes", *refusal)
    embedder = FakeEmbedder()
    memory = LongTermMemory(conn, embedder)
    catalog = IndexCatalog.load(dimensions=embedder.dimensions)
    searcher = make_searcher(conn, dimensions=embedder.dimensions)
    try:
        with capture_logs() as logs:
            stored = await memory.store(ALICE, "Alice lives in Paris")
            await double.sync()
            hits = await memory.retrieve(ALICE, "where does Alice live?")
            await searcher.search(
                catalog.target("knowledge_chunks"),
                SearchQuery(tenant=ALICE.filter(), text="Paris"),
            )
        assert [hit.memory.id for hit in hits] == [stored.id]
        [said] = events(logs, "search_index_status_unavailable")
        assert said["reason"] == refusal[2]
        assert "`agent-memory indexes status`" in said["check"]
        assert "provisioning user" in said["check"]
        # The store's search asked once; the other collection was not asked again.
        assert double.refused == [("$listSearchIndexes", refusal[0])]
    finally:
        await memory.aclose()


async def test_a_listing_that_failed_for_a_moment_is_tried_again_at_the_next_search(
    conn, double, clock
):
    """A transient failure is no answer: the next search of the collection lists again, and
    a missing index found then is said."""
    await ready_indexes(conn, double)
    await conn.collection("memories").drop_search_index("memories_text")
    forget_first_use()
    double.refuse(
        "$listSearchIndexes", 50, "MaxTimeMSExpired", "operation exceeded time limit", times=1
    )
    embedder = FakeEmbedder()
    searcher = make_searcher(conn, dimensions=embedder.dimensions)
    target = IndexCatalog.load(dimensions=embedder.dimensions).target("memories")
    query = SearchQuery(tenant=ALICE.filter(), text="Paris")
    with capture_logs() as logs:
        await searcher.search(target, query)  # the listing fails for a moment
        assert not events(logs, "search_indexes_not_ready")
        await searcher.search(target, query)
        [warning] = events(logs, "search_indexes_not_ready")
        await searcher.search(target, query)  # said once
    assert "memories_text (missing)" in warning["indexes"]
    assert len(events(logs, "search_indexes_not_ready")) == 1


# --- 4b: an empty $vectorSearch of a tenant that has documents ---------------------------------


async def _searchable_memory(conn: Any, tenant: Tenant, text: str) -> Any:
    """A memory written straight to the collection (mongot has not seen it: no sync)."""
    embedder = FakeEmbedder()
    [vector] = await embedder.embed_documents([text])
    result = await conn.collection("memories").insert_one(
        {
            **tenant.filter(),
            "content": text,
            "memory_type": "fact",
            "status": "active",
            "tags": [],
            "created_at": datetime.now(UTC),
            "embedding": to_bson_vector(vector),
        }
    )
    return result.inserted_id


def _vector_query(tenant: Tenant, **kwargs: Any) -> SearchQuery:
    vector = np.ones(FakeEmbedder().dimensions) / np.sqrt(FakeEmbedder().dimensions)
    return SearchQuery(tenant=tenant.filter(), vector=vector, **kwargs)


async def test_an_empty_vector_search_of_a_tenant_with_documents_is_looked_into_per_interval(
    conn, double, clock
):
    await ready_indexes(conn, double)
    await _searchable_memory(conn, ALICE, "Alice lives in Paris")  # not synced: the lag
    searcher = make_searcher(conn, dimensions=FakeEmbedder().dimensions)
    target = IndexCatalog.load(dimensions=FakeEmbedder().dimensions).target("memories")
    query = _vector_query(ALICE, exclude={"status": "superseded"})

    async def search() -> tuple[list[str], list[str], list[dict[str, Any]]]:
        answered, forwarded = len(double.answered), len(double.commands)
        with capture_logs() as logs:
            assert await searcher.search(target, query) == []
        return (
            since(double.answered, answered),
            since(double.commands, forwarded),
            events(logs, "search_index_unusable"),
        )

    # Looked into: one indexed find_one, one listing, one warning.
    answered, forwarded, [warning] = await search()
    assert (answered, forwarded) == (["$vectorSearch", "$listSearchIndexes"], ["find"])
    assert warning["log_level"] == "warning"
    assert (warning["collection"], warning["index"], warning["state"]) == (
        "memories",
        "memories_vector",
        "ok",
    )
    assert warning["message"].endswith(
        "the search index memories.memories_vector is missing, building, or not caught up "
        "with recent writes"
    )
    assert "`agent-memory indexes setup`" in warning["remedy"]

    # Within the interval: no extra round trip, no warning, however many searches.
    for _ in range(3):
        assert await search() == (["$vectorSearch"], [], [])
    clock.now += 599.0
    assert await search() == (["$vectorSearch"], [], [])
    clock.now += 2.0
    answered, forwarded, warnings = await search()
    assert (answered, forwarded, len(warnings)) == (
        ["$vectorSearch", "$listSearchIndexes"],
        ["find"],
        1,
    )

    # Once mongot caught up the search finds it: nothing to look into.
    await double.sync()
    clock.now += 601.0
    answered, forwarded = len(double.answered), len(double.commands)
    assert len(await searcher.search(target, query)) == 1
    assert since(double.answered, answered) == ["$vectorSearch"]
    assert since(double.commands, forwarded) == []


async def test_an_empty_search_of_a_tenant_without_documents_is_right_and_said_nothing_of(
    conn, double, clock
):
    await ready_indexes(conn, double)
    await _searchable_memory(conn, ALICE, "Alice lives in Paris")
    searcher = make_searcher(conn, dimensions=FakeEmbedder().dimensions)
    target = IndexCatalog.load(dimensions=FakeEmbedder().dimensions).target("memories")
    answered, forwarded = len(double.answered), len(double.commands)
    with capture_logs() as logs:
        assert await searcher.search(target, _vector_query(BOB)) == []
        # Alice's search within the interval is not looked into: one check per interval.
        assert await searcher.search(target, _vector_query(ALICE)) == []
        # Nor a keyword search: finding no word is a legitimate answer.
        clock.now += 601.0
        assert await searcher.search(target, SearchQuery(tenant=ALICE.filter(), text="x")) == []
    assert since(double.commands, forwarded) == ["find"]  # Bob's one check
    assert "$listSearchIndexes" not in since(double.answered, answered)
    assert not events(logs, "search_index_unusable")


async def test_filters_count_in_whether_there_was_something_to_find(conn, double, clock):
    await ready_indexes(conn, double)
    await double.sync()
    await _searchable_memory(conn, ALICE, "Alice lives in Paris")  # a fact; not synced
    searcher = make_searcher(conn, dimensions=FakeEmbedder().dimensions)
    target = IndexCatalog.load(dimensions=FakeEmbedder().dimensions).target("memories")
    with capture_logs() as logs:
        await searcher.search(target, _vector_query(ALICE, filters={"memory_type": "episode"}))
    assert not events(logs, "search_index_unusable")  # she has no episode to find


@pytest.mark.parametrize("problem", ["missing", "failed"])
async def test_the_warning_names_a_missing_or_failed_index(conn, double, clock, problem):
    await ready_indexes(conn, double)
    memories = conn.collection("memories")
    await memories.drop_search_index("memories_vector")
    if problem == "failed":
        catalog = IndexCatalog.load(dimensions=FakeEmbedder().dimensions)
        [spec] = [s for s in catalog["memories"].search_indexes if s.name == "memories_vector"]
        from pymongo.operations import SearchIndexModel

        await memories.create_search_index(
            SearchIndexModel(spec.definition, name=spec.name, type=spec.type)
        )
        double.fail("memories_vector", "too many fields")
    memory = LongTermMemory(conn, FakeEmbedder())
    try:
        with capture_logs() as logs:
            # Its consolidation search finds nothing, rightly: Alice has nothing stored yet.
            await memory.store(ALICE, "Alice lives in Paris")
            await double.sync()
            hits = await memory.retrieve(ALICE, "where does Alice live?")
        assert [hit.memory.content for hit in hits] == ["Alice lives in Paris"]  # $search found it
        # $rankFusion returned the text input's hits: only an empty answer is looked into there.
        assert not events(logs, "search_index_unusable")
        clock.now += 601.0
        with capture_logs() as logs:
            await memory.store(ALICE, "Alice likes tea", consolidate=True)  # $vectorSearch only
        [warning] = events(logs, "search_index_unusable")
        assert warning["state"] == problem
        if problem == "missing":
            assert warning["message"].endswith(
                "the search index memories.memories_vector does not exist"
            )
        else:
            assert warning["message"].endswith(
                "the search index memories.memories_vector failed to build: too many fields"
            )
    finally:
        await memory.aclose()


async def test_with_listing_refused_the_state_is_unknown(conn, double, clock):
    await ready_indexes(conn, double)
    forget_first_use()
    double.refuse("$listSearchIndexes", *M0_REFUSAL)
    await _searchable_memory(conn, ALICE, "Alice lives in Paris")
    searcher = make_searcher(conn, dimensions=FakeEmbedder().dimensions)
    target = IndexCatalog.load(dimensions=FakeEmbedder().dimensions).target("memories")
    with capture_logs() as logs:
        assert await searcher.search(target, _vector_query(ALICE)) == []
    [warning] = events(logs, "search_index_unusable")
    assert (warning["state"], warning["detail"]) == ("unknown", M0_REFUSAL[2])
    assert "missing, building, or not caught up with recent writes" in warning["message"]
    assert len(events(logs, "search_index_status_unavailable")) == 1
    assert double.refused == [("$listSearchIndexes", 8000)]  # asked once, at first use


# --- 3b: what mongot's stale pre-filter let through is not returned ---------------------------


@pytest.mark.parametrize("rank_fusion", ["accept", "refuse"])
async def test_a_memory_superseded_inside_the_lag_is_not_returned(
    double, through, clock, rank_fusion
):
    double.rank_fusion = rank_fusion  # refused: the framework fuses two aggregates
    embedder = FakeEmbedder()
    async with await connect(through()) as conn:
        try:
            assert conn.capabilities.rank_fusion is (rank_fusion == "accept")
            await ready_indexes(conn, double)
            memory = LongTermMemory(conn, embedder)
            paris = await memory.store(ALICE, "Alice lives in Paris")
            tea = await memory.store(ALICE, "Alice likes green tea")
            await double.sync()
            question = "where does Alice live? does she like tea?"
            found = {hit.memory.id for hit in await memory.retrieve(ALICE, question)}
            assert found == {paris.id, tea.id}

            await conn.collection("memories").update_one(
                {"_id": paris.id}, {"$set": {"status": "superseded"}}
            )  # no sync: mongot's copy still says active
            target = IndexCatalog.load(dimensions=embedder.dimensions).target("memories")
            stale = SearchQuery(
                tenant=ALICE.filter(),
                vector=await embedder.embed_query(question),
                exclude={"status": "superseded"},
            )
            passed = await _driver.aggregate(
                conn.collection("memories"), vector_search_pipeline(target, stale)
            )
            assert {d["_id"]: d["status"] for d in passed}[paris.id] == "superseded"

            before = len(double.answered)
            hits = await memory.retrieve(ALICE, question)
            assert [hit.memory.id for hit in hits] == [tea.id]
            # Checked on what came back: no extra round trip.
            expected = ["$rankFusion"] if rank_fusion == "accept" else ["$search", "$vectorSearch"]
            assert sorted(since(double.answered, before)) == expected
            history = await memory.retrieve(ALICE, question, include_history=True)
            assert {hit.memory.id for hit in history} == {paris.id, tea.id}
            await memory.aclose()
        finally:
            await conn.client.drop_database(conn.db.name)


@pytest.mark.parametrize("rank_fusion", ["accept", "refuse"])
async def test_hits_dropped_as_stale_do_not_shorten_the_answer(double, through, clock, rank_fusion):
    """Asked for k, a search returns k when k still match, though mongot's lagging copy put
    superseded memories among the best: ``$rankFusion`` returns a margin beyond k, and each
    source of the framework's fusion its whole depth."""
    double.rank_fusion = rank_fusion
    embedder = FakeEmbedder()
    async with await connect(through()) as conn:
        try:
            await ready_indexes(conn, double)
            memory = LongTermMemory(conn, embedder)
            for n in range(8):
                await memory.store(ALICE, f"Alice visited museum number {n} in Paris")
            await memory.aclose()
            await double.sync()
            question = "which museum in Paris did Alice visit?"
            searcher = make_searcher(conn, dimensions=embedder.dimensions)
            target = IndexCatalog.load(dimensions=embedder.dimensions).target("memories")
            query = SearchQuery(
                tenant=ALICE.filter(),
                text=question,
                vector=await embedder.embed_query(question),
                exclude={"status": "superseded"},
                limit=4,
            )
            before = [hit.id for hit in await searcher.search(target, query)]
            assert len(before) == 4
            await conn.collection("memories").update_many(
                {"_id": {"$in": before[:3]}}, {"$set": {"status": "superseded"}}
            )  # no sync: mongot's copy still says active
            after = [hit.id for hit in await searcher.search(target, query)]
            assert len(after) == 4 and not set(after) & set(before[:3])
        finally:
            await conn.client.drop_database(conn.db.name)


async def test_a_document_whose_filtered_field_changed_inside_the_lag_is_not_returned(
    conn, double, clock
):
    await ready_indexes(conn, double)
    embedder = FakeEmbedder()
    memory = LongTermMemory(conn, embedder)
    try:
        work = await memory.store(ALICE, "Alice works at the bakery", tags=["work"])
        await double.sync()
        searcher = make_searcher(conn, dimensions=embedder.dimensions)
        target = IndexCatalog.load(dimensions=embedder.dimensions).target("memories")
        query = SearchQuery(
            tenant=ALICE.filter(),
            vector=await embedder.embed_query("where does Alice work?"),
            filters={"tags": "work"},
        )
        assert [hit.id for hit in await searcher.search(target, query)] == [work.id]
        await conn.collection("memories").update_one(
            {"_id": work.id}, {"$set": {"tags": ["home"]}}
        )  # no sync: mongot's copy still has the tag
        answered, forwarded = len(double.answered), len(double.commands)
        assert await searcher.search(target, query) == []
        # $vectorSearch did return it (no empty search to look into): it was dropped here.
        assert since(double.answered, answered) == ["$vectorSearch"]
        assert since(double.commands, forwarded) == []
    finally:
        await memory.aclose()


@pytest.mark.parametrize("rank_fusion", ["accept", "refuse"])
async def test_a_span_of_time_is_kept_inside_both_search_stages(
    double, through, clock, rank_fusion
):
    """On Atlas, ``since``/``until`` reach ``$vectorSearch`` as a filter on ``occurred_at``
    and ``$search`` as a ``range`` on the field indexed as ``date``: only what was said in
    the span comes back, through either way of fusing."""
    double.rank_fusion = rank_fusion
    embedder = FakeEmbedder()
    march = datetime(2026, 3, 1, tzinfo=UTC)
    async with await connect(through()) as conn:
        try:
            await ready_indexes(conn, double)
            memory = LongTermMemory(conn, embedder)
            lima = await memory.store(ALICE, "Alice flew to Lima", occurred_at=march)
            oslo = await memory.store(
                ALICE, "Alice flew to Oslo", occurred_at=datetime(2026, 1, 9, tzinfo=UTC)
            )
            await double.sync()
            question = "where did Alice fly to?"
            assert {h.memory.id for h in await memory.retrieve(ALICE, question)} == {
                lima.id,
                oslo.id,
            }
            hits = await memory.retrieve(ALICE, question, since=march)
            assert [h.memory.id for h in hits] == [lima.id]
            hits = await memory.retrieve(ALICE, question, until=march)
            assert [h.memory.id for h in hits] == [oslo.id]
            # Inside the stages, not only in the check of what came back.
            target = IndexCatalog.load(dimensions=embedder.dimensions).target("memories")
            query = SearchQuery(
                tenant=ALICE.filter(),
                text="Alice flew",
                vector=await embedder.embed_query(question),
                ranges={"occurred_at": (march, None)},
            )
            for pipeline in (
                vector_search_pipeline(target, query),
                text_search_pipeline(target, query),
            ):
                found = await _driver.aggregate(conn.collection("memories"), pipeline)
                assert [d["_id"] for d in found] == [lima.id], pipeline[0]
            await memory.aclose()
        finally:
            await conn.client.drop_database(conn.db.name)

"""connect(): every way in, what it learns about the server, and how it fails."""

from __future__ import annotations

import asyncio
import time
import warnings
from pathlib import Path

import pytest
from pymongo import AsyncMongoClient
from structlog.testing import capture_logs

from agent_memory.config import load_settings
from agent_memory.errors import (
    AuthenticationError,
    ConfigurationError,
    SearchUnavailableError,
    StorageUnavailableError,
)
from agent_memory.formation.queue import FormationQueue
from agent_memory.memory.conversation.store import SessionStore
from agent_memory.mongo.connection import connect
from agent_memory.mongo.embedded import EmbeddedServer


async def test_uri_connection_probes_the_embedded_server(connection):
    caps = connection.capabilities
    # Reached by URI, not through its data directory, and still known for the engine it is:
    # the query shapes chosen for that engine (no $lookup, no sorted findAndModify) apply.
    assert caps.mongoeco and not caps.embedded
    assert "embedded (mongoeco)" in caps.describe()
    assert not SessionStore(connection).joined
    assert FormationQueue(connection)._by_candidates
    assert connection.tier == "plain"
    assert caps.atlas_search is False and "atlas_search" in caps.notes
    assert caps.rank_fusion is False and caps.score_fusion is False
    # The embedded engine has transactions, but one open transaction makes every other
    # session's operation fail, so they are reported as unusable.
    assert caps.transactions is False
    assert "block every other session" in caps.notes["transactions"]
    assert caps.topology == "standalone"
    assert caps.version_tuple >= (7, 0)
    # connecting created the meta collection and nothing else
    assert await connection.db.list_collection_names() == ["meta"]


async def test_database_handle_stays_the_callers(settings, embedded_server):
    client = AsyncMongoClient(embedded_server.uri)
    try:
        conn = await connect(settings, database=client[settings.database])
        await conn.collection("x").insert_one({"_id": 1})
        await conn.close()
        # the application's client is still usable: connect() did not close it
        assert await client[settings.database]["x"].count_documents({}) == 1
        await client.drop_database(settings.database)
    finally:
        await client.close()


async def test_motor_database_is_accepted(settings, embedded_server):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Motor announces its deprecation
        from motor.motor_asyncio import AsyncIOMotorClient

        client = AsyncIOMotorClient(embedded_server.uri)
    try:
        conn = await connect(settings, database=client[settings.database])
        assert conn.uses_motor
        assert conn.tier == "plain" and "transactions" in conn.capabilities.notes
        await conn.collection("x").insert_many([{"_id": i, "v": i} for i in range(3)])
        from agent_memory.mongo import _driver

        rows = await _driver.aggregate(conn.collection("x"), [{"$match": {"v": {"$gte": 1}}}])
        assert [row["_id"] for row in rows] == [1, 2]
        await conn.close()
        await client.drop_database(settings.database)
    finally:
        client.close()


async def test_uri_and_database_together_is_an_error(settings, embedded_server):
    client = AsyncMongoClient(embedded_server.uri)
    try:
        with pytest.raises(ConfigurationError, match="either uri or database"):
            await connect(settings, uri=embedded_server.uri, database=client["x"])
    finally:
        await client.close()


async def test_wrong_database_object_is_an_error(settings):
    with pytest.raises(ConfigurationError, match="AsyncDatabase"):
        await connect(settings, database="agent_memory")


async def test_unreachable_server_fails_within_the_timeout():
    settings = load_settings(mongodb_uri="mongodb://127.0.0.1:9/", connect_timeout_ms=300)
    started = time.monotonic()
    with pytest.raises(StorageUnavailableError, match="cannot be reached"):
        await connect(settings)
    assert time.monotonic() - started < 5


@pytest.mark.mongoeco
async def test_wrong_credentials_fail_clearly(tmp_path):
    """The embedded engine negotiates SCRAM only when the mechanism is named, hence the URIs."""
    from mongoeco.engines import MemoryEngine
    from mongoeco.wire import AsyncMongoEcoProxyServer, WireAuthUser

    server = AsyncMongoEcoProxyServer(
        engine=MemoryEngine(),
        auth_users=(
            WireAuthUser("app", "right-password", roles=({"role": "root", "db": "admin"},)),
        ),
    )
    address = await server.start()
    try:
        uri = f"mongodb://app:wrong-password@127.0.0.1:{address.port}/?directConnection=true&authMechanism=SCRAM-SHA-256"
        with pytest.raises(AuthenticationError) as caught:
            await connect(load_settings(mongodb_uri=uri, connect_timeout_ms=2_000))
        assert "wrong-password" not in str(caught.value)
        good = f"mongodb://app:right-password@127.0.0.1:{address.port}/?directConnection=true&authMechanism=SCRAM-SHA-256"
        conn = await connect(load_settings(mongodb_uri=good, connect_timeout_ms=2_000))
        await conn.close()
    finally:
        await server.close()


async def test_forcing_atlas_on_a_server_without_search_says_what_to_do(embedded_server):
    settings = load_settings(mongodb_uri=embedded_server.uri, search_tier="atlas")
    with pytest.raises(SearchUnavailableError, match="AGENT_MEMORY_SEARCH_TIER=plain"):
        await connect(settings)


@pytest.mark.mongoeco
async def test_embedded_default_starts_and_is_shared(tmp_path: Path):
    settings = load_settings(data_dir=tmp_path / "data")
    first = await connect(settings)
    try:
        assert first.capabilities.embedded
        await first.collection("x").insert_one({"_id": "shared"})
        # A second connection finds the running server through the data directory.
        second = await connect(settings)
        try:
            assert await second.collection("x").find_one({"_id": "shared"}) == {"_id": "shared"}
        finally:
            await second.close()
    finally:
        await first.close()
    # After the owner closed, the data is on disk and a new server serves it.
    third = await connect(settings)
    try:
        assert await third.collection("x").count_documents({}) == 1
    finally:
        await third.close()


@pytest.mark.mongoeco
async def test_unwritable_data_directory_is_a_clear_error(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    from agent_memory.errors import EmbeddedServerError

    with pytest.raises(EmbeddedServerError, match="AGENT_MEMORY_DATA_DIR"):
        await connect(load_settings(data_dir=blocker / "data"))


@pytest.mark.mongoeco
async def test_taken_port_is_a_clear_error(tmp_path: Path, embedded_server):
    from agent_memory.errors import EmbeddedServerError

    settings = load_settings(data_dir=tmp_path / "data", embedded_port=embedded_server.info.port)
    with pytest.raises(EmbeddedServerError, match="already in use"):
        await connect(settings)
    # the failed start released the data directory: a free port works right after
    conn = await connect(load_settings(data_dir=tmp_path / "data"))
    await conn.close()


async def test_connection_close_is_idempotent_and_leaves_no_tasks(settings):
    before = {task for task in asyncio.all_tasks() if not task.done()}
    conn = await connect(settings)
    await conn.client.drop_database(settings.database)
    await conn.close()
    await conn.close()
    await asyncio.sleep(0)
    leftover = {task for task in asyncio.all_tasks() if not task.done()} - before
    assert not [task for task in leftover if task is not asyncio.current_task()]


def test_non_loopback_host_is_refused(tmp_path: Path):
    from agent_memory.errors import EmbeddedServerError

    with pytest.raises(EmbeddedServerError, match="loopback"):
        EmbeddedServer(tmp_path, host="0.0.0.0")


@pytest.mark.mongoeco
async def test_connection_logs_never_show_the_password(tmp_path):
    import structlog
    from mongoeco.engines import MemoryEngine
    from mongoeco.wire import AsyncMongoEcoProxyServer, WireAuthUser

    server = AsyncMongoEcoProxyServer(
        engine=MemoryEngine(),
        auth_users=(WireAuthUser("app", "pa55word-xyz", roles=({"role": "root", "db": "admin"},)),),
    )
    address = await server.start()
    try:
        uri = f"mongodb://app:pa55word-xyz@127.0.0.1:{address.port}/?directConnection=true&authMechanism=SCRAM-SHA-256"
        with structlog.testing.capture_logs() as logs:
            conn = await connect(load_settings(mongodb_uri=uri))
            await conn.close()
        assert any(entry["event"] == "database_connected" for entry in logs)
        assert "pa55word-xyz" not in repr(logs)
        assert any("app:***@" in str(entry.get("target")) for entry in logs)
    finally:
        await server.close()


def _answering(monkeypatch, answers):
    """The server as Atlas would answer the probes: ``answers`` maps a first stage to a list
    of what to do on each call (an exception to raise, or documents to return); the last
    entry repeats. Other stages go to the embedded server."""
    from agent_memory.mongo import _driver

    real_aggregate = _driver.aggregate
    calls: list[str] = []

    async def answering(collection, pipeline, **kwargs):
        stage = next(iter(pipeline[0]))
        if stage not in answers:
            return await real_aggregate(collection, pipeline, **kwargs)
        calls.append(stage)
        script = answers[stage]
        answer = script.pop(0) if len(script) > 1 else script[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(_driver, "aggregate", answering)
    monkeypatch.setattr("agent_memory.mongo.capabilities.RETRY_DELAYS", (0.0, 0.0, 0.0))
    return calls


def _failure(code, message, code_name="AtlasError"):
    from pymongo import errors as pm

    return pm.OperationFailure(message, code=code, details={"codeName": code_name})


_M0_LISTING = _failure(
    8000,
    "$listSearchIndexes is not allowed or the syntax is incorrect, see the Atlas "
    "documentation for more information",
)


@pytest.mark.parametrize(
    "refusal",
    [
        _failure(13, "not authorized on db to execute command", "Unauthorized"),
        _failure(8000, "user is not allowed to do action [find] on [db.meta]"),
    ],
    ids=["code-13", "atlas-8000"],
)
@pytest.mark.parametrize("tier", ["auto", "atlas", "plain"])
async def test_a_user_not_allowed_to_run_the_search_stages(tier, refusal, settings, monkeypatch):
    """A permission refusal (self-managed code 13, or Atlas's code 8000 'not allowed to do
    action') on auto is a clear refusal, not a silent fall back to the plain tier (whose
    $text indexes Atlas deployments do not have); a tier set explicitly is taken as set."""
    _answering(monkeypatch, {"$vectorSearch": [refusal]})
    configured = settings.model_copy(update={"search_tier": tier})
    if tier == "auto":
        with pytest.raises(AuthenticationError, match=r"may not run \$vectorSearch"):
            await connect(configured)
        return
    conn = await connect(configured)
    try:
        assert conn.tier == tier
        assert conn.capabilities.atlas_search is (tier == "atlas")
        assert "not allowed" in conn.capabilities.search_reason
        assert conn.tier_reason.startswith(f"{tier} tier: AGENT_MEMORY_SEARCH_TIER={tier}")
    finally:
        await conn.close()


async def test_a_free_cluster_that_refuses_to_list_search_indexes_gets_the_atlas_tier(
    settings, monkeypatch
):
    """M0 and Flex refuse $listSearchIndexes (code 8000) while $vectorSearch and $search run
    (a missing index answers no documents): the tier follows the stages."""
    calls = _answering(
        monkeypatch,
        {
            "$listSearchIndexes": [_M0_LISTING],
            "$vectorSearch": [[]],
            "$search": [[]],
            "$rankFusion": [_failure(40324, "Unrecognized pipeline stage name: '$rankFusion'")],
        },
    )
    with capture_logs() as logs:
        conn = await connect(settings)
    try:
        assert conn.tier == "atlas" and conn.capabilities.atlas_search
        assert "$listSearchIndexes" not in calls
        assert conn.capabilities.rank_fusion is False
        assert conn.tier_reason == (
            "atlas tier: $vectorSearch and $search answered; fused in the framework "
            "($rankFusion Unrecognized pipeline stage name: '$rankFusion'); search layout "
            "full: vector and text search indexes (no layout recorded by `agent-memory "
            "indexes setup` yet)"
        )
        [connected] = [e for e in logs if e["event"] == "database_connected"]
        assert connected["reason"] == conn.tier_reason
    finally:
        await conn.close()


async def test_a_community_server_that_lists_no_search_indexes_is_not_taken_for_atlas(
    settings, monkeypatch
):
    """Community 6.0.7-7.0.1 answer $listSearchIndexes with an empty list; their
    $vectorSearch is refused (SearchNotEnabled), so the tier is plain."""
    _answering(
        monkeypatch,
        {
            "$listSearchIndexes": [[]],
            "$vectorSearch": [_failure(31082, "$vectorSearch is not enabled", "SearchNotEnabled")],
        },
    )
    conn = await connect(settings)
    try:
        assert conn.tier == "plain" and not conn.capabilities.atlas_search
        assert conn.tier_reason == "plain tier: $vectorSearch refused: $vectorSearch is not enabled"
    finally:
        await conn.close()


async def test_a_transient_refusal_is_asked_again_not_taken_for_the_lifetime(settings, monkeypatch):
    """mongot unreachable (code 6) or a primary stepping down (189) at start-up: asked again,
    and the answer once it comes decides."""
    unreachable = _failure(6, "Error connecting to localhost:28000", "HostUnreachable")
    stepped_down = _failure(189, "primary stepped down", "PrimarySteppedDown")
    calls = _answering(
        monkeypatch,
        {"$vectorSearch": [unreachable, stepped_down, []], "$search": [[]]},
    )
    conn = await connect(settings)
    try:
        assert conn.tier == "atlas"
        assert calls.count("$vectorSearch") == 3
    finally:
        await conn.close()


@pytest.mark.parametrize("tier", ["auto", "atlas", "plain"])
async def test_a_refusal_that_stays_transient_decides_nothing_on_auto(tier, settings, monkeypatch):
    from pymongo import errors as pm

    calls = _answering(
        monkeypatch, {"$vectorSearch": [[]], "$search": [pm.AutoReconnect("connection reset")]}
    )
    configured = settings.model_copy(update={"search_tier": tier})
    if tier == "auto":
        with pytest.raises(StorageUnavailableError, match="could not tell whether"):
            await connect(configured)
        assert calls.count("$search") == 4  # the first try and three more
        return
    conn = await connect(configured)
    try:
        assert conn.tier == tier
        assert "could not be checked" in conn.capabilities.search_reason
    finally:
        await conn.close()


async def test_a_new_cluster_whose_search_process_does_not_answer_yet_is_still_atlas(
    settings, monkeypatch
):
    """mongot unreachable for the whole probe (a new cluster starts it with its first search
    index) on a server that lists search indexes: Atlas, said why, so that `indexes setup` can
    connect and create that first index."""
    unreachable = _failure(6, "Error connecting to localhost:28000", "HostUnreachable")
    _answering(monkeypatch, {"$vectorSearch": [unreachable], "$listSearchIndexes": [[]]})
    conn = await connect(settings)
    try:
        assert conn.tier == "atlas"
        assert conn.capabilities.search_reason == (
            "$vectorSearch did not answer (Error connecting to localhost:28000) but search "
            "indexes can be listed"
        )
    finally:
        await conn.close()


@pytest.mark.parametrize("failure", ["error", "cancelled"])
async def test_a_connect_that_fails_half_way_closes_its_client(failure, settings, monkeypatch):
    """Whatever stops connect() after it made its client (an unexpected error while probing,
    the caller's timeout cancelling it) closes that client: no socket is left to the garbage
    collector."""
    from pymongo.errors import InvalidOperation

    import agent_memory.mongo.connection as connection_module

    made: list[AsyncMongoClient] = []
    real_new_client = connection_module._new_client

    def recording_new_client(*args, **kwargs):
        made.append(real_new_client(*args, **kwargs))
        return made[-1]

    async def failing_probe(*args, **kwargs):
        if failure == "error":
            raise RuntimeError("probe broke")
        await asyncio.sleep(3600)

    monkeypatch.setattr(connection_module, "_new_client", recording_new_client)
    monkeypatch.setattr(connection_module, "probe_capabilities", failing_probe)
    if failure == "error":
        with pytest.raises(RuntimeError, match="probe broke"):
            await connect(settings)
    else:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(connect(settings), timeout=1.0)
    assert len(made) == 1
    with pytest.raises(InvalidOperation):  # pymongo refuses a closed client
        await made[0].admin.command("ping")

"""The LangGraph checkpointer on the embedded server: LangGraph's conformance suite, a real
graph, threads per tenant, hostile metadata filters, forgetting a user, the upgrade from
thread-wide ids and who closes which connection."""

from __future__ import annotations

import asyncio
import operator
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.checkpoint.conformance.report import ProgressCallbacks
from langgraph.checkpoint.serde.types import ERROR
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from structlog.testing import capture_logs

from agent_memory.config import Settings
from agent_memory.errors import InvalidInputError, StorageError
from agent_memory.langgraph import MongoCheckpointer
from agent_memory.langgraph.checkpointer import CHECKPOINTS, WRITES
from agent_memory.mongo import _driver
from agent_memory.mongo.connection import Connection, connect
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.embedders import FakeEmbedder
from agent_memory.tenancy import Tenant

ALICE = {"agent_id": "agent", "user_id": "alice"}
BOB = {"agent_id": "agent", "user_id": "bob"}


@pytest.fixture
async def saver(connection: Connection) -> MongoCheckpointer:
    checkpointer = MongoCheckpointer(connection)
    await checkpointer.setup()
    return checkpointer


@pytest.fixture
async def shared(connection: Connection) -> MongoCheckpointer:
    """A checkpointer that accepts configs naming no tenant (anonymous threads)."""
    checkpointer = MongoCheckpointer(connection, strict=False)
    await checkpointer.setup()
    return checkpointer


def _config(thread_id: str, **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", **configurable}}


def _checkpoint() -> Checkpoint:
    # empty_checkpoint() makes ids that grow with time, like the graph's own.
    return empty_checkpoint()


# --- conformance ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "how",
    [
        pytest.param({"tenant": Tenant("agent", "conformance")}, id="bound-to-a-tenant"),
        pytest.param({"strict": False}, id="anonymous-threads"),
    ],
)
async def test_conformance_suite_passes_every_capability(
    settings: Settings, how: dict[str, Any]
) -> None:
    # The suite's configs carry only thread_id, checkpoint_ns and checkpoint_id: it runs on a
    # checkpointer bound to one tenant (every config is that tenant's), and on one that
    # shares threads among configs naming none.
    @checkpointer_test(name="MongoCheckpointer")
    async def fresh_checkpointer() -> AsyncIterator[MongoCheckpointer]:
        # Each capability suite gets a database of its own, so suites cannot see each other.
        own = settings.model_copy(update={"database": f"t_{uuid.uuid4().hex[:12]}"})
        async with MongoCheckpointer.from_settings(own, **how) as fresh:
            await fresh.setup()
            try:
                yield fresh
            finally:
                await fresh.connection.client.drop_database(own.database)

    report = await validate(fresh_checkpointer, progress=ProgressCallbacks.verbose())
    report.print_report()
    summary = report.to_dict()["results"]
    failures = {name: result["failures"] for name, result in summary.items() if result["failures"]}
    assert not failures, failures
    assert report.passed_all_base()
    # The extensions too: delete_for_runs, copy_thread and prune.
    for capability in ALL_CAPABILITIES:
        result = summary[capability.value]
        assert result["detected"] and result["tests_passed"] > 0, capability
    assert report.passed_all(), report.conformance_level()


# --- a real graph -----------------------------------------------------------------------------


class _State(TypedDict):
    said: Annotated[list[str], operator.add]
    turns: int


def _graph(saver: MongoCheckpointer) -> Any:
    async def reply(state: _State) -> dict[str, Any]:
        return {"said": [f"reply {state.get('turns', 0) + 1}"], "turns": state.get("turns", 0) + 1}

    builder = StateGraph(_State)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


async def test_graph_keeps_state_per_thread(saver: MongoCheckpointer) -> None:
    graph = _graph(saver)
    first = {"configurable": {"thread_id": "thread-a", **ALICE}}
    await graph.ainvoke({"said": ["hello"]}, first)
    result = await graph.ainvoke({"said": ["again"]}, first)
    assert result["said"] == ["hello", "reply 1", "again", "reply 2"]
    assert result["turns"] == 2

    other = await graph.ainvoke(
        {"said": ["new"]}, {"configurable": {"thread_id": "thread-b", **ALICE}}
    )
    assert other == {"said": ["new", "reply 1"], "turns": 1}

    state = await graph.aget_state(first)
    assert state.values["turns"] == 2
    history = [snapshot async for snapshot in graph.aget_state_history(first)]
    ids = [snapshot.config["configurable"]["checkpoint_id"] for snapshot in history]
    assert ids == sorted(ids, reverse=True) and len(ids) >= 4  # newest first

    # The configs LangGraph hands back name the tenant, so time travel from one works.
    after_first = next(s for s in history if s.values.get("turns") == 1 and not s.next)
    assert after_first.config["configurable"]["user_id"] == "alice"
    replayed = await graph.ainvoke({"said": ["fork"]}, after_first.config)
    assert replayed["said"] == ["hello", "reply 1", "fork", "reply 2"]


async def test_a_sync_call_on_the_loops_own_thread_points_to_the_async_api(
    saver: MongoCheckpointer,
) -> None:
    # It would wait for itself: refused at once (sync use: tests/integration/test_langgraph_sync.py).
    with pytest.raises(asyncio.InvalidStateError, match="aget_state"):
        saver.get_tuple(_config("t", **ALICE))
    with pytest.raises(asyncio.InvalidStateError, match="ainvoke"):
        _graph(saver).invoke({"said": []}, {"configurable": {"thread_id": "t", **ALICE}})


# --- storage details --------------------------------------------------------------------------


async def test_setup_is_idempotent_and_creates_the_catalog_indexes(
    saver: MongoCheckpointer, connection: Connection
) -> None:
    await saver.setup()
    for name, expected in (
        (CHECKPOINTS, {"tenant_thread_ns_checkpoint"}),
        (WRITES, {"tenant_thread_ns_checkpoint_task_idx"}),
    ):
        indexes = await _driver.list_indexes(connection.collection(name))
        assert expected <= {index["name"] for index in indexes}


async def test_regular_writes_insert_once_special_writes_are_replaced(
    saver: MongoCheckpointer,
) -> None:
    stored = await saver.aput(
        _config("t", **ALICE), _checkpoint(), {"source": "input", "step": -1}, {}
    )
    await saver.aput_writes(stored, [("ch", "first"), (ERROR, "boom 1")], "task")
    await saver.aput_writes(stored, [("ch", "second"), (ERROR, "boom 2")], "task")
    await saver.aput_writes(stored, [("ch", "early path")], "other", task_path="a")
    found = await saver.aget_tuple(stored)
    assert found is not None
    # writes_sort_key order: task_path first, then task_id, then idx.
    assert found.pending_writes == [
        ("task", ERROR, "boom 2"),
        ("task", "ch", "first"),
        ("other", "ch", "early path"),
    ]


# --- hostile input ----------------------------------------------------------------------------


async def test_filter_values_are_matched_literally_never_as_operators(
    saver: MongoCheckpointer, connection: Connection
) -> None:
    hostile = {"$ne": None}
    for metadata in (
        {"source": "input", "step": -1, "tag": "plain"},
        {"source": "loop", "step": 0, "tag": hostile, "$where": "1", "a.b": 1},
        {"source": "loop", "step": 1},
    ):
        await saver.aput(_config("t", **ALICE), _checkpoint(), metadata, {})

    async def listed(filter: dict[str, Any]) -> list[int]:
        config = _config("t", **ALICE)
        return [t.metadata["step"] async for t in saver.alist(config, filter=filter)]

    assert await listed({"tag": hostile}) == [0]  # the literal value, not "tag is not null"
    assert await listed({"step": {"$gt": -5}}) == []
    assert await listed({"$where": "1"}) == [0]
    assert await listed({"$or": [{"step": 1}]}) == []
    assert await listed({"a.b": 1}) == [0]
    assert await listed({"tag": None}) == [1]  # missing equals None, as in LangGraph's saver
    assert await listed({"step": 0, "source": "loop"}) == [0]

    raw = await connection.collection(CHECKPOINTS).find_one({"metadata.step": 0})
    # The queryable copy keeps only safe keys and values; the serialised metadata has all.
    # (LangGraph copies the config's configurable values, the tenant's here, into metadata.)
    assert raw is not None and set(raw["metadata"]) == {"source", "step", "agent_id", "user_id"}

    with pytest.raises(InvalidInputError):
        await saver.aget_tuple({"configurable": {"thread_id": hostile, **ALICE}})
    with pytest.raises(InvalidInputError):
        await saver.aget_tuple({"configurable": {"thread_id": "t", **ALICE, "user_id": hostile}})
    before = {"configurable": {"checkpoint_id": hostile}}
    with pytest.raises(InvalidInputError):
        [t async for t in saver.alist({"configurable": ALICE}, before=before)]


# --- forgetting a user ------------------------------------------------------------------------


async def test_forget_user_erases_only_that_users_threads(shared: MongoCheckpointer) -> None:
    graph = _graph(shared)
    alice, bob = Tenant("agent", "alice"), Tenant("agent", "bob")
    runs = {
        "alice-1": alice.filter(),
        "alice-2": alice.filter(),
        "bob-1": bob.filter(),
        "anonymous": {},
    }
    for thread_id, tenant in runs.items():
        await graph.ainvoke({"said": ["hi"]}, {"configurable": {"thread_id": thread_id, **tenant}})
    await graph.aupdate_state(
        {"configurable": {"thread_id": "alice-1", **alice.filter()}}, {"said": ["edit"]}
    )
    # A config without the keys names an anonymous thread of that id, not alice's.
    await graph.aupdate_state({"configurable": {"thread_id": "alice-1"}}, {"said": ["anon"]})

    erased = await shared.forget_user(alice)
    assert erased[CHECKPOINTS] >= 4 and erased[WRITES] > 0

    for thread_id in ("alice-1", "alice-2"):
        assert await shared.aget_tuple(_config(thread_id, **alice.filter())) is None
    for thread_id, tenant in (("bob-1", bob.filter()), ("anonymous", {}), ("alice-1", {})):
        config = {"configurable": {"thread_id": thread_id, **tenant}}
        assert (await graph.aget_state(config)).values
    assert await shared.forget_user(alice) == {CHECKPOINTS: 0, WRITES: 0}


# --- tenant scope -----------------------------------------------------------------------------


async def test_a_config_naming_no_tenant_is_refused_by_default(
    saver: MongoCheckpointer, connection: Connection
) -> None:
    graph = _graph(saver)
    await graph.ainvoke({"said": ["alice's secret"]}, {"configurable": {"thread_id": "t", **ALICE}})
    before = await connection.collection(CHECKPOINTS).count_documents({})
    bare = {"configurable": {"thread_id": "t"}}
    calls = (
        lambda: graph.aget_state(bare),
        lambda: graph.ainvoke({"said": ["hi"]}, bare),
        lambda: graph.aupdate_state(bare, {"said": ["edit"]}),
        lambda: saver.aget_tuple(bare),
        lambda: anext(saver.alist(None)),
        lambda: anext(saver.alist(bare)),
        lambda: saver.aput(bare, _checkpoint(), {}, {}),
        lambda: saver.adelete_thread("t"),
        lambda: saver.acopy_thread("t", "u"),
        lambda: saver.aprune(["t"]),
        lambda: saver.adelete_for_runs(["run"]),
    )
    for call in calls:
        with pytest.raises(InvalidInputError, match=r'put "agent_id" and "user_id" in config'):
            await call()
    # Half a tenant is no tenant: refused in either mode, never read as anonymous.
    for checkpointer in (saver, MongoCheckpointer(connection, strict=False)):
        with pytest.raises(InvalidInputError, match="user_id without agent_id"):
            await checkpointer.aget_tuple(_config("t", user_id="alice"))
    assert await connection.collection(CHECKPOINTS).count_documents({}) == before
    assert (await graph.aget_state({"configurable": {"thread_id": "t", **ALICE}})).values


async def test_a_config_without_the_owner_never_sees_a_tenants_thread(
    shared: MongoCheckpointer,
) -> None:
    graph = _graph(shared)
    alice = {"configurable": {"thread_id": "main", **ALICE}}
    bare = {"configurable": {"thread_id": "main"}}
    await graph.ainvoke({"said": ["alice's secret"]}, alice)

    # Not strict: a config naming no tenant has threads of its own, never alice's.
    assert await shared.aget_tuple(bare) is None
    assert not (await graph.aget_state(bare)).values
    assert [c async for c in shared.alist(None)] == []
    assert [c async for c in shared.alist(bare)] == []
    await graph.ainvoke({"said": ["anonymous"]}, bare)
    assert (await graph.aget_state(bare)).values["said"] == ["anonymous", "reply 1"]
    anonymous = [c async for c in shared.alist(None)]
    assert anonymous and all("user_id" not in c.config["configurable"] for c in anonymous)
    await shared.adelete_thread("main")
    assert (await graph.aget_state(alice)).values["said"] == ["alice's secret", "reply 1"]
    # A checkpointer bound to alice lists hers, and only hers, with no config at all.
    mine = MongoCheckpointer(shared.connection, tenant=Tenant("agent", "alice"))
    listed = [c async for c in mine.alist(None)]
    assert listed and {c.config["configurable"]["user_id"] for c in listed} == {"alice"}
    with pytest.raises(InvalidInputError, match="another agent or user"):
        await mine.aget_tuple(_config("main", **BOB))


async def test_two_users_threads_of_one_id_never_meet(saver: MongoCheckpointer) -> None:
    graph = _graph(saver)
    bob = {"configurable": {"thread_id": "main", **BOB}}
    alice = {"configurable": {"thread_id": "main", **ALICE}}
    # Bob takes "main" first; alice's "main" is hers all the same (no ThreadOwnedError, and
    # nothing tells her bob has one).
    await graph.ainvoke({"said": ["bob's plan"]}, bob)
    await graph.ainvoke({"said": ["alice's secret"]}, alice)
    assert (await graph.aget_state(alice)).values["said"] == ["alice's secret", "reply 1"]
    assert (await graph.aget_state(bob)).values["said"] == ["bob's plan", "reply 1"]
    assert {c.config["configurable"]["user_id"] async for c in saver.alist(alice)} == {"alice"}

    # Bob's writes through the saver land in bob's thread, whatever checkpoint id he names.
    newest = await saver.aget_tuple(_config("main", **ALICE))
    assert newest is not None
    planted = {"configurable": {**bob["configurable"], "checkpoint_ns": ""}}
    planted["configurable"]["checkpoint_id"] = newest.checkpoint["id"]
    await saver.aput_writes(planted, [("said", ["planted"])], "task-1")
    await saver.aput(_config("main", **BOB), _checkpoint(), {}, {})
    after = await graph.ainvoke({"said": ["again"]}, alice)
    assert after["said"] == ["alice's secret", "reply 1", "again", "reply 2"]

    # Copies, prunes and deletes by thread id act on the tenant's own thread.
    alice_tenant, bob_tenant = Tenant("agent", "alice"), Tenant("agent", "bob")
    await saver.acopy_thread("main", "copy", tenant=bob_tenant)
    assert await saver.aget_tuple(_config("copy", **ALICE)) is None
    assert await saver.aget_tuple(_config("copy", **BOB)) is not None
    await saver.aprune(["main"], strategy="delete", tenant=bob_tenant)
    await saver.adelete_thread("copy", tenant=bob_tenant)
    assert await saver.aget_tuple(_config("main", **BOB)) is None
    assert (await graph.aget_state(alice)).values["turns"] == 2
    # Bob's erasure leaves alice's "main".
    await graph.ainvoke({"said": ["bob again"]}, bob)
    await saver.forget_user(bob_tenant)
    assert (await graph.aget_state(alice)).values["turns"] == 2
    await saver.aprune(["main"], tenant=alice_tenant)
    assert len([c async for c in saver.alist(alice)]) == 1


async def test_a_subgraphs_state_is_read_through_a_checkpointer_bound_to_the_tenant(
    saver: MongoCheckpointer,
) -> None:
    def ask(state: _State) -> dict[str, Any]:
        return {"said": [interrupt("which?")], "turns": 1}

    inner = StateGraph(_State)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    inner.add_edge("ask", END)
    outer = StateGraph(_State)
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "inner")
    outer.add_edge("inner", END)
    graph = outer.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t", **ALICE}}
    await graph.ainvoke({"said": ["hi"]}, config)
    assert (await graph.aget_state(config)).next == ("inner",)
    # LangGraph reads a subgraph's state with the thread id alone: refused, not guessed...
    with pytest.raises(InvalidInputError, match="names no tenant"):
        await graph.aget_state(config, subgraphs=True)
    # ...and read through a copy of the graph bound to the tenant.
    alice = MongoCheckpointer(saver.connection, tenant=Tenant("agent", "alice"))
    bound = graph.copy(update={"checkpointer": alice})
    state = await bound.aget_state(config, subgraphs=True)
    assert state.tasks[0].state.values["said"] == ["hi"]
    resumed = await graph.ainvoke(Command(resume="this one"), config)
    assert resumed["said"][-1] == "this one"  # the subgraph resumed with the answer


async def test_a_copy_stays_with_its_tenant(saver: MongoCheckpointer) -> None:
    graph = _graph(saver)
    await graph.ainvoke({"said": ["alice's plan"]}, {"configurable": {"thread_id": "a", **ALICE}})
    await graph.ainvoke({"said": ["bob's plan"]}, {"configurable": {"thread_id": "b", **BOB}})
    alice = Tenant("agent", "alice")

    # Into "b": alice's "b", bob's "b" untouched.
    await saver.acopy_thread("a", "b", tenant=alice)
    state = await graph.aget_state({"configurable": {"thread_id": "b", **BOB}})
    assert state.values["said"] == ["bob's plan", "reply 1"]
    mine = await graph.aget_state({"configurable": {"thread_id": "b", **ALICE}})
    assert mine.values["said"] == ["alice's plan", "reply 1"]

    # Bob copying "a" copies his own "a", of which there is none.
    await saver.acopy_thread("a", "a-copy", tenant=Tenant("agent", "bob"))
    assert await saver.aget_tuple(_config("a-copy", **BOB)) is None
    await saver.acopy_thread("a", "a-copy", tenant=alice)
    copy = {"configurable": {"thread_id": "a-copy", **ALICE}}
    await graph.ainvoke({"said": ["more"]}, copy)
    await saver.forget_user(alice)
    assert await saver.aget_tuple(_config("a-copy", **ALICE)) is None
    assert await saver.aget_tuple(_config("b", **BOB)) is not None


async def test_prune_and_delete_for_runs_refuse_bad_input_before_deleting(
    saver: MongoCheckpointer,
) -> None:
    graph = _graph(saver)
    await graph.ainvoke({"said": ["hi"]}, {"configurable": {"thread_id": "t", **ALICE}})
    before = [c.config async for c in saver.alist(_config("t", **ALICE))]
    alice = Tenant("agent", "alice")
    for call in (
        lambda: saver.adelete_for_runs("run-id", tenant=alice),  # a str is not a list of ids
        lambda: saver.adelete_for_runs([{"$ne": None}], tenant=alice),
        lambda: saver.aprune("t", tenant=alice),
        lambda: saver.aprune(["t"], strategy="everything", tenant=alice),
        lambda: saver.acopy_thread("t", {"$gt": ""}, tenant=alice),
        lambda: saver.adelete_thread("t", tenant=ALICE),  # a dict is not a Tenant
    ):
        with pytest.raises(InvalidInputError):
            await call()
    assert [c.config async for c in saver.alist(_config("t", **ALICE))] == before
    for name, arguments in (("delete_for_runs", (["r"],)), ("copy_thread", ("t", "u"))):
        with pytest.raises(asyncio.InvalidStateError, match=name):
            getattr(saver, name)(*arguments, tenant=alice)
    with pytest.raises(asyncio.InvalidStateError, match="prune"):
        saver.prune(["t"], tenant=alice)


async def test_unattributable_tenant_values_are_refused(saver: MongoCheckpointer) -> None:
    with pytest.raises(InvalidInputError):
        await saver.aput(_config("t", agent_id="agent", user_id=42), _checkpoint(), {}, {})


# --- upgrading from thread-wide ids -----------------------------------------------------------


async def test_setup_moves_threads_stored_by_the_previous_version_to_their_tenant(
    shared: MongoCheckpointer, connection: Connection, embedder: FakeEmbedder
) -> None:
    graph = _graph(shared)
    await graph.ainvoke({"said": ["alice's"]}, {"configurable": {"thread_id": "owned", **ALICE}})
    await graph.ainvoke({"said": ["nobody's"]}, {"configurable": {"thread_id": "free"}})
    # What the previous version stored: the anonymous keys absent, not null; state written
    # without the keys into alice's thread (then part of it); its thread-wide unique indexes.
    checkpoints, writes = connection.collection(CHECKPOINTS), connection.collection(WRITES)
    for collection in (checkpoints, writes):
        await collection.update_many({"agent_id": None}, {"$unset": {"agent_id": 1, "user_id": 1}})
    newest = await checkpoints.find_one({"thread_id": "owned"}, sort=[("checkpoint_id", -1)])
    assert newest is not None
    newest.pop("_id")
    newest.pop("agent_id"), newest.pop("user_id")
    newest["checkpoint_id"] += "-edit"
    await checkpoints.insert_one(newest)
    for collection, name in ((checkpoints, "thread_ns_checkpoint"), (writes, "tenant_thread")):
        key = [("thread_id", 1), ("checkpoint_ns", 1), ("checkpoint_id", -1)]
        if name == "tenant_thread":
            key = [("agent_id", 1), ("user_id", 1), ("thread_id", 1)]
        await collection.create_index(key, name=name)
    manager = IndexManager(connection, embedder.signature)
    drift = {s.name: s for s in await manager.validate() if s.collection.endswith(CHECKPOINTS)}
    assert "replaced by tenant_thread_ns_checkpoint" in drift["thread_ns_checkpoint"].detail
    assert drift["thread_ns_checkpoint"].state == "drift"

    results = await manager.setup()
    dropped = {(s.collection, s.name) for s in results if s.state == "dropped"}
    assert {(CHECKPOINTS, "thread_ns_checkpoint"), (WRITES, "tenant_thread")} <= dropped
    assert not [s for s in await manager.validate() if "lg_" in s.collection]
    assert await checkpoints.count_documents({"agent_id": {"$exists": False}}) == 0
    # The edit is alice's now; the free thread stays anonymous.
    owned = await shared.aget_tuple(_config("owned", **ALICE))
    assert owned is not None
    assert owned.config["configurable"]["checkpoint_id"] == newest["checkpoint_id"]
    assert await shared.aget_tuple(_config("owned")) is None
    assert (await graph.aget_state({"configurable": {"thread_id": "free"}})).values
    await shared.setup()  # idempotent, and the saver's own setup does the same
    assert await shared.forget_user(Tenant("agent", "alice")) != {CHECKPOINTS: 0, WRITES: 0}
    assert await checkpoints.count_documents({"thread_id": "owned"}) == 0


async def test_forget_user_erases_the_previous_versions_state_before_setup(
    saver: MongoCheckpointer, connection: Connection
) -> None:
    await _graph(saver).ainvoke({"said": ["hi"]}, {"configurable": {"thread_id": "t", **ALICE}})
    checkpoints = connection.collection(CHECKPOINTS)
    edit = await checkpoints.find_one({"thread_id": "t"})
    assert edit is not None
    for key in ("_id", "agent_id", "user_id"):
        edit.pop(key)
    edit["checkpoint_id"] += "-edit"
    await checkpoints.insert_one(edit)
    await saver.forget_user(Tenant("agent", "alice"))
    assert await checkpoints.count_documents({}) == 0


# --- who closes what --------------------------------------------------------------------------


async def test_a_connection_passed_in_stays_open(connection: Connection) -> None:
    saver = MongoCheckpointer(connection)
    await saver.aput(_config("t", **ALICE), _checkpoint(), {"source": "input", "step": -1}, {})
    del saver
    assert (await connection.client.admin.command("ping"))["ok"] == 1
    assert await connection.collection(CHECKPOINTS).count_documents({}) == 1


@pytest.mark.parametrize("how", ["settings", "uri"])
async def test_from_settings_and_from_uri_close_what_they_opened(
    settings: Settings, how: str
) -> None:
    if how == "settings":
        opened = MongoCheckpointer.from_settings(settings)
    else:
        opened = MongoCheckpointer.from_uri(settings.uri() or "", settings=settings)
    async with opened as saver:
        await saver.setup()
        assert await saver.aget_tuple(_config("t", **ALICE)) is None
    with pytest.raises(StorageError):
        await saver.aget_tuple(_config("t", **ALICE))
    async with await connect(settings) as cleanup:
        await cleanup.client.drop_database(settings.database)


# --- state the previous version stored without the keys, beside per-tenant threads ----------


async def _bobs_main_as_left_before(saver: MongoCheckpointer, connection: Connection) -> str:
    """Bob's "main" as the previous version left it: his checkpoint, and state written into
    it without the keys (``update_state`` with the thread id alone), with a pending write.
    Returns the id of that unattributed checkpoint."""
    await saver.aput(_config("main", **BOB), _checkpoint(), {"source": "input", "step": -1}, {})
    checkpoints, writes = connection.collection(CHECKPOINTS), connection.collection(WRITES)
    edit = await checkpoints.find_one({"thread_id": "main", **BOB})
    assert edit is not None
    for key in ("_id", "agent_id", "user_id"):
        edit.pop(key)
    edit["checkpoint_id"] += "-edit"
    await checkpoints.insert_one(edit)
    await writes.insert_one(
        {
            "thread_id": "main",
            "checkpoint_ns": "",
            "checkpoint_id": edit["checkpoint_id"],
            "task_id": "task",
            "idx": 0,
            "channel": "said",
            "type": "null",
            "value": b"",
            "task_path": "",
        }
    )
    return edit["checkpoint_id"]


async def test_erasing_a_user_leaves_anothers_unattributed_state_of_the_same_thread_id(
    saver: MongoCheckpointer, connection: Connection
) -> None:
    await _bobs_main_as_left_before(saver, connection)
    await saver.aput(_config("main", **ALICE), _checkpoint(), {"source": "input", "step": -1}, {})
    counts = await saver.forget_user(Tenant("agent", "alice"))
    assert counts == {CHECKPOINTS: 1, WRITES: 0}
    checkpoints = await connection.collection(CHECKPOINTS).find({}).to_list(None)
    writes = await connection.collection(WRITES).find({}).to_list(None)
    assert sorted(d.get("user_id", "-") for d in checkpoints) == ["-", "bob"]
    assert [d.get("user_id", "-") for d in writes] == ["-"]
    # Now bob is the thread's only owner: his erasure takes the state setup would give him.
    assert await saver.forget_user(Tenant("agent", "bob")) == {CHECKPOINTS: 2, WRITES: 1}


async def test_anonymous_threads_never_see_a_tenants_unattributed_state(
    shared: MongoCheckpointer, connection: Connection
) -> None:
    edit = await _bobs_main_as_left_before(shared, connection)
    assert await shared.aget_tuple(_config("main")) is None
    assert await shared.aget_tuple(_config("main", checkpoint_id=edit)) is None
    assert [t async for t in shared.alist(None)] == []
    await shared.acopy_thread("main", "copy")
    await shared.adelete_thread("main")
    await shared.aprune(["main"], strategy="delete")
    checkpoints = await connection.collection(CHECKPOINTS).find({}).to_list(None)
    assert sorted((d["thread_id"], d.get("user_id", "-")) for d in checkpoints) == [
        ("main", "-"),
        ("main", "bob"),
    ]
    # An anonymous thread of its own stays readable, and bob's reads see his checkpoint only.
    await shared.aput(_config("main"), _checkpoint(), {"source": "input", "step": -1}, {})
    assert (await shared.aget_tuple(_config("main"))).config["configurable"]["thread_id"] == "main"
    assert len([t async for t in shared.alist(_config("main", **BOB))]) == 1


async def test_a_thread_left_unattributed_by_setup_is_counted_not_named(
    saver: MongoCheckpointer, connection: Connection
) -> None:
    await _bobs_main_as_left_before(saver, connection)
    await saver.aput(_config("main", **ALICE), _checkpoint(), {"source": "input", "step": -1}, {})
    with capture_logs() as logs:
        await saver.setup()
    warnings = [e for e in logs if e["event"] == "langgraph_threads_not_migrated"]
    assert warnings[0]["collection"].endswith(CHECKPOINTS) and warnings[0]["threads"] == 1
    assert all("main" not in str(w) and "$exists" in w["remedy"] for w in warnings)
    assert "adelete_thread" not in str(warnings)


async def test_erasing_many_threads_sends_bounded_commands(counted) -> None:
    connection, counter = counted
    saver = MongoCheckpointer(connection)
    await connection.collection(CHECKPOINTS).insert_many(
        [
            {**ALICE, "thread_id": f"t{n:03}", "checkpoint_ns": "", "checkpoint_id": "c"}
            for n in range(250)
        ]
    )
    counter.documents.clear()
    assert (await saver.forget_user(Tenant("agent", "alice")))[CHECKPOINTS] == 250

    def longest_in(value: Any) -> int:
        if isinstance(value, dict):
            own = len(value["$in"]) if isinstance(value.get("$in"), list) else 0
            return max([own, *(longest_in(v) for v in value.values())])
        if isinstance(value, list):
            return max([0, *(longest_in(v) for v in value)])
        return 0

    sent = [command for name, command in counter.documents if name in ("find", "delete")]
    assert sent and max(longest_in(command) for command in sent) <= 100


async def test_setup_reads_only_what_was_written_since_it_last_ran(counted) -> None:
    connection, counter = counted

    def matches() -> list[dict[str, Any]]:
        return [
            command["pipeline"][0]["$match"]
            for name, command in counter.documents
            if name == "aggregate" and command["aggregate"].startswith("lg_")
        ]

    shared = MongoCheckpointer(connection, strict=False)
    await shared.setup()
    for n in range(3):  # anonymous threads: their keys stored as null
        await shared.aput(_config(f"t{n}"), _checkpoint(), {"source": "input", "step": -1}, {})
    await shared.aput(_config("main", **ALICE), _checkpoint(), {"source": "input", "step": -1}, {})
    assert all("_id" not in match for match in matches())  # the first run reads everything
    counter.documents.clear()
    await shared.setup()
    # Later runs read only documents inserted since the last run (less a margin), by _id.
    assert len(matches()) == 2 and all("$gt" in match["_id"] for match in matches())
    # A document an old process writes meanwhile, without the keys, into alice's thread:
    # read by nobody, then hers after the next setup.
    checkpoints = connection.collection(CHECKPOINTS)
    edit = await checkpoints.find_one({"thread_id": "main"})
    assert edit is not None
    for key in ("_id", "agent_id", "user_id"):
        edit.pop(key)
    edit["checkpoint_id"] += "-edit"
    await checkpoints.insert_one(edit)
    assert await shared.aget_tuple(_config("main", checkpoint_id=edit["checkpoint_id"])) is None
    await shared.setup()
    found = await shared.aget_tuple(_config("main", checkpoint_id=edit["checkpoint_id"], **ALICE))
    assert found is not None

"""The LangGraph checkpointer on the embedded server: LangGraph's conformance suite, a real
graph, hostile metadata filters, forgetting a user and who closes which connection."""

from __future__ import annotations

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

from agent_memory.config import Settings
from agent_memory.errors import InvalidInputError, StorageError
from agent_memory.langgraph import MongoCheckpointer
from agent_memory.langgraph.checkpointer import CHECKPOINTS, WRITES, ThreadOwnedError
from agent_memory.mongo import _driver
from agent_memory.mongo.connection import Connection, connect
from agent_memory.tenancy import Tenant


@pytest.fixture
async def saver(connection: Connection) -> MongoCheckpointer:
    checkpointer = MongoCheckpointer(connection)
    await checkpointer.setup()
    return checkpointer


def _config(thread_id: str, **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", **configurable}}


def _checkpoint() -> Checkpoint:
    # empty_checkpoint() makes ids that grow with time, like the graph's own.
    return empty_checkpoint()


# --- conformance ------------------------------------------------------------------------------


async def test_conformance_suite_passes_every_capability(settings: Settings) -> None:
    @checkpointer_test(name="MongoCheckpointer")
    async def fresh_checkpointer() -> AsyncIterator[MongoCheckpointer]:
        # Each capability suite gets a database of its own, so suites cannot see each other.
        own = settings.model_copy(update={"database": f"t_{uuid.uuid4().hex[:12]}"})
        async with MongoCheckpointer.from_settings(own) as fresh:
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
    first = {"configurable": {"thread_id": "thread-a"}}
    await graph.ainvoke({"said": ["hello"]}, first)
    result = await graph.ainvoke({"said": ["again"]}, first)
    assert result["said"] == ["hello", "reply 1", "again", "reply 2"]
    assert result["turns"] == 2

    other = await graph.ainvoke({"said": ["new"]}, {"configurable": {"thread_id": "thread-b"}})
    assert other == {"said": ["new", "reply 1"], "turns": 1}

    state = await graph.aget_state(first)
    assert state.values["turns"] == 2
    history = [snapshot async for snapshot in graph.aget_state_history(first)]
    ids = [snapshot.config["configurable"]["checkpoint_id"] for snapshot in history]
    assert ids == sorted(ids, reverse=True) and len(ids) >= 4  # newest first


async def test_sync_api_points_to_the_async_one(saver: MongoCheckpointer) -> None:
    with pytest.raises(NotImplementedError, match="aget_tuple"):
        saver.get_tuple(_config("t"))
    with pytest.raises(NotImplementedError, match="ainvoke"):
        _graph(saver).invoke({"said": []}, {"configurable": {"thread_id": "t"}})


# --- storage details --------------------------------------------------------------------------


async def test_setup_is_idempotent_and_creates_the_catalog_indexes(
    saver: MongoCheckpointer, connection: Connection
) -> None:
    await saver.setup()
    for name, expected in (
        (CHECKPOINTS, {"thread_ns_checkpoint", "tenant_thread"}),
        (WRITES, {"thread_ns_checkpoint_task_idx", "tenant_thread"}),
    ):
        indexes = await _driver.list_indexes(connection.collection(name))
        assert expected <= {index["name"] for index in indexes}


async def test_regular_writes_insert_once_special_writes_are_replaced(
    saver: MongoCheckpointer,
) -> None:
    stored = await saver.aput(_config("t"), _checkpoint(), {"source": "input", "step": -1}, {})
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
        await saver.aput(_config("t"), _checkpoint(), metadata, {})

    async def listed(filter: dict[str, Any]) -> list[int]:
        return [t.metadata["step"] async for t in saver.alist(_config("t"), filter=filter)]

    assert await listed({"tag": hostile}) == [0]  # the literal value, not "tag is not null"
    assert await listed({"step": {"$gt": -5}}) == []
    assert await listed({"$where": "1"}) == [0]
    assert await listed({"$or": [{"step": 1}]}) == []
    assert await listed({"a.b": 1}) == [0]
    assert await listed({"tag": None}) == [1]  # missing equals None, as in LangGraph's saver
    assert await listed({"step": 0, "source": "loop"}) == [0]

    raw = await connection.collection(CHECKPOINTS).find_one({"metadata.step": 0})
    # The queryable copy keeps only safe keys and values; the serialised metadata has all.
    assert raw is not None and set(raw["metadata"]) == {"source", "step"}

    with pytest.raises(InvalidInputError):
        await saver.aget_tuple({"configurable": {"thread_id": hostile}})
    with pytest.raises(InvalidInputError):
        [t async for t in saver.alist(None, before={"configurable": {"checkpoint_id": hostile}})]


# --- forgetting a user ------------------------------------------------------------------------


async def test_forget_user_erases_only_that_users_threads(saver: MongoCheckpointer) -> None:
    graph = _graph(saver)
    alice, bob = Tenant("agent", "alice"), Tenant("agent", "bob")
    runs = {
        "alice-1": alice.filter(),
        "alice-2": alice.filter(),
        "bob-1": bob.filter(),
        "anonymous": {},
    }
    for thread_id, tenant in runs.items():
        await graph.ainvoke({"said": ["hi"]}, {"configurable": {"thread_id": thread_id, **tenant}})
    # State written without the keys into alice's thread belongs to that thread.
    await graph.aupdate_state({"configurable": {"thread_id": "alice-1"}}, {"said": ["edit"]})

    erased = await saver.forget_user(alice)
    assert erased[CHECKPOINTS] >= 4 and erased[WRITES] > 0

    for thread_id in ("alice-1", "alice-2"):
        assert await saver.aget_tuple(_config(thread_id)) is None
    for thread_id in ("bob-1", "anonymous"):
        assert (await graph.aget_state({"configurable": {"thread_id": thread_id}})).values
    assert await saver.forget_user(alice) == {CHECKPOINTS: 0, WRITES: 0}


# --- tenant scope -----------------------------------------------------------------------------


async def test_another_user_neither_reads_nor_continues_a_thread(saver: MongoCheckpointer) -> None:
    graph = _graph(saver)
    alice = {"thread_id": "shared-id", "agent_id": "agent", "user_id": "alice"}
    bob = {"thread_id": "shared-id", "agent_id": "agent", "user_id": "bob"}
    await graph.ainvoke({"said": ["alice's secret"]}, {"configurable": alice})

    # Bob, naming the same thread id with his own keys, finds nothing of alice's...
    assert await saver.aget_tuple(_config("shared-id", agent_id="agent", user_id="bob")) is None
    assert [c async for c in saver.alist({"configurable": bob})] == []
    assert not (await graph.aget_state({"configurable": bob})).values
    # ...and cannot write to it, through the graph or the saver.
    with pytest.raises(ThreadOwnedError, match="belongs to another agent or user"):
        await graph.ainvoke({"said": ["bob's turn"]}, {"configurable": bob})
    newest = await saver.aget_tuple(_config("shared-id", agent_id="agent", user_id="alice"))
    assert newest is not None
    with pytest.raises(ThreadOwnedError):
        await saver.aput_writes(
            {
                "configurable": {
                    **bob,
                    "checkpoint_ns": "",
                    **{"checkpoint_id": newest.checkpoint["id"]},
                }
            },
            [("said", ["planted"])],
            "task-1",
        )
    with pytest.raises(ThreadOwnedError):
        await saver.aput(
            _config("shared-id", agent_id="agent", user_id="bob"), _checkpoint(), {}, {}
        )

    # Alice's thread is intact and goes on.
    state = await graph.aget_state({"configurable": alice})
    assert state.values["said"] == ["alice's secret", "reply 1"]
    after = await graph.ainvoke({"said": ["again"]}, {"configurable": alice})
    assert "bob's turn" not in after["said"] and "planted" not in after["said"]
    # Once alice is forgotten, the id is free for bob.
    await saver.forget_user(Tenant("agent", "alice"))
    await graph.ainvoke({"said": ["bob's turn"]}, {"configurable": bob})
    assert (await graph.aget_state({"configurable": bob})).values["said"][0] == "bob's turn"


async def test_a_copy_keeps_its_owner_and_never_lands_in_another_users_thread(
    saver: MongoCheckpointer,
) -> None:
    graph = _graph(saver)
    alice = {"agent_id": "agent", "user_id": "alice"}
    bob = {"agent_id": "agent", "user_id": "bob"}
    await graph.ainvoke({"said": ["alice's plan"]}, {"configurable": {"thread_id": "a", **alice}})
    await graph.ainvoke({"said": ["bob's plan"]}, {"configurable": {"thread_id": "b", **bob}})

    # Into bob's thread: refused, and nothing of alice's is written there.
    with pytest.raises(ThreadOwnedError):
        await saver.acopy_thread("a", "b")
    state = await graph.aget_state({"configurable": {"thread_id": "b", **bob}})
    assert state.values["said"] == ["bob's plan", "reply 1"]

    # Into a new thread: still alice's, continued by her, invisible to bob, forgotten with her.
    await saver.acopy_thread("a", "a-copy")
    copy = {"configurable": {"thread_id": "a-copy", **alice}}
    assert (await graph.aget_state(copy)).values["said"] == ["alice's plan", "reply 1"]
    assert await saver.aget_tuple(_config("a-copy", **bob)) is None
    with pytest.raises(ThreadOwnedError):
        await graph.ainvoke(
            {"said": ["bob's turn"]}, {"configurable": {"thread_id": "a-copy", **bob}}
        )
    await graph.ainvoke({"said": ["more"]}, copy)
    await saver.forget_user(Tenant("agent", "alice"))
    assert await saver.aget_tuple(_config("a-copy")) is None
    assert await saver.aget_tuple(_config("b")) is not None


async def test_prune_and_delete_for_runs_refuse_bad_input_before_deleting(
    saver: MongoCheckpointer,
) -> None:
    graph = _graph(saver)
    await graph.ainvoke({"said": ["hi"]}, {"configurable": {"thread_id": "t"}})
    before = [c.config async for c in saver.alist(_config("t"))]
    for call in (
        lambda: saver.adelete_for_runs("run-id"),  # a str is not a list of ids
        lambda: saver.adelete_for_runs([{"$ne": None}]),
        lambda: saver.aprune("t"),
        lambda: saver.aprune(["t"], strategy="everything"),
        lambda: saver.acopy_thread("t", {"$gt": ""}),
    ):
        with pytest.raises(InvalidInputError):
            await call()
    assert [c.config async for c in saver.alist(_config("t"))] == before
    for name in ("delete_for_runs", "copy_thread", "prune"):
        with pytest.raises(NotImplementedError, match=f"a{name}"):
            getattr(saver, name)(["t"])


async def test_unattributable_tenant_values_are_refused(saver: MongoCheckpointer) -> None:
    with pytest.raises(InvalidInputError):
        await saver.aput(_config("t", agent_id="agent", user_id=42), _checkpoint(), {}, {})


# --- who closes what --------------------------------------------------------------------------


async def test_a_connection_passed_in_stays_open(connection: Connection) -> None:
    saver = MongoCheckpointer(connection)
    await saver.aput(_config("t"), _checkpoint(), {"source": "input", "step": -1}, {})
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
        assert await saver.aget_tuple(_config("t")) is None
    with pytest.raises(StorageError):
        await saver.aget_tuple(_config("t"))
    async with await connect(settings) as cleanup:
        await cleanup.client.drop_database(settings.database)

"""Sync LangGraph apps on the checkpointer and the store: a script with no event loop
(``sync_connection``), a plain thread beside an async app's loop, and a sync call on the
serving loop's own thread, which must fail at once rather than wait for itself."""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from pymongo import MongoClient

from agent_memory.config import Settings
from agent_memory.errors import InvalidInputError
from agent_memory.langgraph import MemoryStore, MongoCheckpointer, sync_connection
from agent_memory.langgraph.sync import loop_of
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.mongo.connection import Connection
from agent_memory.providers.embedders.fake import FakeEmbedder
from agent_memory.tenancy import Tenant

ALICE = {"agent_id": "agent", "user_id": "alice"}
NOTES = ("memories", "alice", "notes")


class _State(TypedDict):
    said: Annotated[list[str], operator.add]
    recalled: list[str]


def _graph(saver: MongoCheckpointer, store: MemoryStore) -> Any:
    def remember(state: _State) -> dict[str, Any]:
        # A sync node: the store's sync API, as LangGraph hands it to the node.
        store = get_store()
        said = state["said"][-1]
        store.put(NOTES, f"n{len(state['said'])}", {"content": said})
        assert store.get(NOTES, f"n{len(state['said'])}").value == {"content": said}
        hits = store.search(NOTES, query="tea", limit=5)
        return {"said": [f"noted {said}"], "recalled": [hit.value["content"] for hit in hits]}

    builder = StateGraph(_State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    return builder.compile(checkpointer=saver, store=store)


def _drop(settings: Settings) -> None:
    with MongoClient(settings.uri()) as client:
        client.drop_database(settings.database)


def test_a_script_without_an_event_loop_runs_a_graph_on_both(settings: Settings) -> None:
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()  # a plain script: no loop of its own
    try:
        with sync_connection(settings) as connection:
            saver = MongoCheckpointer(connection)
            store = MemoryStore(LongTermMemory(connection, FakeEmbedder()), agent_id="agent")
            graph = _graph(saver, store)
            config = {"configurable": {"thread_id": "t", **ALICE}}
            first = graph.invoke({"said": ["I like green tea"], "recalled": []}, config)
            assert first["recalled"] == ["I like green tea"]
            chunks = list(graph.stream({"said": ["tea at five"]}, config, stream_mode="values"))
            assert chunks[-1]["said"][-1] == "noted tea at five"
            state = graph.get_state(config)
            assert state.values["said"] == [
                "I like green tea",
                "noted I like green tea",
                "tea at five",
                "noted tea at five",
            ]
            assert sorted(state.values["recalled"]) == ["I like green tea", "tea at five"]
            history = list(graph.get_state_history(config))
            assert len(history) >= 4 and history[0].config == state.config
            # The store's own sync API, from the script.
            assert {item.key for item in store.search(NOTES)} == {"n1", "n3"}
            assert saver.get_tuple(config) is not None
            with pytest.raises(InvalidInputError, match="names no tenant"):
                saver.delete_thread("t")  # strict: a thread id alone names nobody's thread
            saver.delete_thread("t", tenant=Tenant("agent", "alice"))
            assert saver.get_tuple(config) is None
            store.close()
    finally:
        _drop(settings)


def test_a_strict_refusal_and_the_closed_loop_say_what_to_do(settings: Settings) -> None:
    try:
        with sync_connection(settings) as connection:
            saver = MongoCheckpointer(connection)
            with pytest.raises(InvalidInputError, match="agent_id"):
                saver.get_tuple({"configurable": {"thread_id": "t"}})
            served = loop_of(connection)
            assert served is not None and served.is_running()
        # After the block the loop is gone: a clear error, no hang.
        with pytest.raises(asyncio.InvalidStateError, match="sync_connection"):
            saver.get_tuple({"configurable": {"thread_id": "t", **ALICE}})
        assert served.is_closed()
    finally:
        _drop(settings)


async def test_a_plain_thread_beside_an_async_app(connection: Connection) -> None:
    saver = MongoCheckpointer(connection)
    store = MemoryStore(LongTermMemory(connection, FakeEmbedder()), agent_id="agent")
    graph = _graph(saver, store)
    config = {"configurable": {"thread_id": "t", **ALICE}}
    results: dict[str, Any] = {}

    def sync_code() -> None:  # what a sync library or tool does from its own thread
        results["invoked"] = graph.invoke({"said": ["I like green tea"], "recalled": []}, config)
        results["state"] = graph.get_state(config)

    worker = threading.Thread(target=sync_code)
    worker.start()
    await asyncio.to_thread(worker.join, 60)
    assert results["invoked"]["recalled"] == ["I like green tea"]
    assert results["state"].values["said"][-1] == "noted I like green tea"
    # The same graph, async, on the app's loop, sees what the thread wrote.
    assert (await graph.aget_state(config)).values == results["state"].values
    await store.aclose()


async def test_a_sync_call_on_the_serving_loops_thread_fails_at_once(
    connection: Connection, settings: Settings
) -> None:
    saver = MongoCheckpointer(connection)
    store = MemoryStore(LongTermMemory(connection, FakeEmbedder()), agent_id="agent")
    config = {"configurable": {"thread_id": "t", **ALICE}}
    with pytest.raises(asyncio.InvalidStateError, match="wait for itself"):
        saver.get_tuple(config)
    with pytest.raises(asyncio.InvalidStateError, match="wait for itself"):
        list(saver.list(config))
    with pytest.raises(asyncio.InvalidStateError, match="wait for itself"):
        store.get(NOTES, "k")
    await store.aclose()

    # The same on sync_connection's private loop: a coroutine running there calls sync.
    def on_the_private_loop() -> str:
        with sync_connection(settings) as served:
            private = MongoCheckpointer(served)

            async def inside() -> str:
                try:
                    private.get_tuple(config)
                except asyncio.InvalidStateError as exc:
                    return str(exc)
                return "no error"

            loop = loop_of(served)
            assert loop is not None
            return asyncio.run_coroutine_threadsafe(inside(), loop).result(timeout=60)

    assert "wait for itself" in await asyncio.to_thread(on_the_private_loop)


def _parallel_graph(store: MemoryStore, saver: MongoCheckpointer | None = None) -> Any:
    """Two sync nodes that run at once (LangGraph runs them in worker threads), each using
    the store's sync API."""

    def node(name: str) -> Any:
        def run(state: _State) -> dict[str, Any]:
            store = get_store()
            store.put(NOTES, name, {"content": f"{name} likes tea"})
            return {"said": [store.get(NOTES, name).value["content"]]}

        return run

    builder = StateGraph(_State)
    for name in ("left", "right"):
        builder.add_node(name, node(name))
        builder.add_edge(START, name)
        builder.add_edge(name, END)
    return builder.compile(checkpointer=saver, store=store)


async def test_a_sync_connection_opened_in_async_code_serves_the_store(
    settings: Settings,
) -> None:
    # A notebook or an async app: a loop runs, and the sync API is used all the same.
    running = asyncio.get_running_loop()
    try:
        with sync_connection(settings) as connection:
            store = MemoryStore(LongTermMemory(connection, FakeEmbedder()), agent_id="agent")
            served = loop_of(connection)
            assert store._serving is served and served is not running
            graph = _parallel_graph(store, MongoCheckpointer(connection))
            config = {"configurable": {"thread_id": "t", **ALICE}}
            # graph.invoke blocks this loop's thread: the store's calls from the two worker
            # threads are served by the connection's loop, not sent to this one.
            result = graph.invoke({"said": [], "recalled": []}, config)
            assert sorted(result["said"]) == ["left likes tea", "right likes tea"]
            assert {item.key for item in store.search(NOTES)} == {"left", "right"}
            store.close()
    finally:
        _drop(settings)


async def test_a_sync_graph_run_on_the_serving_loops_thread_is_refused_not_hung(
    connection: Connection,
) -> None:
    # The connection belongs to this loop; graph.invoke on its thread blocks it, so the
    # store calls of the parallel nodes could never be served: refused, not waited forever.
    store = MemoryStore(LongTermMemory(connection, FakeEmbedder()), agent_id="agent")
    graph = _parallel_graph(store)
    with pytest.raises(asyncio.InvalidStateError, match="blocked by a synchronous graph run"):
        graph.invoke({"said": [], "recalled": []})
    # Nothing was done for the refused calls, and the store serves async calls as before.
    assert await store.asearch(NOTES) == []
    await store.aclose()


async def test_a_loop_blocked_otherwise_ends_the_wait(
    connection: Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_memory.langgraph import sync

    monkeypatch.setattr(sync, "START_TIMEOUT", 1.0)
    store = MemoryStore(LongTermMemory(connection, FakeEmbedder()), agent_id="agent")
    outcome: dict[str, BaseException] = {}

    def sync_code() -> None:
        try:
            store.get(NOTES, "k")
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=sync_code)
    worker.start()
    worker.join(60)  # on the loop's thread: it serves nothing until the worker ends
    assert not worker.is_alive()
    assert isinstance(outcome.get("error"), asyncio.InvalidStateError)
    assert "has not started this call" in str(outcome["error"])
    await store.aclose()

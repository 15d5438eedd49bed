"""Sync LangGraph apps: ``graph.invoke``, ``get_state`` and ``stream`` on the checkpointer, and a
sync node's ``store.put``/``get``/``search``, with no event loop of the app's own.

pymongo's ``AsyncMongoClient`` belongs to the event loop it was opened on (its monitoring
tasks run there; PYTHON-4725), so a sync call cannot start a loop of its own per call
(``asyncio.run`` would open the client's work on a second loop). Instead every sync call is
handed to *the loop that serves the connection* and waited for:

- in an async app, the app's loop: LangGraph runs sync nodes and tools in worker threads while
  it runs, and a sync call from such a thread (or any other thread) is served there;
- in a sync app, a private loop on a daemon thread of its own, started by
  :func:`sync_connection`, which opens the connection on it and closes both on exit.

A sync call made on the serving loop's own thread would wait for itself forever: it raises
:class:`asyncio.InvalidStateError` instead (use the async API there). So does a call the loop
cannot start because its thread is blocked waiting for the caller: a sync ``graph.invoke`` or
``stream`` run on the loop's thread (async code, a notebook) runs parallel sync nodes in
worker threads, whose store calls the blocked loop would never serve. That is seen in the
loop thread's stack (a frame of LangGraph's sync ``Pregel.stream``) once the call has waited
a quarter of a second unstarted; any other block ends the wait after :data:`START_TIMEOUT`
seconds without the loop starting the call. A call is abandoned only before it starts, so a
refused call has done nothing; once started it is waited for to its end. Calls made from
several threads at once are served one by one as they arrive, not batched together as
concurrent async calls are.

>>> from agent_memory.langgraph import MemoryStore, MongoCheckpointer, sync_connection
>>> with sync_connection() as connection:                               # doctest: +SKIP
...     saver = MongoCheckpointer(connection)
...     store = MemoryStore(LongTermMemory(connection, embedder), agent_id="support-agent")
...     graph = builder.compile(checkpointer=saver, store=store)
...     graph.invoke(inputs, {"configurable": {"thread_id": "t1", "agent_id": "a", "user_id": "u"}})
...     store.close()
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import weakref
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from langgraph.pregel import Pregel

from agent_memory._log import get_logger
from agent_memory.config import Settings
from agent_memory.mongo.connection import Connection, connect

__all__ = ["call_sync", "loop_of", "sync_connection"]

logger = get_logger(__name__)

T = TypeVar("T")

#: How long a sync call waits for the serving loop to start it (a live loop starts it within
#: a tick) before it is refused as blocked.
START_TIMEOUT = 60.0
#: How often a waiting call looks again at whether it started and what blocks the loop.
_POLL = 0.25
#: Frames of a synchronous LangGraph run (``invoke`` and ``stream`` go through it), which
#: waits for its nodes' worker threads.
_SYNC_RUNS = frozenset({Pregel.stream.__code__})

#: The private loop serving each connection :func:`sync_connection` opened.
_SERVED: weakref.WeakKeyDictionary[Connection, asyncio.AbstractEventLoop] = (
    weakref.WeakKeyDictionary()
)


def loop_of(connection: Connection) -> asyncio.AbstractEventLoop | None:
    """The private loop serving ``connection`` when :func:`sync_connection` opened it."""
    return _SERVED.get(connection)


def call_sync(
    loop: asyncio.AbstractEventLoop | None, coroutine: Coroutine[Any, Any, T], what: str
) -> T:
    """Run ``coroutine`` on ``loop`` (the loop serving the connection) and wait for it.

    Raises :class:`asyncio.InvalidStateError`, saying what to do, when no running loop serves
    the connection or when called on that loop's own thread (where waiting would never end).
    """
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if loop is None or loop.is_closed() or not loop.is_running():
        coroutine.close()
        raise asyncio.InvalidStateError(
            f"{what}: no running event loop serves this connection; in a sync app open it "
            "with agent_memory.langgraph.sync_connection(), in an async app use the async "
            "API (ainvoke, aget_state, aput, ...) or make sync calls from another thread"
        )
    if running is loop:
        coroutine.close()
        raise asyncio.InvalidStateError(
            f"{what}: a sync call on the thread of the event loop that serves the connection "
            "would wait for itself forever; use the async API here (ainvoke, aget_state, "
            "aput, ...), or make the call from another thread"
        )
    gate = _Gate(coroutine)
    future = asyncio.run_coroutine_threadsafe(gate.run(), loop)
    deadline = time.monotonic() + START_TIMEOUT
    while not gate.started.wait(_POLL):
        in_sync_run = _in_sync_run(loop)
        if (in_sync_run or time.monotonic() >= deadline) and gate.abandon():
            future.cancel()
            if in_sync_run:
                raise asyncio.InvalidStateError(
                    f"{what}: the event loop that serves this connection is blocked by a "
                    "synchronous graph run on its own thread (graph.invoke or graph.stream "
                    "called from async code or a notebook), which waits for this call: use "
                    "await graph.ainvoke(...) / astream there, or open the connection with "
                    "agent_memory.langgraph.sync_connection()"
                )
            raise asyncio.InvalidStateError(
                f"{what}: the event loop that serves this connection has not started this "
                f"call in {START_TIMEOUT:.0f} s: its thread is blocked, probably by a "
                "synchronous call that waits for this one; use the async API on that thread"
            )
    return future.result()


class _Gate:
    """A coroutine that either starts on the serving loop or is abandoned by its waiter,
    never both: an abandoned call has done nothing."""

    def __init__(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        self._coroutine = coroutine
        self._lock = threading.Lock()
        self._abandoned = False
        self.started = threading.Event()

    async def run(self) -> Any:
        with self._lock:
            if self._abandoned:
                return None  # its waiter has raised; the future is cancelled
            self.started.set()
        return await self._coroutine

    def abandon(self) -> bool:
        """Give the call up unless it has started; whether it was given up."""
        with self._lock:
            if self.started.is_set():
                return False
            self._abandoned = True
            self._coroutine.close()  # never started: closed here, no warning
            return True


def _in_sync_run(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop``'s thread is inside a synchronous LangGraph run, which waits for its
    worker threads and serves nothing meanwhile (asyncio's loops note their thread while
    they run; a loop that does not is judged by the deadline alone)."""
    ident = getattr(loop, "_thread_id", None)
    if not isinstance(ident, int) or ident == threading.get_ident():
        return False
    frame = sys._current_frames().get(ident)
    while frame is not None:
        if frame.f_code in _SYNC_RUNS:
            return True
        frame = frame.f_back
    return False


class _LoopThread:
    """An event loop running forever on a daemon thread of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        started = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.call_soon(started.set)
            self.loop.run_forever()

        self.thread = threading.Thread(target=serve, name="agent-memory-sync", daemon=True)
        self.thread.start()
        started.wait()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def cancel_the_rest(self) -> None:
        """Cancel what still runs on the loop (a store's serving task, a TTL sweeper)."""

        async def cancel() -> None:
            current = asyncio.current_task()
            rest = [task for task in asyncio.all_tasks() if task is not current]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)
            await self.loop.shutdown_asyncgens()

        self.run(cancel())

    def stop(self) -> None:
        """Stop the loop, join the thread and close the loop."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


@contextmanager
def sync_connection(
    settings: Settings | None = None,
    *,
    uri: str | None = None,
    client_options: dict[str, Any] | None = None,
) -> Iterator[Connection]:
    """A :class:`Connection` for a sync app, opened and served by a private event loop on a
    thread of its own; the connection and the loop are closed on exit.

    :class:`~agent_memory.langgraph.MongoCheckpointer` and
    :class:`~agent_memory.langgraph.MemoryStore` built on it (from sync code) serve their
    sync methods there, from any thread. Arguments as :func:`agent_memory.connect`.
    """
    served = _LoopThread()
    try:
        connection = served.run(connect(settings, uri=uri, client_options=client_options))
    except BaseException:
        served.stop()
        raise
    _SERVED[connection] = served.loop
    try:
        yield connection
    finally:
        _SERVED.pop(connection, None)
        try:
            served.cancel_the_rest()
            served.run(connection.close())
        finally:
            served.stop()

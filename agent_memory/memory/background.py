"""Writes a caller should not wait for, tracked so they finish before the connection closes.

A write that fails because the server is briefly out of reach or busy (:func:`worth_retrying`)
is tried again after :data:`RETRY_DELAYS`, a few seconds in all, well inside the time
:meth:`BackgroundWrites.drain` gives them at close; one the server refused for what it holds
(a document it cannot update) is not, since it would fail the same way again. Only a write
that finally fails is logged (``background_write_failed``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.errors import StorageUnavailableError
from agent_memory.mongo._errors import classify_refusal
from agent_memory.mongo.transactions import is_transient

__all__ = ["RETRY_DELAYS", "BackgroundWrites", "retried", "worth_retrying"]

logger = get_logger(__name__)

T = TypeVar("T")

#: Seconds before each new attempt of a background write that failed transiently: four
#: attempts within about 3 seconds (the default :meth:`BackgroundWrites.drain` waits 10).
RETRY_DELAYS = (0.1, 0.5, 2.0)


def worth_retrying(exc: BaseException) -> bool:
    """Whether the same write may succeed later: the server could not be reached, said it
    was briefly unavailable, or (the embedded one) was holding another session's
    transaction. Looked for along the chain of causes (the framework's own errors keep the
    driver's as their cause)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, StorageUnavailableError):
            return True
        if isinstance(seen, pm.PyMongoError) and (
            is_transient(seen) or classify_refusal(seen) == "transient"
        ):
            return True
        seen = seen.__cause__
    return False


async def retried(
    write: Callable[[], Awaitable[T]], what: str, delays: tuple[float, ...] | None = None
) -> T:
    """``await write()``, called again after each of ``delays`` (:data:`RETRY_DELAYS`) while
    it fails in a way :func:`worth_retrying` accepts; the last failure, or one not worth
    retrying, is raised."""
    for delay in (*(RETRY_DELAYS if delays is None else delays), None):
        try:
            return await write()
        except Exception as exc:
            if delay is None or not worth_retrying(exc):
                raise
            logger.debug(
                "background_write_retried", what=what, error=type(exc).__name__, wait_s=delay
            )
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


class BackgroundWrites:
    """Writes the caller should not wait for (access statistics, touch timestamps).

    Each is a tracked task; a failure is logged, never raised into an unrelated caller.
    :meth:`drain` waits for what is pending, for clean shutdown and for tests.
    """

    def __init__(self, connection: Any | None = None) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        if connection is not None:  # closing the connection first finishes these writes
            connection.track(self)

    def schedule(self, operation: Awaitable[Any], what: str) -> None:
        """Run ``operation`` in the background, once (see :meth:`schedule_retried`)."""
        task = asyncio.ensure_future(operation)
        self._tasks.add(task)

        def done(finished: asyncio.Task[Any]) -> None:
            self._tasks.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                logger.warning(
                    "background_write_failed",
                    what=what,
                    error=type(finished.exception()).__name__,
                    detail=str(finished.exception())[:200],
                )

        task.add_done_callback(done)

    def schedule_retried(self, write: Callable[[], Awaitable[Any]], what: str) -> None:
        """Run ``write()`` in the background, again after a transient failure
        (:func:`retried`); ``write`` must be safe to run again after such a failure."""
        self.schedule(retried(write, what), what)

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def drain(self, timeout: float | None = 10.0) -> None:
        """Wait for pending writes (up to ``timeout`` seconds), then cancel what is left."""
        if not self._tasks:
            return
        tasks = set(self._tasks)
        _, still_running = await asyncio.wait(tasks, timeout=timeout)
        for task in still_running:
            task.cancel()
        if still_running:
            await asyncio.gather(*still_running, return_exceptions=True)

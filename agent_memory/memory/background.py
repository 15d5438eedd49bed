"""Writes a caller should not wait for, tracked so they finish before the connection closes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from agent_memory._log import get_logger

__all__ = ["BackgroundWrites"]

logger = get_logger(__name__)


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

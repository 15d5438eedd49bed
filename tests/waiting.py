"""Waiting for background work in tests by what it does, not by how long it usually takes.

A loop of a fixed number of short sleeps is a timeout in disguise: green on an idle machine,
red beside another process. :func:`until` polls a condition until it holds, with a deadline
far beyond anything a working system needs, and fails with what was awaited.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

__all__ = ["until"]


async def until(
    condition: Callable[[], bool | Awaitable[bool]],
    what: str,
    *,
    timeout: float = 120.0,
    interval: float = 0.01,
) -> None:
    """Return once ``condition()`` (sync or async) is true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {timeout:g} s for {what}")
        await asyncio.sleep(interval)

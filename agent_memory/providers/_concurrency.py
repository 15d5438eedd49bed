"""Running a provider's batched requests at once, failing as the first failure does."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["gather_or_raise_first"]

T = TypeVar("T")


async def gather_or_raise_first(operations: list[Coroutine[Any, Any, T]]) -> list[T]:
    """Run operations concurrently; on the first failure cancel the rest and raise it.

    Results come back in the order of ``operations``.
    """
    if len(operations) == 1:
        return [await operations[0]]
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(operation) for operation in operations]
    except BaseExceptionGroup as failures:
        # Raise the failure itself, not the group, so callers can catch the agent_memory
        # class; ``from`` keeps the SDK exception as its cause.
        first = failures.exceptions[0]
        raise first from first.__cause__
    return [task.result() for task in tasks]

"""Run a unit of work in a transaction, retrying the failures MongoDB says are transient.

MongoDB labels write conflicts between concurrent transactions ``TransientTransactionError``:
the whole transaction may be run again. A commit whose outcome is unknown
(``UnknownTransactionCommitResult``) may already have succeeded, so only the commit is
retried (MongoDB makes a retried commit idempotent); running the work again could apply it
twice. The embedded engine runs one transaction at a time and refuses a second instead of
waiting, which is retried like a transient error.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.mongo import _driver

__all__ = ["is_transient", "run_in_transaction"]

logger = get_logger(__name__)

T = TypeVar("T")

#: The embedded engine's refusal while another session's transaction is open (to start one:
#: "already has an active transaction bound to another session"; any other command: "has an
#: active transaction bound to another session").
_EMBEDDED_BUSY = "active transaction bound to another session"


def is_transient(exc: BaseException) -> bool:
    """Whether running the whole transaction again may succeed."""
    if isinstance(exc, pm.PyMongoError) and exc.has_error_label("TransientTransactionError"):
        return True
    return isinstance(exc, pm.OperationFailure) and _EMBEDDED_BUSY in str(exc)


async def _commit(session: Any, attempts: int) -> None:
    for attempt in range(1, attempts + 1):
        try:
            await session.commit_transaction()
            return
        except pm.PyMongoError as exc:
            if attempt == attempts or not exc.has_error_label("UnknownTransactionCommitResult"):
                raise


async def run_in_transaction(
    client: Any,
    work: Callable[[Any], Awaitable[T]],
    *,
    attempts: int = 8,
    base_delay: float = 0.01,
) -> T:
    """Call ``work(session)`` inside a transaction and commit; retry transient failures.

    ``work`` must be safe to run again from the start (it is, if all its writes use the
    session: an aborted transaction leaves nothing behind). Other exceptions abort and
    propagate at once.
    """
    for attempt in range(1, attempts + 1):
        session = await _driver.start_session(client)
        async with session:
            try:
                await _driver.start_transaction(session)
                result = await work(session)
                await _commit(session, attempts)
                return result
            except BaseException as exc:
                if session.in_transaction:
                    try:
                        await session.abort_transaction()
                    except pm.PyMongoError:
                        pass  # the server aborts it anyway when the session ends
                if attempt == attempts or not is_transient(exc):
                    raise
                delay = base_delay * (2 ** (attempt - 1)) * (1 + random.random())
                logger.debug("transaction_retried", attempt=attempt, wait_s=round(delay, 4))
                await asyncio.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover

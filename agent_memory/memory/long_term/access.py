"""Access statistics for retrieved memories, written in the background and coalesced.

Every retrieval counts an access to each memory it returned (``access_count``, and
``last_accessed`` for the recency score). Writing that per retrieval doubles the writes of a
read-heavy agent; instead the accesses are gathered in memory and one flush at a time writes
everything gathered so far: under load, many retrievals share one flush (per tenant, one
``update_many`` per distinct count and :data:`~agent_memory.mongo.batches.BOUND` memories).
Counts stay exact; ``last_accessed`` may be moved later by the length of one flush window (the
memories of a batch with the same count share the latest time), and everything arrives at
most one flush late.

A write that fails transiently (the server out of reach or busy) puts its accesses back with
those gathered meanwhile (counts add, the latest time wins) and the flush tries again after
each of :data:`~agent_memory.memory.background.RETRY_DELAYS`; a write the server refuses for
good, and what is still unwritten after the last attempt, is logged
(``background_write_failed``) and dropped. A retried write that had reached the server before
its failure may count those accesses twice. A process that dies, or is closed while a flush
waits to try again, loses the accesses not yet written, which only makes those memories look
slightly less used.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from agent_memory._log import get_logger
from agent_memory.memory.background import RETRY_DELAYS, BackgroundWrites, worth_retrying
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.batches import slices
from agent_memory.tenancy import Tenant

__all__ = ["AccessRecorder"]

logger = get_logger(__name__)

WHAT = "memory_access_statistics"

#: (agent_id, user_id) -> memory id -> [count, last access]
Accesses = dict[tuple[str, str], dict[str, list[Any]]]


class AccessRecorder:
    def __init__(self, collection: Any, background: BackgroundWrites) -> None:
        self._collection = collection
        self._background = background
        self._pending: Accesses = defaultdict(dict)
        self._flushing = False
        self.flushes = 0

    def record(self, tenant: Tenant, ids: Sequence[str], now: datetime) -> None:
        """Count one access to each of ``ids`` at ``now``; written by the next flush."""
        self._add((tenant.agent_id, tenant.user_id), ((memory_id, 1, now) for memory_id in ids))
        if not self._flushing:
            self._flushing = True
            self._background.schedule(self._flush(), WHAT)

    def _add(self, owner: tuple[str, str], accesses: Any) -> None:
        """Add ``(memory id, count, last access)`` to what is pending for ``owner``."""
        pending = self._pending[owner]
        for memory_id, count, last in accesses:
            entry = pending.get(memory_id)
            if entry is None:
                pending[memory_id] = [count, last]
            else:
                entry[0] += count
                entry[1] = max(entry[1], last)

    @property
    def pending(self) -> int:
        return sum(len(ids) for ids in self._pending.values())

    async def _flush(self) -> None:
        failures = 0
        try:
            while self._pending:
                await asyncio.sleep(0)  # let the retrievals of this moment join the flush
                batch, self._pending = self._pending, defaultdict(dict)
                self.flushes += 1
                unwritten, error = await self._write(batch)
                if error is None:
                    failures = 0
                    continue
                if failures < len(RETRY_DELAYS):
                    for owner, accesses in unwritten.items():
                        self._add(
                            owner, ((i, count, last) for i, (count, last) in accesses.items())
                        )
                    await asyncio.sleep(RETRY_DELAYS[failures])
                    failures += 1
                    continue
                self._lost(unwritten, error, attempts=failures + 1)
                failures = 0
        except asyncio.CancelledError:
            if self._pending:  # closed while waiting to try again
                logger.warning("background_write_cancelled", what=WHAT, memories=self.pending)
            raise
        finally:
            self._flushing = False

    async def _write(self, batch: Accesses) -> tuple[Accesses, Exception | None]:
        """Write ``batch``; what a transient failure left unwritten (to try again) and that
        failure. A write refused for good is logged and dropped here."""
        unwritten: Accesses = defaultdict(dict)
        error: Exception | None = None
        for (agent_id, user_id), accesses in batch.items():
            by_count: dict[int, list[str]] = defaultdict(list)
            latest: dict[int, datetime] = {}
            for memory_id, (count, last) in accesses.items():
                by_count[count].append(memory_id)
                latest[count] = max(latest.get(count, last), last)
            for count, ids in by_count.items():
                for part in slices(ids):
                    if error is None:
                        try:
                            with translate_errors("recording memory accesses"):
                                await self._collection.update_many(
                                    {
                                        "_id": {"$in": part},
                                        "agent_id": agent_id,
                                        "user_id": user_id,
                                    },
                                    {
                                        "$inc": {"access_count": count},
                                        "$max": {"last_accessed": latest[count]},
                                    },
                                )
                            continue
                        except Exception as exc:
                            if not worth_retrying(exc):
                                self._lost({(agent_id, user_id): dict.fromkeys(part)}, exc, 1)
                                continue
                            error = exc  # the server is out of reach: keep the rest for later
                    kept = unwritten[(agent_id, user_id)]
                    kept.update((memory_id, [count, latest[count]]) for memory_id in part)
        return unwritten, error

    def _lost(self, accesses: dict[Any, dict[str, Any]], error: Exception, attempts: int) -> None:
        logger.warning(
            "background_write_failed",
            what=WHAT,
            memories=sum(len(ids) for ids in accesses.values()),
            attempts=attempts,
            error=type(error).__name__,
            detail=str(error)[:200],
        )

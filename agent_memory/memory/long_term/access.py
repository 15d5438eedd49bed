"""Access statistics for retrieved memories, written in the background and coalesced.

Every retrieval counts an access to each memory it returned (``access_count``, and
``last_accessed`` for the recency score). Writing that per retrieval doubles the writes of a
read-heavy agent; instead the accesses are gathered in memory and one flush at a time writes
everything gathered so far: under load, many retrievals share one flush (per tenant, one
``update_many`` per distinct count and :data:`~agent_memory.mongo.batches.BOUND` memories).
Counts stay exact; ``last_accessed`` may be moved later
by the length of one flush window (the memories of a batch with the same count share the
latest time), and everything arrives at most one flush late. A process that dies loses the accesses not yet flushed, which only
makes those memories look slightly less used.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from agent_memory._log import get_logger
from agent_memory.memory.background import BackgroundWrites
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.batches import slices
from agent_memory.tenancy import Tenant

__all__ = ["AccessRecorder"]

logger = get_logger(__name__)


class AccessRecorder:
    def __init__(self, collection: Any, background: BackgroundWrites) -> None:
        self._collection = collection
        self._background = background
        # (agent_id, user_id) -> memory id -> [count, last access]
        self._pending: dict[tuple[str, str], dict[str, list[Any]]] = defaultdict(dict)
        self._flushing = False
        self.flushes = 0

    def record(self, tenant: Tenant, ids: Sequence[str], now: datetime) -> None:
        """Count one access to each of ``ids`` at ``now``; written by the next flush."""
        pending = self._pending[(tenant.agent_id, tenant.user_id)]
        for memory_id in ids:
            entry = pending.get(memory_id)
            if entry is None:
                pending[memory_id] = [1, now]
            else:
                entry[0] += 1
                entry[1] = max(entry[1], now)
        if not self._flushing:
            self._flushing = True
            self._background.schedule(self._flush(), "memory_access_statistics")

    @property
    def pending(self) -> int:
        return sum(len(ids) for ids in self._pending.values())

    async def _flush(self) -> None:
        try:
            while self._pending:
                await asyncio.sleep(0)  # let the retrievals of this moment join the flush
                batch, self._pending = self._pending, defaultdict(dict)
                self.flushes += 1
                for (agent_id, user_id), accesses in batch.items():
                    by_count: dict[int, list[str]] = defaultdict(list)
                    latest: dict[int, datetime] = {}
                    for memory_id, (count, last) in accesses.items():
                        by_count[count].append(memory_id)
                        latest[count] = max(latest.get(count, last), last)
                    for count, ids in by_count.items():
                        for part in slices(ids):
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
        finally:
            self._flushing = False

"""Small per-tenant reads kept in this process while the tenant's generation token stands.

An agent turn reads the user's profile and active task although they rarely change (a
profile when memory formation learns something, a task when the model plans); each read is
a command the server answers at every turn. :class:`KeptReads` keeps what a read returned
under the tenant's generation token for its collection (``search_generations``, as for the
kept search corpora, :mod:`agent_memory.mongo.search.snapshots`) and answers from memory
while the token is unchanged. The token is read through the connection's
:class:`~agent_memory.mongo.search.snapshots.TokenReads`, so the reads of one moment (a
turn's memories, knowledge, profile and task) go out as one ``find``.

The rules, as for the corpora:

- every writer calls :meth:`KeptReads.announce` after its write has landed, also when it
  failed half-way (a fresh random token; a reader then reads again);
- a reader reads the token *before* the value, so a write announced before a read started is
  always seen by it;
- a kept value is read again after ``max_age`` seconds whatever the token says: a bound on
  how late a write that was never announced (a crash between the write and its
  announcement, a program writing the collection directly) reaches this process.

What is kept is the raw documents; each hit hands out a deep copy, so a caller changing what
it got cannot change what the next caller gets.
"""

from __future__ import annotations

import copy
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

from agent_memory.mongo.search.snapshots import (
    GENERATIONS,
    announce_write,
    current_token,
    erase_token,
)

__all__ = ["DEFAULT_MAX_AGE_SECONDS", "DEFAULT_MAX_ENTRIES", "KeptReads"]

T = TypeVar("T")

#: Tenants whose values are kept, per :class:`KeptReads`; the least recently used go first.
DEFAULT_MAX_ENTRIES = 10_000
#: A kept value is read again after this long, even when no write was announced.
DEFAULT_MAX_AGE_SECONDS = 60.0


class KeptReads:
    """Reads of one collection's per-tenant values, kept while the tenant's token stands.

    >>> kept = KeptReads(connection, "profiles")  # doctest: +SKIP
    >>> doc = await kept.read(tenant.filter(), "User", lambda: profiles.find_one(query))
    >>> await profiles.update_one(query, change)  # doctest: +SKIP
    >>> await kept.announce(tenant.filter())  # every reader reads it again
    """

    def __init__(
        self,
        connection: Any,
        collection: str,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_age: float = DEFAULT_MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.collection = collection
        self._clock = clock
        self._generations = connection.collection(GENERATIONS)
        self._reads = connection.token_reads
        self._max_entries = max_entries
        self._max_age = max_age
        #: Per tenant (its fields, sorted), what was kept under which key: (token, when, value).
        self._kept: OrderedDict[tuple, dict[Hashable, tuple[str, float, Any]]] = OrderedDict()
        #: Reads answered from memory, and reads that went to the server (for tests and stats).
        self.hits = 0
        self.misses = 0

    async def read(
        self, tenant: dict[str, str], key: Hashable, load: Callable[[], Awaitable[T]]
    ) -> T:
        """What ``load()`` returns for ``key`` of ``tenant``: kept, or read now and kept."""
        token = await current_token(self._reads, self._generations, self.collection, tenant)
        owner = tuple(sorted(tenant.items()))
        values = self._kept.get(owner)
        found = None if values is None else values.get(key)
        now = self._clock()
        if found is not None and found[0] == token and now - found[1] <= self._max_age:
            self._kept.move_to_end(owner)
            self.hits += 1
            return copy.deepcopy(found[2])
        value = await load()
        self.misses += 1
        self._kept.setdefault(owner, {})[key] = (token, now, copy.deepcopy(value))
        self._kept.move_to_end(owner)
        while len(self._kept) > self._max_entries:
            self._kept.popitem(last=False)
        return value

    async def announce(self, tenant: dict[str, str]) -> None:
        """Record that ``tenant``'s values in the collection changed: every process reads
        them again (call it after the write, also when the write failed half-way)."""
        self.forget(tenant)
        await announce_write(self._generations, self.collection, tenant)

    async def erase(self, tenant: dict[str, str]) -> None:
        """After ``tenant``'s documents were erased: its token goes too."""
        self.forget(tenant)
        await erase_token(self._generations, self.collection, tenant)

    def forget(self, tenant: dict[str, str]) -> None:
        """Drop what this process kept of ``tenant``."""
        self._kept.pop(tuple(sorted(tenant.items())), None)

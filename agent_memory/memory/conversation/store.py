"""The database side of conversation memory.

Which sessions this process has seen belong to which tenant (so appends to them need one
round trip), claiming a session id (creating the session, refusing another tenant's id),
recording a turn's activity with a write that is not awaited, the one-aggregate reads, and the
retention batches. :class:`~agent_memory.memory.conversation.memory.ConversationMemory` is the API
on top; the filters and updates come from :mod:`~agent_memory.memory.conversation.queries`.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.errors import ConflictError, NotFoundError
from agent_memory.memory.background import BackgroundWrites
from agent_memory.memory.conversation import queries as q
from agent_memory.mongo import _driver
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.batches import delete_in, update_in
from agent_memory.mongo.connection import Connection
from agent_memory.tenancy import Tenant

__all__ = ["MESSAGES", "SESSIONS", "SessionStore", "not_found", "raced", "together"]

logger = get_logger(__name__)

SESSIONS = "sessions"
MESSAGES = "messages"
_KNOWN_SESSIONS = 10_000


async def together(*operations: Awaitable[Any]) -> list[Any]:
    """Independent commands concurrently (one round trip); all finish before an error rises."""
    results = await asyncio.gather(*operations, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def not_found(session_id: str) -> NotFoundError:
    # The same for an id that does not exist and one another tenant holds: nothing leaks.
    return NotFoundError(f"no session {session_id!r} for this agent and user")


def raced(session_id: str) -> ConflictError:
    # Session ids are per tenant, so this is never about another tenant: the session was
    # deleted (retention, forget) between this call's two commands.
    return ConflictError(f"the session {session_id!r} was removed while this call ran; try again")


class SessionStore:
    """The ``sessions`` and ``messages`` collections and what this process knows of them."""

    def __init__(self, connection: Connection) -> None:
        self.sessions = connection.collection(SESSIONS)
        self.messages = connection.collection(MESSAGES)
        self.names = (connection.collection_name(SESSIONS), connection.collection_name(MESSAGES))
        self.background = BackgroundWrites(connection)
        #: Whether reads join the messages to the session in the server (not on the
        #: embedded one: see :meth:`read`).
        self.joined = not connection.capabilities.mongoeco
        # Sessions seen to belong to their tenant (bounded, least recently used out first).
        self._known: OrderedDict[tuple[str, str, str], None] = OrderedDict()

    # --- sessions known to be a tenant's ----------------------------------------------------

    def knows(self, tenant: Tenant, session_id: str) -> bool:
        return (tenant.agent_id, tenant.user_id, session_id) in self._known

    def remember(self, tenant: Tenant, session_id: str) -> None:
        key = (tenant.agent_id, tenant.user_id, session_id)
        self._known[key] = None
        self._known.move_to_end(key)
        if len(self._known) > _KNOWN_SESSIONS:
            self._known.popitem(last=False)

    def forget(self, tenant: Tenant, session_id: str | None = None) -> None:
        for key in [k for k in self._known if k[:2] == (tenant.agent_id, tenant.user_id)]:
            if session_id is None or key[2] == session_id:
                del self._known[key]

    def counts(self, sessions: int, messages: int) -> dict[str, int]:
        """``{collection name: count}`` for results of deletes."""
        return {self.names[0]: sessions, self.names[1]: messages}

    # --- reads and writes -------------------------------------------------------------------

    async def read(
        self, tenant: Tenant, session_id: str, lookups: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The tenant's session with ``lookups`` of its messages (each under its ``as``
        name): one aggregate on a MongoDB server; on the embedded server the session, then
        the lookups' reads side by side, since its ``$lookup`` reads the whole messages
        collection in Python at every call (35% of its busy time under the soak)."""
        owned = q.owned(tenant, session_id)
        with translate_errors("reading a conversation"):
            if self.joined:
                rows = await _driver.aggregate(self.sessions, [{"$match": owned}, *lookups])
                row = rows[0] if rows else None
            else:
                row = await self.sessions.find_one(owned)
                if row is not None:
                    through = row.get("summary_through")
                    found = await together(
                        *(self._messages(q.standalone(lookup, through)) for lookup in lookups)
                    )
                    for lookup, messages in zip(lookups, found, strict=True):
                        row[lookup["$lookup"]["as"]] = messages
        if row is None:
            raise not_found(session_id)
        self.remember(tenant, session_id)
        return row

    async def _messages(self, pipeline: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """What ``pipeline`` returns from the messages: as a ``find`` when it is only matches,
        a sort and a limit (the embedded server answers a ``find`` for less than the same
        ``aggregate``: 3.4 against 4.1 ms of its time for a window of 20 messages)."""
        query: dict[str, Any] = {}
        sort: dict[str, int] | None = None
        limit = 0
        for stage in pipeline:
            (name, value), *more = stage.items()
            if more or not (
                (name == "$match" and sort is None and not limit and not query.keys() & value)
                or (name == "$sort" and sort is None and not limit)
                or (name == "$limit" and not limit)
            ):
                return await _driver.aggregate(self.messages, pipeline)
            if name == "$match":
                query.update(value)
            elif name == "$sort":
                sort = value
            else:
                limit = value
        # All in the first reply, as the aggregate's: a window is a few hundred messages.
        cursor = self.messages.find(query, batch_size=limit)
        if sort:
            cursor = cursor.sort(list(sort.items()))
        return await cursor.limit(limit).to_list(None)

    async def claim(self, tenant: Tenant, session_id: str, update: dict[str, Any]) -> bool:
        """Apply ``update`` to the tenant's session, creating it if missing; ``False`` when a
        concurrent create of the same session won and the session was removed right after."""
        owned = q.owned(tenant, session_id)
        try:
            await self.sessions.update_one(owned, update, upsert=True)
        except pm.DuplicateKeyError:
            # Or this tenant created it a moment ago, concurrently: then it matches now.
            again = {key: value for key, value in update.items() if key != "$setOnInsert"}
            return bool((await self.sessions.update_one(owned, again)).matched_count)
        return True

    def record_later(self, tenant: Tenant, session_id: str, documents: list[dict]) -> None:
        """Record an appended turn on the session with a write nobody waits for (tried
        again after a transient failure: the session's count and time are not lost)."""
        self.background.schedule_retried(
            lambda: self._record(tenant, session_id, documents), "conversation session activity"
        )

    async def _record(self, tenant: Tenant, session_id: str, documents: list[dict]) -> None:
        update = q.activity_update(len(documents), documents[-1]["created_at"])
        if await self.claim(tenant, session_id, update):
            return
        # Removed and created again meanwhile and removed once more: take the turn back out.
        ids = [document["_id"] for document in documents]
        await delete_in(self.messages, ids, lambda part: {**tenant.filter(), "_id": {"$in": part}})
        self.forget(tenant, session_id)
        logger.warning(
            "conversation_append_conflicted", agent_id=tenant.agent_id, session_id=session_id
        )

    async def retention_batches(
        self,
        *,
        stale: dict[str, Any],
        guard: dict[str, Any],
        archive: bool,
        now: datetime,
        size: int,
        before_batch: Callable[[], object] | None = None,
    ) -> dict[str, int]:
        """Archive or delete the ``stale`` sessions, ``size`` at a time, until none are left.

        ``guard`` is checked again in each write, so a session active again since the find
        is spared. ``before_batch`` is called before each batch; what it raises stops the
        loop there (the maintenance run checks its lease). Deleting removes a batch's messages before its sessions: an interrupted run
        leaves nothing unreachable, and the next run finishes it.
        """
        counts = {"archived": 0, "sessions_deleted": 0, "messages_deleted": 0, "batches": 0}
        fields = {"_id": 1, "agent_id": 1, "user_id": 1, "session_id": 1}
        with translate_errors("applying conversation retention"):
            while True:
                if before_batch is not None:
                    before_batch()
                cursor = self.sessions.find(stale, fields, batch_size=size)
                found = await cursor.sort("last_active_at", 1).limit(size).to_list(None)
                if not found:
                    break
                counts["batches"] += 1
                owners = q.owners(found)  # an $or of them, a bounded part at a time

                def match(part: list[dict[str, Any]]) -> dict[str, Any]:
                    return {"$or": part, **guard}

                if archive:
                    archived = {"$set": {"status": "archived", "archived_at": now}}
                    result = await update_in(self.sessions, owners, match, archived)
                    progress = result.modified_count
                    counts["archived"] += progress
                else:
                    gone = await delete_in(
                        self.messages, q.session_scopes(found), lambda part: {"$or": part}
                    )
                    progress = await delete_in(self.sessions, owners, match)
                    counts["messages_deleted"] += gone
                    counts["sessions_deleted"] += progress
                    for s in found:
                        self._known.pop((s["agent_id"], s["user_id"], s["session_id"]), None)
                if len(found) < size or not progress:
                    break
        return counts

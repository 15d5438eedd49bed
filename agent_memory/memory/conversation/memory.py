"""Conversation (short-term) memory: sessions, their messages, a sliding window and a summary.

Example::

    memory = ConversationMemory(connection, chat_model=chat)
    tenant = Tenant("support-agent", "user-456")
    await memory.start_session(tenant, "session-1", metadata={"context": "support"})
    await memory.append_turn(
        tenant, "session-1", [NewMessage.user("Hi, I'm Ana"), NewMessage.assistant("Hello Ana!")]
    )
    print((await memory.context(tenant, "session-1")).render())
    # User: Hi, I'm Ana
    # Assistant: Hello Ana!

Sessions and messages live in two collections (``sessions``, ``messages``): no growing arrays.
Messages are ordered by ``seq``, a string key strictly increasing within a process even inside
one millisecond (see :class:`~agent_memory.memory.conversation.records.TurnClock`); concurrent
appends to one session all land, each turn's messages contiguous, turns ordered by clock.

Tenancy: every query filters on ``agent_id``, ``user_id`` and the session id, and a session
is keyed by all three (a unique index): the id is the caller's string, unique per tenant only.
Two tenants using the same id each have a session of their own, and every call answers the
same whether or not another tenant has the id: nothing tells one tenant that another exists,
and no tenant can take an id first to lock its future owner out. Reading, clearing or deleting
a session the tenant does not have is :class:`NotFoundError`.

``append_turn`` awaits one ``insert`` when this object already knows the session belongs to
the tenant (it started, read or wrote it before: an in-process cache). The session's activity
(``last_active_at``, ``message_count``, un-archiving) is then updated by a write that is not
awaited (an upsert: a session removed meanwhile is created again). A session not yet known is
claimed first (the same upsert), then the messages are inserted: two round trips. The session
also keeps its last 256 turns' times and sizes (``recent_turns``): on the embedded server a
read of the newest messages matches only the messages from the newest turns that hold them
(:func:`~agent_memory.memory.conversation.queries.newest_floor`), not the whole session, whose
engine sorts every message a query matches (a session of 10,000 messages costs its context
read what one of 1,000 does).

Round trips (sequential commands the caller waits for; chat calls separate):

=========================  ================================================  ==========
operation                  commands                                          sequential
=========================  ================================================  ==========
start_session              1 findAndModify upsert                            1
get_session                1 find                                            1
list_sessions              1 find (limit <= 1000: one batch)                 1
append_turn, known         1 insert (+ 1 update not awaited)                 1
append_turn, first         1 update upsert, then 1 insert                    2
window                     1 aggregate (session + messages via $lookup)      1
context                    1 aggregate (session, window, unsummarised count) 1
refresh_summary            1 aggregate; when a summary is due: 1 chat call,  1 or 2
                           then 1 guarded update
clear_session              1 update + 1 delete, concurrently                 1
delete_session             1 delete + 1 delete, concurrently                 1
forget_user                1 delete + 1 delete, concurrently                 1
apply_retention            per batch: find + update (archive) or find +      2 or 3
                           delete messages + delete sessions (delete)        per batch
=========================  ================================================  ==========
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from pymongo import ReturnDocument
from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory._tokens import estimate_tokens
from agent_memory.checks import (
    check_count,
    check_document_size,
    check_event_time,
    check_id,
    check_int,
)
from agent_memory.errors import BadResponseError, ConfigurationError, InvalidInputError
from agent_memory.memory.conversation import queries as q
from agent_memory.memory.conversation.records import (
    TURN_CLOCK,
    ConversationConfig,
    ConversationMessage,
    NewMessage,
    Session,
    SummaryResult,
    build_message_documents,
    check_metadata,
    check_tenant,
)
from agent_memory.memory.conversation.render import (
    ConversationContext,
    fit_summary,
    fit_window,
    line_cost,
    merge_extractive,
    overflow,
    render_context,
    summary_cost,
    summary_request,
    truncate_to_tokens,
)
from agent_memory.memory.conversation.store import SessionStore, not_found, raced, together
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.connection import Connection
from agent_memory.providers.chat.base import ChatModel
from agent_memory.stamps import new_id, utcnow
from agent_memory.tenancy import Tenant

__all__ = [
    "ConversationConfig",
    "ConversationContext",
    "ConversationMemory",
    "ConversationMessage",
    "NewMessage",
    "Session",
    "SummaryResult",
]

logger = get_logger(__name__)

#: The most messages, sessions or window entries one call reads, and the largest retention batch.
_MOST = 1000


class ConversationMemory:
    """Short-term memory of an agent's conversations, per agent and user.

    ``chat_model`` writes the running summary (:meth:`refresh_summary`); without one the
    window still works. The connection stays the caller's; call :meth:`aclose` (or
    :meth:`drain`) before closing it, so writes that were not awaited finish.

    Example::

        memory = ConversationMemory(connection, chat_model=FakeChatModel(default="Ana, Lisbon"))
        tenant = Tenant("agent", "user")
        session = await memory.start_session(tenant)  # a new id; long-term memory untouched
        await memory.append_turn(tenant, session.session_id, [NewMessage.user("hello")])
        ctx = await memory.context(tenant, session.session_id, max_tokens=1500)
        prompt_part = ctx.render()  # "Summary of earlier conversation: ...\n\nUser: hello"
        if ctx.needs_summary:  # later, off the reply's critical path
            await memory.refresh_summary(tenant, session.session_id)
        await memory.aclose()
    """

    def __init__(
        self,
        connection: Connection,
        *,
        chat_model: ChatModel | None = None,
        config: ConversationConfig | None = None,
    ) -> None:
        self.connection = connection
        self.chat_model = chat_model
        self.config = config or ConversationConfig()
        self._store = SessionStore(connection)
        self.sessions, self.messages = self._store.sessions, self._store.messages
        self._clock = TURN_CLOCK

    # --- sessions ---------------------------------------------------------------------------

    async def start_session(
        self,
        tenant: Tenant,
        session_id: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
    ) -> Session:
        """Create a session with an empty short-term memory (long-term memory is untouched).

        Idempotent: an existing session of this tenant is returned unchanged (``metadata`` is
        then ignored). Without ``session_id`` a unique one is made. Ids are per tenant: another
        tenant's session with the same id is neither seen nor touched.
        """
        tenant = check_tenant(tenant)
        session_id = new_id("ses") if session_id is None else check_id(session_id, "session_id")
        now = utcnow()
        owned = q.owned(tenant, session_id)
        fields = q.new_session_fields(check_metadata(metadata), now)
        check_document_size({**owned, **fields}, "the session")
        with translate_errors("starting a session"):
            try:
                document = await self.sessions.find_one_and_update(
                    owned,
                    {"$setOnInsert": fields},
                    upsert=True,
                    return_document=ReturnDocument.AFTER,
                )
            except pm.DuplicateKeyError:
                document = await self.sessions.find_one(owned)  # a concurrent start of ours
                if document is None:
                    raise raced(session_id) from None
        self._store.remember(tenant, session_id)
        session = Session.from_document(document)
        logger.info(
            "conversation_session_started",
            agent_id=tenant.agent_id,
            session_id=session_id,
            created=session.created_at == now,
        )
        return session

    async def get_session(self, tenant: Tenant, session_id: str) -> Session:
        tenant = check_tenant(tenant)
        session_id = check_id(session_id, "session_id")
        with translate_errors("reading a session"):
            document = await self.sessions.find_one(q.owned(tenant, session_id))
        if document is None:
            raise not_found(session_id)
        self._store.remember(tenant, session_id)
        return Session.from_document(document)

    async def list_sessions(
        self, tenant: Tenant, *, include_archived: bool = False, limit: int = 50
    ) -> list[Session]:
        """The tenant's sessions, most recently active first."""
        tenant = check_tenant(tenant)
        limit = check_count(limit, "limit", maximum=_MOST)
        statuses = ["active", "archived"] if include_archived else ["active"]
        query = {**tenant.filter(), "status": {"$in": statuses}}
        with translate_errors("listing sessions"):
            cursor = self.sessions.find(query, batch_size=limit)
            cursor = cursor.sort([("last_active_at", -1), ("_id", -1)]).limit(limit)
            documents = await cursor.to_list(None)
        logger.debug("conversation_sessions_listed", agent_id=tenant.agent_id, count=len(documents))
        return [Session.from_document(document) for document in documents]

    # --- messages ---------------------------------------------------------------------------

    async def append_turn(
        self,
        tenant: Tenant,
        session_id: str,
        messages: Sequence[NewMessage | dict[str, Any]],
        *,
        occurred_at: datetime | None = None,
    ) -> list[ConversationMessage]:
        """Append one turn's messages (user, assistant, tool...) in order, all or none.

        Everything is validated before anything is written. A session that does not exist
        yet is created (the module notes say what that costs). ``occurred_at``: when the turn
        was said, if not now (a history imported in order); memories formed from it are
        dated by it. Turns are ordered as they are appended, whatever their event times.
        """
        tenant = check_tenant(tenant)
        session_id = check_id(session_id, "session_id")
        if occurred_at is not None:
            occurred_at = check_event_time(occurred_at, "occurred_at")
        documents = build_message_documents(
            tenant, session_id, messages, self.config, self._clock, occurred_at
        )
        known = self._store.knows(tenant, session_id)
        with translate_errors("appending a turn"):
            if not known:
                update = q.activity_update(len(documents), documents[-1]["created_at"])
                if not await self._store.claim(tenant, session_id, update):
                    raise raced(session_id)
            await self.messages.insert_many(documents, ordered=True)
        if known:
            self._store.record_later(tenant, session_id, documents)
        self._store.remember(tenant, session_id)
        logger.info(
            "conversation_turn_appended",
            agent_id=tenant.agent_id,
            session_id=session_id,
            messages=len(documents),
            tokens=sum(document["tokens"] for document in documents),
            claimed=not known,
        )
        return [ConversationMessage.from_document(document) for document in documents]

    async def window(
        self,
        tenant: Tenant,
        session_id: str,
        *,
        last_n: int | None = None,
        max_tokens: int | None = None,
    ) -> list[ConversationMessage]:
        """The newest messages in chronological order: at most ``last_n`` (default
        ``window_messages``) whose rendered lines fit ``max_tokens`` (default
        ``window_tokens``). The window is contiguous; when the newest message alone exceeds
        the budget it is a truncated view of that message (``truncated=True``)."""
        tenant = check_tenant(tenant)
        session_id = check_id(session_id, "session_id")
        last_n = check_count(
            self.config.window_messages if last_n is None else last_n, "last_n", maximum=_MOST
        )
        budget = check_int(
            self.config.window_tokens if max_tokens is None else max_tokens, "max_tokens", minimum=1
        )
        lookup = q.newest_lookup(self._store.names[1], tenant, session_id, last_n, into="w")
        row = await self._read(tenant, session_id, [lookup])
        window = fit_window([ConversationMessage.from_document(d) for d in row["w"]], budget)
        logger.debug(
            "conversation_window_read",
            agent_id=tenant.agent_id,
            session_id=session_id,
            messages=len(window),
            fetched=len(row["w"]),
        )
        return window

    async def messages_after(
        self, tenant: Tenant, session_id: str, after: str | None, *, limit: int = 200
    ) -> list[ConversationMessage]:
        """The session's oldest ``limit`` messages after the one whose ``seq`` is ``after``
        (from the start when ``None``), in chronological order: a reader that works through
        a session in pieces (memory formation's cursor) without skipping any.

        Round trips: 1. A deleted or unknown session has no messages.
        """
        tenant = check_tenant(tenant)
        session_id = check_id(session_id, "session_id")
        limit = check_count(limit, "limit", maximum=_MOST)
        if after is not None and not isinstance(after, str):
            raise InvalidInputError("after must be a message seq (str) or None")
        if after is not None:
            after = check_id(after, "after")
        query: dict[str, Any] = q.scope(tenant, session_id)
        if after is not None:
            query["seq"] = {"$gt": after}
        with translate_errors("reading a session's messages"):
            docs = await self.messages.find(query).sort("seq", 1).limit(limit).to_list(limit)
        return [ConversationMessage.from_document(doc) for doc in docs]

    async def context(
        self,
        tenant: Tenant,
        session_id: str,
        *,
        last_n: int | None = None,
        max_tokens: int | None = None,
    ) -> ConversationContext:
        """The summary and the window, in one round trip.

        With ``max_tokens`` the whole :meth:`~ConversationContext.render` fits it: the summary
        first (cut if it alone is too long), the window in what is left. Without it the
        window gets ``window_tokens`` and the summary comes as stored.
        """
        tenant = check_tenant(tenant)
        session_id = check_id(session_id, "session_id")
        last_n = check_count(
            self.config.window_messages if last_n is None else last_n, "last_n", maximum=_MOST
        )
        total = None if max_tokens is None else check_int(max_tokens, "max_tokens", minimum=1)
        # Counting what the summary does not cover stops at a cap: "at least" is enough.
        cap = last_n + self.config.summary_batch_messages
        name = self._store.names[1]
        if self._store.joined:
            count = [{"$limit": cap}, {"$count": "n"}]
            row = await self._read(
                tenant,
                session_id,
                [
                    q.newest_lookup(name, tenant, session_id, last_n, into="w"),
                    q.after_summary_lookup(name, tenant, session_id, count, into="u"),
                ],
            )
        else:
            # Each command costs the embedded server more than a few more documents do: the
            # newest ``cap`` messages hold the window and every uncovered one up to the cap.
            lookup = q.newest_lookup(name, tenant, session_id, cap, into="w")
            row = await self._read(tenant, session_id, [lookup])
            through = row.get("summary_through")
            uncovered = sum(1 for d in row["w"] if through is None or d["seq"] > through)
            row["u"], row["w"] = ([{"n": uncovered}] if uncovered else []), row["w"][:last_n]
        session = Session.from_document(row)
        summary, budget = session.summary, self.config.window_tokens
        if total is not None:
            summary = fit_summary(summary, total)
            budget = total - summary_cost(summary)
        newest = [ConversationMessage.from_document(d) for d in row["w"]]
        window = fit_window(newest, budget) if budget > 0 else []
        through = session.summary_through
        shown = sum(1 for m in window if through is None or m.seq > through)
        omitted = max(0, (row["u"][0]["n"] if row["u"] else 0) - shown)
        tokens = estimate_tokens(render_context(summary, window))
        logger.debug(
            "conversation_context_read",
            agent_id=tenant.agent_id,
            session_id=session_id,
            messages=len(window),
            tokens=tokens,
            omitted=omitted,
        )
        return ConversationContext(
            session=session,
            summary=summary,
            messages=tuple(window),
            tokens=tokens,
            omitted=omitted,
            needs_summary=omitted >= self.config.summary_trigger,
        )

    async def _read(
        self, tenant: Tenant, session_id: str, lookups: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The tenant's session with ``lookups`` of its messages, as the store reads them; on
        the embedded server each newest-first lookup matches only the messages from the
        session's recent turns on (:func:`~.queries.newest_floor`): its engine sorts every
        message a query matches before it takes the newest, so reading the last 200 of
        10,000 cost as much as reading them all (57 ms against 14 ms at 1,000)."""
        if self._store.joined:  # MongoDB walks the (tenant, session, seq) index backwards
            return await self._store.read(tenant, session_id, lookups)
        with translate_errors("reading a conversation"):
            row = await self.sessions.find_one(q.owned(tenant, session_id))
            if row is None:
                raise not_found(session_id)
            through, recent = row.get("summary_through"), row.get("recent_turns")
            found = await together(
                *(
                    self._store._messages(q.standalone(lookup, through, recent))
                    for lookup in lookups
                )
            )
        for lookup, messages in zip(lookups, found, strict=True):
            row[lookup["$lookup"]["as"]] = messages
        self._store.remember(tenant, session_id)
        return row

    # --- summary ----------------------------------------------------------------------------

    async def refresh_summary(
        self, tenant: Tenant, session_id: str, *, force: bool = False
    ) -> SummaryResult:
        """Fold the messages that fell out of the configured window into the running summary.

        Cheap when there is nothing to do: one read and no chat call while fewer than
        ``summary_trigger`` unsummarised messages are outside the window (with ``force``:
        while there are none). The summary is stored only if no other refresh (or clear)
        changed it since it was read; the loser returns ``reason="lost_race"``. Meant to run
        after the reply, off the user's critical path.
        """
        tenant = check_tenant(tenant)
        session_id = check_id(session_id, "session_id")
        if self.chat_model is None:
            raise ConfigurationError(
                "refresh_summary needs a chat model: ConversationMemory(connection, chat_model=...)"
            )
        config, name = self.config, self._store.names[1]
        oldest = [{"$sort": {"seq": 1}}, {"$limit": config.summary_batch_messages}]
        row = await self._read(
            tenant,
            session_id,
            [
                q.newest_lookup(name, tenant, session_id, config.window_messages, into="w"),
                q.after_summary_lookup(name, tenant, session_id, oldest, into="a"),
            ],
        )
        session = Session.from_document(row)
        out = overflow(
            [ConversationMessage.from_document(d) for d in row["w"]],
            [ConversationMessage.from_document(d) for d in row["a"]],
            window_tokens=config.window_tokens,
        )
        if not out or (len(out) < config.summary_trigger and not force):
            reason = "below_trigger" if out else "nothing_new"
            logger.debug(
                "conversation_summary_skipped",
                agent_id=tenant.agent_id,
                session_id=session_id,
                reason=reason,
                overflow=len(out),
            )
            return SummaryResult(False, reason, 0, session.summary_through)
        folded, used = [], 0
        for message in out:
            used += line_cost(message)
            if folded and used > config.summary_input_tokens:
                break  # the rest waits for the next refresh
            folded.append(message)
        text = await self._summarise(session.summary, folded)
        now = utcnow()
        guard = q.summary_guard(
            tenant, session_id, session.summary_through, session.summary_version
        )
        with translate_errors("storing a conversation summary"):
            result = await self.sessions.update_one(
                guard, q.summary_update(text, folded[-1].seq, now)
            )
        won = bool(result.matched_count)
        logger.info(
            "conversation_summary_refreshed" if won else "conversation_summary_lost_race",
            agent_id=tenant.agent_id,
            session_id=session_id,
            folded=len(folded),
            summary_tokens=estimate_tokens(text),
        )
        if not won:
            return SummaryResult(False, "lost_race", 0, session.summary_through)
        return SummaryResult(True, "refreshed", len(folded), folded[-1].seq)

    async def _summarise(self, previous: str, messages: list[ConversationMessage]) -> str:
        assert self.chat_model is not None
        limit = self.config.summary_max_tokens
        offline = self.chat_model.offline
        # An extractive model would quote the instruction and the old summary back as if they
        # were new; it sees only the new messages, and its quotes are added to the old summary.
        request = summary_request(
            "" if offline else previous, messages, max_tokens=limit, instruct=not offline
        )
        response = await self.chat_model.generate(request)
        text = response.text.strip()
        if offline:
            # A reply that found nothing to quote is a stand-in: it adds nothing to the summary.
            text = merge_extractive(
                previous, "" if response.found_nothing else text, max_tokens=limit
            )
        elif not text:
            raise BadResponseError(
                "the chat model returned an empty summary", provider=self.chat_model.provider
            )
        # A model that overshoots the requested length must not grow the session document.
        if estimate_tokens(text) > 2 * limit:
            text = truncate_to_tokens(text, 2 * limit) or ""
        return text

    # --- clearing, deleting, retention ------------------------------------------------------

    async def clear_session(self, tenant: Tenant, session_id: str) -> int:
        """Delete the session's messages and reset its summary (seed 000's "clear short-term
        memory"); the session stays. Returns how many messages were deleted."""
        tenant = check_tenant(tenant)
        session_id = check_id(session_id, "session_id")
        with translate_errors("clearing a session"):
            updated, deleted = await together(
                self.sessions.update_one(q.owned(tenant, session_id), q.clear_update(utcnow())),
                self.messages.delete_many(q.scope(tenant, session_id)),
            )
        if not updated.matched_count:
            raise not_found(session_id)
        logger.info(
            "conversation_session_cleared",
            agent_id=tenant.agent_id,
            session_id=session_id,
            messages=deleted.deleted_count,
        )
        return deleted.deleted_count

    async def delete_session(self, tenant: Tenant, session_id: str) -> dict[str, int]:
        """Delete the session and its messages; returns ``{collection: deleted}``."""
        tenant = check_tenant(tenant)
        session_id = check_id(session_id, "session_id")
        with translate_errors("deleting a session"):
            sessions, messages = await together(
                self.sessions.delete_one(q.owned(tenant, session_id)),
                self.messages.delete_many(q.scope(tenant, session_id)),
            )
        self._store.forget(tenant, session_id)
        if not sessions.deleted_count and not messages.deleted_count:
            raise not_found(session_id)
        logger.info(
            "conversation_session_deleted",
            agent_id=tenant.agent_id,
            session_id=session_id,
            messages=messages.deleted_count,
        )
        return self._store.counts(sessions.deleted_count, messages.deleted_count)

    async def apply_retention(
        self,
        *,
        agent_id: str | None = None,
        now: datetime | None = None,
        batch_size: int | None = None,
        before_batch: Callable[[], object] | None = None,
    ) -> dict[str, int]:
        """Archive or delete (``config.retention_mode``) sessions inactive for more than
        ``retention_days``, over all tenants or one agent, ``batch_size`` at a time; returns
        the counts. Archiving keeps the messages. Idempotent: a second run finds nothing.
        ``before_batch()`` runs before each batch; an exception from it stops the work there.
        """
        config = self.config
        now = utcnow() if now is None else now
        if not isinstance(now, datetime) or now.tzinfo is None:
            raise InvalidInputError("now must be a timezone-aware datetime")
        size = check_count(
            config.retention_batch if batch_size is None else batch_size, "batch", maximum=_MOST
        )
        agent = None if agent_id is None else check_id(agent_id, "agent_id")
        archive = config.retention_mode == "archive"
        cutoff = now - timedelta(days=config.retention_days)
        counts = await self._store.retention_batches(
            stale=q.stale_sessions(archive=archive, cutoff=cutoff, agent_id=agent),
            guard=q.stale_sessions(archive=archive, cutoff=cutoff, agent_id=None),
            archive=archive,
            now=now,
            size=size,
            before_batch=before_batch,
        )
        logger.info(
            "conversation_retention_applied",
            agent_id=agent,
            mode=config.retention_mode,
            **counts,
        )
        return counts

    async def forget_user(self, tenant: Tenant) -> dict[str, int]:
        """Delete every session and message of this agent's user: ``{collection: deleted}``."""
        tenant = check_tenant(tenant)
        with translate_errors("forgetting a user's conversations"):
            sessions, messages = await together(
                self.sessions.delete_many(tenant.filter()),
                self.messages.delete_many(tenant.filter()),
            )
        self._store.forget(tenant)
        logger.info(
            "conversation_user_forgotten",
            agent_id=tenant.agent_id,
            sessions=sessions.deleted_count,
            messages=messages.deleted_count,
        )
        return self._store.counts(sessions.deleted_count, messages.deleted_count)

    async def drain(self) -> None:
        """Wait for writes that were not awaited (session activity after appends)."""
        await self._store.background.drain()

    async def aclose(self) -> None:
        await self.drain()

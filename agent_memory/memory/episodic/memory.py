"""Episodic memory: what the agent did, how it went, and what users thought of it.

Every action is a document in ``action_logs`` with its outcome, timings, tokens, the ids of
the memories that were in that turn's prompt (the manifest) and an embedding of the text it is
found by. Ratings land on the action and are credited to the manifest's memories
(:mod:`~agent_memory.memory.episodic.feedback`), so they change future ranking. Logs older
than ``retention_days`` are summarised per agent, action type and day, then deleted
(:mod:`~agent_memory.memory.episodic.retention`).

Round trips (what the caller waits for; ``[a | b]`` run concurrently and count once).
Provider calls are separate: ``log_action`` embeds ``content`` once unless ``embedding`` is
given, ``similar_actions`` embeds ``query`` once unless ``query_vector`` is given; nothing
else calls a provider. "update search generation" is one command when this process keeps the
tenant's logs, otherwise the token swapped and, after a token before, the write logged
(two; ``mongo/search/snapshots.py``). Writes to the hourly counts of success rates
(:mod:`.hours`) go beside the write they count; their release afterwards is not awaited
("+1 later").

=================================  =========================================================  ===
operation                          commands                                                   RTs
=================================  =========================================================  ===
log_action                         [update the hour | insert], update search generation       2
                                   (+1 later)
get_action                         find                                                       1
list_actions                       find (embedded server: one per span of time tried,         1
                                   until one holds ``limit`` logs; at most 5)
add_feedback (transactions)        find the action's hour; [update the hour | find, update    6
                                   action, update memories, commitTransaction, update search
                                   generation (announces the new ranking)] (+1 later)
add_feedback (no transactions)     find the hour; [update the hour | find, update action      6
                                   (+ pending), update memories, update search generation,
                                   update action (clear pending)] (+1 later)
  ... no memories to credit        find the hour; [update the hour | find, update action      3-4
                                   (+ commitTransaction)] (+1 later)
  ... replayed idempotency key     find the hour; [update the hour | find] (+1 later)         2
  ... a crashed credit pending     +3 first: update memories, update search generation,      +3
                                   update action
similar_actions (plain tier)       the tenant's search token (read with the other searches    2
                                   of the moment); when another writer changed the tenant,
                                   its logs first (then kept in memory); the winners whole
similar_actions (Atlas tier)       aggregate ($rankFusion), or [$vectorSearch | $search];     2
                                   the winners whole
success_rates (within retention)   find the agent's kept hours; [aggregate the hours not      2-3
                                   kept, one per day | aggregate the window's two ends];
                                   update keeping the new counts (when some were counted)
success_rates (longer windows)     [aggregate live logs | find summaries]                     1
forget_user                        delete, delete the search token, update the agent's        3
                                   hours (when something was deleted)
repair_pending_credits             distinct agents (unless given); per agent find; per        ..
                                   pending action update memories, update action
apply_retention                    distinct agents (unless given); per agent distinct         ..
                                   claimed batches; per batch find + update (claim), find,
                                   one upsert per action type and day, delete; one find
                                   per agent that ends it; delete the hours before the cutoff
=================================  =========================================================  ===

Searches on the plain tier keep each tenant's logs in memory between searches (every writer
here announces its writes: ``mongo/search/snapshots.py``), without the payloads, feedback and
metadata, which no search reads: the winners are read again whole, so what they show of
ratings is always current.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from agent_memory._log import get_logger
from agent_memory.checks import (
    check_document_size,
    check_id,
    check_ids,
    check_int,
    check_mapping,
    check_text,
    check_vector,
)
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.memory.episodic.feedback import Feedback, FeedbackLedger, FeedbackRequest
from agent_memory.memory.episodic.hours import HOURS, HourTallies, hour_of
from agent_memory.memory.episodic.records import (
    Action,
    EpisodicConfig,
    SimilarAction,
    bounded_payload,
    check_memory_ids,
    check_now,
    check_outcome,
    check_rating,
    check_tally,
    check_tenant,
    day_start,
    render_content,
)
from agent_memory.memory.episodic.retention import (
    ActionRetention,
    RetentionReport,
    SuccessRates,
    Tally,
)
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.search import MAX_CANDIDATES, SearchQuery, make_searcher
from agent_memory.mongo.search.snapshots import GENERATIONS, Change, announce, erase_tenant
from agent_memory.mongo.vectors import to_bson_vector
from agent_memory.stamps import new_id, utcnow

if TYPE_CHECKING:
    from agent_memory.mongo.connection import Connection
    from agent_memory.providers.embedders.base import Embedder
    from agent_memory.tenancy import Tenant

__all__ = [
    "Action",
    "EpisodicConfig",
    "EpisodicMemory",
    "Feedback",
    "RetentionReport",
    "SimilarAction",
    "SuccessRates",
]

logger = get_logger(__name__)

LOGS = "action_logs"
AGGREGATES = "action_aggregates"
MEMORIES = "memories"
#: How far in the future a caller-supplied timestamp may be (clock skew between hosts).
_FUTURE_SKEW = timedelta(minutes=5)
#: Fields of a log that no search filters on or ranks by: not kept by the plain tier.
_UNSEARCHED = ("action", "feedback", "metadata", "memory_ids", "retention_batch")
#: Candidates a search returns beyond those asked for, in case some were deleted since the
#: tenant's logs were kept (retention deletes old logs without announcing each tenant).
_SPARE = 5
#: The spans, back from now, that lists of the newest actions try in turn on the embedded
#: engine before they read without a bound (see ``EpisodicMemory._newest``).
_SPANS = (timedelta(hours=1), timedelta(hours=12), timedelta(days=3), timedelta(days=15))


class EpisodicMemory:
    """Action logs with outcomes and feedback, similar past actions, success rates, retention.

    Uses the caller's :class:`~agent_memory.mongo.connection.Connection` and never opens one.

    >>> from agent_memory.tenancy import Tenant
    >>> async def turn(connection, embedder):                     # doctest: +SKIP
    ...     episodic = EpisodicMemory(connection, embedder)
    ...     tenant = Tenant("support-agent", "user-42")
    ...     action_id = await episodic.log_action(
    ...         tenant, session_id="s1", action_type="query_response", outcome="success",
    ...         content="how do I reset my password?", memory_ids=["mem_1", "mem_2"],
    ...     )
    ...     await episodic.add_feedback(tenant, action_id, rating=5)   # credits mem_1, mem_2
    ...     similar = await episodic.similar_actions(tenant, query="forgot my password")
    ...     rates = await episodic.success_rates("support-agent", "query_response")
    """

    def __init__(
        self,
        connection: Connection,
        embedder: Embedder,
        *,
        config: EpisodicConfig | None = None,
    ) -> None:
        self._connection = connection
        self._embedder = embedder
        self.config = config or EpisodicConfig()
        self._logs = connection.collection(LOGS)
        # Every write that adds or removes a log, or changes what a search filters on, goes
        # through this class and is announced, so the plain tier keeps each tenant's logs in
        # memory between searches instead of reading them all at every search. What a search
        # neither filters on nor ranks by (the payloads, feedback, metadata) is left out of
        # what it keeps; the winners are read again whole (``similar_actions``).
        self._target = connection.index_catalog(
            dimensions=embedder.dimensions, similarity=embedder.similarity
        ).target(LOGS, snapshot=True, omit=_UNSEARCHED)
        self._searcher = make_searcher(
            connection, dimensions=embedder.dimensions, similarity=embedder.similarity
        )
        self._snapshots = getattr(self._searcher, "snapshots", None)
        self._generations = connection.collection(GENERATIONS)
        self._feedback = FeedbackLedger(
            self._logs, connection.collection(MEMORIES), connection, self.config
        )
        self._retention = ActionRetention(
            self._logs, connection.collection(AGGREGATES), self.config
        )
        self._hour_counts = connection.collection(HOURS)
        self._hours = HourTallies(self._logs, self._hour_counts, connection)
        #: The embedded engine sorts every match of a query before it takes the first: lists
        #: of the newest actions ask for recent hours first (:meth:`_newest`).
        self._sorts_every_match = connection.capabilities.mongoeco

    # --- logging ----------------------------------------------------------------------------

    async def log_action(
        self,
        tenant: Tenant,
        *,
        session_id: str,
        action_type: str,
        outcome: str,
        tool: str | None = None,
        input: Any = None,
        output: Any = None,
        duration_ms: float | None = None,
        tokens: int | None = None,
        model: str | None = None,
        task_id: str | None = None,
        memory_ids: Sequence[str] = (),
        content: str | None = None,
        embedding: Any = None,
        embed: bool = True,
        metadata: Mapping[str, Any] | None = None,
        timestamp: Any = None,
    ) -> str:
        """Log one action; returns its id (``act_...``).

        ``memory_ids`` is the prompt manifest: the memories that were in the prompt, credited
        when the action is rated. ``content`` is the text the action is found by (the user's
        query, typically); it defaults to the action type, tool and input as words. Pass the
        query's ``embedding`` when you already have it and no provider is called; otherwise
        ``content`` is embedded once, unless ``embed`` is false: then the action is stored
        without an embedding (found by keyword only), so a turn whose embedder is down can
        still be recorded as a failure. ``input`` and ``output`` longer than
        ``config.max_payload_chars`` are stored cut with a visible marker and
        ``action.truncated: true``. ``timestamp`` back-dates a log (at most
        ``retention_days - 1`` days, so it never lands in a day already summarised).

        Everything is checked before anything is written: a bad value raises
        :class:`~agent_memory.errors.InvalidInputError` and nothing is stored.
        """
        tenant = check_tenant(tenant)
        config = self.config
        if not isinstance(embed, bool):
            raise InvalidInputError(f"embed must be a bool, got {type(embed).__name__}")
        session_id = check_id(session_id, "session_id")
        action_type = check_id(action_type, "action_type")
        outcome = check_outcome(outcome)
        tool = None if tool is None else check_id(tool, "tool")
        model = None if model is None else check_id(model, "model")
        task_id = None if task_id is None else check_id(task_id, "task_id")
        if duration_ms is not None:
            duration_ms = check_tally(duration_ms, "duration_ms", integer=False)
        if tokens is not None:
            tokens = int(check_tally(tokens, "tokens", integer=True))
        ids = check_memory_ids(memory_ids, limit=config.max_memory_ids)
        stored_input, cut_input = bounded_payload(
            input, "input", max_chars=config.max_payload_chars
        )
        stored_output, cut_output = bounded_payload(
            output, "output", max_chars=config.max_payload_chars
        )
        extra = {} if metadata is None else check_mapping(metadata, "metadata")
        if {"model", "tokens"} & set(extra):
            raise InvalidInputError("pass model= and tokens= as arguments, not in metadata")
        if len(repr(extra)) > config.max_payload_chars:
            raise InvalidInputError(
                f"metadata is longer than {config.max_payload_chars} characters; keep it small"
            )
        if content is None:
            content = render_content(action_type, tool, input, max_chars=config.max_content_chars)
        else:
            content = check_text(content, "content", max_chars=config.max_content_chars)
        now = utcnow()
        when = now if timestamp is None else self._check_timestamp(timestamp, now)
        vector = (
            None
            if embedding is None
            else check_vector(embedding, "embedding", dimensions=self._embedder.dimensions)
        )

        action_id = new_id("act")
        document: dict[str, Any] = {
            "_id": action_id,
            **tenant.filter(),
            "session_id": session_id,
            "task_id": task_id,
            "action_type": action_type,
            "action": {
                "tool": tool,
                "input": stored_input,
                "output": stored_output,
                "duration_ms": duration_ms,
                "truncated": cut_input or cut_output,
            },
            "outcome": outcome,
            "metadata": {"model": model, "tokens": tokens, **extra},
            "memory_ids": ids,
            "content": content,
            "feedback": {},
            "timestamp": when,
            # The UTC hour, as a string: success rates count per hour (hours.py), and
            # the embedded engine's indexes serve ranges of strings, not of dates.
            "hour": hour_of(when),
        }
        # Size first, so an oversized document costs no provider call.
        check_document_size(document, "the action log")
        if vector is None and embed:
            vector = (await self._embedder.embed_documents([content]))[0]
        if vector is not None:
            document["embedding"] = to_bson_vector(vector)
        with translate_errors("logging an action"):
            await self._hours.write(
                tenant.agent_id, [document["hour"]], self._logs.insert_one(document)
            )
            await announce(
                self._snapshots,
                self._generations,
                self._target,
                tenant.filter(),
                Change(added=[document]),
            )
        logger.info(
            "action_logged",
            action_id=action_id,
            action_type=action_type,
            outcome=outcome,
            memories=len(ids),
            truncated=cut_input or cut_output,
            embedded=embedding is None and embed,
            **tenant.filter(),
        )
        return action_id

    async def get_action(self, tenant: Tenant, action_id: str) -> Action:
        """The action ``action_id`` of this tenant; :class:`NotFoundError` otherwise."""
        tenant = check_tenant(tenant)
        action_id = check_id(action_id, "action_id")
        with translate_errors("reading an action"):
            doc = await self._logs.find_one(
                {"_id": {"$eq": action_id}, **_tenant_filter(tenant)}, {"embedding": 0}
            )
        if doc is None:
            raise NotFoundError(f"no action {action_id!r} for this agent and user")
        return Action.from_document(doc)

    async def list_actions(
        self,
        tenant: Tenant,
        *,
        session_id: str | None = None,
        memory_id: str | None = None,
        rated: bool = False,
        limit: int = 50,
    ) -> list[Action]:
        """This tenant's actions, newest first: at most ``limit``, of one ``session_id``, or
        those whose prompt held ``memory_id`` (its manifest), or only ``rated`` ones (with a
        rating or a helpful mark). Round trips: 1."""
        tenant = check_tenant(tenant)
        check_int(limit, "limit", minimum=1, maximum=1_000)
        if not isinstance(rated, bool):
            raise InvalidInputError(f"rated must be a bool, got {type(rated).__name__}")
        where: dict[str, Any] = _tenant_filter(tenant)
        if session_id is not None:
            where["session_id"] = {"$eq": check_id(session_id, "session_id")}
        if memory_id is not None:
            where["memory_ids"] = {"$eq": check_id(memory_id, "memory_id")}
        if rated:
            where["feedback.credited"] = {"$exists": True}
        with translate_errors("listing actions"):
            docs = await self._newest(where, limit)
        return [Action.from_document(doc) for doc in docs]

    async def _newest(self, where: dict[str, Any], limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` logs matching ``where`` (by time, then id).

        MongoDB walks the ``tenant_hour_time`` index from its end. The embedded engine sorts
        every document a query matches before it keeps the first ``limit``: 100 ms for the
        newest 200 of 10,000 actions, ten times that at 100,000. There the same query asks
        for the last hour's logs first, then for ever longer spans (:data:`_SPANS`), and
        stops once a span holds ``limit`` logs: every log outside a span is older than
        every log inside it, so those are the newest. A user with few recent actions costs a
        few small reads more; the last read has no bound, so none is ever missed."""
        order = [("hour", -1), ("timestamp", -1), ("_id", -1)]
        spans = _SPANS if self._sorts_every_match else ()
        now = utcnow()
        for span in spans:
            bounded = {**where, "hour": {"$gte": hour_of(now - span)}}
            docs = (
                await self._logs.find(bounded, {"embedding": 0})
                .sort(order)
                .limit(limit)
                .to_list(limit)
            )
            if len(docs) == limit:
                return docs
        return (
            await self._logs.find(where, {"embedding": 0}).sort(order).limit(limit).to_list(limit)
        )

    # --- feedback ---------------------------------------------------------------------------

    async def add_feedback(
        self,
        tenant: Tenant,
        action_id: str,
        *,
        rating: int | None = None,
        helpful: bool | None = None,
        correction: str | None = None,
        idempotency_key: str | None = None,
    ) -> Feedback:
        """Record feedback on an action and credit it to the memories of its manifest.

        ``rating`` is an int from 1 to 5 (centred to ``(rating - 3) / 2``); ``helpful`` alone
        counts ±0.5; a ``correction`` alone credits nothing. Feedback given again replaces the
        earlier feedback entirely: a field not given is cleared (``correction=`` alone after a
        rating removes the rating), and the memories are adjusted by the difference between
        the new credit and the old, the action counting once. A request retried with the
        same ``idempotency_key`` changes nothing and returns the same result; the same key
        with a different body raises :class:`~agent_memory.errors.ConflictError`. An action
        of another tenant is :class:`NotFoundError`, with nothing written.
        """
        tenant = check_tenant(tenant)
        action_id = check_id(action_id, "action_id")
        if rating is not None:
            rating = check_rating(rating)
        if helpful is not None and not isinstance(helpful, bool):
            raise InvalidInputError(f"helpful must be a bool, got {type(helpful).__name__}")
        if correction is not None:
            correction = check_text(
                correction, "correction", max_chars=self.config.max_correction_chars
            )
        if rating is None and helpful is None and correction is None:
            raise InvalidInputError("give a rating, helpful or a correction")
        if idempotency_key is not None:
            idempotency_key = check_id(idempotency_key, "idempotency_key")
        request = FeedbackRequest(rating, helpful, correction, idempotency_key)
        with translate_errors("reading an action"):
            found = await self._logs.find_one(
                {"_id": {"$eq": action_id}, **_tenant_filter(tenant)}, {"hour": 1, "timestamp": 1}
            )
        if found is None:  # the ledger says so, as it always did
            return await self._feedback.record(tenant, action_id, request)
        # A rating changes its hour's counts (success rates): the hour is marked around it.
        hour = found.get("hour") or hour_of(found["timestamp"])
        with translate_errors("recording feedback"):
            return await self._hours.write(
                tenant.agent_id, [hour], self._feedback.record(tenant, action_id, request)
            )

    async def repair_pending_credits(
        self, *, agent_id: str | None = None, limit: int = 1_000
    ) -> int:
        """Finish credits a crash left half-done (servers without transactions only; see
        :mod:`~agent_memory.memory.episodic.feedback`). Idempotent; run it from the
        maintenance job. Returns how many were finished."""
        agent_id = None if agent_id is None else check_id(agent_id, "agent_id")
        check_int(limit, "limit", minimum=1)
        return await self._feedback.repair(agent_id=agent_id, limit=limit)

    # --- recall -----------------------------------------------------------------------------

    async def similar_actions(
        self,
        tenant: Tenant,
        *,
        query: str | None = None,
        query_vector: Any = None,
        action_type: str | None = None,
        outcome: str | None = "success",
        min_rating: int | None = None,
        limit: int | None = None,
    ) -> list[SimilarAction]:
        """This tenant's past actions closest in meaning to ``query`` (or ``query_vector``),
        best first, through the connection's search tier (vector and keyword, fused), each
        with the relevance from 0 to 1 the searcher gave it as ``score``.

        ``action_type`` and ``outcome`` (``None`` for any) filter inside the search.
        ``min_rating`` is numeric, which search pre-filters cannot express, so it is applied
        to ``config.similar_overfetch`` times ``limit`` candidates afterwards: with few rated
        actions fewer than ``limit`` may come back.
        """
        tenant = check_tenant(tenant)
        limit = self.config.similar_limit if limit is None else limit
        check_int(limit, "limit", minimum=1, maximum=100)
        if query is None and query_vector is None:
            raise InvalidInputError("give a query, a query_vector or both")
        if query is not None:
            query = check_text(query, "query", max_chars=self.config.max_content_chars)
        filters: dict[str, str] = {}
        if action_type is not None:
            filters["action_type"] = check_id(action_type, "action_type")
        if outcome is not None:
            filters["outcome"] = check_outcome(outcome)
        if min_rating is not None:
            min_rating = check_rating(min_rating, "min_rating")
        vector = (
            None
            if query_vector is None
            else check_vector(query_vector, "query_vector", dimensions=self._embedder.dimensions)
        )
        if vector is None:
            vector = await self._embedder.embed_query(query)  # type: ignore[arg-type]
        fetch = (
            limit
            if min_rating is None
            else min(MAX_CANDIDATES, limit * self.config.similar_overfetch)
        )
        started = time.perf_counter()
        hits = await self._searcher.search(
            self._target,
            SearchQuery(
                tenant=tenant.filter(),
                text=query,
                vector=vector,
                filters=filters,
                limit=min(MAX_CANDIDATES, fetch + _SPARE),
            ),
        )
        whole = await self._whole(tenant, [hit.document for hit in hits])
        found = []
        for hit in hits:
            document = whole.get(hit.id)
            if document is None:  # deleted since the tenant's logs were kept
                continue
            rating = (document.get("feedback") or {}).get("rating")
            if min_rating is not None and not (isinstance(rating, int) and rating >= min_rating):
                continue
            found.append(
                SimilarAction(
                    Action.from_document(document), hit.relevance, hit.explain(), hit.score
                )
            )
            if len(found) == limit:
                break
        logger.info(
            "similar_actions_found",
            hits=len(found),
            candidates=len(hits),
            filtered=sorted(filters),
            min_rating=min_rating,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
            **tenant.filter(),
        )
        return found

    async def _whole(
        self, tenant: Tenant, documents: list[dict[str, Any]]
    ) -> dict[Any, dict[str, Any]]:
        """The found logs whole and as stored now, by id: read again when the search kept
        them without their payloads and feedback (one ``find`` of at most a few hundred
        ids); a log deleted meanwhile is not among them."""
        if all("action" in document for document in documents):
            return {document["_id"]: document for document in documents}
        ids = [document["_id"] for document in documents]
        with translate_errors("reading actions"):
            rows = await self._logs.find(
                {"_id": {"$in": ids}, **_tenant_filter(tenant)}, {"embedding": 0}
            ).to_list(None)
        return {row["_id"]: row for row in rows}

    # --- statistics and retention -----------------------------------------------------------

    async def success_rates(
        self,
        agent_id: str,
        action_type: str | None = None,
        *,
        days: int = 30,
        now: Any = None,
    ) -> SuccessRates:
        """How ``agent_id``'s actions went over the last ``days`` days, across **all of its
        users** (as the blueprint's ``get_success_rate``): counts by outcome, rates, average
        rating and duration, tokens. Only counts leave the database, no user's data, but only
        expose this to whoever may see the whole agent's statistics. Days already summarised by
        retention are included (whole days, see
        :mod:`~agent_memory.memory.episodic.retention`). ``action_type=None`` means all types.

        Within ``retention_days`` (the default window) the counts come from each hour's kept
        counts (:mod:`~agent_memory.memory.episodic.hours`): a few documents, however many
        actions the agent logged.
        """
        agent_id = check_id(agent_id, "agent_id")
        if action_type is not None:
            action_type = check_id(action_type, "action_type")
        since, until = self._window(days, now)
        if self._within_retention(since, until):
            with translate_errors("computing success rates"):
                tally = await self._hours.tally(agent_id, action_type, since=since, until=until)
            rates = SuccessRates.from_tally(
                tally,
                agent_id=agent_id,
                action_type=action_type,
                since=since,
                until=until,
                summarised=0,
            )
        else:
            rates = await self._retention.success_rates(
                agent_id, action_type, since=since, until=until
            )
        logger.info(
            "success_rates_computed",
            agent_id=agent_id,
            action_type=action_type,
            days=days,
            total=rates.total,
            summarised=rates.summarised,
        )
        return rates

    async def success_rates_by_type(
        self,
        agent_id: str,
        action_types: Sequence[str] | None = None,
        *,
        days: int = 30,
        now: Any = None,
    ) -> dict[str, SuccessRates]:
        """:meth:`success_rates` of each action type at once: of ``action_types`` (each one
        there, with zero counts when it has none), or of every type the window holds. Within
        ``retention_days`` one read of the kept hourly counts answers for all types;
        longer windows read once per type."""
        agent_id = check_id(agent_id, "agent_id")
        wanted = None if action_types is None else check_ids(action_types, "action_types")
        since, until = self._window(days, now)
        if not self._within_retention(since, until):
            if wanted is None:
                with translate_errors("computing success rates"):
                    found = await self._logs.distinct("action_type", {"agent_id": agent_id})
                wanted = sorted(t for t in found if isinstance(t, str))
            return {
                name: await self.success_rates(agent_id, name, days=days, now=until)
                for name in wanted
            }
        with translate_errors("computing success rates"):
            tallies = await self._hours.tallies(agent_id, since=since, until=until)
        names = sorted(tallies) if wanted is None else wanted
        return {
            name: SuccessRates.from_tally(
                tallies.get(name) or Tally(),
                agent_id=agent_id,
                action_type=name,
                since=since,
                until=until,
                summarised=0,
            )
            for name in names
        }

    def _window(self, days: int, now: Any) -> tuple[Any, Any]:
        check_int(days, "days", minimum=1, maximum=3_660)
        until = utcnow() if now is None else check_now(now)
        return until - timedelta(days=days), until

    def _within_retention(self, since: Any, until: Any) -> bool:
        """Whether no day of ``[since, until)`` can be summarised yet: then the kept hourly
        counts answer (longer windows count summaries and logs, as before)."""
        return since >= day_start(until - timedelta(days=self.config.retention_days))

    async def apply_retention(
        self,
        *,
        agent_id: str | None = None,
        now: Any = None,
        before_batch: Callable[[], object] | None = None,
    ) -> RetentionReport:
        """Summarise logs older than ``retention_days`` (whole UTC days) into
        ``action_aggregates`` and delete them, in bounded batches. Idempotent and safe to rerun
        after a crash (see :mod:`~agent_memory.memory.episodic.retention`); ``more`` in the
        report says the batch limit stopped it early. ``agent_id=None`` covers every agent.
        ``before_batch()`` runs before each batch; an exception from it stops the work there."""
        agent_id = None if agent_id is None else check_id(agent_id, "agent_id")
        moment = utcnow() if now is None else check_now(now)
        report = await self._retention.apply(
            agent_id=agent_id, now=moment, before_batch=before_batch
        )
        # Hourly counts of days before the cutoff are never read again (success rates of
        # longer windows count those days from the summaries and logs).
        cutoff = hour_of(day_start(moment - timedelta(days=self.config.retention_days)))[:10]
        old: dict[str, Any] = {"day": {"$lt": cutoff}}
        if agent_id is not None:
            old["agent_id"] = {"$eq": agent_id}
        with translate_errors("applying log retention"):
            await self._hour_counts.delete_many(old)
        return report

    async def forget_user(self, tenant: Tenant) -> dict[str, int]:
        """Delete every action log of this tenant; returns ``{collection: deleted}``.

        Summaries in ``action_aggregates`` are per agent, action type and day and hold no user
        data, so they stay. Credits this user's ratings gave to their memories go with those
        memories (long-term memory's own ``forget``)."""
        tenant = check_tenant(tenant)
        with translate_errors("forgetting a user's action logs"):
            result = await self._logs.delete_many(_tenant_filter(tenant))
            await erase_tenant(self._snapshots, self._generations, self._target, tenant.filter())
            if result.deleted_count:
                await self._hours.erased(tenant.agent_id)
        name = self._connection.collection_name(LOGS)
        logger.info("user_forgotten", deleted=result.deleted_count, **tenant.filter())
        return {name: result.deleted_count}

    async def drain(self) -> None:
        """Wait for the writes not awaited (the release of the hours a write marked)."""
        await self._hours.drain()

    async def aclose(self) -> None:
        await self.drain()

    # --- helpers ----------------------------------------------------------------------------

    def _check_timestamp(self, value: Any, now: Any) -> Any:
        when = check_now(value, "timestamp")
        oldest = now - timedelta(days=self.config.retention_days - 1)
        if not oldest <= when <= now + _FUTURE_SKEW:
            raise InvalidInputError(
                f"timestamp must be within the last {self.config.retention_days - 1} days "
                "(older days are summarised) and not in the future"
            )
        # BSON keeps milliseconds; store what reads will return.
        return when.replace(microsecond=when.microsecond // 1000 * 1000)


def _tenant_filter(tenant: Tenant) -> dict[str, Any]:
    return {"agent_id": {"$eq": tenant.agent_id}, "user_id": {"$eq": tenant.user_id}}

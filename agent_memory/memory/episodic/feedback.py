"""Feedback on an action, credited to the memories that were in that turn's prompt.

A rating lands on the action log (``feedback: {rating, helpful, correction, updated_at,
credited}``) and moves the ``feedback: {count, sum}`` of every memory the action's manifest
(``memory_ids``) lists, within the same tenant. Long-term ranking turns ``sum / count`` into a
utility, so ratings change what is recalled next time.

Each feedback is a *state*, not an increment, and a new feedback replaces the stored one
entirely: rating, helpful and correction all take the new request's values, and a field the
request does not give is cleared (a correction alone after a rating removes the rating).
``credited`` is the centred value (``(rating - 3) / 2``, or ±0.5 for ``helpful`` alone; none
for a correction alone) the memories hold for this action. A new feedback adds the difference
``credited - previously credited`` to ``feedback.sum``, and the action counts once in
``feedback.count`` while it credits a value (+1 when it starts, -1 when a feedback that credits
nothing replaces one that did), so a user who changes their mind, or a request sent twice, never
counts twice. Each feedback bumps ``feedback.version``; the write is guarded by the version that
was read, so two concurrent ratings of one action cannot both apply against the same starting
point (the loser re-reads). Feedback equal to the stored state writes nothing, so a loser that
re-reads the state it asked for is done. A request with an idempotency key is kept in
``feedback.requests`` with its answer, which a retry gets back whatever changed since.

Consistency of the two writes (the action and the memories):

- With transactions (``connection.capabilities.transactions``: replica sets, Atlas): the
  action update and the memory update commit together or not at all. The embedded engine runs
  transactions exclusively (they block every other session), so the probe reports them
  unusable and the embedded default takes the ordered path below.
- Without: the writes are ordered so a crash between any two cannot double-count. (1) The
  action gets its new state *and* ``feedback.pending: {op, delta, count}``; (2) the memories
  get ``$inc`` only where ``feedback.credit_ops`` does not yet hold ``op``, and ``op`` is
  pushed there in the same update (so re-applying is a no-op per memory); (3) ``pending`` is
  cleared. A crash after (1) or (2) leaves ``pending``; the next ``add_feedback`` on that
  action finishes it first, and :meth:`FeedbackLedger.repair` (``repair_pending_credits``)
  finishes all of them. ``credit_ops`` keeps the last ``credit_ops_kept`` (50) operations per
  memory, so a pending credit must be finished before a memory receives 50 further credits;
  run the repair from the maintenance job.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.errors import ConflictError, NotFoundError
from agent_memory.memory.episodic.records import EpisodicConfig
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.batches import update_in
from agent_memory.mongo.search.snapshots import GENERATIONS, announce_write
from agent_memory.mongo.transactions import run_in_transaction
from agent_memory.stamps import new_id, utcnow
from agent_memory.tenancy import Tenant

__all__ = ["Credit", "Feedback", "FeedbackLedger", "FeedbackRequest", "centred_value"]

logger = get_logger(__name__)

#: Attempts when concurrent feedback on the same action keeps winning the version race; a
#: loser waits a few jittered milliseconds so that racing writers spread out.
MAX_ATTEMPTS = 8
_BACKOFF_SECONDS = 0.005


def centred_value(rating: int | None, helpful: bool | None) -> float | None:
    """What a feedback is worth to a memory, from -1 to 1; the rating wins over ``helpful``."""
    if rating is not None:
        return (rating - 3) / 2
    if helpful is not None:
        return 0.5 if helpful else -0.5
    return None


@dataclass(frozen=True, slots=True)
class FeedbackRequest:
    rating: int | None
    helpful: bool | None
    correction: str | None
    idempotency_key: str | None

    def digest(self) -> str:
        """Fingerprint of what was asked, to tell a retry from a reused key."""
        body = json.dumps([self.rating, self.helpful, self.correction], ensure_ascii=False)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Feedback:
    """An action's feedback after a request: what the user said and the value ``credited`` to
    each memory of the manifest ``memory_ids`` (``None`` when only a correction was given)."""

    action_id: str
    rating: int | None
    helpful: bool | None
    correction: str | None
    credited: float | None
    memory_ids: tuple[str, ...]
    updated_at: datetime | None

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Feedback:
        stored = doc.get("feedback") or {}
        return cls(
            action_id=doc["_id"],
            rating=stored.get("rating"),
            helpful=stored.get("helpful"),
            correction=stored.get("correction"),
            credited=stored.get("credited"),
            memory_ids=tuple(doc.get("memory_ids") or ()),
            updated_at=stored.get("updated_at"),
        )


@dataclass(frozen=True, slots=True)
class Credit:
    """One change to the memories: ``delta`` onto ``feedback.sum``, ``count`` onto
    ``feedback.count``, applied at most once per memory under the operation id ``op``."""

    op: str
    delta: float
    count: int

    def as_document(self) -> dict[str, Any]:
        return {"op": self.op, "delta": self.delta, "count": self.count}


_PROJECTION = {"embedding": 0, "content": 0, "action": 0}


class FeedbackLedger:
    """Records feedback on actions and credits it to memories (see the module docstring)."""

    def __init__(self, logs: Any, memories: Any, connection: Any, config: EpisodicConfig):
        self._logs = logs
        self._memories = memories
        self._connection = connection
        self._config = config

    async def record(self, tenant: Tenant, action_id: str, request: FeedbackRequest) -> Feedback:
        where = {"_id": {"$eq": action_id}, **_tenant_filter(tenant)}
        transactional = bool(self._connection.capabilities.transactions)
        with translate_errors("recording feedback"):
            for attempt in range(MAX_ATTEMPTS):
                if attempt:
                    await asyncio.sleep(random.uniform(0, _BACKOFF_SECONDS * attempt))
                doc = await self._logs.find_one(where, _PROJECTION)
                if doc is None:
                    raise NotFoundError(
                        f"no action {action_id!r} for agent {tenant.agent_id!r} and user "
                        f"{tenant.user_id!r}"
                    )
                stored = doc.get("feedback") or {}
                if stored.get("pending"):
                    await self._finish(doc)
                replay = self._replay(doc, request)
                if replay is not None:
                    logger.info("feedback_replayed", action_id=action_id, **tenant.filter())
                    return replay
                update, credit, result = self._plan(doc, request, transactional=transactional)
                if update is None:
                    # What was asked is what is stored: nothing to write, except a new key,
                    # so that its retry gets this answer whatever happens in between.
                    if not await self._remember(where, request, result):
                        continue  # the same key was just recorded: read it again
                    logger.info("feedback_unchanged", action_id=action_id, **tenant.filter())
                    return result
                guard = {**where, "feedback.version": _version_filter(stored)}
                try:
                    if transactional:
                        done = await self._write_in_transaction(tenant, doc, guard, update, credit)
                    else:
                        done = await self._write_in_order(tenant, doc, guard, update, credit)
                except pm.PyMongoError as exc:
                    if exc.has_error_label("TransientTransactionError"):
                        continue  # a write conflict inside the transaction: read again
                    raise
                if done:
                    logger.info(
                        "feedback_recorded",
                        action_id=action_id,
                        credited=result.credited,
                        delta=credit.delta if credit else 0.0,
                        memories=len(result.memory_ids) if credit else 0,
                        transactional=transactional,
                        **tenant.filter(),
                    )
                    return result
        raise ConflictError(
            f"feedback on action {action_id!r} kept changing concurrently; send it again"
        )

    def _replay(self, doc: Mapping[str, Any], request: FeedbackRequest) -> Feedback | None:
        """The first answer to a request already seen under its idempotency key, or ``None``."""
        if request.idempotency_key is None:
            return None
        for seen in (doc.get("feedback") or {}).get("requests") or ():
            if seen.get("key") == request.idempotency_key:
                if seen.get("digest") != request.digest():
                    raise ConflictError(
                        f"idempotency key {request.idempotency_key!r} was used for a different "
                        "feedback; use a new key for a new request"
                    )
                answered = seen.get("answer")
                if answered is None:  # recorded before answers were kept: the current state
                    return Feedback.from_document(doc)
                return Feedback.from_document({**doc, "feedback": answered})
        return None

    async def _remember(
        self, where: dict[str, Any], request: FeedbackRequest, result: Feedback
    ) -> bool:
        """Record a new idempotency key with the answer it got, when nothing else is written.
        False when the action already holds the key (a concurrent request recorded it)."""
        if request.idempotency_key is None:
            return True
        written = await self._logs.update_one(
            {**where, "feedback.requests.key": {"$ne": request.idempotency_key}},
            {"$push": self._request_entry(request, result)},
        )
        return written.matched_count > 0

    def _request_entry(self, request: FeedbackRequest, result: Feedback) -> dict[str, Any]:
        """The ``$push`` that records a request's key, its fingerprint and its answer (the
        answer's action id and manifest are the action's own, so they are not repeated)."""
        answer = {
            name: getattr(result, name)
            for name in ("rating", "helpful", "correction", "credited", "updated_at")
            if getattr(result, name) is not None
        }
        entry = {"key": request.idempotency_key, "digest": request.digest(), "answer": answer}
        return {
            "feedback.requests": {
                "$each": [entry],
                "$slice": -self._config.idempotency_keys_kept,
            }
        }

    def _plan(
        self, doc: Mapping[str, Any], request: FeedbackRequest, *, transactional: bool
    ) -> tuple[dict[str, Any] | None, Credit | None, Feedback]:
        """The action update, the credit it implies, and the result to return; no update
        (``None``) when the request asks for the state already stored."""
        stored = doc.get("feedback") or {}
        # The request replaces the stored feedback entirely: a field it does not give is
        # cleared, so a correction alone after a rating removes the rating and its credit.
        rating, helpful, correction = request.rating, request.helpful, request.correction
        value = centred_value(rating, helpful)
        before = stored.get("credited")
        if (rating, helpful, correction, value) == (
            stored.get("rating"),
            stored.get("helpful"),
            stored.get("correction"),
            before,
        ):
            return None, None, Feedback.from_document(doc)
        now = utcnow()
        fields: dict[str, Any] = {
            "feedback.updated_at": now,
            "feedback.version": int(stored.get("version", 0)) + 1,
        }
        cleared: dict[str, str] = {}
        for name, item in (
            ("rating", rating),
            ("helpful", helpful),
            ("correction", correction),
            ("credited", value),
        ):
            if item is not None:
                fields[f"feedback.{name}"] = item
            elif name in stored:
                cleared[f"feedback.{name}"] = ""
        credit = None
        memory_ids = tuple(doc.get("memory_ids") or ())
        if memory_ids:
            # What the memories hold for this action moves from ``before`` to ``value``: the
            # difference onto the sum, and the action counts while it credits something.
            delta = (value or 0.0) - (before or 0.0)
            count = (value is not None) - (before is not None)
            if delta or count:
                credit = Credit(new_id("crd"), delta, count)
                if not transactional:
                    fields["feedback.pending"] = credit.as_document()
        update: dict[str, Any] = {"$set": fields}
        if cleared:
            update["$unset"] = cleared
        result = Feedback(doc["_id"], rating, helpful, correction, value, memory_ids, now)
        if request.idempotency_key is not None:
            update["$push"] = self._request_entry(request, result)
        return update, credit, result

    async def _write_in_transaction(
        self,
        tenant: Tenant,
        doc: Mapping[str, Any],
        guard: dict[str, Any],
        update: dict[str, Any],
        credit: Credit | None,
    ) -> bool:
        async def work(session: Any) -> None:
            written = await self._logs.update_one(guard, update, session=session)
            if written.matched_count == 0:
                raise _GuardMissed  # aborts: the caller re-reads and tries again
            if credit is not None:
                await self._apply(tenant, doc["memory_ids"], credit, session=session)

        try:
            await run_in_transaction(self._connection.client, work)
        except _GuardMissed:
            return False
        if credit is not None:
            await self._announce(tenant)  # after the commit, or a search would cache the old
        return True

    async def _write_in_order(
        self,
        tenant: Tenant,
        doc: Mapping[str, Any],
        guard: dict[str, Any],
        update: dict[str, Any],
        credit: Credit | None,
    ) -> bool:
        written = await self._logs.update_one(guard, update)
        if written.matched_count == 0:
            return False
        if credit is not None:
            await self._apply(tenant, doc["memory_ids"], credit)
            await self._clear(doc["_id"], tenant, credit.op)
        return True

    async def _apply(
        self, tenant: Tenant, memory_ids: list[str], credit: Credit, *, session: Any = None
    ) -> int:
        """Credit the tenant's listed memories once each: a memory that already holds ``op``
        in ``credit_ops`` is not matched, so running this twice changes nothing."""
        # A bounded part of the ids at a time, all in the caller's transaction when given.
        result = await update_in(
            self._memories,
            list(memory_ids),
            lambda part: {
                "_id": {"$in": part},
                **_tenant_filter(tenant),
                "feedback.credit_ops": {"$ne": credit.op},
            },
            {
                "$inc": {"feedback.sum": credit.delta, "feedback.count": credit.count},
                "$push": {
                    "feedback.credit_ops": {
                        "$each": [credit.op],
                        "$slice": -self._config.credit_ops_kept,
                    }
                },
            },
            session=session,
        )
        if session is None:
            # Searches keep memories in memory (mongo.search.snapshots); feedback changes their
            # ranking. Announced before the pending credit is cleared, so a crash in between
            # is announced again by the repair that finishes the credit.
            await self._announce(tenant)
        return result.modified_count

    async def _announce(self, tenant: Tenant) -> None:
        await announce_write(
            self._connection.collection(GENERATIONS),
            self._memories.name,
            tenant.filter(),
        )

    async def _clear(self, action_id: str, tenant: Tenant, op: str) -> None:
        await self._logs.update_one(
            {"_id": {"$eq": action_id}, **_tenant_filter(tenant), "feedback.pending.op": op},
            {"$unset": {"feedback.pending": ""}},
        )

    async def _finish(self, doc: Mapping[str, Any]) -> None:
        """Complete a credit a crash left pending (idempotent, see :meth:`_apply`)."""
        pending = doc["feedback"]["pending"]
        tenant = Tenant(doc["agent_id"], doc["user_id"])
        credit = Credit(pending["op"], float(pending["delta"]), int(pending["count"]))
        await self._apply(tenant, doc.get("memory_ids") or [], credit)
        await self._clear(doc["_id"], tenant, credit.op)
        logger.info("pending_credit_finished", action_id=doc["_id"], **tenant.filter())

    async def repair(self, *, agent_id: str | None, limit: int) -> int:
        """Finish up to ``limit`` pending credits; how many were finished."""
        finished = 0
        with translate_errors("repairing pending feedback credits"):
            agents = [agent_id] if agent_id else sorted(await self._logs.distinct("agent_id"))
            for agent in agents:
                docs = (
                    await self._logs.find(
                        {"agent_id": {"$eq": agent}, "feedback.pending.op": {"$exists": True}},
                        {"agent_id": 1, "user_id": 1, "memory_ids": 1, "feedback.pending": 1},
                    )
                    .limit(limit - finished)
                    .to_list(None)
                )
                for doc in docs:
                    await self._finish(doc)
                    finished += 1
                if finished >= limit:
                    break
        logger.info("pending_credits_repaired", finished=finished, agent_id=agent_id)
        return finished


class _GuardMissed(Exception):
    """The action changed since it was read; nothing was written."""


def _tenant_filter(tenant: Tenant) -> dict[str, Any]:
    return {"agent_id": {"$eq": tenant.agent_id}, "user_id": {"$eq": tenant.user_id}}


def _version_filter(stored: Mapping[str, Any]) -> Any:
    version = stored.get("version")
    return {"$exists": False} if version is None else {"$eq": version}

"""A durable, debounced queue of memory-formation jobs in MongoDB (collection ``formation_jobs``).

One job means "form memories from this session's messages that no job has formed yet". The
agent calls :meth:`FormationQueue.schedule` after each turn; workers :meth:`~FormationQueue.claim`
due jobs, work, and :meth:`~FormationQueue.complete` or :meth:`~FormationQueue.fail` them.

State machine (``status``)::

    schedule ──> pending ──claim──> running ──complete──> done   (the session's cursor)
                   ^  ^               │  │
                   │  └──fail (backoff)┘  └──fail, attempts >= max──> dead
                   │                  │
                   │                  ├──fail while another job of the session is pending──> merged
                   │                  └──lease expired: claim takes it over (attempts + 1; dead
                   │                     once attempts exceed max_attempts)
                   ├── schedule while pending: run_after = max(run_after, now + debounce)
                   └── expedite (the session ended): run_after = now, unless in a retry backoff

Invariants, enforced by unique partial indexes (``atlas_indexes/formation_jobs.json``; the
embedded engine honours them too): at most one ``pending`` job per (agent, user, session), so
a burst of messages debounces into one job; at most one ``running`` job per (agent, user), so
two workers never form the same session at once, nor two sessions of one user: a user's facts
and profile are written in the order the sessions were formed, never by two jobs racing on the
same key (a due job whose user is busy is deferred by up to a lease). A message that arrives
while the session's job runs creates a new pending job; it finds the running job's messages
already covered.

What a job covers: ``messages_through`` is the ``seq`` (conversation ordering key) of the last
message it formed. The newest ``done`` job of a session is the session's cursor: the next job
forms the messages after it. Older done jobs are pruned when a newer one completes. A ``dead``
job does not move the cursor, so the session's next job covers its messages again.

Idempotency: before writing any memory the worker records a *plan* on the job (its cursor,
``messages_through`` and the extraction itself), guarded by the lease; a job taken over after a
crash re-applies that same plan instead of asking the model again. Each apply step is marked
done on the job (guarded, renewing the lease), and a step that ran but was not marked is safe
to repeat: the profile is patched only with fields that differ (no new version for a repeat),
keyed facts and notes repeating an active memory reinforce it instead of adding one
(consolidation by key and by normalised text). A repeated step therefore adds no memory and no
profile version; it may raise the repeated memory's importance by one reinforcement step.

Workers must finish a step within ``lease_seconds`` (each guarded write renews the lease); a
worker that lost its lease stops at its next guarded write.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from pymongo import ReturnDocument
from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.checks import check_id, check_int, check_number
from agent_memory.errors import ConfigurationError, InvalidInputError
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.connection import Connection
from agent_memory.stamps import new_id, utcnow
from agent_memory.tenancy import Tenant

__all__ = ["COLLECTION", "FormationQueue", "Job", "JobStatus"]

logger = get_logger(__name__)

COLLECTION = "formation_jobs"
JobStatus = Literal["pending", "running", "done", "dead", "merged"]
_UPSERT_ATTEMPTS = 3
#: The longest duration the queue takes (a timedelta holds up to about 2.7 million years).
_TEN_YEARS = 10 * 365 * 86_400
_CLAIM_CANDIDATES = 20
_OLDEST_FIRST = [("run_after", 1), ("_id", 1)]


def _age(doc: Mapping[str, Any]) -> tuple[bool, Any, str]:
    """A candidate's place in :data:`_OLDEST_FIRST` (a missing ``run_after`` first, as
    MongoDB sorts it)."""
    run_after = doc.get("run_after")
    return run_after is not None, run_after, str(doc["_id"])


def _check_now(now: datetime | None) -> datetime:
    if now is None:
        return utcnow()
    if not isinstance(now, datetime) or now.tzinfo is None:
        raise InvalidInputError("now must be a timezone-aware datetime")
    # BSON keeps milliseconds; guards compare what was stored with what the worker holds.
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


@dataclass(frozen=True, slots=True)
class Job:
    """A claimed (or inspected) formation job. ``lease_until`` and ``worker`` are the guard
    every write of the holder carries; the queue returns an updated copy after each renewal."""

    id: str
    agent_id: str
    user_id: str
    session_id: str
    status: JobStatus
    run_after: datetime
    attempts: int
    created_at: datetime
    lease_until: datetime | None = None
    worker: str | None = None
    messages_through: str | None = None
    plan: dict[str, Any] | None = None
    steps: tuple[str, ...] = ()
    last_error: str | None = None

    @property
    def tenant(self) -> Tenant:
        return Tenant(self.agent_id, self.user_id)

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Job:
        return cls(
            id=doc["_id"],
            agent_id=doc["agent_id"],
            user_id=doc["user_id"],
            session_id=doc["session_id"],
            status=doc["status"],
            run_after=doc["run_after"],
            attempts=int(doc.get("attempts", 0)),
            created_at=doc["created_at"],
            lease_until=doc.get("lease_until"),
            worker=doc.get("worker"),
            messages_through=doc.get("messages_through"),
            plan=doc.get("plan"),
            steps=tuple(doc.get("steps") or ()),
            last_error=doc.get("last_error"),
        )


class FormationQueue:
    """Debounced formation jobs, durable in MongoDB, leased to workers.

    >>> queue = FormationQueue(connection, debounce_seconds=30)       # doctest: +SKIP
    >>> await queue.setup()                                           # doctest: +SKIP
    >>> await queue.schedule(tenant, "session-1")                     # after each turn
    >>> job = await queue.claim("worker-1")                           # in a worker
    """

    def __init__(
        self,
        connection: Connection,
        *,
        debounce_seconds: float = 30.0,
        lease_seconds: float = 60.0,
        max_attempts: int = 5,
        retry_base_seconds: float = 30.0,
        retry_max_seconds: float = 3600.0,
    ) -> None:
        # Finite and at most ten years, so every one makes a timedelta; only the cap on
        # retries may be infinite (no cap).
        durations = {"debounce_seconds": debounce_seconds, "retry_base_seconds": retry_base_seconds}
        for name, value in durations.items():
            check_number(value, name, minimum=0, maximum=_TEN_YEARS, error=ConfigurationError)
        check_number(
            lease_seconds, "lease_seconds", above=0, maximum=_TEN_YEARS, error=ConfigurationError
        )
        check_number(
            retry_max_seconds,
            "retry_max_seconds",
            minimum=0,
            finite=False,
            error=ConfigurationError,
        )
        check_int(max_attempts, "max_attempts", minimum=1, error=ConfigurationError)
        self.connection = connection
        self.collection = connection.collection(COLLECTION)
        self._by_candidates = connection.capabilities.mongoeco
        self.debounce = timedelta(seconds=debounce_seconds)
        self.lease = timedelta(seconds=lease_seconds)
        self.max_attempts = max_attempts
        self.retry_base = retry_base_seconds
        self.retry_max = retry_max_seconds

    async def setup(self) -> None:
        """Create the queue's indexes (idempotent). ``agent-memory indexes setup`` does the
        same for every collection. Round trips: 1 per index."""
        spec = self.connection.index_catalog(dimensions=1)[COLLECTION]  # no vectors here
        with translate_errors("creating the formation queue's indexes"):
            for index in spec.indexes:
                await self.collection.create_index(
                    list(index.key), name=index.name, **index.options
                )

    # --- the agent's side -----------------------------------------------------------------

    async def schedule(
        self,
        tenant: Tenant,
        session_id: str,
        *,
        now: datetime | None = None,
        delay: float | None = None,
    ) -> str:
        """Ask for the session's memories to be formed ``debounce_seconds`` from now; returns
        the job id. A pending job of the session is pushed later instead of adding another
        (debounce; a retry's backoff is kept if later); a running job is not touched, a new
        pending job is created beside it. A plan recorded by a failed attempt is dropped,
        because the retry must also cover the new message. ``delay`` (seconds) replaces the
        debounce, e.g. 0 for the next piece of a long backlog.

        Round trips: 1 (an upsert; one more per lost insert race).
        """
        if not isinstance(tenant, Tenant):
            raise InvalidInputError("tenant must be a Tenant")
        session_id = check_id(session_id, "session_id")
        now = _check_now(now)
        if delay is None:
            wait = self.debounce
        else:
            wait = timedelta(seconds=check_number(delay, "delay", minimum=0, maximum=_TEN_YEARS))
        selector = {**tenant.filter(), "session_id": session_id, "status": "pending"}
        update = {
            "$max": {"run_after": now + wait},
            "$set": {"updated_at": now, "plan": None, "steps": []},
            "$inc": {"scheduled": 1},
            "$setOnInsert": {"_id": new_id("fjob"), "attempts": 0, "created_at": now},
        }
        doc = None
        with translate_errors("scheduling memory formation"):
            for attempt in range(_UPSERT_ATTEMPTS):
                try:
                    doc = await self.collection.find_one_and_update(
                        selector,
                        update,
                        upsert=True,
                        projection={"_id": 1, "scheduled": 1},
                        return_document=ReturnDocument.AFTER,
                    )
                    break
                except pm.DuplicateKeyError:
                    # A concurrent schedule inserted the pending job first: update that one.
                    if attempt + 1 == _UPSERT_ATTEMPTS:
                        raise
        assert doc is not None
        logger.debug(
            "formation_scheduled",
            agent_id=tenant.agent_id,
            session_id=session_id,
            debounced=doc.get("scheduled", 1) > 1,
        )
        return str(doc["_id"])

    async def expedite(
        self, tenant: Tenant, *, session_id: str | None = None, now: datetime | None = None
    ) -> int:
        """Make the tenant's pending jobs (one session's, or all) due now instead of after the
        debounce: a session is over (the user started a new one), so there is nothing left to
        wait for. Jobs waiting out a retry's backoff keep it; running jobs are not touched.
        Returns how many jobs were brought forward.

        Round trips: 1 (an update_many).
        """
        if not isinstance(tenant, Tenant):
            raise InvalidInputError("tenant must be a Tenant")
        now = _check_now(now)
        selector: dict[str, Any] = {
            **tenant.filter(),
            "status": "pending",
            "attempts": 0,
            "run_after": {"$gt": now},
        }
        if session_id is not None:
            selector["session_id"] = check_id(session_id, "session_id")
        with translate_errors("bringing memory formation forward"):
            result = await self.collection.update_many(
                selector, {"$set": {"run_after": now, "updated_at": now}}
            )
        if result.modified_count:
            logger.debug(
                "formation_expedited", agent_id=tenant.agent_id, jobs=result.modified_count
            )
        return result.modified_count

    # --- the worker's side ----------------------------------------------------------------

    def _due(self, now: datetime) -> dict[str, Any]:
        return {
            "$or": [
                {"status": "pending", "run_after": {"$lte": now}},
                # A crashed (or stalled) worker's job is taken over once its lease ran out.
                {"status": "running", "lease_until": {"$lte": now}},
            ]
        }

    def _take(self, worker_id: str, now: datetime) -> dict[str, Any]:
        return {
            "$set": {
                "status": "running",
                "worker": worker_id,
                "lease_until": now + self.lease,
                "claimed_at": now,
                "updated_at": now,
            },
            "$inc": {"attempts": 1},
        }

    async def claim(self, worker_id: str, *, now: datetime | None = None) -> Job | None:
        """Take the oldest due job, or ``None``: a pending job whose ``run_after`` has come,
        or a running one whose lease expired. It is leased to ``worker_id`` for
        ``lease_seconds`` and its ``attempts`` grows by one. A job taken over more than
        ``max_attempts`` times goes dead (its workers keep dying on it).

        Round trips: 1 findAndModify when nothing is in the way; when the oldest due job's
        user is busy (another job of theirs running), 2 concurrent finds of candidates, then 1
        per candidate tried (a busy user's job is deferred by up to a lease). On the
        embedded server always the candidates' way: its findAndModify with a sort reads the
        whole collection, done jobs included (``docs/upstream/mongoeco-update-with-sort.md``).
        """
        worker_id = check_id(worker_id, "worker_id")
        now = _check_now(now)
        with translate_errors("claiming a formation job"):
            if self._by_candidates:
                doc = await self._claim_around_busy_users(worker_id, now)
            else:
                try:
                    doc = await self.collection.find_one_and_update(
                        self._due(now),
                        self._take(worker_id, now),
                        sort=_OLDEST_FIRST,
                        return_document=ReturnDocument.AFTER,
                    )
                except pm.DuplicateKeyError:
                    doc = await self._claim_around_busy_users(worker_id, now)
            while doc is not None and doc["attempts"] > self.max_attempts:
                # Only a takeover can exceed the limit (fail() stops at it): bury the job.
                await self.collection.update_one(
                    {"_id": doc["_id"], "worker": worker_id, "lease_until": doc["lease_until"]},
                    {
                        "$set": {
                            "status": "dead",
                            "last_error": "LeaseExpired",
                            "lease_until": None,
                            "finished_at": now,
                        }
                    },
                )
                logger.warning("formation_job_dead", job_id=doc["_id"], error="LeaseExpired")
                doc = await self._claim_around_busy_users(worker_id, now)
        if doc is None:
            return None
        job = Job.from_document(doc)
        logger.info(
            "formation_job_claimed",
            job_id=job.id,
            agent_id=job.agent_id,
            session_id=job.session_id,
            attempt=job.attempts,
            resumed=job.plan is not None,
        )
        return job

    async def _claim_around_busy_users(
        self, worker_id: str, now: datetime
    ) -> dict[str, Any] | None:
        # Each way of being due read on its own index (one query with both reads the
        # collection whole on the embedded server), then the oldest of both.
        found = await asyncio.gather(
            *(
                self.collection.find(way, {"_id": 1, "run_after": 1})
                .sort(_OLDEST_FIRST)
                .limit(_CLAIM_CANDIDATES)
                .to_list(None)
                for way in self._due(now)["$or"]
            )
        )
        candidates = sorted(itertools.chain(*found), key=_age)[:_CLAIM_CANDIDATES]
        for candidate in candidates:
            still_due = {"_id": candidate["_id"], **self._due(now)}
            try:
                doc = await self.collection.find_one_and_update(
                    still_due, self._take(worker_id, now), return_document=ReturnDocument.AFTER
                )
            except pm.DuplicateKeyError:
                # Its user has a running job: try again once that one's lease could be over.
                await self.collection.update_one(
                    {"_id": candidate["_id"], "status": "pending"},
                    {"$max": {"run_after": now + self.lease}},
                )
                continue
            if doc is not None:
                return doc
        return None

    def _held(self, job: Job) -> dict[str, Any]:
        return {
            "_id": job.id,
            "status": "running",
            "worker": job.worker,
            "lease_until": job.lease_until,
        }

    async def _renew(self, job: Job, changes: dict[str, Any], now: datetime | None) -> Job | None:
        now = _check_now(now)
        lease_until = now + self.lease
        update: dict[str, Any] = {
            "$set": {**changes, "lease_until": lease_until, "updated_at": now}
        }
        with translate_errors("updating a formation job"):
            result = await self.collection.update_one(self._held(job), update)
        if result.matched_count == 0:
            logger.warning("formation_job_lease_lost", job_id=job.id)
            return None
        return replace(job, lease_until=lease_until)

    async def formed_through(self, tenant: Tenant, session_id: str) -> str | None:
        """The ``seq`` of the last message of the session that memories were formed from
        (the newest done job's ``messages_through``), or ``None``. Round trips: 1."""
        with translate_errors("reading the formation cursor"):
            doc = await self.collection.find_one(
                {**tenant.filter(), "session_id": session_id, "status": "done"},
                {"messages_through": 1},
                sort=[("finished_at", -1)],
            )
        return None if doc is None else doc.get("messages_through")

    async def record_plan(
        self,
        job: Job,
        plan: dict[str, Any],
        *,
        messages_through: str | None,
        now: datetime | None = None,
    ) -> Job | None:
        """Store what the job will apply (cursor, extraction) before anything is written;
        ``None`` if the lease was lost. Renews the lease. Round trips: 1."""
        changes = {"plan": plan, "messages_through": messages_through, "steps": []}
        if (renewed := await self._renew(job, changes, now)) is None:
            return None
        return replace(renewed, plan=plan, messages_through=messages_through, steps=())

    async def mark_step(self, job: Job, step: str, *, now: datetime | None = None) -> Job | None:
        """Record that an apply step is done; ``None`` if the lease was lost. Renews the
        lease (a heartbeat). Round trips: 1."""
        steps = (*job.steps, step)
        renewed = await self._renew(job, {"steps": list(steps)}, now)
        return None if renewed is None else replace(renewed, steps=steps)

    async def complete(
        self, job: Job, *, messages_through: str | None = None, now: datetime | None = None
    ) -> bool:
        """Mark the job done if ``job`` still holds its lease (else ``False``: another worker
        took it over, and its result counts). The job becomes the session's cursor; older done
        jobs of the session are pruned.

        Round trips: 1 guarded update, then 1 delete of older done jobs.
        """
        now = _check_now(now)
        through = messages_through if messages_through is not None else job.messages_through
        with translate_errors("completing a formation job"):
            result = await self.collection.update_one(
                self._held(job),
                {
                    "$set": {
                        "status": "done",
                        "messages_through": through,
                        "finished_at": now,
                        "updated_at": now,
                        "lease_until": None,
                        "plan": None,  # the extraction is applied; keep the cursor only
                    }
                },
            )
            if result.matched_count == 0:
                logger.warning("formation_job_lease_lost", job_id=job.id, at="complete")
                return False
            session = {**job.tenant.filter(), "session_id": job.session_id}
            await self.collection.delete_many({**session, "status": "done", "_id": {"$ne": job.id}})
        logger.info("formation_job_completed", job_id=job.id, attempt=job.attempts)
        return True

    def retry_delay(self, attempts: int) -> timedelta:
        """Exponential backoff after the ``attempts``-th failed attempt, capped."""
        exponent = min(max(attempts - 1, 0), 1000)  # beyond it, any base above 0 is capped
        seconds = min(self.retry_base * 2.0**exponent, self.retry_max, _TEN_YEARS)
        return timedelta(seconds=seconds)

    async def fail(
        self, job: Job, error: BaseException | str, *, now: datetime | None = None
    ) -> JobStatus | None:
        """Give the job back after a failed attempt: ``pending`` again after a backoff, or
        ``dead`` after ``max_attempts``. When the session got a new pending job meanwhile,
        this one is ``merged`` into it (that job covers these messages too, keeping the
        later of the two run times and the higher attempt count). Only the error's type is
        stored and logged, never its text (it may quote memories). Returns the new status,
        or ``None`` if the lease was lost.

        Round trips: 1 guarded update; 2 more when merging.
        """
        now = _check_now(now)
        kind = error if isinstance(error, str) else type(error).__name__
        common = {"last_error": kind, "updated_at": now, "lease_until": None, "worker": None}
        with translate_errors("failing a formation job"):
            if job.attempts >= self.max_attempts:
                status: JobStatus = "dead"
                result = await self.collection.update_one(
                    self._held(job), {"$set": {**common, "status": "dead", "finished_at": now}}
                )
            else:
                status = "pending"
                retry_at = now + self.retry_delay(job.attempts)
                try:
                    result = await self.collection.update_one(
                        self._held(job),
                        {"$set": {**common, "status": "pending", "run_after": retry_at}},
                    )
                except pm.DuplicateKeyError:
                    # The session has a newer pending job: it covers these messages too.
                    status = "merged"
                    merged = {**common, "status": "merged", "finished_at": now}
                    result = await self.collection.update_one(self._held(job), {"$set": merged})
                    if result.matched_count:
                        session = {**job.tenant.filter(), "session_id": job.session_id}
                        await self.collection.update_one(
                            {**session, "status": "pending"},
                            {
                                "$max": {"run_after": retry_at, "attempts": job.attempts},
                                "$set": {"plan": None, "steps": []},
                            },
                        )
        if result.matched_count == 0:
            logger.warning("formation_job_lease_lost", job_id=job.id, at="fail")
            return None
        log = logger.error if status == "dead" else logger.warning
        log("formation_job_failed", job_id=job.id, attempt=job.attempts, error=kind, status=status)
        return status

    # --- inspection and erasure -------------------------------------------------------------

    async def get(self, job_id: str) -> Job | None:
        """One job by id (for operators and tests). Round trips: 1."""
        with translate_errors("reading a formation job"):
            doc = await self.collection.find_one({"_id": check_id(job_id, "job_id")})
        return None if doc is None else Job.from_document(doc)

    async def jobs(self, tenant: Tenant, session_id: str | None = None) -> list[Job]:
        """The tenant's jobs (of one session), oldest first. Round trips: 1."""
        query: dict[str, Any] = tenant.filter()
        if session_id is not None:
            query["session_id"] = check_id(session_id, "session_id")
        with translate_errors("listing formation jobs"):
            docs = (
                await self.collection.find(query)
                .sort([("created_at", 1), ("_id", 1)])
                .to_list(None)
            )
        return [Job.from_document(doc) for doc in docs]

    async def forget_user(self, tenant: Tenant) -> dict[str, int]:
        """Delete the tenant's jobs (they hold extractions of its messages). Register with
        ``MemorySystem.register_forgetter``. Round trips: 1."""
        with translate_errors("forgetting a user's formation jobs"):
            result = await self.collection.delete_many(tenant.filter())
        return {self.connection.collection_name(COLLECTION): result.deleted_count}

"""The scheduled maintenance run: importance decay, then retention, under one lock.

What cron (or a Kubernetes CronJob) runs, through ``agent-memory decay``, and what an app can
call from its own scheduler:

1. take the ``maintenance`` lease (:mod:`agent_memory.ops.lease`), so two overlapping runs
   never work at once; a run whose holder died is taken over once its lease expires;
2. decay long-term memories not used for a while (:class:`~agent_memory.memory.long_term.decay.DecayJob`,
   idempotent per period: a second run in the period decays nothing);
3. finish feedback credits a crash left half-done (servers without transactions);
4. archive or delete inactive conversation sessions;
5. summarise and delete action logs older than the episodic retention;
6. give the lease back.

Each step is idempotent on its own, so a run that fails half-way is finished by the next. A dry
run takes no lease and writes nothing: it counts what each step would touch, exactly as a run
started at that moment would report it (:mod:`~agent_memory.ops.dry_run`).

>>> maintenance = Maintenance(memories)                          # doctest: +SKIP
>>> report = await maintenance.run(agent_id="support-agent")    # LeaseHeldError if running
>>> print(report.summary())                                     # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from agent_memory._log import get_logger
from agent_memory._words import noun, plural
from agent_memory.checks import check_id
from agent_memory.errors import InvalidInputError
from agent_memory.memory.long_term.decay import DecayReport
from agent_memory.memory.system import MemorySystem
from agent_memory.ops.dry_run import count_run, empty_counts
from agent_memory.ops.lease import Lease
from agent_memory.stamps import utcnow

__all__ = ["STEPS", "Maintenance", "MaintenanceReport"]

logger = get_logger(__name__)

LEASE_NAME = "maintenance"
#: The steps a run reports progress for, in order.
STEPS = ("decay", "credits", "sessions", "actions")
#: Pending feedback credits finished per run (a crash leaves at most a few).
CREDIT_REPAIR_LIMIT = 1_000


@dataclass(frozen=True, slots=True)
class MaintenanceReport:
    """What a run did (a dry run: what it would do). Retention counts are zero when
    retention was skipped (``retention`` false)."""

    agent_id: str | None
    dry_run: bool
    retention: bool
    decay: DecayReport
    credits_repaired: int
    sessions_archived: int
    sessions_deleted: int
    messages_deleted: int
    actions_summarised: int
    actions_deleted: int
    #: Retention stopped at its batch limit with work left: run again.
    more: bool
    holder: str | None
    #: The holder of an expired lease this run took over (that run died).
    took_over: str | None
    seconds: float

    def summary(self) -> str:
        """One line for logs and cron mail."""
        scope = f"agent {self.agent_id}" if self.agent_id else "all agents"
        would = "would " if self.dry_run else ""
        decay = self.decay
        parts = [
            f"{'dry run, ' if self.dry_run else ''}{scope}, period {decay.period}",
            (
                f"{would}decay {plural(decay.eligible, 'memory', 'memories')}"
                if self.dry_run
                else f"decayed {decay.decayed} of {decay.eligible} eligible "
                f"{noun(decay.eligible, 'memory', 'memories')}"
            ),
        ]
        if self.retention:
            parts.append(
                f"sessions {would}archive {self.sessions_archived}, {would}delete "
                f"{self.sessions_deleted} ({plural(self.messages_deleted, 'message')})"
                if self.dry_run
                else f"sessions archived {self.sessions_archived}, deleted "
                f"{self.sessions_deleted} ({plural(self.messages_deleted, 'message')})"
            )
            parts.append(
                f"actions {would}summarise {self.actions_summarised}"
                if self.dry_run
                else f"actions summarised {self.actions_summarised}, deleted {self.actions_deleted}"
            )
            parts.append(
                f"credits would repair {self.credits_repaired}"
                if self.dry_run
                else f"credits repaired {self.credits_repaired}"
            )
        else:
            parts.append("retention skipped")
        if self.more:
            parts.append(
                "a run would leave retention work (batch limit): run again after it"
                if self.dry_run
                else "more retention work left: run again"
            )
        if self.took_over:
            parts.append(f"took over the lock of {self.took_over}")
        parts.append(f"{self.seconds:.2f} s")
        return "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (datetimes as ISO strings)."""
        data = asdict(self)
        data["decay"] = {
            key: value.isoformat() if isinstance(value, datetime) else value
            for key, value in data["decay"].items()
        }
        return data


class Maintenance:
    """The locked decay-and-retention run over a :class:`MemorySystem`'s stores and configs.

    ``lease_seconds`` is how long a crashed run blocks the next one; a live run renews its
    lease every third of it, so it only needs to exceed a stall (not a whole run). ``holder``
    names the runs in the lock document (default ``host:pid:random``); it is a label only,
    so two processes given the same ``holder`` still exclude each other.
    """

    def __init__(
        self,
        memories: MemorySystem,
        *,
        lease_seconds: float = 300.0,
        holder: str | None = None,
    ) -> None:
        self.memories = memories
        self.connection = memories.connection
        self.lease_seconds = lease_seconds
        self.holder = holder
        # Checked now, so a bad value fails before any run.
        Lease(self.connection, LEASE_NAME, ttl_seconds=lease_seconds, holder=holder)

    def lease(self) -> Lease:
        """A new lease object for one run (the same holder when one was given)."""
        return Lease(
            self.connection, LEASE_NAME, ttl_seconds=self.lease_seconds, holder=self.holder
        )

    async def run(
        self,
        *,
        agent_id: str | None = None,
        dry_run: bool = False,
        retention: bool = True,
        now: datetime | None = None,
        on_step: Callable[[str], None] | None = None,
    ) -> MaintenanceReport:
        """One run for ``agent_id`` (``None``: every agent). ``on_step(name)`` is called as
        each of :data:`STEPS` finishes (for a progress bar). Raises
        :class:`~agent_memory.ops.lease.LeaseHeldError` when another run holds the lock, before
        anything is written, and :class:`~agent_memory.ops.lease.LeaseLostError` when another
        run took the lock over while this one worked (it stalled past the lease)."""
        agent = None if agent_id is None else check_id(agent_id, "agent_id")
        if not isinstance(dry_run, bool) or not isinstance(retention, bool):
            raise InvalidInputError("dry_run and retention must be bools")
        moment = utcnow() if now is None else now
        if not isinstance(moment, datetime) or moment.tzinfo is None:
            raise InvalidInputError("now must be a timezone-aware datetime")
        started = time.perf_counter()
        step = on_step or (lambda name: None)
        if dry_run:
            counts = await count_run(
                self.memories,
                agent=agent,
                now=moment,
                retention=retention,
                credit_limit=CREDIT_REPAIR_LIMIT,
                step=step,
            )
            holder = took_over = None
        else:
            lease = self.lease()
            state = await lease.acquire()
            lease.start_renewing()
            try:
                counts = await self._work(agent, moment, retention, step, lease)
            except BaseException:
                await lease.release_quietly()  # the step's error is the one to report
                raise
            await lease.release()  # LeaseLostError: another run took over while we worked
            holder, took_over = state.holder, state.took_over
        report = MaintenanceReport(
            agent_id=agent,
            dry_run=dry_run,
            retention=retention,
            holder=holder,
            took_over=took_over,
            seconds=round(time.perf_counter() - started, 3),
            **counts,
        )
        logger.info(
            "maintenance_finished",
            agent_id=agent,
            dry_run=dry_run,
            period=report.decay.period,
            decayed=report.decay.decayed,
            eligible=report.decay.eligible,
            sessions_archived=report.sessions_archived,
            sessions_deleted=report.sessions_deleted,
            actions_deleted=report.actions_deleted,
            took_over=took_over,
            seconds=report.seconds,
        )
        return report

    async def _work(
        self,
        agent: str | None,
        now: datetime,
        retention: bool,
        step: Callable[[str], None],
        lease: Lease,
    ) -> dict[str, Any]:
        m = self.memories
        # The lease is confirmed after every step, the last included: a run that was taken
        # over stops before its next write, and one taken over during its last step fails
        # rather than report success (the other run may have worked alongside it).
        decay = await m.decay.run(agent_id=agent, now=now)
        step("decay")
        await lease.confirm()
        counts: dict[str, Any] = empty_counts(decay)
        if not retention:
            return counts
        counts["credits_repaired"] = await m.episodic.repair_pending_credits(
            agent_id=agent, limit=CREDIT_REPAIR_LIMIT
        )
        step("credits")
        await lease.confirm()
        sessions = await m.conversation.apply_retention(
            agent_id=agent, now=now, before_batch=lease.check
        )
        counts["sessions_archived"] = sessions["archived"]
        counts["sessions_deleted"] = sessions["sessions_deleted"]
        counts["messages_deleted"] = sessions["messages_deleted"]
        step("sessions")
        await lease.confirm()
        actions = await m.episodic.apply_retention(
            agent_id=agent, now=now, before_batch=lease.check
        )
        counts["actions_summarised"] = actions.summarised
        counts["actions_deleted"] = actions.deleted
        counts["more"] = actions.more
        step("actions")
        await lease.confirm()
        return counts

"""Importance decay of long-term memories nobody has used for a while.

A memory not accessed for ``inactive_days`` loses importance: ``max(floor, importance *
factor)``. Each memory carries the period it was last decayed in, and the update skips
memories already stamped with the current period, so running the job twice in a period (a
retried cron job, two overlapping runs, a run that crashed half-way and is run again) decays
every memory at most once. One ``update_many`` covers every tenant of an agent, or all
agents; each document is updated atomically, so many tenants need no loop or lock.

Defaults follow the blueprint's best practices: factor 0.95 for memories unused for 30 days,
floor 0.1, at most once per 30-day period.

Each run is recorded in ``decay_runs`` before it writes (``status`` ``started``) and finished
with its counts; each memory it decays names it (``decay_run``). A run the database lost
half-way therefore stays ``started``, and the decay it applied is still accounted for.

Round trips: 3 (record the run, update, finish the record); a dry run: 1 (count eligible).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from agent_memory._log import get_logger
from agent_memory._words import plural
from agent_memory.checks import check_id, check_number
from agent_memory.errors import InvalidInputError
from agent_memory.memory.long_term.trail import TRAIL_FIELD, trail_append
from agent_memory.mongo import _driver
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.connection import Connection
from agent_memory.mongo.search.snapshots import GENERATIONS, announce_writes
from agent_memory.stamps import new_id, utcnow

__all__ = ["DecayConfig", "DecayJob", "DecayReport"]

logger = get_logger(__name__)

RUNS_COLLECTION = "decay_runs"
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class DecayConfig:
    factor: float = 0.95
    inactive_days: float = 30.0
    floor: float = 0.1
    period_days: float = 30.0

    def __post_init__(self) -> None:
        check_number(self.factor, "decay factor", above=0, maximum=1)
        check_number(self.inactive_days, "decay inactive_days", minimum=0)
        check_number(self.floor, "decay floor", minimum=0, maximum=1)
        check_number(self.period_days, "decay period_days", above=0)

    def period(self, now: datetime) -> str:
        """The id of the period ``now`` falls in, e.g. ``2026-11-05/30d``."""
        length = timedelta(days=self.period_days)
        index = math.floor((now - _EPOCH) / length)
        start = _EPOCH + index * length
        return f"{start.date().isoformat()}/{self.period_days:g}d"


@dataclass(frozen=True, slots=True)
class DecayReport:
    run_id: str
    agent_id: str | None
    period: str
    eligible: int
    decayed: int
    dry_run: bool
    started_at: datetime
    finished_at: datetime

    def summary(self) -> str:
        scope = f"agent {self.agent_id}" if self.agent_id else "all agents"
        verb = "would decay" if self.dry_run else "decayed"
        count = self.eligible if self.dry_run else self.decayed
        return f"{scope}, period {self.period}: {verb} {plural(count, 'memory', 'memories')}"


class DecayJob:
    """Apply importance decay, idempotently per period.

    >>> report = await DecayJob(connection).run(agent_id="support-agent")   # doctest: +SKIP
    >>> report.decayed                                                       # doctest: +SKIP
    """

    def __init__(self, connection: Connection, *, config: DecayConfig | None = None) -> None:
        self.connection = connection
        self.config = config or DecayConfig()
        self.memories = connection.collection("memories")
        self.generations = connection.collection(GENERATIONS)
        self.runs = connection.collection(RUNS_COLLECTION)

    def _filter(self, agent_id: str | None, now: datetime, period: str) -> dict[str, Any]:
        cutoff = now - timedelta(days=self.config.inactive_days)
        where: dict[str, Any] = {
            "status": "active",
            # A date before the cutoff: the embedded engine also orders null before every
            # date, so a memory stored without the field would match ``$lt`` alone there.
            "last_accessed": {"$type": "date", "$lt": cutoff},
            "importance": {"$gt": self.config.floor},
            "decay_period": {"$ne": period},
        }
        if agent_id is not None:
            where["agent_id"] = agent_id
        return where

    async def run(
        self, *, agent_id: str | None = None, now: datetime | None = None, dry_run: bool = False
    ) -> DecayReport:
        """Decay one agent's memories (``agent_id``) or every agent's; returns the counts."""
        if agent_id is not None:
            check_id(agent_id, "agent_id")
        now = now or utcnow()
        if now.tzinfo is None:
            raise InvalidInputError("now must be timezone-aware")
        started = utcnow()
        period = self.config.period(now)
        where = self._filter(agent_id, now, period)
        run_id = new_id("decay")
        with translate_errors("applying memory decay"):
            if dry_run:
                eligible = await _driver.count(self.memories, where)
                decayed = 0
            else:
                eligible, decayed = await self._apply(run_id, agent_id, period, where, started, now)
        report = DecayReport(
            run_id=run_id,
            agent_id=agent_id,
            period=period,
            eligible=eligible,
            decayed=decayed,
            dry_run=dry_run,
            started_at=started,
            finished_at=utcnow(),
        )
        logger.info(
            "decay_applied",
            agent_id=agent_id,
            period=period,
            eligible=eligible,
            decayed=decayed,
            dry_run=dry_run,
        )
        return report

    async def _apply(
        self,
        run_id: str,
        agent_id: str | None,
        period: str,
        where: dict[str, Any],
        started: datetime,
        now: datetime,
    ) -> tuple[int, int]:
        """Record the run, decay, then record what it did: ``(eligible, decayed)``.

        The run is recorded before it writes and every memory it decays names it
        (``decay_run``), so no decay goes unaudited: a run cut short (the database went
        away) stays ``started``, and its memories still say which run decayed them. Each
        memory's importance trail gets a ``decayed`` entry at ``now``, in the same update."""
        await self.runs.insert_one(
            {
                "_id": run_id,
                "agent_id": agent_id,
                "period": period,
                "status": "started",
                "factor": self.config.factor,
                "inactive_days": self.config.inactive_days,
                "floor": self.config.floor,
                "started_at": started,
            }
        )
        decayed_importance = {
            "$max": [self.config.floor, {"$multiply": ["$importance", self.config.factor]}]
        }
        result = await self.memories.update_many(
            where,
            [
                {
                    "$set": {
                        "importance": decayed_importance,
                        # The same expression: within one $set "$importance" is the old value.
                        TRAIL_FIELD: trail_append(decayed_importance, now, "decayed"),
                        "decay_period": period,
                        "decay_run": run_id,
                    }
                }
            ],
        )
        eligible, decayed = result.matched_count, result.modified_count
        if decayed:
            await self._announce(run_id)
        await self.runs.update_one(
            {"_id": run_id},
            {
                "$set": {
                    "status": "finished",
                    "eligible": eligible,
                    "decayed": decayed,
                    "finished_at": utcnow(),
                }
            },
        )
        return eligible, decayed

    async def _announce(self, run_id: str) -> None:
        """Tell searches which tenants' memories this run changed (one aggregate, one bulk
        write): the plain tier keeps memories in memory and ranks by importance."""
        tenants = await _driver.aggregate(
            self.memories,
            [
                {"$match": {"decay_run": run_id}},
                {"$group": {"_id": {"agent_id": "$agent_id", "user_id": "$user_id"}}},
            ],
        )
        await announce_writes(
            self.generations,
            self.memories.name,
            [row["_id"] for row in tenants if isinstance(row.get("_id"), dict)],
        )

    async def runs_for(
        self, agent_id: str | None = None, *, limit: int = 20
    ) -> list[dict[str, Any]]:
        """The most recent recorded runs (audit trail)."""
        where = {} if agent_id is None else {"agent_id": check_id(agent_id, "agent_id")}
        with translate_errors("reading decay runs"):
            return await self.runs.find(where).sort([("started_at", -1)]).limit(limit).to_list(None)

"""Log retention ("keep 30 days, summarise older") and success rates over live and summarised
days.

Retention works per agent in batches of one UTC day's logs (at most ``retention_batch_size``):

1. *claim*: the oldest unclaimed logs before the cutoff get ``retention_batch: <id>``. From
   then on the batch is a fixed set; a log written later is never part of it.
2. *summarise*: the batch's logs are counted per action type into ``action_aggregates``
   (one document per agent, action type and day: counts by outcome, rating sum and count,
   duration sum and count, token sum). Each upsert adds the batch id to the summary's
   ``batches`` in the same update and only matches a summary that does not list it yet, so
   writing a batch twice counts it once.
3. *delete* the batch's logs.

A crash anywhere is finished by the next run, which first completes every claimed batch (the
summaries it already wrote are skipped by step 2's guard). Nothing is counted twice or lost.

:meth:`ActionRetention.success_rates` adds summaries to live logs. A claimed log whose batch a
summary already lists is skipped, so the counts are exact at every point of a run, crashed or
not. Summaries hold no user data (counts per agent, type and day), so ``forget_user`` leaves
them; a summarised day counts whole when it starts at or after the window's start rounded
down to midnight UTC.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.checks import is_number
from agent_memory.errors import ConflictError
from agent_memory.memory.episodic.records import OUTCOMES, EpisodicConfig, day_end, day_start
from agent_memory.mongo import _driver
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.batches import update_in
from agent_memory.stamps import new_id

__all__ = ["ActionRetention", "RetentionReport", "SuccessRates", "Tally", "aggregate_id"]

logger = get_logger(__name__)


@dataclass(slots=True)
class Tally:
    """Counts and sums over a set of actions (live or summarised)."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    rating_sum: float = 0.0
    rating_count: int = 0
    duration_ms_sum: float = 0.0
    duration_count: int = 0
    tokens_sum: int = 0

    def add_action(self, doc: Mapping[str, Any]) -> None:
        outcome = doc.get("outcome")
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        rating = (doc.get("feedback") or {}).get("rating")
        if is_number(rating):
            self.rating_sum += rating
            self.rating_count += 1
        duration = (doc.get("action") or {}).get("duration_ms")
        if is_number(duration):
            self.duration_ms_sum += duration
            self.duration_count += 1
        tokens = (doc.get("metadata") or {}).get("tokens")
        if is_number(tokens):
            self.tokens_sum += int(tokens)

    def merge(self, other: Mapping[str, Any], counts: Mapping[str, int]) -> None:
        for outcome, count in counts.items():
            self.counts[outcome] = self.counts.get(outcome, 0) + int(count)
        self.rating_sum += float(other.get("rating_sum", 0))
        self.rating_count += int(other.get("rating_count", 0))
        self.duration_ms_sum += float(other.get("duration_ms_sum", 0))
        self.duration_count += int(other.get("duration_count", 0))
        self.tokens_sum += int(other.get("tokens_sum", 0))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def increments(self) -> dict[str, Any]:
        """This tally as the ``$inc`` of a summary document."""
        inc: dict[str, Any] = {f"counts.{o}": n for o, n in self.counts.items()}
        inc.update(
            total=self.total,
            rating_sum=self.rating_sum,
            rating_count=self.rating_count,
            duration_ms_sum=self.duration_ms_sum,
            duration_count=self.duration_count,
            tokens_sum=self.tokens_sum,
        )
        return inc


@dataclass(frozen=True, slots=True)
class SuccessRates:
    """How an agent's actions went over a window, live logs and summarised days together."""

    agent_id: str
    action_type: str | None
    since: datetime
    until: datetime
    total: int
    counts: dict[str, int]
    success_rate: float
    failure_rate: float
    partial_rate: float
    rated: int
    average_rating: float | None
    average_duration_ms: float | None
    tokens: int
    #: How many of ``total`` came from summaries of deleted logs.
    summarised: int

    @classmethod
    def from_tally(
        cls,
        tally: Tally,
        *,
        agent_id: str,
        action_type: str | None,
        since: datetime,
        until: datetime,
        summarised: int,
    ) -> SuccessRates:
        total = tally.total

        def rate(outcome: str) -> float:
            return tally.counts.get(outcome, 0) / total if total else 0.0

        return cls(
            agent_id=agent_id,
            action_type=action_type,
            since=since,
            until=until,
            total=total,
            counts=dict(tally.counts),
            success_rate=rate("success"),
            failure_rate=rate("failure"),
            partial_rate=rate("partial"),
            rated=tally.rating_count,
            average_rating=(tally.rating_sum / tally.rating_count if tally.rating_count else None),
            average_duration_ms=(
                tally.duration_ms_sum / tally.duration_count if tally.duration_count else None
            ),
            tokens=tally.tokens_sum,
            summarised=summarised,
        )


@dataclass(frozen=True, slots=True)
class RetentionReport:
    """What one ``apply_retention`` run did. ``more`` is true when it stopped at the batch
    limit with work left: run it again."""

    batches: int
    resumed: int
    summarised: int
    deleted: int
    summaries_written: int
    more: bool


def aggregate_id(agent_id: str, action_type: str, day: datetime) -> str:
    """The summary's ``_id``: derived from its key, so concurrent upserts of the same
    summary collide on ``_id`` even before the unique index exists."""
    key = json.dumps([agent_id, action_type, day.date().isoformat()], ensure_ascii=False)
    return "agg_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]


_SUMMARY_FIELDS = {
    "agent_id": 1,
    "action_type": 1,
    "timestamp": 1,
    "outcome": 1,
    "feedback.rating": 1,
    "action.duration_ms": 1,
    "metadata.tokens": 1,
}


class ActionRetention:
    """Summarises and deletes old logs; computes success rates (see the module docstring)."""

    def __init__(self, logs: Any, aggregates: Any, config: EpisodicConfig) -> None:
        self._logs = logs
        self._aggregates = aggregates
        self._config = config

    # --- retention --------------------------------------------------------------------------

    async def apply(
        self,
        *,
        agent_id: str | None,
        now: datetime,
        before_batch: Callable[[], object] | None = None,
    ) -> RetentionReport:
        cutoff = day_start(now - timedelta(days=self._config.retention_days))
        budget = self._config.retention_max_batches
        batches = resumed = summarised = deleted = written = 0
        more = False
        with translate_errors("applying log retention"):
            agents = [agent_id] if agent_id else sorted(await self._logs.distinct("agent_id"))
            for agent in agents:
                claimed = await self._logs.distinct(
                    "retention_batch",
                    {"agent_id": {"$eq": agent}, "retention_batch": {"$exists": True}},
                )
                queue = [(batch, True) for batch in sorted(claimed)]
                while True:
                    if batches >= budget:
                        more = True
                        break
                    if before_batch is not None:
                        before_batch()
                    if queue:
                        batch, is_resumed = queue.pop(0)
                    else:
                        batch, is_resumed = await self._claim(agent, cutoff), False
                        if batch is None:
                            break
                    counted, removed, upserts = await self._summarise(agent, batch, now)
                    batches += 1
                    resumed += is_resumed
                    summarised += counted
                    deleted += removed
                    written += upserts
                if more:
                    break
        report = RetentionReport(batches, resumed, summarised, deleted, written, more)
        logger.info(
            "retention_applied",
            agent_id=agent_id,
            cutoff=cutoff.isoformat(),
            batches=batches,
            resumed=resumed,
            summarised=summarised,
            deleted=deleted,
            more=more,
        )
        return report

    async def _claim(self, agent: str, cutoff: datetime) -> str | None:
        """Mark the oldest unclaimed logs of one day before ``cutoff`` as a new batch."""
        rows = (
            await self._logs.find(
                {
                    "agent_id": {"$eq": agent},
                    "timestamp": {"$lt": cutoff},
                    "retention_batch": {"$exists": False},
                },
                {"timestamp": 1},
            )
            .sort("timestamp", 1)
            .limit(self._config.retention_batch_size)
            .to_list(None)
        )
        if not rows:
            return None
        end = day_end(rows[0]["timestamp"])
        ids = [row["_id"] for row in rows if row["timestamp"] < end]
        batch = new_id("ret")
        await update_in(
            self._logs,
            ids,
            lambda part: {"_id": {"$in": part}, "retention_batch": {"$exists": False}},
            {"$set": {"retention_batch": batch}},
        )
        return batch

    async def _summarise(self, agent: str, batch: str, now: datetime) -> tuple[int, int, int]:
        """Write the summaries of a claimed batch (once), then delete its logs."""
        docs = await self._logs.find(
            {"agent_id": {"$eq": agent}, "retention_batch": {"$eq": batch}}, _SUMMARY_FIELDS
        ).to_list(None)
        tallies: dict[tuple[str, datetime], Tally] = defaultdict(Tally)
        for doc in docs:
            tallies[(doc["action_type"], day_start(doc["timestamp"]))].add_action(doc)
        written = 0
        for (action_type, day), tally in sorted(tallies.items()):
            written += await self._write_summary(agent, action_type, day, batch, tally, now)
        removed = await self._delete_batch(agent, batch)
        return len(docs), removed, written

    async def _write_summary(
        self, agent: str, action_type: str, day: datetime, batch: str, tally: Tally, now: datetime
    ) -> int:
        key = aggregate_id(agent, action_type, day)
        for _ in range(3):
            try:
                await self._aggregates.update_one(
                    {"_id": key, "batches": {"$ne": batch}},
                    {
                        "$inc": tally.increments(),
                        "$push": {"batches": batch},
                        "$set": {"updated_at": now},
                        "$setOnInsert": {"agent_id": agent, "action_type": action_type, "day": day},
                    },
                    upsert=True,
                )
                return 1
            except pm.DuplicateKeyError:
                # Either the summary already lists this batch (a rerun: nothing to do), or a
                # concurrent run created the summary first (try again: it now matches).
                if await self._aggregates.find_one({"_id": key, "batches": batch}, {"_id": 1}):
                    return 0
        raise ConflictError(f"could not write the summary {key} of batch {batch}; run again")

    async def _delete_batch(self, agent: str, batch: str) -> int:
        result = await self._logs.delete_many(
            {"agent_id": {"$eq": agent}, "retention_batch": {"$eq": batch}}
        )
        return result.deleted_count

    # --- success rates ----------------------------------------------------------------------

    async def success_rates(
        self, agent_id: str, action_type: str | None, *, since: datetime, until: datetime
    ) -> SuccessRates:
        scope: dict[str, Any] = {"agent_id": {"$eq": agent_id}}
        if action_type is not None:
            scope["action_type"] = {"$eq": action_type}
        live_pipeline = [
            {"$match": {**scope, "timestamp": {"$gte": since, "$lt": until}}},
            {
                "$group": {
                    "_id": {
                        "outcome": "$outcome",
                        "action_type": "$action_type",
                        "batch": "$retention_batch",
                    },
                    "n": {"$sum": 1},
                    "rating_sum": {"$sum": "$feedback.rating"},
                    "rating_count": {"$sum": _counts_if_number("$feedback.rating")},
                    "duration_ms_sum": {"$sum": "$action.duration_ms"},
                    "duration_count": {"$sum": _counts_if_number("$action.duration_ms")},
                    "tokens_sum": {"$sum": "$metadata.tokens"},
                }
            },
        ]
        with translate_errors("computing success rates"):
            live, summaries = await asyncio.gather(
                _driver.aggregate(self._logs, live_pipeline),
                self._aggregates.find(
                    {**scope, "day": {"$gte": day_start(since), "$lt": until}}
                ).to_list(None),
            )
        tally = Tally()
        applied = set()
        summarised = 0
        for summary in summaries:
            tally.merge(summary, summary.get("counts") or {})
            summarised += int(summary.get("total", 0))
            applied.update((summary["action_type"], batch) for batch in summary.get("batches", []))
        for group in live:
            key = group["_id"]
            if (key.get("action_type"), key.get("batch")) in applied:
                continue  # claimed by retention and already in a summary: counted there
            tally.merge(group, {key.get("outcome"): group["n"]})
        return SuccessRates.from_tally(
            tally,
            agent_id=agent_id,
            action_type=action_type,
            since=since,
            until=until,
            summarised=summarised,
        )


def _counts_if_number(path: str) -> dict[str, Any]:
    return {"$cond": [{"$isNumber": path}, 1, 0]}

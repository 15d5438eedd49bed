"""Success rates from each UTC hour's counts, kept per agent, instead of every action again.

An agent's success rates over the last 30 days counted every action of those days at every
read: 1.1 s at 10,000 actions on the embedded server, ten times that at 100,000. Here each
hour's counts (per action type: outcomes, rating, duration and token sums) are counted from
that hour's logs once and kept in ``action_hours``, one document per agent and UTC day, and a
read adds up at most 31 such documents. An hour is counted from its logs again only when a
write touched it since.

Each hour of the document (``hours.h00`` to ``hours.h23``) holds ``pending`` (writes under way), ``version`` (writes done) and,
once counted, ``t`` (per action type: outcomes, rating, duration and token sums) with
``counted``, the version it was counted at. Every write that
changes what an hour counts (a logged action, a rating, an erasure) goes:

1. ``pending + 1`` on the hour, sent before the write and alongside it
   (:meth:`HourTallies.write`: the caller waits one round trip for both);
2. the write itself;
3. once both landed: ``pending - 1, version + 1`` (not awaited; finished before the
   connection closes).

A read takes an hour as kept when its ``pending`` is 0 and its tally was counted at its
current version; every other hour in the window is counted from its logs (one aggregate per
day, through the ``agent_hour`` index), and that count is kept only if the hour is still as
the read found it (a compare-and-set on ``pending`` and ``version``): a write that
began or ended meanwhile is never hidden by a count made before it (a count kept while the
mark had not landed yet is undone by the release, which follows the write). A process that
dies between 1 and 3 leaves ``pending`` above 0, as does a mark that failed and a release
that did not: that hour is then counted from its logs at every read (right, at the cost of
one hour's logs). The two hours at the window's ends are counted
from their logs with the window's exact times, so a window need not start on the hour.

Counts hold no user data (per agent, hour and action type). Erasing a user's logs makes every
hour of the agent count again (:meth:`HourTallies.erased`). Logs need their ``hour``
(``"YYYY-MM-DDTHH"``, UTC); ``agent-memory indexes setup`` gives it to logs written before it
existed (``mongo/migrations.py``).
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Awaitable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from pymongo import UpdateOne
from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.memory.background import BackgroundWrites
from agent_memory.memory.episodic.records import OUTCOMES
from agent_memory.memory.episodic.retention import Tally
from agent_memory.mongo import _driver

__all__ = ["HOURS", "HourTallies", "hour_of"]

logger = get_logger(__name__)

T = TypeVar("T")

#: The collection of kept hourly counts (its name gets the connection's prefix).
HOURS = "action_hours"
_HOUR = timedelta(hours=1)
_GROUP_SUMS = {
    "n": {"$sum": 1},
    "rating_sum": {"$sum": "$feedback.rating"},
    "rating_count": {"$sum": {"$cond": [{"$isNumber": "$feedback.rating"}, 1, 0]}},
    "duration_ms_sum": {"$sum": "$action.duration_ms"},
    "duration_count": {"$sum": {"$cond": [{"$isNumber": "$action.duration_ms"}, 1, 0]}},
    "tokens_sum": {"$sum": "$metadata.tokens"},
}
_SUMS = ("rating_sum", "rating_count", "duration_ms_sum", "duration_count", "tokens_sum")


def hour_of(moment: datetime) -> str:
    """The UTC hour ``moment`` falls in, as logs store it: ``"2026-05-14T09"``."""
    moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment.strftime("%Y-%m-%dT%H")


def _start(hour: str) -> datetime:
    return datetime.strptime(hour, "%Y-%m-%dT%H").replace(tzinfo=UTC)


def _day_id(agent_id: str, day: str) -> str:
    # A string _id, read by the primary key (an embedded document would not be on mongoeco).
    return json.dumps([agent_id, day], ensure_ascii=False, separators=(",", ":"))


class HourTallies:
    """The kept hourly counts of every agent (see the module docstring)."""

    def __init__(self, logs: Any, hours: Any, connection: Any) -> None:
        self._logs = logs
        self._hours = hours
        self._background = BackgroundWrites(connection)

    # --- writers ----------------------------------------------------------------------------

    async def write(self, agent_id: str, hours: Iterable[str], operation: Awaitable[T]) -> T:
        """Run ``operation``, a write to ``agent_id``'s logs of ``hours``, with the hours
        marked as being written (sent first, alongside it: one round trip) and released
        after it, also when it failed (what did land must be counted); returns its result.

        The release, which moves the hours' version on, comes after the write has landed,
        so a count made before it is never kept past it; the mark keeps the hours counted
        from their logs should this process die before the release."""
        by_day = _by_day(hours)
        try:
            marked, result = await asyncio.gather(
                self._mark(agent_id, by_day), operation, return_exceptions=True
            )
        finally:
            self._background.schedule(self._release(agent_id, by_day), "action hour counts")
        for outcome in (result, marked):
            if isinstance(outcome, BaseException):
                raise outcome
        return result

    async def _mark(self, agent_id: str, by_day: Mapping[str, list[str]]) -> None:
        for day, hours in by_day.items():
            update = {
                "$inc": {f"hours.{hh}.pending": 1 for hh in hours},
                "$setOnInsert": {"agent_id": agent_id, "day": day},
            }
            try:
                await self._hours.update_one({"_id": _day_id(agent_id, day)}, update, upsert=True)
            except pm.DuplicateKeyError:  # created by a concurrent writer: it exists now
                update.pop("$setOnInsert")
                await self._hours.update_one({"_id": _day_id(agent_id, day)}, update)

    async def _release(self, agent_id: str, by_day: Mapping[str, list[str]]) -> None:
        for day, hours in by_day.items():
            change = {f"hours.{hh}.pending": -1 for hh in hours}
            change.update({f"hours.{hh}.version": 1 for hh in hours})
            await self._hours.update_one({"_id": _day_id(agent_id, day)}, {"$inc": change})

    async def erased(self, agent_id: str) -> None:
        """After some of ``agent_id``'s logs were deleted (any hours): every kept hour of the
        agent is counted again at its next read."""
        every = {f"hours.h{hh:02d}.version": 1 for hh in range(24)}
        await self._hours.update_many({"agent_id": {"$eq": agent_id}}, {"$inc": every})

    async def drain(self) -> None:
        await self._background.drain()

    # --- readers ----------------------------------------------------------------------------

    async def tally(
        self, agent_id: str, action_type: str | None, *, since: datetime, until: datetime
    ) -> Tally:
        """The counts of ``agent_id``'s logs timed in ``[since, until)`` (of ``action_type``
        only, unless ``None``)."""
        total = Tally()
        for name, tally in (await self.tallies(agent_id, since=since, until=until)).items():
            if action_type is None or name == action_type:
                total.merge(_sums(tally), tally.counts)
        return total

    async def tallies(self, agent_id: str, *, since: datetime, until: datetime) -> dict[str, Tally]:
        """The counts of ``agent_id``'s logs timed in ``[since, until)``, per action type."""
        totals: dict[str, Tally] = defaultdict(Tally)
        if until <= since:
            return {}
        first, last = hour_of(since), hour_of(until - timedelta(microseconds=1))
        hours, hour = [], first
        while hour <= last:
            hours.append(hour)
            hour = hour_of(_start(hour) + _HOUR)
        edges = [h for h in {first, last} if _start(h) < since or _start(h) + _HOUR > until]
        inner = [h for h in hours if h not in edges]
        days = sorted({h[:10] for h in inner})
        kept: dict[str, Any] = {}
        if days:
            rows = await self._hours.find(
                {"_id": {"$in": [_day_id(agent_id, day) for day in days]}}
            ).to_list(None)
            kept = {row.get("day"): row.get("hours") or {} for row in rows}
        seen: dict[str, Mapping[str, Any] | None] = {}
        stale: list[str] = []
        for hour in inner:
            entry = kept.get(hour[:10], {}).get(_key(hour))
            seen[hour] = entry
            if (
                isinstance(entry, Mapping)
                and not entry.get("pending")
                and entry.get("counted") == entry.get("version", 0)
                and _valid(entry.get("t"))
            ):
                _add(totals, entry["t"])
            else:
                stale.append(hour)
        counted, edge_rows = await asyncio.gather(
            self._count(agent_id, stale, None, None),
            self._count(agent_id, edges, since, until),
        )
        for hour in stale:
            _add(totals, counted.get(hour, []))
        for hour in edges:
            _add(totals, edge_rows.get(hour, []))
        await self._keep(agent_id, {h: counted.get(h, []) for h in stale}, seen)
        logger.debug(
            "action_hours_read",
            agent_id=agent_id,
            hours=len(hours),
            counted=len(stale) + len(edges),
        )
        return dict(totals)

    async def _count(
        self, agent_id: str, hours: list[str], since: datetime | None, until: datetime | None
    ) -> dict[str, list[list[Any]]]:
        """Each of ``hours`` counted from its logs (within ``[since, until)`` when given), per
        action type: ``[type, success, failure, partial, rating_sum, rating_count,
        duration_ms_sum, duration_count, tokens_sum]`` (the form kept, compact: a read
        decodes up to 744 hours of them)."""
        if not hours:
            return {}
        # A day's hours per aggregate: a first read of a long history is not one $group over
        # every log of the window (the embedded engine refuses a $group of more than 50,000
        # documents unless it may spill to disk, which it is also allowed here).
        parts = await asyncio.gather(
            *(
                self._count_part(agent_id, part, since, until)
                for part in _by_day(hours, keys=False).values()
            )
        )
        per_hour: dict[str, dict[str, list[Any]]] = defaultdict(dict)
        for row in (row for rows in parts for row in rows):
            key = row["_id"]
            entry = per_hour[key.get("hour")].setdefault(
                key.get("type"), [key.get("type"), *[0] * (len(OUTCOMES) + len(_SUMS))]
            )
            outcome = key.get("outcome")
            if outcome in OUTCOMES:  # the only ones log_action stores
                entry[1 + OUTCOMES.index(outcome)] += int(row["n"])
            for index, name in enumerate(_SUMS, start=1 + len(OUTCOMES)):
                entry[index] += row.get(name) or 0
        return {hour: list(types.values()) for hour, types in per_hour.items()}

    async def _count_part(
        self, agent_id: str, hours: list[str], since: datetime | None, until: datetime | None
    ) -> list[dict[str, Any]]:
        match: dict[str, Any] = {"agent_id": {"$eq": agent_id}, "hour": {"$in": hours}}
        if since is not None and until is not None:
            match["timestamp"] = {"$gte": since, "$lt": until}
        return await _driver.aggregate(
            self._logs,
            [
                {"$match": match},
                {
                    "$group": {
                        "_id": {"hour": "$hour", "type": "$action_type", "outcome": "$outcome"},
                        **_GROUP_SUMS,
                    }
                },
            ],
            allowDiskUse=True,
        )

    async def _keep(
        self,
        agent_id: str,
        counts: Mapping[str, list[list[Any]]],
        seen: Mapping[str, Mapping[str, Any] | None],
    ) -> None:
        """Keep each hour's new count if the hour is still as it was read (and no write was
        under way then). The hours of a day go in one update, which keeps all or none of
        them; those of the newest day, which writes keep changing, one update each (one
        command in all)."""
        per_day: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
        for hour, tally in sorted(counts.items()):
            entry, hh = seen.get(hour), _key(hour)
            if isinstance(entry, Mapping) and entry.get("pending"):
                continue  # a write under way: its result may or may not have been counted
            version = entry.get("version", 0) if isinstance(entry, Mapping) else 0
            where: dict[str, Any] = {}
            if isinstance(entry, Mapping):
                for name in ("pending", "version"):
                    where[f"hours.{hh}.{name}"] = (
                        entry[name] if name in entry else {"$exists": False}
                    )
            else:
                where[f"hours.{hh}"] = {"$exists": False}
            fields = {f"hours.{hh}.t": tally, f"hours.{hh}.counted": version}
            if not isinstance(entry, Mapping) or "version" not in entry:
                fields[f"hours.{hh}.version"] = 0
            per_day[hour[:10]].append((where, fields))
        newest = max(per_day, default=None)
        operations = []
        for day, hours in per_day.items():
            for part in [[h] for h in hours] if day == newest else [hours]:
                where = {"_id": _day_id(agent_id, day)}
                fields = {}
                for condition, values in part:
                    where.update(condition)
                    fields.update(values)
                operations.append(
                    UpdateOne(
                        where,
                        {"$set": fields, "$setOnInsert": {"agent_id": agent_id, "day": day}},
                        upsert=True,
                    )
                )
        if not operations:
            return
        try:
            await self._hours.bulk_write(operations, ordered=False)
        except pm.BulkWriteError as exc:
            # An hour that changed since it was read no longer matches, and its upsert
            # collides with the day's document: that count is not kept, as intended.
            others = [e for e in exc.details.get("writeErrors", []) if e.get("code") != 11000]
            if others:
                raise


def _key(hour: str) -> str:
    """The field of ``hour`` in its day's document: ``"h09"`` (a key of digits alone would
    read as an array position in a path)."""
    return "h" + hour[11:]


def _by_day(hours: Iterable[str], *, keys: bool = True) -> dict[str, list[str]]:
    """``hours`` per day: as their fields in the day's document (``keys``), or as they are."""
    by_day: dict[str, list[str]] = defaultdict(list)
    for hour in sorted(set(hours)):
        by_day[hour[:10]].append(_key(hour) if keys else hour)
    return dict(by_day)


_WIDTH = 1 + len(OUTCOMES) + len(_SUMS)


def _valid(entries: Any) -> bool:
    """Whether ``entries`` are kept counts of the form :meth:`HourTallies._count` makes (any
    other is counted again)."""
    return isinstance(entries, list) and all(
        isinstance(entry, list) and len(entry) == _WIDTH and isinstance(entry[0], str)
        for entry in entries
    )


def _add(totals: dict[str, Tally], entries: Iterable[list[Any]]) -> None:
    for entry in entries:
        counts = dict(zip(OUTCOMES, entry[1 : 1 + len(OUTCOMES)], strict=True))
        totals[entry[0]].merge(dict(zip(_SUMS, entry[1 + len(OUTCOMES) :], strict=True)), counts)


def _sums(tally: Tally) -> dict[str, Any]:
    return {name: getattr(tally, name) for name in _SUMS}

"""The filters, updates and pipelines conversation memory sends, built in one place.

Every filter that touches one tenant's data starts from :func:`owned` (a session) or
:func:`scope` (a session's messages), so ``agent_id``, ``user_id`` and the session id are in
each of them; caller values only ever appear as plain equality values, never inside ``$expr``
(where a string starting with ``$`` would be read as a field path).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from agent_memory.stamps import new_id
from agent_memory.tenancy import Tenant

__all__ = [
    "activity_update",
    "after_summary_lookup",
    "clear_update",
    "new_session_fields",
    "newest_floor",
    "newest_lookup",
    "owned",
    "owners",
    "scope",
    "session_scopes",
    "standalone",
    "stale_sessions",
    "summary_guard",
    "summary_update",
]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_AFTER_SUMMARY = {"$match": {"$expr": {"$gt": ["$seq", "$$through"]}}}
#: Turns a session remembers (their time and message count, newest kept) so that a read of its
#: newest messages can bound its query below (:func:`newest_floor`).
RECENT_TURNS = 256


def owned(tenant: Tenant, session_id: str) -> dict[str, Any]:
    """The tenant's session ``session_id`` (ids are per tenant: another tenant may hold the
    same id for a session of its own)."""
    return {**tenant.filter(), "session_id": session_id}


def scope(tenant: Tenant, session_id: str) -> dict[str, Any]:
    """The messages of the tenant's session ``session_id``."""
    return {**tenant.filter(), "session_id": session_id}


def newest_lookup(
    messages: str, tenant: Tenant, session_id: str, count: int, *, into: str
) -> dict[str, Any]:
    """A ``$lookup`` of the session's newest ``count`` messages, newest first."""
    pipeline = [{"$match": scope(tenant, session_id)}, {"$sort": {"seq": -1}}, {"$limit": count}]
    return {"$lookup": {"from": messages, "pipeline": pipeline, "as": into}}


def after_summary_lookup(
    messages: str, tenant: Tenant, session_id: str, tail: list[dict[str, Any]], *, into: str
) -> dict[str, Any]:
    """A ``$lookup`` of the messages newer than the session's ``summary_through``, then
    ``tail`` (sort, limit, count)."""
    pipeline = [
        {"$match": scope(tenant, session_id)},
        # A null or missing summary_through sorts below every string: then all messages.
        _AFTER_SUMMARY,
        *tail,
    ]
    return {
        "$lookup": {
            "from": messages,
            "let": {"through": "$summary_through"},
            "pipeline": pipeline,
            "as": into,
        }
    }


def standalone(
    lookup: dict[str, Any], through: str | None, recent: Any = None
) -> list[dict[str, Any]]:
    """The pipeline of ``lookup`` (made by :func:`newest_lookup` or
    :func:`after_summary_lookup`) to run on the messages alone, for a session whose
    ``summary_through`` is ``through``: the same messages, without the join.

    With the session's ``recent`` turns (its ``recent_turns``), a newest-first lookup also
    matches only messages from :func:`newest_floor` on: the same messages, from a query that
    does not match the whole session (the embedded engine sorts every match)."""
    pipeline = []
    for stage in lookup["$lookup"]["pipeline"]:
        if stage == _AFTER_SUMMARY:
            if through is not None:  # null sorts below every seq: then all of them
                pipeline.append({"$match": {"seq": {"$gt": through}}})
            continue
        pipeline.append(stage)
    floor = newest_floor(recent, _newest_count(pipeline))
    if floor is not None:
        pipeline[0] = {"$match": {**pipeline[0]["$match"], "seq": {"$gte": floor}}}
    return pipeline


def _newest_count(pipeline: list[dict[str, Any]]) -> int | None:
    """How many messages a newest-first pipeline (match, sort by seq descending, limit) reads;
    ``None`` for any other pipeline."""
    if len(pipeline) != 3 or [next(iter(stage)) for stage in pipeline] != [
        "$match",
        "$sort",
        "$limit",
    ]:
        return None
    if pipeline[1]["$sort"] != {"seq": -1} or "seq" in pipeline[0]["$match"]:
        return None
    return pipeline[2]["$limit"]


def newest_floor(recent: Any, count: int | None) -> str | None:
    """A ``seq`` at or below the ``count``-th newest message of a session whose recent turns
    are ``recent`` (``[{"at": <turn time>, "n": <messages>}, ...]``, as
    :func:`activity_update` keeps them), or ``None`` when they do not account for ``count``
    messages (a session older than them, or cleared since).

    A turn's messages have keys that start with its time in epoch milliseconds (13 digits,
    :class:`~agent_memory.memory.conversation.records.TurnClock`), so every message of the
    newest turns that hold ``count`` messages has a key at or above the oldest of their
    times: at least ``count`` messages do, hence the newest ``count`` all do. Turns recorded
    in any order, late or twice only lower the floor; it is never above a message it should
    include while the turns it counts exist (a clear empties the list with the messages)."""
    if count is None or count < 1 or not isinstance(recent, list):
        return None
    turns = [
        turn
        for turn in recent
        if isinstance(turn, dict)
        and isinstance(turn.get("at"), datetime)
        and isinstance(turn.get("n"), int)
        and turn["n"] > 0
    ]
    turns.sort(key=lambda turn: turn["at"], reverse=True)
    held = 0
    for turn in turns:
        held += turn["n"]
        if held >= count:
            oldest = turn["at"]
            if oldest.tzinfo is None:  # BSON dates come back naive unless tz_aware
                oldest = oldest.replace(tzinfo=UTC)
            return f"{(oldest - _EPOCH) // timedelta(milliseconds=1):013d}"
    return None


def new_session_fields(metadata: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A new session's fields, beside ``agent_id``, ``user_id`` and ``session_id``."""
    return {
        "_id": new_id("ses"),
        "status": "active",
        "metadata": metadata,
        "summary": "",
        "summary_through": None,
        "summary_version": 0,
        "message_count": 0,
        "created_at": now,
        "updated_at": now,
        "last_active_at": now,
    }


def activity_update(count: int, at: datetime) -> dict[str, Any]:
    """Record a turn of ``count`` messages at ``at``: creates a missing session (with the
    upsert), un-archives an archived one."""
    return {
        "$setOnInsert": {
            "_id": new_id("ses"),
            "metadata": {},
            "summary": "",
            "summary_through": None,
            "summary_version": 0,
            "created_at": at,
        },
        "$set": {"status": "active"},
        # $max: activity writes that are not awaited may land out of order.
        "$max": {"last_active_at": at, "updated_at": at},
        "$inc": {"message_count": count},
        # The turn's time and size, for reads of the newest messages (newest_floor).
        "$push": {"recent_turns": {"$each": [{"at": at, "n": count}], "$slice": -RECENT_TURNS}},
    }


def summary_guard(
    tenant: Tenant, session_id: str, through: str | None, version: int
) -> dict[str, Any]:
    """The session as a refresh read it: no other summary stored and no clear since."""
    return {**owned(tenant, session_id), "summary_through": through, "summary_version": version}


def summary_update(text: str, through: str, now: datetime) -> dict[str, Any]:
    return {
        "$set": {"summary": text, "summary_through": through, "summarised_at": now},
        "$inc": {"summary_version": 1},
        "$max": {"updated_at": now},
    }


def clear_update(now: datetime) -> dict[str, Any]:
    return {
        "$set": {"summary": "", "summary_through": None, "message_count": 0, "recent_turns": []},
        # A refresh that read the summary before the clear must not store it after.
        "$inc": {"summary_version": 1},
        "$max": {"updated_at": now},
    }


def stale_sessions(*, archive: bool, cutoff: datetime, agent_id: str | None) -> dict[str, Any]:
    """Sessions retention acts on: inactive since before ``cutoff`` (active ones when
    archiving; active and archived ones when deleting). A session without a date of last
    activity is none of them (the embedded engine orders null before every date)."""
    query: dict[str, Any] = {} if agent_id is None else {"agent_id": agent_id}
    query["status"] = {"$in": ["active"] if archive else ["active", "archived"]}
    query["last_active_at"] = {"$type": "date", "$lt": cutoff}
    return query


def owners(found: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each found session by ``_id`` and its tenant (for an ``$or``)."""
    return [{"_id": s["_id"], "agent_id": s["agent_id"], "user_id": s["user_id"]} for s in found]


def session_scopes(found: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages of each found session, with its tenant (for an ``$or``)."""
    return [
        {"agent_id": s["agent_id"], "user_id": s["user_id"], "session_id": s["session_id"]}
        for s in found
    ]

"""A memory's importance over time: a short, bounded trail of what changed it and when.

Every memory document carries ``importance_trail``, oldest first: one entry per change of its
importance, ``{"at": datetime, "importance": float, "why": reason}``, where ``why`` is
``stored`` (the importance it was stored with), ``reinforced`` (said again), ``decayed`` (the
decay job) or ``edited`` (changed by hand). Only the last :data:`TRAIL_LENGTH` entries are
kept: every write that appends one also drops the oldest beyond that, in the same update, so
the array never grows without bound (DESIGN §4) and a chart of a memory's importance reads one
document.

Writers use these helpers rather than spelling the update themselves:

- :func:`trail_start`: the trail of a new document (its ``stored`` entry);
- :func:`trail_append`: the value of ``importance_trail`` in an update pipeline's ``$set``
  (``$slice`` of ``$concatArrays``: the entry appended, the last :data:`TRAIL_LENGTH` kept);
- :func:`trail_push`: the same for a classic update, under ``$push``.

>>> entry = trail_append(0.7, now, "edited")                             # doctest: +SKIP
>>> await memories.update_one(where, [{"$set": {"importance": 0.7, TRAIL_FIELD: entry}}])

Readers get :class:`TrailPoint` tuples from :func:`parse_trail` (``Memory.importance_trail``),
which skips entries it cannot read. Searches never read the trail (it is left out of what they
load, see ``LongTermMemory``), so memories returned by a search carry an empty one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from agent_memory.checks import check_importance, is_number
from agent_memory.errors import InvalidInputError

__all__ = [
    "TRAIL_FIELD",
    "TRAIL_LENGTH",
    "TRAIL_REASONS",
    "TrailPoint",
    "TrailReason",
    "parse_trail",
    "trail_append",
    "trail_entry",
    "trail_push",
    "trail_start",
]

#: The memory document's field that holds the trail.
TRAIL_FIELD = "importance_trail"
#: How many entries a trail keeps: the newest ones.
TRAIL_LENGTH = 24

TrailReason = Literal["stored", "reinforced", "decayed", "edited"]
#: What may change a memory's importance, as ``why`` names it.
TRAIL_REASONS: tuple[str, ...] = get_args(TrailReason)


@dataclass(frozen=True, slots=True)
class TrailPoint:
    """One change of a memory's importance: its value from ``at`` on, and why it changed."""

    at: datetime
    importance: float
    why: TrailReason


def _checked_at(at: Any) -> datetime:
    if not isinstance(at, datetime) or at.tzinfo is None:
        raise InvalidInputError("at must be a timezone-aware datetime")
    return at


def _checked_why(why: Any) -> str:
    if why not in TRAIL_REASONS:
        raise InvalidInputError(f"why must be one of {', '.join(TRAIL_REASONS)}, got {why!r}")
    return str(why)


def _checked_importance(importance: Any) -> Any:
    """A number (0 to 1), or an aggregation expression: a field path (``"$importance"``) or
    an operator document, evaluated by the server in an update pipeline."""
    if isinstance(importance, str):
        if not importance.startswith("$"):
            raise InvalidInputError("importance must be a number, a field path or an expression")
        return importance
    if isinstance(importance, Mapping):
        return dict(importance)
    return check_importance(importance)


def trail_entry(importance: Any, at: datetime, why: str) -> dict[str, Any]:
    """One trail entry as stored (``importance`` may be an expression in an update pipeline)."""
    return {
        "at": _checked_at(at),
        "importance": _checked_importance(importance),
        "why": _checked_why(why),
    }


def trail_start(importance: float, at: datetime) -> list[dict[str, Any]]:
    """The trail of a memory stored now with ``importance``: its ``stored`` entry."""
    return [trail_entry(check_importance(importance), at, "stored")]


def trail_append(importance: Any, at: datetime, why: str) -> dict[str, Any]:
    """The new value of ``importance_trail`` for an update pipeline's ``$set``: the stored
    trail with one entry appended, the last :data:`TRAIL_LENGTH` kept.

    ``importance`` is the value from now on: a number, or the expression the same ``$set``
    gives ``importance`` (within one ``$set`` stage ``"$importance"`` is the value before the
    update, so pass the new value's expression again, or use a second stage). A document
    without a trail (stored before trails were kept), or with something else than an array
    there, starts a new one. Uses ``$slice``, ``$concatArrays``, ``$cond`` and ``$isArray``
    only, as MongoDB documents them for update pipelines (4.2+)."""
    entry = trail_entry(importance, at, why)
    stored = {"$cond": [{"$isArray": f"${TRAIL_FIELD}"}, f"${TRAIL_FIELD}", []]}
    return {"$slice": [{"$concatArrays": [stored, [entry]]}, -TRAIL_LENGTH]}


def trail_push(importance: float, at: datetime, why: str) -> dict[str, Any]:
    """The same for a classic (non-pipeline) update: ``{"$push": {TRAIL_FIELD: trail_push(...)}}``
    appends the entry and keeps the last :data:`TRAIL_LENGTH`. ``importance`` must be a number
    here (a classic update evaluates no expression); the stored trail must be an array or
    missing, or the server refuses the update."""
    return {"$each": [trail_entry(check_importance(importance), at, why)], "$slice": -TRAIL_LENGTH}


def _point(entry: Any) -> TrailPoint | None:
    if not isinstance(entry, Mapping):
        return None
    at, importance, why = entry.get("at"), entry.get("importance"), entry.get("why")
    if not isinstance(at, datetime) or why not in TRAIL_REASONS or not is_number(importance):
        return None
    value = float(importance)
    if not math.isfinite(value):
        return None
    return TrailPoint(at, value, why)


def parse_trail(value: Any) -> tuple[TrailPoint, ...]:
    """The trail stored in a document, oldest first: empty for a document without one (stored
    before trails were kept, or read without it), and without any entry that is not a
    mapping with a datetime ``at``, a finite number ``importance`` and a known ``why``."""
    if not isinstance(value, list | tuple):
        return ()
    points = (_point(entry) for entry in value)
    return tuple(point for point in points if point is not None)

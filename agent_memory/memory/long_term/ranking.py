"""One explainable score for a long-term memory.

    score = w_relevance * relevance + w_recency * recency + w_importance * importance
            + w_feedback * utility + w_in_span * in_span + w_told_time * tells_time
            (+ current)

- relevance: the search's fused score (vector and keyword, see ``mongo.search.fusion``) mapped
  to 0-1 in the search's order (:func:`relevances`): a near-tie stays a near-tie that feedback,
  importance or recency can decide.
- recency: ``0.5 ** (days since last access / half_life_days)``, computed at query time, so
  nothing has to be rewritten for a memory to age.
- importance: the stored 0-1 value (lowered over time by the decay job).
- utility: what user feedback says about the memory, from -1 to 1: the sum of centred
  ratings over their count plus a prior, so one rating moves it less than many.
- in_span: 1 when the question names a span of time ("last week", "in March", "上个月";
  :mod:`.when`) and the memory was said in it, or up to ``span_slack_days`` after it (a thing
  done in June, told in July); else 0. The weight and the slack were chosen by leaving
  conversations out (``bench fusion``, docs/benchmarks.md).
- tells_time: 1 when the question asks when something happened ("when did we adopt her?",
  "什么时候", "wann") and the memory tells a time of its own ("we adopted her last week",
  "in 2019"; stored with the memory as ``tells_time``); else 0. Chosen the same way.
- current: a memory that announces a change and likely updates an older memory ranked above
  it (``Memory.updates``) is lifted to just above it, for a question about the present; this
  is what was added (:func:`order_current_first`, ``LongTermConfig.update_window``).

Importance never filters: a new fact with modest importance is still found when it is relevant.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

# The searcher gives each hit its relevance (mongo/search/types.py Searcher.search); the
# function is named here too, where the score that reads it is.
from agent_memory.memory.long_term.when import Span, tells_time
from agent_memory.mongo.search.fusion import relevances

__all__ = [
    "RankingWeights",
    "ScoreBreakdown",
    "feedback_utility",
    "order_current_first",
    "relevances",
    "score_memory",
]

Item = TypeVar("Item", bound=Hashable)


@dataclass(frozen=True, slots=True)
class RankingWeights:
    relevance: float = 1.0
    recency: float = 0.02
    importance: float = 0.1
    feedback: float = 0.2
    recency_half_life_days: float = 365.0
    #: Pseudo-count of neutral ratings: utility = sum / (count + prior).
    feedback_prior: float = 2.0
    #: For a memory said in a span of time the question names (0: spans are not read).
    in_span: float = 0.1
    #: Days after a span's end that still count as said in it.
    span_slack_days: float = 7.0
    #: For a memory that tells a time, when the question asks when (0: not read).
    told_time: float = 0.2

    def __post_init__(self) -> None:
        for name in ("relevance", "recency", "importance", "feedback", "in_span", "told_time"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"ranking weight {name} must be a non-negative number")
        if self.recency_half_life_days <= 0 or self.feedback_prior < 0:
            raise ValueError("recency_half_life_days must be positive and feedback_prior >= 0")
        slack = self.span_slack_days
        if not (isinstance(slack, int | float) and 0 <= slack <= 366):
            raise ValueError("span_slack_days must be a number of days from 0 to 366")


@dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """The parts of a memory's score, each before weighting, and the weighted total."""

    relevance: float
    recency: float
    importance: float
    utility: float
    total: float
    #: 1 when the memory was said in a span of time the question names, else 0.
    in_span: float = 0.0
    #: 1 when the question asks when and the memory tells a time, else 0.
    tells_time: float = 0.0
    #: What was added to rank the memory just above an older one it likely updates (the
    #: current statement first; ``LongTermConfig.update_window``), else 0.
    current: float = 0.0

    def explain(self, weights: RankingWeights) -> str:
        said = f" + {weights.in_span:g}*said in the question's span" if self.in_span else ""
        told = f" + {weights.told_time:g}*tells a time" if self.tells_time else ""
        newer = f" + {self.current:.3f} to rank above what it updates" if self.current else ""
        return (
            f"{self.total:.3f} = {weights.relevance:g}*relevance {self.relevance:.3f}"
            f" + {weights.recency:g}*recency {self.recency:.3f}"
            f" + {weights.importance:g}*importance {self.importance:.3f}"
            f" + {weights.feedback:g}*utility {self.utility:+.3f}{said}{told}{newer}"
        )


def feedback_utility(feedback: Mapping[str, Any] | None, prior: float) -> float:
    """From -1 to 1: centred ratings averaged with ``prior`` neutral ratings."""
    if not feedback:
        return 0.0
    count = feedback.get("count", 0)
    total = feedback.get("sum", 0.0)
    if not isinstance(count, int | float) or not isinstance(total, int | float) or count <= 0:
        return 0.0
    return max(-1.0, min(1.0, float(total) / (float(count) + prior)))


def score_memory(
    document: Mapping[str, Any],
    *,
    relevance: float,
    now: datetime,
    weights: RankingWeights,
    spans: Sequence[Span] = (),
    asks_when: bool = False,
) -> ScoreBreakdown:
    """The memory's score for a question asked at ``now``; ``spans``: the spans of time the
    question names (:func:`~agent_memory.memory.long_term.when.spans_in`); ``asks_when``:
    whether it asks when something happened (:func:`~.when.asks_when`)."""
    relevance = max(0.0, min(1.0, relevance))
    last = document.get("last_accessed") or document.get("created_at")
    if isinstance(last, datetime):
        age_days = max(0.0, (now - last).total_seconds() / 86_400)
        recency = 0.5 ** (age_days / weights.recency_half_life_days)
    else:
        recency = 0.0
    importance = document.get("importance", 0.0)
    if not isinstance(importance, int | float) or not math.isfinite(importance):
        importance = 0.0
    utility = feedback_utility(document.get("feedback"), weights.feedback_prior)
    in_span = _said_in(document, spans, weights.span_slack_days) if weights.in_span else 0.0
    told = _tells_time(document) if asks_when and weights.told_time else 0.0
    total = (
        weights.relevance * relevance
        + weights.recency * recency
        + weights.importance * float(importance)
        + weights.feedback * utility
        + weights.in_span * in_span
        + weights.told_time * told
    )
    return ScoreBreakdown(relevance, recency, float(importance), utility, total, in_span, told)


def _tells_time(document: Mapping[str, Any]) -> float:
    """1.0 when the memory tells a time: as stored, or for a memory stored before that was
    kept, read from its content now."""
    stored = document.get("tells_time")
    if isinstance(stored, bool):
        return 1.0 if stored else 0.0
    content = document.get("content")
    said = document.get("occurred_at") or document.get("created_at")
    if not isinstance(content, str) or not isinstance(said, datetime):
        return 0.0
    return 1.0 if tells_time(content, said) else 0.0


def _said_in(document: Mapping[str, Any], spans: Sequence[Span], slack_days: float) -> float:
    """1.0 when the memory was said (its event time, else when it was stored) in one of
    ``spans`` or up to ``slack_days`` after its end."""
    said = document.get("occurred_at") or document.get("created_at")
    if not spans or not isinstance(said, datetime) or said.tzinfo is None:
        return 0.0
    slack = timedelta(days=slack_days)
    return 1.0 if any(span.start <= said < span.end + slack for span in spans) else 0.0


def order_current_first(
    order: Sequence[Item], updates_of: Callable[[Item], Iterable[Item]], window: int
) -> list[Item]:
    """``order`` (best first) with each item among the first ``window`` that likely updates
    items ranked above it (``updates_of``: the older memories it likely updates) moved just
    above the highest of them: the current statement before the older ones about the same
    thing. Items are taken in their order before any move; an item pushed past ``window`` by
    another's move stays where it is. Everything else keeps its relative order."""
    ranked = list(order)
    if window <= 0:
        return ranked
    position = {item: index for index, item in enumerate(ranked)}
    for item in ranked[:window]:
        at = position[item]
        if at >= window:
            continue
        above = [position[old] for old in updates_of(item) if position.get(old, at) < at]
        if not above:
            continue
        to = min(above)
        del ranked[at]
        ranked.insert(to, item)
        for index in range(to, at + 1):
            position[ranked[index]] = index
    return ranked

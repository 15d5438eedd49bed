"""One explainable score for a long-term memory.

    score = w_relevance * relevance + w_recency * recency + w_importance * importance
            + w_feedback * utility

- relevance: how well each search source (vector, keyword) scored the memory, each scaled to
  0-1 over the candidates it returned (best 1), averaged with the source weights; a source
  that did not find the memory adds 0. The scale spans at least ``relevance_spread`` of the
  best score, so a near-tie (cosine 0.80 against 0.79) stays a near-tie that feedback,
  importance or recency can decide, instead of being stretched to 1 against 0. Reciprocal rank fusion picks the candidates,
  but its scores are nearly flat across the top ranks (1/61 against 1/62), too flat to weigh
  against importance or recency, so the re-ranking uses the sources' own scores.
- recency: ``0.5 ** (days since last access / half_life_days)``, computed at query time, so
  nothing has to be rewritten for a memory to age.
- importance: the stored 0-1 value (lowered over time by the decay job).
- utility: what user feedback says about the memory, from -1 to 1: the sum of centred
  ratings over their count plus a prior, so one rating moves it less than many.

Importance never filters: a new fact with modest importance is still found when it is relevant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agent_memory.mongo.search import SourceScore

__all__ = [
    "RankingWeights",
    "ScoreBreakdown",
    "SourceScaler",
    "feedback_utility",
    "score_memory",
]


@dataclass(frozen=True, slots=True)
class RankingWeights:
    relevance: float = 1.0
    recency: float = 0.1
    importance: float = 0.1
    feedback: float = 0.2
    recency_half_life_days: float = 30.0
    #: Pseudo-count of neutral ratings: utility = sum / (count + prior).
    feedback_prior: float = 2.0
    #: Score gaps below this fraction of a source's best score are not stretched.
    relevance_spread: float = 0.15

    def __post_init__(self) -> None:
        for name in ("relevance", "recency", "importance", "feedback"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"ranking weight {name} must be a non-negative number")
        if self.recency_half_life_days <= 0 or self.feedback_prior < 0:
            raise ValueError("recency_half_life_days must be positive and feedback_prior >= 0")
        if not 0 <= self.relevance_spread <= 1:
            raise ValueError("relevance_spread must be from 0 to 1")


@dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """The parts of a memory's score, each before weighting, and the weighted total."""

    relevance: float
    recency: float
    importance: float
    utility: float
    total: float

    def explain(self, weights: RankingWeights) -> str:
        return (
            f"{self.total:.3f} = {weights.relevance:g}*relevance {self.relevance:.3f}"
            f" + {weights.recency:g}*recency {self.recency:.3f}"
            f" + {weights.importance:g}*importance {self.importance:.3f}"
            f" + {weights.feedback:g}*utility {self.utility:+.3f}"
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


class SourceScaler:
    """Scaling of each source's raw scores over one result set: the best is 1, and the
    scale spans the set's range or ``min_spread`` of the best score, whichever is wider."""

    def __init__(
        self,
        sources: Sequence[Mapping[str, SourceScore]],
        weights: Mapping[str, float],
        *,
        min_spread: float = 0.15,
    ) -> None:
        self._weights = dict(weights)
        self._min_spread = min_spread
        self._bounds: dict[str, tuple[float, float]] = {}
        for name in {name for found in sources for name in found}:
            values = [found[name].score for found in sources if name in found]
            self._bounds[name] = (min(values), max(values))

    def relevance(self, found: Mapping[str, SourceScore]) -> float:
        used = {name: weight for name, weight in self._weights.items() if name in self._bounds}
        total = sum(used.values())
        if total <= 0:
            return 0.0
        value = 0.0
        for name, weight in used.items():
            if name not in found:
                continue
            low, high = self._bounds[name]
            spread = max(high - low, self._min_spread * abs(high))
            scaled = 1.0 if spread <= 0 else 1.0 - (high - found[name].score) / spread
            value += weight * max(0.0, scaled)
        return value / total


def score_memory(
    document: Mapping[str, Any],
    *,
    relevance: float,
    now: datetime,
    weights: RankingWeights,
) -> ScoreBreakdown:
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
    total = (
        weights.relevance * relevance
        + weights.recency * recency
        + weights.importance * float(importance)
        + weights.feedback * utility
    )
    return ScoreBreakdown(relevance, recency, float(importance), utility, total)

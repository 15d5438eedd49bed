"""One explainable score for a long-term memory.

    score = w_relevance * relevance + w_recency * recency + w_importance * importance
            + w_feedback * utility

- relevance: the search's fused score (vector and keyword, see ``mongo.search.fusion``) mapped
  to 0-1 in the search's order (:func:`relevances`): a near-tie stays a near-tie that feedback,
  importance or recency can decide.
- recency: ``0.5 ** (days since last access / half_life_days)``, computed at query time, so
  nothing has to be rewritten for a memory to age.
- importance: the stored 0-1 value (lowered over time by the decay job).
- utility: what user feedback says about the memory, from -1 to 1: the sum of centred
  ratings over their count plus a prior, so one rating moves it less than many.

Importance never filters: a new fact with modest importance is still found when it is relevant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# The searcher gives each hit its relevance (mongo/search/types.py Searcher.search); the
# function is named here too, where the score that reads it is.
from agent_memory.mongo.search.fusion import relevances

__all__ = [
    "RankingWeights",
    "ScoreBreakdown",
    "feedback_utility",
    "relevances",
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

    def __post_init__(self) -> None:
        for name in ("relevance", "recency", "importance", "feedback"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"ranking weight {name} must be a non-negative number")
        if self.recency_half_life_days <= 0 or self.feedback_prior < 0:
            raise ValueError("recency_half_life_days must be positive and feedback_prior >= 0")


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

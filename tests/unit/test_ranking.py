"""The long-term memory score: scaling of source scores, utility, recency."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.memory.ranking import RankingWeights, SourceScaler, feedback_utility, score_memory
from agent_memory.mongo.search import SourceScore

NOW = datetime(2026, 11, 22, tzinfo=UTC)


def found(**scores):
    return {name: SourceScore(rank=1, score=value) for name, value in scores.items()}


def test_clear_differences_span_the_scale_and_near_ties_stay_near():
    hits = [found(vector=0.84), found(vector=0.78), found(vector=0.60)]
    scaler = SourceScaler(hits, {"vector": 1.0, "text": 1.0})
    assert [round(scaler.relevance(h), 3) for h in hits] == [1.0, 0.75, 0.0]
    near = [found(vector=0.80), found(vector=0.79)]
    scaler = SourceScaler(near, {"vector": 1.0}, min_spread=0.15)
    assert scaler.relevance(near[1]) == pytest.approx(1 - 0.01 / 0.12)


def test_a_memory_found_by_both_sources_beats_one_found_by_one():
    both, vector_only = found(vector=0.8, text=2.0), found(vector=0.8)
    scaler = SourceScaler([both, vector_only], {"vector": 1.0, "text": 1.0})
    assert scaler.relevance(both) == 1.0 and scaler.relevance(vector_only) == 0.5


def test_utility_is_bounded_and_damped_by_the_prior():
    assert feedback_utility(None, 2.0) == 0.0
    assert feedback_utility({"count": 1, "sum": 1.0}, 2.0) == pytest.approx(1 / 3)
    assert feedback_utility({"count": 100, "sum": -100.0}, 2.0) == pytest.approx(-100 / 102)
    assert feedback_utility({"count": "x", "sum": 1}, 2.0) == 0.0


def test_recency_halves_every_half_life_and_the_total_adds_up():
    weights = RankingWeights()
    doc = {
        "last_accessed": NOW - timedelta(days=30),
        "importance": 0.4,
        "feedback": {"count": 2, "sum": 2.0},
    }
    parts = score_memory(doc, relevance=0.5, now=NOW, weights=weights)
    assert parts.recency == pytest.approx(0.5)
    assert parts.total == pytest.approx(0.5 + 0.1 * 0.5 + 0.1 * 0.4 + 0.2 * 0.5)
    assert "relevance 0.500" in parts.explain(weights)


@pytest.mark.parametrize(
    "kwargs", [{"relevance": -1}, {"recency_half_life_days": 0}, {"relevance_spread": 2}]
)
def test_bad_weights(kwargs):
    with pytest.raises(ValueError):
        RankingWeights(**kwargs)

"""The long-term memory score: relevance from the fused search score, fusion, utility, recency."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.memory.long_term.ranking import (
    RankingWeights,
    feedback_utility,
    order_current_first,
    relevances,
    score_memory,
)
from agent_memory.memory.long_term.when import spans_in
from agent_memory.mongo.search.fusion import SHRINK, score_fusion, standardise

NOW = datetime(2026, 11, 22, tzinfo=UTC)


def test_relevance_keeps_the_order_and_near_ties_stay_near():
    z = relevances([4.0, 3.9, 1.0, 0.0, -2.0, 1000.0])
    assert z[:5] == sorted(z[:5], reverse=True) and z[3] == 0.5 and z[5] == pytest.approx(1.0)
    assert z[0] - z[1] < 0.01  # 0.1 standard deviations apart: a near-tie
    assert z[0] - z[2] > 0.2  # three apart: not one
    assert relevances([]) == []
    # Reciprocal rank fusion (Atlas): a share of the best hit's score.
    assert relevances([0.0328, 0.0164, 0.0], scale="rank") == pytest.approx([1.0, 0.5, 0.0])
    assert relevances([0.0, 0.0], scale="rank") == [0.0, 0.0]


def test_standardise_gives_z_scores_and_nothing_for_a_flat_source():
    values = np.array([3.0, 1.0, 1.0, 1.0, -np.inf])
    valid = np.isfinite(values)
    z = standardise(values, valid)
    assert z[:4].mean() == pytest.approx(0.0) and z[:4].std() == pytest.approx(1.0)
    assert z[4] == pytest.approx(z[:4].min())  # no vector: as low as the lowest
    assert not standardise(np.zeros(4), np.ones(4, bool)).any()


def test_fusion_adds_weighted_z_scores_and_reports_ranks_per_source():
    vector = np.array([0.9, 0.8, 0.1, 0.2])
    text = np.array([0.0, 5.0, 0.0, 0.0])  # only document 1 matched a keyword
    fused = score_fusion(
        {"vector": vector, "text": text},
        np.ones(4, bool),
        weights={"vector": 0.6, "text": 0.4},
        depth=10,
    )
    order = [position for position, _, _ in fused]
    assert order[0] == 1  # second by vector, alone by keyword: first overall
    assert set(fused[0][2]) == {"vector", "text"} and fused[0][2]["text"].rank == 1
    assert "text" not in fused[1][2]  # no keyword matched it: no keyword rank
    expected = 0.6 * standardise(vector, np.ones(4, bool)) + 0.4 * standardise(
        text, np.ones(4, bool)
    )
    expected *= 4 / (4 + SHRINK)  # four documents say little: shrunk toward 0
    assert [score for _, score, _ in fused] == pytest.approx(sorted(expected, reverse=True))


def test_fusion_ranks_only_allowed_documents():
    fused = score_fusion(
        {"vector": np.array([0.9, 0.1, 0.5])},
        np.array([False, True, True]),
        weights={"vector": 1.0},
        depth=10,
    )
    assert [position for position, _, _ in fused] == [2, 1]


def test_utility_is_bounded_and_damped_by_the_prior():
    assert feedback_utility(None, 2.0) == 0.0
    assert feedback_utility({"count": 1, "sum": 1.0}, 2.0) == pytest.approx(1 / 3)
    assert feedback_utility({"count": 100, "sum": -100.0}, 2.0) == pytest.approx(-100 / 102)
    assert feedback_utility({"count": "x", "sum": 1}, 2.0) == 0.0


def test_recency_halves_every_half_life_and_the_total_adds_up():
    weights = RankingWeights()
    doc = {
        "last_accessed": NOW - timedelta(days=weights.recency_half_life_days),
        "importance": 0.4,
        "feedback": {"count": 2, "sum": 2.0},
    }
    parts = score_memory(doc, relevance=0.5, now=NOW, weights=weights)
    assert parts.recency == pytest.approx(0.5)
    assert parts.total == pytest.approx(0.5 + weights.recency * 0.5 + 0.1 * 0.4 + 0.2 * 0.5)
    twice = {**doc, "last_accessed": NOW - timedelta(days=2 * weights.recency_half_life_days)}
    assert score_memory(twice, relevance=0.5, now=NOW, weights=weights).recency == (
        pytest.approx(0.25)
    )
    assert "relevance 0.500" in parts.explain(weights)


def test_a_memory_said_in_the_span_the_question_names_gains_its_weight():
    weights = RankingWeights()
    (last_week,) = spans_in("what did I say last week?", NOW)  # 9 to 16 November
    said = {"created_at": NOW - timedelta(days=60), "importance": 0.5}
    inside = {**said, "occurred_at": datetime(2026, 11, 12, 9, tzinfo=UTC)}
    told_after = {**said, "occurred_at": datetime(2026, 11, 20, tzinfo=UTC)}  # within 7 days
    before = {**said, "occurred_at": datetime(2026, 11, 8, 23, tzinfo=UTC)}
    stored_then = {"created_at": datetime(2026, 11, 10, tzinfo=UTC)}  # no event time: stored
    for document, expected in ((inside, 1.0), (told_after, 1.0), (before, 0.0), (stored_then, 1.0)):
        parts = score_memory(document, relevance=0.5, now=NOW, weights=weights, spans=[last_week])
        plain = score_memory(document, relevance=0.5, now=NOW, weights=weights)
        assert parts.in_span == expected and plain.in_span == 0.0
        assert parts.total == pytest.approx(plain.total + 0.1 * expected)
    parts = score_memory(inside, relevance=0.5, now=NOW, weights=weights, spans=[last_week])
    assert "0.1*said in the question's span" in parts.explain(weights)
    assert "span" not in score_memory(inside, relevance=0.5, now=NOW, weights=weights).explain(
        weights
    )
    # No slack: only the span itself; weight 0: spans are not read.
    exact = RankingWeights(span_slack_days=0)
    assert (
        score_memory(told_after, relevance=0.5, now=NOW, weights=exact, spans=[last_week]).in_span
        == 0
    )
    off = RankingWeights(in_span=0)
    assert score_memory(inside, relevance=0.5, now=NOW, weights=off, spans=[last_week]).in_span == 0


def test_a_memory_that_tells_a_time_gains_its_weight_when_the_question_asks_when():
    weights = RankingWeights()
    said = datetime(2026, 11, 2, tzinfo=UTC)
    telling = {"content": "we adopted Biscuit last week", "occurred_at": said, "tells_time": True}
    plain = {"content": "we adopted Biscuit", "occurred_at": said, "tells_time": False}
    older = {"content": "we adopted Biscuit last week", "occurred_at": said}  # not stored yet
    for document, expected in ((telling, 1.0), (plain, 0.0), (older, 1.0)):
        asked = score_memory(document, relevance=0.5, now=NOW, weights=weights, asks_when=True)
        other = score_memory(document, relevance=0.5, now=NOW, weights=weights)
        assert asked.tells_time == expected and other.tells_time == 0.0
        assert asked.total == pytest.approx(other.total + 0.2 * expected)
    asked = score_memory(telling, relevance=0.5, now=NOW, weights=weights, asks_when=True)
    assert "0.2*tells a time" in asked.explain(weights)
    off = RankingWeights(told_time=0)
    assert (
        score_memory(telling, relevance=0.5, now=NOW, weights=off, asks_when=True).tells_time == 0
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"relevance": -1},
        {"recency_half_life_days": 0},
        {"feedback_prior": -1},
        {"in_span": -0.1},
        {"in_span": float("nan")},
        {"span_slack_days": -1},
        {"span_slack_days": 1000},
        {"span_slack_days": "7"},
        {"told_time": -1},
        {"told_time": float("inf")},
    ],
)
def test_bad_weights(kwargs):
    with pytest.raises(ValueError):
        RankingWeights(**kwargs)


@given(
    st.lists(st.floats(-20, 20, allow_nan=False), min_size=1, max_size=40),
    st.sampled_from(["z", "rank"]),
    st.floats(0, 1),
    st.integers(0, 400),
)
def test_equal_recency_importance_and_feedback_keep_the_search_order(fused, scale, imp, days):
    """Recency, importance and feedback never reorder memories on which they all agree: the
    memory score then ranks exactly as the search did."""
    if scale == "rank":
        fused = [abs(value) for value in fused]
    doc = {
        "last_accessed": NOW - timedelta(days=days),
        "importance": imp,
        "feedback": {"count": 1, "sum": 0.5},
    }
    totals = [
        score_memory(doc, relevance=r, now=NOW, weights=RankingWeights()).total
        for r in relevances(fused, scale=scale)
    ]
    order = sorted(range(len(fused)), key=lambda i: -fused[i])
    for i, j in pairwise(order):
        assert totals[i] >= totals[j] if fused[i] > fused[j] else totals[i] == totals[j]


def test_a_change_moves_just_above_the_highest_older_memory_it_updates():
    updates = {"new": ("old", "older")}
    order = ["older", "x", "old", "y", "new", "z"]
    moved = order_current_first(order, lambda item: updates.get(item, ()), 10)
    assert moved == ["new", "older", "x", "old", "y", "z"]
    # Deeper than the window: as it was; no window: as it was.
    assert order_current_first(order, lambda item: updates.get(item, ()), 4) == order
    assert order_current_first(order, lambda item: updates.get(item, ()), 0) == order
    # What it updates ranked below it, or not found at all: nothing moves.
    assert order_current_first(["new", "old"], lambda i: updates.get(i, ()), 10) == ["new", "old"]
    assert order_current_first(["x", "new"], lambda i: updates.get(i, ()), 10) == ["x", "new"]


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(min_value=0, max_value=12),
    links=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=20),
    window=st.integers(min_value=0, max_value=14),
)
def test_moving_changes_only_lifts_a_change_above_what_it_updates(size, links, window):
    updates: dict[int, list[int]] = {}
    for newer, older in links:
        if newer < size and older < size and newer != older:
            updates.setdefault(newer, []).append(older)
    order = list(range(size))
    moved = order_current_first(order, lambda item: updates.get(item, ()), window)
    assert sorted(moved) == order  # the same memories
    # Lifted: above a memory that was above it.
    lifted = {
        item
        for item in order
        if any(moved.index(item) < moved.index(other) for other in order[:item])
    }
    # Only a change within the window that updates a memory ranked above it is lifted...
    for item in lifted:
        assert order.index(item) < window
        assert any(order.index(old) < order.index(item) for old in updates.get(item, ()))
    # ...and the others keep their order among themselves.
    rest = [item for item in moved if item not in lifted]
    assert rest == sorted(rest)
    # A lifted memory sits right above one it updates.
    for item in lifted:
        below = moved[moved.index(item) + 1]
        assert below in updates[item] or below in lifted

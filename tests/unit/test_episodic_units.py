"""Episodic memory's pure parts: feedback values, checks, payload cutting, days, tallies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.memory.episodic.feedback import FeedbackRequest, centred_value
from agent_memory.memory.episodic.records import (
    Action,
    EpisodicConfig,
    bounded_payload,
    check_memory_ids,
    check_rating,
    check_tally,
    day_start,
    render_content,
)
from agent_memory.memory.episodic.retention import SuccessRates, Tally, aggregate_id


@pytest.mark.parametrize(
    ("rating", "helpful", "value"),
    [
        (1, None, -1.0),
        (2, None, -0.5),
        (3, None, 0.0),
        (4, None, 0.5),
        (5, None, 1.0),
        (None, True, 0.5),
        (None, False, -0.5),
        (1, True, -1.0),  # the rating takes precedence
        (5, False, 1.0),
        (None, None, None),
    ],
)
def test_centred_value(rating, helpful, value):
    assert centred_value(rating, helpful) == value


@pytest.mark.parametrize("bad", [0, 6, -1, 3.5, 5.0, True, False, "5", None, [5]])
def test_rating_must_be_an_int_from_1_to_5(bad):
    with pytest.raises(InvalidInputError):
        check_rating(bad)


def test_counts_refuse_bools_negatives_and_non_finite():
    assert check_tally(0, "tokens", integer=True) == 0
    assert check_tally(1.5, "duration_ms", integer=False) == 1.5
    for bad in (True, -1, float("inf"), float("nan"), "3", 2**63):
        with pytest.raises(InvalidInputError):
            check_tally(bad, "duration_ms", integer=False)
    with pytest.raises(InvalidInputError):
        check_tally(2.0, "tokens", integer=True)


def test_memory_ids_are_deduplicated_in_order_and_bounded():
    assert check_memory_ids(("b", "a", "b"), limit=5) == ["b", "a"]
    assert check_memory_ids([], limit=5) == []
    for bad in ("abc", b"abc", [1], [None], ["ok", {"$ne": 1}], 7):
        with pytest.raises(InvalidInputError):
            check_memory_ids(bad, limit=5)
    with pytest.raises(InvalidInputError, match="limit is 2"):
        check_memory_ids(["a", "b", "c"], limit=2)


def test_payloads_are_cut_with_a_marker_and_checked_first():
    assert bounded_payload(None, "input", max_chars=5) == (None, False)
    assert bounded_payload({"q": "hi"}, "input", max_chars=50) == ({"q": "hi"}, False)
    assert bounded_payload(42, "output", max_chars=10) == (42, False)
    text, cut = bounded_payload("abcdefghij", "output", max_chars=4)
    assert cut and text == "abcd… [truncated: 4 of 10 characters kept]"
    text, cut = bounded_payload({"q": "x" * 100}, "input", max_chars=10)
    assert cut and text.startswith('{"q":"xxxx') and "[truncated: 10 of" in text
    # Hostile keys are refused even when the payload would be cut anyway.
    for hostile in ({"$where": "x" * 100}, {"a.b": 1}, {"ok": [{"$gt": ""}]}, "nul\x00"):
        with pytest.raises(InvalidInputError):
            bounded_payload(hostile, "input", max_chars=10)


def test_default_content_is_type_tool_and_input_as_words():
    assert (
        render_content("tool_call", "search", {"query": "tea", "k": 3}, max_chars=100)
        == "tool_call search query: tea k: 3"
    )
    assert render_content("answer", None, None, max_chars=100) == "answer"
    assert len(render_content("t", "x", {"a": "y" * 10_000}, max_chars=50)) == 50


def test_day_start_is_midnight_utc():
    moment = datetime(2025, 3, 1, 1, 30, tzinfo=timezone(timedelta(hours=3)))
    assert day_start(moment) == datetime(2025, 2, 28, tzinfo=UTC)


def test_aggregate_ids_are_derived_from_the_key():
    day = datetime(2025, 1, 2, tzinfo=UTC)
    assert aggregate_id("a", "t", day) == aggregate_id("a", "t", day + timedelta(hours=5))
    assert len({aggregate_id(*key, day) for key in [("a", "t"), ("a", "u"), ("b", "t")]}) == 3
    # Separators inside ids cannot make two keys collide.
    assert aggregate_id("a|b", "c", day) != aggregate_id("a", "b|c", day)


def test_tally_counts_sums_and_merges():
    tally = Tally()
    tally.add_action(
        {
            "outcome": "success",
            "feedback": {"rating": 4},
            "action": {"duration_ms": 10},
            "metadata": {"tokens": 7},
        }
    )
    tally.add_action({"outcome": "failure", "feedback": {}, "action": {"duration_ms": None}})
    assert tally.total == 2 and tally.counts == {"success": 1, "failure": 1, "partial": 0}
    inc = tally.increments()
    assert inc["counts.success"] == 1 and inc["rating_count"] == 1 and inc["tokens_sum"] == 7
    merged = Tally()
    merged.merge(
        {"rating_sum": 4, "rating_count": 1, "duration_ms_sum": 10, "duration_count": 1},
        {"success": 1, "failure": 1},
    )
    assert merged.counts == tally.counts and merged.rating_sum == tally.rating_sum


def test_rates_of_nothing_are_zero_not_an_error():
    now = datetime.now(UTC)
    rates = SuccessRates.from_tally(
        Tally(), agent_id="a", action_type=None, since=now, until=now, summarised=0
    )
    assert (rates.total, rates.success_rate, rates.average_rating) == (0, 0.0, None)


def test_request_digest_tells_a_retry_from_a_different_request():
    same = FeedbackRequest(5, None, None, "k").digest()
    assert same == FeedbackRequest(5, None, None, "other-key").digest()
    assert same != FeedbackRequest(4, None, None, "k").digest()
    assert same != FeedbackRequest(5, True, None, "k").digest()


def test_config_is_validated():
    for bad in ({"retention_days": 0}, {"retention_days": 1}, {"similar_limit": True}):
        with pytest.raises(InvalidInputError):
            EpisodicConfig(**bad)


def test_action_hides_the_credit_protocol():
    action = Action.from_document(
        {
            "_id": "act_1",
            "agent_id": "a",
            "user_id": "u",
            "session_id": "s",
            "action_type": "t",
            "outcome": "success",
            "metadata": {"model": "m", "tokens": 3, "route": "x"},
            "feedback": {"rating": 5, "version": 2, "pending": {}, "requests": []},
            "timestamp": datetime.now(UTC),
        }
    )
    assert action.feedback == {"rating": 5}
    assert (action.model, action.tokens, action.metadata) == ("m", 3, {"route": "x"})

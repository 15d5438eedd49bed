"""The per-user keyword trust: its rule, its ledger, and how it sets the fused weights."""

from __future__ import annotations

import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.memory.long_term.records import LongTermConfig
from agent_memory.mongo.search.plain import fused_weights
from agent_memory.mongo.search.trust import KeywordTrust, TrustLedger


def test_share_is_zero_below_low_one_from_high_linear_between():
    trust = KeywordTrust(low=0.4, high=0.6)
    assert [trust.share(m) for m in (0.0, 0.4, 0.5, 0.6, 1.0)] == pytest.approx(
        [0.0, 0.0, 0.5, 1.0, 1.0]
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"low": 0.6, "high": 0.4},
        {"low": 0.5, "high": 0.5},
        {"low": -0.1},
        {"high": 1.5},
        {"prior": float("nan")},
        {"prior": True},
        {"prior_weight": -1},
        {"prior": "0.3"},
        {"horizon": 0},
        {"horizon": 2.5},
        {"caution": -1.0},
        {"caution": float("inf")},
        {"caution": True},
    ],
)
def test_bad_trust_settings_are_refused(kwargs):
    with pytest.raises(InvalidInputError):
        KeywordTrust(**kwargs)


def test_ledger_starts_from_the_prior_and_counts_it_as_questions():
    trust = KeywordTrust(low=0.0, high=1.0, prior=0.3, prior_weight=1.0, caution=0.0)
    ledger = TrustLedger()
    assert ledger.mean("u", trust) == pytest.approx(0.3)
    assert ledger.observe("u", 1.0, trust) == pytest.approx(0.65)  # (0.3 + 1) / 2
    assert ledger.observe("u", 0.0, trust) == pytest.approx(1.3 / 3)
    assert ledger.mean("other", trust) == pytest.approx(0.3)


def test_trust_is_read_below_the_mean_until_the_questions_agree():
    """With caution, the share is read at the mean less its standard error: one question that
    repeats a memory's words earns little, many that agree earn what their mean says."""
    careful = KeywordTrust(low=0.3, high=0.6, prior=0.3, prior_weight=3.0, caution=1.0)
    trusting = KeywordTrust(low=0.3, high=0.6, prior=0.3, prior_weight=3.0, caution=0.0)
    ledger = TrustLedger()
    first_careful = ledger.observe("careful", 1.0, careful)
    first_trusting = ledger.observe("trusting", 1.0, trusting)
    assert first_careful == 0.0 < first_trusting  # (0.3*3 + 1) / 4 = 0.475: share 0.58
    for _ in range(200):
        ledger.observe("careful", 0.7, careful)
        ledger.observe("trusting", 0.7, trusting)
    # Agreeing questions: the spread has shrunk, both read the same mean.
    assert ledger.mean("careful", careful) == pytest.approx(0.7, abs=0.005)
    assert ledger.earned("careful", careful) == pytest.approx(0.7, abs=0.01)
    assert ledger.observe("careful", 0.7, careful) == pytest.approx(1.0)


def test_the_spread_is_the_questions_own():
    """Questions alternating 0.2 and 0.8 have a spread of 0.3: the earned coverage is the mean
    less 0.3 / sqrt(horizon)."""
    trust = KeywordTrust(low=0.0, high=1.0, prior=0.5, prior_weight=0.0, horizon=16, caution=2.0)
    ledger = TrustLedger()
    for _ in range(400):
        ledger.observe("u", 0.2, trust)
        ledger.observe("u", 0.8, trust)
    mean = ledger.mean("u", trust)
    assert mean == pytest.approx(0.5, abs=0.05)
    assert ledger.earned("u", trust) == pytest.approx(mean - 2.0 * 0.3 / 4.0, abs=0.02)


def test_ledger_follows_the_last_horizon_questions():
    trust = KeywordTrust(low=0.0, high=1.0, prior=0.0, prior_weight=0.0, horizon=4)
    ledger = TrustLedger()
    for _ in range(100):
        ledger.observe("u", 1.0, trust)
    for _ in range(12):
        ledger.observe("u", 0.0, trust)
    # A plain mean would still be 100/112; following the last few, it has come down.
    assert ledger.mean("u", trust) < 0.05


def test_ledger_forgets_the_tenant_used_least_recently():
    trust = KeywordTrust()
    ledger = TrustLedger(capacity=2)
    ledger.observe("a", 1.0, trust)
    ledger.observe("b", 1.0, trust)
    ledger.observe("a", 1.0, trust)
    ledger.observe("c", 1.0, trust)
    assert len(ledger) == 2
    assert ledger.mean("b", trust) == pytest.approx(trust.prior)  # forgotten
    assert ledger.mean("a", trust) > trust.prior


def test_coverage_out_of_range_is_clipped():
    trust = KeywordTrust(low=0.0, high=1.0, prior=0.0, prior_weight=0.0)
    ledger = TrustLedger()
    assert ledger.observe("u", 7.0, trust) == pytest.approx(1.0)
    assert ledger.observe("v", -3.0, trust) == pytest.approx(0.0)


def test_fused_weights_hand_the_untrusted_share_to_the_vector():
    weights = {"vector": 0.3, "text": 0.7}
    assert fused_weights(weights, 0.5, 0.0, None) == {"vector": 0.3, "text": 0.7}
    assert fused_weights(weights, 0.5, 1.0, None) == pytest.approx({"vector": 0.3, "text": 0.35})
    assert fused_weights(weights, 0.5, 1.0, lambda c: 0.0) == pytest.approx(
        {"vector": 1.0, "text": 0.0}
    )
    assert fused_weights(weights, 0.5, 1.0, lambda c: 0.5) == pytest.approx(
        {"vector": 0.65, "text": 0.175}
    )


def test_long_term_config_checks_its_keyword_trust():
    assert isinstance(LongTermConfig().keyword_trust, KeywordTrust)
    assert LongTermConfig(keyword_trust=None).keyword_trust is None
    with pytest.raises(InvalidInputError):
        LongTermConfig(keyword_trust={"low": 0.1})  # type: ignore[arg-type]


def test_a_question_no_keyword_matched_is_not_counted():
    trust = KeywordTrust(low=0.0, high=1.0, prior=0.3, prior_weight=1.0, caution=0.0)
    ledger = TrustLedger()
    ledger.observe("u", 1.0, trust)
    for _ in range(20):
        assert ledger.observe("u", None, trust) == pytest.approx(0.65)  # "hi", "thanks"
    assert ledger.mean("u", trust) == pytest.approx(0.65)
    assert fused_weights({"vector": 0.3, "text": 0.7}, None, 1.0, None) == {
        "vector": 0.3,
        "text": 0.0,
    }


def test_only_what_asks_teaches_the_ledger():
    from agent_memory.mongo.search.trust import asks

    assert asks("Where do I live?") and asks("我住在哪里？") and asks("so... you moved? when")
    assert not asks("We went hiking on Sunday.") and not asks("我们周日去爬山了")
    trust = KeywordTrust(low=0.0, high=1.0, prior=0.3, prior_weight=1.0, caution=0.0)
    ledger = TrustLedger()
    # A statement is ranked with what has been learned so far, and teaches nothing.
    assert ledger.observe("u", 1.0, trust, learn=False) == pytest.approx(0.3)
    assert len(ledger) == 0
    ledger.observe("u", 1.0, trust)
    assert ledger.observe("u", 0.0, trust, learn=False) == pytest.approx(0.65)
    assert ledger.mean("u", trust) == pytest.approx(0.65)

"""The fusion cross-validation: every conversation scored by a configuration tuned without it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from agent_memory.bench.embedders import Conversation, Turn
from agent_memory.bench.fusion import (
    ATLAS_GRID,
    CANDIDATES,
    CHANGE_GRID,
    GRID,
    SECOND_VECTOR_TRUST_GRID,
    SPAN_GRID,
    TIME_GRID,
    TIME_PROTOCOLS,
    TRUST_GRID,
    WHEN_GRID,
    Config,
    FusionRun,
    Scored,
    TimeConfig,
    _spans,
    _time,
    _updates,
    fuse,
    product_config,
    render,
    run_fusion,
    timed_ranks,
)
from agent_memory.mongo.search.trust import KeywordTrust
from agent_memory.providers.embedders import FakeEmbedder
from tests.unit.test_bench_embedders import _dataset


def _three(path: Path) -> Path:
    one = json.loads(_dataset(path).read_text())[0]
    samples = []
    for number in range(3):
        sample = json.loads(json.dumps(one))
        sample["sample_id"] = f"conv-{number}"
        samples.append(sample)
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


async def test_every_conversation_is_scored_by_a_configuration_tuned_on_the_others(tmp_path):
    run = await run_fusion(FakeEmbedder(), [_three(tmp_path / "d.json")])
    data = run.as_json()
    assert data["conversations"] == 3 and len(data["folds"]) == 3
    assert sum(data["chosen_by_folds"].values()) == 3
    for fold in data["folds"]:
        assert fold["chosen"] in {config.describe() for config in (*GRID, *TRUST_GRID)}
        assert fold["mean_coverage"] is None or 0 <= fold["mean_coverage"] <= 1
        assert set(fold["baselines"]) == {"vector:context", "vector:content", "bm25s:context"}
        assert list(fold["recall"]) == ["1", "5", "10", "25", "50"]
    assert set(data["atlas_simulated"]["chosen_by_folds"]) <= {c.describe() for c in ATLAS_GRID}
    # A second vector (content and context) is tried with the keyword trust too.
    anything = {c.describe() for c in (*GRID, *TRUST_GRID, *SECOND_VECTOR_TRUST_GRID)}
    assert set(data["any_vector"]["chosen_by_folds"]) <= anything
    assert {c.vector for c in SECOND_VECTOR_TRUST_GRID} == {"mean", "context"}
    assert len(SECOND_VECTOR_TRUST_GRID) == 2 * len(TRUST_GRID)
    assert isinstance(data["any_vector"]["held_out_below_a_baseline"], list)
    text = render(data)
    assert "conv-0" in text and "Held-out recall" in text
    assert "Without the per-user keyword trust" in text


def test_fusion_weighs_sources_and_scales_keywords_by_coverage():
    vector = np.array([[0.9, 0.1, 0.5]])
    keyword = np.array([[0.0, 4.0, 0.0]])
    scored = Scored(
        "d",
        "s",
        [(1,)],
        {
            "vector:content": vector,
            "bm25:context": keyword,
        },
        {"context": np.array([0.0])},  # the keyword match covers nothing of the question
    )
    keyword_first = Config("content", "context", "z", 0.2)
    assert int(fuse(scored, keyword_first).argmax()) == 1
    # With no coverage, coverage^1 removes the keyword ranking: the vector decides.
    assert int(fuse(scored, Config("content", "context", "z", 0.2, 1.0)).argmax()) == 0
    # Reciprocal rank fusion adds w / (60 + rank).
    rrf = fuse(scored, Config("content", "context", "rrf", 0.5))
    assert rrf[0, 0] == np.float64(0.5 / 61 + 0.5 / 62)


def test_keyword_trust_is_learned_question_by_question_in_order():
    """Three questions whose best keyword match covers little, then one whose match covers
    all of it: with the trust, the last is still ranked by the vector; without, by keywords."""
    vector = np.tile(np.array([[0.9, 0.1, 0.5]]), (4, 1))
    keyword = np.tile(np.array([[0.0, 4.0, 0.0]]), (4, 1))
    scored = Scored(
        "d",
        "s",
        [(0,)] * 4,
        {"vector:content": vector, "bm25:context": keyword},
        {"context": np.array([0.1, 0.1, np.nan, 1.0])},  # NaN: nothing matched, not counted
    )
    fixed = Config("content", "context", "z", 0.3, 1.0)
    # The mean itself (no caution), its prior counted as one question.
    trusted = Config(
        "content", "context", "z", 0.3, 1.0, KeywordTrust(prior_weight=1.0, caution=0.0)
    )
    assert int(fuse(scored, fixed)[3].argmax()) == 1
    # Mean after the fourth: (0.3 + 0.1 + 0.1 + 1.0) / 4 = 0.375, a share of 0.125.
    assert int(fuse(scored, trusted)[3].argmax()) == 0
    # The same last question asked first: nothing learned yet, the prior and its own coverage
    # give (0.3 + 1) / 2 = 0.65, full trust.
    first = Scored(
        "d",
        "s",
        [(0,)],
        {"vector:content": vector[:1], "bm25:context": keyword[:1]},
        {"context": np.array([1.0])},
    )
    assert int(fuse(first, trusted)[0].argmax()) == 1


def _timed(fused: np.ndarray, ages: list[float], stale: list[tuple[int, ...]]) -> Scored:
    """A conversation whose fused scores are given (through a vector-only configuration)."""
    questions = fused.shape[0]
    return Scored(
        "d",
        "s",
        [(0,)] * questions,
        {
            "vector:content": fused,
            "vector:context": fused,
            "bm25:context": np.zeros_like(fused),
            "bm25s:context": np.zeros_like(fused),
        },
        {"context": np.full(questions, np.nan)},
        stale,
        np.array(ages),
    )


def test_recency_reorders_near_ties_of_the_candidates_and_never_lifts_the_others():
    # Turn 0 (60 days old) a little ahead of turn 1 (said yesterday); turn 2 far behind.
    scored = _timed(np.array([[3.0, 2.9, -2.0]]), [60.0, 1.0, 0.0], [()])
    fused = scored.sources["vector:content"]
    assert timed_ranks(scored, fused, TimeConfig(0.0)).tolist() == [[1, 2, 3]]
    # Recency 0.1 over a 30-day half-life: the logistic squeezes 3.0 and 2.9 to 0.952 and
    # 0.948, and the newer turn's recency (0.977 against 0.25) decides.
    assert timed_ranks(scored, fused, TimeConfig(0.1, 30.0)).tolist() == [[2, 1, 3]]
    # Spread 4: 0.679 against 0.675 is still a near tie; a half-life of a year is not enough.
    assert timed_ranks(scored, fused, TimeConfig(0.02, 365.0, 4.0)).tolist() == [[1, 2, 3]]
    # Outside the candidates nothing moves up, however recent.
    wide = _timed(np.array([np.linspace(5, 0, CANDIDATES + 1)]), [*[900.0] * CANDIDATES, 0.0], [()])
    ranks = timed_ranks(wide, wide.sources["vector:content"], TimeConfig(0.2, 30.0))
    assert ranks[0, -1] == CANDIDATES + 1


async def test_recency_is_chosen_on_the_other_conversations_and_reports_changed_facts(tmp_path):
    run = await run_fusion(FakeEmbedder(), [_three(tmp_path / "d.json")])
    # The small dataset's questions are all about current facts: mark the second turn stale
    # for the first question of every conversation.
    for conversation in run.conversations:
        conversation.stale = [(1,)] + [()] * (len(conversation.evidence) - 1)
    result = run.cross_validate_time(product_config())
    assert set(result["protocols"]) == set(TIME_PROTOCOLS)
    for found in result["protocols"].values():
        assert sum(found["chosen_by_folds"].values()) == 3
        assert set(found["chosen_by_folds"]) <= {config.describe() for config in TIME_GRID}
        held = found["held_out"]["d.json"]
        assert held["changed_facts"] == 3 and 0 <= held["current_first"] <= 3
    assert len(result["every_configuration"]) == len(TIME_GRID)
    text = "\n".join(_time(result))
    assert "Recency with the datasets' dates" in text and "held out, rule: recall" in text
    # The dataset's session has a date: ages are days before the questions, the last turn's
    # a day (less a second for each turn after it).
    ages = run.conversations[0].ages
    assert ages is not None and abs(ages[-1] - 1.0) < 1e-3 and (np.diff(ages) < 0).all()


def test_folds_choose_recency_that_puts_the_current_value_first_elsewhere():
    # The current value (turn 1, said yesterday) a little behind the earlier one (turn 0,
    # 200 days old): only recency brings it first.
    def conversation() -> Scored:
        scored = _timed(np.array([[3.0, 2.6, 0.0]]), [200.0, 1.0, 0.0], [(0,)])
        scored.evidence = [(1,)]
        return scored

    vector_only = Config("content", "context", "z", 1.0)
    result = FusionRun(["d"], "fake", [conversation(), conversation()]).cross_validate_time(
        vector_only
    )
    found = result["protocols"]
    assert found["current first"]["held_out"]["d"]["current_first"] == 2
    assert "no recency" not in found["current first"]["chosen_by_folds"]
    # Three turns: every configuration finds the evidence in the top 5 and 10, so the recall
    # rule gains nothing from recency and keeps the first of the grid, none.
    assert found["recall"]["chosen_by_folds"] == {"no recency": 2}
    assert found["recall"]["held_out"]["d"]["current_first"] == 0
    # When the current value is older and behind, nothing reaches the target: the fallback
    # takes the configuration with the most current firsts (all none: the first, no recency).
    older = [conversation(), conversation()]
    for scored in older:
        scored.ages = np.array([1.0, 200.0, 0.0])
    found = FusionRun(["d"], "fake", older).cross_validate_time(vector_only)["protocols"]
    assert found["current first"]["held_out"]["d"]["current_first"] == 0
    assert found["current first"]["chosen_by_folds"] == {"no recency": 2}


def test_a_candidate_said_in_the_span_the_question_names_gains_its_weight():
    # Turn 0 (said 40 days ago) a little ahead of turn 1 (said 20 days ago) and turn 2 (10
    # days ago). The question names a span from 25 to 15 days before it is asked.
    scored = _timed(np.array([[3.0, 2.95, 2.9]]), [40.0, 20.0, 10.0], [()])
    scored.spans = [[(-25.0, -15.0)]]
    assert scored.in_spans(0.0).tolist() == [[False, True, False]]
    # Told up to 7 days after the span ended counts with a slack of 7.
    assert scored.in_spans(7.0).tolist() == [[False, True, True]]
    fused = scored.sources["vector:content"]
    without = TimeConfig(0.0)
    assert timed_ranks(scored, fused, without).tolist() == [[1, 2, 3]]
    assert timed_ranks(scored, fused, TimeConfig(0.0, 30.0, 1.0, 0.2)).tolist() == [[2, 1, 3]]
    # A question that names no span: nothing moves.
    scored.spans = [[]]
    assert timed_ranks(scored, fused, TimeConfig(0.0, 30.0, 1.0, 0.2)).tolist() == [[1, 2, 3]]
    # The grid's first configuration is today's ranking, with no span weight.
    assert SPAN_GRID[0] == TimeConfig(0.1, 30.0, 1.0)
    assert "said in the question's span 0.2 (+7 d)" in TimeConfig(0.1, 30, 1, 0.2, 7).describe()


async def test_spans_named_in_questions_are_resolved_when_asked_and_cross_validated(tmp_path):
    run = await run_fusion(FakeEmbedder(), [_three(tmp_path / "d.json")])
    first = run.conversations[0]
    assert first.categories and len(first.spans) == len(first.evidence)
    # A question of its own naming the day before it is asked: the span is that day.
    asked_ages = first.ages
    assert asked_ages is not None
    first.spans[0] = [(-1.0, 0.0)]
    result = run.cross_validate_time(
        product_config(), SPAN_GRID, {"recall": TIME_PROTOCOLS["recall"]}
    )
    held = result["protocols"]["recall"]["held_out"]["d.json"]
    assert held["naming_a_span"]["questions"] >= 1
    assert set(held["by_category"]) and all(
        set(recall) == {"1", "5", "10", "25", "50"} for recall in held["by_category"].values()
    )
    assert len(result["every_configuration"]) == len(SPAN_GRID)
    text = "\n".join(_spans(result, "Spans of time named in the question"))
    assert "Spans of time named in the question" in text and "naming a span" in text


def test_a_candidate_that_tells_a_time_gains_only_for_questions_that_ask_when():
    scored = _timed(np.array([[3.0, 2.95, 2.9], [3.0, 2.95, 2.9]]), [40.0, 20.0, 10.0], [(), ()])
    scored.spans = [[], []]
    scored.asks_when = np.array([True, False])
    scored.tells_time = np.array([False, False, True])
    fused = scored.sources["vector:content"]
    ranks = timed_ranks(scored, fused, TimeConfig(0.0, 30.0, 1.0, 0.0, 0.0, 0.2))
    assert ranks.tolist() == [[2, 3, 1], [1, 2, 3]]
    assert WHEN_GRID[0] == TimeConfig(0.1, 30.0, 1.0, 0.1, 7.0)
    assert "telling a time when asked when 0.2" in TimeConfig(0, when_weight=0.2).describe()


def test_a_change_moves_above_the_older_turns_it_updates_only_for_questions_about_the_present():
    # Turn 2 (said 10 days ago) announces a change and updates turns 0 and 1; turn 3 is
    # unrelated. Question 0 is about the present; question 1 asks when.
    fused = np.array([[3.0, 2.0, 1.0, 2.5], [3.0, 2.0, 1.0, 2.5]])
    scored = _timed(fused, [40.0, 20.0, 10.0, 5.0], [(), ()])
    scored.spans = [[], []]
    scored.asks_when = np.array([False, True])
    scored.tells_time = np.zeros(4, dtype=bool)
    scored.updates = {2: (1, 0)}
    plain = TimeConfig(0.0, 30.0, 1.0, 0.1, 0.0, 0.1)
    assert timed_ranks(scored, fused, plain).tolist() == [[1, 3, 4, 2], [1, 3, 4, 2]]
    # All its links: above the highest of them (turn 0); the question asking when: as found.
    moved = replace(plain, update_links=2, update_window=10)
    assert timed_ranks(scored, fused, moved).tolist() == [[2, 4, 1, 3], [1, 3, 4, 2]]
    # Its first link only (turn 1): just above turn 1, below the unrelated turn 3.
    assert timed_ranks(scored, fused, replace(moved, update_links=1)).tolist()[0] == [1, 4, 3, 2]
    # Deeper in the ranking than the window: stays.
    assert timed_ranks(scored, fused, replace(moved, update_window=3)).tolist()[0] == [1, 3, 4, 2]
    # A question naming a span is about then too.
    scored.asks_when = np.array([False, False])
    scored.spans = [[(-50.0, -30.0)], []]
    assert timed_ranks(scored, fused, moved).tolist() == [[1, 3, 4, 2], [2, 4, 1, 3]]
    assert TimeConfig(0.1, 30.0, 1.0, 0.1, 7.0, 0.2) in CHANGE_GRID  # before changes were read
    assert TimeConfig(0.0, 30.0, 1.0, 0.1, 7.0, 0.2) in CHANGE_GRID  # no recency at all
    assert "a change above the 2 it updates within 10" in moved.describe()


def test_a_turn_that_announces_a_change_links_the_older_of_its_nearest_turns():
    conversation = Conversation(
        "s",
        [
            Turn("D1:1", "Ann", "I drive a BYD Atto 3.", "1:00 pm on 1 March, 2023"),
            Turn("D1:2", "Ann", "We talked about tyres.", "1:00 pm on 1 March, 2023"),
            Turn("D2:1", "Ann", "I switched to a Li Auto L7.", "1:00 pm on 1 May, 2023"),
            Turn("D2:2", "Ann", "The new one is quiet.", "1:00 pm on 1 May, 2023"),
        ],
        [],
    )
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1], [0.95, 0.05]])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    # Turn 2 announces a change: its nearest before it are turns 0 then 1, both said
    # earlier. Turn 3 too ("new"): turns 0, 2 and 1 (a turn of its session, a second
    # earlier, is said before it too).
    assert _updates(conversation, vectors) == {2: (0, 1), 3: (0, 2, 1)}
    # A turn that announces nothing links nothing; one said at the same moment is not older.
    conversation.turns[2] = Turn("D2:1", "Ann", "A Li Auto L7.", "1:00 pm on 1 May, 2023")
    assert _updates(conversation, vectors) == {3: (0, 2, 1)}
    conversation.turns[0] = Turn("D1:1", "Ann", "I drive a BYD.", "1:00 pm on 1 June, 2023")
    assert _updates(conversation, vectors) == {3: (2, 1)}


async def test_changes_are_cross_validated_by_both_rules(tmp_path):
    run = await run_fusion(FakeEmbedder(), [_three(tmp_path / "d.json")])
    data = run.as_json()
    assert set(data["changes"]["protocols"]) == set(TIME_PROTOCOLS)
    assert len(data["changes"]["every_configuration"]) == len(CHANGE_GRID)
    assert "A change ranked above the older memories it likely updates" in render(data)

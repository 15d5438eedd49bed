"""The fusion cross-validation: every conversation scored by a configuration tuned without it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from agent_memory.bench.fusion import (
    ATLAS_GRID,
    GRID,
    TRUST_GRID,
    Config,
    Scored,
    fuse,
    render,
    run_fusion,
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

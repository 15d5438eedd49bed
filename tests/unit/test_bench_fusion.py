"""The fusion cross-validation: every conversation scored by a configuration tuned without it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from agent_memory.bench.fusion import ATLAS_GRID, GRID, Config, Scored, fuse, render, run_fusion
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
        assert fold["chosen"] in {config.describe() for config in GRID}
        assert set(fold["baselines"]) == {"vector:context", "vector:content", "bm25s:context"}
        assert list(fold["recall"]) == ["1", "5", "10", "25", "50"]
    assert set(data["atlas_simulated"]["chosen_by_folds"]) <= {c.describe() for c in ATLAS_GRID}
    text = render(data)
    assert "conv-0" in text and "Held-out recall" in text


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

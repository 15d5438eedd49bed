"""``agent-memory bench lengths`` at a tiny size: every read timed at both scales, with its
ratio, on a database of the run's own that is dropped afterwards."""

from __future__ import annotations

import json

import pytest
from pymongo import MongoClient
from typer.testing import CliRunner

from agent_memory.bench.lengths import READS, parse_scales, render_lengths
from agent_memory.cli import app


def test_every_read_is_timed_at_both_scales(cli_env, tmp_path):
    out = tmp_path / "lengths.json"
    args = ["bench", "lengths", "--scale", "10,100", "--action-factor", "2", "--reads", "2"]
    result = CliRunner().invoke(app, [*args, "--out", str(out)], env=cli_env)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["scales"] == [10, 100] and data["tier"] == "plain"
    assert [row["read"] for row in data["reads"]] == list(READS)
    for row in data["reads"]:
        assert set(row["scales"]) == {"10", "100"}
        assert row["scales"]["100"]["ratio"] is not None and row["scales"]["10"]["p50"] > 0
    table = out.with_suffix(".md").read_text()
    assert "| conversation: context window of the long session |" in table
    with MongoClient(cli_env["MONGODB_URI"]) as client:  # the run's database is gone
        assert not [n for n in client.list_database_names() if n.startswith("bench_lengths_")]


@pytest.mark.parametrize("bad", ["", "ten", "5", "1000,200000"])
def test_a_bad_scale_is_one_line_and_nothing_runs(bad, tmp_path):
    with pytest.raises(ValueError, match="scale"):
        parse_scales(bad)
    out = tmp_path / "lengths.json"
    result = CliRunner().invoke(app, ["bench", "lengths", "--scale", bad, "--out", str(out)])
    assert result.exit_code == 2 and "--scale" in result.output and not out.exists()


def test_scales_are_read_as_a_sorted_set():
    assert parse_scales("1000, 10000,1000") == (1_000, 10_000)


def test_a_read_that_failed_is_in_the_table():
    data = {
        "scales": [10, 100],
        "action_factor": 10,
        "reads_per_scale": 2,
        "embedder": "fake",
        "tier": "plain",
        "fill_seconds": {"10": {"actions": 1.0}, "100": {"actions": 9.0}},
        "reads": [
            {
                "read": "page_users",
                "label": "console: the agent's users",
                "scales": {"10": {"p50": 5.0, "p95": 6.0}, "100": {"failed": "503 too large"}},
            }
        ],
        "failed": 1,
    }
    table = render_lengths(data)
    assert "| console: the agent's users | 5.0 / 6.0 | **failed**: 503 too large |" in table

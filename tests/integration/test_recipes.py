"""Every recipe runs as a user would run it, on the embedded default, offline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RECIPES = Path(__file__).resolve().parents[2] / "recipes"


@pytest.mark.parametrize("recipe", sorted(p.name for p in RECIPES.glob("*.py")))
def test_recipe_runs(recipe: str, tmp_path: Path, offline_env):
    env = {**offline_env, "AGENT_MEMORY_DATA_DIR": str(tmp_path / "data")}
    result = subprocess.run(
        [sys.executable, str(RECIPES / recipe)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip()


def test_quickstart_finds_the_seat_preference(tmp_path: Path, offline_env):
    env = {**offline_env, "AGENT_MEMORY_DATA_DIR": str(tmp_path / "data")}
    result = subprocess.run(
        [sys.executable, str(RECIPES / "quickstart.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = result.stdout.splitlines()
    assert lines[0].startswith("plain tier")
    assert "window seat" in lines[1]


def test_operations_decays_once_locks_and_rates(tmp_path: Path, offline_env):
    env = {**offline_env, "AGENT_MEMORY_DATA_DIR": str(tmp_path / "data")}
    result = subprocess.run(
        [sys.executable, str(RECIPES / "operations.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = result.stdout
    assert "decayed 3 of 3 eligible memories; sessions archived 1" in out
    assert "actions summarised 6, deleted 6" in out
    assert "decayed 0 of 0 eligible memories" in out  # the same period again
    assert "another run holds the 'maintenance' lock (cron-pod-1" in out and "exited 6" in out
    assert "importance 0.500" in out and "importance 0.475" in out
    assert "rating 5, credited +1.0 to 1 memory" in out and "alice's action: 404" in out
    assert "7 actions (6 from summarised days), success 71%" in out
    assert "bob erased: 1 memories, 1 sessions, 2 messages" in out

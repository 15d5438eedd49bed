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

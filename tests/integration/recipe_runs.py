"""Each recipe run once per test session, as a user runs it, and the run shared.

The smoke test of every recipe (``test_recipes.py``) and the tests that check what a recipe
prints (``test_recipes_4_6.py`` and others) read the same run: running each script twice
doubled the time of these tests on a two-core CI machine.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
ALL = sorted(p.name for p in RECIPES.glob("*.py"))
TIMEOUT_S = 120


@dataclass(frozen=True, slots=True)
class RecipeRun:
    recipe: str
    returncode: int
    stdout: str
    stderr: str
    seconds: float


_runs: dict[str, RecipeRun] = {}


def run(recipe: str, env: dict[str, str], workdir: Path) -> RecipeRun:
    """Run ``recipes/<recipe>`` in ``workdir`` (its data directory inside), not cached."""
    env = {**env, "AGENT_MEMORY_DATA_DIR": str(workdir / "data")}
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, str(RECIPES / recipe)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    seconds = time.perf_counter() - started
    return RecipeRun(recipe, result.returncode, result.stdout, result.stderr, seconds)


def run_cached(
    recipe: str, env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> RecipeRun:
    """The session's run of ``recipe`` with ``env`` (the ``offline_env`` fixture: the same for
    every caller), made by the first test that asks."""
    if recipe not in _runs:
        workdir = tmp_path_factory.mktemp(recipe.removesuffix(".py"))
        _runs[recipe] = run(recipe, env, workdir)
    return _runs[recipe]


def succeeded(run: RecipeRun) -> str:
    """The run's output, after checking it ended well and wrote nothing to stderr (the
    recipes configure logging to show warnings and errors only: a readable run has none)."""
    assert run.returncode == 0, run.stderr[-2000:]
    assert not run.stderr.strip(), run.stderr[-2000:]
    return run.stdout

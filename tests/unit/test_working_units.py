"""Working memory's pure rules: transition tables, plan and input checks, configuration."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from agent_memory.errors import ConfigurationError, InvalidInputError
from agent_memory.memory.working.records import Task
from agent_memory.memory.working.tasks import (
    STEP_STATUSES,
    STEP_TRANSITIONS,
    TASK_STATUSES,
    TASK_TRANSITIONS,
    InvalidTransitionError,
    WorkingConfig,
    check_context_updates,
    check_step_result,
    check_step_status,
    check_step_transition,
    check_task_transition,
    parse_plan,
    step_sources,
)

TASK_EDGES = {
    ("pending", "in_progress"),
    ("pending", "failed"),
    ("in_progress", "completed"),
    ("in_progress", "failed"),
}
STEP_EDGES = {
    ("pending", "in_progress"),
    ("pending", "skipped"),
    ("in_progress", "completed"),
    ("in_progress", "failed"),
    ("in_progress", "skipped"),
}


def test_the_tables_hold_exactly_the_documented_edges():
    assert {(a, b) for a, targets in TASK_TRANSITIONS.items() for b in targets} == TASK_EDGES
    assert {(a, b) for a, targets in STEP_TRANSITIONS.items() for b in targets} == STEP_EDGES
    assert set(TASK_TRANSITIONS) == set(TASK_STATUSES)
    assert set(STEP_TRANSITIONS) == set(STEP_STATUSES)


@pytest.mark.parametrize("current", TASK_STATUSES)
@pytest.mark.parametrize("target", TASK_STATUSES)
def test_task_transition_check_follows_the_table(current, target):
    if (current, target) in TASK_EDGES:
        check_task_transition(current, target)
        return
    with pytest.raises(InvalidTransitionError) as caught:
        check_task_transition(current, target, subject="task t1")
    error = caught.value
    assert isinstance(error, InvalidInputError)
    assert (error.subject, error.current, error.target) == ("task t1", current, target)
    assert f"from {current} to {target}" in str(error)


@pytest.mark.parametrize("current", STEP_STATUSES)
@pytest.mark.parametrize("target", STEP_STATUSES)
def test_step_transition_check_follows_the_table(current, target):
    if (current, target) in STEP_EDGES:
        check_step_transition(current, target)
    else:
        with pytest.raises(InvalidTransitionError, match=f"from {current} to {target}"):
            check_step_transition(current, target)


def test_step_sources_are_the_table_read_backwards():
    assert step_sources("in_progress") == ("pending",)
    assert step_sources("completed") == ("in_progress",)
    assert set(step_sources("skipped")) == {"pending", "in_progress"}
    assert step_sources("pending") == ()


@pytest.mark.parametrize("status", ["done", "", "PENDING", None, 3, True])
def test_unknown_step_status_is_refused(status):
    with pytest.raises(InvalidInputError, match="status must be one of"):
        check_step_status(status)


def test_parse_plan_builds_indexed_pending_steps():
    steps = parse_plan(["search", {"action": "read", "params": {"url": "x"}}], WorkingConfig())
    assert [s["index"] for s in steps] == [0, 1]
    assert steps[1] == {
        "index": 1,
        "action": "read",
        "params": {"url": "x"},
        "status": "pending",
        "result": None,
        "started_at": None,
        "finished_at": None,
        "attempts": 0,
    }
    assert parse_plan(None, WorkingConfig()) == []
    assert parse_plan(["more"], WorkingConfig(), first_index=4)[0]["index"] == 4


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ("search", "must be a list"),
        ({"action": "x"}, "must be a list"),
        ([3], "action name or a mapping"),
        ([{"action": "x", "extra": 1}], "unknown keys"),
        ([{"params": {}}], "action must be a str"),
        ([{"action": ""}], "action is empty"),
        ([{"action": "x", "params": {"$where": "1"}}], "may not start with"),
        ([{"action": "x", "params": {"a": {"$ne": None}}}], "may not start with"),
        ([{"action": "x", "params": {"n": math.nan}}], "NaN"),
        ([{"action": "x", "params": {"blob": "x" * 40_000}}], "exceed"),
        (["x"] * 101, "at most 100 steps"),
    ],
)
def test_parse_plan_refuses_bad_plans(plan, message):
    with pytest.raises(InvalidInputError, match=message):
        parse_plan(plan, WorkingConfig())


@pytest.mark.parametrize("result", [None, 1, 2.5, "ok", True, [1, "a"], {"k": {"n": [1]}}])
def test_step_results_may_be_scalars_lists_or_mappings(result):
    assert check_step_result(result, WorkingConfig()) == result


@pytest.mark.parametrize(
    "result", [math.nan, math.inf, {"$set": 1}, {"a.b": 1}, [{"$gt": 1}], object(), "x" * 40_000]
)
def test_bad_step_results_are_refused(result):
    with pytest.raises(InvalidInputError):
        check_step_result(result, WorkingConfig())


@pytest.mark.parametrize(
    "updates",
    [
        {},
        {"$where": "1"},
        {"a.b": 1},
        {"": 1},
        {5: 1},
        {"k": {"$ne": None}},
        {"k": math.nan},
        {"k" * 300: 1},
        ["k", 1],
        "k=1",
    ],
)
def test_bad_context_updates_are_refused(updates):
    with pytest.raises(InvalidInputError):
        check_context_updates(updates)


def test_context_updates_accept_data_and_none():
    deep: dict = {"leaf": 1}
    for _ in range(10):
        deep = {"n": deep}
    checked = check_context_updates({"note": "$where", "gone": None, "deep": deep})
    assert checked == {"note": "$where", "gone": None, "deep": deep}


def test_nesting_deeper_than_allowed_is_refused():
    deep: dict = {"leaf": 1}
    for _ in range(40):
        deep = {"n": deep}
    with pytest.raises(InvalidInputError, match="nested deeper"):
        check_context_updates({"deep": deep})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"checkpoints_kept": 0},
        {"max_steps": 0},
        {"checkpoint_every_steps": -1},
        {"conflict_retries": 0},
        {"max_steps": True},
        {"max_context_bytes": 1.5},
        {"max_context_bytes": 15 * 1_048_576},
        {"max_steps": 1_000, "max_step_bytes": 65_536},
    ],
)
def test_config_refuses_values_that_cannot_work(kwargs):
    with pytest.raises(ConfigurationError):
        WorkingConfig(**kwargs)


def test_default_config_follows_the_blueprint():
    config = WorkingConfig()
    assert 5 <= config.checkpoint_every_steps <= 10
    assert config.checkpoints_kept == 10
    assert WorkingConfig(checkpoint_every_steps=0).checkpoint_every_steps == 0  # 0: never


def test_next_step_is_the_first_step_not_done():
    now = datetime.now(UTC)
    plan = parse_plan(["a", "b", "c"], WorkingConfig())
    plan[0]["status"], plan[1]["status"] = "completed", "skipped"
    doc = {
        "_id": "task_1",
        "agent_id": "a",
        "user_id": "u",
        "session_id": "s",
        "goal": "g",
        "status": "in_progress",
        "plan": plan,
        "context": {},
        "version": 3,
        "created_at": now,
        "updated_at": now,
    }
    task = Task.from_document(doc)
    assert task.next_step is not None and task.next_step.action == "c"
    assert task.steps_completed == 1
    plan[2]["status"] = "completed"
    assert Task.from_document(doc).next_step is None

"""Working memory over the wire: transitions, version guard, checkpoints, restore, resume,
tenancy, bad input (nothing written) and the documented round trips."""

from __future__ import annotations

import asyncio
import inspect
import math
from datetime import datetime

import pytest
from structlog.testing import capture_logs

from agent_memory.errors import ConflictError, InvalidInputError, NotFoundError
from agent_memory.memory.working.memory import (
    InvalidTransitionError,
    WorkingConfig,
    WorkingMemory,
)
from agent_memory.mongo.indexes import IndexManager
from agent_memory.tenancy import Tenant

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")
OTHER_AGENT = Tenant("other-agent", "alice")
STRANGERS = [pytest.param(BOB, id="other-user"), pytest.param(OTHER_AGENT, id="other-agent")]
STYLES = [pytest.param(True, id="expected-version"), pytest.param(False, id="read-version")]

# How each step status is reached from pending along valid edges.
STEP_PATHS = {
    "pending": [],
    "in_progress": ["in_progress"],
    "completed": ["in_progress", "completed"],
    "failed": ["in_progress", "failed"],
    "skipped": ["skipped"],
}
STEP_EDGES = {
    ("pending", "in_progress"),
    ("pending", "skipped"),
    ("in_progress", "completed"),
    ("in_progress", "failed"),
    ("in_progress", "skipped"),
}


@pytest.fixture
def memory(connection):
    return WorkingMemory(
        connection, config=WorkingConfig(checkpoint_every_steps=2, checkpoints_kept=3)
    )


async def raw(memory, task_id):
    return await memory.tasks.find_one({"_id": task_id})


async def task_in(memory, status, *, steps=("search", "read", "write"), tenant=ALICE):
    """A task brought to ``status`` along valid transitions."""
    task = await memory.create_task(tenant, "s-1", "Research vector search", plan=list(steps))
    if status == "pending":
        return task
    task = await memory.start_task(tenant, task.id)
    if status == "in_progress":
        return task
    if status == "failed":
        return await memory.fail_task(tenant, task.id, error="the tool broke")
    for index in range(len(steps)):
        task = await memory.advance_step(tenant, task.id, index, status="skipped")
    return await memory.complete_task(tenant, task.id)


async def step_in(memory, status):
    """An in-progress task whose step 0 is in ``status``."""
    task = await task_in(memory, "in_progress")
    for hop in STEP_PATHS[status]:
        task = await memory.advance_step(ALICE, task.id, 0, status=hop)
    return task


# --- creating and reading ------------------------------------------------------------------


async def test_create_stores_the_documented_shape(memory):
    task = await memory.create_task(
        ALICE,
        "s-1",
        "Research vector search",
        plan=["search", {"action": "read", "params": {"url": "https://example.org"}}],
        context={"focus": "performance"},
    )
    doc = await raw(memory, task.id)
    assert task.id.startswith("task_") and doc["_id"] == task.id
    assert {k: doc[k] for k in ("agent_id", "user_id", "session_id", "goal", "status")} == {
        "agent_id": "agent",
        "user_id": "alice",
        "session_id": "s-1",
        "goal": "Research vector search",
        "status": "pending",
    }
    assert doc["version"] == 1 and doc["context"] == {"focus": "performance"}
    assert doc["completed_at"] is None and doc["error"] is None
    assert isinstance(doc["created_at"], datetime) and doc["created_at"].tzinfo is not None
    assert [(s["index"], s["action"], s["status"]) for s in doc["plan"]] == [
        (0, "search", "pending"),
        (1, "read", "pending"),
    ]
    assert doc["plan"][1]["params"] == {"url": "https://example.org"}
    assert await memory.get_task(ALICE, task.id) == task
    assert "checkpoints" not in doc  # snapshots live in their own collection


async def test_a_task_runs_from_start_to_completion(memory):
    task = await task_in(memory, "in_progress", steps=("search", "read"))
    assert task.status == "in_progress" and task.version == 2
    task = await memory.advance_step(ALICE, task.id, 0, status="in_progress")
    step = task.plan[0]
    assert step.status == "in_progress" and step.attempts == 1 and step.started_at is not None
    task = await memory.advance_step(ALICE, task.id, 0, status="completed", result={"hits": 3})
    assert task.plan[0].result == {"hits": 3} and task.plan[0].finished_at is not None
    task = await memory.advance_step(ALICE, task.id, 1, status="skipped")
    task = await memory.complete_task(ALICE, task.id, expected_version=task.version)
    assert task.status == "completed" and task.completed_at is not None
    assert task.version == 6  # create 1, start, three step moves, complete


# --- transitions -----------------------------------------------------------------------------

TASK_OPS = {
    "start": lambda m, t, v: m.start_task(ALICE, t.id, expected_version=v),
    "complete": lambda m, t, v: m.complete_task(ALICE, t.id, expected_version=v),
    "fail": lambda m, t, v: m.fail_task(ALICE, t.id, error="no", expected_version=v),
}
TASK_VALID = {("pending", "start"), ("pending", "fail"), ("in_progress", "fail")}


@pytest.mark.parametrize("with_version", STYLES)
@pytest.mark.parametrize("status", ["pending", "in_progress", "completed", "failed"])
@pytest.mark.parametrize("op", sorted(TASK_OPS))
async def test_task_transitions_follow_the_table(memory, status, op, with_version):
    # One step, skipped: completing is valid from in_progress; the open-steps rule is
    # tested separately.
    task = await task_in(memory, status, steps=("only",))
    if status == "in_progress":
        task = await memory.advance_step(ALICE, task.id, 0, status="skipped")
    version = task.version if with_version else None
    before = await raw(memory, task.id)
    if (status, op) in TASK_VALID or (status, op) == ("in_progress", "complete"):
        moved = await TASK_OPS[op](memory, task, version)
        assert moved.version == task.version + 1
        return
    with pytest.raises(InvalidTransitionError, match=f"from {status} to") as caught:
        await TASK_OPS[op](memory, task, version)
    assert caught.value.current == status
    assert await raw(memory, task.id) == before


@pytest.mark.parametrize("with_version", STYLES)
@pytest.mark.parametrize("current", sorted(STEP_PATHS))
@pytest.mark.parametrize("target", sorted(STEP_PATHS))
async def test_step_transitions_follow_the_table(memory, current, target, with_version):
    task = await step_in(memory, current)
    version = task.version if with_version else None
    before = await raw(memory, task.id)
    if (current, target) in STEP_EDGES:
        moved = await memory.advance_step(
            ALICE, task.id, 0, status=target, expected_version=version
        )
        assert moved.plan[0].status == target and moved.version == task.version + 1
        return
    with pytest.raises(InvalidTransitionError, match=f"to {target}"):
        await memory.advance_step(ALICE, task.id, 0, status=target, expected_version=version)
    assert await raw(memory, task.id) == before


@pytest.mark.parametrize("with_version", STYLES)
@pytest.mark.parametrize("status", ["pending", "completed", "failed"])
async def test_steps_move_only_while_the_task_is_in_progress(memory, status, with_version):
    task = await task_in(memory, status)
    before = await raw(memory, task.id)
    version = task.version if with_version else None
    with pytest.raises(InvalidTransitionError, match="only while the task is in_progress"):
        await memory.advance_step(ALICE, task.id, 1, status="in_progress", expected_version=version)
    assert await raw(memory, task.id) == before


@pytest.mark.parametrize("with_version", STYLES)
@pytest.mark.parametrize("open_status", ["pending", "in_progress", "failed"])
async def test_complete_needs_every_step_completed_or_skipped(memory, open_status, with_version):
    task = await step_in(memory, open_status)
    for index in (1, 2):
        task = await memory.advance_step(ALICE, task.id, index, status="skipped")
    before = await raw(memory, task.id)
    with pytest.raises(InvalidTransitionError, match=r"steps \[0\] are not completed"):
        await memory.complete_task(
            ALICE, task.id, expected_version=task.version if with_version else None
        )
    assert await raw(memory, task.id) == before


# --- the version guard -----------------------------------------------------------------------


async def test_two_concurrent_moves_of_one_step_one_wins(memory):
    task = await task_in(memory, "in_progress")
    results = await asyncio.gather(
        *(
            memory.advance_step(
                ALICE, task.id, 0, status="in_progress", expected_version=task.version
            )
            for _ in range(2)
        ),
        return_exceptions=True,
    )
    assert sum(isinstance(r, ConflictError) for r in results) == 1, results
    (winner,) = [r for r in results if not isinstance(r, BaseException)]
    doc = await raw(memory, task.id)
    assert doc["version"] == task.version + 1 == winner.version
    assert doc["plan"][0]["status"] == "in_progress" and doc["plan"][0]["attempts"] == 1


async def test_concurrent_finishes_without_a_version_never_mix(memory):
    task = await step_in(memory, "in_progress")
    results = await asyncio.gather(
        memory.advance_step(ALICE, task.id, 0, status="completed", result="A"),
        memory.advance_step(ALICE, task.id, 0, status="failed", result="B"),
        return_exceptions=True,
    )
    wins = [r for r in results if not isinstance(r, BaseException)]
    losses = [r for r in results if isinstance(r, BaseException)]
    assert len(wins) == 1 and len(losses) == 1, results
    # Both read the same version, so the loser's write is refused by the guard; if it read
    # after the winner, the step is already final and the transition is refused instead.
    assert isinstance(losses[0], ConflictError | InvalidTransitionError)
    step = (await raw(memory, task.id))["plan"][0]
    assert (step["status"], step["result"]) == (wins[0].plan[0].status, wins[0].plan[0].result)
    assert (step["status"], step["result"]) in {("completed", "A"), ("failed", "B")}


async def test_concurrent_context_writes_with_a_version_one_wins_whole(memory):
    task = await task_in(memory, "in_progress")
    first = {"city": "Lisbon", "days": 3}
    second = {"city": "Porto", "days": 5}
    results = await asyncio.gather(
        memory.update_context(ALICE, task.id, first, expected_version=task.version),
        memory.update_context(ALICE, task.id, second, expected_version=task.version),
        return_exceptions=True,
    )
    assert sum(isinstance(r, ConflictError) for r in results) == 1, results
    doc = await raw(memory, task.id)
    assert doc["context"] in (first, second)  # never Lisbon with 5 days
    assert doc["version"] == task.version + 1


async def test_context_updates_of_distinct_keys_both_land(memory):
    task = await task_in(memory, "in_progress")
    await asyncio.gather(*(memory.update_context(ALICE, task.id, {f"k{i}": i}) for i in range(3)))
    doc = await raw(memory, task.id)
    assert doc["context"] == {"k0": 0, "k1": 1, "k2": 2}
    assert doc["version"] == task.version + 3


async def test_a_stale_version_is_a_conflict_and_writes_nothing(memory):
    task = await task_in(memory, "in_progress")
    await memory.update_context(ALICE, task.id, {"a": 1})
    before = await raw(memory, task.id)
    for call in (
        lambda: memory.advance_step(
            ALICE, task.id, 0, status="in_progress", expected_version=task.version
        ),
        lambda: memory.update_context(ALICE, task.id, {"b": 2}, expected_version=task.version),
        lambda: memory.add_steps(ALICE, task.id, ["more"], expected_version=task.version),
        lambda: memory.fail_task(ALICE, task.id, error="x", expected_version=task.version),
        lambda: memory.resume(ALICE, task.id, expected_version=task.version),
    ):
        with pytest.raises(ConflictError, match=f"at version {task.version + 1}"):
            await call()
    assert await raw(memory, task.id) == before


async def test_fail_task_without_a_version_survives_a_concurrent_change(memory):
    task = await task_in(memory, "in_progress")
    results = await asyncio.gather(
        memory.update_context(ALICE, task.id, {"note": "late"}),
        memory.fail_task(ALICE, task.id, error="gave up"),
        return_exceptions=True,
    )
    assert not isinstance(results[1], BaseException), results
    assert not isinstance(results[0], BaseException) or isinstance(
        results[0], InvalidTransitionError
    )
    doc = await raw(memory, task.id)
    assert doc["status"] == "failed" and doc["error"] == "gave up"


def rival_between_read_and_write(monkeypatch, memory, connection, change):
    """Make ``change`` (run by another worker) land right after ``memory``'s next read, so the
    write that follows is computed from a stale version: a deterministic lost race."""
    rival = WorkingMemory(connection)
    read = memory._store.read
    pending = [change]

    async def read_then_race(task_id, tenant):
        doc = await read(task_id, tenant)
        if pending:
            await pending.pop()(rival, task_id)
        return doc

    monkeypatch.setattr(memory._store, "read", read_then_race)


async def test_a_lost_race_on_other_context_keys_is_retried(memory, connection, monkeypatch):
    task = await task_in(memory, "in_progress")
    rival_between_read_and_write(
        monkeypatch,
        memory,
        connection,
        lambda rival, task_id: rival.update_context(ALICE, task_id, {"theirs": 1}),
    )
    updated = await memory.update_context(ALICE, task.id, {"mine": 2})
    assert updated.context == {"theirs": 1, "mine": 2}
    assert updated.version == task.version + 2


async def test_a_lost_race_on_the_same_context_key_is_a_conflict(memory, connection, monkeypatch):
    task = await task_in(memory, "in_progress")
    rival_between_read_and_write(
        monkeypatch,
        memory,
        connection,
        lambda rival, task_id: rival.update_context(ALICE, task_id, {"city": "Porto"}),
    )
    with pytest.raises(ConflictError, match="same context keys"):
        await memory.update_context(ALICE, task.id, {"city": "Lisbon"})
    assert (await raw(memory, task.id))["context"] == {"city": "Porto"}


async def test_a_lost_race_is_not_retried_for_a_step(memory, connection, monkeypatch):
    task = await task_in(memory, "in_progress")
    rival_between_read_and_write(
        monkeypatch,
        memory,
        connection,
        lambda rival, task_id: rival.update_context(ALICE, task_id, {"x": 1}),
    )
    with pytest.raises(ConflictError, match="concurrent change won"):
        await memory.advance_step(ALICE, task.id, 0, status="in_progress")
    assert (await raw(memory, task.id))["plan"][0]["status"] == "pending"


async def test_a_lost_race_is_retried_for_fail_task(memory, connection, monkeypatch):
    task = await task_in(memory, "in_progress")
    rival_between_read_and_write(
        monkeypatch,
        memory,
        connection,
        lambda rival, task_id: rival.advance_step(ALICE, task_id, 0, status="in_progress"),
    )
    failed = await memory.fail_task(ALICE, task.id, error="out of budget")
    assert failed.status == "failed" and failed.plan[0].status == "in_progress"
    assert failed.version == task.version + 2


async def test_a_failed_auto_checkpoint_leaves_the_step_moved(memory, monkeypatch):
    task = await step_in(memory, "completed")
    task = await memory.advance_step(ALICE, task.id, 1, status="in_progress")

    async def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(memory._saved, "save", broken)
    with capture_logs() as logs:
        task = await memory.advance_step(ALICE, task.id, 1, status="completed")
    assert task.plan[1].status == "completed"
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["auto_checkpoint_failed"]


# --- context ---------------------------------------------------------------------------------


async def test_context_keys_are_set_and_none_removes(memory):
    task = await task_in(memory, "in_progress")
    task = await memory.update_context(
        ALICE, task.id, {"focus": "speed", "seen": ["$rankFusion"], "tmp": 1}
    )
    task = await memory.update_context(ALICE, task.id, {"tmp": None, "focus": "cost"})
    assert task.context == {"focus": "cost", "seen": ["$rankFusion"]}
    assert (await raw(memory, task.id))["context"] == task.context


async def test_operator_looking_strings_are_stored_as_data(memory):
    task = await task_in(memory, "in_progress")
    task = await memory.update_context(ALICE, task.id, {"note": "$where", "q": "{'$ne': null}"})
    assert (await raw(memory, task.id))["context"] == {"note": "$where", "q": "{'$ne': null}"}


@pytest.mark.parametrize(
    "updates",
    [
        {"$where": "sleep(1000)"},
        {"a.b": 1},
        {"": 1},
        {"k": {"$ne": None}},
        {"k": [{"$gt": ""}]},
        {"k": math.nan},
        {"k": math.inf},
        {},
        "k=1",
    ],
)
async def test_bad_context_updates_write_nothing(memory, updates):
    task = await task_in(memory, "in_progress")
    before = await raw(memory, task.id)
    with pytest.raises(InvalidInputError):
        await memory.update_context(ALICE, task.id, updates)
    assert await raw(memory, task.id) == before


async def test_an_oversize_context_is_refused_before_writing(connection):
    memory = WorkingMemory(connection, config=WorkingConfig(max_context_bytes=2_000))
    task = await task_in(memory, "in_progress")
    task = await memory.update_context(ALICE, task.id, {"a": "x" * 1_200})
    before = await raw(memory, task.id)
    for updates in ({"b": "y" * 1_200}, {"huge": "z" * 5_000}):
        with pytest.raises(InvalidInputError, match="max_context_bytes"):
            await memory.update_context(ALICE, task.id, updates)
    assert await raw(memory, task.id) == before
    # Replacing the big value with a small one fits.
    task = await memory.update_context(ALICE, task.id, {"a": None, "b": "y" * 1_200})
    assert set(task.context) == {"b"}
    with pytest.raises(InvalidInputError, match="max_context_bytes"):
        await memory.create_task(ALICE, "s-1", "goal", context={"huge": "z" * 5_000})


@pytest.mark.parametrize("status", ["completed", "failed"])
async def test_a_finished_task_keeps_its_context_and_plan(memory, status):
    task = await task_in(memory, status)
    before = await raw(memory, task.id)
    for call in (
        lambda: memory.update_context(ALICE, task.id, {"late": 1}),
        lambda: memory.add_steps(ALICE, task.id, ["late"]),
        lambda: memory.checkpoint(ALICE, task.id),
    ):
        with pytest.raises(InvalidTransitionError, match="pending or in_progress"):
            await call()
    assert await raw(memory, task.id) == before


# --- plans and steps -------------------------------------------------------------------------


async def test_add_steps_appends_with_their_positions(memory):
    task = await task_in(memory, "in_progress", steps=("a",))
    task = await memory.add_steps(ALICE, task.id, ["b", {"action": "c", "params": {"n": 1}}])
    assert [(s.index, s.action, s.status) for s in task.plan] == [
        (0, "a", "pending"),
        (1, "b", "pending"),
        (2, "c", "pending"),
    ]
    task = await memory.advance_step(ALICE, task.id, 2, status="skipped")
    assert task.plan[2].status == "skipped"


async def test_a_plan_never_grows_past_max_steps(connection):
    memory = WorkingMemory(connection, config=WorkingConfig(max_steps=3))
    task = await task_in(memory, "in_progress", steps=("a", "b"))
    before = await raw(memory, task.id)
    with pytest.raises(InvalidInputError, match="at most 3 steps"):
        await memory.add_steps(ALICE, task.id, ["c", "d"])
    assert await raw(memory, task.id) == before
    with pytest.raises(InvalidInputError, match="at most 3 steps"):
        await memory.create_task(ALICE, "s-1", "goal", plan=["a"] * 4)
    with pytest.raises(InvalidInputError, match="step_index must be an int from 0 to 2, got 3"):
        await memory.advance_step(ALICE, task.id, 3, status="in_progress")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"step_index": True}, "must be an int"),
        ({"step_index": "0"}, "must be an int"),
        ({"step_index": 1.0}, "must be an int"),
        ({"step_index": -1}, "step_index must be an int from 0 to 99, got -1"),
        ({"step_index": 3}, "out of range: the plan has 3 steps"),
        ({"step_index": 99}, "out of range: the plan has 3 steps"),
        ({"status": "done"}, "status must be one of"),
        ({"status": None}, "status must be one of"),
        ({"status": "pending"}, "to pending"),
        ({"result": math.nan}, "NaN"),
        ({"result": {"$set": {"status": "completed"}}}, "may not start with"),
        ({"result": "x" * 40_000}, "exceeds"),
        ({"status": "in_progress", "result": "early"}, "when a step finishes"),
        ({"expected_version": 0}, "expected_version"),
        ({"expected_version": True}, "expected_version"),
        ({"expected_version": "2"}, "expected_version"),
    ],
)
async def test_bad_step_input_writes_nothing(memory, kwargs, message):
    task = await step_in(memory, "in_progress")
    before = await raw(memory, task.id)
    call = {"step_index": 0, "status": "completed", "result": None, **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        await memory.advance_step(ALICE, task.id, call.pop("step_index"), **call)
    assert await raw(memory, task.id) == before


@pytest.mark.parametrize("with_version", STYLES)
async def test_an_index_past_the_plan_is_refused_in_both_styles(memory, with_version):
    task = await task_in(memory, "in_progress")
    before = await raw(memory, task.id)
    with pytest.raises(InvalidInputError, match="the plan has 3 steps"):
        await memory.advance_step(
            ALICE,
            task.id,
            7,
            status="in_progress",
            expected_version=task.version if with_version else None,
        )
    assert await raw(memory, task.id) == before


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("s-1", ""), {}),
        (("s-1", 42), {}),
        (("s-1", "g" * 9_000), {}),
        (("", "goal"), {}),
        ((None, "goal"), {}),
        (("s-1", "goal"), {"plan": "search"}),
        (("s-1", "goal"), {"plan": [{"action": "x", "params": {"$where": "1"}}]}),
        (("s-1", "goal"), {"plan": [{"action": ""}]}),
        (("s-1", "goal"), {"context": {"a.b": 1}}),
        (("s-1", "goal"), {"context": {"n": math.nan}}),
    ],
)
async def test_bad_create_input_inserts_nothing(memory, args, kwargs):
    with pytest.raises(InvalidInputError):
        await memory.create_task(ALICE, *args, **kwargs)
    assert await memory.tasks.count_documents({}) == 0


@pytest.mark.parametrize("task_id", [None, "", "   ", 42, ["task"], {"$ne": None}, "a\x00b"])
async def test_bad_task_ids_are_refused_everywhere(memory, task_id):
    task = await task_in(memory, "in_progress")
    before = await raw(memory, task.id)
    calls = [
        lambda: memory.get_task(ALICE, task_id),
        lambda: memory.start_task(ALICE, task_id),
        lambda: memory.complete_task(ALICE, task_id),
        lambda: memory.fail_task(ALICE, task_id, error="x"),
        lambda: memory.advance_step(ALICE, task_id, 0, status="in_progress"),
        lambda: memory.update_context(ALICE, task_id, {"a": 1}),
        lambda: memory.add_steps(ALICE, task_id, ["x"]),
        lambda: memory.checkpoint(ALICE, task_id),
        lambda: memory.list_checkpoints(ALICE, task_id),
        lambda: memory.restore(ALICE, task_id),
        lambda: memory.resume(ALICE, task_id),
    ]
    for call in calls:
        with pytest.raises(InvalidInputError):
            await call()
    assert await raw(memory, task.id) == before


async def test_a_tenant_must_be_a_tenant(memory):
    task = await task_in(memory, "pending")
    with pytest.raises(InvalidInputError, match="tenant must be a Tenant"):
        await memory.start_task({"agent_id": "agent", "user_id": "alice"}, task.id)
    with pytest.raises(InvalidInputError, match="tenant must be a Tenant"):
        await memory.list_active_tasks("alice")
    with pytest.raises(InvalidInputError):
        Tenant("agent", "")
    assert (await raw(memory, task.id))["status"] == "pending"


def test_every_method_takes_the_tenant_first():
    """As every other store does: ``method(tenant, task_id, ...)``."""
    taking = {}
    for name, method in inspect.getmembers(WorkingMemory, inspect.iscoroutinefunction):
        parameters = list(inspect.signature(method).parameters.values())[1:]  # after self
        if not name.startswith("_") and any(p.name == "tenant" for p in parameters):
            taking[name] = parameters[0]
    assert set(taking) >= {"get_task", "advance_step", "restore", "resume", "forget_user"}
    for name, first in taking.items():
        assert first.name == "tenant", name
        assert first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD, name


async def test_a_call_in_the_old_order_fails_clearly_and_writes_nothing(memory):
    task = await task_in(memory, "in_progress")
    await memory.checkpoint(ALICE, task.id)
    before = await raw(memory, task.id)
    checkpoints = await memory.checkpoints.count_documents({})
    # The task id first and the tenant by keyword, as the methods once took them.
    by_keyword = [
        lambda: memory.get_task(task.id, tenant=ALICE),
        lambda: memory.start_task(task.id, tenant=ALICE),
        lambda: memory.complete_task(task.id, tenant=ALICE),
        lambda: memory.fail_task(task.id, error="x", tenant=ALICE),
        lambda: memory.advance_step(task.id, 0, status="completed", tenant=ALICE),
        lambda: memory.add_steps(task.id, ["x"], tenant=ALICE),
        lambda: memory.update_context(task.id, {"a": 1}, tenant=ALICE),
        lambda: memory.checkpoint(task.id, tenant=ALICE),
        lambda: memory.list_checkpoints(task.id, tenant=ALICE),
        lambda: memory.restore(task.id, tenant=ALICE),
        lambda: memory.resume(task.id, tenant=ALICE),
    ]
    for call in by_keyword:
        with pytest.raises(TypeError, match="multiple values for argument 'tenant'"):
            await call()
    # The task id and the tenant swapped, both by position.
    swapped = [
        lambda: memory.get_task(task.id, ALICE),
        lambda: memory.start_task(task.id, ALICE),
        lambda: memory.complete_task(task.id, ALICE),
        lambda: memory.fail_task(task.id, ALICE, error="x"),
        lambda: memory.advance_step(task.id, ALICE, 0, status="completed"),
        lambda: memory.add_steps(task.id, ALICE, ["x"]),
        lambda: memory.update_context(task.id, ALICE, {"a": 1}),
        lambda: memory.checkpoint(task.id, ALICE),
        lambda: memory.list_checkpoints(task.id, ALICE),
        lambda: memory.restore(task.id, ALICE),
        lambda: memory.resume(task.id, ALICE),
    ]
    for call in swapped:
        with pytest.raises(InvalidInputError, match="tenant must be a Tenant, got str"):
            await call()
    assert await raw(memory, task.id) == before
    assert await memory.checkpoints.count_documents({}) == checkpoints


# --- tenancy ---------------------------------------------------------------------------------


@pytest.mark.parametrize("stranger", STRANGERS)
async def test_another_tenants_task_is_not_found_and_untouched(memory, stranger):
    task = await step_in(memory, "in_progress")
    await memory.checkpoint(ALICE, task.id)
    before = await raw(memory, task.id)
    checkpoints = await memory.checkpoints.count_documents({})
    calls = [
        lambda: memory.get_task(stranger, task.id),
        lambda: memory.start_task(stranger, task.id),
        lambda: memory.start_task(stranger, task.id, expected_version=task.version),
        lambda: memory.complete_task(stranger, task.id),
        lambda: memory.fail_task(stranger, task.id, error="x"),
        lambda: memory.fail_task(stranger, task.id, error="x", expected_version=task.version),
        lambda: memory.advance_step(stranger, task.id, 0, status="completed"),
        lambda: memory.advance_step(
            stranger, task.id, 0, status="completed", expected_version=task.version
        ),
        lambda: memory.update_context(stranger, task.id, {"a": 1}),
        lambda: memory.add_steps(stranger, task.id, ["x"]),
        lambda: memory.checkpoint(stranger, task.id),
        lambda: memory.restore(stranger, task.id),
        lambda: memory.resume(stranger, task.id),
    ]
    for call in calls:
        with pytest.raises(NotFoundError):
            await call()
    assert await memory.list_checkpoints(stranger, task.id) == []
    assert await memory.list_active_tasks(stranger) == []
    assert await memory.forget_user(stranger) == {"tasks": 0, "checkpoints": 0}
    assert await raw(memory, task.id) == before
    assert await memory.checkpoints.count_documents({}) == checkpoints


async def test_an_unknown_task_is_not_found(memory):
    with pytest.raises(NotFoundError, match="no task task_missing"):
        await memory.advance_step(
            ALICE, "task_missing", 0, status="in_progress", expected_version=1
        )
    with pytest.raises(NotFoundError):
        await memory.get_task(ALICE, "task_missing")


async def test_active_tasks_are_listed_newest_first_per_tenant_and_session(memory):
    done = await task_in(memory, "completed")
    failed = await task_in(memory, "failed")
    older = await task_in(memory, "pending")
    await asyncio.sleep(0.01)  # timestamps are milliseconds: keep the order unambiguous
    newer = await task_in(memory, "in_progress")
    await asyncio.sleep(0.01)
    other_session = await memory.create_task(ALICE, "s-2", "other session")
    await task_in(memory, "in_progress", tenant=BOB)
    await asyncio.sleep(0.01)
    await memory.update_context(ALICE, older.id, {"touched": True})  # now the newest
    listed = [t.id for t in await memory.list_active_tasks(ALICE)]
    assert listed == [older.id, other_session.id, newer.id]
    assert done.id not in listed and failed.id not in listed
    assert [t.id for t in await memory.list_active_tasks(ALICE, "s-2")] == [other_session.id]
    assert [t.id for t in await memory.list_active_tasks(ALICE, "s-1", limit=1)] == [older.id]
    with pytest.raises(InvalidInputError):
        await memory.list_active_tasks(ALICE, limit=0)


# --- checkpoints -----------------------------------------------------------------------------


async def test_a_checkpoint_is_taken_every_n_completed_steps(memory):
    task = await task_in(memory, "in_progress", steps=("a", "b", "c", "d", "e"))
    for index in range(5):
        task = await memory.advance_step(ALICE, task.id, index, status="in_progress")
        task = await memory.advance_step(ALICE, task.id, index, status="completed")
        if index == 1:
            at_two = task
    saved = await memory.list_checkpoints(ALICE, task.id, include_snapshot=True)
    assert [(c.reason, c.step) for c in saved] == [("auto", 4), ("auto", 2)]
    oldest = saved[-1]
    assert oldest.version == at_two.version and oldest.snapshot is not None
    assert oldest.snapshot.plan == at_two.plan and oldest.snapshot.status == "in_progress"
    assert (oldest.agent_id, oldest.user_id, oldest.task_id) == ("agent", "alice", task.id)


async def test_auto_checkpoints_can_be_switched_off(connection):
    memory = WorkingMemory(connection, config=WorkingConfig(checkpoint_every_steps=0))
    task = await task_in(memory, "in_progress", steps=("a",))
    await memory.advance_step(ALICE, task.id, 0, status="in_progress")
    await memory.advance_step(ALICE, task.id, 0, status="completed")
    assert await memory.list_checkpoints(ALICE, task.id) == []


async def test_only_the_newest_checkpoints_are_kept_per_task(memory):
    task = await task_in(memory, "in_progress")
    other = await task_in(memory, "in_progress")
    await memory.checkpoint(ALICE, other.id)
    taken = []
    for i in range(5):
        await memory.update_context(ALICE, task.id, {"i": i})
        taken.append(await memory.checkpoint(ALICE, task.id))
    kept = await memory.list_checkpoints(ALICE, task.id)
    assert [c.id for c in kept] == [c.id for c in reversed(taken[-3:])]
    assert all(c.snapshot is None for c in kept)  # left out unless asked for
    assert await memory.checkpoints.count_documents({"task_id": task.id}) == 3
    assert len(await memory.list_checkpoints(ALICE, other.id)) == 1


async def test_checkpoint_reason_is_checked(memory):
    task = await task_in(memory, "in_progress")
    with pytest.raises(InvalidInputError, match="reason"):
        await memory.checkpoint(ALICE, task.id, reason="$set")
    assert await memory.checkpoints.count_documents({}) == 0


# --- restore ---------------------------------------------------------------------------------


async def test_restore_latest_puts_the_snapshot_back_atomically(memory):
    task = await step_in(memory, "in_progress")
    task = await memory.update_context(ALICE, task.id, {"phase": "one"})
    saved = await memory.checkpoint(ALICE, task.id)
    task = await memory.advance_step(ALICE, task.id, 0, status="failed", result="boom")
    task = await memory.update_context(ALICE, task.id, {"phase": "two", "junk": 1})
    task = await memory.fail_task(ALICE, task.id, error="broken")

    restored = await memory.restore(ALICE, task.id)
    assert restored.version == task.version + 1
    assert restored.status == "in_progress" and restored.error is None  # failed -> in_progress
    assert restored.plan == saved.snapshot.plan and restored.context == {"phase": "one"}
    assert restored.restored_from == saved.id
    assert await memory.get_task(ALICE, task.id) == restored


async def test_restore_a_chosen_checkpoint(memory):
    task = await task_in(memory, "pending")
    first = await memory.checkpoint(ALICE, task.id)
    task = await memory.start_task(ALICE, task.id)
    await memory.update_context(ALICE, task.id, {"later": True})
    await memory.checkpoint(ALICE, task.id)
    restored = await memory.restore(ALICE, task.id, checkpoint_id=first.id)
    assert restored.status == "pending" and restored.context == {}
    assert restored.plan == first.snapshot.plan and restored.restored_from == first.id


async def test_restore_refuses_checkpoints_of_another_task_or_tenant(memory):
    task = await step_in(memory, "in_progress")
    mine = await memory.checkpoint(ALICE, task.id)
    sibling = await task_in(memory, "in_progress")
    siblings = await memory.checkpoint(ALICE, sibling.id)
    bobs_task = await task_in(memory, "in_progress", tenant=BOB)
    bobs = await memory.checkpoint(BOB, bobs_task.id)
    before = await raw(memory, task.id)
    for checkpoint_id in (siblings.id, bobs.id, "ckpt_missing"):
        with pytest.raises(NotFoundError, match="nothing restored"):
            await memory.restore(ALICE, task.id, checkpoint_id=checkpoint_id)
    with pytest.raises(NotFoundError):  # Bob cannot apply his checkpoint to Alice's task
        await memory.restore(BOB, task.id, checkpoint_id=bobs.id)
    with pytest.raises(NotFoundError):
        await memory.restore(BOB, task.id, checkpoint_id=mine.id)
    assert await raw(memory, task.id) == before
    assert await raw(memory, bobs_task.id) == await raw(memory, bobs_task.id)


async def test_restore_without_checkpoints_and_of_a_completed_task_is_refused(memory):
    fresh = await task_in(memory, "in_progress")
    with pytest.raises(NotFoundError, match="no checkpoint"):
        await memory.restore(ALICE, fresh.id)
    task = await task_in(memory, "in_progress", steps=("a",))
    await memory.checkpoint(ALICE, task.id)
    task = await memory.advance_step(ALICE, task.id, 0, status="skipped")
    task = await memory.complete_task(ALICE, task.id)
    before = await raw(memory, task.id)
    for version in (None, task.version):
        with pytest.raises(InvalidTransitionError, match="completed task is final"):
            await memory.restore(ALICE, task.id, expected_version=version)
    assert await raw(memory, task.id) == before


async def test_restore_with_a_stale_version_is_a_conflict(memory):
    task = await step_in(memory, "in_progress")
    await memory.checkpoint(ALICE, task.id)
    moved = await memory.advance_step(ALICE, task.id, 0, status="completed")
    before = await raw(memory, task.id)
    with pytest.raises(ConflictError):
        await memory.restore(ALICE, task.id, expected_version=task.version)
    assert await raw(memory, task.id) == before
    restored = await memory.restore(ALICE, task.id, expected_version=moved.version)
    assert restored.plan[0].status == "in_progress"


async def test_a_restore_racing_a_step_never_mixes_states(memory):
    task = await step_in(memory, "in_progress")
    task = await memory.update_context(ALICE, task.id, {"phase": "saved"})
    saved = await memory.checkpoint(ALICE, task.id)
    results = await asyncio.gather(
        memory.restore(ALICE, task.id, expected_version=task.version),
        memory.advance_step(ALICE, task.id, 0, status="completed", expected_version=task.version),
        return_exceptions=True,
    )
    assert sum(isinstance(r, ConflictError) for r in results) == 1, results
    doc = await raw(memory, task.id)
    assert doc["version"] == task.version + 1
    if isinstance(results[1], ConflictError):  # the restore won
        assert doc["restored_from"] == saved.id and doc["plan"][0]["status"] == "in_progress"
    else:
        assert doc["restored_from"] is None and doc["plan"][0]["status"] == "completed"


async def test_an_unconditional_restore_lands_whole_after_a_concurrent_step(memory):
    task = await step_in(memory, "in_progress")
    saved = await memory.checkpoint(ALICE, task.id)
    await asyncio.gather(
        memory.advance_step(ALICE, task.id, 0, status="completed", result="done"),
        memory.restore(ALICE, task.id),
        return_exceptions=True,
    )
    doc = await raw(memory, task.id)
    step = doc["plan"][0]
    # Either the restore came last (exactly the snapshot) or the step landed on top of the
    # restored state; never a snapshot plan with a stray result.
    assert (step["status"], step["result"]) in {("in_progress", None), ("completed", "done")}
    assert doc["context"] == saved.snapshot.context


# --- resume ----------------------------------------------------------------------------------


async def test_resume_after_a_crash_requeues_the_stuck_step(memory, connection):
    task = await task_in(memory, "in_progress")
    task = await memory.advance_step(ALICE, task.id, 0, status="in_progress")
    task = await memory.advance_step(ALICE, task.id, 0, status="completed")
    task = await memory.advance_step(ALICE, task.id, 1, status="in_progress")
    # The worker dies here. A new one, with its own WorkingMemory, picks the task up.
    survivor = WorkingMemory(connection)
    resumed = await survivor.resume(ALICE, task.id)
    assert resumed.requeued == (1,)
    assert resumed.next_step is not None and resumed.next_step.index == 1
    step = resumed.task.plan[1]
    assert step.status == "pending" and step.started_at is None and step.attempts == 1
    assert resumed.task.plan[0].status == "completed"
    assert resumed.task.version == task.version + 1
    again = await survivor.advance_step(ALICE, task.id, 1, status="in_progress")
    assert again.plan[1].attempts == 2


async def test_resume_with_nothing_to_repair_writes_nothing(memory):
    task = await step_in(memory, "completed")
    before = await raw(memory, task.id)
    resumed = await memory.resume(ALICE, task.id)
    assert resumed.requeued == () and resumed.next_step.index == 1
    assert await raw(memory, task.id) == before


async def test_resume_retries_a_failed_task(memory):
    task = await step_in(memory, "failed")
    task = await memory.fail_task(ALICE, task.id, error="tool down")
    resumed = await memory.resume(ALICE, task.id)
    assert resumed.task.status == "in_progress" and resumed.task.error is None
    assert resumed.requeued == (0,) and resumed.task.plan[0].status == "pending"


async def test_resume_of_a_pending_task_starts_it(memory):
    task = await task_in(memory, "pending")
    resumed = await memory.resume(ALICE, task.id)
    assert resumed.task.status == "in_progress" and resumed.next_step.index == 0


async def test_a_completed_task_is_not_resumed(memory):
    task = await task_in(memory, "completed")
    before = await raw(memory, task.id)
    with pytest.raises(InvalidTransitionError, match="completed task is final"):
        await memory.resume(ALICE, task.id)
    assert await raw(memory, task.id) == before


# --- forgetting ------------------------------------------------------------------------------


async def test_forget_user_deletes_only_that_users_tasks_and_checkpoints(memory):
    for tenant in (ALICE, BOB, OTHER_AGENT):
        task = await task_in(memory, "in_progress", tenant=tenant)
        await memory.checkpoint(tenant, task.id)
    await task_in(memory, "pending")
    assert await memory.forget_user(ALICE) == {"tasks": 2, "checkpoints": 1}
    assert await memory.tasks.count_documents({"user_id": "alice", "agent_id": "agent"}) == 0
    assert await memory.checkpoints.count_documents({"user_id": "alice", "agent_id": "agent"}) == 0
    assert await memory.tasks.count_documents({}) == 2
    assert await memory.checkpoints.count_documents({}) == 2
    assert await memory.forget_user(ALICE) == {"tasks": 0, "checkpoints": 0}


# --- logging ---------------------------------------------------------------------------------


async def test_events_are_logged_without_context_contents(memory):
    with capture_logs() as logs:
        task = await task_in(memory, "in_progress")
        await memory.update_context(ALICE, task.id, {"secret": "hunter2-password"})
        await memory.advance_step(
            ALICE, task.id, 0, status="skipped", result={"token": "hunter2-password"}
        )
        await memory.checkpoint(ALICE, task.id)
        await memory.restore(ALICE, task.id)
        await memory.resume(ALICE, task.id)
        await memory.forget_user(ALICE)
    events = [entry["event"] for entry in logs]
    for expected in (
        "task_created",
        "task_started",
        "task_context_updated",
        "step_advanced",
        "checkpoint_taken",
        "task_restored",
        "task_resumed",
        "tasks_forgotten",
    ):
        assert expected in events
    assert "hunter2" not in repr(logs)


# --- indexes -------------------------------------------------------------------------------


async def test_index_setup_creates_the_working_memory_indexes(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    tasks = await connection.collection("tasks").index_information()
    checkpoints = await connection.collection("checkpoints").index_information()
    assert tasks["tenant_session_status_updated"]["key"][:2] == [("agent_id", 1), ("user_id", 1)]
    assert "tenant_status_updated" in tasks
    assert checkpoints["tenant_task_version_created"]["key"] == [
        ("agent_id", 1),
        ("user_id", 1),
        ("task_id", 1),
        ("version", -1),
        ("created_at", -1),
    ]


# --- round trips -----------------------------------------------------------------------------


async def test_round_trips_stay_within_the_documented_numbers(counted):
    connection, counter = counted
    memory = WorkingMemory(
        connection, config=WorkingConfig(checkpoint_every_steps=1, checkpoints_kept=1)
    )

    async def sent(call):
        with counter.count() as commands:
            result = await call
        return result, commands

    # Every write announces itself (an update of the user's generation token): the active
    # tasks an agent lists at each turn are kept between turns while none changed.
    task, cmds = await sent(memory.create_task(ALICE, "s-1", "goal", plan=["a", "b", "c"]))
    assert cmds == ["insert", "update"]
    _, cmds = await sent(memory.get_task(ALICE, task.id))
    assert cmds == ["find"]
    _, cmds = await sent(memory.list_active_tasks(ALICE))
    assert cmds == ["find", "find"]  # the token, then the tasks
    listed, cmds = await sent(memory.list_active_tasks(ALICE))
    assert cmds == ["find"] and [t.id for t in listed] == [task.id]  # kept: the token alone
    task, cmds = await sent(memory.start_task(ALICE, task.id, expected_version=1))
    assert cmds == ["findAndModify", "update"]
    listed, cmds = await sent(memory.list_active_tasks(ALICE))
    assert cmds == ["find", "find"] and listed[0].status == "in_progress"  # read anew
    task, cmds = await sent(
        memory.advance_step(ALICE, task.id, 0, status="in_progress", expected_version=task.version)
    )
    assert cmds == ["findAndModify", "update"]
    task, cmds = await sent(memory.advance_step(ALICE, task.id, 1, status="skipped"))
    assert cmds == ["find", "findAndModify", "update"]
    task, cmds = await sent(  # takes an auto-checkpoint (every step), nothing to prune yet
        memory.advance_step(ALICE, task.id, 0, status="completed", expected_version=task.version)
    )
    assert cmds == ["findAndModify", "update", "insert", "find"]
    task, cmds = await sent(memory.update_context(ALICE, task.id, {"k": 1}))
    assert cmds == ["find", "findAndModify", "update"]
    task, cmds = await sent(memory.add_steps(ALICE, task.id, ["d"]))
    assert cmds == ["find", "findAndModify", "update"]
    _, cmds = await sent(memory.checkpoint(ALICE, task.id))  # prunes the auto one
    assert cmds == ["find", "insert", "find", "delete"]
    _, cmds = await sent(memory.list_checkpoints(ALICE, task.id))
    assert cmds == ["find"]
    task, cmds = await sent(memory.restore(ALICE, task.id))
    assert cmds == ["find", "findAndModify", "update"]
    _, cmds = await sent(memory.resume(ALICE, task.id))
    assert cmds == ["find"]  # nothing stuck: no write
    task = await memory.advance_step(ALICE, task.id, 2, status="in_progress")
    _, cmds = await sent(memory.resume(ALICE, task.id))
    assert cmds == ["find", "findAndModify", "update"]
    with counter.count() as cmds, pytest.raises(ConflictError):
        await memory.fail_task(ALICE, task.id, error="x", expected_version=1)
    assert cmds == ["findAndModify", "find"]  # a guarded write that misses: one read explains
    _, cmds = await sent(memory.forget_user(ALICE))
    assert cmds == ["delete", "delete", "delete"]


async def test_list_tasks_includes_finished_ones_newest_first(memory):
    done = await memory.create_task(ALICE, "s1", "done", plan=["a"])
    await memory.start_task(ALICE, done.id)
    await memory.advance_step(ALICE, done.id, 0, status="skipped")
    await memory.complete_task(ALICE, done.id)
    pending = await memory.create_task(ALICE, "s2", "pending", plan=["a"])
    await memory.create_task(BOB, "s1", "bob's", plan=["a"])
    await memory.create_task(OTHER_AGENT, "s1", "elsewhere", plan=["a"])
    listed = await memory.list_tasks(ALICE)
    assert [t.id for t in listed] == [pending.id, done.id]
    assert [t.status for t in listed] == ["pending", "completed"]
    assert [t.id for t in await memory.list_active_tasks(ALICE)] == [pending.id]
    assert [t.id for t in await memory.list_tasks(ALICE, "s1")] == [done.id]
    assert [t.id for t in await memory.list_tasks(ALICE, limit=1)] == [pending.id]
    with pytest.raises(InvalidInputError):
        await memory.list_tasks(ALICE, limit=0)
    with pytest.raises(InvalidInputError):
        await memory.list_tasks(ALICE, {"$ne": None})

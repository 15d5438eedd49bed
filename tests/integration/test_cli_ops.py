"""The operations commands as a user runs them: decay, feedback, forget, stats."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
import typer
from pymongo import MongoClient
from typer.testing import CliRunner

from agent_memory.cli import app
from agent_memory.cli import forget as forget_command
from agent_memory.config import load_settings
from agent_memory.memory import MemorySystem, Tenant
from agent_memory.memory.conversation.records import NewMessage
from agent_memory.mongo.connection import connect
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.embedders.fake import FakeEmbedder

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")
ALICE_ELSEWHERE = Tenant("other-agent", "alice")
DOWN = {
    "MONGODB_URI": "mongodb://127.0.0.1:9/",
    "AGENT_MEMORY_CONNECT_TIMEOUT_MS": "300",
    "AGENT_MEMORY_EMBEDDER": "fake",
}
HOSTILE = ['{"$ne": null}', "$where", "a.b.c", "[/x] [bold]", "ünïcødé ✓"]


@pytest.fixture
def cli_env(embedded_server):
    return {
        "MONGODB_URI": embedded_server.uri,
        "AGENT_MEMORY_DATABASE": f"ops_{uuid.uuid4().hex[:10]}",
        "AGENT_MEMORY_EMBEDDER": "fake",
    }


@pytest.fixture
def db(cli_env):
    with MongoClient(cli_env["MONGODB_URI"]) as client:
        yield client[cli_env["AGENT_MEMORY_DATABASE"]]
        client.drop_database(cli_env["AGENT_MEMORY_DATABASE"])


def invoke(args, env, **kwargs):
    return CliRunner().invoke(app, args, env=env, catch_exceptions=False, **kwargs)


def seed(env, tenants=(ALICE, BOB, ALICE_ELSEWHERE)) -> dict[str, str]:
    """Per tenant: 2 memories, a session of 2 messages, a rated action with a manifest and an
    unrated failed one. Returns the rated action id of each user (by ``agent/user``)."""

    async def main() -> dict[str, str]:
        settings = load_settings(
            mongodb_uri=env["MONGODB_URI"], database=env["AGENT_MEMORY_DATABASE"], embedder="fake"
        )
        embedder = FakeEmbedder()
        async with await connect(settings) as conn:
            await IndexManager(conn, embedder.signature).setup()
            system = MemorySystem(conn, embedder)
            actions = {}
            for tenant in tenants:
                memories = [
                    await system.long_term.store(tenant, f"{tenant.user_id} likes item {i}")
                    for i in range(2)
                ]
                key = f"{tenant.agent_id}/{tenant.user_id}"
                await system.conversation.append_turn(
                    tenant, key, [NewMessage.user("hello"), NewMessage("assistant", "hi")]
                )
                actions[key] = await system.episodic.log_action(
                    tenant,
                    session_id=key,
                    action_type="query_response",
                    outcome="success",
                    content="hello",
                    memory_ids=[m.id for m in memories],
                )
                await system.episodic.log_action(
                    tenant, session_id=key, action_type="query_response", outcome="failure"
                )
            await system.aclose()
            return actions

    return asyncio.run(main())


def backdate(db) -> None:
    """Make everything old enough for decay (30 d) and retention (sessions 90 d, actions 30 d)."""
    old = datetime.now(UTC) - timedelta(days=100)
    db["memories"].update_many({}, {"$set": {"last_accessed": old}})
    db["sessions"].update_many({}, {"$set": {"last_active_at": old}})
    db["action_logs"].update_many({}, {"$set": {"timestamp": old}})


def snapshot(db) -> dict[str, list]:
    return {name: list(db[name].find({}).sort("_id", 1)) for name in db.list_collection_names()}


def one_line_error(result, code: int) -> None:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1, result.output


# --- decay ---------------------------------------------------------------------------------------


def test_decay_once_per_period_then_retention(cli_env, db):
    seed(cli_env)
    backdate(db)
    before = {d["_id"]: d["importance"] for d in db["memories"].find()}

    result = invoke(["decay"], cli_env)
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert "all agents" in lines[0] and "decayed 6 of 6 eligible memories" in lines[0]
    assert "sessions archived 3, deleted 0" in lines[0]
    assert "actions summarised 6, deleted 6" in lines[0]
    after = {d["_id"]: d["importance"] for d in db["memories"].find()}
    assert all(after[k] == pytest.approx(before[k] * 0.95) for k in before)
    assert db["action_logs"].count_documents({}) == 0
    assert db["action_aggregates"].count_documents({}) == 2  # per agent, type and day
    assert set(db["sessions"].distinct("status")) == {"archived"}

    again = invoke(["decay"], cli_env)
    assert again.exit_code == 0 and "decayed 0 of 0 eligible memories" in again.output
    assert {d["_id"]: d["importance"] for d in db["memories"].find()} == after
    assert db["decay_runs"].count_documents({}) == 2


def test_decay_and_retention_follow_the_settings(cli_env, db):
    """What cron runs is configured by environment: factor, inactivity, retention periods and
    mode. 10-day-old data is untouched by the defaults and handled under these settings."""
    seed(cli_env)
    ten_days = datetime.now(UTC) - timedelta(days=10)
    db["memories"].update_many({}, {"$set": {"last_accessed": ten_days}})
    db["sessions"].update_many({}, {"$set": {"last_active_at": ten_days}})
    db["action_logs"].update_many({}, {"$set": {"timestamp": ten_days}})
    before = {d["_id"]: d["importance"] for d in db["memories"].find()}
    defaults = invoke(["decay", "--dry-run"], cli_env).output
    assert "would decay 0 memories" in defaults and "would summarise 0" in defaults

    env = {
        **cli_env,
        "AGENT_MEMORY_DECAY_FACTOR": "0.5",
        "AGENT_MEMORY_DECAY_INACTIVE_DAYS": "7",
        "AGENT_MEMORY_SESSION_RETENTION_DAYS": "5",
        "AGENT_MEMORY_SESSION_RETENTION_MODE": "delete",
        "AGENT_MEMORY_ACTION_RETENTION_DAYS": "5",
    }
    result = invoke(["decay"], env)
    assert result.exit_code == 0, result.output
    assert "decayed 6 of 6 eligible memories" in result.output
    after = {d["_id"]: d["importance"] for d in db["memories"].find()}
    assert all(after[k] == pytest.approx(max(0.1, before[k] * 0.5)) for k in before)
    assert db["sessions"].count_documents({}) == 0 and db["messages"].count_documents({}) == 0
    assert db["action_logs"].count_documents({}) == 0


def test_decay_settings_out_of_range_are_configuration_errors(cli_env, db):
    seed(cli_env)
    before = snapshot(db)
    for name, value in [
        ("AGENT_MEMORY_DECAY_FACTOR", "0"),
        ("AGENT_MEMORY_DECAY_FACTOR", "nan"),
        ("AGENT_MEMORY_SESSION_RETENTION_MODE", "shred"),
        ("AGENT_MEMORY_ACTION_RETENTION_DAYS", "1"),
    ]:
        result = invoke(["decay"], {**cli_env, name: value})
        one_line_error(result, 2)
        assert name.removeprefix("AGENT_MEMORY_").lower() in result.output
    assert snapshot(db) == before


def test_decay_for_one_agent_json_and_skip_retention(cli_env, db):
    seed(cli_env)
    backdate(db)
    result = invoke(["decay", "--agent", "other-agent", "--skip-retention", "--json"], cli_env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["agent_id"] == "other-agent" and report["retention"] is False
    assert report["decay"]["decayed"] == 2 and report["actions_deleted"] == 0
    assert db["memories"].count_documents({"decay_period": {"$exists": True}}) == 2
    assert db["action_logs"].count_documents({}) == 6


def test_decay_dry_run_reports_and_writes_nothing(cli_env, db):
    seed(cli_env)
    backdate(db)
    before = snapshot(db)
    result = invoke(["decay", "--dry-run"], cli_env)
    assert result.exit_code == 0, result.output
    assert "dry run" in result.output and "would decay 6 memories" in result.output
    assert "sessions would archive 3" in result.output
    assert "actions would summarise 6" in result.output
    assert snapshot(db) == before  # not even a lock or an audit record


def test_decay_while_another_run_holds_the_lock_exits_6(cli_env, db):
    seed(cli_env)
    backdate(db)
    now = datetime.now(UTC)
    db["locks"].insert_one(
        {
            "_id": "maintenance",
            "holder": "cron-pod-7",
            "acquired_at": now,
            "expires_at": now + timedelta(minutes=5),
            "released_at": None,
        }
    )
    before = snapshot(db)
    result = invoke(["decay"], cli_env)
    one_line_error(result, 6)
    assert "another run holds the 'maintenance' lock (cron-pod-7" in result.output
    assert snapshot(db) == before


def test_decay_takes_over_the_expired_lock_of_a_crashed_run(cli_env, db):
    seed(cli_env)
    backdate(db)
    long_ago = datetime.now(UTC) - timedelta(hours=2)
    db["locks"].insert_one(
        {
            "_id": "maintenance",
            "holder": "crashed-pod",
            "acquired_at": long_ago,
            "expires_at": long_ago + timedelta(minutes=5),
            "released_at": None,
        }
    )
    result = invoke(["decay"], cli_env)
    assert result.exit_code == 0, result.output
    assert "took over the lock of crashed-pod" in result.output
    assert "decayed 6 of 6" in result.output
    lock = db["locks"].find_one({"_id": "maintenance"})
    assert lock["holder"] != "crashed-pod" and lock["released_at"] is not None


@pytest.mark.parametrize(
    ("args", "last_step"),
    [
        (["decay"], "agent_memory.memory.episodic.memory.EpisodicMemory.apply_retention"),
        (["decay", "--skip-retention"], "agent_memory.memory.long_term.decay.DecayJob.run"),
    ],
)
def test_decay_whose_lock_is_taken_over_in_its_last_step_exits_6(
    cli_env, db, monkeypatch, args, last_step
):
    """A run that stalled past its lease while another took over must not report success."""
    seed(cli_env, tenants=(ALICE,))
    backdate(db)
    module, owner, method = last_step.rsplit(".", 2)
    cls = getattr(importlib.import_module(module), owner)
    original = getattr(cls, method)

    async def then_taken_over(self, *a, **kw):
        result = await original(self, *a, **kw)
        db["locks"].update_one({"_id": "maintenance"}, {"$set": {"holder": "cron-pod-9"}})
        return result

    monkeypatch.setattr(cls, method, then_taken_over)
    result = invoke(["--log-level", "error", *args], cli_env)  # without the lease_lost warning
    one_line_error(result, 6)
    assert "taken over by another run" in result.output
    lock = db["locks"].find_one({"_id": "maintenance"})
    assert lock["holder"] == "cron-pod-9" and lock["released_at"] is None


def test_decay_on_the_embedded_default_names_its_data_directory(
    cli_env, db, embedded_server, monkeypatch
):
    """cron starts jobs in $HOME: a relative data directory there is another, empty one, and
    'decayed 0 of 0' alone would not say so."""
    if embedded_server.data_dir is None:
        pytest.skip("needs the session server's data directory; that server runs elsewhere")
    seed(cli_env, tenants=(ALICE,))
    backdate(db)
    monkeypatch.chdir(embedded_server.data_dir.parent)
    embedded = {k: v for k, v in cli_env.items() if k != "MONGODB_URI"}
    embedded["AGENT_MEMORY_DATA_DIR"] = embedded_server.data_dir.name  # relative, as by default
    where = str(embedded_server.data_dir.resolve())

    result = invoke(["decay", "--dry-run"], embedded)
    assert result.exit_code == 0, result.output
    assert len(result.output.strip().splitlines()) == 1
    assert f"embedded data directory {where}" in result.output
    assert json.loads(invoke(["decay", "--json"], embedded).output)["data_dir"] == where

    remote = invoke(["decay", "--json"], cli_env)  # MONGODB_URI set: no data directory
    assert json.loads(remote.output)["data_dir"] is None
    assert "data directory" not in invoke(["decay"], cli_env).output


@pytest.mark.parametrize("agent", HOSTILE)
def test_decay_with_hostile_agent_ids_touches_nothing(cli_env, db, agent):
    seed(cli_env, tenants=(ALICE,))
    backdate(db)
    before = snapshot(db)
    result = invoke(["decay", "--agent", agent], cli_env)
    assert result.exit_code == 0, result.output
    assert "decayed 0 of 0" in result.output
    assert "sessions archived 0, deleted 0" in result.output
    assert "actions summarised 0, deleted 0" in result.output
    after = snapshot(db)
    # the run's own lock and audit record are the only writes
    own = ("locks", "decay_runs")
    assert {k: v for k, v in after.items() if k not in own} == {
        k: v for k, v in before.items() if k not in own
    }
    assert before.get("locks", []) == [] and before["decay_runs"] == []
    assert [r["agent_id"] for r in after["decay_runs"]] == [agent]


@pytest.mark.parametrize(
    "args",
    [
        ["decay", "--agent", ""],
        ["decay", "--agent", "x" * 300],
        ["decay", "--agent", "bad\x01id"],
        ["decay", "--lease-seconds", "0"],
        ["decay", "--lease-seconds", "soon"],
        ["decay", "--unknown"],
    ],
)
def test_decay_bad_arguments_are_usage_errors(cli_env, db, args):
    result = invoke(args, cli_env)
    assert result.exit_code == 2, result.output
    assert db.list_collection_names() == []


# --- feedback ------------------------------------------------------------------------------------


def test_feedback_rates_the_action_and_changes_success_rates(cli_env, db):
    actions = seed(cli_env)
    action = actions["agent/alice"]
    result = invoke(["feedback", action, "--user", "alice", "--rating", "5"], cli_env)
    assert result.exit_code == 0, result.output
    assert f"action {action} of agent agent, user alice: rating 5" in result.output
    assert "credited +1.00 to 2 memories" in result.output
    assert "4 actions, success 50%, failure 50%, average rating 5.00 (1 rated)" in result.output
    stored = db["action_logs"].find_one({"_id": action})
    assert stored["feedback"]["rating"] == 5
    credited = db["memories"].find({"_id": {"$in": stored["memory_ids"]}})
    assert [m["feedback"]["count"] for m in credited] == [1, 1]

    # given again: replaced, counted once; a correction with a key, as JSON
    args = ["feedback", action, "--user", "alice", "--agent", "agent", "--rating", "1"]
    result = invoke([*args, "--not-helpful", "--correction", "Tea, not coffee", "--json"], cli_env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["feedback"]["rating"] == 1 and data["feedback"]["helpful"] is False
    assert data["success_rates"]["average_rating"] == 1 and data["success_rates"]["rated"] == 1
    credited = db["memories"].find({"_id": {"$in": stored["memory_ids"]}})
    assert [m["feedback"]["count"] for m in credited] == [1, 1]


def test_feedback_given_again_replaces_the_earlier_one_entirely(cli_env, db):
    """Issue 15 item 7: --rating 4, then --not-helpful --correction, shows no rating."""
    action = seed(cli_env, tenants=(ALICE,))["agent/alice"]
    args = ["feedback", action, "--user", "alice"]
    assert invoke([*args, "--rating", "4"], cli_env).exit_code == 0
    result = invoke([*args, "--not-helpful", "--correction", "Tea, not coffee"], cli_env)
    assert result.exit_code == 0, result.output
    assert f"action {action} of agent agent, user alice: not helpful, a correction;" in (
        result.output
    )
    assert "rating 4" not in result.output and "credited -0.50 to 2 memories" in result.output
    assert "(0 rated)" in result.output
    stored = db["action_logs"].find_one({"_id": action})["feedback"]
    assert "rating" not in stored and stored["helpful"] is False
    assert stored["correction"] == "Tea, not coffee" and stored["credited"] == -0.5
    memories = list(db["memories"].find({"agent_id": "agent", "user_id": "alice"}))
    assert [(m["feedback"]["count"], m["feedback"]["sum"]) for m in memories] == [(1, -0.5)] * 2

    # A correction alone takes the credit back; as JSON, the cleared fields are null.
    result = invoke([*args, "--correction", "Green tea", "--json"], cli_env)
    assert result.exit_code == 0, result.output
    given = json.loads(result.output)["feedback"]
    assert (given["rating"], given["helpful"], given["correction"], given["credited"]) == (
        None,
        None,
        "Green tea",
        None,
    )
    memories = list(db["memories"].find({"agent_id": "agent", "user_id": "alice"}))
    assert [(m["feedback"]["count"], m["feedback"]["sum"]) for m in memories] == [(0, 0.0)] * 2
    plain = invoke([*args, "--correction", "Green tea"], cli_env)  # the same state again
    assert "a correction; nothing credited to its 2 memories" in plain.output


def test_feedback_with_an_idempotency_key_counts_once(cli_env, db):
    action = seed(cli_env, tenants=(ALICE,))["agent/alice"]
    args = ["feedback", action, "--user", "alice", "--helpful", "--idempotency-key", "k-1"]
    assert invoke(args, cli_env).exit_code == 0
    assert invoke(args, cli_env).exit_code == 0
    memories = list(db["memories"].find())
    assert [m["feedback"]["count"] for m in memories] == [1, 1]
    reused = invoke([*args[:-3], "--not-helpful", "--idempotency-key", "k-1"], cli_env)
    one_line_error(reused, 1)


def test_feedback_on_another_tenants_or_an_unknown_action_writes_nothing(cli_env, db):
    actions = seed(cli_env)
    alices = actions["agent/alice"]
    before = snapshot(db)
    cases = [
        ["feedback", alices, "--user", "bob", "--rating", "1"],
        ["feedback", alices, "--user", "alice", "--agent", "other-agent", "--rating", "1"],
        [
            "feedback",
            actions["other-agent/alice"],
            "--user",
            "alice",
            "--agent",
            "agent",
            "--helpful",
        ],
        ["feedback", "act_does_not_exist", "--user", "alice", "--rating", "1"],
        *(["feedback", hostile, "--user", "alice", "--rating", "1"] for hostile in HOSTILE),
        *(["feedback", alices, "--user", hostile, "--rating", "1"] for hostile in HOSTILE),
        *(["feedback", alices, "--user", "alice", "--agent", h, "--rating", "1"] for h in HOSTILE),
    ]
    for args in cases:
        result = invoke(args, cli_env)
        one_line_error(result, 1)
        assert "no action" in result.output, args
    assert snapshot(db) == before


@pytest.mark.parametrize(
    "args",
    [
        ["feedback"],
        ["feedback", "act_1"],
        ["feedback", "act_1", "--user", "alice"],
        ["feedback", "act_1", "--user", "alice", "--rating", "6"],
        ["feedback", "act_1", "--user", "alice", "--rating", "0"],
        ["feedback", "act_1", "--user", "alice", "--rating", "five"],
        ["feedback", "act_1", "--user", "", "--rating", "5"],
        ["feedback", "x" * 300, "--user", "alice", "--rating", "5"],
        ["feedback", "act_1", "--user", "alice", "--agent", " ", "--rating", "5"],
        ["feedback", "act_1", "--user", "alice", "--rating", "5", "--idempotency-key", ""],
        ["feedback", "act_1", "--user", "alice", "--correction", ""],
        ["feedback", "act_1", "--user", "alice", "--correction", "   "],
        ["feedback", "act_1", "--user", "alice", "--rating", "5", "--correction", "\t\n"],
        ["feedback", "act_1", "--user", "alice", "--correction", "nul\x00byte"],
    ],
)
def test_feedback_bad_arguments_are_usage_errors(cli_env, db, args):
    result = invoke(args, cli_env)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert db.list_collection_names() == []


@pytest.mark.parametrize("correction", ["x" * 4_001, "   "])
def test_feedback_bad_correction_is_a_usage_error_and_nothing_written(cli_env, db, correction):
    action = seed(cli_env, tenants=(ALICE,))["agent/alice"]
    before = snapshot(db)
    result = invoke(["feedback", action, "--user", "alice", "--correction", correction], cli_env)
    assert result.exit_code == 2, result.output
    assert "--correction" in result.output and "Traceback" not in result.output
    assert snapshot(db) == before


# --- forget --------------------------------------------------------------------------------------


def test_forget_erases_the_user_in_every_agent_and_leaves_others(cli_env, db):
    seed(cli_env)
    bob_before = {name: db[name].count_documents({"user_id": "bob"}) for name in ("memories",)}
    result = invoke(["forget", "--user", "alice", "--yes"], cli_env)
    assert result.exit_code == 0, result.output
    assert "erased 14 documents of user alice (agents: agent, other-agent)" in result.output
    assert "│ memories" in result.output and "│ formation_jobs" in result.output
    for name in ("memories", "sessions", "messages", "action_logs"):
        assert db[name].count_documents({"user_id": "alice"}) == 0, name
        assert db[name].count_documents({"user_id": "bob"}) > 0, name
    assert db["memories"].count_documents({"user_id": "bob"}) == bob_before["memories"]

    again = invoke(["forget", "--user", "alice", "--yes"], cli_env)
    assert again.exit_code == 0 and "nothing stored for user alice" in again.output


def test_forget_one_agent_only_as_json(cli_env, db):
    seed(cli_env)
    result = invoke(
        ["forget", "--user", "alice", "--agent", "other-agent", "--yes", "--json"], cli_env
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["agents"] == ["other-agent"]
    assert data["erased"]["memories"] == 2 and data["erased"]["messages"] == 2
    assert db["memories"].count_documents({"user_id": "alice", "agent_id": "agent"}) == 2
    assert db["memories"].count_documents({"user_id": "alice", "agent_id": "other-agent"}) == 0


def test_forget_refuses_without_yes_off_a_terminal(cli_env, db):
    seed(cli_env, tenants=(ALICE,))
    before = snapshot(db)
    result = invoke(["forget", "--user", "alice"], cli_env)
    assert result.exit_code == 2 and "--yes" in result.output
    assert snapshot(db) == before


def test_forget_asks_on_a_terminal(cli_env, db, monkeypatch):
    seed(cli_env, tenants=(ALICE,))
    monkeypatch.setattr(forget_command, "_interactive", lambda: True)
    before = snapshot(db)
    declined = invoke(["forget", "--user", "alice"], cli_env, input="n\n")
    assert declined.exit_code == 1 and "nothing erased" in declined.output
    assert "user alice of agent agent: 2 memories, " in declined.output
    assert snapshot(db) == before
    accepted = invoke(["forget", "--user", "alice"], cli_env, input="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert db["memories"].count_documents({}) == 0


def _as_in_the_foreground() -> None:
    """In the child, before it starts: SIGINT at its default, as for a command a user runs
    on a terminal. A test run started as a background job of a non-interactive shell (a CI
    script's ``cmd &``) ignores SIGINT, and its children inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_ctrl_c_at_the_forget_question_stops_at_once_and_erases_nothing(cli_env, db):
    """On a real terminal: SIGINT while the question waits for an answer ends the command
    with 130 at once (it used to wait for Enter) and nothing is erased."""
    seed(cli_env, tenants=(ALICE,))
    before = snapshot(db)
    leader, follower = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_memory", "forget", "--user", "alice"],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        # faulthandler: SIGABRT dumps every thread's stack, should the command not end.
        env={**os.environ, **cli_env, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"},
        close_fds=True,
        preexec_fn=_as_in_the_foreground,
    )
    os.close(follower)
    shown = b""

    def drain(seconds: float, until: Callable[[], bool]) -> None:
        """Read what the command writes (a full terminal buffer would block it) until
        ``until()`` or ``seconds`` have passed."""
        nonlocal shown
        deadline = time.monotonic() + seconds
        readable = True
        while not until() and time.monotonic() < deadline:
            if not readable:  # the command closed its end: it is ending
                time.sleep(0.05)
                continue
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    shown += os.read(leader, 4096)
                except OSError:
                    readable = False

    try:
        drain(60, lambda: b"Erase all of it?" in shown)
        assert b"Erase all of it?" in shown, shown
        process.send_signal(signal.SIGINT)
        started = time.monotonic()
        drain(20, lambda: process.poll() is not None)
        if process.poll() is None:  # say where it hangs, then fail
            process.send_signal(signal.SIGABRT)
            drain(5, lambda: process.poll() is not None)
            pytest.fail(
                f"forget did not end within 20 s of Ctrl+C:\n{shown.decode(errors='replace')}"
            )
        code = process.wait(timeout=5)
        assert code == 130 and time.monotonic() - started < 10, shown
    finally:
        if process.poll() is None:
            process.kill()
        os.close(leader)
    assert snapshot(db) == before


_SIGINT_IN_THE_READING_THREAD = """
import asyncio, builtins, signal, sys, threading, time
import typer
from agent_memory.cli import chat, forget

def read(*args, **kwargs):  # the terminal read; Ctrl+C reaches this thread
    time.sleep(0.5)  # once the loop sleeps, waiting for the answer
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    time.sleep(60)
    return "y"

typer.confirm = builtins.input = read
waits = {"forget": lambda: forget._confirm("Erase all of it?"), "chat": lambda: chat.read_line("> ")}
try:
    asyncio.run(waits[sys.argv[1]]())
except KeyboardInterrupt:
    sys.exit(130)
sys.exit(1)
"""


@pytest.mark.parametrize("command", ["forget", "chat"])
def test_ctrl_c_that_reaches_the_reading_thread_still_ends_the_wait(command):
    """The kernel may hand SIGINT to any thread: asyncio.run's handler alone then left the
    loop asleep with nothing scheduled, and forget stayed at its question (twice in CI).
    While forget's question or chat's prompt waits, the loop's own signal handler wakes it
    whichever thread the signal reaches (cli/_app.py sigint_ends)."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _SIGINT_IN_THE_READING_THREAD, command],
        capture_output=True,
        timeout=60,
        preexec_fn=_as_in_the_foreground,
    )
    assert done.returncode == 130, done.stderr.decode(errors="replace")
    assert time.monotonic() - started < 30


def test_forget_counts_asks_and_erases_in_one_runtime_and_erases_what_came_meanwhile(
    cli_env, db, monkeypatch
):
    """One connection for counting, asking and erasing; data of the user stored under a new
    agent while the question was on screen is found by the check after erasing."""
    seed(cli_env, tenants=(ALICE,))
    monkeypatch.setattr(forget_command, "_interactive", lambda: True)
    opened = []
    real_open = forget_command.open_runtime

    def counting_open(*args, **kwargs):
        opened.append(1)
        return real_open(*args, **kwargs)

    def confirm_while_another_agent_writes(text, default=False):
        db["memories"].insert_one({"_id": "late", "agent_id": "late-agent", "user_id": "alice"})
        return True

    monkeypatch.setattr(forget_command, "open_runtime", counting_open)
    monkeypatch.setattr(typer, "confirm", confirm_while_another_agent_writes)
    result = invoke(["forget", "--user", "alice"], cli_env)
    assert result.exit_code == 0, result.output
    assert opened == [1]
    assert db["memories"].count_documents({"user_id": "alice"}) == 0
    assert "(agents: agent, late-agent)" in result.output


def test_forget_that_keeps_finding_new_data_says_so(cli_env, db, monkeypatch):
    """An app still writing for the user: the command says so instead of claiming success."""
    from agent_memory.ops import forget as forget_ops

    seed(cli_env, tenants=(ALICE,))
    real_forget = forget_ops.forget_user

    async def forget_while_the_app_writes(memories, tenant):
        erased = await real_forget(memories, tenant)
        db["memories"].insert_one({"agent_id": tenant.agent_id, "user_id": tenant.user_id})
        return erased

    monkeypatch.setattr(forget_ops, "forget_user", forget_while_the_app_writes)
    result = invoke(["forget", "--user", "alice", "--yes"], cli_env)
    one_line_error(result, 1)
    assert "still writing" in result.output and "agent" in result.output


@pytest.mark.parametrize("user", HOSTILE)
def test_forget_hostile_user_ids_erase_nobody_else(cli_env, db, user):
    seed(cli_env, tenants=(ALICE,))
    before = snapshot(db)
    result = invoke(["forget", "--user", user, "--yes"], cli_env)
    assert result.exit_code == 0, result.output
    assert "nothing stored for user" in result.output
    assert snapshot(db) == before


@pytest.mark.parametrize(
    "args",
    [
        ["forget"],
        ["forget", "--user", ""],
        ["forget", "--user", "*", "--yes"],
        ["forget", "--user", "y" * 300, "--yes"],
        ["forget", "--user", "alice", "--agent", "", "--yes"],
    ],
)
def test_forget_bad_arguments_are_usage_errors(cli_env, db, args):
    seed(cli_env, tenants=(ALICE,))
    before = snapshot(db)
    result = invoke(args, cli_env)
    assert result.exit_code == 2, result.output
    assert snapshot(db) == before


# --- stats ---------------------------------------------------------------------------------------


def test_stats_counts_are_exact(cli_env, db):
    seed(cli_env)  # alice under two agents, bob under one: 2 users, 3 (agent, user) pairs
    refused = invoke(["feedback", "act_none", "--user", "alice", "--rating", "5"], cli_env)
    one_line_error(refused, 1)
    # knowledge shared by all users of an agent, and a LangGraph thread run without tenant keys
    db["knowledge_chunks"].insert_one({"agent_id": "agent", "user_id": "*", "source": "faq"})
    db["lg_checkpoints"].insert_one(
        {"thread_id": "anon", "checkpoint_ns": "", "checkpoint_id": "1"}
    )
    result = invoke(["stats", "--json"], cli_env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    totals = data["totals"]
    assert totals["memories"]["count"] == 6 and totals["messages"]["count"] == 6
    assert totals["sessions"]["by"] == {"active": 3}
    assert totals["actions"]["by"] == {"success": 3, "failure": 3}
    assert totals["formation jobs"]["count"] == 0 and totals["threads"]["count"] == 1
    assert totals["knowledge docs"]["count"] == 1
    assert data["agents"] == ["agent", "other-agent"]
    assert data["users"] == 2  # alice and bob: not the shared "*", not the unattributed thread
    assert data["tenant_count"] == 5 and len(data["tenants"]) == 5
    people = [t for t in data["tenants"] if t["user_id"] not in (None, "*")]
    assert len(people) == 3
    for tenant in people:
        assert tenant["counts"]["memories"] == 2 and tenant["counts"]["actions"] == 2

    scoped = json.loads(invoke(["stats", "--agent", "other-agent", "--json"], cli_env).output)
    assert scoped["totals"]["memories"]["count"] == 2 and scoped["users"] == 1

    table = invoke(["stats", "--top", "1"], cli_env)
    assert table.exit_code == 0, table.output
    assert "memories" in table.output and "2 users" in table.output
    assert "per agent and user (5 rows)" in table.output
    assert "... and 4 more rows" in table.output
    assert "* (shared knowledge)" not in table.output  # only the top row is shown
    everything = invoke(["stats", "--top", "0"], cli_env).output
    assert "* (shared knowledge)" in everything and "(no tenant keys)" in everything


def test_counts_of_one_are_in_the_singular(cli_env, db, monkeypatch):
    seed(cli_env, tenants=(ALICE,))
    table = invoke(["stats"], cli_env)
    assert table.exit_code == 0, table.output
    assert "stored data, 1 agent, 1 user" in table.output
    assert "per agent and user (1 row)" in table.output

    monkeypatch.setattr(forget_command, "_interactive", lambda: True)
    declined = invoke(["forget", "--user", "alice"], cli_env, input="n\n")
    assert "user alice of agent agent: 2 memories, 1 session, 2 messages, 2 action logs\n" in (
        declined.output
    )
    erased = invoke(["forget", "--user", "alice", "--yes"], cli_env)
    assert "erased 7 documents of user alice (agent: agent)" in erased.output


def test_stats_on_an_empty_database(cli_env, db):
    result = invoke(["stats", "--json"], cli_env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["users"] == 0 and data["tenant_count"] == 0
    assert all(t["count"] == 0 for t in data["totals"].values())


@pytest.mark.parametrize("args", [["stats", "--top", "-1"], ["stats", "--agent", ""]])
def test_stats_bad_arguments_are_usage_errors(cli_env, args):
    assert invoke(args, cli_env).exit_code == 2


# --- every command: the server is down -----------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["decay"],
        ["decay", "--dry-run"],
        ["feedback", "act_1", "--user", "alice", "--rating", "5"],
        ["forget", "--user", "alice", "--yes"],
        ["stats"],
    ],
)
def test_unreachable_database_is_one_line_and_exit_3(args):
    result = invoke(args, DOWN)
    one_line_error(result, 3)
    assert "cannot be reached" in result.output

    # --debug shows the traceback of the storage error and keeps the exit code
    debug = CliRunner().invoke(app, ["--debug", *args], env=DOWN)
    assert debug.exit_code == 3, debug.output
    assert "Traceback" in debug.output
    assert "agent_memory.errors.StorageUnavailableError" in debug.output

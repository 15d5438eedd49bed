"""Importance decay: what decays, by how much, once per period, audited, across tenants."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.memory.long_term.decay import DecayConfig, DecayJob

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


async def seed(connection, **overrides):
    base = {
        "agent_id": "agent",
        "user_id": "alice",
        "content": "x",
        "status": "active",
        "importance": 0.8,
        "last_accessed": NOW - timedelta(days=45),
        "created_at": NOW - timedelta(days=90),
    }
    doc = {**base, **overrides}
    await connection.collection("memories").insert_one(doc)
    return doc["_id"]


async def importance(connection, memory_id):
    return (await connection.collection("memories").find_one({"_id": memory_id}))["importance"]


async def test_unused_memories_decay_and_recent_ones_do_not(connection):
    stale = await seed(connection, _id="stale")
    fresh = await seed(connection, _id="fresh", last_accessed=NOW - timedelta(days=3))
    at_floor = await seed(connection, _id="floor", importance=0.1)
    near_floor = await seed(connection, _id="near", importance=0.104)
    superseded = await seed(connection, _id="old", status="superseded")
    report = await DecayJob(connection).run(now=NOW)
    assert (report.eligible, report.decayed) == (2, 2)
    assert await importance(connection, stale) == pytest.approx(0.76)
    assert await importance(connection, fresh) == 0.8
    assert await importance(connection, at_floor) == 0.1
    assert await importance(connection, near_floor) == pytest.approx(0.1)  # clamped at the floor
    assert await importance(connection, superseded) == 0.8


async def test_a_memory_without_a_last_access_date_does_not_decay(connection):
    """MongoDB never orders null against a date; the embedded engine sorts it before every
    date, so the cutoff alone matched a memory whose ``last_accessed`` is null or missing."""
    stale = await seed(connection, _id="stale")
    unset = await seed(connection, _id="unset", last_accessed=None)
    missing = await seed(connection, _id="missing")
    await connection.collection("memories").update_one(
        {"_id": missing}, {"$unset": {"last_accessed": ""}}
    )
    report = await DecayJob(connection).run(now=NOW)
    assert (report.eligible, report.decayed) == (1, 1)
    assert await importance(connection, stale) == pytest.approx(0.76)
    assert await importance(connection, unset) == 0.8
    assert await importance(connection, missing) == 0.8


async def test_running_twice_in_a_period_decays_once(connection):
    stale = await seed(connection, _id="stale")
    job = DecayJob(connection)
    first = await job.run(now=NOW)
    second = await job.run(now=NOW + timedelta(days=1))
    assert (first.decayed, second.decayed) == (1, 0)
    assert await importance(connection, stale) == pytest.approx(0.76)
    # the next period decays again
    third = await job.run(now=NOW + timedelta(days=31))
    assert third.decayed == 1
    assert await importance(connection, stale) == pytest.approx(0.722)


async def test_overlapping_runs_decay_once(connection):
    ids = [await seed(connection, _id=f"m{i}") for i in range(20)]
    job = DecayJob(connection)
    reports = await asyncio.gather(job.run(now=NOW), job.run(now=NOW), job.run(now=NOW))
    assert sum(r.decayed for r in reports) == 20
    assert [await importance(connection, i) for i in ids] == pytest.approx([0.76] * 20)


async def test_one_agent_or_all_agents_and_every_tenant(connection):
    a = [await seed(connection, _id=f"a{u}", user_id=f"user{u}") for u in range(5)]
    b = await seed(connection, _id="b", agent_id="other-agent")
    report = await DecayJob(connection).run(agent_id="agent", now=NOW)
    assert report.decayed == 5
    assert await importance(connection, b) == 0.8
    assert all([await importance(connection, i) == pytest.approx(0.76) for i in a])
    everyone = await DecayJob(connection).run(now=NOW)
    assert everyone.decayed == 1  # only the other agent's memory was left this period


async def test_dry_run_changes_nothing_and_runs_are_recorded(connection):
    stale = await seed(connection, _id="stale")
    job = DecayJob(connection)
    dry = await job.run(now=NOW, dry_run=True)
    assert (dry.eligible, dry.decayed, dry.dry_run) == (1, 0, True)
    assert "would decay 1" in dry.summary()
    assert await importance(connection, stale) == 0.8
    await job.run(agent_id="agent", now=NOW)
    runs = await job.runs_for("agent")
    assert [(r["eligible"], r["decayed"], r["period"]) for r in runs] == [
        (1, 1, DecayConfig().period(NOW))
    ]


def test_periods_are_fixed_buckets():
    config = DecayConfig(period_days=30)
    start = datetime.fromisoformat(config.period(NOW).split("/")[0]).replace(tzinfo=UTC)
    assert start <= NOW < start + timedelta(days=30)
    assert (
        config.period(start)
        == config.period(start + timedelta(days=29, hours=23))
        == config.period(NOW)
    )
    assert config.period(start + timedelta(days=30)) != config.period(NOW)
    assert config.period(NOW).endswith("/30d")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"factor": 0},
        {"factor": 1.5},
        {"floor": -0.1},
        {"period_days": 0},
        {"factor": float("nan")},
        {"floor": True},
    ],
)
def test_bad_configuration(kwargs):
    with pytest.raises(InvalidInputError):
        DecayConfig(**kwargs)


async def test_bad_arguments(connection):
    with pytest.raises(InvalidInputError):
        await DecayJob(connection).run(agent_id={"$ne": None})
    with pytest.raises(InvalidInputError):
        await DecayJob(connection).run(now=datetime(2026, 1, 1))


async def trail(connection, memory_id):
    doc = await connection.collection("memories").find_one({"_id": memory_id})
    return doc.get("importance_trail")


async def test_decay_adds_the_decayed_importance_to_the_trail_once_per_period(connection):
    earlier = {"at": NOW - timedelta(days=90), "importance": 0.8, "why": "stored"}
    stale = await seed(connection, _id="stale", importance_trail=[earlier])
    near = await seed(connection, _id="near", importance=0.104)
    fresh = await seed(connection, _id="fresh", last_accessed=NOW - timedelta(days=3))
    job = DecayJob(connection)
    await job.run(now=NOW)
    decayed = await trail(connection, stale)
    assert decayed[0] == earlier and len(decayed) == 2
    assert decayed[1] == {
        "at": NOW,
        "importance": await importance(connection, stale),
        "why": "decayed",
    }
    assert decayed[1]["importance"] == pytest.approx(0.76)
    # An older memory without a trail starts one; the floor is what the trail records.
    assert await trail(connection, near) == [{"at": NOW, "importance": 0.1, "why": "decayed"}]
    assert await trail(connection, fresh) is None  # not decayed: nothing to record
    # A second run in the same period decays nothing and adds nothing.
    assert (await job.run(now=NOW + timedelta(days=1))).decayed == 0
    assert await trail(connection, stale) == decayed
    # The next period adds the next value.
    later = NOW + timedelta(days=31)
    await job.run(now=later)
    assert (await trail(connection, stale))[2] == {
        "at": later,
        "importance": await importance(connection, stale),
        "why": "decayed",
    }
    assert (await trail(connection, stale))[2]["importance"] == pytest.approx(0.722)


async def test_decay_keeps_the_trail_bounded_and_survives_a_broken_one(connection):
    from agent_memory.memory.long_term.trail import TRAIL_LENGTH

    full = [
        {"at": NOW - timedelta(days=100 - i), "importance": 0.8, "why": "reinforced"}
        for i in range(TRAIL_LENGTH)
    ]
    long = await seed(connection, _id="long", importance_trail=full)
    broken = await seed(connection, _id="broken", importance_trail="not a list")
    report = await DecayJob(connection).run(now=NOW)
    assert report.decayed == 2  # one document's broken trail fails no update
    kept = await trail(connection, long)
    assert len(kept) == TRAIL_LENGTH and kept[:-1] == full[1:]
    assert kept[-1]["why"] == "decayed"
    assert await trail(connection, broken) == [
        {"at": NOW, "importance": pytest.approx(0.76), "why": "decayed"}
    ]

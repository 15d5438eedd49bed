"""The locked maintenance run (decay + retention), its lease, forgetting everywhere, stats."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from pymongo import MongoClient
from structlog.testing import capture_logs

from agent_memory.errors import InvalidInputError
from agent_memory.formation.queue import FormationQueue
from agent_memory.langgraph.checkpointer import MongoCheckpointer
from agent_memory.memory import MemorySystem, Tenant
from agent_memory.memory.conversation.records import ConversationConfig, NewMessage
from agent_memory.memory.episodic.records import EpisodicConfig
from agent_memory.mongo.indexes import IndexManager
from agent_memory.ops import (
    Lease,
    LeaseHeldError,
    LeaseLostError,
    Maintenance,
    agents_of,
    collect_stats,
    forget_user,
)
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.stamps import utcnow
from tests.waiting import until

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")
CAROL = Tenant("other-agent", "carol")
LATER = timedelta(days=120)  # past every default: decay 30 d, actions 30 d, sessions 90 d


@pytest.fixture
async def system(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    memories = MemorySystem(connection, embedder, chat_model=FakeChatModel(default="summary"))
    yield memories
    await memories.aclose()


async def seed(system: MemorySystem, tenant: Tenant, *, memories: int = 2) -> str:
    """Memories, a session of 2 messages, 2 actions (one rated), a task, knowledge."""
    stored = [
        await system.long_term.store(tenant, f"{tenant.user_id} fact number {i}")
        for i in range(memories)
    ]
    await system.conversation.append_turn(
        tenant, f"{tenant.user_id}-s1", [NewMessage.user("hello"), NewMessage("assistant", "hi")]
    )
    action = await system.episodic.log_action(
        tenant,
        session_id=f"{tenant.user_id}-s1",
        action_type="query_response",
        outcome="success",
        content="hello",
        memory_ids=[m.id for m in stored],
    )
    await system.episodic.log_action(
        tenant,
        session_id=f"{tenant.user_id}-s1",
        action_type="query_response",
        outcome="failure",
        content="bye",
    )
    await system.episodic.add_feedback(tenant, action, rating=5)
    await system.working.create_task(tenant, f"{tenant.user_id}-s1", "plan", plan=["a"])
    await system.knowledge.ingest(tenant, source="notes.txt", text="Some notes.")
    await system.conversation.drain()
    await system.long_term.drain()
    return action


async def importances(connection) -> dict[str, float]:
    docs = await connection.collection("memories").find({}, {"importance": 1}).to_list(None)
    return {d["_id"]: d["importance"] for d in docs}


# --- the lease ---------------------------------------------------------------------------------


async def test_lease_is_exclusive_renewed_released_and_taken_over_after_expiry(connection):
    first = Lease(connection, "job", ttl_seconds=60, holder="first")
    second = Lease(connection, "job", ttl_seconds=60, holder="second")
    state = await first.acquire()
    assert state.took_over is None
    with pytest.raises(LeaseHeldError, match="first"):
        await second.acquire()
    assert await first.acquire()  # the holder may take it again (renewal)
    await first.release()
    assert (await second.acquire()).took_over is None  # released, not crashed
    await second.release()

    # a holder that died: its lease expires and the next caller takes it over
    crashed = Lease(connection, "job", ttl_seconds=0.05, holder="crashed")
    await crashed.acquire()
    await asyncio.sleep(0.1)
    taken = await second.acquire()
    assert taken.took_over == "crashed"
    assert not await crashed.renew()  # the dead holder finds out
    with pytest.raises(LeaseLostError):
        crashed.check()
    await second.release()


async def test_lease_renewal_pushes_the_expiry_on(connection):
    """Driven by explicit times: no dependence on how fast this machine is."""
    t0 = utcnow()
    holder = Lease(connection, "job", ttl_seconds=60, holder="long")
    other = Lease(connection, "job", ttl_seconds=60, holder="other")
    await holder.acquire(now=t0)
    assert await holder.renew(now=t0 + timedelta(seconds=50))  # expires at t0 + 110 s now
    with pytest.raises(LeaseHeldError):
        await other.acquire(now=t0 + timedelta(seconds=100))  # past the first expiry
    assert (await other.acquire(now=t0 + timedelta(seconds=111))).took_over == "long"
    assert not await holder.renew(now=t0 + timedelta(seconds=112))


async def test_background_renewal_keeps_a_long_run_exclusive(connection):
    """The held lease renews itself (every ttl / 3) and so stays exclusive past its first
    expiry. Waited for by what the renewals do, and checked at explicit times: a loaded
    machine may renew late, which is no failure of the renewal."""
    holder = Lease(connection, "job", ttl_seconds=1.0, holder="long")
    renewed: list[bool] = []
    renew = holder.renew

    async def counted(**kwargs):
        renewed.append(await renew(**kwargs))
        return renewed[-1]

    holder.renew = counted  # the background loop calls self.renew()
    locks = connection.collection("locks")
    async with holder:
        first_expiry = (await locks.find_one({"_id": "job"}))["expires_at"]
        await until(lambda: len(renewed) >= 2, "the lease to renew itself twice")
        assert renewed[:2] == [True, True]
        now_expires = (await locks.find_one({"_id": "job"}))["expires_at"]
        assert now_expires > first_expiry
        # Past the first expiry, before the renewed one: still held.
        moment = max(
            first_expiry + timedelta(milliseconds=1), now_expires - timedelta(milliseconds=1)
        )
        assert first_expiry < moment < now_expires
        with pytest.raises(LeaseHeldError):
            await Lease(connection, "job", ttl_seconds=1.0, holder="other").acquire(now=moment)
    await Lease(connection, "job", holder="other").acquire()


async def test_concurrent_acquires_give_the_lease_to_exactly_one(connection):
    leases = [Lease(connection, "job", holder=f"h{i}") for i in range(6)]
    results = await asyncio.gather(*(lease.acquire() for lease in leases), return_exceptions=True)
    assert sum(not isinstance(r, BaseException) for r in results) == 1
    assert all(isinstance(r, LeaseHeldError) for r in results if isinstance(r, BaseException))


@pytest.mark.parametrize("ttl", [0, -1, float("nan"), True, 10**9])
def test_bad_lease_times_are_refused(connection, ttl):
    with pytest.raises(InvalidInputError):
        Lease(connection, "job", ttl_seconds=ttl)


# --- the maintenance run -----------------------------------------------------------------------


async def test_run_decays_once_per_period_and_applies_retention(system, connection):
    await seed(system, ALICE)
    await seed(system, CAROL, memories=1)
    before = await importances(connection)
    now = utcnow() + LATER
    report = await Maintenance(system).run(now=now)
    assert report.decay.eligible == 3 and report.decay.decayed == 3
    after = await importances(connection)
    assert all(after[k] == pytest.approx(max(0.1, before[k] * 0.95)) for k in before)
    assert report.sessions_archived == 2 and report.sessions_deleted == 0
    assert report.actions_summarised == 4 and report.actions_deleted == 4
    assert await connection.collection("action_logs").count_documents({}) == 0
    statuses = await connection.collection("sessions").distinct("status")
    assert statuses == ["archived"]
    assert report.holder and report.took_over is None
    assert "decayed 3 of 3 eligible memories" in report.summary()
    # the success rates still count the summarised actions
    rates = await system.episodic.success_rates("agent", days=200, now=now)
    assert rates.total == 2 and rates.summarised == 2 and rates.average_rating == 5

    again = await Maintenance(system).run(now=now + timedelta(hours=1))
    assert again.decay.period == report.decay.period
    assert again.decay.decayed == 0 and again.sessions_archived == 0
    assert await importances(connection) == after
    lock = await connection.collection("locks").find_one({"_id": "maintenance"})
    assert lock["released_at"] is not None


async def test_one_agent_only_and_skip_retention(system, connection):
    await seed(system, ALICE)
    await seed(system, CAROL, memories=1)
    report = await Maintenance(system).run(agent_id="agent", retention=False, now=utcnow() + LATER)
    assert report.decay.decayed == 2 and not report.retention
    assert "retention skipped" in report.summary()
    assert await connection.collection("action_logs").count_documents({}) == 4
    carol = await connection.collection("memories").find_one({"agent_id": "other-agent"})
    assert carol["importance"] == pytest.approx(0.5) and "decay_period" not in carol


async def test_dry_run_counts_and_writes_nothing(system, connection):
    await seed(system, ALICE)
    names = await connection.db.list_collection_names()
    snapshot = {
        name: await connection.collection(name).find({}).sort("_id", 1).to_list(None)
        for name in names
    }
    report = await Maintenance(system).run(dry_run=True, now=utcnow() + LATER)
    assert report.dry_run and report.decay.eligible == 2 and report.decay.decayed == 0
    assert report.sessions_archived == 1 and report.actions_summarised == 2
    assert report.holder is None
    assert "would decay 2 memories" in report.summary()
    assert sorted(await connection.db.list_collection_names()) == sorted(names)
    for name in names:
        assert (
            await connection.collection(name).find({}).sort("_id", 1).to_list(None)
            == (snapshot[name])
        ), name


async def test_dry_run_counts_what_the_run_then_does(connection, embedder):
    """Counted exactly, not from counters or assumptions: a pending credit, the messages of
    deleted sessions (a stale message_count), and the actions the batch limit leaves."""
    system = MemorySystem(
        connection,
        embedder,
        conversation_config=ConversationConfig(retention_mode="delete"),
        episodic_config=EpisodicConfig(retention_batch_size=1, retention_max_batches=3),
    )
    action = await seed(system, ALICE)
    await seed(system, BOB)
    await seed(system, CAROL, memories=1)  # another agent: its logs are over the batch limit
    logs = connection.collection("action_logs")
    pending = {"op": "op_crashed", "delta": 0.1, "count": 1}  # a credit a crash left half-done
    await logs.update_one({"_id": action}, {"$set": {"feedback.pending": pending}})
    await connection.collection("sessions").update_many({}, {"$set": {"message_count": 99}})
    now = utcnow() + LATER

    dry = await Maintenance(system).run(dry_run=True, now=now)
    real = await Maintenance(system).run(now=now)
    fields = ("credits_repaired", "sessions_archived", "sessions_deleted", "messages_deleted")
    fields += ("actions_summarised", "actions_deleted", "more")
    assert {f: getattr(dry, f) for f in fields} == {f: getattr(real, f) for f in fields}
    assert dry.credits_repaired == 1 and dry.messages_deleted == 6
    assert dry.actions_summarised == 3 and dry.more  # 6 logs, 3 batches of 1 allowed
    assert dry.decay.eligible == real.decay.decayed == 5
    summary = dry.summary()
    assert "credits would repair 1" in summary and "would delete 3 (6 messages)" in summary
    assert "actions would summarise 3" in summary and "run again" in summary
    await system.aclose()


async def test_a_run_while_another_holds_the_lock_writes_nothing(system, connection):
    await seed(system, ALICE)
    before = await importances(connection)
    await Lease(connection, "maintenance", holder="cron-1").acquire()
    with pytest.raises(LeaseHeldError, match="cron-1"):
        await Maintenance(system).run(now=utcnow() + LATER)
    assert await importances(connection) == before
    assert await connection.collection("decay_runs").count_documents({}) == 0


async def test_two_concurrent_runs_one_works_the_other_is_refused(system, connection):
    await seed(system, ALICE)
    now = utcnow() + LATER
    results = await asyncio.gather(
        Maintenance(system).run(now=now),
        Maintenance(system).run(now=now),
        return_exceptions=True,
    )
    done = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, LeaseHeldError)]
    assert len(done) == 1 and len(refused) == 1, results
    assert done[0].decay.decayed == 2
    assert await connection.collection("decay_runs").count_documents({}) == 1


async def test_an_expired_lock_of_a_crashed_run_is_taken_over(system, connection):
    await seed(system, ALICE)
    crashed = Lease(connection, "maintenance", ttl_seconds=60, holder="dead-pod")
    await crashed.acquire(now=utcnow() - timedelta(minutes=10))
    report = await Maintenance(system).run(now=utcnow() + LATER)
    assert report.took_over == "dead-pod" and report.decay.decayed == 2
    assert "took over the lock of dead-pod" in report.summary()


async def test_a_run_whose_lock_was_taken_over_stops_before_the_next_step(
    system, connection, settings
):
    await seed(system, ALICE)

    def stolen(step: str) -> None:
        # another run took the lock meanwhile (this one stalled past its expiry)
        with MongoClient(settings.mongodb_uri.get_secret_value()) as client:
            client[settings.database]["locks"].update_one(
                {"_id": "maintenance"}, {"$set": {"holder": "thief"}}
            )

    with pytest.raises(LeaseLostError):
        await Maintenance(system).run(now=utcnow() + LATER, on_step=stolen)
    assert await connection.collection("sessions").distinct("status") == ["active"]
    lock = await connection.collection("locks").find_one({"_id": "maintenance"})
    assert lock["holder"] == "thief" and lock["released_at"] is None  # left to its holder


def steal(settings, holder: str = "thief"):
    """An on_step callback: another run takes the lock over (this one stalled past expiry)."""

    def stolen(step: str) -> None:
        with MongoClient(settings.mongodb_uri.get_secret_value()) as client:
            client[settings.database]["locks"].update_one(
                {"_id": "maintenance"}, {"$set": {"holder": holder}}
            )

    return stolen


async def test_a_lock_taken_over_during_the_last_step_fails_the_run(system, connection, settings):
    await seed(system, ALICE)
    calls = []

    def last(step: str) -> None:
        calls.append(step)
        if step == "actions":
            steal(settings)(step)

    with pytest.raises(LeaseLostError):
        await Maintenance(system).run(now=utcnow() + LATER, on_step=last)
    assert calls == ["decay", "credits", "sessions", "actions"]
    lock = await connection.collection("locks").find_one({"_id": "maintenance"})
    assert lock["holder"] == "thief" and lock["released_at"] is None


async def test_a_lock_taken_over_without_retention_fails_the_run(system, connection, settings):
    await seed(system, ALICE)
    with pytest.raises(LeaseLostError):
        await Maintenance(system).run(
            now=utcnow() + LATER, retention=False, on_step=steal(settings)
        )
    lock = await connection.collection("locks").find_one({"_id": "maintenance"})
    assert lock["holder"] == "thief" and lock["released_at"] is None


async def test_release_of_a_lease_taken_over_raises_and_leaves_the_lock(connection):
    lease = Lease(connection, "job", ttl_seconds=60, holder="mine")
    await lease.acquire()
    await connection.collection("locks").update_one({"_id": "job"}, {"$set": {"holder": "other"}})
    with capture_logs() as logs:
        with pytest.raises(LeaseLostError, match="taken over"):
            await lease.release()
    assert [e["event"] for e in logs if e["event"].startswith("lease_")] == ["lease_lost"]
    lock = await connection.collection("locks").find_one({"_id": "job"})
    assert lock["holder"] == "other" and lock["released_at"] is None
    await lease.release()  # idempotent: nothing held any more


async def test_an_error_in_a_step_is_not_replaced_by_the_lost_lease(system, settings):
    await seed(system, ALICE)

    def broken(step: str) -> None:
        steal(settings)(step)
        raise RuntimeError("step failed")

    with pytest.raises(RuntimeError, match="step failed"):
        await Maintenance(system).run(now=utcnow() + LATER, retention=False, on_step=broken)


async def test_the_same_fixed_holder_in_two_runs_does_not_share_the_lease(connection):
    first = Lease(connection, "job", ttl_seconds=60, holder="cron")
    second = Lease(connection, "job", ttl_seconds=60, holder="cron")  # another process
    await first.acquire()
    with pytest.raises(LeaseHeldError, match="cron"):
        await second.acquire()
    assert await first.acquire()  # the instance that holds it may renew by taking it again
    await first.release()
    assert (await second.acquire()).took_over is None
    await second.release()


async def test_a_lock_document_without_expiry_can_be_taken(connection):
    await connection.collection("locks").insert_one({"_id": "job", "holder": "half-written"})
    state = await Lease(connection, "job", ttl_seconds=60, holder="next").acquire()
    assert state.took_over == "half-written"


def stop_after(batches: int):
    """A before_batch hook that lets ``batches`` batches through, then stops the loop."""
    calls = []

    def check() -> None:
        calls.append(1)
        if len(calls) > batches:
            raise LeaseLostError("stopped")

    return check


async def test_retention_loops_stop_between_batches_when_the_hook_raises(connection, embedder):
    small = MemorySystem(
        connection,
        embedder,
        conversation_config=ConversationConfig(retention_batch=1, retention_mode="delete"),
        episodic_config=EpisodicConfig(retention_batch_size=1),
    )
    await seed(small, ALICE)
    await seed(small, BOB)
    now = utcnow() + LATER
    with pytest.raises(LeaseLostError):
        await small.conversation.apply_retention(now=now, before_batch=stop_after(1))
    assert await connection.collection("sessions").count_documents({}) == 1
    with pytest.raises(LeaseLostError):
        await small.episodic.apply_retention(now=now, before_batch=stop_after(2))
    assert await connection.collection("action_logs").count_documents({}) == 2
    # a rerun finishes the work
    assert (await small.conversation.apply_retention(now=now))["sessions_deleted"] == 1
    assert (await small.episodic.apply_retention(now=now)).deleted == 2
    await small.aclose()


async def test_a_lock_lost_inside_the_retention_loop_stops_it(
    connection, embedder, settings, monkeypatch
):
    """The renewal in the background finds the lock taken over; the next batch stops."""
    from agent_memory.memory.episodic.retention import ActionRetention

    small = MemorySystem(
        connection, embedder, episodic_config=EpisodicConfig(retention_batch_size=1)
    )
    await seed(small, ALICE)
    original = ActionRetention._summarise
    renew = Lease.renew
    found_lost = asyncio.Event()

    async def renew_and_tell(self, **kwargs):
        ours = await renew(self, **kwargs)
        if not ours:
            found_lost.set()
        return ours

    async def then_stall(self, *args, **kwargs):
        result = await original(self, *args, **kwargs)
        steal(settings)("actions")
        # stalled: the renewer (every ttl / 3) finds the lock gone meanwhile
        await asyncio.wait_for(found_lost.wait(), timeout=10)
        return result

    monkeypatch.setattr(Lease, "renew", renew_and_tell)
    monkeypatch.setattr(ActionRetention, "_summarise", then_stall)
    with pytest.raises(LeaseLostError):
        await Maintenance(small, lease_seconds=0.1).run(now=utcnow() + LATER)
    assert await connection.collection("action_logs").count_documents({}) == 1
    await small.aclose()


async def test_bad_arguments_are_refused_before_anything(system):
    with pytest.raises(InvalidInputError):
        await Maintenance(system).run(agent_id={"$ne": None})  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        await Maintenance(system).run(now=utcnow().replace(tzinfo=None))
    with pytest.raises(InvalidInputError):
        Maintenance(system, lease_seconds=-5)


# --- forgetting everywhere ---------------------------------------------------------------------


async def test_forget_user_erases_formation_jobs_and_langgraph_threads_too(system, connection):
    await seed(system, ALICE)
    await seed(system, BOB)
    queue = FormationQueue(connection)
    await queue.setup()
    await queue.schedule(ALICE, "alice-s1")
    await queue.schedule(BOB, "bob-s1")
    saver = MongoCheckpointer(connection)
    await saver.setup()
    for tenant in (ALICE, BOB):
        config = {
            "configurable": {
                "thread_id": f"t-{tenant.user_id}",
                "checkpoint_ns": "",
                "agent_id": tenant.agent_id,
                "user_id": tenant.user_id,
            }
        }
        checkpoint = {
            "v": 1,
            "id": f"1f0-{tenant.user_id}",
            "ts": utcnow().isoformat(),
            "channel_values": {},
            "channel_versions": {},
            "versions_seen": {},
        }
        await saver.aput(config, checkpoint, {"source": "input", "step": 0}, {})

    assert await agents_of(system, "alice") == ["agent"]
    erased = await forget_user(system, ALICE)
    assert erased["formation_jobs"] == 1 and erased["lg_checkpoints"] == 1
    assert erased["memories"] == 2 and erased["action_logs"] == 2 and erased["messages"] == 2
    assert await agents_of(system, "alice") == []
    for name in ("memories", "sessions", "action_logs", "formation_jobs", "lg_checkpoints"):
        assert await connection.collection(name).count_documents({"user_id": "alice"}) == 0
        assert await connection.collection(name).count_documents({"user_id": "bob"}) >= 1, name
    assert sum((await forget_user(system, ALICE)).values()) == 0


async def test_forget_erases_formation_jobs_before_the_memories_a_worker_could_rewrite(
    system, connection
):
    """A worker taking over a job with a recorded plan while the memories are being erased
    would write the extracted facts back; a turn still running would queue a new job."""
    await seed(system, ALICE)
    queue = FormationQueue(connection, debounce_seconds=0, lease_seconds=1)
    await queue.setup()
    await queue.schedule(ALICE, "alice-s1")
    job = await queue.claim("worker-1")
    assert await queue.record_plan(job, {"facts": ["alice likes tea"]}, messages_through=None)
    seen: dict[str, object] = {}

    async def meanwhile(tenant: Tenant) -> dict[str, int]:
        # runs while the memories are erased: worker-1 died, worker-2 takes its job over
        seen["claimed"] = await queue.claim("worker-2", now=utcnow() + timedelta(hours=1))
        await queue.schedule(ALICE, "alice-s2")  # a turn of the user still running
        return {}

    system.register_forgetter(meanwhile)
    erased = await forget_user(system, ALICE)
    assert seen["claimed"] is None  # the plan was gone before any memory was erased
    assert erased["formation_jobs"] == 2  # the claimed one, and the one queued meanwhile
    assert await connection.collection("formation_jobs").count_documents({}) == 0


async def test_agents_of_finds_every_agent_with_queries_the_tenant_indexes_answer(
    system, connection, monkeypatch
):
    await seed(system, ALICE, memories=1)
    await seed(system, CAROL, memories=1)
    saver = MongoCheckpointer(connection)
    await saver.setup()
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "agent_id": "third"}}
    config["configurable"]["user_id"] = "alice"  # alice's only data under agent "third"
    checkpoint = {"v": 1, "id": "1f0-a", "ts": utcnow().isoformat(), "channel_values": {}}
    checkpoint |= {"channel_versions": {}, "versions_seen": {}}
    await saver.aput(config, checkpoint, {"source": "input", "step": 0}, {})

    filters: list[tuple[str, object]] = []
    collection = type(connection).collection

    class Recording:
        def __init__(self, inner):
            self.inner = inner

        async def distinct(self, key, filter=None, **kw):
            filters.append(("distinct", filter))
            return await self.inner.distinct(key, filter, **kw)

        async def find_one(self, filter=None, *args, **kw):
            filters.append(("find_one", filter))
            return await self.inner.find_one(filter, *args, **kw)

    monkeypatch.setattr(type(connection), "collection", lambda c, n: Recording(collection(c, n)))
    assert await agents_of(system, "alice") == ["agent", "third"]
    assert await agents_of(system, "carol") == ["other-agent"]
    assert await agents_of(system, "nobody") == []
    # a filter on user_id alone has no index to use: every query leads with agent_id
    assert filters and all(f is None or "agent_id" in f for _, f in filters), filters


async def test_forget_refuses_the_shared_knowledge_user_before_erasing(system, connection):
    await seed(system, ALICE)
    with pytest.raises(InvalidInputError, match="reserved"):
        await forget_user(system, Tenant("agent", "*"))
    assert await connection.collection("memories").count_documents({}) == 2


# --- stats -------------------------------------------------------------------------------------


async def test_stats_count_exactly_per_kind_and_tenant(system, connection):
    await seed(system, ALICE, memories=3)
    await seed(system, BOB, memories=1)
    await seed(system, CAROL, memories=2)
    await system.long_term.store(ALICE, "alice fact number 0")  # reinforces: still 3
    stats = await collect_stats(connection)
    totals = stats.totals
    assert totals["memories"].count == 6
    assert totals["sessions"].count == 3 and totals["messages"].count == 6
    assert totals["actions"].count == 6 and totals["actions"].by == {"success": 3, "failure": 3}
    assert totals["knowledge docs"].count == 3 and totals["tasks"].count == 3
    assert stats.agents == ["agent", "other-agent"]
    alice = next(t for t in stats.tenants if t.user_id == "alice")
    assert alice.counts["memories"] == 3 and alice.counts["actions"] == 2
    assert stats.tenants[0].user_id == "alice"  # the largest first

    scoped = await collect_stats(connection, agent_id="other-agent")
    assert scoped.totals["memories"].count == 2 and scoped.agents == ["other-agent"]
    assert [t.user_id for t in scoped.tenants] == ["carol"]


async def test_a_run_whose_step_fails_gives_the_lease_back(system, connection, monkeypatch):
    """A failing step must not hold the lock for the lease's time to live: the next run
    starts at once (a second run beside a failed one used to wait 5 minutes)."""
    from agent_memory.errors import StorageError

    await seed(system, ALICE)

    async def broken(*args, **kwargs):
        raise StorageError("the sessions step failed half-way")

    monkeypatch.setattr(system.conversation, "apply_retention", broken)
    with pytest.raises(StorageError, match="half-way"):
        await Maintenance(system).run(now=utcnow() + LATER)
    lock = await connection.collection("locks").find_one({"_id": "maintenance"})
    assert lock["released_at"] is not None
    monkeypatch.undo()
    report = await Maintenance(system).run(now=utcnow() + LATER)
    assert report.took_over is None and report.sessions_archived >= 0


@pytest.mark.mongoeco
async def test_dry_run_counts_past_the_embedded_engines_budget_for_one_aggregate(
    connection, embedder, embedded_server, monkeypatch
):
    """``count_documents`` is an aggregate, which the embedded engine refuses past 50,000
    matching documents: the dry run counts memories and messages by the ``count`` command.
    Here the budget is lowered to 4, below the 5 memories and 6 messages counted."""
    from mongoeco.core.aggregation.cost import AggregationCostPolicy

    server = getattr(embedded_server, "_server", None)
    if server is None:
        pytest.skip("needs the embedded server of this process")
    system = MemorySystem(
        connection, embedder, conversation_config=ConversationConfig(retention_mode="delete")
    )
    await seed(system, ALICE)
    await seed(system, BOB)
    await seed(system, CAROL, memories=1)
    memories = connection.collection("memories")
    monkeypatch.setattr(server._client._engine, "aggregation_cost_policy", AggregationCostPolicy(4))
    with pytest.raises(Exception, match="materialization budget"):
        await memories.count_documents({})  # what the dry run asked before
    dry = await Maintenance(system).run(dry_run=True, now=utcnow() + LATER)
    assert dry.decay.eligible == 5 and dry.messages_deleted == 6
    await system.aclose()

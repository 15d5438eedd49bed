"""The database goes away in the middle of an operation, then comes back.

The framework reaches the session's embedded server through a loopback proxy
(:mod:`tests.integration.fault_proxy`) that cuts every connection and refuses new ones at a
chosen command: before it is forwarded (the server never sees it) or just after (the server
works it, the reply is lost). Each operation is run once to count its commands, then once per
command and cut mode, each time on fresh data. Every faulted run must fail with
:class:`~agent_memory.errors.StorageUnavailableError` within a bound set by
``connect_timeout_ms``; once the proxy listens again, what is stored must be whole (read over a
direct connection), and running the operation again must finish the work exactly once.
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pymongo.common
import pytest

from agent_memory.agent.config import AgentConfig
from agent_memory.agent.rag_agent import RAGAgent
from agent_memory.config import load_settings
from agent_memory.errors import StorageUnavailableError
from agent_memory.formation import FormationQueue, FormationWorker
from agent_memory.memory import MemorySystem, Tenant
from agent_memory.memory.conversation.memory import NewMessage
from agent_memory.memory.working.memory import WorkingMemory
from agent_memory.mongo.connection import Connection, connect
from agent_memory.mongo.embedded import EmbeddedServer
from agent_memory.mongo.indexes import IndexManager
from agent_memory.ops import LeaseHeldError, Maintenance
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.providers.chat.offline import OfflineChatModel
from agent_memory.stamps import utcnow
from tests.integration.fault_proxy import FaultProxy

TIMEOUT_MS = 100
#: A faulted operation fails within this (server selection twice over, plus slack).
BOUND_S = 4 * TIMEOUT_MS / 1000 + 1.0
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")
READS = frozenset({"find", "aggregate", "count", "distinct", "getMore", "listCollections"})
#: Faults injected and survived per operation, for the reliability figures.
FIGURES: dict[str, int] = {}


@pytest.fixture
async def proxy(embedded_server, monkeypatch) -> AsyncIterator[FaultProxy]:
    # The driver re-checks a server it lost at most every 500 ms; a shorter interval only
    # shortens each wait for the server to be back (pymongo's own tests do the same).
    monkeypatch.setattr(pymongo.common, "MIN_HEARTBEAT_INTERVAL", 0.05)
    info = embedded_server.info
    async with FaultProxy(info.host, info.port, info.secret) as running:
        yield running


@pytest.fixture
async def faulty(proxy, settings, connection) -> AsyncIterator[Connection]:
    """A connection through the proxy to the test's database (``connection`` is direct)."""
    through = load_settings(
        mongodb_uri=proxy.uri,
        database=settings.database,
        embedder="fake",
        connect_timeout_ms=TIMEOUT_MS,
    )
    conn = await connect(through)
    yield conn
    await conn.close()


async def faulted(
    proxy: FaultProxy,
    connection: Connection,
    operation: Awaitable[Any],
    *,
    may_finish: bool = False,
) -> float | None:
    """Await ``operation`` while the proxy is armed: it must fail with
    StorageUnavailableError within the bound, or, with ``may_finish``, may finish when the
    cut hit a write it does not wait for (or one whose failure it records and leaves to a
    later run). Then bring the server back and wait until
    ``connection`` reaches it again. Returns the seconds the failure took (``None``: it
    finished)."""
    started = time.perf_counter()
    try:
        await asyncio.wait_for(operation, BOUND_S * 3)
    except StorageUnavailableError as exc:
        took = time.perf_counter() - started
        assert proxy.down, f"failed without a fault: {exc}"
        assert took < BOUND_S, f"the failure took {took:.2f} s"
        assert "\n" not in str(exc)
    else:
        assert may_finish, "the operation did not fail"
        assert proxy.down, "the cut never came"
        took = None
    await proxy.restore()
    await reconnected(connection)
    return took


async def reconnected(connection: Connection) -> None:
    """Wait until the client sees the server again (its monitor checks at most every
    500 ms, longer than a 300 ms server selection), within the bound."""
    deadline = time.perf_counter() + BOUND_S
    while True:
        try:
            await connection.ping()
            return
        except StorageUnavailableError:
            assert time.perf_counter() < deadline, "the client never reconnected"


async def sweep(
    proxy: FaultProxy,
    connection: Connection,
    name: str,
    prepare: Callable[[], Awaitable[Any]],
    operation: Callable[[Any], Awaitable[Any]],
    check: Callable[[Any, bool], Awaitable[None]],
    *,
    may_finish: bool = False,
) -> int:
    """Run ``operation(prepare())`` clean to count its commands, then cut at each
    command, both modes, each on fresh data from ``prepare``; ``check(prepared, failed)``
    after each fault (the server back). Returns the faults injected."""
    await operation(await prepare())  # warm: a first run may read what later runs cache
    state = await prepare()
    before = len(proxy.commands)
    await operation(state)
    commands = proxy.commands[before:]
    assert commands, "the operation sent no command"
    slowest, faults = 0.0, 0
    for index, command in enumerate(commands, start=1):
        # A read's reply lost is the same fault as the read not sent: one mode for reads.
        for deliver in (False, True) if command not in READS else (False,):
            faults += 1
            state = await prepare()
            proxy.cut_at(index, deliver=deliver)
            took = await faulted(proxy, connection, operation(state), may_finish=may_finish)
            slowest = max(slowest, took or 0.0)
            await check(state, took is not None)
    FIGURES[name] = FIGURES.get(name, 0) + faults
    print(f"{name}: {len(commands)} commands {commands}, {faults} faults, slowest {slowest:.2f} s")
    return faults


# --- decay -----------------------------------------------------------------------------------


async def test_a_decay_run_cut_anywhere_applies_once_per_memory_after_a_rerun(
    proxy, faulty, connection, embedder
):
    await IndexManager(connection, embedder.signature).setup()
    memories = connection.collection("memories")
    system = MemorySystem(faulty, embedder)
    # No renewal during a run (a third of the lease): the commands of a run are the same
    # each time. A dead run's lease is expired by hand below instead of waiting a minute.
    maintenance = Maintenance(system, lease_seconds=60.0)
    locks = connection.collection("locks")

    async def prepare() -> dict[str, float]:
        await memories.delete_many({})
        await connection.collection("decay_runs").delete_many({})
        await locks.delete_many({})
        start = {f"m{i}": 0.5 + i / 10 for i in range(4)}
        await memories.insert_many(
            {
                "_id": key,
                **tenant.filter(),
                "content": f"fact {key}",
                "status": "active",
                "importance": start[key],
                "last_accessed": NOW - timedelta(days=45),
                "created_at": NOW - timedelta(days=90),
            }
            for key, tenant in zip(start, [ALICE, ALICE, BOB, BOB], strict=True)
        )
        return start

    async def run(_: Any) -> None:
        await maintenance.run(now=NOW)

    async def check(start: dict[str, float], failed: bool) -> None:
        # Each memory decayed once or not at all, never by a fraction or twice.
        after = await _importances(memories)
        for key, value in after.items():
            assert value in (start[key], pytest.approx(start[key] * 0.95)), (key, value)
        # A rerun in the same period finishes the job: at once if the dead run gave its
        # lease back, else once the lease has expired (a minute on; time moved by hand).
        if await _held(locks):
            with pytest.raises(LeaseHeldError):
                await maintenance.run(now=NOW)
            await locks.update_many({}, {"$set": {"expires_at": utcnow() - timedelta(seconds=1)}})
            report = await maintenance.run(now=NOW + timedelta(hours=1))
            assert report.took_over is not None
        else:
            report = await maintenance.run(now=NOW + timedelta(hours=1))
        undecayed = sum(after[key] == start[key] for key in start)
        assert report.decay.decayed == undecayed
        assert await _importances(memories) == pytest.approx(
            {key: value * 0.95 for key, value in start.items()}
        )
        # The audit trail accounts for every decay: each memory names a recorded run.
        runs = {run["_id"]: run async for run in connection.collection("decay_runs").find()}
        async for memory in memories.find():
            assert memory.get("decay_run") in runs, memory["_id"]
        finished = [run for run in runs.values() if run.get("status", "finished") == "finished"]
        assert report.decay.run_id in {run["_id"] for run in finished}

    await sweep(proxy, faulty, "decay run", prepare, run, check)
    await system.aclose()


# --- a turn ------------------------------------------------------------------------------------


@asynccontextmanager
async def _turn_agent(
    faulty: Connection, connection: Connection, embedder: Any
) -> AsyncIterator[RAGAgent]:
    """An agent on the faulty connection, closed when the block ends however it ends."""
    await IndexManager(connection, embedder.signature).setup()
    chat = FakeChatModel(default="You like the window seat.")
    config = AgentConfig("agent", run_formation_worker=False, formation_debounce_s=0.0)
    async with RAGAgent(faulty, embedder, chat, config=config) as agent:
        yield agent


async def test_a_turn_cut_anywhere_keeps_its_messages_whole_and_the_retry_lands(
    proxy, faulty, connection, embedder
):
    async with _turn_agent(faulty, connection, embedder) as agent:
        await agent.memories.long_term.store(ALICE, "Alice prefers the window seat")
        await agent.drain()
        messages, actions = connection.collection("messages"), connection.collection("action_logs")
        query = "Which seat do I prefer?"
        outcomes: dict[str, int] = {}

        async def prepare() -> str:
            return _unique("s")

        async def turn(session: str) -> None:
            await agent.process_query("alice", session, query)
            await agent.drain()  # the writes a turn leaves for the background are part of it

        async def check(session: str, failed: bool) -> None:
            stored = await messages.find({"session_id": session}).sort("seq").to_list(None)
            logged = await actions.find({"session_id": session}).to_list(None)
            # The turn's messages are all there or none: never the question without its answer.
            assert [(m["role"], m["content"]) for m in stored] in (
                [],
                [("user", query), ("assistant", "You like the window seat.")],
            )
            # A turn that answered has both its messages and its action stored.
            assert failed or (len(stored), len(logged)) == (2, 1)
            # An action, if logged, is whole and says what happened.
            assert len(logged) <= 1
            for action in logged:
                # "failure": the commit's action write outlived the turn's error (see
                # test_no_commit_write_lands_after_the_turn_raised); it then says why.
                assert action["user_id"] == "alice" and action["outcome"] in ("success", "failure")
                if action["outcome"] == "failure":
                    assert (
                        not stored
                        and action["action"]["output"]["error"] == "StorageUnavailableError"
                    )
                assert action["action"]["input"]["query"] == query and action["content"] == query
                assert action["action"]["duration_ms"] > 0
            kept = logged[0]["outcome"] if logged else "none"
            key = f"messages {'kept' if stored else 'none'}, action {kept}"
            outcomes[key] = outcomes.get(key, 0) + 1
            # Asked again, the turn lands whole after what the failed one left.
            result = await agent.process_query("alice", session, query)
            await agent.drain()
            again = await messages.find({"session_id": session}).sort("seq").to_list(None)
            assert [m["role"] for m in again] == ["user", "assistant"] * (1 + bool(stored))
            assert (
                await actions.count_documents({"_id": result.action_id, "outcome": "success"}) == 1
            )

        await sweep(proxy, faulty, "turn", prepare, turn, check, may_finish=True)
        print("turn outcomes after a fault:", outcomes)


async def test_no_commit_write_lands_after_the_turn_raised(
    faulty, connection, embedder, monkeypatch
):
    async with _turn_agent(faulty, connection, embedder) as agent:
        log_action = agent.memories.episodic.log_action

        async def gone(*args: Any, **kwargs: Any) -> Any:
            raise StorageUnavailableError("appending a turn: the database cannot be reached")

        async def slow(*args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(0.2)  # the server answers this one later than the other
            return await log_action(*args, **kwargs)

        monkeypatch.setattr(agent.memories.conversation, "append_turn", gone)
        monkeypatch.setattr(agent.memories.episodic, "log_action", slow)
        with pytest.raises(StorageUnavailableError):
            await agent.process_query("alice", "s1", "Which seat do I prefer?")
        raised_with = await connection.collection("action_logs").count_documents({})
        await asyncio.sleep(0.5)
        after = await connection.collection("action_logs").count_documents({})
    assert after == raised_with, "a write of the failed turn landed after it raised"


async def test_a_turn_cut_between_its_writes_logs_no_success_without_its_messages(
    proxy, faulty, connection, embedder, monkeypatch
):
    async with _turn_agent(faulty, connection, embedder) as agent:
        append_turn = agent.memories.conversation.append_turn

        async def after_the_action(*args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(0.2)  # the action's insert, sent at the same time, is done
            proxy.cut()  # the database goes before the messages are sent
            return await append_turn(*args, **kwargs)

        monkeypatch.setattr(agent.memories.conversation, "append_turn", after_the_action)
        await faulted(proxy, faulty, agent.process_query("alice", "s1", "Which seat?"))
    messages = await connection.collection("messages").count_documents({"session_id": "s1"})
    successes = await connection.collection("action_logs").count_documents(
        {"session_id": "s1", "outcome": "success"}
    )
    assert (messages, successes) != (0, 1)


async def test_a_turn_whose_formation_scheduling_is_cut_fails_and_its_retry_is_formed(
    proxy, faulty, connection, embedder, monkeypatch
):
    async with _turn_agent(faulty, connection, embedder) as agent:
        schedule = agent.queue.schedule

        async def cut_then_schedule(*args: Any, **kwargs: Any) -> Any:
            proxy.cut()
            return await schedule(*args, **kwargs)

        monkeypatch.setattr(agent.queue, "schedule", cut_then_schedule)
        # Scheduling is part of the commit: the turn is not reported answered without it...
        with pytest.raises(StorageUnavailableError):
            await agent.process_query("alice", "s1", "My name is Ana and I prefer the window seat.")
        await proxy.restore()
        await reconnected(faulty)
        logs = connection.collection("action_logs")
        assert await logs.count_documents({"outcome": "success"}) == 0
        # ...and the user's retry, with the database back, schedules it.
        monkeypatch.setattr(agent.queue, "schedule", schedule)
        await agent.process_query("alice", "s1", "My name is Ana and I prefer the window seat.")
    direct = MemorySystem(connection, embedder)
    queue = FormationQueue(connection, debounce_seconds=0)
    worker = FormationWorker(direct, OfflineChatModel(), queue=queue, worker_id="later")
    while await worker.run_once(now=utcnow() + timedelta(days=1)):
        pass
    profile = await direct.profiles.get(ALICE)
    await direct.aclose()
    assert profile.data.get("user_name") == "Ana"


# --- a formation job ---------------------------------------------------------------------------

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
LEASE_S = 60.0


async def test_a_formation_job_cut_anywhere_is_taken_over_and_forms_once(
    proxy, faulty, connection, embedder
):
    await IndexManager(connection, embedder.signature).setup()
    direct = MemorySystem(connection, embedder)
    queue = FormationQueue(connection, debounce_seconds=0, lease_seconds=LEASE_S)
    through = MemorySystem(faulty, embedder)
    worker = FormationWorker(
        through,
        OfflineChatModel(),
        queue=FormationQueue(faulty, debounce_seconds=0, lease_seconds=LEASE_S),
        worker_id="cut",
    )
    survivor = FormationWorker(direct, OfflineChatModel(), queue=queue, worker_id="survivor")
    text = "My name is Ana. I'm vegetarian and I fly economy class."
    formed: list[int] = []

    async def prepare() -> tuple[Tenant, str]:
        tenant, session = Tenant("travel", _unique("user")), _unique("s")
        await direct.conversation.append_turn(
            tenant, session, [NewMessage.user(text), NewMessage.assistant("OK")]
        )
        await direct.conversation.drain()
        await queue.schedule(tenant, session, now=T0)
        return tenant, session

    async def work(prepared: tuple[Tenant, str]) -> None:
        tenant, session = prepared
        # A failure inside the job is recorded on it (or, with the database gone, left to
        # the lease); only a failed claim reaches the caller.
        assert await worker.run_once(now=T0) is True
        job = (await queue.jobs(tenant, session))[0]
        if job.status != "done":
            raise StorageUnavailableError(f"the job was left {job.status}")
        formed.append(await _count(direct, tenant))

    async def check(prepared: tuple[Tenant, str], failed: bool) -> None:
        tenant, session = prepared
        # Another worker finishes whatever state the cut left, past the lease and any backoff.
        later = T0 + timedelta(seconds=LEASE_S + 3600)
        while await survivor.run_once(now=later):
            pass
        jobs = await queue.jobs(tenant, session)
        assert [job.status for job in jobs] == ["done"]
        profile = await direct.profiles.get(tenant)
        assert profile.data["user_name"] == "Ana" and profile.version == 1
        assert await _count(direct, tenant) == formed[0]  # formed once: no copies

    await sweep(proxy, faulty, "formation job", prepare, work, check, may_finish=True)
    assert formed[0] >= 2
    await through.aclose()
    await direct.aclose()


async def _count(memories: MemorySystem, tenant: Tenant) -> int:
    return await memories.long_term.collection.count_documents(tenant.filter())


# --- working memory: restore and resume ---------------------------------------------------------


async def test_a_checkpoint_restore_or_resume_cut_anywhere_leaves_the_task_whole(
    proxy, faulty, connection
):
    direct = WorkingMemory(connection)
    through = WorkingMemory(faulty)
    tasks = connection.collection("tasks")

    async def prepare() -> tuple[str, dict[str, Any], dict[str, Any]]:
        task = await direct.create_task(ALICE, "s1", "plan a trip", plan=["flights", "hotel"])
        task = await direct.start_task(ALICE, task.id)
        await direct.update_context(ALICE, task.id, {"city": "Lisbon"})
        await direct.advance_step(ALICE, task.id, 0, status="in_progress")
        saved = _state(await tasks.find_one({"_id": task.id}))
        await direct.checkpoint(ALICE, task.id)
        await direct.advance_step(ALICE, task.id, 0, status="completed", result="TP123")
        await direct.advance_step(ALICE, task.id, 1, status="in_progress")
        await direct.update_context(ALICE, task.id, {"city": "Porto", "hotel": "H1"})
        return task.id, saved, _state(await tasks.find_one({"_id": task.id}))

    async def restore(prepared: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
        await through.restore(ALICE, prepared[0])

    async def check_restore(prepared: tuple[str, dict[str, Any], dict[str, Any]], _: bool) -> None:
        task_id, saved, moved = prepared
        assert _state(await tasks.find_one({"_id": task_id})) in (saved, moved)  # never mixed
        await through.restore(ALICE, task_id)  # done again, it lands whole
        assert _state(await tasks.find_one({"_id": task_id})) == saved

    async def resume(prepared: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
        await through.resume(ALICE, prepared[0])  # the worker on step 1 died

    async def check_resume(prepared: tuple[str, dict[str, Any], dict[str, Any]], _: bool) -> None:
        task_id, _saved, moved = prepared
        now = _state(await tasks.find_one({"_id": task_id}))
        if now != moved:  # resumed whole: step 1 back to pending, nothing else changed
            assert now["plan"][1]["status"] == "pending" and now["context"] == moved["context"]
        resumed = await through.resume(ALICE, task_id)
        assert resumed.next_step is not None and resumed.next_step.index == 1
        assert resumed.task.plan[0].status == "completed" and resumed.task.plan[0].result == "TP123"

    await sweep(proxy, faulty, "checkpoint restore", prepare, restore, check_restore)
    await sweep(proxy, faulty, "task resume", prepare, resume, check_resume)


def _state(doc: dict[str, Any]) -> dict[str, Any]:
    """What a restore puts back: status, plan (step statuses and results) and context."""
    return {
        "status": doc["status"],
        "plan": [{"status": s["status"], "result": s.get("result")} for s in doc["plan"]],
        "context": doc["context"],
    }


# --- the server hangs -----------------------------------------------------------------------------


async def test_a_server_that_hangs_mid_run_fails_within_the_heartbeat_and_loses_nothing(
    proxy, settings, connection, embedder, monkeypatch
):
    """Connections stay open but nothing comes back (a frozen server, a partition without
    resets): the driver's heartbeat notices within ``heartbeatFrequencyMS`` plus the connect
    timeout (10 s + 5 s by default; 0.5 s + 0.1 s here) and the run fails; then it resumes."""
    await IndexManager(connection, embedder.signature).setup()
    through = load_settings(
        mongodb_uri=proxy.uri,
        database=settings.database,
        embedder="fake",
        connect_timeout_ms=TIMEOUT_MS,
    )
    conn = await connect(through, client_options={"heartbeatFrequencyMS": 500})
    system = MemorySystem(conn, embedder)
    old = utcnow() - timedelta(days=60)
    await connection.collection("memories").insert_many(
        {
            **ALICE.filter(),
            "_id": f"m{i}",
            "status": "active",
            "importance": 0.5,
            "last_accessed": old,
            "content": f"fact {i}",
        }
        for i in range(3)
    )
    maintenance = Maintenance(system, lease_seconds=60.0)
    apply_retention = system.conversation.apply_retention

    async def freeze_then_retention(*args: Any, **kwargs: Any) -> Any:
        proxy.freeze()
        return await apply_retention(*args, **kwargs)

    monkeypatch.setattr(system.conversation, "apply_retention", freeze_then_retention)
    started = time.perf_counter()
    with pytest.raises(StorageUnavailableError):
        await asyncio.wait_for(maintenance.run(), 10)
    took = time.perf_counter() - started
    assert took < 0.5 + BOUND_S, f"the hang took {took:.2f} s to fail"
    await proxy.restore()
    await reconnected(conn)
    monkeypatch.setattr(system.conversation, "apply_retention", apply_retention)
    memories = connection.collection("memories")
    assert [d["importance"] async for d in memories.find()] == [pytest.approx(0.475)] * 3
    await connection.collection("locks").update_many({}, {"$set": {"expires_at": utcnow()}})
    report = await maintenance.run()
    assert report.decay.decayed == 0 and report.took_over is not None
    FIGURES["server hangs"] = FIGURES.get("server hangs", 0) + 1
    print(f"server hangs: failed after {took:.2f} s")
    await system.aclose()
    await conn.close()


# --- the server process itself stops ------------------------------------------------------------


@pytest.mark.mongoeco
async def test_the_embedded_server_stopped_mid_run_and_restarted_keeps_everything(
    tmp_path, embedder, monkeypatch
):
    """Not the proxy: the server itself stops in the middle of a maintenance run (between
    its decay and its credits step) and starts again on the same data directory and port."""
    monkeypatch.setattr(pymongo.common, "MIN_HEARTBEAT_INTERVAL", 0.05)
    server = EmbeddedServer(tmp_path / "data")
    await server.astart()
    port = server.info.port
    settings = load_settings(
        mongodb_uri=server.uri, database="faults", embedder="fake", connect_timeout_ms=TIMEOUT_MS
    )
    conn = await connect(settings)
    reserved: list[socket.socket] = []
    try:
        await IndexManager(conn, embedder.signature).setup()
        system = MemorySystem(conn, embedder)
        stored = [await system.long_term.store(ALICE, f"fact {i}") for i in range(3)]
        await system.conversation.append_turn(
            ALICE, "s1", [NewMessage.user("hello"), NewMessage.assistant("hi")]
        )
        await system.long_term.drain()
        await system.conversation.drain()
        old = utcnow() - timedelta(days=60)
        await conn.collection("memories").update_many({}, {"$set": {"last_accessed": old}})
        maintenance = Maintenance(system, lease_seconds=60.0)
        repair = system.episodic.repair_pending_credits

        async def stop_then_repair(*args: Any, **kwargs: Any) -> Any:
            await server.astop()
            reserved.extend(_reserve(port))
            return await repair(*args, **kwargs)

        monkeypatch.setattr(system.episodic, "repair_pending_credits", stop_then_repair)
        started = time.perf_counter()
        with pytest.raises(StorageUnavailableError):
            await asyncio.wait_for(maintenance.run(), BOUND_S * 3)
        assert time.perf_counter() - started < BOUND_S + 1  # the stop itself takes a moment
        monkeypatch.setattr(system.episodic, "repair_pending_credits", repair)

        server = EmbeddedServer(tmp_path / "data", port=port)
        await server.astart()
        _release(reserved)
        await reconnected(conn)
        # The decay the dead run applied is on disk; the next run decays nothing again.
        docs = await conn.collection("memories").find().to_list(None)
        assert {d["_id"] for d in docs} == {m.id for m in stored}
        assert all(d["importance"] == pytest.approx(0.5 * 0.95) for d in docs)
        await conn.collection("locks").update_many({}, {"$set": {"expires_at": utcnow()}})
        report = await maintenance.run()
        assert report.decay.decayed == 0 and report.took_over is not None
        window = await system.conversation.window(ALICE, "s1")
        assert [m.content for m in window] == ["hello", "hi"]
        FIGURES["server process stopped"] = FIGURES.get("server process stopped", 0) + 1
        await system.aclose()
    finally:
        _release(reserved)
        await conn.close()
        await server.astop()


def _reserve(port: int) -> list[socket.socket]:
    """Hold the stopped server's port until it restarts: bound (with SO_REUSEADDR, as the
    server binds it) but not listening, so connections are still refused, and no connection
    made meanwhile, by this or another test process, is given the port as its own. Best
    effort: nothing is held if the port cannot be bound."""
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("127.0.0.1", port))
    except OSError:
        held.close()
        return []
    return [held]


def _release(reserved: list[socket.socket]) -> None:
    while reserved:
        reserved.pop().close()


async def _importances(memories: Any) -> dict[str, float]:
    return {d["_id"]: d["importance"] async for d in memories.find({}, {"importance": 1})}


async def _held(locks: Any) -> bool:
    return await locks.count_documents({"released_at": None}) > 0


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"

"""Soak: many sessions and separate formation workers for a bounded time, then nothing lost.

``agent-memory bench soak --seconds 600 --sessions 50 --workers 2``

Every user talks continuously for ``seconds``: a turn, a pause (the user thinking), the next
turn; after ``session_turns`` turns the user starts a new session (which brings the old
session's memory formation forward). Each message carries the user's marker and the turn's
number and states something the rule-based extractor forms a memory from: the user's name
(the marker itself), a home that changes every few turns, a seat preference that flips. The
agent runs no worker of its own; ``workers`` :class:`FormationWorker` instances, each on its
own connection as separate processes would be, form memories while the sessions talk.

When the time is up the workers finish the queue, and what was stored is read back
(:mod:`agent_memory.bench._soak_checks`): every acknowledged message stored exactly once in its
own session, in order, with its episodic record; no user's marker in another user's documents
or prompts; no two active memories of a user with the same key or the same text; every
session formed through its last message, no job dead or stuck; each user's current home and
seat the last ones stated. Memory use is sampled throughout (:mod:`agent_memory.bench._memory`)
and must be flat after the warm-up. The result says ``ok`` only when every check holds.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from agent_memory._log import get_logger
from agent_memory.agent.config import AgentConfig
from agent_memory.agent.rag_agent import RAGAgent
from agent_memory.bench._cost import CommandTally, cpu_seconds
from agent_memory.bench._memory import MemorySampler, memory_verdict
from agent_memory.bench._server import ServerWatch, describe_server
from agent_memory.bench._soak_checks import Ledger, check_store
from agent_memory.checks import check_count, check_number
from agent_memory.errors import InvalidInputError
from agent_memory.formation.queue import FormationQueue
from agent_memory.formation.worker import FormationWorker
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo.connection import Connection, connect
from agent_memory.providers.chat.base import ChatRequest
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.providers.embedders.base import Embedder
from agent_memory.tenancy import Tenant

__all__ = ["Soak", "SoakSettings", "render_soak", "run_soak"]

logger = get_logger(__name__)

MARKER = re.compile(r"\bmk[0-9a-f]{12}\b", re.IGNORECASE)
_TOWNS = ("Town", "City")
_SEATS = ("window", "aisle")
#: A user's statements, in turn; the third changes every 2 cycles, the fourth every cycle.
_CYCLE = 5


@dataclass(frozen=True, slots=True)
class SoakSettings:
    seconds: float = 60.0
    sessions: int = 20
    workers: int = 2
    #: Jobs each worker works at once (:attr:`FormationWorker.concurrency`).
    worker_concurrency: int = 4
    #: The simulated chat model's answer time, seconds.
    chat_seconds: float = 0.05
    #: Mean pause between a user's turns (uniform from 0 to twice this), seconds.
    think_seconds: float = 0.5
    #: Turns before a user starts a new session.
    session_turns: int = 20
    #: Quiet before a session's memories are formed (the agent's formation debounce).
    debounce_seconds: float = 2.0
    #: The workers' lease on a job; a busy user's due job waits up to this long.
    lease_seconds: float = 15.0
    #: Memory samples before this are warm-up (default: a fifth of the run, at most 60 s).
    warmup_seconds: float | None = None
    #: Seconds between memory samples (default: the run / 120, from 0.5 to 5 s).
    sample_seconds: float | None = None
    #: The memory check: the end level may exceed the post-warm-up level by this fraction.
    max_growth: float = 0.25
    #: Time the workers get to finish the queue once the sessions stop, seconds.
    drain_seconds: float = 180.0
    tracemalloc: bool = False
    seed: int = 7
    #: The embedded server's write-ahead log may never exceed this (MB) at any sample.
    max_wal_mb: float = 64.0
    #: When set, the run fails if the p95 turn latency exceeds this (ms).
    max_p95_ms: float | None = None
    #: When set, the run fails if the last window's p95 exceeds the first's by this factor.
    max_drift: float | None = None

    def __post_init__(self) -> None:
        positive = ("seconds", "chat_seconds", "lease_seconds", "max_growth", "drain_seconds")
        for name in positive:
            check_number(getattr(self, name), name, above=0, finite=False)
        for name in ("think_seconds", "debounce_seconds"):
            check_number(getattr(self, name), name, minimum=0, finite=False)
        for name in ("sessions", "workers", "worker_concurrency", "session_turns"):
            check_count(getattr(self, name), name, maximum=10_000)
        for name in ("warmup_seconds", "sample_seconds", "max_p95_ms", "max_drift"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and value >= 0):
                raise InvalidInputError(f"{name} must be a number >= 0 or None")

    @property
    def warmup(self) -> float:
        return self.warmup_seconds if self.warmup_seconds is not None else min(self.seconds / 5, 60)

    @property
    def drift_window(self) -> float:
        """Seconds at each end of the run whose p95 latencies are compared: ten minutes,
        or a sixth of a shorter run."""
        return min(600.0, self.seconds / 6)

    @property
    def sample_interval(self) -> float:
        if self.sample_seconds:
            return self.sample_seconds
        return min(max(self.seconds / 120, 0.5), 5.0)


def statement(marker: str, number: int) -> str:
    """What the user says in turn ``number`` (besides its marker and number)."""
    cycle, step = divmod(number, _CYCLE)
    return (
        f"My name is {marker}.",
        "What do you remember about me?",
        f"I live in {marker.capitalize()} {_TOWNS[cycle // 2 % 2]}.",
        f"Please book me a {_SEATS[cycle % 2]} seat.",
        "Thanks, that helps.",
    )[step]


@dataclass
class _Counters:
    crossed_prompts: int = 0
    prompts_checked: int = 0
    errors: list[str] = field(default_factory=list)
    latencies: list[tuple[float, float]] = field(default_factory=list)  # (at, seconds)
    #: When each user's session ended (a new one started), seconds into the run.
    sessions_ended: list[float] = field(default_factory=list)


class Soak:
    """One soak run: :meth:`run` talks and forms, checks, and (by default) erases its users.

    A test can run with ``cleanup=False``, tamper with what was stored and call
    :meth:`check` again to see the tampering counted."""

    def __init__(
        self,
        connection: Connection,
        embedder: Embedder,
        settings: SoakSettings,
        *,
        watch: ServerWatch | None = None,
    ) -> None:
        self.connection = connection
        self.embedder = embedder
        self.settings = settings
        #: The embedded server to watch (memory, write-ahead log), when there is one.
        self.watch = watch
        self.agent_id = f"bench-soak-{uuid.uuid4().hex[:6]}"
        self.ledger = Ledger(
            {f"u{i:04d}": f"mk{uuid.uuid4().hex[:12]}" for i in range(settings.sessions)}
        )
        self._counters = _Counters()

    def _answer(self, request: ChatRequest) -> str:
        text = request.system_text + "\n" + "\n".join(m.text for m in request.messages)
        found = {m.lower() for m in MARKER.findall(text)}
        counters = self._counters
        counters.prompts_checked += 1
        counters.crossed_prompts += len(found) > 1  # a prompt built for one user shows another's
        return f"noted {' '.join(sorted(found))}"

    async def _talk(self, agent: RAGAgent, index: int, user: str, deadline: float) -> None:
        s, ledger, counters = self.settings, self.ledger, self._counters
        rng = random.Random(s.seed * 100_003 + index)
        marker = ledger.markers[user]
        loop = asyncio.get_running_loop()
        await asyncio.sleep(rng.uniform(0, s.think_seconds))  # users do not start in step
        number, session_id = 0, f"{self.agent_id}-{user}-s0"
        while loop.time() < deadline:
            if number and number % s.session_turns == 0:
                session_id = f"{self.agent_id}-{user}-s{number // s.session_turns}"
                counters.sessions_ended.append(loop.time() - (deadline - s.seconds))
                try:
                    await agent.start_new_session(user, session_id)
                except Exception as exc:  # counted and reported, never hidden
                    counters.errors.append(f"{user} new session: {type(exc).__name__}: {exc}")
            query = f"turn {number} {marker}: {statement(marker, number)}"
            at, started = loop.time() - (deadline - s.seconds), time.perf_counter()
            try:
                await agent.process_query(user, session_id, query)
                ledger.acknowledge(user, session_id, number)
            except Exception as exc:
                counters.errors.append(f"{user} turn {number}: {type(exc).__name__}: {exc}"[:300])
            counters.latencies.append((at, time.perf_counter() - started))
            number += 1
            if s.think_seconds:
                await asyncio.sleep(rng.uniform(0, 2 * s.think_seconds))

    async def _finish_formation(self, queue: FormationQueue, deadline: float) -> float:
        """Bring every user's pending formation forward and wait until no job is pending or
        running (or the deadline); returns the seconds it took."""
        started = time.perf_counter()
        collection = queue.collection
        open_jobs = {"agent_id": self.agent_id, "status": {"$in": ["pending", "running"]}}
        loop = asyncio.get_running_loop()
        while loop.time() < deadline:
            for user in self.ledger.markers:
                await queue.expedite(Tenant(self.agent_id, user))
            if await collection.count_documents(open_jobs) == 0:
                break
            await asyncio.sleep(0.5)
        return time.perf_counter() - started

    async def run(
        self, *, progress: Callable[[str], None] | None = None, cleanup: bool = True
    ) -> dict[str, Any]:
        s, counters = self.settings, self._counters
        say = progress or (lambda line: None)
        chat = FakeChatModel(default=self._answer, delay=s.chat_seconds)
        # The fake keeps every request for tests to inspect; a soak would measure that list.
        chat.requests = _Discarding()
        config = AgentConfig(
            self.agent_id, run_formation_worker=False, formation_debounce_s=s.debounce_seconds
        )
        # The users' turns and the workers' jobs each on connections of their own, so that
        # the commands of each are counted apart (the run's ``cost``).
        turn_tally, job_tally = CommandTally(), CommandTally()
        agent_connection = await connect(
            self.connection.settings, client_options={"event_listeners": [turn_tally]}
        )
        worker_connections = [
            await connect(self.connection.settings, client_options={"event_listeners": [job_tally]})
            for _ in range(s.workers)
        ]
        workers = [
            FormationWorker(
                MemorySystem(conn, self.embedder),
                None,  # the rule-based extractor
                queue=FormationQueue(conn, lease_seconds=s.lease_seconds),
                worker_id=f"{self.agent_id}-w{i}",
                poll_interval=0.2,
                concurrency=s.worker_concurrency,
            )
            for i, conn in enumerate(worker_connections)
        ]

        server_pid = self.watch.pid if self.watch is not None and self.watch.apart else None

        def sample() -> dict[str, Any]:
            server = self.watch.sample() if self.watch is not None else {}
            if server_pid is not None:
                server["server_cpu_s"] = cpu_seconds(server_pid)
            return {
                **server,
                "cpu_s": cpu_seconds(),
                "turns": len(counters.latencies),
                "jobs_worked": sum(worker.jobs_worked for worker in workers),
            }

        sampler = MemorySampler(s.sample_interval, traced=s.tracemalloc, extra=sample)
        load_before = os.getloadavg()
        check_error = cleanup_error = ""
        try:
            async with RAGAgent(agent_connection, self.embedder, chat, config=config) as agent:
                await agent.queue.setup()
                sampler.start()
                cost_start, turns_before = sampler.sample_now(), turn_tally.snapshot()
                jobs_before = job_tally.snapshot()
                for worker in workers:
                    worker.start()
                loop = asyncio.get_running_loop()
                say(f"{s.sessions} users talking for {s.seconds:g} s, {s.workers} workers forming")
                deadline = loop.time() + s.seconds
                started = time.perf_counter()
                users = list(self.ledger.markers)
                await asyncio.gather(
                    *(self._talk(agent, i, user, deadline) for i, user in enumerate(users))
                )
                elapsed = time.perf_counter() - started
                cost_end, turns_after = sampler.sample_now(), turn_tally.snapshot()
                await agent.drain()
                under_load = sampler.stop()
                load_during = os.getloadavg()
                say(f"{len(counters.latencies)} turns in {elapsed:.1f} s; finishing formation")
                drain = await self._finish_formation(agent.queue, loop.time() + s.drain_seconds)
                for worker in workers:
                    await worker.aclose()
                after = sampler.sample_now()
                try:
                    checks = await check_store(self.connection, self.agent_id, self.ledger)
                except Exception as exc:  # the load's figures are still worth reporting
                    checks, check_error = {}, f"{type(exc).__name__}: {exc}"[:300]
                if cleanup:
                    try:
                        await self.forget(agent)
                    except Exception as exc:  # as above: the figures stay, the run fails
                        cleanup_error = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            sampler.stop()
            for worker in workers:
                await worker.aclose()
                await worker.memories.aclose()
            for conn in worker_connections:
                await conn.close()
            await agent_connection.close()
        memory = memory_verdict(under_load, warmup=s.warmup, max_growth=s.max_growth)
        memory["after_drain"] = after
        turns = len(counters.latencies)
        latency = _latency_verdict(counters.latencies, s)
        wal = _wal_verdict([*under_load, after], s.max_wal_mb)
        ok = (
            not counters.errors
            and not check_error
            and not cleanup_error
            and counters.crossed_prompts == 0
            and all(checks.get(k) == 0 for k in _MUST_BE_ZERO)
            and memory["ok"]
            and latency["ok"]
            and wal.get("ok", True)
        )
        return {
            "settings": asdict(s),
            "machine": {
                "cpus": os.cpu_count(),
                "load_before": _load(load_before),
                "load_at_end_of_load": _load(load_during),
                "tier": self.connection.tier,
                "server": describe_server(self.watch),
                "embedder": self.embedder.signature.describe(),
            },
            "turns": turns,
            "seconds": round(elapsed, 1),
            "turns_per_second": round(turns / elapsed, 2),
            "turn_ms": _percentiles([seconds for _, seconds in counters.latencies]),
            "turn_ms_by_window": _windows(
                counters.latencies, s.seconds, counters.sessions_ended, under_load
            ),
            "latency": latency,
            "wal": wal,
            "errors": len(counters.errors),
            "error_samples": counters.errors[:5],
            "prompts_checked": counters.prompts_checked,
            "crossed_prompts": counters.crossed_prompts,
            "formation_drain_seconds": round(drain, 1),
            "check_error": check_error,
            "cleanup_error": cleanup_error,
            **checks,
            "memory": memory,
            "cost": _cost(
                cost_start,
                cost_end,
                turns_after.summary(cost_end["turns"] - cost_start["turns"], since=turns_before),
                job_tally.summary(
                    after["jobs_worked"] - cost_start["jobs_worked"], since=jobs_before
                ),
            ),
            "ok": ok,
        }

    async def check(self) -> dict[str, Any]:
        """Read back what was stored and count what is wrong (see :func:`check_store`)."""
        return await check_store(self.connection, self.agent_id, self.ledger)

    async def forget(self, agent: RAGAgent) -> None:
        for user in self.ledger.markers:
            await agent.memories.forget_user(Tenant(self.agent_id, user))


#: Counts that fail the run when not zero.
_MUST_BE_ZERO = frozenset(
    {
        "lost_messages",
        "duplicated_messages",
        "sessions_out_of_order",
        "unacknowledged_messages",
        "missing_actions",
        "foreign_markers",
        "memories_from_foreign_sessions",
        "duplicate_memories",
        "dead_jobs",
        "stuck_jobs",
        "open_jobs",
        "sessions_not_formed",
        "stale_values",
    }
)


class _Discarding(list):  # type: ignore[type-arg]
    """A list that keeps nothing (for :attr:`FakeChatModel.requests` in a long run)."""

    def append(self, item: object) -> None:
        pass


def _load(values: tuple[float, float, float]) -> list[float]:
    return [round(v, 2) for v in values]


def _percentiles(seconds: list[float]) -> dict[str, float | None]:
    if not seconds:
        return {"p50": None, "p95": None, "max": None}
    values = np.array(seconds) * 1000
    return {
        "p50": round(float(np.percentile(values, 50)), 1),
        "p95": round(float(np.percentile(values, 95)), 1),
        "max": round(float(values.max()), 1),
    }


def _windows(
    latencies: list[tuple[float, float]],
    seconds: float,
    sessions_ended: list[float] | None = None,
    samples: list[dict[str, Any]] | None = None,
    count: int = 5,
) -> list[dict]:
    """Per fifth of the run: turns and their latency (does the run slow down as data
    accumulates?), sessions ended and formation jobs the workers finished (do they keep up?)."""
    width = seconds / count
    worked = [(x["t"], x["jobs_worked"]) for x in samples or () if "jobs_worked" in x]
    rows = []
    for i in range(count):
        last = i == count - 1

        def within(at: float, i: int = i, last: bool = last) -> bool:
            return i * width <= at and (last or at < (i + 1) * width)

        inside = [t for at, t in latencies if within(at)]
        row = {"from_s": round(i * width, 1), "turns": len(inside), **_percentiles(inside)}
        row["sessions_ended"] = sum(map(within, sessions_ended or ()))
        if worked:
            row["jobs_worked"] = _grown(worked, i * width, None if last else (i + 1) * width)
        # CPU per turn within the window: does a turn cost more as the data grows?
        for name, key in (("server", "server_cpu_s"), ("framework", "cpu_s")):
            used = [(x["t"], x[key]) for x in samples or () if x.get(key) is not None]
            turns = [(x["t"], x["turns"]) for x in samples or () if x.get(key) is not None]
            if used and turns:
                end = None if last else (i + 1) * width
                done = _grown(turns, i * width, end)
                if done:
                    row[f"{name}_cpu_ms_per_turn"] = round(
                        _grown(used, i * width, end) * 1000 / done, 1
                    )
        rows.append(row)
    return rows


def _grown(series: list[tuple[float, float]], start: float, end: float | None) -> float:
    """How much a running total grew within [start, end): its last sample inside less its
    last sample before (0 before the first sample)."""
    before = [v for t, v in series if t < start]
    upto = [v for t, v in series if end is None or t < end]
    return (upto[-1] if upto else 0) - (before[-1] if before else 0)


def _latency_verdict(latencies: list[tuple[float, float]], s: SoakSettings) -> dict[str, Any]:
    """p95 of the whole run, of its first and of its last :attr:`SoakSettings.drift_window`
    seconds, their ratio, and whether they meet the limits asked for."""
    edge = s.drift_window
    first = _percentiles([t for at, t in latencies if at < edge])["p95"]
    last = _percentiles([t for at, t in latencies if at >= s.seconds - edge])["p95"]
    p95 = _percentiles([t for _, t in latencies])["p95"]
    drift = round(last / first, 2) if first and last else None
    ok = True
    if s.max_p95_ms is not None:
        ok = ok and p95 is not None and p95 <= s.max_p95_ms
    if s.max_drift is not None:
        ok = ok and drift is not None and drift <= s.max_drift
    return {
        "window_s": round(edge, 1),
        "p95_ms": p95,
        "first_p95_ms": first,
        "last_p95_ms": last,
        "drift": drift,
        "max_p95_ms": s.max_p95_ms,
        "max_drift": s.max_drift,
        "ok": ok,
    }


def _cost(
    start: dict[str, Any], end: dict[str, Any], per_turn: dict[str, Any], per_job: dict[str, Any]
) -> dict[str, Any]:
    """What the load cost: CPU per turn of the server (when it runs apart) and of this
    process (users, agent and workers, so formation too), from the first turn to the last;
    the commands a turn sent over the same span, and those a formation job sent, from the
    start to the end of the drain (so that every job counted is a whole one)."""
    turns = end["turns"] - start["turns"]
    cost: dict[str, Any] = {"turns": turns}
    seconds = end["t"] - start["t"]
    for name, key in (("server", "server_cpu_s"), ("framework", "cpu_s")):
        if start.get(key) is not None and end.get(key) is not None and turns and seconds > 0:
            used = end[key] - start[key]
            cost[f"{name}_cpu_ms_per_turn"] = round(used * 1000 / turns, 2)
            cost[f"{name}_cpu_busy"] = round(used / seconds, 2)  # of one core
    return {**cost, "per_turn": per_turn, "per_job": per_job}


def _wal_verdict(samples: list[dict[str, Any]], limit: float) -> dict[str, Any]:
    sizes = [x["wal_mb"] for x in samples if x.get("wal_mb") is not None]
    if not sizes:
        return {}
    return {"max_mb": max(sizes), "end_mb": sizes[-1], "limit_mb": limit, "ok": max(sizes) <= limit}


async def run_soak(
    connection: Connection,
    embedder: Embedder,
    settings: SoakSettings,
    *,
    progress: Callable[[str], None] | None = None,
    watch: ServerWatch | None = None,
) -> dict[str, Any]:
    """Run a soak (see the module's docstring) and return its figures and checks."""
    return await Soak(connection, embedder, settings, watch=watch).run(progress=progress)


def _rss_line(label: str, rss: dict[str, Any], s: dict[str, Any], samples: int) -> str:
    return (
        f"{label} RSS MB: start {rss.get('start')}, after warm-up {rss.get('baseline')}, peak "
        f"{rss.get('peak')}, end {rss.get('end')}; growth after warm-up "
        f"{rss.get('growth_pct')} % (limit {s['max_growth'] * 100:g} %), slope "
        f"{rss.get('slope_mb_per_min')} MB/min over {samples} samples."
    )


def _cost_lines(cost: dict[str, Any] | None) -> list[str]:
    if not cost:
        return []
    busy = [
        f"{name} {cost[f'{name}_cpu_ms_per_turn']} ms a turn, {cost[f'{name}_cpu_busy']:.0%} of a core"
        for name in ("server", "framework")
        if f"{name}_cpu_ms_per_turn" in cost
    ]
    lines = ["", f"CPU under load: {'; '.join(busy)}." if busy else "CPU under load: not read."]
    for label, part in (("a turn", cost["per_turn"]), ("a formation job", cost["per_job"])):
        lines += [
            "",
            f"Commands of {label}: {part['commands_per_unit']} on average over {part['units']}"
            + (f" ({part['failed']} failed)" if part["failed"] else "")
            + ".",
            "",
            "| command | collection | per unit | documents each | ms each |",
            "|---|---|---|---|---|",
            *(
                f"| {r['command']} | {r['collection']} | {r['per_unit']} | "
                f"{r['documents_per_command']} | {r['ms_per_command']} |"
                for r in part["top"]
            ),
        ]
    return lines


def render_soak(result: dict[str, Any]) -> str:
    s, m, mem = result["settings"], result["machine"], result["memory"]
    latency, wal = result.get("latency") or {}, result.get("wal") or {}
    memory_lines = [_rss_line("Framework", mem.get("rss_mb") or {}, s, mem["samples"])]
    if mem.get("server_rss_mb"):
        memory_lines.append(_rss_line("Server", mem["server_rss_mb"], s, mem["samples"]))
    if wal:
        memory_lines.append(
            f"Write-ahead log MB: at most {wal['max_mb']} (limit {wal['limit_mb']:g}), "
            f"{wal['end_mb']} at the end."
        )
    drift_line = (
        f"p95 in the first {latency.get('window_s')} s {latency.get('first_p95_ms')} ms, in "
        f"the last {latency.get('last_p95_ms')} ms: x{latency.get('drift')}"
        + (f" (limit x{latency['max_drift']:g})" if latency.get("max_drift") else "")
        + (f"; p95 limit {latency['max_p95_ms']:g} ms" if latency.get("max_p95_ms") else "")
        + "."
    )
    lines = [
        f"{s['sessions']} sessions for {s['seconds']:g} s with {s['workers']} formation workers "
        f"({s.get('worker_concurrency', 1)} jobs at once each), "
        f"chat model {s['chat_seconds'] * 1000:.0f} ms, think time {s['think_seconds']:g} s, "
        f"{m['tier']} search tier, {m.get('server', 'embedded server')}, embedder {m['embedder']}, {m['cpus']} CPUs, load average "
        f"{m['load_before'][0]} before and {m['load_at_end_of_load'][0]} at the end.",
        "",
        "| turns | turns/s | p50 ms | p95 ms | errors | memories formed | jobs that formed | "
        "drain s |",
        "|---|---|---|---|---|---|---|---|",
        f"| {result['turns']} | {result['turns_per_second']} | {result['turn_ms']['p50']} | "
        f"{result['turn_ms']['p95']} | {result['errors']} | {result.get('memories_formed')} | "
        f"{result.get('formation_jobs_with_memories')} | {result['formation_drain_seconds']} |",
        "",
        "| from s | turns | p50 ms | p95 ms | sessions ended | formation jobs worked | "
        "server CPU ms / turn | framework CPU ms / turn |",
        "|---|---|---|---|---|---|---|---|",
        *(
            f"| {w['from_s']} | {w['turns']} | {w['p50']} | {w['p95']} | "
            f"{w.get('sessions_ended', '')} | {w.get('jobs_worked', '')} | "
            f"{w.get('server_cpu_ms_per_turn', '')} | {w.get('framework_cpu_ms_per_turn', '')} |"
            for w in result["turn_ms_by_window"]
        ),
        *_cost_lines(result.get("cost")),
        "",
        drift_line,
        "",
        "| check | count |",
        "|---|---|",
        *(f"| {name} | {result.get(name, 'not checked')} |" for name in sorted(_MUST_BE_ZERO)),
        f"| crossed_prompts | {result['crossed_prompts']} |",
        *(
            [
                "",
                "Stale values, each with its key's memories in the order they were said:",
                *(json.dumps(detail, ensure_ascii=False) for detail in result["stale_details"]),
            ]
            if result.get("stale_details")
            else []
        ),
        *(
            ["", f"Reading back what was stored failed: {result['check_error']}"]
            if result.get("check_error")
            else []
        ),
        *(
            ["", f"Forgetting the soak's users afterwards failed: {result['cleanup_error']}"]
            if result.get("cleanup_error")
            else []
        ),
        "",
        *memory_lines,
        "",
        "nothing lost, duplicated or crossed; memory flat; within the limits"
        if result["ok"]
        else "FAILED: see the counts, the latency, the memory and the log above",
    ]
    return "\n".join(lines) + "\n"

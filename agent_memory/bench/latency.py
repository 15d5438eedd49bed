"""Turn latency: the RAGAgent against the blueprint's sequential ``process_query``.

``agent-memory bench latency [--turns 20] [--db-rtt-ms 2] [--embed-ms 150] [--ttft-ms 300]
[--chat-ms 1000]``

Both run full turns on the embedded server, reached through a loopback proxy that holds every
message for half the configured database round trip each way, with simulated providers: an
embedder that takes ``embed-ms`` per call and a chat model whose first token comes after
``ttft-ms`` and whose answer is complete after ``chat-ms``. Reported for each: p50 and p95 of
the time to the first answer token and to the committed turn (everything the caller waits
for), database commands and the longest chain of them that ran one after another, provider
calls, and the work left for the background.

The sequential flow is the blueprint's steps 1-9 (``../shared/seeds/004``), each awaited
before the next, on this framework's stores: conversation window, long-term retrieve, active
task, knowledge retrieve with its own query embedding, a non-streamed answer, the action log,
two message writes, then fact extraction (one more chat call) and storing each fact.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pymongo import monitoring

from agent_memory.agent.config import AgentConfig
from agent_memory.agent.rag_agent import AnswerDelta, RAGAgent, TurnResult
from agent_memory.config import Settings
from agent_memory.formation.worker import FormationWorker
from agent_memory.memory.conversation.records import NewMessage
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo.connection import Connection, connect
from agent_memory.mongo.embedded import EmbeddedServer
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.chat.base import ChatRequest, ChatResponse, Message
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.providers.embedders.base import Embedder
from agent_memory.providers.embedders.fake import FakeEmbedder
from agent_memory.tenancy import Tenant

__all__ = ["LatencySettings", "run_latency"]

_IGNORED = frozenset({"hello", "ismaster", "isMaster", "ping", "endSessions", "buildInfo"})

QUESTIONS = [
    "My name is Sam and I prefer aisle seats.",
    "Which seat should I book for the Lisbon flight?",
    "I am vegetarian, please remember that.",
    "What do you know about my food preferences?",
    "Can you plan a weekend in Porto for me?",
]


@dataclass(frozen=True, slots=True)
class LatencySettings:
    turns: int = 20
    db_rtt_ms: float = 2.0
    embed_ms: float = 150.0
    ttft_ms: float = 300.0
    chat_ms: float = 1000.0


# --- simulated services ----------------------------------------------------------------------


class DelayProxy:
    """A loopback TCP proxy that holds each chunk for ``one_way`` seconds in each direction."""

    def __init__(self, upstream_host: str, upstream_port: int, one_way: float) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.one_way = one_way
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        """Listen on a free loopback port and return it."""
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        pumps = [
            asyncio.create_task(self._pump(reader, up_writer)),
            asyncio.create_task(self._pump(up_reader, writer)),
        ]
        self._tasks.update(pumps)
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for task in pumps:
            task.cancel()
            self._tasks.discard(task)
        for w in (writer, up_writer):
            with contextlib.suppress(Exception):
                w.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while chunk := await reader.read(1 << 16):
            await asyncio.sleep(self.one_way)
            writer.write(chunk)
            await writer.drain()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)


class Timeline(monitoring.CommandListener):
    """Start and end times of every command, to count them and their longest sequential chain."""

    def __init__(self) -> None:
        self.started_at: dict[int, float] = {}
        self.spans: list[tuple[float, float]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name not in _IGNORED:
            self.started_at[event.request_id] = time.perf_counter()

    def _end(self, request_id: int) -> None:
        begun = self.started_at.pop(request_id, None)
        if begun is not None:
            self.spans.append((begun, time.perf_counter()))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        self._end(event.request_id)

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self._end(event.request_id)

    def mark(self) -> int:
        return len(self.spans)

    def between(self, start: float, end: float) -> list[tuple[float, float]]:
        return [span for span in self.spans if span[0] >= start and span[1] <= end]


def sequential_chain(spans: list[tuple[float, float]]) -> int:
    """The most commands that ran strictly one after another (none overlapping): what a
    caller waits for in round trips, since concurrent commands overlap."""
    count, free_from = 0, float("-inf")
    for begun, ended in sorted(spans, key=lambda span: span[1]):
        if begun >= free_from:
            count, free_from = count + 1, ended
    return count


class SlowEmbedder(Embedder):
    """The fake embedder behind a fixed service time per call; counts calls."""

    provider = "simulated"

    def __init__(self, seconds: float) -> None:
        self.inner = FakeEmbedder()
        self.model, self.dimensions = self.inner.model, self.inner.dimensions
        self.seconds = seconds
        self.calls: list[float] = []

    async def _embed(self, texts: list[str], *, kind: Literal["document", "query"]) -> np.ndarray:
        self.calls.append(time.perf_counter())
        await asyncio.sleep(self.seconds)
        return await self.inner._embed(texts, kind=kind)


class CountingChat(FakeChatModel):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls: list[float] = []

    async def _reply(self, request: ChatRequest) -> ChatResponse:
        self.calls.append(time.perf_counter())
        return await super()._reply(request)


def _answer(request: ChatRequest) -> str:
    if request.output_schema is not None:  # fact extraction: two facts
        return json.dumps(
            {
                "facts": [
                    {"content": "The user prefers aisle seats"},
                    {"content": "Sam is vegetarian"},
                ]
            }
        )
    return "Here is what I found for you, based on what you told me before and the documents."


def _services(settings: LatencySettings) -> tuple[SlowEmbedder, CountingChat]:
    chat = CountingChat(
        default=_answer, delay=settings.chat_ms / 1000, first_token_delay=settings.ttft_ms / 1000
    )
    return SlowEmbedder(settings.embed_ms / 1000), chat


# --- measuring -------------------------------------------------------------------------------


@dataclass(slots=True)
class Samples:
    first_token: list[float] = field(default_factory=list)
    committed: list[float] = field(default_factory=list)
    commands: list[int] = field(default_factory=list)
    sequential: list[int] = field(default_factory=list)
    provider_calls: list[int] = field(default_factory=list)
    background_commands: list[int] = field(default_factory=list)
    background_provider_calls: list[int] = field(default_factory=list)

    def record(
        self,
        spans: list[tuple[float, float]],
        started: float,
        first: float,
        committed: float,
        provider_calls: int,
    ) -> None:
        """One turn: its commands (spans) and times, measured from ``started``."""
        self.first_token.append(first - started)
        self.committed.append(committed - started)
        self.commands.append(len(spans))
        self.sequential.append(sequential_chain(spans))
        self.provider_calls.append(provider_calls)

    def summary(self) -> dict[str, Any]:
        def pct(values: list[float], q: float) -> float:
            return round(float(np.percentile(values, q)) * 1000, 1)

        return {
            "first_token_ms": {"p50": pct(self.first_token, 50), "p95": pct(self.first_token, 95)},
            "committed_ms": {"p50": pct(self.committed, 50), "p95": pct(self.committed, 95)},
            "db_commands_per_turn": statistics.median(self.commands),
            "sequential_db_round_trips": statistics.median(self.sequential),
            "provider_calls_per_turn": statistics.median(self.provider_calls),
            "background_db_commands_per_turn": statistics.median(self.background_commands),
            "background_provider_calls_per_turn": statistics.median(self.background_provider_calls),
        }


async def _agent_turns(
    connection: Connection, timeline: Timeline, settings: LatencySettings
) -> Samples:
    embedder, chat = _services(settings)
    config = AgentConfig("bench-latency", run_formation_worker=False, formation_debounce_s=0.0)
    samples = Samples()
    user = f"agent-{uuid.uuid4().hex[:8]}"
    async with RAGAgent(connection, embedder, chat, config=config) as agent:
        worker = FormationWorker(agent.memories, chat, queue=agent.queue)
        for number in range(settings.turns):
            query = QUESTIONS[number % len(QUESTIONS)]
            calls_before = len(embedder.calls) + len(chat.calls)
            started = time.perf_counter()
            first: float | None = None
            async for event in agent.stream(user, f"{user}-s", query):
                if isinstance(event, AnswerDelta) and first is None:
                    first = time.perf_counter()
                elif isinstance(event, TurnResult):
                    committed = time.perf_counter()
            samples.record(
                timeline.between(started, committed),
                started,
                first or committed,
                committed,
                len(embedder.calls) + len(chat.calls) - calls_before,
            )
            # The background: what the turn scheduled, then the formation job it asked for.
            calls_before = len(embedder.calls) + len(chat.calls)
            await agent.drain()
            while await worker.run_once():
                pass
            done = time.perf_counter()
            samples.background_commands.append(len(timeline.between(committed, done)))
            samples.background_provider_calls.append(
                len(embedder.calls) + len(chat.calls) - calls_before
            )
        await agent.memories.forget_user(Tenant("bench-latency", user))
    return samples


async def _sequential_turns(
    connection: Connection, timeline: Timeline, settings: LatencySettings
) -> Samples:
    """The blueprint's process_query, step by step, on this framework's stores."""
    embedder, chat = _services(settings)
    memories = MemorySystem(connection, embedder, chat_model=chat)
    user = f"seq-{uuid.uuid4().hex[:8]}"
    tenant = Tenant("bench-latency", user)
    session = f"{user}-s"
    await memories.conversation.start_session(tenant, session)
    samples = Samples()
    try:
        for number in range(settings.turns):
            query = QUESTIONS[number % len(QUESTIONS)]
            calls_before = len(embedder.calls) + len(chat.calls)
            started = time.perf_counter()
            window = await memories.conversation.window(tenant, session, last_n=10)  # 1
            recalled = await memories.long_term.retrieve(tenant, query, k=5)  # 2
            tasks = await memories.working.list_active_tasks(tenant, session, limit=1)  # 3
            context = "\n".join(  # 4
                [m.memory.content for m in recalled]
                + [f"{m.role}: {m.content}" for m in window]
                + [t.goal for t in tasks]
            )
            documents = await memories.knowledge.retrieve(tenant, query, k=4)  # 5
            prompt = "\n".join([context, *(d.content for d in documents), query])
            response = await chat.generate(ChatRequest((Message.user(prompt),)))  # 6
            answered = time.perf_counter()
            await memories.episodic.log_action(  # 7
                tenant,
                session_id=session,
                action_type="query_response",
                outcome="success",
                input={"query": query, "rag_results_count": len(documents)},
            )
            await memories.conversation.append_turn(tenant, session, [NewMessage.user(query)])  # 8
            await memories.conversation.append_turn(
                tenant, session, [NewMessage.assistant(response.text)]
            )
            extraction = await chat.generate(  # 9
                ChatRequest(
                    (Message.user(f"Extract facts.\nuser: {query}\nassistant: {response.text}"),),
                    output_schema={"type": "object"},
                )
            )
            for fact in json.loads(extraction.text).get("facts", []):
                await memories.long_term.store(tenant, fact["content"], memory_type="learned")
            committed = time.perf_counter()
            samples.record(
                timeline.between(started, committed),
                started,
                answered,
                committed,
                len(embedder.calls) + len(chat.calls) - calls_before,
            )
            samples.background_commands.append(0)
            samples.background_provider_calls.append(0)
    finally:
        await memories.forget_user(tenant)
        await memories.aclose()
    return samples


async def run_latency(
    settings: LatencySettings, *, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Both flows, one after the other, on a fresh embedded server behind the delay proxy."""
    with tempfile.TemporaryDirectory(prefix="agent-memory-latency-") as data_dir:
        server = EmbeddedServer(Path(data_dir))
        server.start()
        proxy = DelayProxy(server.host, server.info.port, settings.db_rtt_ms / 2000)
        timeline = Timeline()
        try:
            # The server's own credentials, through the proxy's port.
            uri = replace(server.info, host="127.0.0.1", port=await proxy.start()).uri
            connection = await connect(
                Settings(embedder="fake", database="bench_latency"),
                uri=uri,
                client_options={"event_listeners": [timeline]},
            )
            try:
                await IndexManager(connection, SlowEmbedder(0).signature).setup()
                results: dict[str, Any] = {}
                for name, flow in (("agent", _agent_turns), ("sequential", _sequential_turns)):
                    await flow(
                        connection, timeline, replace(settings, turns=1)
                    )  # first-use costs, not measured
                    started = time.perf_counter()
                    results[name] = (await flow(connection, timeline, settings)).summary()
                    if progress is not None:
                        progress(
                            f"{name}: {settings.turns} turns in {time.perf_counter() - started:.1f} s"
                        )
            finally:
                await connection.close()
        finally:
            await proxy.stop()
            server.stop()
    ratio = results["agent"]["committed_ms"]["p50"] / results["sequential"]["committed_ms"]["p50"]
    return {
        "settings": {
            "turns": settings.turns,
            "db_rtt_ms": settings.db_rtt_ms,
            "embed_ms": settings.embed_ms,
            "ttft_ms": settings.ttft_ms,
            "chat_ms": settings.chat_ms,
        },
        "agent": results["agent"],
        "sequential": results["sequential"],
        "committed_p50_ratio": round(ratio, 3),
    }


def render_latency(result: dict[str, Any]) -> str:
    s = result["settings"]
    rows = [
        ("time to first token, p50 / p95 (ms)", "first_token_ms"),
        ("time to committed turn, p50 / p95 (ms)", "committed_ms"),
    ]
    lines = [
        f"{s['turns']} turns each; simulated database round trip {s['db_rtt_ms']} ms, "
        f"embedding {s['embed_ms']} ms, chat first token {s['ttft_ms']} ms / complete "
        f"{s['chat_ms']} ms; embedded server.",
        "",
        "| | RAGAgent | blueprint, sequential |",
        "|---|---|---|",
    ]
    for label, key in rows:
        a, q = result["agent"][key], result["sequential"][key]
        lines.append(f"| {label} | {a['p50']} / {a['p95']} | {q['p50']} / {q['p95']} |")
    for label, key in (
        ("database commands per turn (median)", "db_commands_per_turn"),
        ("sequential database round trips (median)", "sequential_db_round_trips"),
        ("provider calls the caller waits for (median)", "provider_calls_per_turn"),
        ("background database commands per turn (median)", "background_db_commands_per_turn"),
        ("background provider calls per turn (median)", "background_provider_calls_per_turn"),
    ):
        lines.append(f"| {label} | {result['agent'][key]} | {result['sequential'][key]} |")
    lines.append("")
    lines.append(
        f"Committed turn, p50: the agent takes {result['committed_p50_ratio']:.0%} of the "
        "sequential flow's time (goal: at most 50%)."
    )
    return "\n".join(lines) + "\n"

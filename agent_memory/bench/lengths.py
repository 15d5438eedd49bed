"""Other kinds at length: each read of conversation, episodic and knowledge memory, and the
console's pages, timed at a size and at a tenth of it in the same run.

``agent-memory bench lengths --scale 1000,10000``

For every scale ``n`` one agent of its own holds, through the framework's public write paths
(in bulk where the API has it):

- a conversation session of ``n`` messages (``append_turn``, 50 messages a call) beside
  ``n / 10`` short sessions of one turn each;
- ``n x --action-factor`` actions (``log_action``, many at once, the query's vector given) in
  those short sessions, over the last 29 days, a few rated (``add_feedback``) and each citing
  a few of the user's ``n / 10`` long-term memories (``store_many``, consolidation off);
- ``n`` knowledge chunks shared by the agent (``ingest``, 200 chunks a source).

Then each read is timed ``--reads`` times at every scale, the scales taking turns so that a
busy machine weighs on all of them alike; a first read at each scale (which fills what a
process keeps in memory) is not counted. The table gives p50 / p95 per scale and the ratio of
each p50 to the p50 at the scale ten times smaller. The reads:

- ``context``: ``ConversationMemory.context`` of the long session, what the agent's recall
  builds its prompt from;
- ``similar_actions`` (vector and query given, as the agent's recall asks) and
  ``success_rates`` of the agent (last 30 days, every user);
- the console's pages of the user: actions, sessions, memories, one memory (with the actions
  that cited it), one session (its first 500 messages), and the agent's page of users;
- ``KnowledgeBase.retrieve`` with the query's vector given.

The run stores everything in a place of its own (:func:`lengths_connection`): a fresh
embedded server in a temporary directory, or a database of its own at ``MONGODB_URI``, dropped
afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import random
import re
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from agent_memory.config import Settings
from agent_memory.errors import AgentMemoryError
from agent_memory.memory.conversation.records import NewMessage
from agent_memory.memory.knowledge.base import SharedKnowledge
from agent_memory.memory.long_term.records import NewMemory
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo.connection import Connection, connect
from agent_memory.mongo.embedded import EmbeddedServer
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.embedders.base import Embedder
from agent_memory.stamps import utcnow
from agent_memory.tenancy import Tenant

__all__ = [
    "READS",
    "LengthSettings",
    "lengths_connection",
    "parse_scales",
    "render_lengths",
    "run_lengths",
]

#: The reads timed, in the table's order: name, what it is.
READS = {
    "context": "conversation: context window of the long session",
    "similar_actions": "episodic: similar actions",
    "success_rates": "episodic: success rates (agent, 30 days)",
    "page_actions": "console: the user's actions",
    "page_sessions": "console: the user's sessions",
    "page_memories": "console: the user's memories",
    "page_memory": "console: one memory and the actions citing it",
    "page_session": "console: one session's messages",
    "page_users": "console: the agent's users (counts every document)",
    "knowledge": "knowledge: retrieve",
}
USER = "user"
LONG_SESSION = "long"
_TURN = 50  # the most messages one append_turn takes (ConversationConfig.max_turn_messages)
_SOURCE_CHUNKS = 200
_AT_ONCE = 64  # actions logged concurrently
_TYPES = ("query_response", "tool_call", "search", "summarise", "plan")
_OUTCOMES = ("success", "success", "success", "failure", "partial")
_WORDS = (
    "trip paris berlin lisbon coffee tea window aisle seat dog cat hiking book movie music "
    "sister brother colleague nurse teacher engineer garden piano guitar sushi pasta vegan "
    "allergy peanuts birthday gift train flight hotel budget laptop phone running yoga chess "
    "painting pottery museum concert football tennis recipe dinner breakfast weekend office "
    "invoice refund password account shipping order return warranty upgrade plan billing"
).split()


@dataclass(frozen=True, slots=True)
class LengthSettings:
    """``scales``: messages and chunks per scale (actions ``action_factor`` times as many);
    ``reads``: timed reads per read and scale."""

    scales: tuple[int, ...] = (1_000, 10_000)
    action_factor: int = 10
    reads: int = 20
    rated_share: float = 0.005
    seed: int = 7


@dataclass(slots=True)
class _Scale:
    n: int
    tenant: Tenant
    memory_ids: list[str] = field(default_factory=list)
    fill_seconds: dict[str, float] = field(default_factory=dict)
    timings: dict[str, list[float]] = field(default_factory=dict)
    #: Reads that failed at this scale: the error's first line.
    failed: dict[str, str] = field(default_factory=dict)


def _shown(scale: _Scale, name: str) -> str:
    if name in scale.failed:
        return f"failed ({scale.failed[name]})"
    return f"{_summary(scale.timings[name])['p50']} ms"


def parse_scales(text: str) -> tuple[int, ...]:
    """``"1000,10000"`` as ``(1000, 10000)``; a clear error for anything else."""
    try:
        scales = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise ValueError(f"scales are whole numbers separated by commas, got {text!r}") from None
    if not scales or not all(10 <= n <= 100_000 for n in scales):
        raise ValueError("give one or more scales from 10 to 100000, separated by commas")
    return scales


@contextlib.asynccontextmanager
async def lengths_connection(settings: Settings, embedder: Embedder) -> AsyncIterator[Connection]:
    """A connection to a place of the run's own, its indexes set up: a fresh embedded server
    in a temporary directory on the embedded default (the user's data directory never holds
    the run's hundred thousand actions), or a database of its own at ``MONGODB_URI``, dropped
    afterwards."""
    async with contextlib.AsyncExitStack() as stack:
        database = None
        if settings.uri() is None:
            data_dir = stack.enter_context(
                tempfile.TemporaryDirectory(prefix="agent-memory-lengths-")
            )
            server = EmbeddedServer(Path(data_dir))
            await asyncio.to_thread(server.start)
            stack.push_async_callback(asyncio.to_thread, server.stop)
            connection = await connect(settings, uri=server.uri)
        else:
            database = f"bench_lengths_{uuid.uuid4().hex[:10]}"
            connection = await connect(settings.model_copy(update={"database": database}))
        stack.push_async_callback(connection.close)
        if database is not None:  # before the connection closes
            stack.push_async_callback(connection.client.drop_database, database)
        await IndexManager(connection, embedder.signature).setup()
        yield connection


def _sentence(rng: random.Random, length: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(length))


def _agent(n: int) -> str:
    return f"bench-lengths-{n}"


async def _timed(label: str, times: dict[str, float], work: Awaitable[Any]) -> Any:
    started = time.perf_counter()
    result = await work
    times[label] = round(time.perf_counter() - started, 2)
    return result


# --- filling ---------------------------------------------------------------------------------


async def _fill_conversation(memories: MemorySystem, scale: _Scale, rng: random.Random) -> None:
    conversation, tenant = memories.conversation, scale.tenant
    await conversation.start_session(tenant, LONG_SESSION)
    for start in range(0, scale.n, _TURN):
        turn = [
            NewMessage.user(_sentence(rng, 12))
            if (start + i) % 2 == 0
            else NewMessage.assistant(_sentence(rng, 20))
            for i in range(min(_TURN, scale.n - start))
        ]
        await conversation.append_turn(tenant, LONG_SESSION, turn)
    for index in range(max(1, scale.n // 10)):
        await conversation.append_turn(
            tenant,
            f"s{index}",
            [NewMessage.user(_sentence(rng, 8)), NewMessage.assistant(_sentence(rng, 12))],
        )
    await conversation.drain()


async def _fill_memories(memories: MemorySystem, scale: _Scale, rng: random.Random) -> None:
    count = max(10, scale.n // 10)
    for start in range(0, count, 100):
        items = [
            NewMemory(f"{_sentence(rng, 10)} (note {i})")
            for i in range(start, min(count, start + 100))
        ]
        results = await memories.long_term.store_many(scale.tenant, items, consolidate=False)
        scale.memory_ids.extend(result.id for result in results)
    await memories.long_term.drain()


async def _fill_actions(
    memories: MemorySystem, embedder: Embedder, scale: _Scale, settings: LengthSettings
) -> None:
    rng = random.Random(settings.seed * 31 + scale.n)
    episodic, tenant = memories.episodic, scale.tenant
    count = scale.n * settings.action_factor
    sessions = max(1, scale.n // 10)
    now = utcnow()
    span = timedelta(days=episodic.config.retention_days - 2).total_seconds()
    ids: list[str] = []
    for start in range(0, count, _AT_ONCE * 4):
        texts = [_sentence(rng, 8) for _ in range(min(_AT_ONCE * 4, count - start))]
        vectors = await embedder.embed_documents(texts)
        for part in range(0, len(texts), _AT_ONCE):
            calls = [
                episodic.log_action(
                    tenant,
                    session_id=f"s{(start + part + i) % sessions}",
                    action_type=rng.choice(_TYPES),
                    outcome=rng.choice(_OUTCOMES),
                    tool="search",
                    input={"q": text},
                    output={"answer": _sentence(rng, 10)},
                    duration_ms=rng.uniform(50, 2_000),
                    tokens=rng.randrange(100, 3_000),
                    memory_ids=rng.sample(scale.memory_ids, 3),
                    content=text,
                    embedding=vector,
                    timestamp=now - timedelta(seconds=rng.uniform(60, span)),
                )
                for i, (text, vector) in enumerate(
                    zip(texts[part : part + _AT_ONCE], vectors[part : part + _AT_ONCE], strict=True)
                )
            ]
            ids.extend(await asyncio.gather(*calls))
    rated = rng.sample(ids, max(1, int(len(ids) * settings.rated_share)))
    for start in range(0, len(rated), _AT_ONCE // 4):
        await asyncio.gather(
            *(
                episodic.add_feedback(tenant, action_id, rating=rng.randint(1, 5))
                for action_id in rated[start : start + _AT_ONCE // 4]
            )
        )


async def _fill_knowledge(memories: MemorySystem, scale: _Scale, rng: random.Random) -> None:
    knowledge = memories.knowledge
    shared = SharedKnowledge(scale.tenant.agent_id)
    # Paragraphs a little longer than a chunk's new text, so each makes about one chunk.
    words = max(1, (knowledge.config.chunk_tokens - knowledge.config.overlap_tokens) * 3 // 4)
    left, source = scale.n, 0
    while left > 0:
        target = min(_SOURCE_CHUNKS, left)
        text = "\n\n".join(_sentence(rng, words) + "." for _ in range(target))
        report = await knowledge.ingest(shared, source=f"doc-{source}", text=text)
        left -= report.chunks
        source += 1


# --- reading ---------------------------------------------------------------------------------


def _reads(
    memories: MemorySystem,
    client: httpx.AsyncClient,
    scale: _Scale,
    queries: list[str],
    vectors: list[Any],
) -> dict[str, Callable[[int], Awaitable[Any]]]:
    tenant = scale.tenant
    agent, user = tenant.agent_id, tenant.user_id

    async def page(path: str, **params: str) -> None:
        response = await client.get(path, params={"agent": agent, **params})
        if response.status_code != 200:
            said = re.search(r'<p class="error" role="alert">(.*?)</p>', response.text, re.S)
            why = html.unescape(said.group(1)).strip() if said else ""
            raise RuntimeError(f"{path} answered {response.status_code} {why}".strip())

    return {
        "context": lambda i: memories.conversation.context(tenant, LONG_SESSION),
        "similar_actions": lambda i: memories.episodic.similar_actions(
            tenant, query=queries[i], query_vector=vectors[i], outcome=None
        ),
        "success_rates": lambda i: memories.episodic.success_rates(agent),
        "page_actions": lambda i: page("/actions", user=user),
        "page_sessions": lambda i: page("/sessions", user=user),
        "page_memories": lambda i: page("/user", user=user),
        "page_memory": lambda i: page(
            "/memory", user=user, id=scale.memory_ids[i % len(scale.memory_ids)]
        ),
        "page_session": lambda i: page("/session", user=user, id=LONG_SESSION),
        "page_users": lambda i: page("/agent"),
        "knowledge": lambda i: memories.knowledge.retrieve(
            tenant, queries[i], query_vector=vectors[i]
        ),
    }


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 1),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
    }


async def run_lengths(
    connection: Connection,
    embedder: Embedder,
    settings: LengthSettings,
    *,
    console: Callable[[MemorySystem, str], Any],
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fill every scale, then time every read at every scale.

    ``console(memories, token)`` makes the console's application over ``memories``, signed
    in to with ``token`` (the console is a floor of its own, so the caller builds it)."""
    say = progress or (lambda line: None)
    rng = random.Random(settings.seed)
    scales = [_Scale(n, Tenant(_agent(n), USER)) for n in sorted(set(settings.scales))]
    token = "bench-lengths-" + "x" * 20
    # Each scale reads through memories and a console of its own, as a process serving that
    # agent would: what the plain tier keeps in memory for the largest scale would otherwise
    # push out the smaller one's at every turn (the budget shared between users is another
    # question: issue 36 item 6).
    systems = {scale.n: MemorySystem(connection, embedder) for scale in scales}
    async with contextlib.AsyncExitStack() as stack:
        for system in systems.values():
            stack.push_async_callback(system.aclose)
        clients = {}
        for n, system in systems.items():
            transport = httpx.ASGITransport(app=console(system, token))
            client = await stack.enter_async_context(
                httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1")
            )
            signed = await client.post("/login", data={"secret": token})
            if signed.status_code != 303:
                raise RuntimeError(f"the console refused the sign-in ({signed.status_code})")
            clients[n] = client
        for scale in scales:
            memories, times = systems[scale.n], scale.fill_seconds
            await _timed("conversation", times, _fill_conversation(memories, scale, rng))
            await _timed("memories", times, _fill_memories(memories, scale, rng))
            await _timed("actions", times, _fill_actions(memories, embedder, scale, settings))
            await _timed("knowledge", times, _fill_knowledge(memories, scale, rng))
            say(f"filled scale {scale.n}: {times}")
        queries = [_sentence(rng, 6) for _ in range(settings.reads)]
        vectors = [await embedder.embed_query(query) for query in queries]
        reads = {s.n: _reads(systems[s.n], clients[s.n], s, queries, vectors) for s in scales}
        for name in READS:
            timed = []
            for scale in scales:  # the first read fills what the process keeps
                try:
                    await reads[scale.n][name](0)
                except (AgentMemoryError, RuntimeError) as exc:
                    # Said in the table (and the command's exit code), not hidden.
                    scale.failed[name] = (str(exc).splitlines() or [type(exc).__name__])[0]
                    continue
                timed.append(scale)
            for i in range(settings.reads):
                for scale in timed:
                    started = time.perf_counter()
                    await reads[scale.n][name](i)
                    elapsed = (time.perf_counter() - started) * 1000
                    scale.timings.setdefault(name, []).append(elapsed)
            say(f"{name}: " + ", ".join(f"{s.n}: {_shown(s, name)}" for s in scales))
    return _result(connection, embedder, settings, scales)


def _result(
    connection: Connection, embedder: Embedder, settings: LengthSettings, scales: list[_Scale]
) -> dict[str, Any]:
    rows = []
    for name, label in READS.items():
        row: dict[str, Any] = {"read": name, "label": label, "scales": {}}
        for scale in scales:
            if name in scale.failed:
                row["scales"][str(scale.n)] = {"failed": scale.failed[name]}
                continue
            summary: dict[str, Any] = _summary(scale.timings[name])
            tenth = next((s for s in scales if s.n * 10 == scale.n), None)
            if tenth is not None and name not in tenth.failed:
                below = _summary(tenth.timings[name])["p50"]
                summary["ratio"] = round(summary["p50"] / below, 2) if below else None
            row["scales"][str(scale.n)] = summary
        rows.append(row)
    return {
        "scales": [s.n for s in scales],
        "action_factor": settings.action_factor,
        "reads_per_scale": settings.reads,
        "embedder": embedder.signature.describe(),
        "tier": connection.tier,
        "fill_seconds": {str(s.n): s.fill_seconds for s in scales},
        "reads": rows,
        "failed": sum(len(s.failed) for s in scales),
    }


def render_lengths(data: dict[str, Any]) -> str:
    scales = data["scales"]
    factor = data["action_factor"]
    head = " | ".join(
        f"{n:,} msgs / {n * factor:,} actions: p50 / p95 ms" + (" (x)" if n // 10 in scales else "")
        for n in scales
    )
    lines = [
        f"Scales {', '.join(f'{n:,}' for n in scales)} (messages and chunks; actions x{factor}); "
        f"{data['reads_per_scale']} reads each; embedder {data['embedder']}; tier "
        f"{data['tier']}. (x): p50 against the scale ten times smaller.",
        "",
        f"| read | {head} |",
        "|---|" + "---|" * len(scales),
    ]
    for row in data["reads"]:
        cells = []
        for n in scales:
            s = row["scales"][str(n)]
            if "failed" in s:
                cells.append(f"**failed**: {s['failed']}")
                continue
            ratio = f" ({s['ratio']}x)" if s.get("ratio") is not None else ""
            cells.append(f"{s['p50']} / {s['p95']}{ratio}")
        lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
    lines.append("")
    for n in scales:
        fill = ", ".join(
            f"{kind} {seconds} s" for kind, seconds in data["fill_seconds"][str(n)].items()
        )
        lines.append(f"Filled at {n:,}: {fill}.")
    return "\n".join(lines) + "\n"

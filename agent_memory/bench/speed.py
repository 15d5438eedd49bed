"""Long-term memory speed at a given size: ingest through the consolidating write path, and
retrieve latency.

``agent-memory bench speed --memories 1000``

One user gets ``--memories`` memories (sentences made from a fixed vocabulary, each with a
short context, as formed memories carry) through ``LongTermMemory.store_many`` with
consolidation on, in batches of ``--batch`` (the formation worker stores one job's notes per
call). Then ``--queries`` questions are asked with ``retrieve``: first with the query embedded
by the embedder (what a direct call pays), then with a vector given (what the agent pays: it
embeds the query once for every memory). A second ``LongTermMemory`` on the same database
stores one more memory and the first must find it at once (the corpus kept in memory follows
writes from anywhere). The run's memories are erased afterwards.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import NewMemory
from agent_memory.mongo.connection import Connection
from agent_memory.providers.embedders.base import Embedder
from agent_memory.tenancy import Tenant

__all__ = ["SpeedRun", "render_speed", "run_speed"]

AGENT_ID = "bench-speed"
_WORDS = (
    "trip paris berlin lisbon coffee tea window aisle seat dog cat hiking book movie music "
    "sister brother colleague nurse teacher engineer garden piano guitar sushi pasta vegan "
    "allergy peanuts birthday gift train flight hotel budget laptop phone running yoga chess "
    "painting pottery museum concert football tennis recipe dinner breakfast weekend office"
).split()


@dataclass(slots=True)
class SpeedRun:
    memories: int
    embedder: str
    tier: str
    ingest_seconds: float = 0.0
    retrieve_ms: list[float] = field(default_factory=list)
    retrieve_with_vector_ms: list[float] = field(default_factory=list)
    found_across_instances: bool = False

    def as_json(self) -> dict[str, Any]:
        def summary(values: list[float]) -> dict[str, float]:
            ordered = sorted(values)
            return {
                "p50": round(statistics.median(ordered), 1),
                "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
            }

        return {
            "memories": self.memories,
            "embedder": self.embedder,
            "tier": self.tier,
            "ingest_seconds": round(self.ingest_seconds, 1),
            "ingest_per_second": round(self.memories / self.ingest_seconds, 1),
            "retrieve_ms": summary(self.retrieve_ms),
            "retrieve_with_vector_ms": summary(self.retrieve_with_vector_ms),
            "found_across_instances": self.found_across_instances,
        }


def _sentence(rng: random.Random, length: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(length))


async def run_speed(
    connection: Connection,
    embedder: Embedder,
    *,
    memories: int = 1_000,
    queries: int = 100,
    batch: int = 50,
    seed: int = 7,
) -> SpeedRun:
    rng = random.Random(seed)
    tenant = Tenant(AGENT_ID, f"user-{memories}")
    store = LongTermMemory(connection, embedder)
    other = LongTermMemory(connection, embedder)
    run = SpeedRun(memories, embedder.signature.describe(), connection.tier)
    items = [
        NewMemory(f"{_sentence(rng, 10)} (note {i})", context=_sentence(rng, 20))
        for i in range(memories)
    ]
    questions = [_sentence(rng, 6) for _ in range(queries)]
    try:
        await store.forget_user(tenant)
        started = time.perf_counter()
        for start in range(0, memories, batch):
            await store.store_many(tenant, items[start : start + batch])
        run.ingest_seconds = time.perf_counter() - started
        await store.retrieve(tenant, questions[0])  # the first search reads the corpus once
        for question in questions:
            started = time.perf_counter()
            await store.retrieve(tenant, question, k=10)
            run.retrieve_ms.append((time.perf_counter() - started) * 1000)
        vectors = [await embedder.embed_query(question) for question in questions]
        for question, vector in zip(questions, vectors, strict=True):
            started = time.perf_counter()
            await store.retrieve(tenant, question, k=10, query_vector=vector)
            run.retrieve_with_vector_ms.append((time.perf_counter() - started) * 1000)
        marker = "zebra saxophone quartet rehearsal"
        await other.store(tenant, marker)
        found = await store.retrieve(tenant, marker, k=1)
        run.found_across_instances = bool(found) and found[0].memory.content == marker
    finally:
        await store.drain()
        await store.forget_user(tenant)
        await store.aclose()
        await other.aclose()
    return run


def render_speed(data: dict[str, Any]) -> str:
    return (
        f"{data['memories']} memories, one user; embedder {data['embedder']}; tier "
        f"{data['tier']}.\n\n"
        "| measure | value |\n|---|---|\n"
        f"| ingest, consolidating store_many | {data['ingest_per_second']} memories/s "
        f"({data['ingest_seconds']} s) |\n"
        f"| retrieve, query embedded (p50 / p95) | {data['retrieve_ms']['p50']} / "
        f"{data['retrieve_ms']['p95']} ms |\n"
        f"| retrieve, vector given (p50 / p95) | {data['retrieve_with_vector_ms']['p50']} / "
        f"{data['retrieve_with_vector_ms']['p95']} ms |\n"
        f"| a memory stored by another instance found by the next retrieve | "
        f"{'yes' if data['found_across_instances'] else 'NO'} |\n"
    )

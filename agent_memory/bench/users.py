"""Many users in one process: the kept search corpora of every user share one memory budget.

``agent-memory bench users --users 1000 --memories 1000``

``--users`` users of one agent get ``--memories`` memories each (the sentences of
``bench speed``, stored without consolidation in batches, which is what an import does). Then
``--queries`` retrieves, each for a user drawn at random, with the vector given: one store
answers them all, so a user whose corpus the budget dropped (or never kept) is read again
(cold) and a user asked again soon after is answered from memory (warm). Reported: retrieve
p50 / p95 of cold and warm retrieves, the budget (``search_cache_mb``) and what the kept
corpora are estimated to use, the process's resident memory before the memories were stored,
after they were stored and after the retrieves (the embedded server's, when it runs in this
process, included), and how many corpora the budget dropped. The run's memories are erased
afterwards.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from agent_memory.bench.speed import _rss_mb, _sentence
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import NewMemory
from agent_memory.mongo.connection import Connection
from agent_memory.providers.embedders.base import Embedder
from agent_memory.tenancy import Tenant

__all__ = ["UsersRun", "render_users", "run_users"]

AGENT_ID = "bench-users"


@dataclass(slots=True)
class UsersRun:
    users: int
    memories: int
    embedder: str
    tier: str
    budget_mb: float
    ingest_seconds: float = 0.0
    cold_ms: list[float] = field(default_factory=list)
    warm_ms: list[float] = field(default_factory=list)
    rss_start_mb: float = 0.0
    rss_stored_mb: float = 0.0
    rss_end_mb: float = 0.0
    kept_mb: float = 0.0
    kept_users: int = 0
    evicted: int = 0

    def as_json(self) -> dict[str, Any]:
        def summary(values: list[float]) -> dict[str, float]:
            ordered = sorted(values) or [0.0]
            return {
                "count": len(values),
                "p50": round(statistics.median(ordered), 1),
                "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
            }

        return {
            "users": self.users,
            "memories_per_user": self.memories,
            "embedder": self.embedder,
            "tier": self.tier,
            "budget_mb": self.budget_mb,
            "ingest_seconds": round(self.ingest_seconds, 1),
            "ingest_per_second": round(self.users * self.memories / self.ingest_seconds, 1),
            "retrieve_cold_ms": summary(self.cold_ms),
            "retrieve_warm_ms": summary(self.warm_ms),
            "rss_mb": {
                "start": round(self.rss_start_mb, 1),
                "stored": round(self.rss_stored_mb, 1),
                "end": round(self.rss_end_mb, 1),
            },
            "kept_mb": round(self.kept_mb, 1),
            "kept_users": self.kept_users,
            "evicted": self.evicted,
        }


async def run_users(
    connection: Connection,
    embedder: Embedder,
    *,
    users: int = 1_000,
    memories: int = 1_000,
    queries: int = 500,
    batch: int = 500,
    seed: int = 7,
) -> UsersRun:
    rng = random.Random(seed)
    tenants = [Tenant(AGENT_ID, f"user-{number}") for number in range(users)]
    budget = connection.kept_budget
    run = UsersRun(
        users,
        memories,
        embedder.signature.describe(),
        connection.tier,
        budget.max_bytes / 2**20,
    )
    run.rss_start_mb = _rss_mb()
    store = LongTermMemory(connection, embedder)
    try:
        started = time.perf_counter()
        for tenant in tenants:
            await store.forget_user(tenant)
            items = [
                NewMemory(f"{_sentence(rng, 10)} (note {n})", context=_sentence(rng, 20))
                for n in range(memories)
            ]
            for start in range(0, memories, batch):
                await store.store_many(tenant, items[start : start + batch], consolidate=False)
        run.ingest_seconds = time.perf_counter() - started
        run.rss_stored_mb = _rss_mb()
        questions = [_sentence(rng, 6) for _ in range(queries)]
        vectors = [await embedder.embed_query(question) for question in questions]
        snapshots = store._searcher.snapshots
        evicted_before = budget.evicted
        for question, vector in zip(questions, vectors, strict=True):
            tenant = rng.choice(tenants)
            # Warm when the user's corpus is kept now (asked recently and not dropped).
            warm = snapshots is not None and snapshots.kept(store.target, tenant.filter())
            started = time.perf_counter()
            await store.retrieve(tenant, question, k=10, query_vector=vector)
            elapsed = (time.perf_counter() - started) * 1000
            (run.warm_ms if warm else run.cold_ms).append(elapsed)
            # The same user asks a second question at once: warm.
            started = time.perf_counter()
            await store.retrieve(tenant, question, k=10, query_vector=vector)
            run.warm_ms.append((time.perf_counter() - started) * 1000)
        await store.drain()
        run.rss_end_mb = _rss_mb()
        run.kept_mb = budget.used / 2**20
        run.kept_users = len(budget)
        run.evicted = budget.evicted - evicted_before
    finally:
        for tenant in tenants:
            await store.forget_user(tenant)
        await store.aclose()
    return run


def render_users(data: dict[str, Any]) -> str:
    cold, warm, rss = data["retrieve_cold_ms"], data["retrieve_warm_ms"], data["rss_mb"]
    return (
        f"{data['users']:,} users x {data['memories_per_user']:,} memories, one process; "
        f"embedder {data['embedder']}; tier {data['tier']}"
        + (f"; commit {data['commit']}" if data.get("commit") else "")
        + ".\n\n| measure | value |\n|---|---|\n"
        f"| ingest (store_many without consolidation) | {data['ingest_per_second']} memories/s "
        f"({data['ingest_seconds']} s) |\n"
        f"| retrieve, cold user (p50 / p95, {cold['count']} retrieves) | {cold['p50']} / "
        f"{cold['p95']} ms |\n"
        f"| retrieve, warm user (p50 / p95, {warm['count']} retrieves) | {warm['p50']} / "
        f"{warm['p95']} ms |\n"
        f"| search memory budget (search_cache_mb) | {data['budget_mb']:.0f} MiB |\n"
        f"| kept at the end (estimate) | {data['kept_mb']} MiB, {data['kept_users']} users; "
        f"{data['evicted']} dropped for the budget |\n"
        f"| resident memory: start / stored / after the retrieves | {rss['start']} / "
        f"{rss['stored']} / {rss['end']} MiB |\n"
    )

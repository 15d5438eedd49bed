"""Long-term memory speed as a user's history grows: ingest through the consolidating write
path, and retrieve latency, at one size or several run back to back.

``agent-memory bench speed --memories 1000,10000,100000``

One user gets ``--memories`` memories (sentences made from a fixed vocabulary, each with a
short context, as formed memories carry) through ``LongTermMemory.store_many`` with
consolidation on, in batches of ``--batch`` (the formation worker stores one job's notes per
call). Then ``--queries`` questions are asked with ``retrieve``: first with the query embedded
by the embedder (what a direct call pays), then with a vector given (what the agent pays: it
embeds the query once for every memory). A second ``LongTermMemory`` on the same database
stores one more memory and the first must find it at once (the corpus kept in memory follows
writes from anywhere).

Beside those, per size: the first retrieve of a new ``LongTermMemory`` (cold: nothing of the
user is kept yet, so it reads the user's memories, as the first question after a process
start does), the process's resident memory after the retrieves (the embedded server's, when it
runs in this process, included), and the physical reference: the same stored vectors searched
exactly by plain numpy (one matrix-vector product and a partial sort for the top 10), which is
the arithmetic a search cannot avoid. Each size's memories are erased before the next size.
"""

from __future__ import annotations

import random
import resource
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agent_memory.bench._memory import rss_bytes
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import NewMemory
from agent_memory.mongo.connection import Connection
from agent_memory.mongo.vectors import from_bson_vector
from agent_memory.providers.embedders.base import Embedder
from agent_memory.tenancy import Tenant

__all__ = ["SpeedRun", "plot_speed", "render_speed", "run_speed", "run_speed_sizes"]

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
    cold_ms: float = 0.0
    rss_mb: float = 0.0
    numpy_ms: list[float] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        def summary(values: list[float], digits: int = 1) -> dict[str, float]:
            ordered = sorted(values) or [0.0]
            return {
                "p50": round(statistics.median(ordered), digits),
                "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], digits),
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
            "cold_retrieve_ms": round(self.cold_ms, 1),
            "rss_mb": round(self.rss_mb, 1),
            "numpy_exact_top10_ms": summary(self.numpy_ms, 3),
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
        run.rss_mb = _rss_mb()
        fresh = LongTermMemory(connection, embedder)  # nothing of the user kept yet
        try:
            started = time.perf_counter()
            await fresh.retrieve(tenant, questions[0], k=10, query_vector=vectors[0])
            run.cold_ms = (time.perf_counter() - started) * 1000
        finally:
            await fresh.aclose()
        run.numpy_ms = await _numpy_reference(store, tenant, vectors)
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


async def run_speed_sizes(
    connection: Connection,
    embedder: Embedder,
    sizes: Sequence[int],
    *,
    queries: int = 100,
    batch: int = 50,
    seed: int = 7,
) -> list[SpeedRun]:
    """:func:`run_speed` at each of ``sizes``, back to back on one connection."""
    return [
        await run_speed(
            connection, embedder, memories=size, queries=queries, batch=batch, seed=seed
        )
        for size in sizes
    ]


async def _numpy_reference(
    store: LongTermMemory, tenant: Tenant, vectors: Sequence[np.ndarray]
) -> list[float]:
    """Milliseconds per query for an exact top 10 by cosine over the user's stored vectors in
    plain numpy: the arithmetic any search of them has to do."""
    rows = await store.collection.find(
        {**tenant.filter(), "embedding": {"$exists": True}}, {"embedding": 1}
    ).to_list(None)
    matrix = np.stack([from_bson_vector(row["embedding"]) for row in rows]).astype(np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    timings = []
    for vector in vectors:
        started = time.perf_counter()
        query = np.asarray(vector, dtype=np.float32)
        scores = matrix @ (query / (float(np.linalg.norm(query)) or 1.0))
        top = np.argpartition(-scores, min(10, scores.size) - 1)[:10]
        top = top[np.argsort(-scores[top])]
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def _rss_mb() -> float:
    """This process's resident memory now (Linux, :func:`~agent_memory.bench._memory.rss_bytes`),
    else its peak, in MiB."""
    now = rss_bytes()
    if now is not None:
        return now / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def render_speed(data: dict[str, Any]) -> str:
    """The markdown table of one size (the JSON of :meth:`SpeedRun.as_json`) or of several
    (``{"runs": [...]}``)."""
    if "runs" in data:
        return _render_sizes(data)
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
        f"| retrieve, first of a new instance (cold: reads the user's memories) | "
        f"{data['cold_retrieve_ms']} ms |\n"
        f"| exact top 10 by numpy over the same vectors (p50 / p95) | "
        f"{data['numpy_exact_top10_ms']['p50']} / {data['numpy_exact_top10_ms']['p95']} ms |\n"
        f"| resident memory of the process after the retrieves | {data['rss_mb']} MiB |\n"
        f"| a memory stored by another instance found by the next retrieve | "
        f"{'yes' if data['found_across_instances'] else 'NO'} |\n"
    )


def _render_sizes(data: dict[str, Any]) -> str:
    runs = data["runs"]
    first = runs[0]
    lines = [
        f"One user per size, sizes run back to back; embedder {first['embedder']}; tier "
        f"{first['tier']}" + (f"; commit {data['commit']}" if data.get("commit") else "") + ".",
        "",
        "| memories | ingest, memories/s | retrieve p50 / p95, vector given | retrieve p50 / p95, "
        "query embedded | cold first retrieve | numpy exact top 10, p50 | resident memory |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        lines.append(
            f"| {run['memories']:,} | {run['ingest_per_second']} | "
            f"{run['retrieve_with_vector_ms']['p50']} / {run['retrieve_with_vector_ms']['p95']} ms | "
            f"{run['retrieve_ms']['p50']} / {run['retrieve_ms']['p95']} ms | "
            f"{run['cold_retrieve_ms']} ms | {run['numpy_exact_top10_ms']['p50']} ms | "
            f"{run['rss_mb']} MiB |"
        )
    missed = [str(run["memories"]) for run in runs if not run["found_across_instances"]]
    lines.append("")
    lines.append(
        "A memory stored by another instance was found by the next retrieve at every size."
        if not missed
        else f"A memory stored by another instance was NOT found at: {', '.join(missed)}."
    )
    return "\n".join(lines) + "\n"


def plot_speed(data: dict[str, Any], path: Path) -> None:
    """Retrieve p50 (vector given, query embedded, numpy's exact search) and ingest rate
    against the number of memories, on log axes, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = data["runs"]
    sizes = [run["memories"] for run in runs]
    figure, (latency, ingest) = plt.subplots(1, 2, figsize=(10, 4), dpi=120)
    for label, key in (
        ("retrieve, vector given", "retrieve_with_vector_ms"),
        ("retrieve, query embedded", "retrieve_ms"),
        ("numpy exact top 10", "numpy_exact_top10_ms"),
    ):
        latency.plot(sizes, [run[key]["p50"] for run in runs], marker="o", label=label)
    latency.plot(sizes, [run["cold_retrieve_ms"] for run in runs], marker="s", label="cold first")
    latency.set_ylabel("p50, ms")
    ingest.plot(sizes, [run["ingest_per_second"] for run in runs], marker="o")
    ingest.set_ylabel("ingest, memories/s (consolidating store_many)")
    for axes in (latency, ingest):
        axes.set_xscale("log")
        axes.set_xlabel("memories of one user")
        axes.grid(alpha=0.3)
    latency.set_yscale("log")
    latency.legend(loc="upper left", fontsize=8)
    title = f"bench speed, {runs[0]['embedder'].split(' ')[0]}, {runs[0]['tier']} tier"
    figure.suptitle(title + (f", {data['commit']}" if data.get("commit") else ""))
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)

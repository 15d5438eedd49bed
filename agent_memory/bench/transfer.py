"""``agent-memory bench transfer``: export, import and migrate at size, and a round trip that
must change nothing but the vectors.

Two parts, both on the configured server (the embedded default served apart, so this
process's memory is the client's alone):

- **Size.** One user's long-term memories at each size (default 10,000 and 100,000),
  written straight to the collection from a stored template (the cost measured is moving
  them, not forming them). Each size is exported to a gzip file with this process's RSS
  sampled every 1,000 records, then imported into an empty database with the same embedder
  (vectors kept) and, at the smallest size, with another one (vectors made again). Records per
  second at each size say how the cost grows; the RSS growth of the export says whether its
  memory stays flat.
- **Round trip.** LoCoMo's conversations stored as ``bench retrieval`` stores them (each turn
  a memory at its session's date) with one embedder, exported, imported into an empty
  database with another, and, beside it, stored again directly with that other embedder.
  Every imported document must equal its source but for the vector, and every question must
  retrieve the same memories in the same order from the import as from the direct ingest.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from agent_memory.bench._memory import rss_bytes
from agent_memory.bench.embedders import Conversation
from agent_memory.bench.retrieval import memory_text, said_times
from agent_memory.config import Settings
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import LongTermConfig, NewMemory
from agent_memory.mongo.connection import Connection, connect
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.vectors import to_bson_vector
from agent_memory.ops.transfer import ExportScope, export_memories, import_memories
from agent_memory.providers.embedders.base import Embedder
from agent_memory.tenancy import Tenant

__all__ = ["other_fake", "render_transfer", "run_round_trip", "run_transfer_sizes"]

_MB = 1024 * 1024
#: Memories written per insert while filling.
_FILL = 2_000
_TENANT = Tenant("bench-transfer", "long-lived-user")
_WORDS = (
    "garden bicycle invoice concert recipe flight dentist sister project budget piano "
    "marathon lease printer holiday birthday vaccine mortgage podcast novel"
).split()


async def _database(settings: Settings, embedder: Embedder, label: str) -> Connection:
    """An empty database of its own on the configured server, indexes set up."""
    name = f"bench_transfer_{label}_{uuid.uuid4().hex[:8]}"
    connection = await connect(settings.model_copy(update={"database": name}))
    await IndexManager(connection, embedder.signature).setup()
    return connection


async def _drop(connection: Connection) -> None:
    await connection.client.drop_database(connection.settings.database)
    await connection.close()


async def _fill(connection: Connection, embedder: Embedder, count: int) -> None:
    """``count`` memories of one user, shaped as ``store`` writes them."""
    memory = LongTermMemory(connection, embedder)
    try:
        stored = await memory.store(_TENANT, "the template memory", consolidate=False)
        template = await connection.collection("memories").find_one({"_id": stored.id})
        await connection.collection("memories").delete_one({"_id": stored.id})
    finally:
        await memory.aclose()
    assert template is not None
    rng = np.random.default_rng(7)
    start = datetime.now(UTC) - timedelta(days=400)
    for first in range(0, count, _FILL):
        size = min(_FILL, count - first)
        texts = [
            f"memory {first + i}: the {_WORDS[(first + i) % len(_WORDS)]} and the "
            f"{_WORDS[(first + i) // len(_WORDS) % len(_WORDS)]}, item {first + i}"
            for i in range(size)
        ]
        vectors = await embedder.embed_documents(texts)
        docs = []
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            when = start + timedelta(minutes=int(rng.integers(0, 400 * 24 * 60)))
            docs.append(
                template
                | {
                    "_id": f"mem_bench{first + i:09d}",
                    "content": text,
                    "created_at": when,
                    "occurred_at": when,
                    "valid_from": when,
                    "last_accessed": when,
                    "importance": float(rng.uniform(0.1, 0.9)),
                    "embedding": to_bson_vector(vector),
                }
            )
        await connection.collection("memories").insert_many(docs, ordered=False)


async def run_transfer_sizes(
    settings: Settings,
    embedder: Embedder,
    other: Embedder,
    sizes: list[int],
    workdir: Path,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Export and import at each of ``sizes`` (see the module notes)."""
    rows = []
    for size in sorted(sizes):
        source = await _database(settings, embedder, "source")
        try:
            progress(f"{size:,} memories: filling")
            await _fill(source, embedder, size)
            path = workdir / f"export-{size}.jsonl.gz"
            path.unlink(missing_ok=True)
            before = rss_bytes() or 0
            peak = before
            seen = 0

            def step(n: int) -> None:
                nonlocal peak, seen
                seen += n
                if seen % 1_000 == 0:
                    peak = max(peak, rss_bytes() or 0)

            # The engine's own ceilings: reading the documents, and inserting them (smallest
            # size only), with nothing else done.
            progress(f"{size:,} memories: reading them alone")
            started = time.perf_counter()
            read = 0
            async for _ in source.collection("memories").find({}).batch_size(500):
                read += 1
            read_rate = read / (time.perf_counter() - started)
            insert_rate = None
            if size == min(sizes):
                progress(f"{size:,} memories: inserting them alone")
                scratch = await _database(settings, embedder, "scratch")
                try:
                    started = time.perf_counter()
                    batch: list[dict[str, Any]] = []
                    async for doc in source.collection("memories").find({}).batch_size(500):
                        batch.append(doc)
                        if len(batch) == 500:
                            await scratch.collection("memories").insert_many(batch)
                            batch = []
                    if batch:
                        await scratch.collection("memories").insert_many(batch)
                    insert_rate = size / (time.perf_counter() - started)
                finally:
                    await _drop(scratch)
            progress(f"{size:,} memories: exporting")
            exported = await export_memories(source, path, ExportScope(_TENANT.agent_id), step=step)
            peak = max(peak, rss_bytes() or 0)
            row: dict[str, Any] = {
                "memories": size,
                "export_seconds": round(exported.seconds, 2),
                "export_per_second": round(exported.total / exported.seconds),
                "export_rss_growth_mb": round((peak - before) / _MB, 1),
                "engine_read_per_second": round(read_rate),
                "engine_insert_per_second": None if insert_rate is None else round(insert_rate),
                "file_mb": round(path.stat().st_size / _MB, 1),
            }
            for label, target_embedder in (("same", embedder), ("other", other)):
                if label == "other" and size != min(sizes):
                    continue
                target = await _database(settings, target_embedder, label)
                try:
                    progress(f"{size:,} memories: importing ({label} embedder)")
                    report = await import_memories(target, target_embedder, path)
                    assert report.verified, report.shortfalls
                    row[f"import_{label}_seconds"] = round(report.seconds, 2)
                    row[f"import_{label}_per_second"] = round(report.total / report.seconds)
                    row[f"import_{label}_embedded"] = report.embedded
                finally:
                    await _drop(target)
            path.unlink(missing_ok=True)
            rows.append(row)
        finally:
            await _drop(source)
    smallest, largest = rows[0], rows[-1]
    return {
        "sizes": rows,
        "embedder": embedder.signature.describe(),
        "other_embedder": other.signature.describe(),
        "export_rate_ratio": round(largest["export_per_second"] / smallest["export_per_second"], 2),
        "import_rate_ratio": round(
            largest["import_same_per_second"] / smallest["import_same_per_second"], 2
        ),
    }


def _items(conversation: Conversation) -> list[NewMemory]:
    times = said_times(conversation)
    return [
        NewMemory(
            memory_text(conversation, i),
            "fact",
            source={"turn": i},
            occurred_at=None if times is None else times[i],
        )
        for i in range(len(conversation.turns))
    ]


def _asked_at(conversation: Conversation) -> datetime:
    times = said_times(conversation)
    return datetime.now(UTC) if times is None else max(times) + timedelta(days=1)


async def run_round_trip(
    settings: Settings,
    embedder: Embedder,
    other: Embedder,
    conversations: list[Conversation],
    workdir: Path,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """LoCoMo through an export and an import into another embedder, against a direct
    ingest with that embedder (see the module notes)."""
    source = await _database(settings, embedder, "locomo")
    imported = await _database(settings, other, "imported")
    direct = await _database(settings, other, "direct")
    path = workdir / "locomo.jsonl.gz"
    path.unlink(missing_ok=True)
    try:
        stores = [LongTermMemory(c, e) for c, e in ((source, embedder), (direct, other))]
        try:
            for number, conversation in enumerate(conversations):
                tenant = Tenant("bench-transfer", f"locomo-{number}")
                progress(f"storing {conversation.sample_id}")
                for memory in stores:
                    await memory.store_many(tenant, _items(conversation))
        finally:
            for memory in stores:
                await memory.aclose()
        progress("exporting and importing")
        exported = await export_memories(source, path)
        report = await import_memories(imported, other, path)
        # Every document equal to its source but for the vector.
        differing = 0
        compared = 0
        async for doc in source.collection("memories").find({}):
            kept = await imported.collection("memories").find_one({"_id": doc["_id"]})
            compared += 1
            doc.pop("embedding", None)
            if kept is None or {k: v for k, v in kept.items() if k != "embedding"} != doc:
                differing += 1
        # The same questions, the same memories in the same order (by turn); and again with
        # the current-first move off, which reads the links each memory was stored with
        # (what it likely updates, found among its nearest memories by the embedder of the
        # time: kept as formed, so they may differ from a direct ingest's).
        same_order = same_set = same_unlinked = questions = 0
        unlinked = LongTermConfig(update_window=0)
        readers = [LongTermMemory(c, other) for c in (imported, direct)]
        readers += [LongTermMemory(c, other, config=unlinked) for c in (imported, direct)]
        try:
            for number, conversation in enumerate(conversations):
                tenant = Tenant("bench-transfer", f"locomo-{number}")
                now = _asked_at(conversation)
                for question in conversation.questions:
                    found = [
                        [
                            (hit.memory.source or {}).get("turn")
                            for hit in await reader.retrieve(
                                tenant, question.text, k=10, now=now, record_access=False
                            )
                        ]
                        for reader in readers
                    ]
                    questions += 1
                    same_order += found[0] == found[1]
                    same_set += set(found[0]) == set(found[1])
                    same_unlinked += found[2] == found[3]
        finally:
            for reader in readers:
                await reader.aclose()
        linked = []
        for connection in (imported, direct):
            docs = (
                await connection.collection("memories")
                .find({}, {"updates": 1, "source": 1, "user_id": 1})
                .to_list(None)
            )
            turn_of = {doc["_id"]: (doc.get("source") or {}).get("turn") for doc in docs}
            linked.append(
                {
                    (doc.get("user_id"), turn_of[doc["_id"]]): tuple(
                        turn_of.get(old) for old in doc.get("updates") or ()
                    )
                    for doc in docs
                }
            )
        linked_differently = sum(
            1 for key, links in linked[0].items() if linked[1].get(key, ()) != links
        )
        return {
            "conversations": len(conversations),
            "memories": exported.counts.get("memories", 0),
            "records": exported.total,
            "documents_compared": compared,
            "documents_differing": differing,
            "embedded": report.embedded,
            "verified": report.verified,
            "questions": questions,
            "same_top10_in_order": same_order,
            "same_top10_as_set": same_set,
            "same_top10_without_current_first": same_unlinked,
            "memories_linked_differently": linked_differently,
            "embedder": embedder.signature.describe(),
            "other_embedder": other.signature.describe(),
        }
    finally:
        path.unlink(missing_ok=True)
        for connection in (source, imported, direct):
            await _drop(connection)


def _count(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def render_transfer(result: dict[str, Any]) -> str:
    lines = ["# Moving memory: export and import", ""]
    sizes = result.get("sizes")
    if sizes:
        lines += [
            f"One user's memories, embedder {sizes['embedder']}; import with the same embedder "
            f"(vectors kept) and, at the smallest size, with {sizes['other_embedder']} "
            "(vectors made again).",
            "",
            "| memories | export / s | export RSS growth | file | import / s (same) | "
            "import / s (other) | engine: read / s | engine: insert / s |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in sizes["sizes"]:
            other = row.get("import_other_per_second")
            lines.append(
                f"| {row['memories']:,} | {row['export_per_second']:,} | "
                f"{row['export_rss_growth_mb']} MB | {row['file_mb']} MB | "
                f"{row['import_same_per_second']:,} | {'' if other is None else f'{other:,}'} | "
                f"{row['engine_read_per_second']:,} | {_count(row['engine_insert_per_second'])} |"
            )
        lines += [
            "",
            f"Rate at the largest size over the smallest: export {sizes['export_rate_ratio']}, "
            f"import {sizes['import_rate_ratio']} (1.0: the cost per record does not grow). "
            "The engine's columns are the server alone reading the same documents with one "
            "cursor, and inserting them 500 at a time into an empty collection with the same "
            "indexes: the ceilings of an export and an import on this server.",
            "",
        ]
    trip = result.get("round_trip")
    if trip:
        lines += [
            f"Round trip: {trip['conversations']} LoCoMo conversations, {trip['memories']:,} "
            f"memories ({trip['records']:,} records) stored with {trip['embedder']}, exported, "
            f"imported with {trip['other_embedder']} ({trip['embedded']:,} vectors made again; "
            f"verified: {trip['verified']}).",
            "",
            f"- documents equal to their source but for the vector: "
            f"{trip['documents_compared'] - trip['documents_differing']:,} of "
            f"{trip['documents_compared']:,}",
            f"- questions whose top 10 from the import equals a direct ingest with that "
            f"embedder: {trip['same_top10_in_order']:,} of {trip['questions']:,} in order, "
            f"{trip['same_top10_as_set']:,} as a set; with the current-first move off, "
            f"{trip['same_top10_without_current_first']:,} in order",
            f"- memories whose links to what they likely update differ from the direct "
            f"ingest's (found by each embedder's nearest neighbours when stored; an import "
            f"keeps the source's): {trip['memories_linked_differently']:,}",
            "",
        ]
    return "\n".join(lines)


def other_fake(embedder: Embedder) -> Embedder:
    """Another deterministic embedder than ``embedder`` (the fake one at half its size)."""
    from agent_memory.providers.embedders.fake import FakeEmbedder

    return FakeEmbedder(max(8, embedder.dimensions // 2), model="hashing-v1-half")

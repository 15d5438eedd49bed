"""``agent-memory demo``: memory at work on the embedded default, offline.

Stores a few memories for two users, then retrieves them with hybrid search (vector and
keyword, fused) and shows why each result ranked where it did, and that one user's search
never sees the other's memories.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import typer
from rich.table import Table

from agent_memory.cli._app import console, run
from agent_memory.cli._runtime import Runtime, open_runtime
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.search import SearchQuery, make_searcher
from agent_memory.mongo.vectors import to_bson_vector

AGENT = "demo-agent"
MEMORIES = {
    "alice": [
        ("fact", "Alice lives in Berlin and works as a nurse at the Charité hospital."),
        ("preference", "Alice prefers a window seat on long flights."),
        ("preference", "Alice is vegetarian and avoids fish."),
        ("fact", "Alice's sister Maria is getting married in Lisbon in June."),
        ("instruction", "Keep answers to Alice short, with bullet points."),
        ("fact", "小明是爱丽丝的同事，他喜欢喝绿茶。"),
    ],
    "bob": [
        ("fact", "Bob lives in Paris and drives a red bicycle to work."),
        ("preference", "Bob prefers an aisle seat."),
    ],
}
QUESTIONS = [
    ("alice", "Where does she live and what is her job?"),
    ("alice", "What should I book for her flight?"),
    ("alice", "Any dietary restrictions for dinner?"),
    ("alice", "谁喜欢喝茶？"),
    ("bob", "Which seat does he like?"),
]


async def _store(rt: Runtime) -> int:
    collection = rt.connection.collection("memories")
    # Start from a clean slate for the demo's own agent id, so reruns show the same thing.
    await collection.delete_many({"agent_id": AGENT})
    stored = 0
    for user, items in MEMORIES.items():
        vectors = await rt.embedder.embed_documents([text for _, text in items])
        now = datetime.now(UTC)
        await collection.insert_many(
            [
                {
                    "_id": f"mem_{uuid.uuid4().hex}",
                    "agent_id": AGENT,
                    "user_id": user,
                    "memory_type": memory_type,
                    "content": text,
                    "embedding": to_bson_vector(vector),
                    "importance": 0.5,
                    "status": "active",
                    "tags": [],
                    "created_at": now,
                    "last_accessed": now,
                }
                for (memory_type, text), vector in zip(items, vectors, strict=True)
            ]
        )
        stored += len(items)
    return stored


async def _demo() -> None:
    started = time.perf_counter()
    async with open_runtime() as rt:
        caps = rt.connection.capabilities
        console.rule("agent_memory demo")
        where = "embedded server (mongoeco on SQLite)" if caps.embedded else "MONGODB_URI"
        console.print(f"database: {where}, {caps.describe()}")
        console.print(f"embedder: {rt.embedder.signature.describe()}")
        console.print(f"search tier: [bold]{rt.connection.tier}[/]", highlight=False)

        manager = IndexManager(rt.connection, rt.embedder.signature)
        states = await manager.setup()
        created = sum(1 for state in states if state.state == "created")
        console.print(
            f"indexes: {created} created, {len(states) - created} already in place or not needed"
        )

        stored = await _store(rt)
        console.print(f"stored {stored} memories for {len(MEMORIES)} users\n")

        searcher = make_searcher(rt.connection, dimensions=rt.embedder.dimensions)
        target = manager.catalog.target("memories")
        for user, question in QUESTIONS:
            vector = await rt.embedder.embed_query(question)
            hits = await searcher.search(
                target,
                SearchQuery(
                    tenant={"agent_id": AGENT, "user_id": user},
                    text=question,
                    vector=vector,
                    limit=3,
                ),
            )
            table = Table(title=f"{user}: {question}", title_justify="left", show_edge=False)
            table.add_column("#", justify="right")
            table.add_column("memory", overflow="fold")
            table.add_column("vector rank", justify="right")
            table.add_column("keyword rank", justify="right")
            table.add_column("fused", justify="right")
            for position, hit in enumerate(hits, start=1):
                vector_source = hit.sources.get("vector")
                text_source = hit.sources.get("text")
                table.add_row(
                    str(position),
                    hit.document["content"],
                    f"{vector_source.rank} ({vector_source.score:.2f})" if vector_source else "-",
                    f"{text_source.rank}" if text_source else "-",
                    f"{hit.score:.4f}",
                )
            console.print(table)
            others = {hit.document["user_id"] for hit in hits} - {user}
            if others:  # never expected: it would mean a tenant leak
                raise RuntimeError(f"search for {user} returned memories of {others}")
        console.print(
            f"\nEvery result came from the asking user's own memories. "
            f"Done in {time.perf_counter() - started:.1f} s."
        )
        if rt.connection.tier == "plain":
            console.print(
                "[dim]On Atlas (or atlas-local: docker compose up -d) the same calls run "
                "$vectorSearch and $search with the tenant pre-filter, fused by $rankFusion.[/]"
            )


def demo() -> None:
    """Store and retrieve memories on the embedded default (offline, under a minute)."""
    run(_demo)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)

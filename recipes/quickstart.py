"""Store a few memories and find them again with hybrid search.

Runs on the embedded default with the offline embedder:

    python recipes/quickstart.py

For Atlas, set MONGODB_URI (and `agent-memory indexes setup` creates the search indexes); for
Voyage embeddings set AGENT_MEMORY_EMBEDDER=voyage and VOYAGE_API_KEY. The code stays the same.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import UTC, datetime

import structlog

from agent_memory import IndexManager, SearchQuery, connect, load_settings, make_embedder
from agent_memory.mongo.search import make_searcher
from agent_memory.mongo.vectors import to_bson_vector

TENANT = {"agent_id": "quickstart", "user_id": "u1"}
FACTS = [
    "The user prefers a window seat on flights.",
    "The user is allergic to peanuts.",
    "The user's daughter plays the cello.",
]


async def main() -> None:
    settings = load_settings()
    embedder = make_embedder(settings)
    async with await connect(settings) as conn:
        manager = IndexManager(conn, embedder.signature)
        await manager.setup()

        memories = conn.collection("memories")
        await memories.delete_many(TENANT)
        vectors = await embedder.embed_documents(FACTS)
        await memories.insert_many(
            [
                {
                    "_id": f"mem_{uuid.uuid4().hex}",
                    **TENANT,
                    "memory_type": "preference",
                    "content": fact,
                    "embedding": to_bson_vector(vector),
                    "created_at": datetime.now(UTC),
                }
                for fact, vector in zip(FACTS, vectors, strict=True)
            ]
        )

        searcher = make_searcher(conn, dimensions=embedder.dimensions)
        question = "Which seat should I book?"
        hits = await searcher.search(
            manager.catalog.target("memories"),
            SearchQuery(
                tenant=TENANT, text=question, vector=await embedder.embed_query(question), limit=2
            ),
        )
        print(f"{conn.tier} tier, {embedder.signature.describe()}")
        for hit in hits:
            print(f"- {hit.document['content']}  [{hit.explain()}]")
    await embedder.aclose()


if __name__ == "__main__":
    # The library never configures logging; an application decides what it wants to see.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main())

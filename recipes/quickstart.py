"""Store a few memories and find them again.

Runs on the embedded default with the offline embedder:

    . .venv/bin/activate    # once per shell: the virtual environment of README's quick start
    python recipes/quickstart.py

For Atlas, set MONGODB_URI (and `agent-memory indexes setup` creates the search indexes); for
Voyage embeddings set AGENT_MEMORY_EMBEDDER=voyage and VOYAGE_API_KEY. The code stays the same.
"""

from __future__ import annotations

import asyncio
import logging
import os

import structlog

from agent_memory import IndexManager, connect, load_settings, make_embedder
from agent_memory.memory import LongTermMemory, NewMemory, Tenant

USER = Tenant(agent_id="quickstart", user_id="u1")


async def main() -> None:
    # This recipe's data in a database of its own, one per embedder (vectors of two models
    # cannot be compared), unless AGENT_MEMORY_DATABASE (or .env) names one.
    if "database" not in (chosen := load_settings()).model_fields_set:
        os.environ["AGENT_MEMORY_DATABASE"] = f"recipe_quickstart_{chosen.embedder}"
    settings = load_settings()
    embedder = make_embedder(settings)
    async with await connect(settings) as conn:
        await IndexManager(conn, embedder.signature).setup()
        memory = LongTermMemory(conn, embedder)
        await memory.forget_user(USER)  # start clean on every run
        await memory.store_many(
            USER,
            [
                NewMemory("The user prefers a window seat on flights.", "preference"),
                NewMemory("The user is allergic to peanuts.", "fact", importance=0.9),
                NewMemory("The user's daughter plays the cello.", "fact"),
            ],
        )
        hits = await memory.retrieve(USER, "Which seat should I book?", k=2)
        print(f"{conn.tier} tier, {embedder.signature.describe()}")
        for hit in hits:
            print(f"- {hit.memory.content}  [{hit.explain(memory.config.ranking)}]")
        await memory.aclose()
    await embedder.aclose()


if __name__ == "__main__":
    # The library never configures logging; an application decides what it wants to see.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main())

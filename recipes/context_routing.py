"""Hierarchical context routing (seed 002): recent turns first, then memory, then knowledge.

Every turn of the ``RAGAgent`` recalls all sources at once (the recent window, long-term
memory, the knowledge base), then routes (``agent_memory/agent/routing.py``): it decides which
level should answer the question - the recent turns if they already cover it, otherwise a
strong or personal memory match, otherwise a strong match in the knowledge base, otherwise
the model's own general knowledge - and orders the sources by that decision. The route
filters nothing: every recalled source goes into the prompt as far as the token budget
allows, and the route's order decides which source gets spare budget first
(``agent_memory/agent/prompt.py``). The decision and its reasons are recorded with the turn
(``TurnResult.route``: ``level``, ``levels`` in that order, ``reasons``; the action log keeps
the level). The manifest (``TurnResult.manifest``) says what actually went into the prompt.

1. an earlier session: Sam tells the agent her name and home; the recipe then runs a
   ``FormationWorker`` by hand until the formation queue is empty, which turns the session
   into long-term memories (the agent's own worker is off and the debounce is 0, so nothing
   waits; in an app the agent's worker forms a session once it has been quiet for the
   debounce, seed 001);
2. the knowledge base: three short travel-policy documents shared by every user;
3. a new session (short-term memory empty, long-term kept): a statement that sets the scene
   (its route is shown but not counted: it asks nothing), then one question for each level.

Runs on the embedded default with offline providers (the ``[offline model]`` quotes the
lines of its prompt that best match the question, from whichever source, so its answer
comes from the level the router chose only where that level holds the best match; at the
"model" level nothing matches, where Claude would answer from its own knowledge):

    . .venv/bin/activate    # once per shell: the virtual environment of README's quick start
    python recipes/context_routing.py

Switching to production, with no code change: set ``MONGODB_URI`` to Atlas (or atlas-local
from docker-compose.yml) and run ``agent-memory indexes setup``; set
``AGENT_MEMORY_CHAT_MODEL=anthropic`` and ``ANTHROPIC_API_KEY`` for Claude; set
``AGENT_MEMORY_EMBEDDER=voyage`` and ``VOYAGE_API_KEY`` for Voyage embeddings. What counts as
a "strong" match is a cosine similarity measured per embedder (``python -m
agent_memory.bench.routing``); ``AgentConfig(routing=RoutingConfig(...))`` overrides it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time

import structlog

from agent_memory import (
    AgentConfig,
    IndexManager,
    RAGAgent,
    SharedKnowledge,
    Tenant,
    TurnResult,
    connect,
    load_settings,
    make_chat_model,
    make_embedder,
)
from agent_memory.formation import FormationWorker

AGENT = "travel-desk"
USER = "sam"

EARLIER_SESSION = [
    "Hi, my name is Sam and I live in Lisbon.",
    "I prefer an aisle seat on long flights.",
]
POLICIES = {
    "hotel-cancellation.md": (
        "Hotel cancellation: a hotel booking can be cancelled free of charge up to 48 hours "
        "ahead of check-in; later cancellations cost the first night."
    ),
    "baggage.md": (
        "Baggage: economy fares include one checked bag of 23 kg; business fares include two."
    ),
    "rail-pass.md": (
        "Rail passes: the Japan Rail Pass must be bought before arrival and covers most "
        "shinkansen lines except Nozomi trains."
    ),
}
SCENE = "My flight to Kyoto is on 12 April, to see the cherry blossoms."  # asks nothing
# One question per level, in the order the router tries them.
QUESTIONS = [
    "When is the Kyoto flight?",  # answered by the turn just before: recent
    "What is my name?",  # told in the earlier session: memory
    "How many hours ahead of check-in can a hotel booking be cancelled free of charge?",
    "What is the capital of Australia?",  # nothing stored: the model's own knowledge
]


def show(label: str, question: str, result: TurnResult) -> None:
    route, manifest = result.route, result.manifest
    print(f"{label} {USER}: {question}")
    print(f"   routed to: {route.level.upper()} - {'; '.join(route.reasons)}")
    print(
        f"   route order: {' > '.join(route.levels)}; in the prompt (manifest): "
        f"{len(manifest.message_ids)} recent messages, {len(manifest.memory_ids)} memories, "
        f"{len(manifest.document_ids)} documents"
    )
    answer = result.answer.replace("\n", "\n   ")
    print(f"   agent: {answer}")


async def main() -> None:
    started = time.perf_counter()
    # This recipe's data in a database of its own, one per embedder (vectors of two models
    # cannot be compared), unless AGENT_MEMORY_DATABASE (or .env) names one.
    if "database" not in (chosen := load_settings()).model_fields_set:
        os.environ["AGENT_MEMORY_DATABASE"] = f"recipe_context_routing_{chosen.embedder}"
    settings = load_settings()
    embedder, chat = make_embedder(settings), make_chat_model(settings)
    # Seed 002 keeps the last 5 exchanges as recent context: 10 messages.
    config = AgentConfig(
        AGENT, short_term_limit=10, formation_debounce_s=0.0, run_formation_worker=False
    )
    async with await connect(settings) as conn:
        await IndexManager(conn, embedder.signature).setup()
        async with RAGAgent(conn, embedder, chat, config=config) as agent:
            tenant = Tenant(AGENT, USER)
            await agent.memories.forget_user(tenant)  # start clean on every run
            print(f"{conn.tier} tier, {embedder.signature.describe()}, chat: {chat.model}")
            thresholds = config.routing.for_embedder(embedder.strong_match_similarity)
            print(
                f"a strong match: cosine >= {thresholds.memory_similarity} (memory), "
                f">= {thresholds.knowledge_similarity} (knowledge); recent answers when its "
                f"window holds {thresholds.recent_overlap:.0%} of the question's words\n"
            )

            print("== an earlier session ==")
            for text in EARLIER_SESSION:
                result = await agent.process_query(USER, "earlier-session", text)
                print(f"{USER}: {text}\nagent: {result.answer}")
            # The session went quiet: the formation worker forms memories from it.
            await agent.drain()
            worker = FormationWorker(agent.memories, chat, queue=agent.queue)
            while await worker.run_once():
                pass
            formed = await agent.memories.long_term.list_memories(tenant)
            print("long-term memories formed:")
            for memory in formed:
                print(f"  - {memory.content}")

            print("\n== the knowledge base (shared by every user of the agent) ==")
            for source, text in POLICIES.items():
                report = await agent.memories.knowledge.ingest(
                    SharedKnowledge(AGENT), source=source, text=text
                )
                print(f"  {source}: {report.action}, {report.chunks} chunk(s)")

            print("\n== a new session: short-term memory empty, long-term memory kept ==")
            await agent.start_new_session(USER, "kyoto-trip")
            show("scene", SCENE, await agent.process_query(USER, "kyoto-trip", SCENE))
            print("   (a statement, not a question: its route is not counted below)\n")
            routed: dict[str, int] = {}
            for number, question in enumerate(QUESTIONS, start=1):
                result = await agent.process_query(USER, "kyoto-trip", question)
                show(f"Q{number}", question, result)
                print()
                routed[result.route.level] = routed.get(result.route.level, 0) + 1
            summary = ", ".join(
                f"{level} {routed.get(level, 0)}"
                for level in ("recent", "memory", "knowledge", "model")
            )
            print(f"questions routed to each level: {summary}")
    await embedder.aclose()
    print(f"done in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    # The library never configures logging; an application decides what it wants to see.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main())

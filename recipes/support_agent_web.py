"""An airline support agent inside an async web app: FastAPI, one agent, many users at once.

What it shows (the blueprint's support agent, seed 004, as a service):

- a FastAPI app whose *lifespan* opens the connection, the providers and one ``RAGAgent``
  once, ingests the support FAQ into the shared knowledge base, and closes it all on shutdown;
- ``POST /chat`` (user id, session id, message) runs one agent turn and returns the answer
  with its ``action_id``; ``POST /feedback`` rates that action, and the rating is credited
  to the memories that were in the prompt;
- the script drives the app in-process (``httpx.AsyncClient`` over ``ASGITransport``, no
  port opened): Alice and Bob talk to it at the same time, the agent's formation worker turns
  what they said into profile facts, and in a new session each gets answers from their own
  memories only.

Run it (embedded database, offline models)::

    . .venv/bin/activate    # once per shell: the virtual environment of README's quick start
    python recipes/support_agent_web.py

Serve it for real (the app is built by ``create_app``; one worker process per agent is the
simple choice, since the agent also runs the memory-formation worker)::

    uvicorn --factory support_agent_web:create_app --app-dir recipes --port 8000
    curl -s localhost:8000/chat -H 'content-type: application/json' \\
         -d '{"user_id": "alice", "session_id": "s1", "message": "Which seat do I like?"}'

In a real deployment ``user_id`` comes from your authentication, not from the request body.

Production: set MONGODB_URI to Atlas (or atlas-local from docker-compose.yml) and run
``agent-memory indexes setup`` once before starting (the app refuses to start with missing
indexes); AGENT_MEMORY_CHAT_MODEL=anthropic with ANTHROPIC_API_KEY for Claude;
AGENT_MEMORY_EMBEDDER=voyage with VOYAGE_API_KEY for Voyage embeddings. The code is the same.
Needs the ``[api]`` extra (FastAPI) and httpx for the in-process client.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import structlog

try:
    import httpx
    from fastapi import Depends, FastAPI, Request
    from fastapi.responses import JSONResponse
    from pydantic import BaseModel, ConfigDict, Field
except ImportError as exc:  # pragma: no cover - the [api] extra and httpx are in [dev]
    sys.exit(
        f"this recipe needs FastAPI and httpx ({exc.name} is missing): "
        "pip install 'agent-memory[api]' httpx"
    )

from agent_memory import (
    AgentConfig,
    AgentMemoryError,
    IndexManager,
    InvalidInputError,
    NotFoundError,
    NotInitialisedError,
    ProviderError,
    RAGAgent,
    Settings,
    SharedKnowledge,
    StorageUnavailableError,
    Tenant,
    connect,
    load_settings,
    make_chat_model,
    make_embedder,
)

AGENT_ID = "airline-support"
# One paragraph per line: a line is what the offline model quotes.
FAQ = "\n".join(
    [
        "# Baggage",
        "Economy tickets include one checked bag of up to 23 kg. Business class includes two "
        "checked bags of up to 32 kg each. Cabin baggage is one bag of up to 8 kg.",
        "# Changes and refunds",
        "Flexible fares can be changed free of charge up to 24 hours before departure. "
        "Refunds of flexible fares are paid within 7 days to the original payment method.",
        "# Meals",
        "Vegetarian, vegan and gluten-free meals can be ordered up to 24 hours before departure.",
    ]
)

_Id = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$")]


class ChatIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    user_id: _Id
    session_id: _Id
    message: Annotated[str, Field(min_length=1, max_length=8000)]


class ChatOut(BaseModel):
    answer: str
    action_id: str
    session_id: str
    route: str
    memories_used: int
    documents_used: int


class FeedbackIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    user_id: _Id
    action_id: _Id
    rating: Annotated[int, Field(ge=1, le=5)] | None = None
    helpful: bool | None = None
    correction: Annotated[str, Field(min_length=1, max_length=4000)] | None = None


class FeedbackOut(BaseModel):
    action_id: str
    rating: int | None
    helpful: bool | None
    credited: float | None
    memories_credited: int


# The library's errors, as HTTP statuses; the message is the library's own one-line message.
_STATUS = (
    (NotFoundError, 404),
    (InvalidInputError, 422),
    (StorageUnavailableError, 503),
    (ProviderError, 502),
    (AgentMemoryError, 500),
)


def _agent(request: Request) -> RAGAgent:
    return request.app.state.agent


# Module level: FastAPI resolves the annotations of the endpoints in this module's namespace.
Agent = Annotated[RAGAgent, Depends(_agent)]


def create_app(settings: Settings | None = None, *, formation_delay_s: float = 30.0) -> FastAPI:
    """The support service. ``formation_delay_s`` is how long a session must be quiet before
    its memories are formed (the recipe uses 1 s so its run is short)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings is None:
            # This recipe's data in a database of its own, one per embedder (vectors of two models
            # cannot be compared), unless AGENT_MEMORY_DATABASE (or .env) names one.
            if "database" not in (chosen := load_settings()).model_fields_set:
                os.environ["AGENT_MEMORY_DATABASE"] = f"recipe_support_agent_web_{chosen.embedder}"
        config = settings or load_settings()
        embedder, chat = make_embedder(config), make_chat_model(config)
        try:
            async with await connect(config) as conn:
                indexes = IndexManager(conn, embedder.signature)
                if conn.capabilities.embedded:
                    await indexes.setup()  # a fresh embedded database: nobody else will
                elif problems := await indexes.validate():
                    raise NotInitialisedError(
                        f"{len(problems)} index problem(s), e.g. {problems[0].name}: "
                        "run `agent-memory indexes setup` before starting the app"
                    )
                agent_config = AgentConfig(AGENT_ID, formation_debounce_s=formation_delay_s)
                async with RAGAgent(conn, embedder, chat, config=agent_config) as agent:
                    # Unchanged text is a no-op, so every replica may do this at start-up.
                    await agent.memories.knowledge.ingest(
                        SharedKnowledge(AGENT_ID), source="faq.md", text=FAQ
                    )
                    app.state.agent = agent
                    yield
                    del app.state.agent
        finally:
            await chat.aclose()
            await embedder.aclose()

    app = FastAPI(title="Airline support agent", lifespan=lifespan)

    @app.exception_handler(AgentMemoryError)
    async def library_error(request: Request, exc: AgentMemoryError) -> JSONResponse:
        status = next(code for kind, code in _STATUS if isinstance(exc, kind))
        return JSONResponse({"detail": str(exc)}, status_code=status)

    @app.post("/chat")
    async def chat(body: ChatIn, agent: Agent) -> ChatOut:
        result = await agent.process_query(body.user_id, body.session_id, body.message)
        return ChatOut(
            answer=result.answer,
            action_id=result.action_id,
            session_id=result.session_id,
            route=result.route.level,
            memories_used=len(result.memory_ids),
            documents_used=len(result.manifest.document_ids),
        )

    @app.post("/feedback")
    async def feedback(body: FeedbackIn, agent: Agent) -> FeedbackOut:
        if body.rating is None and body.helpful is None and body.correction is None:
            raise InvalidInputError("give a rating (1-5), helpful or a correction")
        given = await agent.memories.episodic.add_feedback(
            Tenant(AGENT_ID, body.user_id),
            body.action_id,
            rating=body.rating,
            helpful=body.helpful,
            correction=body.correction,
        )
        return FeedbackOut(
            action_id=given.action_id,
            rating=given.rating,
            helpful=given.helpful,
            credited=given.credited,
            memories_credited=len(given.memory_ids),
        )

    return app


# --- the script: a client that talks to the app in-process --------------------------------------

SESSION_1 = {
    "alice": [
        "Hi, my name is Alice and I live in Berlin.",
        "I prefer an aisle seat, and I am vegetarian.",
    ],
    "bob": [
        "Hello, my name is Bob and I live in Paris.",
        "I like a window seat and I fly business class.",
    ],
}
SESSION_2 = {
    "alice": ["Which seat should I book for my flight?", "What is my name?"],
    "bob": ["Which seat should I book for my flight?", "What is my name?"],
}
BAGGAGE = "How much checked baggage can I bring in business class?"


async def _talk(
    client: httpx.AsyncClient, user: str, session: str, messages: list[str]
) -> list[dict[str, Any]]:
    """One user's turns in order (a user waits for each answer); returns the responses."""
    replies = []
    for message in messages:
        response = await client.post(
            "/chat", json={"user_id": user, "session_id": session, "message": message}
        )
        if response.status_code != 200:
            raise RuntimeError(f"POST /chat: HTTP {response.status_code} {response.text}")
        replies.append({"message": message, **response.json()})
    return replies


def _show(user: str, reply: dict[str, Any]) -> None:
    print(f"  {user:>5}: {reply['message']}")
    answer = reply["answer"].replace("\n", "\n         ")
    print(f"  agent: {answer}")
    print(
        f"         [route {reply['route']}, {reply['memories_used']} memories, "
        f"{reply['documents_used']} FAQ chunks, action {reply['action_id']}]"
    )


async def _wait_for_formation(agent: RAGAgent, users: list[str], timeout: float = 30.0) -> float:
    """Wait until the agent's worker has formed every queued session of ``users``."""
    started = time.perf_counter()
    await agent.drain()  # the turns' scheduling of formation runs after the replies
    for user in users:  # the sessions are over: form them now, not after the debounce
        await agent.queue.expedite(Tenant(agent.config.agent_id, user))
    while time.perf_counter() - started < timeout:
        jobs = [
            job
            for user in users
            for job in await agent.queue.jobs(Tenant(agent.config.agent_id, user))
        ]
        if jobs and all(job.status in ("done", "merged") for job in jobs):
            return time.perf_counter() - started
        await asyncio.sleep(0.2)
    raise TimeoutError(f"memories were not formed within {timeout:.0f} s")


async def main() -> None:
    started = time.perf_counter()
    app = create_app(formation_delay_s=1.0)
    # ASGITransport sends no lifespan events; a server (uvicorn) would run the lifespan itself.
    async with app.router.lifespan_context(app):
        agent: RAGAgent = app.state.agent
        for user in SESSION_1:  # a clean slate, so every run shows the same thing
            await agent.memories.forget_user(Tenant(AGENT_ID, user))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://support.test") as client:
            print(f"== session 1: Alice and Bob at the same time ({agent.connection.tier} tier)")
            first = await asyncio.gather(
                *(_talk(client, user, f"{user}-1", msgs) for user, msgs in SESSION_1.items())
            )
            for user, replies in zip(SESSION_1, first, strict=True):
                for reply in replies:
                    _show(user, reply)

            waited = await _wait_for_formation(agent, list(SESSION_1))
            print(f"\n== the agent's worker formed memories after 1 s of quiet ({waited:.1f} s)")
            for user in SESSION_1:
                profile = await agent.memories.profiles.get(Tenant(AGENT_ID, user))
                print(f"  {user}: {profile.data}")

            print("\n== session 2: new sessions, empty short-term memory, both at once")
            second = await asyncio.gather(
                *(_talk(client, user, f"{user}-2", msgs) for user, msgs in SESSION_2.items())
            )
            for user, replies in zip(SESSION_2, second, strict=True):
                for reply in replies:
                    _show(user, reply)
            crossed = [
                (user, other)
                for user, replies in zip(SESSION_2, second, strict=True)
                for other in SESSION_2
                if other != user and any(other.capitalize() in reply["answer"] for reply in replies)
            ]
            print(f"  isolation: {'no answer mentions the other user' if not crossed else crossed}")

            (faq,) = await _talk(client, "bob", "bob-2", [BAGGAGE])
            _show("bob", faq)

            print("\n== feedback")
            seat = second[0][0]
            rated = await client.post(
                "/feedback",
                json={"user_id": "alice", "action_id": seat["action_id"], "rating": 5},
            )
            rated.raise_for_status()
            body = rated.json()
            print(
                f"  alice rates the seat answer 5/5: credited {body['credited']:+.2f} to the "
                f"{body['memories_credited']} memories that were in its prompt"
            )
            foreign = await client.post(
                "/feedback",
                json={"user_id": "bob", "action_id": seat["action_id"], "rating": 1},
            )
            print(f"  bob rates alice's action: HTTP {foreign.status_code} {foreign.json()}")
            bad = await client.post(
                "/chat", json={"user_id": "bob", "session_id": "", "message": 1}
            )
            print(f"  a malformed chat request: HTTP {bad.status_code}")
    print(f"\ndone in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    # The library never configures logging; an application decides what it wants to see.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main())

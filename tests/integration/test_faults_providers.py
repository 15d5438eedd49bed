"""Provider faults end to end: the real AnthropicChatModel and VoyageEmbedder, pointed at a
loopback stub of both APIs that misbehaves on request, inside a RAGAgent turn and a formation
job on the embedded server.

The unit tests (tests/unit/test_chat_anthropic.py, test_embedder_voyage.py) prove how each
provider maps and retries a fault; these prove what the framework does with the error after
the retries ran out: how long it took (attempts and seconds, with a scaled-down policy), that
the turn is recorded as a failure with the user's message kept and nothing half-written, and
that no memory is formed from a broken extraction.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from tests.loopback import serve_app

pytest.importorskip("anthropic")
pytest.importorskip("voyageai")

from agent_memory.agent.config import AgentConfig
from agent_memory.agent.rag_agent import AnswerDelta, RAGAgent
from agent_memory.errors import (
    BadResponseError,
    ProviderError,
    ProviderUnavailableError,
    RateLimitedError,
)
from agent_memory.formation import FormationQueue, FormationWorker
from agent_memory.memory.conversation.memory import NewMessage
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers._live import allow_live_calls
from agent_memory.providers._retry import RetryPolicy
from agent_memory.providers.chat import ChatRequest, Message
from agent_memory.providers.chat.anthropic import AnthropicChatModel
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.providers.embedders import VoyageEmbedder
from agent_memory.tenancy import Tenant

ANA = Tenant("agent", "ana")
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
# The default policy scaled down: 3 attempts, waits of 0.05 s then 0.1 s, no jitter.
POLICY = RetryPolicy(attempts=3, initial_delay=0.05, max_delay=0.5, multiplier=2.0, jitter=0.0)
TIMEOUT = 0.3  # seconds each provider call may take before it counts as timed out
RETRY_AFTER_MS = 250  # what the stub's 429s ask for: above the backoff, so it must be honoured
EXTRACTION = {
    "profile": {"user_name": "Ana", "home": "Lisbon"},
    "notes": [{"content": "Wants to see cherry blossoms in Kyoto", "context": "April trip"}],
    "facts": [
        {"content": "The user lives in Lisbon.", "key": "home", "importance": 0.8},
        {"content": "The user is vegetarian.", "key": "diet", "importance": 0.7},
    ],
}
FORMED = 3  # one note and two facts from EXTRACTION


# --- a loopback stub of the Anthropic messages API and the Voyage embeddings API --------------


@dataclass
class Fault:
    """One way to answer badly: a status with a body, no answer for ``hang`` seconds, or
    the body followed by ``trickle`` every 50 ms (a stuck proxy that never times out a read)."""

    status: int = 200
    body: bytes | dict[str, Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: float = 0.0
    content_type: str = "application/json"
    trickle: bytes = b""


def anthropic_error(status: int, kind: str, **headers: str) -> Fault:
    return Fault(
        status, {"type": "error", "error": {"type": kind, "message": f"stub {status}"}}, headers
    )


def voyage_error(status: int, **headers: str) -> Fault:
    return Fault(status, {"detail": f"stub {status}"}, headers)


HANG = Fault(hang=10.0)
CHAT_FAULTS = {
    "timeout": HANG,
    "429": anthropic_error(429, "rate_limit_error", **{"retry-after-ms": str(RETRY_AFTER_MS)}),
    "500": anthropic_error(500, "api_error"),
    "529": anthropic_error(529, "overloaded_error"),
}
EMBED_FAULTS = {
    "timeout": HANG,
    "429": voyage_error(429, **{"retry-after-ms": str(RETRY_AFTER_MS)}),
    "500": voyage_error(500),
}


def message_json(text: str | None) -> dict[str, Any]:
    return {
        "id": "msg_stub",
        "type": "message",
        "role": "assistant",
        "model": "claude-stub",
        "content": [] if text is None else [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 5},
    }


def sse(*pieces: str, stop: bool = True) -> bytes:
    start = message_json(None)
    start["stop_reason"] = None
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
            for p in pieces
        ),
    ]
    if stop:
        events += [
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
            {"type": "message_stop"},
        ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def stub_vector(text: str, dims: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dims)
    return (vector / np.linalg.norm(vector)).tolist()


class Stub:
    """Answers like the two APIs unless told otherwise: ``script[api]`` faults are served
    first, one per request; ``always[api]`` is served to every request after that."""

    def __init__(self) -> None:
        self.url = ""
        self.answer = "You live in Lisbon."
        self.structured: Any = EXTRACTION
        self.script: dict[str, list[Fault]] = {"messages": [], "embeddings": []}
        self.always: dict[str, Fault | None] = {"messages": None, "embeddings": None}
        self.arrivals: dict[str, list[float]] = {"messages": [], "embeddings": []}
        self.released = asyncio.Event()

    def reset(self) -> None:
        for api in self.arrivals:
            self.script[api], self.always[api], self.arrivals[api] = [], None, []

    async def _fault(self, request: web.Request, api: str) -> web.StreamResponse | None:
        self.arrivals[api].append(time.monotonic())
        fault = self.script[api].pop(0) if self.script[api] else self.always[api]
        if fault is None:
            return None
        if fault.trickle:
            response = web.StreamResponse(headers={"content-type": fault.content_type})
            await response.prepare(request)
            await response.write(fault.body if isinstance(fault.body, bytes) else b"")
            with contextlib.suppress(ConnectionError):
                for _ in range(200):  # 10 s, unless released
                    if self.released.is_set():
                        break
                    await response.write(fault.trickle)
                    await asyncio.sleep(0.05)
            return response
        if fault.hang:
            try:
                await asyncio.wait_for(self.released.wait(), fault.hang)
            except TimeoutError:
                pass
        if isinstance(fault.body, dict):
            return web.json_response(fault.body, status=fault.status, headers=fault.headers)
        return web.Response(
            status=fault.status,
            body=fault.body,
            headers={**fault.headers, "content-type": fault.content_type},
        )

    # A request counts when its handler starts, before its body is read: a client that timed
    # out on a busy machine may close the connection before the body is read, and it still
    # made the attempt (CI once counted 2 of 3 timed-out attempts).
    async def messages(self, request: web.Request) -> web.StreamResponse:
        if (faulty := await self._fault(request, "messages")) is not None:
            return faulty
        body = await request.json()
        if body.get("stream"):
            words = self.answer.split(" ")
            pieces = [w + " " for w in words[:-1]] + words[-1:]
            return web.Response(body=sse(*pieces), content_type="text/event-stream")
        text = self.structured if isinstance(self.structured, str) else json.dumps(self.structured)
        return web.json_response(message_json(text))

    async def embeddings(self, request: web.Request) -> web.StreamResponse:
        if (faulty := await self._fault(request, "embeddings")) is not None:
            return faulty
        body = await request.json()
        dims = body["output_dimension"]
        data = [
            {"object": "embedding", "embedding": stub_vector(text, dims), "index": i}
            for i, text in enumerate(body["input"])
        ]
        return web.json_response(
            {"object": "list", "data": data, "model": body["model"], "usage": {"total_tokens": 9}}
        )

    def attempts(self, api: str) -> int:
        return len(self.arrivals[api])

    def waits(self, api: str) -> list[float]:
        times = self.arrivals[api]
        return [later - earlier for earlier, later in itertools.pairwise(times)]


@pytest.fixture(autouse=True)
def _no_live_calls():
    with allow_live_calls(False):  # everything here is loopback; a slip must fail, not leak
        yield


@pytest.fixture
async def stub() -> AsyncIterator[Stub]:
    stub = Stub()
    app = web.Application()
    app.router.add_post("/v1/messages", stub.messages)
    app.router.add_post("/v1/embeddings", stub.embeddings)
    async with serve_app(app) as stub.url:
        try:
            yield stub
        finally:
            stub.released.set()


@pytest.fixture
async def providers(stub: Stub, connection) -> AsyncIterator[tuple[AnthropicChatModel, Any]]:
    chat = AnthropicChatModel(
        "claude-stub", api_key="sk-ant-stub", base_url=stub.url, timeout=TIMEOUT, retry=POLICY
    )
    embedder = VoyageEmbedder(
        "voyage-4-lite",
        dimensions=256,
        api_key="pa-stub",
        base_url=f"{stub.url}/v1",
        timeout=TIMEOUT,
        retry=POLICY,
    )
    await IndexManager(connection, embedder.signature).setup()
    stub.reset()  # setting up asks for nothing, but be sure the counts start here
    try:
        yield chat, embedder
    finally:
        await chat.aclose()
        await embedder.aclose()


@pytest.fixture
async def agent(connection, providers) -> AsyncIterator[RAGAgent]:
    chat, embedder = providers
    config = AgentConfig("agent", run_formation_worker=False, formation_debounce_s=0.0)
    async with RAGAgent(connection, embedder, chat, config=config) as agent:
        yield agent


def expected_attempts(fault: Fault) -> int:
    """Timeouts, 429 and 5xx are retried; a reply that cannot be used is final at once."""
    return POLICY.attempts if fault.hang or fault.trickle or fault.status in (429, 500, 529) else 1


async def assert_turn_recorded_as_failure(agent: RAGAgent, connection, query: str, error: str):
    """The user's message kept, one episodic action with outcome failure, nothing else."""
    window = await agent.memories.conversation.window(ANA, "s1")
    assert [(m.role, m.content) for m in window] == [("user", query)]
    actions = await connection.collection("action_logs").find({"user_id": "ana"}).to_list(None)
    assert [(a["outcome"], a["action"]["output"]["error"]) for a in actions] == [("failure", error)]
    await agent.drain()
    assert await connection.collection("formation_jobs").count_documents({}) == 0
    assert await agent.memories.long_term.collection.count_documents({}) == 0


# --- the chat model fails during a turn --------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CHAT_FAULTS))
async def test_a_chat_fault_fails_the_turn_within_its_bound_and_records_it(
    stub: Stub, agent: RAGAgent, connection, name: str
):
    fault = CHAT_FAULTS[name]
    stub.always["messages"] = fault
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await agent.process_query("ana", "s1", "where do I live?")
    elapsed = time.monotonic() - started
    error = caught.value
    expected = RateLimitedError if name == "429" else ProviderUnavailableError
    assert type(error) is expected and "Anthropic" in str(error)
    assert "\n" not in str(error) and "sk-ant-stub" not in str(error)
    assert stub.attempts("messages") == POLICY.attempts
    if name == "429":
        assert error.retry_after == RETRY_AFTER_MS / 1000
        assert all(wait >= 0.24 for wait in stub.waits("messages"))  # as told, not backoff
        assert elapsed < 2 * RETRY_AFTER_MS / 1000 + 1.5
    elif name == "timeout":
        assert elapsed >= POLICY.attempts * TIMEOUT  # every attempt waited out its timeout
        assert elapsed < POLICY.attempts * TIMEOUT + 0.15 + 1.5
    else:
        waits = stub.waits("messages")
        assert waits[0] >= 0.045 and waits[1] >= 0.095  # exponential backoff
        assert elapsed < 0.15 + 1.5
    await assert_turn_recorded_as_failure(
        agent, connection, "where do I live?", type(error).__name__
    )


@pytest.mark.parametrize(
    ("name", "fault", "error", "attempts"),
    [
        (
            "invalid-event-data",
            Fault(body=b"event: message_start\ndata: {nope\n\n", content_type="text/event-stream"),
            BadResponseError,
            1,
        ),
        ("400", anthropic_error(400, "invalid_request_error"), BadResponseError, 1),
        # A proxy's page where the event stream should be: a stream that ended before any
        # text, so asking again is safe.
        (
            "html-gateway-page",
            Fault(body=b"<html>bad gateway</html>", content_type="text/html"),
            ProviderUnavailableError,
            POLICY.attempts,
        ),
    ],
)
async def test_a_malformed_or_unfinished_reply_fails_the_turn(
    stub: Stub,
    agent: RAGAgent,
    connection,
    name: str,
    fault: Fault,
    error: type[Exception],
    attempts: int,
):
    stub.always["messages"] = fault
    started = time.monotonic()
    with pytest.raises(error) as caught:
        await agent.process_query("ana", "s1", "where do I live?")
    assert type(caught.value) is error and "Anthropic" in str(caught.value)
    # A reply we cannot use is not asked for again; one that broke off before any text is.
    assert stub.attempts("messages") == attempts
    assert time.monotonic() - started < 1.5
    await assert_turn_recorded_as_failure(agent, connection, "where do I live?", error.__name__)


@pytest.mark.parametrize(
    ("trickle", "message"),
    [(b"", "message_stop"), (b": still here\n", "did not answer within")],
    ids=["cut", "stalled"],
)
async def test_a_stream_cut_or_stalled_after_some_text_keeps_no_half_answer(
    stub: Stub, agent: RAGAgent, connection, trickle: bytes, message: str
):
    stub.always["messages"] = Fault(
        body=sse("You ", "live ", stop=False), content_type="text/event-stream", trickle=trickle
    )
    seen: list[str] = []
    started = time.monotonic()
    with pytest.raises(ProviderUnavailableError, match=message):
        async for event in agent.stream("ana", "s1", "where do I live?"):
            if isinstance(event, AnswerDelta):
                seen.append(event.text)
    assert "".join(seen) == "You live "  # the user saw the start of an answer...
    assert stub.attempts("messages") == 1  # ...so it is not asked again (it would repeat)
    assert time.monotonic() - started < TIMEOUT + 1.5  # a stall ends after one timeout
    # ...but the half answer is not stored as if the assistant had said it.
    await assert_turn_recorded_as_failure(
        agent, connection, "where do I live?", "ProviderUnavailableError"
    )


@pytest.mark.parametrize("streamed", [False, True], ids=["generate", "stream"])
async def test_a_trickling_server_cannot_stretch_an_attempt_past_the_timeout(
    stub: Stub, providers, streamed: bool
):
    """The SDK's timeout is per read: bytes dribbling in (here a space every 50 ms for up to
    10 s) would hold each attempt for as long as the server likes. The model bounds each
    attempt by the clock (a stream: each event), so the call fails after attempts x timeout
    plus the backoff; a stream that stalls before any text is retried like a request."""
    chat, _ = providers
    stub.always["messages"] = Fault(trickle=b" ")
    request = ChatRequest((Message.user("hello"),))
    started = time.monotonic()
    with pytest.raises(ProviderUnavailableError, match=r"did not answer within 0\.3 s"):
        if streamed:
            async for _ in chat.stream(request):
                pass
        else:
            await chat.generate(request)
    elapsed = time.monotonic() - started
    assert stub.attempts("messages") == POLICY.attempts
    assert POLICY.attempts * TIMEOUT <= elapsed < POLICY.attempts * TIMEOUT + 0.15 + 1.5


async def test_a_trickling_server_cannot_stretch_an_embedding_past_the_timeout(
    stub: Stub, providers
):
    """Voyage's SDK bounds the whole request (aiohttp's total timeout): the same bound."""
    _, embedder = providers
    stub.always["embeddings"] = Fault(trickle=b" ")
    started = time.monotonic()
    with pytest.raises(ProviderUnavailableError):
        await embedder.embed_query("hello")
    elapsed = time.monotonic() - started
    assert stub.attempts("embeddings") == POLICY.attempts
    assert POLICY.attempts * TIMEOUT <= elapsed < POLICY.attempts * TIMEOUT + 0.15 + 1.5


async def test_transient_chat_faults_are_retried_and_the_turn_succeeds(
    stub: Stub, agent: RAGAgent, connection
):
    # The API may accept the stream and then report overload before any text.
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    overloaded_event = sse(stop=False)[: sse(stop=False).index(b"event: content_block_start")]
    overloaded_event += f"event: error\ndata: {json.dumps(overloaded)}\n\n".encode()
    stub.script["messages"] = [
        CHAT_FAULTS["429"],
        Fault(body=overloaded_event, content_type="text/event-stream"),
    ]
    result = await agent.process_query("ana", "s1", "where do I live?")
    assert result.answer == "You live in Lisbon." and stub.attempts("messages") == 3
    window = await agent.memories.conversation.window(ANA, "s1")
    assert [m.role for m in window] == ["user", "assistant"]
    action = await agent.memories.episodic.get_action(ANA, result.action_id)
    assert action.outcome == "success"


# --- the embedder fails during a turn -----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EMBED_FAULTS))
async def test_an_embedder_fault_fails_the_turn_within_its_bound_and_records_it(
    stub: Stub, agent: RAGAgent, connection, name: str
):
    fault = EMBED_FAULTS[name]
    stub.always["embeddings"] = fault
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await agent.process_query("ana", "s1", "where do I live?")
    elapsed = time.monotonic() - started
    expected = RateLimitedError if name == "429" else ProviderUnavailableError
    assert type(caught.value) is expected
    assert stub.attempts("messages") == 0  # no answer without recall
    # The query is embedded once; the failure record reuses that attempt, it does not embed
    # the query again (the user would wait out a second retry budget for nothing).
    assert stub.attempts("embeddings") == POLICY.attempts
    bound = {"timeout": POLICY.attempts * TIMEOUT + 0.15, "429": 0.5, "500": 0.15}[name]
    assert elapsed < bound + 1.5
    await assert_turn_recorded_as_failure(agent, connection, "where do I live?", expected.__name__)


async def test_a_transient_embedder_fault_is_retried_and_the_turn_succeeds(
    stub: Stub, agent: RAGAgent
):
    stub.script["embeddings"] = [EMBED_FAULTS["429"], EMBED_FAULTS["timeout"]]
    result = await agent.process_query("ana", "s1", "where do I live?")
    assert result.answer == "You live in Lisbon."
    assert stub.attempts("embeddings") == 3
    action = await agent.memories.episodic.get_action(ANA, result.action_id)
    assert action.outcome == "success"


async def test_an_unexpected_exception_from_a_custom_chat_model_is_recorded_too(
    connection, embedder
):
    """ChatModel is public for users to implement; theirs may raise anything. The turn is
    recorded like a provider failure and the exception comes out as it was."""
    await IndexManager(connection, embedder.signature).setup()
    config = AgentConfig("agent", run_formation_worker=False, formation_debounce_s=0.0)
    chat = FakeChatModel([RuntimeError("a bug in a custom model")])
    async with RAGAgent(connection, embedder, chat, config=config) as agent:
        with pytest.raises(RuntimeError, match="a bug in a custom model"):
            await agent.process_query("ana", "s1", "where do I live?")
        await assert_turn_recorded_as_failure(agent, connection, "where do I live?", "RuntimeError")


# --- formation: no memories from a broken extraction ------------------------------------------


@pytest.fixture
async def formation(connection, providers) -> AsyncIterator[tuple[MemorySystem, FormationQueue]]:
    chat, embedder = providers
    memories = MemorySystem(connection, embedder, chat_model=chat)
    queue = FormationQueue(connection, debounce_seconds=0, max_attempts=2, retry_base_seconds=10)
    await memories.conversation.append_turn(
        ANA,
        "s1",
        [
            NewMessage.user("I'm Ana from Lisbon, vegetarian, and I want to see sakura in Kyoto."),
            NewMessage.assistant("Noted!"),
        ],
    )
    try:
        yield memories, queue
    finally:
        await memories.aclose()


def form(memories: MemorySystem, queue: FormationQueue, chat) -> FormationWorker:
    return FormationWorker(memories, chat, queue=queue, worker_id="w")


async def assert_nothing_formed(memories: MemorySystem, queue: FormationQueue) -> None:
    assert (await memories.profiles.get(ANA)).version == 0
    assert await memories.long_term.collection.count_documents({}) == 0
    assert await queue.formed_through(ANA, "s1") is None  # the messages stay unformed


BROKEN_EXTRACTIONS = {
    "timeout": (HANG, "ProviderUnavailableError"),
    "trickle": (Fault(trickle=b" "), "ProviderUnavailableError"),
    "429": (CHAT_FAULTS["429"], "RateLimitedError"),
    "500": (CHAT_FAULTS["500"], "ProviderUnavailableError"),
    "invalid-json-body": (Fault(body=b'{"id": "msg_1", "content": [tru'), "BadResponseError"),
    "empty-structured-output": (Fault(body=message_json("")), "BadResponseError"),
    "no-content-blocks": (Fault(body=message_json(None)), "BadResponseError"),
    "not-json-text": (Fault(body=message_json("Sure! Ana lives in Lisbon.")), "BadResponseError"),
    "wrong-shape": (Fault(body=message_json('{"profile": "Ana", "facts": 3}')), "BadResponseError"),
    "outside-the-schemas": (
        Fault(body=message_json(json.dumps({"profile": {"password": "hunter2"}}))),
        "BadResponseError",
    ),
}


@pytest.mark.parametrize("name", sorted(BROKEN_EXTRACTIONS))
async def test_a_broken_extraction_backs_off_goes_dead_and_forms_nothing(
    stub: Stub, providers, formation, name: str
):
    chat, _ = providers
    memories, queue = formation
    fault, error = BROKEN_EXTRACTIONS[name]
    stub.always["messages"] = fault
    job_id = await queue.schedule(ANA, "s1", now=T0)
    worker = form(memories, queue, chat)

    assert await worker.run_once(now=T0) is True
    job = await queue.get(job_id)
    assert (job.status, job.attempts, job.last_error) == ("pending", 1, error)
    assert job.run_after == T0 + timedelta(seconds=10) and job.plan is None
    assert stub.attempts("messages") == expected_attempts(fault)
    await assert_nothing_formed(memories, queue)

    assert await worker.run_once(now=T0 + timedelta(seconds=10)) is True
    dead = await queue.get(job_id)
    assert (dead.status, dead.attempts, dead.last_error) == ("dead", 2, error)
    assert stub.attempts("messages") == 2 * expected_attempts(fault)
    await assert_nothing_formed(memories, queue)

    # Once the provider answers well again, the session's next job forms the same messages.
    stub.always["messages"] = None
    await queue.schedule(ANA, "s1", now=T0 + timedelta(seconds=20))
    assert await worker.run_once(now=T0 + timedelta(seconds=20)) is True
    profile = await memories.profiles.get(ANA)
    assert profile.data == EXTRACTION["profile"] and profile.version == 1
    assert await memories.long_term.collection.count_documents({}) == FORMED


async def test_the_embedder_failing_while_storing_resumes_from_the_plan_once(
    stub: Stub, providers, formation
):
    """The extraction worked but Voyage fails storing its facts: the retry re-applies the
    recorded plan (no second model call), and the profile and memories are formed once."""
    chat, _ = providers
    memories, queue = formation
    stub.always["embeddings"] = EMBED_FAULTS["500"]
    job_id = await queue.schedule(ANA, "s1", now=T0)
    worker = form(memories, queue, chat)

    assert await worker.run_once(now=T0) is True
    job = await queue.get(job_id)
    assert (job.status, job.last_error, job.steps) == (
        "pending",
        "ProviderUnavailableError",
        ("profile",),
    )
    assert job.plan is not None and stub.attempts("messages") == 1
    assert stub.attempts("embeddings") == POLICY.attempts
    assert (await memories.profiles.get(ANA)).version == 1
    assert await memories.long_term.collection.count_documents({}) == 0

    stub.always["embeddings"] = None
    assert await worker.run_once(now=T0 + timedelta(seconds=10)) is True
    done = await queue.get(job_id)
    assert (done.status, done.attempts) == ("done", 2)
    assert stub.attempts("messages") == 1  # the recorded extraction, not a new one
    profile = await memories.profiles.get(ANA)
    assert profile.data == EXTRACTION["profile"] and profile.version == 1
    assert await memories.long_term.collection.count_documents({}) == FORMED

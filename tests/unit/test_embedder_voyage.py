"""VoyageEmbedder against the real voyageai SDK and a loopback aiohttp stub of the API."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
import pytest
from aiohttp import web
from structlog.testing import capture_logs

from tests.loopback import serve_app

pytest.importorskip("voyageai")

from voyageai import error as voyage_error
from voyageai.api_resources import api_requestor

from agent_memory._tokens import estimate_tokens
from agent_memory.errors import (
    BadResponseError,
    ConfigurationError,
    InvalidInputError,
    LiveCallBlockedError,
    MissingCredentialsError,
    ProviderError,
    ProviderUnavailableError,
    RateLimitedError,
    UnknownProviderError,
)
from agent_memory.providers._live import allow_live_calls
from agent_memory.providers._retry import RetryPolicy
from agent_memory.providers.embedders import VoyageEmbedder
from agent_memory.providers.embedders.voyage import (
    TOKEN_SAFETY_FACTOR,
    VOYAGE_MODELS,
    plan_batches,
)

KEY = "pa-test-0123456789abcdef"
FAST = RetryPolicy(attempts=3, initial_delay=0.001, max_delay=0.01, jitter=0.0)


def stub_vector(text: str, dims: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dims).astype(np.float32)


def expected(texts: list[str], dims: int) -> np.ndarray:
    matrix = np.stack([stub_vector(t, dims) for t in texts])
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


class VoyageStub:
    """POST /v1/embeddings the way the API answers it; scripted replies are served first."""

    def __init__(self) -> None:
        self.base_url = ""
        self.requests: list[dict[str, Any]] = []
        self.script: list[tuple[int, Any, dict[str, str]]] = []
        self.dimension_delta = 0
        self.drop_last = False
        self.delay = 0.0
        self.max_inputs: int | None = None  # more in one request -> "too many tokens" 400
        self.in_flight = 0
        self.max_in_flight = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(
            {"path": request.path, "auth": request.headers.get("Authorization"), "body": body}
        )
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.script:
                status, payload, headers = self.script.pop(0)
                if isinstance(payload, str):
                    return web.Response(status=status, text=payload, headers=headers)
                return web.json_response(payload, status=status, headers=headers)
            texts = body["input"]
            if self.max_inputs is not None and len(texts) > self.max_inputs:
                detail = (
                    "Request to model failed. The max allowed tokens per submitted batch is "
                    "120000. Your batch has 150000 tokens. Please lower the number of tokens."
                )
                return web.json_response({"detail": detail}, status=400)
            dims = body.get("output_dimension") or VOYAGE_MODELS[body["model"]].dimensions
            dims += self.dimension_delta
            if self.drop_last:
                texts = texts[:-1]
            data = []
            for index, text in enumerate(texts):
                vector = stub_vector(text, dims)
                embedding: Any = vector.tolist()
                if body.get("encoding_format") == "base64":
                    embedding = base64.b64encode(vector.astype("<f4").tobytes()).decode()
                data.append({"object": "embedding", "embedding": embedding, "index": index})
            return web.json_response(
                {
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"total_tokens": sum(len(t) // 4 + 1 for t in texts)},
                }
            )
        finally:
            self.in_flight -= 1


@pytest.fixture
async def stub() -> AsyncIterator[VoyageStub]:
    stub = VoyageStub()
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/embeddings", stub.handle)
    async with serve_app(app) as url:
        stub.base_url = f"{url}/v1"
        yield stub


@pytest.fixture
async def make(stub: VoyageStub) -> AsyncIterator[Callable[..., VoyageEmbedder]]:
    made: list[VoyageEmbedder] = []

    def factory(**kwargs: Any) -> VoyageEmbedder:
        kwargs.setdefault("api_key", KEY)
        kwargs.setdefault("base_url", stub.base_url)
        kwargs.setdefault("retry", FAST)
        embedder = VoyageEmbedder(**kwargs)
        made.append(embedder)
        return embedder

    yield factory
    for embedder in made:
        await embedder.aclose()


# --- requests --------------------------------------------------------------------------------


async def test_documents_and_query_send_the_api_fields(stub: VoyageStub, make) -> None:
    embedder = make()
    docs = ["I live in Berlin", "I like green tea"]
    vectors = await embedder.embed_documents(docs)
    assert vectors.shape == (2, 1024) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected(docs, 1024), atol=1e-6)
    (request,) = stub.requests
    assert request["path"] == "/v1/embeddings"
    assert request["auth"] == f"Bearer {KEY}"
    body = request["body"]
    assert body["model"] == "voyage-3.5"
    assert body["input"] == docs
    assert body["input_type"] == "document"
    assert body["output_dimension"] == 1024
    assert body["truncation"] is False

    query = await embedder.embed_query("where do I live?")
    assert query.shape == (1024,)
    np.testing.assert_allclose(query, expected(["where do I live?"], 1024)[0], atol=1e-6)
    assert stub.requests[1]["body"]["input_type"] == "query"
    assert stub.requests[1]["body"]["input"] == ["where do I live?"]
    assert embedder.signature.describe() == "voyage/voyage-3.5 (1024 dims, cosine)"


async def test_dimensions_are_sent_as_output_dimension(stub: VoyageStub, make) -> None:
    embedder = make(model="voyage-4-lite", dimensions=256)
    vectors = await embedder.embed_documents(["a note"])
    assert vectors.shape == (1, 256)
    assert stub.requests[0]["body"]["output_dimension"] == 256


async def test_fixed_dimension_model_sends_no_output_dimension(stub: VoyageStub, make) -> None:
    embedder = make(model="voyage-3-lite")
    assert embedder.dimensions == 512
    assert (await embedder.embed_documents(["a note"])).shape == (1, 512)
    assert stub.requests[0]["body"]["output_dimension"] is None


@pytest.mark.parametrize(("model", "dimensions"), [("voyage-3.5", 300), ("voyage-code-2", 1024)])
def test_dimensions_the_model_cannot_produce(model: str, dimensions: int) -> None:
    with pytest.raises(ConfigurationError, match="choose one of"):
        VoyageEmbedder(model, dimensions=dimensions, api_key=KEY)


# --- batching --------------------------------------------------------------------------------


async def test_at_most_1000_texts_per_request_in_order(stub: VoyageStub, make) -> None:
    texts = [f"memory number {i}" for i in range(2500)]
    vectors = await make(dimensions=256).embed_documents(texts)
    sizes = sorted(len(r["body"]["input"]) for r in stub.requests)
    assert sizes == [500, 1000, 1000]
    np.testing.assert_allclose(vectors, expected(texts, 256), atol=1e-6)


async def test_token_heavy_batches_split_by_the_model_budget(stub: VoyageStub, make) -> None:
    # voyage-3-large accepts 120K tokens a request; each text is ~5K estimated tokens.
    texts = [f"{i} " + "lorem ipsum dolor " * 1100 for i in range(30)]
    vectors = await make(model="voyage-3-large", dimensions=256).embed_documents(texts)
    assert len(stub.requests) >= 3
    for request in stub.requests:
        cost = sum(estimate_tokens(t) * TOKEN_SAFETY_FACTOR for t in request["body"]["input"])
        assert cost <= 120_000
    sent = [
        t
        for r in sorted(stub.requests, key=lambda r: int(r["body"]["input"][0].split()[0]))
        for t in r["body"]["input"]
    ]
    assert sent == texts
    np.testing.assert_allclose(vectors, expected(texts, 256), atol=1e-6)


def test_plan_batches_keeps_order_and_isolates_an_oversized_text() -> None:
    texts = ["short", "x" * 4000, "short again", "tail"]
    # "x" * 4000 is 1,000 estimated tokens, 2,000 with the safety factor: alone over budget.
    batches = plan_batches(texts, token_budget=1_000, max_texts=2)
    assert batches == [["short"], ["x" * 4000], ["short again", "tail"]]
    assert plan_batches([], token_budget=10) == []


async def test_a_failing_batch_raises_its_own_error_not_a_group(stub: VoyageStub, make) -> None:
    stub.script = [(400, {"detail": "Value 'x' is not valid."}, {})]
    texts = [f"t{i}" for i in range(2500)]
    with pytest.raises(BadResponseError) as caught:
        await make(retry=RetryPolicy(attempts=1)).embed_documents(texts)
    assert isinstance(caught.value.__cause__, voyage_error.InvalidRequestError)


async def test_batch_the_api_counts_as_too_large_is_halved(stub: VoyageStub, make) -> None:
    stub.max_inputs = 3
    texts = [f"fact {i}" for i in range(10)]
    with capture_logs() as logs:
        vectors = await make(dimensions=256).embed_documents(texts)
    np.testing.assert_allclose(vectors, expected(texts, 256), atol=1e-6)
    assert any(e["event"] == "embedding_batch_split" for e in logs)


async def test_concurrent_batches_are_bounded(stub: VoyageStub, make) -> None:
    stub.delay = 0.05
    texts = [f"t{i}" for i in range(4500)]
    await make(dimensions=256, max_concurrency=2).embed_documents(texts)
    assert len(stub.requests) == 5
    assert stub.max_in_flight == 2


async def test_one_log_event_per_batch_without_texts_or_key(stub: VoyageStub, make) -> None:
    texts = [f"secret diary entry {i}" for i in range(2500)]
    with capture_logs() as logs:
        await make(dimensions=256).embed_documents(texts)
    events = [e for e in logs if e["event"] == "embeddings_computed"]
    assert len(events) == 3
    for event in events:
        assert event["provider"] == "voyage" and event["model"] == "voyage-3.5"
        assert event["texts"] in (1000, 500) and event["duration_ms"] >= 0
    flat = repr(logs)
    assert "secret diary" not in flat and KEY not in flat


# --- failures --------------------------------------------------------------------------------


async def test_429_is_retried_then_succeeds(stub: VoyageStub, make) -> None:
    stub.script = [(429, {"detail": "slow down"}, {"Retry-After": "0"})]
    vectors = await make().embed_documents(["hello"])
    assert vectors.shape == (1, 1024)
    assert len(stub.requests) == 2


async def test_persistent_429_is_rate_limited_with_retry_after(stub: VoyageStub, make) -> None:
    stub.script = [(429, {"detail": "slow down"}, {"Retry-After": "0"})] * 5
    policy = RetryPolicy(attempts=2, initial_delay=0.001, max_delay=0.01)
    with pytest.raises(RateLimitedError) as caught:
        await make(retry=policy).embed_documents(["hello"])
    assert caught.value.retry_after == 0.0 and caught.value.status_code == 429
    assert isinstance(caught.value.__cause__, voyage_error.RateLimitError)
    assert len(stub.requests) == 2


async def test_retry_after_as_an_http_date(stub: VoyageStub, make) -> None:
    past = "Wed, 21 Oct 2015 07:28:00 GMT"
    stub.script = [(429, {"detail": "slow down"}, {"Retry-After": past})]
    with pytest.raises(RateLimitedError) as caught:
        await make(retry=RetryPolicy(attempts=1)).embed_query("hello")
    assert caught.value.retry_after == 0.0  # a date in the past means "now"


async def test_429_with_a_plain_text_body_is_still_rate_limited(stub: VoyageStub, make) -> None:
    # The SDK raises a bare APIError for a non-JSON error body and drops the headers.
    stub.script = [(429, "Too Many Requests", {"Retry-After": "7"})]
    with pytest.raises(RateLimitedError) as caught:
        await make(retry=RetryPolicy(attempts=1)).embed_query("hello")
    assert type(caught.value.__cause__) is voyage_error.APIError
    assert caught.value.retry_after is None


async def test_persistent_503_exhausts_the_policy(stub: VoyageStub, make) -> None:
    stub.script = [(503, "overloaded", {})] * 10
    with pytest.raises(ProviderUnavailableError) as caught:
        await make().embed_documents(["hello"])
    assert caught.value.status_code == 503
    assert len(stub.requests) == FAST.attempts


@pytest.mark.parametrize("status", [500, 502, 504])
async def test_server_errors_are_unavailable(stub: VoyageStub, make, status: int) -> None:
    stub.script = [(status, {"detail": "boom"}, {})]
    with pytest.raises(ProviderUnavailableError):
        await make(retry=RetryPolicy(attempts=1)).embed_documents(["hello"])


async def test_timeout_is_unavailable(stub: VoyageStub, make) -> None:
    stub.delay = 0.3
    policy = RetryPolicy(attempts=2, initial_delay=0.001, max_delay=0.01)
    with pytest.raises(ProviderUnavailableError) as caught:
        await make(timeout=0.05, retry=policy).embed_query("hello")
    assert isinstance(caught.value.__cause__, voyage_error.Timeout)
    assert len(stub.requests) == 2


async def test_refused_connection_is_unavailable(make) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    embedder = make(base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ProviderUnavailableError):
        await embedder.embed_query("hello")


async def test_401_names_the_key_variable_and_is_not_retried(stub: VoyageStub, make) -> None:
    stub.script = [(401, {"detail": "Provided API key is invalid."}, {})] * 3
    with pytest.raises(ProviderError) as caught:
        await make().embed_query("hello")
    assert type(caught.value) is ProviderError
    assert "VOYAGE_API_KEY" in str(caught.value) and KEY not in str(caught.value)
    assert caught.value.status_code == 401
    assert len(stub.requests) == 1


async def test_400_for_a_too_long_text_is_invalid_input(stub: VoyageStub, make) -> None:
    detail = "Input text at index 0 has 40000 tokens, which exceeds the context length 32000."
    stub.script = [(400, {"detail": detail}, {})]
    with pytest.raises(InvalidInputError, match="too long"):
        await make().embed_query("hello")


async def test_other_400_is_a_bad_response(stub: VoyageStub, make) -> None:
    stub.script = [(400, {"detail": "Value 'x' is not a valid input_type."}, {})]
    with pytest.raises(BadResponseError, match="rejected the request"):
        await make().embed_query("hello")


async def test_wrong_dimension_is_a_bad_response(stub: VoyageStub, make) -> None:
    stub.dimension_delta = -1
    with pytest.raises(BadResponseError, match="1023-dimensional"):
        await make().embed_documents(["a", "b"])


async def test_wrong_count_is_a_bad_response(stub: VoyageStub, make) -> None:
    stub.drop_last = True
    with pytest.raises(BadResponseError, match="1 embeddings for 2 texts"):
        await make().embed_documents(["a", "b"])


async def test_unparseable_body_is_a_bad_response(stub: VoyageStub, make) -> None:
    stub.script = [(200, {"object": "list", "usage": {"total_tokens": 1}}, {})]
    with pytest.raises(BadResponseError):
        await make().embed_query("hello")


# --- configuration ---------------------------------------------------------------------------


def test_unknown_model_lists_the_choices() -> None:
    with pytest.raises(UnknownProviderError) as caught:
        VoyageEmbedder("voyage-99", api_key=KEY)
    assert "voyage-3.5" in caught.value.choices and "voyage-4-lite" in caught.value.choices
    assert "voyage-3.5" in str(caught.value)


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    with pytest.raises(MissingCredentialsError, match="VOYAGE_API_KEY"):
        VoyageEmbedder()


async def test_key_from_the_environment(
    stub: VoyageStub, make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-from-env")
    await make(api_key=None).embed_query("hello")
    assert stub.requests[0]["auth"] == "Bearer pa-from-env"


def test_default_endpoints_follow_the_key() -> None:
    assert VoyageEmbedder(api_key="pa-x").base_url == "https://api.voyageai.com/v1"
    assert VoyageEmbedder(api_key="al-x").base_url == "https://ai.mongodb.com/v1"


async def test_live_call_guard_stops_requests_to_the_public_api(
    stub: VoyageStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[object] = []

    async def refuse(*args: object, **kwargs: object) -> None:
        sent.append(args)
        raise AssertionError("a request was attempted")

    monkeypatch.setattr(api_requestor.APIRequestor, "arequest", refuse)
    with allow_live_calls(False):
        async with VoyageEmbedder(api_key=KEY, retry=FAST) as embedder:
            with pytest.raises(LiveCallBlockedError):
                await embedder.embed_documents(["hello"])
            with pytest.raises(LiveCallBlockedError):
                await embedder.embed_query("hello")
    assert sent == [] and stub.requests == []


async def test_live_call_guard_lets_loopback_through(stub: VoyageStub, make) -> None:
    with allow_live_calls(False):
        assert (await make().embed_query("hello")).shape == (1024,)


# --- lifecycle -------------------------------------------------------------------------------


async def test_one_session_reused_and_closed(stub: VoyageStub, make) -> None:
    embedder = make()
    await embedder.embed_query("one")
    session = embedder._state.session
    await embedder.embed_query("two")
    assert embedder._state.session is session
    await embedder.aclose()
    await embedder.aclose()
    assert session.closed
    with pytest.raises(RuntimeError, match="closed"):
        await embedder.embed_query("three")


async def test_use_from_successive_event_loops(stub: VoyageStub, make) -> None:
    embedder = make()

    def two_runs() -> tuple[np.ndarray, np.ndarray]:
        # Neither run closes the embedder: the loop's shutdown must close its session.
        first = asyncio.run(embedder.embed_query("one"))
        second = asyncio.run(embedder.embed_query("two"))
        return first, second

    first, second = await asyncio.to_thread(two_runs)
    np.testing.assert_allclose(first, expected(["one"], 1024)[0], atol=1e-6)
    np.testing.assert_allclose(second, expected(["two"], 1024)[0], atol=1e-6)
    assert embedder._state.session.closed

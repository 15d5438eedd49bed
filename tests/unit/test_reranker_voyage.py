"""VoyageReranker against the real voyageai SDK and a loopback aiohttp stub of the rerank API."""

from __future__ import annotations

import asyncio
import hashlib
import math
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from structlog.testing import capture_logs

from tests.loopback import serve_app

pytest.importorskip("voyageai")

import voyageai
from voyageai import error as voyage_error
from voyageai.api_resources import api_requestor

from agent_memory._tokens import estimate_tokens
from agent_memory.config import load_settings
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
from agent_memory.providers._voyage_common import TOKEN_SAFETY_FACTOR
from agent_memory.providers.registry import make_reranker
from agent_memory.providers.rerankers import RerankScore, VoyageReranker
from agent_memory.providers.rerankers.voyage import RERANK_MODELS, plan_rerank_batches

KEY = "pa-test-0123456789abcdef"
FAST = RetryPolicy(attempts=3, initial_delay=0.001, max_delay=0.01, jitter=0.0)


def stub_score(query: str, document: str) -> float:
    """A relevance score in [0, 1) that depends on the pair only, as a cross-encoder's does."""
    digest = hashlib.sha256(f"{query}\0{document}".encode()).digest()
    return int.from_bytes(digest[:6], "little") / 2**48


def expected(query: str, documents: list[str], top_k: int | None = None) -> list[RerankScore]:
    """The ranking of the whole list at once: what any batching must reproduce."""
    ranked = sorted(
        (RerankScore(i, stub_score(query, d)) for i, d in enumerate(documents)),
        key=lambda s: (-s.score, s.index),
    )
    return ranked if top_k is None else ranked[:top_k]


class RerankStub:
    """POST /v1/rerank the way the API answers it; scripted replies are served first."""

    def __init__(self) -> None:
        self.base_url = ""
        self.requests: list[dict[str, Any]] = []
        self.script: list[tuple[int, Any, dict[str, str]]] = []
        self.max_documents: int | None = None  # more in one request -> "too many tokens" 400
        self.mutate: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None
        self.delay = 0.0
        #: Hold each request until this many are in flight (or 10 s pass): overlap without
        #: relying on timing.
        self.hold_until_in_flight: int | None = None
        self._enough_in_flight = asyncio.Event()
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
            if self.hold_until_in_flight is not None:
                if self.in_flight >= self.hold_until_in_flight:
                    self._enough_in_flight.set()
                try:
                    await asyncio.wait_for(self._enough_in_flight.wait(), 10)
                except TimeoutError:
                    pass
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.script:
                status, payload, headers = self.script.pop(0)
                if isinstance(payload, str):
                    return web.Response(status=status, text=payload, headers=headers)
                return web.json_response(payload, status=status, headers=headers)
            documents = body["documents"]
            if self.max_documents is not None and len(documents) > self.max_documents:
                detail = (
                    "Request to model failed. The max allowed tokens per submitted batch is "
                    "600000. Your batch has 700000 tokens. Please lower the number of tokens."
                )
                return web.json_response({"detail": detail}, status=400)
            data = [
                {"relevance_score": stub_score(body["query"], d), "index": i}
                for i, d in enumerate(documents)
            ]
            data.sort(key=lambda item: -item["relevance_score"])
            if body.get("top_k") is not None:
                data = data[: body["top_k"]]
            if self.mutate is not None:
                data = self.mutate(data)
            return web.json_response(
                {
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"total_tokens": sum(len(d) // 4 + 1 for d in documents)},
                }
            )
        finally:
            self.in_flight -= 1


@pytest.fixture
async def stub() -> AsyncIterator[RerankStub]:
    stub = RerankStub()
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/rerank", stub.handle)
    async with serve_app(app) as url:
        stub.base_url = f"{url}/v1"
        yield stub


@pytest.fixture
async def make(stub: RerankStub) -> AsyncIterator[Callable[..., VoyageReranker]]:
    made: list[VoyageReranker] = []

    def factory(**kwargs: Any) -> VoyageReranker:
        kwargs.setdefault("api_key", KEY)
        kwargs.setdefault("base_url", stub.base_url)
        kwargs.setdefault("retry", FAST)
        reranker = VoyageReranker(**kwargs)
        made.append(reranker)
        return reranker

    yield factory
    for reranker in made:
        await reranker.aclose()


DOCS = ["I live in Berlin", "I like green tea", "My seat is 14A", "Alice is vegetarian"]
QUERY = "where does the user live?"


# --- requests --------------------------------------------------------------------------------


async def test_request_carries_model_query_documents_top_k_and_truncation(
    stub: RerankStub, make
) -> None:
    results = await make().rerank(QUERY, DOCS, top_k=2)
    assert results == expected(QUERY, DOCS, 2)
    assert all(type(r.score) is float for r in results)
    (request,) = stub.requests
    assert request["path"] == "/v1/rerank"
    assert request["auth"] == f"Bearer {KEY}"
    body = request["body"]
    assert body["model"] == "rerank-2.5-lite"
    assert body["query"] == QUERY
    assert body["documents"] == DOCS
    assert body["top_k"] == 2
    assert body["truncation"] is True


async def test_without_top_k_every_document_comes_back_best_first(stub: RerankStub, make) -> None:
    results = await make(model="rerank-2.5").rerank(QUERY, DOCS)
    assert results == expected(QUERY, DOCS)
    assert sorted(r.index for r in results) == [0, 1, 2, 3]
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert stub.requests[0]["body"]["top_k"] is None
    assert stub.requests[0]["body"]["model"] == "rerank-2.5"


async def test_results_are_reordered_best_first_whatever_order_the_api_uses(
    stub: RerankStub, make
) -> None:
    stub.mutate = lambda data: list(reversed(data))
    assert await make().rerank(QUERY, DOCS) == expected(QUERY, DOCS)


async def test_top_k_above_the_document_count_asks_for_all(stub: RerankStub, make) -> None:
    results = await make().rerank(QUERY, DOCS[:3], top_k=10)
    assert results == expected(QUERY, DOCS[:3])
    assert stub.requests[0]["body"]["top_k"] == 3


async def test_no_documents_no_request(stub: RerankStub, make) -> None:
    assert await make().rerank(QUERY, []) == []
    assert stub.requests == []


async def test_a_query_over_the_model_limit_is_refused_before_sending(
    stub: RerankStub, make
) -> None:
    reranker = make(model="rerank-2-lite")  # 2,000 query tokens
    assert reranker.max_query_tokens == 2_000
    with pytest.raises(InvalidInputError, match="rerank-2-lite accepts at most 2,000"):
        await reranker.rerank("word " * 1_700, DOCS)  # 8,500 characters, ~2,125 tokens
    assert stub.requests == []
    assert await reranker.rerank("word " * 1_500, DOCS[:1]) == expected("word " * 1_500, DOCS[:1])


# --- batching --------------------------------------------------------------------------------


async def test_more_than_1000_documents_are_split_and_merged(stub: RerankStub, make) -> None:
    documents = [f"memory number {i}" for i in range(2500)]
    results = await make().rerank(QUERY, documents, top_k=5)
    assert results == expected(QUERY, documents, 5)
    sizes = sorted(len(r["body"]["documents"]) for r in stub.requests)
    assert sizes == [500, 1000, 1000]
    # Each request asks for its own best 5: the overall best 5 are among them.
    assert {r["body"]["top_k"] for r in stub.requests} == {5}
    sent = [
        d
        for r in sorted(stub.requests, key=lambda r: int(r["body"]["documents"][0].split()[-1]))
        for d in r["body"]["documents"]
    ]
    assert sent == documents


async def test_a_full_ranking_across_batches_indexes_the_original_list(
    stub: RerankStub, make
) -> None:
    documents = [f"note {i}" for i in range(2001)]
    results = await make().rerank(QUERY, documents)
    assert len(stub.requests) == 3
    assert results == expected(QUERY, documents)
    assert sorted(r.index for r in results) == list(range(2001))


async def test_the_token_budget_counts_the_query_once_per_document(stub: RerankStub, make) -> None:
    # A ~7,000-token query (under rerank-2.5-lite's 8,000) costs ~14,000 estimated tokens per
    # document against the 600K a request may carry: about 42 documents per request.
    query = "where " + "exactly " * 3_500
    documents = [f"short memory {i}" for i in range(100)]
    results = await make().rerank(query, documents, top_k=3)
    assert results == expected(query, documents, 3)
    assert len(stub.requests) >= 3
    budget = RERANK_MODELS["rerank-2.5-lite"].request_tokens
    for request in stub.requests:
        sent = request["body"]["documents"]
        cost = estimate_tokens(query) * len(sent) + sum(estimate_tokens(d) for d in sent)
        assert cost * TOKEN_SAFETY_FACTOR <= budget
    sent = [
        d
        for r in sorted(stub.requests, key=lambda r: int(r["body"]["documents"][0].split()[-1]))
        for d in r["body"]["documents"]
    ]
    assert sent == documents


def test_plan_keeps_order_and_isolates_an_oversized_document() -> None:
    documents = ["short", "x" * 4000, "short again", "tail", "end"]
    # "x" * 4000 is 1,000 estimated tokens, 2,002 with the query and the safety factor.
    plan = plan_rerank_batches("q", documents, token_budget=1_000, max_documents=2)
    assert plan == [range(0, 1), range(1, 2), range(2, 4), range(4, 5)]
    assert plan_rerank_batches("q", [], token_budget=10) == []
    assert plan_rerank_batches("q", ["a", "b", "c"], token_budget=10**6) == [range(0, 3)]


async def test_a_batch_the_api_counts_as_too_large_is_halved(stub: RerankStub, make) -> None:
    stub.max_documents = 3
    documents = [f"fact {i}" for i in range(10)]
    with capture_logs() as logs:
        results = await make().rerank(QUERY, documents, top_k=4)
    assert results == expected(QUERY, documents, 4)
    assert [e["documents"] for e in logs if e["event"] == "rerank_batch_split"] == [10, 5, 5]
    # 10 refused, 5 refused, 2 and 3 scored, the other 5 refused, 2 and 3 scored.
    assert [len(r["body"]["documents"]) for r in stub.requests] == [10, 5, 2, 3, 5, 2, 3]


async def test_one_document_the_api_counts_as_too_large_is_an_input_error(
    stub: RerankStub, make
) -> None:
    stub.max_documents = 0
    with pytest.raises(InvalidInputError, match="too large"):
        await make().rerank(QUERY, ["a very long document"])
    assert len(stub.requests) == 1


async def test_concurrent_requests_are_bounded(stub: RerankStub, make) -> None:
    stub.hold_until_in_flight = 2
    stub.delay = 0.2  # time for a third request to show up, were the bound not kept
    documents = [f"t{i}" for i in range(4500)]
    results = await make(max_concurrency=2).rerank(QUERY, documents, top_k=1)
    assert results == expected(QUERY, documents, 1)
    assert len(stub.requests) == 5
    assert stub.max_in_flight == 2


async def test_a_failing_batch_raises_its_own_error_not_a_group(stub: RerankStub, make) -> None:
    stub.script = [(400, {"detail": "Value 'x' is not valid."}, {})]
    documents = [f"t{i}" for i in range(2500)]
    with pytest.raises(BadResponseError) as caught:
        await make(retry=RetryPolicy(attempts=1)).rerank(QUERY, documents)
    assert isinstance(caught.value.__cause__, voyage_error.InvalidRequestError)


async def test_one_log_event_per_request_without_texts_or_key(stub: RerankStub, make) -> None:
    documents = [f"secret diary entry {i}" for i in range(1500)]
    with capture_logs() as logs:
        await make().rerank("what did I confess?", documents, top_k=3)
    events = [e for e in logs if e["event"] == "documents_reranked"]
    assert len(events) == 2
    for event in events:
        assert event["provider"] == "voyage" and event["model"] == "rerank-2.5-lite"
        assert event["documents"] in (1000, 500) and event["top_k"] == 3
        assert event["tokens"] > 0 and event["duration_ms"] >= 0
    flat = repr(logs)
    assert "secret diary" not in flat and "confess" not in flat and KEY not in flat


# --- failures --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        (429, {"detail": "slow down"}, {"Retry-After": "0"}),
        (500, {"detail": "boom"}, {}),
        (503, "overloaded", {}),
    ],
    ids=["429", "500", "503"],
)
async def test_transient_failures_are_retried_then_succeed(stub: RerankStub, make, reply) -> None:
    stub.script = [reply]
    assert await make().rerank(QUERY, DOCS, top_k=1) == expected(QUERY, DOCS, 1)
    assert len(stub.requests) == 2
    assert stub.requests[0]["body"] == stub.requests[1]["body"]


async def test_persistent_429_is_rate_limited_with_retry_after(stub: RerankStub, make) -> None:
    stub.script = [(429, {"detail": "slow down"}, {"Retry-After": "0"})] * 5
    with pytest.raises(RateLimitedError) as caught:
        await make().rerank(QUERY, DOCS)
    assert caught.value.retry_after == 0.0 and caught.value.status_code == 429
    assert caught.value.provider == "voyage"
    assert isinstance(caught.value.__cause__, voyage_error.RateLimitError)
    assert len(stub.requests) == FAST.attempts


async def test_persistent_500_exhausts_the_policy(stub: RerankStub, make) -> None:
    stub.script = [(500, {"detail": "boom"}, {})] * 10
    with pytest.raises(ProviderUnavailableError) as caught:
        await make().rerank(QUERY, DOCS)
    assert caught.value.status_code == 500
    assert len(stub.requests) == FAST.attempts


async def test_timeout_is_unavailable(stub: RerankStub, make) -> None:
    stub.delay = 0.5
    policy = RetryPolicy(attempts=2, initial_delay=0.001, max_delay=0.01)
    with pytest.raises(ProviderUnavailableError) as caught:
        await make(timeout=0.05, retry=policy).rerank(QUERY, DOCS)
    assert isinstance(caught.value.__cause__, voyage_error.Timeout)
    assert len(stub.requests) == 2


async def test_refused_connection_is_unavailable(make) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ProviderUnavailableError):
        await make(base_url=f"http://127.0.0.1:{port}/v1").rerank(QUERY, DOCS)


async def test_401_names_the_key_variable_and_is_not_retried(stub: RerankStub, make) -> None:
    stub.script = [(401, {"detail": "Provided API key is invalid."}, {})] * 3
    with pytest.raises(ProviderError) as caught:
        await make().rerank(QUERY, DOCS)
    assert type(caught.value) is ProviderError
    assert "VOYAGE_API_KEY" in str(caught.value) and KEY not in str(caught.value)
    assert caught.value.status_code == 401
    assert len(stub.requests) == 1


async def test_other_400_is_a_bad_response_and_not_retried(stub: RerankStub, make) -> None:
    stub.script = [(400, {"detail": "Value 'rerank-x' is not a valid model."}, {})]
    with pytest.raises(BadResponseError, match="rejected the request"):
        await make().rerank(QUERY, DOCS)
    assert len(stub.requests) == 1


def _set(position: int, **changes: Any) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def mutate(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        data[position].update(changes)
        return data

    return mutate


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_set(0, index=7), "cannot be parsed"),  # the SDK's own lookup fails
        (_set(0, index=-1), "index -1"),
        (_set(0, index="0"), "cannot be parsed"),
        (_set(0, index=True), "index True"),
        (lambda data: [data[0], data[0], *data[2:]], "twice"),
        (lambda data: data[:-1], "3 scores; expected 4"),
        (_set(0, relevance_score="high"), "'high'"),
        (_set(0, relevance_score=None), "None"),
        (_set(0, relevance_score=math.nan), "nan"),
        (lambda data: [{"index": d["index"]} for d in data], "cannot be parsed"),
    ],
    ids=[
        "index-out-of-range",
        "negative-index",
        "string-index",
        "bool-index",
        "duplicate-index",
        "missing-result",
        "string-score",
        "null-score",
        "nan-score",
        "no-score",
    ],
)
async def test_malformed_results_are_bad_responses(
    stub: RerankStub, make, mutate, message: str
) -> None:
    stub.mutate = mutate
    with pytest.raises(BadResponseError, match=message) as caught:
        await make().rerank(QUERY, DOCS)
    assert caught.value.provider == "voyage"
    assert len(stub.requests) == 1  # a malformed answer is not retried


@pytest.mark.parametrize(
    "payload",
    [
        {"object": "list", "usage": {"total_tokens": 1}},
        {"object": "list", "data": None, "usage": {"total_tokens": 1}},
        {"object": "list", "data": [{"index": i, "relevance_score": 0.5} for i in range(4)]},
        "this is not json",
    ],
    ids=["no-data", "null-data", "no-usage", "not-json"],
)
async def test_unusable_bodies_are_bad_responses(stub: RerankStub, make, payload) -> None:
    stub.script = [(200, payload, {})]
    with pytest.raises(BadResponseError):
        await make().rerank(QUERY, DOCS)


# --- configuration ---------------------------------------------------------------------------


def test_unknown_model_lists_the_choices() -> None:
    with pytest.raises(UnknownProviderError) as caught:
        VoyageReranker("rerank-99", api_key=KEY)
    assert set(caught.value.choices) == {
        "rerank-2.5",
        "rerank-2.5-lite",
        "rerank-2",
        "rerank-2-lite",
    }


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    with pytest.raises(MissingCredentialsError, match=r"voyage reranker.*VOYAGE_API_KEY"):
        VoyageReranker()
    with pytest.raises(MissingCredentialsError):
        VoyageReranker(api_key="   ")


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"timeout": 0}, "timeout"), ({"max_concurrency": 0}, "concurrency")]
)
def test_bad_options_are_configuration_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        VoyageReranker(api_key=KEY, **kwargs)


async def test_key_from_the_environment(
    stub: RerankStub, make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-from-env")
    await make(api_key=None).rerank(QUERY, DOCS)
    assert stub.requests[0]["auth"] == "Bearer pa-from-env"


def test_default_endpoints_follow_the_key() -> None:
    assert VoyageReranker(api_key="pa-x").base_url == "https://api.voyageai.com/v1"
    assert VoyageReranker(api_key="al-x").base_url == "https://ai.mongodb.com/v1"


def test_settings_build_the_voyage_reranker(monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = make_reranker(load_settings(reranker="voyage", voyage_api_key=KEY))
    assert isinstance(explicit, VoyageReranker) and explicit.model == "rerank-2.5-lite"
    monkeypatch.setenv("VOYAGE_API_KEY", KEY)
    monkeypatch.setenv("AGENT_MEMORY_RERANK_MODEL", "rerank-2.5")
    automatic = make_reranker(load_settings())  # reranker=auto, the default
    assert isinstance(automatic, VoyageReranker) and automatic.model == "rerank-2.5"
    assert make_reranker(load_settings(reranker="none")) is None


def test_settings_with_voyage_but_no_key_fail_at_start_up() -> None:
    with pytest.raises(MissingCredentialsError, match="VOYAGE_API_KEY"):
        make_reranker(load_settings(reranker="voyage"))
    with pytest.raises(UnknownProviderError, match=r"rerank-2\.5-lite"):
        make_reranker(load_settings(voyage_api_key=KEY, rerank_model="rerank-9"))


# --- the live-call guard ---------------------------------------------------------------------


async def test_live_call_guard_stops_requests_to_the_public_api(
    stub: RerankStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[object] = []

    async def refuse(*args: object, **kwargs: object) -> None:
        sent.append(args)
        raise AssertionError("a request was attempted")

    monkeypatch.setattr(api_requestor.APIRequestor, "arequest", refuse)
    with allow_live_calls(False):
        async with VoyageReranker(api_key=KEY, retry=FAST) as reranker:
            with pytest.raises(LiveCallBlockedError):
                await reranker.rerank(QUERY, DOCS)
    assert sent == [] and stub.requests == []


async def test_live_call_guard_lets_loopback_through(stub: RerankStub, make) -> None:
    with allow_live_calls(False):
        assert await make().rerank(QUERY, DOCS, top_k=1) == expected(QUERY, DOCS, 1)


# --- lifecycle -------------------------------------------------------------------------------


async def test_one_session_reused_and_closed(stub: RerankStub, make) -> None:
    reranker = make()
    await reranker.rerank(QUERY, DOCS)
    session = reranker._state.session
    await reranker.rerank("another question", DOCS)
    assert reranker._state.session is session and not session.closed
    assert voyageai.aiosession.get() is None  # set only around the reranker's own calls
    await reranker.aclose()
    await reranker.aclose()
    assert session.closed
    with pytest.raises(RuntimeError, match="closed"):
        await reranker.rerank(QUERY, DOCS)
    assert len(stub.requests) == 2


async def test_use_from_successive_event_loops(stub: RerankStub, make) -> None:
    reranker = make()

    def two_runs() -> tuple[list[RerankScore], list[RerankScore]]:
        # Neither run closes the reranker: the loop's shutdown must close its session.
        first = asyncio.run(reranker.rerank("one", DOCS))
        second = asyncio.run(reranker.rerank("two", DOCS))
        return first, second

    first, second = await asyncio.to_thread(two_runs)
    assert first == expected("one", DOCS) and second == expected("two", DOCS)
    assert reranker._state.session.closed

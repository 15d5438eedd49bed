"""The Reranker interface: input validation, batching and merging in the base class, the
FakeReranker, and the reranker settings."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import subprocess
import sys
import textwrap
from typing import Any, ClassVar

import pytest

from agent_memory.config import load_settings
from agent_memory.errors import BadResponseError, ConfigurationError, InvalidInputError
from agent_memory.providers.registry import make_reranker
from agent_memory.providers.rerankers import FakeReranker, Reranker, RerankScore
from agent_memory.providers.rerankers.base import merge_best_first
from agent_memory.providers.rerankers.fake import overlap_tokens

DOCS = ["I like green tea", "I live in Berlin", "My seat is 14A", "Green tea in Berlin"]


# --- input validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (None, "query must be a str, got NoneType"),
        (42, "query must be a str, got int"),
        (b"where do I live?", "query must be a str, got bytes"),
        ("", "query is empty"),
        ("  \n\t", "query is empty"),
        ("x" * 32_001, "query has 32001 characters; the limit is 32000"),
    ],
    ids=["none", "int", "bytes", "empty", "whitespace", "too-long"],
)
async def test_bad_queries_are_refused_before_the_provider(query: Any, message: str) -> None:
    reranker = FakeReranker()
    with pytest.raises(InvalidInputError, match=message):
        await reranker.rerank(query, DOCS)
    with pytest.raises(InvalidInputError, match=message):
        await reranker.rerank(query, [])  # even with nothing to rank
    assert reranker.calls == []


@pytest.mark.parametrize(
    ("documents", "message"),
    [
        ("I live in Berlin", "not a single string"),
        (b"I live in Berlin", "not a single string"),
        ({"I live in Berlin"}, "sequence of strings such as a list, got set"),
        ((d for d in DOCS), "got generator"),
        (None, "got NoneType"),
        (["fine", 3], r"documents\[1\] must be a str, got int"),
        (["fine", None], r"documents\[1\] must be a str, got NoneType"),
        ([b"bytes"], r"documents\[0\] must be a str, got bytes"),
        (["fine", ""], r"documents\[1\] is empty"),
        (["fine", "ok", " \n "], r"documents\[2\] is empty"),
    ],
    ids=[
        "str",
        "bytes",
        "set",
        "generator",
        "none",
        "int-item",
        "none-item",
        "bytes-item",
        "empty-item",
        "blank-item",
    ],
)
async def test_bad_documents_are_refused_before_the_provider(documents: Any, message: str) -> None:
    reranker = FakeReranker()
    with pytest.raises(InvalidInputError, match=message):
        await reranker.rerank("where do I live?", documents)
    assert reranker.calls == []


@pytest.mark.parametrize(
    ("top_k", "message"),
    [
        (0, "top_k must be an int >= 1, got 0"),
        (-3, "top_k must be an int >= 1, got -3"),
        (True, "top_k must be an int >= 1, got True"),
        (False, "top_k must be an int >= 1, got False"),
        (2.0, "top_k must be an int >= 1, got 2.0"),
        ("2", "top_k must be an int >= 1, got '2'"),
    ],
)
async def test_bad_top_k_is_refused_before_the_provider(top_k: Any, message: str) -> None:
    reranker = FakeReranker()
    with pytest.raises(InvalidInputError, match=message):
        await reranker.rerank("where do I live?", DOCS, top_k=top_k)
    assert reranker.calls == []


def test_invalid_input_is_a_value_error() -> None:
    assert issubclass(InvalidInputError, ValueError)


async def test_no_documents_no_call() -> None:
    reranker = FakeReranker()
    assert await reranker.rerank("where do I live?", []) == []
    assert await reranker.rerank("where do I live?", (), top_k=3) == []
    assert reranker.calls == []


async def test_any_sequence_of_strings_is_accepted() -> None:
    reranker = FakeReranker()
    from_tuple = await reranker.rerank("where do I live?", tuple(DOCS))
    from_list = await reranker.rerank("where do I live?", DOCS)
    assert from_tuple == from_list and len(from_list) == 4


async def test_a_query_over_the_token_limit_is_refused() -> None:
    class Limited(FakeReranker):
        max_query_tokens = 10

    reranker = Limited()
    with pytest.raises(InvalidInputError, match="about 11 tokens; fake model token-overlap"):
        await reranker.rerank("x" * 44, DOCS)
    assert reranker.calls == []
    assert len(await reranker.rerank("x" * 40, DOCS)) == 4


# --- FakeReranker ----------------------------------------------------------------------------


async def test_fake_scores_the_share_of_query_words_a_document_has() -> None:
    results = await FakeReranker().rerank("Green tea in Berlin?", DOCS)
    # Query tokens {green, tea, berlin}: "Green tea in Berlin" has all three, "I like green
    # tea" two, "I live in Berlin" one, "My seat is 14A" none.
    assert results == [
        RerankScore(3, 1.0),
        RerankScore(0, 2 / 3),
        RerankScore(1, 1 / 3),
        RerankScore(2, 0.0),
    ]


async def test_fake_top_k_and_ties_keep_the_documents_order() -> None:
    reranker = FakeReranker()
    documents = ["tea time", "coffee", "green tea", "tea"]
    results = await reranker.rerank("tea", documents, top_k=2)
    assert results == [RerankScore(0, 1.0), RerankScore(2, 1.0)]
    assert reranker.calls == [("tea", 4, 2)]
    assert await reranker.rerank("tea", documents, top_k=10) == [
        RerankScore(0, 1.0),
        RerankScore(2, 1.0),
        RerankScore(3, 1.0),
        RerankScore(1, 0.0),
    ]
    assert reranker.calls[-1] == ("tea", 4, 4)  # top_k is never more than the documents


def test_fake_tokens_drop_stop_words_and_split_cjk() -> None:
    assert overlap_tokens("Where do I live?") == {"live"}
    assert overlap_tokens("我喜欢绿茶") == {"我", "喜", "欢", "绿", "茶"}
    assert overlap_tokens("who are you?") == {"who", "are", "you"}  # only stop words: kept
    assert FakeReranker.score("我喜欢绿茶", "我住在柏林") == pytest.approx(0.2)
    assert FakeReranker.score("???", "anything") == 0.0


async def test_fake_is_deterministic_and_order_independent() -> None:
    first = await FakeReranker().rerank("where is my seat?", DOCS)
    assert first == await FakeReranker().rerank("where is my seat?", DOCS)
    assert first[0] == RerankScore(2, 1.0)  # "My seat is 14A"
    reordered = list(reversed(DOCS))
    second = await FakeReranker().rerank("where is my seat?", reordered)
    assert second[0] == RerankScore(1, 1.0) and reordered[1] == DOCS[2]


# --- batching and merging in the base class ---------------------------------------------------


async def test_batches_are_merged_best_first_with_original_indices() -> None:
    # Documents 0, 3, 6 and 9 have both query words (1.0), the others one (0.5).
    documents = [f"note {i} about tea" if i % 3 == 0 else f"note {i}" for i in range(11)]
    whole = await FakeReranker().rerank("tea note", documents, top_k=5)
    assert [r.index for r in whole] == [0, 3, 6, 9, 1]
    batched = FakeReranker(max_documents_per_request=3)
    assert await batched.rerank("tea note", documents, top_k=5) == whole
    assert [(size, k) for _, size, k in batched.calls] == [(3, 3), (3, 3), (3, 3), (2, 2)]
    batched.calls.clear()
    assert await batched.rerank("tea note", documents, top_k=2) == whole[:2]
    # Each request asks only for its own best 2: the best 2 overall are among them.
    assert [(size, k) for _, size, k in batched.calls] == [(3, 2), (3, 2), (3, 2), (2, 2)]
    full = await batched.rerank("tea note", documents)
    assert full == await FakeReranker().rerank("tea note", documents)
    assert sorted(r.index for r in full) == list(range(11))


async def test_batches_run_concurrently() -> None:
    arrived = 0
    everyone = asyncio.Event()

    class Waiting(FakeReranker):
        async def _rerank(self, query, documents, *, top_k):
            nonlocal arrived
            arrived += 1
            if arrived == 3:
                everyone.set()
            # A sequential base class would leave the first batch waiting here alone.
            await asyncio.wait_for(everyone.wait(), 10)
            return await super()._rerank(query, documents, top_k=top_k)

    documents = ["tea", "b", "c", "tea", "e"]  # three requests: 2, 2 and 1 documents
    results = await Waiting(max_documents_per_request=2).rerank("tea", documents)
    assert [r.index for r in results[:2]] == [0, 3]
    assert arrived == 3


async def test_a_failing_batch_raises_its_own_error() -> None:
    class Failing(FakeReranker):
        async def _rerank(self, query, documents, *, top_k):
            if "boom" in documents:
                raise BadResponseError("the second batch failed", provider="fake")
            return await super()._rerank(query, documents, top_k=top_k)

    with pytest.raises(BadResponseError, match="second batch"):
        await Failing(max_documents_per_request=2).rerank("q", ["a", "b", "boom", "c"])


class Scripted(Reranker):
    """A reranker whose one request returns whatever the test gives it."""

    provider: ClassVar[str] = "scripted"

    def __init__(self, scores: Any) -> None:
        self.model = "script"
        self.scores = scores

    async def _rerank(self, query, documents, *, top_k):
        return self.scores


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ([RerankScore(0, 0.5)], "returned 1 scores; expected 2 for 2 documents"),
        ("not a list", "returned str scores"),
        ([RerankScore(0, 0.5), RerankScore(2, 0.4)], "index 2 for 2 documents"),
        ([RerankScore(0, 0.5), RerankScore(-1, 0.4)], "index -1 for 2 documents"),
        ([RerankScore(0, 0.5), RerankScore(True, 0.4)], "index True"),
        ([RerankScore(0, 0.5), RerankScore(0, 0.4)], "index 0 twice"),
        ([RerankScore(0, 0.5), RerankScore(1, math.inf)], "score inf"),
        ([RerankScore(0, 0.5), RerankScore(1, "0.4")], "score '0.4'"),
        ([RerankScore(0, 0.5), {"index": 1, "score": 0.4}], "index None"),
    ],
)
async def test_what_a_provider_returns_is_checked(scores: Any, message: str) -> None:
    with pytest.raises(BadResponseError, match=message) as caught:
        await Scripted(scores).rerank("q", ["a", "b"])
    assert caught.value.provider == "scripted"


async def test_integer_scores_become_floats_and_are_sorted() -> None:
    results = await Scripted([RerankScore(0, 0), RerankScore(1, 3)]).rerank("q", ["a", "b"])
    assert results == [RerankScore(1, 3.0), RerankScore(0, 0.0)]
    assert all(type(r.score) is float for r in results)


def test_merge_maps_positions_and_cuts_to_top_k() -> None:
    parts = [
        (range(0, 2), [RerankScore(1, 0.2), RerankScore(0, 0.9)]),
        (range(2, 5), [RerankScore(2, 0.9), RerankScore(0, 0.5)]),
    ]
    assert merge_best_first(parts, top_k=3) == [
        RerankScore(0, 0.9),
        RerankScore(4, 0.9),
        RerankScore(2, 0.5),
    ]
    assert len(merge_best_first(parts, top_k=None)) == 4


def test_rerank_score_is_a_frozen_slotted_value() -> None:
    score = RerankScore(1, 0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        score.score = 1.0  # type: ignore[misc]
    assert not hasattr(score, "__dict__")
    assert score == RerankScore(1, 0.5) and hash(score) == hash(RerankScore(1, 0.5))


async def test_context_manager_and_repr() -> None:
    async with FakeReranker() as reranker:
        assert await reranker.rerank("tea", ["tea"]) == [RerankScore(0, 1.0)]
    await reranker.aclose()
    assert repr(reranker) == "FakeReranker(fake/token-overlap)"
    with pytest.raises(ValueError, match="at least 1"):
        FakeReranker(max_documents_per_request=0)


# --- settings and the factory -----------------------------------------------------------------


def test_reranker_settings_defaults_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert (settings.reranker, settings.rerank_model) == ("auto", "rerank-2.5-lite")
    monkeypatch.setenv("AGENT_MEMORY_RERANKER", "fake")
    monkeypatch.setenv("AGENT_MEMORY_RERANK_MODEL", "rerank-2.5")
    settings = load_settings()
    assert (settings.reranker, settings.rerank_model) == ("fake", "rerank-2.5")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"reranker": "cohere"}, "reranker: unknown reranker 'cohere'; choose one of: auto, none"),
        ({"rerank_model": ""}, "rerank_model"),
    ],
)
def test_bad_reranker_settings_are_configuration_errors(overrides, message) -> None:
    with pytest.raises(ConfigurationError, match=message):
        load_settings(**overrides)


def test_factory_without_a_key_or_switched_off_builds_nothing() -> None:
    assert make_reranker(load_settings()) is None  # auto without VOYAGE_API_KEY
    assert make_reranker(load_settings(voyage_api_key="  ")) is None
    assert make_reranker(load_settings(reranker="none", voyage_api_key="pa-key")) is None
    fake = make_reranker(load_settings(reranker="fake"))
    assert isinstance(fake, FakeReranker)


def test_without_the_voyage_package(tmp_path) -> None:
    """``auto`` with a key but no ``voyageai`` is off (with a warning); an explicit ``voyage``
    says what to install; the package imports either way."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["voyageai"] = None
        import agent_memory.providers.rerankers as rerankers
        from agent_memory.config import load_settings
        from agent_memory.errors import DependencyMissingError
        from agent_memory.providers.registry import make_reranker
        from structlog.testing import capture_logs
        assert "agent_memory.providers.rerankers.voyage" not in sys.modules
        with capture_logs() as logs:
            assert make_reranker(load_settings(voyage_api_key="pa-key")) is None
        assert [e["event"] for e in logs] == ["reranker_disabled"], logs
        assert "agent-memory[voyage]" in logs[0]["reason"]
        for attempt in (
            lambda: make_reranker(load_settings(reranker="voyage", voyage_api_key="pa-key")),
            lambda: rerankers.VoyageReranker,
        ):
            try:
                attempt()
            except DependencyMissingError as exc:
                assert "agent-memory[voyage]" in str(exc), exc
            else:
                raise AssertionError("expected DependencyMissingError")
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.stdout.strip() == "ok", result.stderr[-2000:]

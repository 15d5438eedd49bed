"""Any LangChain embeddings object, or an embedding function, as this framework's embedder."""

from __future__ import annotations

import math

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from agent_memory.errors import InvalidInputError, ProviderError
from agent_memory.providers.embedders import LangChainEmbedder


async def test_a_langchain_embeddings_object_embeds_documents_and_queries():
    wrapped = DeterministicFakeEmbedding(size=16)
    embedder = LangChainEmbedder(wrapped, dimensions=16)
    documents = await embedder.embed_documents(["red apple", "green pear"])
    query = await embedder.embed_query("red apple")
    assert documents.shape == (2, 16) and query.shape == (16,)
    assert np.allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-5)
    expected = np.asarray(wrapped.embed_query("red apple"), dtype=np.float32)
    assert np.allclose(query, expected / np.linalg.norm(expected), atol=1e-5)
    assert embedder.wrapped is wrapped
    assert embedder.signature.provider == "langchain"
    assert embedder.signature.model == "DeterministicFakeEmbedding"


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_plain_function_sync_or_async_is_enough(kind):
    def embed(texts):
        return [[float(len(t)), 1.0, 0.0] for t in texts]

    async def aembed(texts):
        return embed(texts)

    embedder = LangChainEmbedder(embed if kind == "sync" else aembed, dimensions=3, model="len")
    vectors = await embedder.embed_documents(["ab", "abcd"])
    assert vectors.shape == (2, 3)
    assert math.isclose(float(vectors[1][0]), 4 / math.sqrt(17), rel_tol=1e-6)
    assert embedder.model == "len"


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ([[1.0, 2.0]], "shape"),  # one vector for two texts
        ([[1.0, 2.0, 3.0], [1.0, 2.0]], "shape"),
        ([[1.0, float("nan"), 3.0], [1.0, 1.0, 1.0]], "NaN"),
    ],
)
async def test_wrong_vectors_are_a_provider_error(returned, message):
    embedder = LangChainEmbedder(lambda texts: returned, dimensions=3, model="bad")
    with pytest.raises(ProviderError, match=message):
        await embedder.embed_documents(["a", "b"])


async def test_a_failing_embeddings_object_is_a_provider_error():
    def broken(texts):
        raise ConnectionError("down")

    embedder = LangChainEmbedder(broken, dimensions=3, model="broken")
    with pytest.raises(ProviderError, match="ConnectionError"):
        await embedder.embed_query("x")


@pytest.mark.parametrize("bad", ["openai:text-embedding-3-small", 3, None])
def test_something_else_is_refused(bad):
    with pytest.raises(InvalidInputError, match="embeddings must be"):
        LangChainEmbedder(bad, dimensions=3)


def test_dimensions_are_checked():
    with pytest.raises(InvalidInputError, match="dimensions"):
        LangChainEmbedder(DeterministicFakeEmbedding(size=4), dimensions=0)

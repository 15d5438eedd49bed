"""The benchmarks' vector cache: a rerun answers from disk exactly what the embedder gave."""

from __future__ import annotations

import numpy as np
import pytest

from agent_memory.bench.vector_cache import CachedEmbedder
from agent_memory.providers.embedders.fake import FakeEmbedder


class Counting(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[tuple[str, str]] = []

    async def _embed(self, texts, *, kind):
        self.texts += [(kind, text) for text in texts]
        return await super()._embed(texts, kind=kind)


async def test_a_rerun_embeds_nothing_and_gets_the_same_vectors(tmp_path):
    first = Counting()
    cached = CachedEmbedder(first, tmp_path)
    assert cached.signature == first.signature
    documents = await cached.embed_documents(["I live in Oslo", "I play chess", "I live in Oslo"])
    query = await cached.embed_query("I live in Oslo")  # a query is not a document
    assert first.texts == [
        ("document", "I live in Oslo"),
        ("document", "I play chess"),
        ("query", "I live in Oslo"),
    ]
    await cached.aclose()

    second = Counting()
    again = CachedEmbedder(second, tmp_path)
    assert np.array_equal(
        await again.embed_documents(["I live in Oslo", "I play chess"]), documents[:2]
    )
    assert np.array_equal(await again.embed_query("I live in Oslo"), query)
    assert second.texts == [] and (again.hits, again.misses) == (3, 0)
    await again.embed_documents(["something new"])
    assert second.texts == [("document", "something new")]


async def test_another_embedder_has_a_file_of_its_own(tmp_path):
    await CachedEmbedder(FakeEmbedder(), tmp_path).aclose()
    small = CachedEmbedder(FakeEmbedder(dimensions=64), tmp_path)
    await small.embed_documents(["x"])
    await small.aclose()
    big = CachedEmbedder(FakeEmbedder(), tmp_path)
    assert (await big.embed_documents(["x"])).shape == (1, 256)
    assert big.misses == 1


async def test_a_broken_file_is_an_error_not_an_empty_cache(tmp_path):
    cached = CachedEmbedder(FakeEmbedder(), tmp_path)
    await cached.embed_documents(["x"])
    await cached.aclose()
    cached.path.write_bytes(b"not a numpy file")
    with pytest.raises(ValueError, match=r"is not a vector cache .*; delete it to embed again"):
        CachedEmbedder(FakeEmbedder(), tmp_path)


async def test_input_is_checked_as_the_embedder_checks_it(tmp_path):
    from agent_memory.errors import InvalidInputError

    cached = CachedEmbedder(FakeEmbedder(), tmp_path)
    with pytest.raises(InvalidInputError):
        await cached.embed_documents(["   "])
    with pytest.raises(InvalidInputError):
        await cached.embed_documents("a string, not a list")

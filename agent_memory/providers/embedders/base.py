"""The embedder interface: text in, L2-normalised float32 vectors out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from agent_memory.errors import InvalidInputError

__all__ = ["Embedder", "EmbeddingSignature", "Similarity", "validate_texts"]

Similarity = Literal["cosine", "dotProduct", "euclidean"]


@dataclass(frozen=True, slots=True)
class EmbeddingSignature:
    """What stored vectors depend on: vectors made under one signature are not comparable
    with vectors made under another."""

    provider: str
    model: str
    dimensions: int
    similarity: Similarity = "cosine"

    def describe(self) -> str:
        return f"{self.provider}/{self.model} ({self.dimensions} dims, {self.similarity})"


def validate_texts(texts: Sequence[str], *, max_chars: int) -> list[str]:
    """Check a batch of texts: every item a non-blank ``str`` no longer than ``max_chars``."""
    if isinstance(texts, (str, bytes)):
        raise InvalidInputError("texts must be a sequence of strings, not a single string")
    checked = list(texts)
    for position, text in enumerate(checked):
        if not isinstance(text, str):
            raise InvalidInputError(f"texts[{position}] must be a str, got {type(text).__name__}")
        if not text.strip():
            raise InvalidInputError(f"texts[{position}] is empty; there is nothing to embed")
        if len(text) > max_chars:
            raise InvalidInputError(
                f"texts[{position}] has {len(text)} characters; the limit is {max_chars}"
            )
    return checked


def normalise(matrix: np.ndarray) -> np.ndarray:
    """Return ``matrix`` as float32 rows of unit length (zero rows stay zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


class Embedder(ABC):
    """Turns text into vectors for storage (documents) and for search (queries).

    Implementations return L2-normalised ``float32`` arrays, so cosine similarity is a dot
    product. ``embed_documents`` takes any number of texts and batches them within the
    provider's limits.

    >>> import asyncio
    >>> from agent_memory.providers import FakeEmbedder
    >>> vectors = asyncio.run(FakeEmbedder().embed_documents(["I live in Berlin"]))
    >>> vectors.shape
    (1, 256)
    """

    provider: ClassVar[str]
    #: Longest text accepted, in characters; longer input is an error rather than silently cut.
    max_chars: ClassVar[int] = 32_000
    #: Cosine similarity from which a stored text counts as a strong match for a query, as
    #: measured on LoCoMo by ``python -m agent_memory.bench.routing``; None when not measured
    #: (routing then uses its generic default). Embedders differ widely here: e5 models put
    #: unrelated sentences above 0.75, hashing vectors keep related ones below 0.4.
    strong_match_similarity: ClassVar[float | None] = None

    model: str
    dimensions: int
    similarity: Similarity = "cosine"

    @property
    def signature(self) -> EmbeddingSignature:
        return EmbeddingSignature(self.provider, self.model, self.dimensions, self.similarity)

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts to be stored. Returns an array of shape ``(len(texts), dimensions)``."""
        checked = validate_texts(texts, max_chars=self.max_chars)
        if not checked:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return normalise(await self._embed(checked, kind="document"))

    async def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query. Returns an array of shape ``(dimensions,)``."""
        (checked,) = validate_texts([text], max_chars=self.max_chars)
        return normalise(await self._embed([checked], kind="query"))[0]

    @abstractmethod
    async def _embed(self, texts: list[str], *, kind: Literal["document", "query"]) -> np.ndarray:
        """Embed validated, non-empty ``texts``; return a ``(len(texts), dimensions)`` array."""

    async def aclose(self) -> None:
        """Release clients the embedder opened. Safe to call more than once."""

    async def __aenter__(self) -> Embedder:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.signature.describe()})"

"""Any LangChain ``Embeddings`` object (or a plain embedding function) as this framework's
:class:`Embedder`, so a LangGraph application keeps the embeddings it already has.

>>> from langchain_openai import OpenAIEmbeddings                               # doctest: +SKIP
>>> embedder = LangChainEmbedder(OpenAIEmbeddings(model="text-embedding-3-small"), dimensions=1536)

The wrapped object is kept as ``embedder.wrapped``. Accepted: an object with
``aembed_documents``/``aembed_query`` or ``embed_documents``/``embed_query`` (sync ones run in
a worker thread), or a function, sync or async, from a list of texts to a list of vectors.
Vectors are checked (count, dimensions, finite numbers) and L2-normalised.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import numpy as np

from agent_memory.checks import check_id, check_int
from agent_memory.errors import InvalidInputError, ProviderError
from agent_memory.providers.embedders.base import Embedder

__all__ = ["LangChainEmbedder"]


class LangChainEmbedder(Embedder):
    """A LangChain embeddings object, or an embedding function, behind :class:`Embedder`.

    ``model`` names the model in the embedding signature stored with the vectors (default: the
    wrapped object's ``model`` attribute, else its class name): vectors from two signatures are
    never compared, so name it when one class serves several models.
    """

    provider: ClassVar[str] = "langchain"

    def __init__(self, embeddings: Any, *, dimensions: int, model: str | None = None) -> None:
        if not callable(embeddings) and not (
            hasattr(embeddings, "embed_documents") or hasattr(embeddings, "aembed_documents")
        ):
            raise InvalidInputError(
                "embeddings must be a LangChain Embeddings object or a function from a list of "
                f"texts to a list of vectors, got {type(embeddings).__name__}"
            )
        self.wrapped = embeddings
        self.dimensions = check_int(dimensions, "dimensions", minimum=1, maximum=16_384)
        named = (
            model or getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
        )
        if not isinstance(named, str) or not named:
            named = getattr(embeddings, "__name__", None) or type(embeddings).__name__
        self.model = check_id(named, "model")

    async def _embed(self, texts: list[str], *, kind: Literal["document", "query"]) -> np.ndarray:
        try:
            vectors = await self._call(texts, kind)
        except (InvalidInputError, ProviderError):
            raise
        except Exception as exc:
            raise ProviderError(f"the LangChain embeddings failed: {type(exc).__name__}") from exc
        try:
            matrix = np.asarray(vectors, dtype=np.float32)
        except (TypeError, ValueError):  # ragged or not numbers
            raise ProviderError(
                f"the LangChain embeddings returned something other than {len(texts)} vectors "
                f"of {self.dimensions} numbers (wrong shape)"
            ) from None
        if matrix.ndim != 2 or matrix.shape != (len(texts), self.dimensions):
            raise ProviderError(
                f"the LangChain embeddings returned shape {matrix.shape} for {len(texts)} texts; "
                f"expected ({len(texts)}, {self.dimensions})"
            )
        if not np.isfinite(matrix).all():
            raise ProviderError("the LangChain embeddings returned NaN or infinite values")
        return matrix

    async def _call(self, texts: list[str], kind: str) -> Any:
        wrapped = self.wrapped
        if kind == "query" and len(texts) == 1:
            single = getattr(wrapped, "aembed_query", None)
            if single is not None:
                return [await single(texts[0])]
            single = getattr(wrapped, "embed_query", None)
            if single is not None:
                return [await asyncio.to_thread(single, texts[0])]
        many = getattr(wrapped, "aembed_documents", None)
        if many is not None:
            return await many(texts)
        many = getattr(wrapped, "embed_documents", None)
        if many is not None:
            return await asyncio.to_thread(many, texts)
        function: Callable[[list[str]], Any] = wrapped
        if inspect.iscoroutinefunction(function):
            return await function(texts)
        result = await asyncio.to_thread(function, texts)
        return await result if inspect.isawaitable(result) else result

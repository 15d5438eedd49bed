"""The reranker interface: a query and candidate texts in, relevance scores best first out.

A reranker is an optional second stage after retrieval: a cross-encoder reads the query and
each candidate together and scores how well the candidate answers it, which ranks better than
comparing separately made embeddings, at the cost of one provider call per search.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from agent_memory._tokens import estimate_tokens
from agent_memory.checks import check_int, is_int, is_number
from agent_memory.errors import BadResponseError, InvalidInputError
from agent_memory.providers._concurrency import gather_or_raise_first

__all__ = [
    "RerankScore",
    "Reranker",
    "merge_best_first",
    "validate_documents",
    "validate_query",
    "validate_top_k",
]


@dataclass(frozen=True, slots=True)
class RerankScore:
    """One ranked document: ``index`` into the documents given to
    :meth:`Reranker.rerank`, ``score`` the model's relevance score (higher is better; 0-1 for
    Voyage and the fake)."""

    index: int
    score: float


def validate_query(query: object, *, max_chars: int) -> str:
    """Check a query: a non-blank ``str`` no longer than ``max_chars``."""
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a str, got {type(query).__name__}")
    if not query.strip():
        raise InvalidInputError("query is empty; there is nothing to rank the documents against")
    if len(query) > max_chars:
        raise InvalidInputError(f"query has {len(query)} characters; the limit is {max_chars}")
    return query


def validate_documents(documents: object) -> list[str]:
    """Check the candidates: a sequence (indices refer to its order) of non-blank ``str``."""
    if isinstance(documents, str | bytes):
        raise InvalidInputError("documents must be a sequence of strings, not a single string")
    if not isinstance(documents, Sequence):
        raise InvalidInputError(
            f"documents must be a sequence of strings such as a list, got "
            f"{type(documents).__name__}; results are indices into its order"
        )
    checked = list(documents)
    for position, document in enumerate(checked):
        if not isinstance(document, str):
            raise InvalidInputError(
                f"documents[{position}] must be a str, got {type(document).__name__}"
            )
        if not document.strip():
            raise InvalidInputError(f"documents[{position}] is empty; there is nothing to rank")
    return checked


def validate_top_k(top_k: object) -> int | None:
    """Check ``top_k``: ``None`` (every document) or a positive ``int`` (not a ``bool``)."""
    if top_k is None:
        return None
    return check_int(top_k, "top_k", minimum=1)


def merge_best_first(
    parts: Iterable[tuple[Sequence[int], Sequence[RerankScore]]], *, top_k: int | None
) -> list[RerankScore]:
    """Merge the scores of several batches into one list, best first, at most ``top_k`` long.

    Each part is ``(positions, scores)``: the scores' ``index`` points into ``positions``,
    which maps it to the index in the whole list. Equal scores keep the original order.
    """
    merged = [
        RerankScore(positions[score.index], score.score)
        for positions, scores in parts
        for score in scores
    ]
    merged.sort(key=lambda item: (-item.score, item.index))
    return merged if top_k is None else merged[:top_k]


class Reranker(ABC):
    """Scores candidate texts against a query and returns them best first.

    :meth:`rerank` validates its input, splits the documents into requests within the
    provider's limits (:meth:`_plan_batches`), sends each through :meth:`_rerank` (batches run
    concurrently), checks what came back and merges it, best first, with indices into the
    original list. Implementations provide :meth:`_rerank` for one request.

    >>> import asyncio
    >>> from agent_memory.providers.rerankers import FakeReranker
    >>> docs = ["I like green tea", "I live in Berlin"]
    >>> asyncio.run(FakeReranker().rerank("where do I live?", docs, top_k=1))
    [RerankScore(index=1, score=1.0)]
    """

    provider: ClassVar[str]
    #: Longest query accepted, in characters; longer input is an error rather than cut.
    max_query_chars: ClassVar[int] = 32_000
    #: Most documents one request may carry; ``None``: no limit.
    max_documents_per_request: int | None = None
    #: Most tokens (:func:`~agent_memory._tokens.estimate_tokens`) a query may have;
    #: ``None``: only ``max_query_chars`` applies.
    max_query_tokens: int | None = None

    model: str

    async def rerank(
        self, query: str, documents: Sequence[str], *, top_k: int | None = None
    ) -> list[RerankScore]:
        """Score ``documents`` against ``query``; return the best ``top_k`` (all when
        ``None``), best first, each with its index into ``documents``.

        An empty ``documents`` returns ``[]`` without a provider call.
        """
        checked_query = validate_query(query, max_chars=self.max_query_chars)
        checked = validate_documents(documents)
        k = validate_top_k(top_k)
        self._check_query_tokens(checked_query)
        if not checked:
            return []
        batches = self._plan_batches(checked_query, checked)
        # The best k overall are among the best k of each batch, so no batch returns more.
        results = await gather_or_raise_first(
            [self._rerank_batch(checked_query, checked, batch, k) for batch in batches]
        )
        return merge_best_first(zip(batches, results, strict=True), top_k=k)

    def _check_query_tokens(self, query: str) -> None:
        limit = self.max_query_tokens
        if limit is None:
            return
        tokens = estimate_tokens(query)
        if tokens > limit:
            raise InvalidInputError(
                f"query has about {tokens:,} tokens; {self.provider} model {self.model} "
                f"accepts at most {limit:,}"
            )

    def _plan_batches(self, query: str, documents: list[str]) -> list[range]:
        """Split the documents, in order, into the ranges of positions one request carries."""
        size = self.max_documents_per_request or len(documents)
        return [
            range(start, min(start + size, len(documents)))
            for start in range(0, len(documents), size)
        ]

    async def _rerank_batch(
        self, query: str, documents: list[str], batch: range, top_k: int | None
    ) -> list[RerankScore]:
        expected = len(batch) if top_k is None else min(top_k, len(batch))
        scores = await self._rerank(
            query, [documents[i] for i in batch], top_k=None if top_k is None else expected
        )
        return self._checked(scores, size=len(batch), expected=expected)

    def _checked(self, scores: object, *, size: int, expected: int) -> list[RerankScore]:
        """``scores`` if they are what one request for ``size`` documents must return."""
        if not isinstance(scores, list) or len(scores) != expected:
            count = len(scores) if isinstance(scores, list) else type(scores).__name__
            raise BadResponseError(
                f"{self.provider} returned {count} scores; expected {expected} "
                f"for {size} documents",
                provider=self.provider,
            )
        seen: set[int] = set()
        checked = []
        for item in scores:
            index, score = getattr(item, "index", None), getattr(item, "score", None)
            if not is_int(index) or not 0 <= index < size:
                raise BadResponseError(
                    f"{self.provider} returned document index {index!r} for {size} documents",
                    provider=self.provider,
                )
            if index in seen:
                raise BadResponseError(
                    f"{self.provider} returned document index {index} twice",
                    provider=self.provider,
                )
            if not is_number(score) or not math.isfinite(score):
                raise BadResponseError(
                    f"{self.provider} returned the relevance score {score!r}; expected a "
                    "finite number",
                    provider=self.provider,
                )
            seen.add(index)
            checked.append(RerankScore(index, float(score)))
        return checked

    @abstractmethod
    async def _rerank(
        self, query: str, documents: list[str], *, top_k: int | None
    ) -> list[RerankScore]:
        """Score validated, non-empty ``documents`` against ``query`` in one request.

        Return ``min(top_k, len(documents))`` scores (all of them when ``top_k`` is ``None``),
        each with its index into ``documents``, in any order.
        """

    async def aclose(self) -> None:
        """Release clients the reranker opened. Safe to call more than once."""

    async def __aenter__(self) -> Reranker:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.provider}/{self.model})"

"""A deterministic reranker for tests: scores by the words a document shares with the query."""

from __future__ import annotations

import re
from typing import ClassVar

from agent_memory.providers.rerankers.base import Reranker, RerankScore

__all__ = ["FakeReranker"]

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    "a an and are as at be by did do does for from has have i in is it me my of on or our "
    "the to was we what when where which who why with you your".split()
)


def overlap_tokens(text: str) -> frozenset[str]:
    """The tokens :class:`FakeReranker` compares: lower-cased words without stop words, each
    CJK character on its own (CJK text has no spaces). A text of nothing but stop words keeps
    them, so "who are you?" still has tokens."""
    words = _WORD.findall(text.lower())
    tokens: set[str] = set()
    for word in words:
        if any("\u3400" <= ch <= "\u9fff" for ch in word):
            tokens.update(word)
        elif word not in _STOP:
            tokens.add(word)
    return frozenset(tokens or words)


class FakeReranker(Reranker):
    """Token-overlap reranker: a document's score is the fraction of the query's tokens it
    contains (:func:`overlap_tokens`), from 0.0 (none) to 1.0 (all).

    Offline, instant and exactly reproducible, yet meaningful: for "where do I live?",
    "I live in Berlin" scores 1.0 and "I like green tea" 0.0. Equal scores keep the
    documents' order. ``calls`` records ``(query, number of documents, top_k)`` of every request, and
    ``max_documents_per_request`` makes :meth:`rerank` split its input, to test batching.
    """

    provider: ClassVar[str] = "fake"

    def __init__(
        self, *, model: str = "token-overlap", max_documents_per_request: int | None = None
    ) -> None:
        if max_documents_per_request is not None and max_documents_per_request < 1:
            raise ValueError("max_documents_per_request must be at least 1")
        self.model = model
        self.max_documents_per_request = max_documents_per_request
        self.calls: list[tuple[str, int, int | None]] = []

    @staticmethod
    def score(query: str, document: str) -> float:
        """The fraction of ``query``'s tokens that ``document`` contains."""
        wanted = overlap_tokens(query)
        if not wanted:
            return 0.0
        return len(wanted & overlap_tokens(document)) / len(wanted)

    async def _rerank(
        self, query: str, documents: list[str], *, top_k: int | None
    ) -> list[RerankScore]:
        self.calls.append((query, len(documents), top_k))
        scores = [RerankScore(i, self.score(query, doc)) for i, doc in enumerate(documents)]
        scores.sort(key=lambda item: (-item.score, item.index))
        return scores if top_k is None else scores[:top_k]

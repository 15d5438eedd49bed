"""Voyage AI reranking through the official ``voyageai`` SDK (``agent-memory[voyage]``).

It works as the Voyage embedder does: the SDK's own retries are switched off
(``max_retries=0``), every attempt goes through
:func:`~agent_memory.providers._retry.call_with_retries` and the live-call guard, failures are
translated into :mod:`agent_memory.errors`, and one aiohttp session is kept per event loop
(all three shared in :mod:`agent_memory.providers._voyage_common`).

Limits, from the reranker API reference (docs.voyageai.com/reference/reranker-api): at most
1,000 documents a request; a query of at most 8,000 tokens (rerank-2.5, rerank-2.5-lite),
4,000 (rerank-2) or 2,000 (rerank-2-lite); the query and any one document together within
the context length, 32,000 / 16,000 / 8,000 tokens, longer pairs being truncated with
``truncation=True``; and at most 600K tokens a request, counted as "query tokens × number
of documents + the documents' tokens".
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from agent_memory._log import get_logger
from agent_memory._tokens import estimate_tokens
from agent_memory.errors import ConfigurationError, DependencyMissingError, UnknownProviderError
from agent_memory.providers._live import check_live_call
from agent_memory.providers._retry import RetryPolicy, call_with_retries
from agent_memory.providers._voyage_common import (
    PROVIDER,
    SDK_ERRORS,
    TOKEN_SAFETY_FACTOR,
    LoopState,
    SessionPerLoop,
    TokenLimitError,
    map_error,
    resolve_api_key,
)
from agent_memory.providers.rerankers.base import Reranker, RerankScore, merge_best_first

try:
    import aiohttp
    import voyageai
    from voyageai.util import get_default_base_url
except ImportError as exc:  # pragma: no cover - only without the optional extra
    raise DependencyMissingError("voyageai", "voyage") from exc

__all__ = ["MAX_DOCUMENTS_PER_REQUEST", "RERANK_MODELS", "VoyageReranker", "plan_rerank_batches"]

logger = get_logger(__name__)

_DEFAULT_RETRY = RetryPolicy()
#: The API's limit on the length of the documents list.
MAX_DOCUMENTS_PER_REQUEST = 1_000


@dataclass(frozen=True, slots=True)
class _RerankSpec:
    query_tokens: int  # the longest query
    context_tokens: int  # query plus one document; longer pairs are truncated
    request_tokens: int  # query tokens × documents + the documents' tokens, per request


#: The reranker API reference's limits per model (docs.voyageai.com/reference/reranker-api).
RERANK_MODELS: dict[str, _RerankSpec] = {
    "rerank-2.5": _RerankSpec(8_000, 32_000, 600_000),
    "rerank-2.5-lite": _RerankSpec(8_000, 32_000, 600_000),
    "rerank-2": _RerankSpec(4_000, 16_000, 600_000),
    "rerank-2-lite": _RerankSpec(2_000, 8_000, 600_000),
}


def plan_rerank_batches(
    query: str,
    documents: Sequence[str],
    *,
    token_budget: int,
    max_documents: int = MAX_DOCUMENTS_PER_REQUEST,
) -> list[range]:
    """Split ``documents``, in order, into the ranges of positions one request carries.

    A request holds at most ``max_documents`` documents and stays within ``token_budget`` as
    the API counts it (the query once per document, plus every document), estimated with
    :data:`TOKEN_SAFETY_FACTOR`. A document over the budget on its own still gets a request
    of its own, for the API to judge.
    """
    query_tokens = estimate_tokens(query)
    batches: list[range] = []
    start, used = 0, 0.0
    for position, document in enumerate(documents):
        cost = (query_tokens + estimate_tokens(document)) * TOKEN_SAFETY_FACTOR
        if position > start and (position - start >= max_documents or used + cost > token_budget):
            batches.append(range(start, position))
            start, used = position, 0.0
        used += cost
    if documents:
        batches.append(range(start, len(documents)))
    return batches


class VoyageReranker(SessionPerLoop, Reranker):
    """Voyage AI reranking via ``voyageai.AsyncClient.rerank``.

    Scores are the model's relevance scores, 0 to 1. More documents than one request takes
    (1,000, or the model's token budget estimated conservatively from characters) are split
    into several requests, up to ``max_concurrency`` in flight, and merged best first; a
    model scores each query-document pair on its own, so scores from different requests for
    the same query compare. Documents longer than the model's context are scored on their
    beginning (``truncation=True``); a query over the model's limit is an error. Failures
    come out as :mod:`agent_memory.errors` classes after the retries of ``retry``.

    Example::

        async with VoyageReranker("rerank-2.5-lite") as reranker:
            best = await reranker.rerank("where do I live?", texts, top_k=5)
            ranked = [texts[hit.index] for hit in best]
    """

    provider: ClassVar[str] = PROVIDER
    max_documents_per_request: int | None = MAX_DOCUMENTS_PER_REQUEST

    def __init__(
        self,
        model: str = "rerank-2.5-lite",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 30,
        retry: RetryPolicy = _DEFAULT_RETRY,
        max_concurrency: int = 4,
    ) -> None:
        spec = RERANK_MODELS.get(model)
        if spec is None:
            raise UnknownProviderError("voyage rerank model", model, tuple(RERANK_MODELS))
        key = resolve_api_key(api_key, who="the voyage reranker")
        if timeout <= 0:
            raise ConfigurationError("timeout must be positive")
        self._init_sessions(max_concurrency)
        self.model = model
        self.max_query_tokens = spec.query_tokens
        #: The endpoint requests go to (keys starting "al-" default to MongoDB's endpoint).
        self.base_url = (base_url or get_default_base_url(key)).rstrip("/")
        self._spec = spec
        self._retry = retry
        self._client = voyageai.AsyncClient(
            api_key=key, max_retries=0, timeout=timeout, base_url=self.base_url
        )

    def _plan_batches(self, query: str, documents: list[str]) -> list[range]:
        return plan_rerank_batches(
            query,
            documents,
            token_budget=self._spec.request_tokens,
            max_documents=self.max_documents_per_request or MAX_DOCUMENTS_PER_REQUEST,
        )

    async def _rerank(
        self, query: str, documents: list[str], *, top_k: int | None
    ) -> list[RerankScore]:
        return await self._rerank_part(query, documents, top_k, await self._loop_state())

    async def _rerank_part(
        self, query: str, documents: list[str], top_k: int | None, state: LoopState
    ) -> list[RerankScore]:
        try:
            async with state.slots:
                return await self._call(query, documents, top_k, state.session)
        except TokenLimitError:
            if len(documents) < 2:
                raise
        # Our estimate undercounted this text mix; halve until the API accepts (outside the
        # semaphore, so the halves can take slots of their own).
        logger.warning("rerank_batch_split", provider=self.provider, documents=len(documents))
        half = len(documents) // 2
        parts = []
        for positions in (range(half), range(half, len(documents))):
            k = None if top_k is None else min(top_k, len(positions))
            part = documents[positions.start : positions.stop]
            parts.append((positions, await self._rerank_part(query, part, k, state)))
        return merge_best_first(parts, top_k=top_k)

    async def _call(
        self,
        query: str,
        documents: list[str],
        top_k: int | None,
        session: aiohttp.ClientSession,
    ) -> list[RerankScore]:
        started = time.perf_counter()
        token = voyageai.aiosession.set(session)
        try:
            scores, tokens = await call_with_retries(
                functools.partial(self._attempt, query, documents, top_k),
                policy=self._retry,
                provider=self.provider,
            )
        finally:
            voyageai.aiosession.reset(token)
        logger.info(
            "documents_reranked",
            provider=self.provider,
            model=self.model,
            documents=len(documents),
            top_k=top_k,
            tokens=tokens,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return scores

    async def _attempt(
        self, query: str, documents: list[str], top_k: int | None
    ) -> tuple[list[RerankScore], int | None]:
        check_live_call(self.provider, self.base_url)
        try:
            result = await self._client.rerank(
                query=query,
                documents=documents,
                model=self.model,
                top_k=top_k,
                # A document over the context length is scored on its beginning rather than
                # failing the whole ranking; the query's own limit is checked before sending.
                truncation=True,
            )
            scores = [RerankScore(item.index, item.relevance_score) for item in result.results]
            tokens = result.total_tokens
        # IndexError: the SDK looks each returned index up in ``documents``.
        except (*SDK_ERRORS, IndexError) as exc:
            raise map_error(exc) from exc
        expected = len(documents) if top_k is None else min(top_k, len(documents))
        # Checked here too, not only by the base class, so halves merge only valid indices.
        return self._checked(scores, size=len(documents), expected=expected), tokens

    async def aclose(self) -> None:
        """Close the HTTP session this reranker opened. Safe to call more than once."""
        await self._close_sessions()

"""Voyage AI embeddings through the official ``voyageai`` SDK (``agent-memory[voyage]``).

The SDK's own retries are switched off (``max_retries=0``); every attempt goes through
:func:`~agent_memory.providers._retry.call_with_retries` and the live-call guard. Error
translation and the one-session-per-event-loop connections are shared with the Voyage
reranker (:mod:`agent_memory.providers._voyage_common`).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from agent_memory._log import get_logger
from agent_memory._tokens import estimate_tokens
from agent_memory.errors import (
    BadResponseError,
    ConfigurationError,
    DependencyMissingError,
    UnknownProviderError,
)
from agent_memory.providers._concurrency import gather_or_raise_first
from agent_memory.providers._live import check_live_call
from agent_memory.providers._retry import RetryPolicy, call_with_retries
from agent_memory.providers._voyage_common import (
    PROVIDER,
    SDK_ERRORS,
    TOKEN_SAFETY_FACTOR,
    SessionPerLoop,
    TokenLimitError,
    map_error,
    resolve_api_key,
)
from agent_memory.providers.embedders.base import Embedder

try:
    import voyageai
    from voyageai.util import get_default_base_url
except ImportError as exc:  # pragma: no cover - only without the optional extra
    raise DependencyMissingError("voyageai", "voyage") from exc

__all__ = ["VOYAGE_MODELS", "VoyageEmbedder"]

logger = get_logger(__name__)

_DEFAULT_RETRY = RetryPolicy()
#: The API's limit on the length of the input list.
MAX_TEXTS_PER_REQUEST = 1_000
_FLEXIBLE_DIMENSIONS = (256, 512, 1024, 2048)


@dataclass(frozen=True, slots=True)
class _ModelSpec:
    dimensions: int  # the default (flexible models) or the only (fixed models) width
    flexible: bool
    batch_tokens: int  # the API's limit on the total tokens of one request


# Limits from the embeddings API reference (docs.voyageai.com/reference/embeddings-api and
# the MongoDB copy of it): 1M tokens for the -lite models, 320K for voyage-4 / 3.5 / 3 / 2,
# 120K for the large, code and domain models.
VOYAGE_MODELS: dict[str, _ModelSpec] = {
    "voyage-4-large": _ModelSpec(1024, True, 120_000),
    "voyage-4": _ModelSpec(1024, True, 320_000),
    "voyage-4-lite": _ModelSpec(1024, True, 1_000_000),
    "voyage-3-large": _ModelSpec(1024, True, 120_000),
    "voyage-3.5": _ModelSpec(1024, True, 320_000),
    "voyage-3.5-lite": _ModelSpec(1024, True, 1_000_000),
    "voyage-code-3": _ModelSpec(1024, True, 120_000),
    "voyage-3": _ModelSpec(1024, False, 320_000),
    "voyage-3-lite": _ModelSpec(512, False, 1_000_000),
    "voyage-finance-2": _ModelSpec(1024, False, 120_000),
    "voyage-law-2": _ModelSpec(1024, False, 120_000),
    "voyage-multilingual-2": _ModelSpec(1024, False, 120_000),
    "voyage-code-2": _ModelSpec(1536, False, 120_000),
    "voyage-large-2": _ModelSpec(1536, False, 120_000),
    "voyage-large-2-instruct": _ModelSpec(1024, False, 120_000),
    "voyage-2": _ModelSpec(1024, False, 320_000),
}


def _resolve_dimensions(model: str, spec: _ModelSpec, dimensions: int | None) -> int:
    if dimensions is None:
        return spec.dimensions
    allowed = _FLEXIBLE_DIMENSIONS if spec.flexible else (spec.dimensions,)
    if dimensions not in allowed:
        raise ConfigurationError(
            f"voyage model {model!r} cannot produce {dimensions}-dimensional vectors; "
            f"choose one of: {', '.join(map(str, allowed))}"
        )
    return dimensions


def plan_batches(
    texts: Sequence[str], *, token_budget: int, max_texts: int = MAX_TEXTS_PER_REQUEST
) -> list[list[str]]:
    """Split ``texts``, in order, into request-sized batches.

    A batch holds at most ``max_texts`` texts whose estimated tokens (times
    :data:`TOKEN_SAFETY_FACTOR`) stay within ``token_budget``; a single text over the budget
    still gets a batch of its own, for the API to judge.
    """
    batches: list[list[str]] = []
    current: list[str] = []
    used = 0.0
    for text in texts:
        cost = estimate_tokens(text) * TOKEN_SAFETY_FACTOR
        if current and (len(current) >= max_texts or used + cost > token_budget):
            batches.append(current)
            current, used = [], 0.0
        current.append(text)
        used += cost
    if current:
        batches.append(current)
    return batches


# --- the embedder ----------------------------------------------------------------------------


class VoyageEmbedder(SessionPerLoop, Embedder):
    """Voyage AI embeddings via ``voyageai.AsyncClient``.

    Documents are sent with ``input_type="document"`` and queries with ``"query"``; large
    inputs are split into batches within the API's limits (1,000 texts, and the model's
    token budget estimated conservatively from characters) and up to ``max_concurrency``
    batches are in flight at once. Texts over the model's context length are an error, not
    silently truncated. Failures come out as :mod:`agent_memory.errors` classes after the
    retries of ``retry``.

    Example::

        async with VoyageEmbedder("voyage-3.5", dimensions=512) as embedder:
            vectors = await embedder.embed_documents(["I live in Berlin"])
    """

    provider: ClassVar[str] = PROVIDER

    def __init__(
        self,
        model: str = "voyage-3.5",
        *,
        dimensions: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 30,
        retry: RetryPolicy = _DEFAULT_RETRY,
        max_concurrency: int = 4,
    ) -> None:
        spec = VOYAGE_MODELS.get(model)
        if spec is None:
            raise UnknownProviderError("voyage model", model, tuple(VOYAGE_MODELS))
        self.dimensions = _resolve_dimensions(model, spec, dimensions)
        key = resolve_api_key(api_key, who="the voyage embedder")
        if timeout <= 0:
            raise ConfigurationError("timeout must be positive")
        self._init_sessions(max_concurrency)
        self.model = model
        #: The endpoint requests go to (keys starting "al-" default to MongoDB's endpoint).
        self.base_url = (base_url or get_default_base_url(key)).rstrip("/")
        self._spec = spec
        self._retry = retry
        self._client = voyageai.AsyncClient(
            api_key=key, max_retries=0, timeout=timeout, base_url=self.base_url
        )

    async def _embed(self, texts: list[str], *, kind: Literal["document", "query"]) -> np.ndarray:
        state = await self._loop_state()
        batches = plan_batches(texts, token_budget=self._spec.batch_tokens)
        token = voyageai.aiosession.set(state.session)
        try:
            # Tasks copy the context when created, so every batch sees the session.
            parts = await gather_or_raise_first(
                [self._embed_batch(batch, kind, state.slots) for batch in batches]
            )
        finally:
            voyageai.aiosession.reset(token)
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    async def _embed_batch(
        self, batch: list[str], kind: Literal["document", "query"], slots: asyncio.Semaphore
    ) -> np.ndarray:
        try:
            async with slots:
                return await self._call(batch, kind)
        except TokenLimitError:
            if len(batch) < 2:
                raise
        # Our estimate undercounted this text mix; halve until the API accepts (outside the
        # semaphore, so the halves can take slots of their own).
        logger.warning("embedding_batch_split", provider=self.provider, texts=len(batch))
        half = len(batch) // 2
        first = await self._embed_batch(batch[:half], kind, slots)
        second = await self._embed_batch(batch[half:], kind, slots)
        return np.concatenate([first, second])

    async def _call(self, batch: list[str], kind: Literal["document", "query"]) -> np.ndarray:
        started = time.perf_counter()
        vectors, tokens = await call_with_retries(
            functools.partial(self._attempt, batch, kind),
            policy=self._retry,
            provider=self.provider,
        )
        logger.info(
            "embeddings_computed",
            provider=self.provider,
            model=self.model,
            kind=kind,
            texts=len(batch),
            tokens=tokens,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return vectors

    async def _attempt(
        self, batch: list[str], kind: Literal["document", "query"]
    ) -> tuple[np.ndarray, int | None]:
        check_live_call(self.provider, self.base_url)
        try:
            result = await self._client.embed(
                batch,
                model=self.model,
                input_type=kind,
                # An over-long text is an error, as the base class promises, not cut silently.
                truncation=False,
                output_dimension=self.dimensions if self._spec.flexible else None,
            )
            embeddings, tokens = result.embeddings, result.total_tokens
        except SDK_ERRORS as exc:
            raise map_error(exc) from exc
        return self._check_vectors(embeddings, len(batch)), tokens

    def _check_vectors(self, embeddings: object, expected: int) -> np.ndarray:
        try:
            vectors = np.asarray(embeddings, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise BadResponseError(
                "voyage returned embeddings that are not a numeric matrix", provider=self.provider
            ) from exc
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise BadResponseError(
                f"voyage returned {vectors.shape[0] if vectors.ndim else 0} embeddings "
                f"for {expected} texts",
                provider=self.provider,
            )
        if vectors.shape[1] != self.dimensions:
            raise BadResponseError(
                f"voyage returned {vectors.shape[1]}-dimensional vectors; "
                f"expected {self.dimensions} for {self.model}",
                provider=self.provider,
            )
        if not np.isfinite(vectors).all():
            raise BadResponseError(
                "voyage returned vectors with NaN or infinite values", provider=self.provider
            )
        return vectors

    async def aclose(self) -> None:
        """Close the HTTP session this embedder opened. Safe to call more than once."""
        await self._close_sessions()

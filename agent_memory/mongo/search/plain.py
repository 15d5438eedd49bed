"""The plain tier, for any MongoDB without search (and the embedded default): exact cosine
similarity and BM25 over the tenant's documents, fused here.

Both rankings are computed in the framework over the same documents (:mod:`.corpus`), so the
keyword ranking is a real BM25 with stemming and Chinese character pairs
(:mod:`.keywords`) on every server, and filters are applied before ranking. The two are fused
by :func:`~agent_memory.mongo.search.fusion.score_fusion`.

Round trips. A target kept in memory (``SearchTarget.snapshot``, see :mod:`.snapshots`): one
read of the tenant's generation token by ``_id``, then the kept corpus is ranked; when the
token says another writer changed the tenant, the corpus is first brought up to date (one
``find`` of the documents, one of the vectors not held yet). Any other target: one
``find`` of the tenant's documents (with the filter), ranked as read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar

import numpy as np

from agent_memory._log import get_logger
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.search.corpus import Corpus, TokenCache
from agent_memory.mongo.search.fusion import score_fusion
from agent_memory.mongo.search.snapshots import Snapshots
from agent_memory.mongo.search.trust import TrustLedger
from agent_memory.mongo.search.types import (
    ResolvedFilters,
    Searcher,
    SearchHit,
    SearchQuery,
    SearchTarget,
    SourceScore,
    resolve_filters,
)

__all__ = ["PlainSearcher", "plain_filter"]

logger = get_logger(__name__)


def plain_filter(target: SearchTarget, query: SearchQuery) -> dict[str, Any]:
    """The ``find`` filter: tenant equality, then validated filters and exclusions."""
    return _where(resolve_filters(target, query))


def _where(resolved: ResolvedFilters) -> dict[str, Any]:
    result: dict[str, Any] = {path: {"$eq": value} for path, value in resolved.tenant.items()}
    for path, value in resolved.filters.items():
        result[path] = {"$in": value} if isinstance(value, list) else {"$eq": value}
    for path, value in resolved.exclude.items():
        condition = {"$nin": value} if isinstance(value, list) else {"$ne": value}
        if path in result:
            result[path] = {**result[path], **condition}
        else:
            result[path] = condition
    for path, span in resolved.ranges.items():
        result[path] = {**result.get(path, {}), **_span_condition(span)}
    return result


def _span_condition(span: tuple[Any, Any]) -> dict[str, Any]:
    """``$gte``/``$lt`` for a span of time (a side left open is left out)."""
    start, end = span
    condition = {} if start is None else {"$gte": start}
    return condition if end is None else {**condition, "$lt": end}


def rank(
    corpus: Corpus,
    query: SearchQuery,
    allowed: np.ndarray,
    trusted: Callable[[float | None], float] | None = None,
    vector_scores: np.ndarray | None = None,
) -> list[tuple[int, float, dict[str, SourceScore]]]:
    """The fused top ``query.limit`` positions of ``corpus`` for ``query``.

    With both rankings, the keyword ranking's weight is scaled by how much of the query its
    best match covers, to the power ``query.coverage_power`` (0: not at all): a question whose
    rare words a memory repeats leans on keywords, a paraphrase that shares only common words
    with any memory leans on the vectors. ``trusted``, given that coverage, says which share of
    the keyword weight the tenant's questions have earned (:mod:`.trust`); the vector ranking
    gets the rest. ``vector_scores``: the query vector's cosines, when already computed
    (:meth:`Corpus.vector_scores_many`)."""
    scores: dict[str, np.ndarray] = {}
    if query.vector is not None:
        scores["vector"] = (
            corpus.vector_scores(query.vector) if vector_scores is None else vector_scores
        )
    if query.text is not None:
        scores["text"], coverage = corpus.keyword_scores(query.text, allowed)
    weights = dict(query.weights_for(PlainSearcher.tier))
    if len(scores) == 2:
        if trusted is not None and query.learn_above is not None:
            near = scores["vector"][allowed]
            if not (near.size and float(near.max()) >= query.learn_above):
                trusted = _not_counted(trusted)
        weights = fused_weights(weights, coverage, query.coverage_power, trusted)
    return score_fusion(scores, allowed, weights=weights, depth=query.depth, limit=query.limit)


def _not_counted(trusted: Callable[[float | None], float]) -> Callable[[float | None], float]:
    """``trusted`` for a query that is ranked by the tenant's keyword trust but not counted."""
    return lambda _coverage: trusted(None)


def fused_weights(
    weights: Mapping[str, float],
    coverage: float | None,
    power: float,
    trusted: Callable[[float | None], float] | None,
) -> dict[str, float]:
    """The vector and keyword weights for one query whose best keyword match has ``coverage``
    (None: no keyword matched), the plain tier's rule; ``bench fusion`` scores its
    configurations with it."""
    vector, text = float(weights.get("vector", 1.0)), float(weights.get("text", 1.0))
    share = 1.0 if trusted is None else trusted(coverage)
    scale = (coverage or 0.0) ** power if power > 0 else 1.0
    return {"vector": vector + text * (1.0 - share), "text": text * share * scale}


class PlainSearcher(Searcher):
    """Exact search that works on every MongoDB server."""

    tier: ClassVar[str] = "plain"
    answers_together: ClassVar[bool] = True

    def __init__(self, db: Any, *, dimensions: int, snapshots: Snapshots | None = None) -> None:
        self._db = db
        self._dimensions = dimensions
        self._snapshots = snapshots
        self._tokens = TokenCache()
        self._trust = TrustLedger()

    def _trusted(
        self, target: SearchTarget, query: SearchQuery, resolved: ResolvedFilters
    ) -> Callable[[float | None], float] | None:
        """What teaches and asks this tenant's keyword trust, when the query learns it."""
        if query.keyword_trust is None:
            return None
        key = (target.collection, tuple(sorted(resolved.tenant.items())))
        return partial(self._trust.observe, key, trust=query.keyword_trust, learn=query.learns)

    @property
    def snapshots(self) -> Snapshots | None:
        return self._snapshots

    async def _search(self, target: SearchTarget, query: SearchQuery) -> list[SearchHit]:
        collection = self._db[target.collection]
        resolved = resolve_filters(target, query)
        if query.vector is not None and np.asarray(query.vector).shape != (self._dimensions,):
            raise ValueError(
                f"the query vector has {np.asarray(query.vector).shape[0]} dimensions, "
                f"expected {self._dimensions}"
            )
        with translate_errors(f"searching {target.collection}"):
            if target.snapshot and self._snapshots is not None:
                return await self._search_kept(collection, target, query, resolved)
            return await self._search_read(collection, target, query, resolved)

    async def _search_read(
        self, collection: Any, target: SearchTarget, query: SearchQuery, resolved: ResolvedFilters
    ) -> list[SearchHit]:
        # A search by keywords alone has no use for the vectors (the largest part of each
        # document): they are not read; nor are the fields no search reads.
        unread = target.unread if query.vector is None else target.omit_paths
        projection = {path: 0 for path in unread} or None
        rows = await collection.find(_where(resolved), projection).to_list(None)
        corpus = Corpus.build(rows, target, dimensions=self._dimensions, tokens=self._tokens)
        return [
            SearchHit(corpus.document(position)["_id"], corpus.document(position), fused, sources)
            for position, fused, sources in rank(
                corpus, query, corpus.alive, self._trusted(target, query, resolved)
            )
        ]

    async def _search_many(
        self, target: SearchTarget, queries: Sequence[SearchQuery]
    ) -> list[list[SearchHit]]:
        """Queries of one tenant, each with a vector, on a kept target: one token read, and
        one matrix product for all their vectors (cosines equal to one search's to within
        float32 rounding); any others are searched one by one."""
        tenants = {tuple(sorted(query.tenant.items())) for query in queries}
        if (
            len(queries) < 2
            or len(tenants) > 1
            or not target.snapshot
            or self._snapshots is None
            or any(query.vector is None for query in queries)
        ):
            return await super()._search_many(target, queries)
        resolved = [resolve_filters(target, query) for query in queries]
        vectors = np.stack([np.asarray(query.vector, dtype=np.float32) for query in queries])
        if vectors.shape[1:] != (self._dimensions,):
            raise ValueError(
                f"the query vectors have {vectors.shape[-1]} dimensions, "
                f"expected {self._dimensions}"
            )
        snapshots = self._snapshots
        with translate_errors(f"searching {target.collection}"):
            token = await snapshots.token(target, resolved[0].tenant)
            kept = snapshots.kept(target, resolved[0].tenant)
            if kept is None or not snapshots.current(kept, token):
                collection = self._db[target.collection]
                kept = await snapshots.refresh(collection, target, resolved[0].tenant, token)
        scores = kept.corpus.vector_scores_many(vectors)
        return [
            _hits(kept.corpus, query, where, self._trusted(target, query, where), row)
            for query, where, row in zip(queries, resolved, scores, strict=True)
        ]

    async def _search_kept(
        self, collection: Any, target: SearchTarget, query: SearchQuery, resolved: ResolvedFilters
    ) -> list[SearchHit]:
        snapshots = self._snapshots
        assert snapshots is not None
        # The token first: ranking is CPU work that would hold the event loop, so it could not
        # overlap the read anyway, and a corpus found out of date is not ranked for nothing.
        token = await snapshots.token(target, resolved.tenant)
        kept = snapshots.kept(target, resolved.tenant)
        if kept is None or not snapshots.current(kept, token):
            kept = await snapshots.refresh(collection, target, resolved.tenant, token)
        return _hits(kept.corpus, query, resolved, self._trusted(target, query, resolved))


def _hits(
    corpus: Corpus,
    query: SearchQuery,
    resolved: ResolvedFilters,
    trusted: Callable[[float | None], float] | None,
    vector_scores: np.ndarray | None = None,
) -> list[SearchHit]:
    """The winners of a kept corpus, as copies (the kept documents stay as they are)."""
    return [
        SearchHit(corpus.document(position)["_id"], dict(corpus.document(position)), fused, sources)
        for position, fused, sources in rank(
            corpus, query, corpus.mask(resolved), trusted, vector_scores
        )
    ]

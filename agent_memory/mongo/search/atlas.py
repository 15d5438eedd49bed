"""The Atlas tier: ``$vectorSearch`` and ``$search`` with the tenant pre-filter inside the
stage, fused by ``$rankFusion`` on servers that have it and in the framework otherwise.

The pipelines follow MongoDB's documented syntax exactly; ``tests/unit/test_atlas_contract.py``
checks them against the index definitions in ``atlas_indexes/``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Mapping
from typing import Any, ClassVar

from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.checks import is_int, is_number
from agent_memory.mongo import _driver
from agent_memory.mongo._errors import classify_refusal, first_line, translate_errors
from agent_memory.mongo.search import index_watch
from agent_memory.mongo.search.fusion import RRF_K, reciprocal_rank_fusion
from agent_memory.mongo.search.layout import LayoutWatch
from agent_memory.mongo.search.types import (
    ResolvedFilters,
    Searcher,
    SearchHit,
    SearchQuery,
    SearchTarget,
    SourceScore,
    in_span,
    resolve_filters,
)

__all__ = [
    "AtlasSearcher",
    "cosine_from_vector_score",
    "rank_fusion_pipeline",
    "text_search_pipeline",
    "vector_search_pipeline",
]

logger = get_logger(__name__)

#: Extra documents ``$rankFusion`` returns beyond ``limit``: hits that passed mongot's lagging
#: pre-filter but no longer match are dropped afterwards (:func:`_still_matches`), and the
#: search should still return ``limit`` when that many match.
STALE_MARGIN = 10

VECTOR_SCORE = "_vector_score"
TEXT_SCORE = "_text_score"
SCORE_DETAILS = "_score_details"


def _vector_filter(target: SearchTarget, query: SearchQuery) -> dict[str, Any]:
    """The ``filter`` of ``$vectorSearch``: MQL on fields declared as ``filter`` in the index."""
    resolved = resolve_filters(target, query)
    clauses: list[dict[str, Any]] = [
        {path: {"$eq": value}} for path, value in resolved.tenant.items()
    ]
    for path, value in resolved.filters.items():
        clauses.append(
            {path: {"$in": value}} if isinstance(value, list) else {path: {"$eq": value}}
        )
    for path, value in resolved.exclude.items():
        clauses.append(
            {path: {"$nin": value}} if isinstance(value, list) else {path: {"$ne": value}}
        )
    for path, (start, end) in resolved.ranges.items():
        if start is not None:
            clauses.append({path: {"$gte": start}})
        if end is not None:
            clauses.append({path: {"$lt": end}})
    return {"$and": clauses}


def vector_search_pipeline(target: SearchTarget, query: SearchQuery) -> list[dict[str, Any]]:
    """``$vectorSearch`` first, tenant and filters inside it, the vector itself left out."""
    if query.vector is None:
        raise ValueError("vector_search_pipeline needs a query vector")
    return [
        {
            "$vectorSearch": {
                "index": target.vector_index,
                "path": target.vector_path,
                "queryVector": [float(x) for x in query.vector],
                "numCandidates": query.ann_candidates,
                "limit": query.depth,
                "filter": _vector_filter(target, query),
            }
        },
        {"$set": {VECTOR_SCORE: {"$meta": "vectorSearchScore"}}},
        {"$unset": _unread(target)},
    ]


def _search_clauses(target: SearchTarget, query: SearchQuery) -> dict[str, Any]:
    """The ``compound`` operator: the text in ``must``, tenant and filters as ``filter``."""

    def clause(path: str, value: Any) -> dict[str, Any]:
        if isinstance(value, list):
            return {"in": {"path": path, "value": value}}
        return {"equals": {"path": path, "value": value}}

    resolved = resolve_filters(target, query)
    compound: dict[str, Any] = {
        "must": [{"text": {"query": query.text, "path": _path(target.text_path)}}],
        "filter": [clause(path, value) for path, value in resolved.tenant.items()]
        + [clause(path, value) for path, value in resolved.filters.items()]
        + [_range(path, span) for path, span in resolved.ranges.items()],
    }
    if resolved.exclude:
        compound["mustNot"] = [clause(path, value) for path, value in resolved.exclude.items()]
    return compound


def _range(path: str, span: tuple[Any, Any]) -> dict[str, Any]:
    """The ``range`` operator for a span of time on a field indexed as ``date``."""
    start, end = span
    bounds = {} if start is None else {"gte": start}
    return {"range": {"path": path, **bounds, **({} if end is None else {"lt": end})}}


def text_search_pipeline(target: SearchTarget, query: SearchQuery) -> list[dict[str, Any]]:
    """``$search`` first with a ``compound`` query; the tenant filter is inside the stage."""
    if query.text is None:
        raise ValueError("text_search_pipeline needs query text")
    return [
        {"$search": {"index": target.text_index, "compound": _search_clauses(target, query)}},
        {"$limit": query.depth},
        {"$set": {TEXT_SCORE: {"$meta": "searchScore"}}},
        {"$unset": _unread(target)},
    ]


def rank_fusion_pipeline(target: SearchTarget, query: SearchQuery) -> list[dict[str, Any]]:
    """``$rankFusion`` over the vector and text inputs; input pipelines only select and rank
    (the documented restriction), so scores and projections come after the stage."""
    vector = vector_search_pipeline(target, query)[:1]
    text = text_search_pipeline(target, query)[:2]
    return [
        {
            "$rankFusion": {
                "input": {"pipelines": {"vector": vector, "text": text}},
                "combination": {
                    "weights": {
                        "vector": float(query.weights_for("atlas").get("vector", 1.0)),
                        "text": float(query.weights_for("atlas").get("text", 1.0)),
                    }
                },
                "scoreDetails": True,
            }
        },
        {"$limit": query.limit + STALE_MARGIN},
        {"$set": {SCORE_DETAILS: {"$meta": "scoreDetails"}}},
        {"$unset": _unread(target)},
    ]


def cosine_from_vector_score(score: float, similarity: str) -> float:
    """The cosine similarity behind a ``vectorSearchScore``, so every tier reports cosine.

    Atlas normalises its scores to 0..1: ``(1 + cosine) / 2`` and ``(1 + dotProduct) / 2``
    for those similarities, ``1 / (1 + distance)`` for euclidean (MongoDB's ``$vectorSearch``
    page, "Atlas Vector Search Score"). The framework's embedders return unit vectors, on which
    the dot product is the cosine and a euclidean distance ``d`` means a cosine of
    ``1 - d² / 2``. The result is clamped to -1..1 against rounding.
    """
    if similarity in ("cosine", "dotProduct"):
        cosine = 2.0 * score - 1.0
    elif similarity == "euclidean":
        distance = 1.0 / score - 1.0 if score > 0.0 else math.inf
        cosine = 1.0 - distance * distance / 2.0
    else:
        raise ValueError(f"unknown vector similarity {similarity!r}")
    return min(1.0, max(-1.0, cosine))


def _number(value: Any) -> float | None:
    if not is_number(value):
        return None
    return float(value) if math.isfinite(value) else None


def parse_score_details(
    details: Any, *, similarity: str = "cosine"
) -> tuple[float, dict[str, SourceScore]]:
    """Per-input ranks and scores from ``$rankFusion``'s ``scoreDetails``.

    The documented shape is ``{value, details: [{inputPipelineName, rank, value?}]}``, where an
    input that did not find the document has rank ``"N/A"``; a mapping of pipeline name to
    ``{rank, value}`` is read too. An input's ``value`` is its own score (the manual: the
    input's ``{$meta: "score"}``), so the ``vector`` input's is converted to a cosine like
    every vector score (:func:`cosine_from_vector_score`). Anything malformed is ignored rather
    than raised: scores explain a ranking, they must not break a search.
    """
    if not isinstance(details, dict):
        return 0.0, {}
    fused = _number(details.get("value", 0.0))
    if fused is None:
        return 0.0, {}
    inner = details.get("details", [])
    items: list[tuple[str, dict[str, Any]]] = []
    if isinstance(inner, dict):
        items = [(str(name), entry) for name, entry in inner.items() if isinstance(entry, dict)]
    elif isinstance(inner, list):
        items = [
            (str(entry.get("inputPipelineName")), entry)
            for entry in inner
            if isinstance(entry, dict) and entry.get("inputPipelineName")
        ]
    sources = {}
    for name, entry in items:
        rank = entry.get("rank")
        score = _number(entry.get("value", 0.0))
        if is_int(rank) and rank > 0 and score is not None:
            if name == "vector" and "value" in entry:  # no value: no score to convert
                score = cosine_from_vector_score(score, similarity)
            sources[name] = SourceScore(rank=rank, score=score)
    if not sources:
        return 0.0, {}
    return fused, sources


class AtlasSearcher(Searcher):
    """Runs the Atlas pipelines; fuses with ``$rankFusion`` when ``rank_fusion`` is true.

    Vector scores come back as cosines, whatever the index's ``similarity`` (the embedder's,
    which the vector indexes are created with): no layer above needs to know the tier."""

    tier: ClassVar[str] = "atlas"
    relevance_scale: ClassVar[str] = "rank"
    #: Atlas's search indexes catch up with writes asynchronously.
    sees_writes_at_once: ClassVar[bool] = False

    def __init__(
        self,
        db: Any,
        *,
        rank_fusion: bool,
        similarity: str = "cosine",
        keywords: Searcher | None = None,
        layout: LayoutWatch | None = None,
    ) -> None:
        cosine_from_vector_score(1.0, similarity)  # refuses a similarity it cannot convert
        self._db = db
        self._similarity = similarity
        self._rank_fusion = rank_fusion
        self._keywords = keywords
        self._layout = layout

    @property
    def rank_fusion(self) -> bool:
        """Whether the server's ``$rankFusion`` may fuse hybrid searches (never with the
        keywords ranked here: there is no ``$search`` input)."""
        return self._rank_fusion

    async def ranks_keywords_here(self) -> bool:
        """Whether keywords are ranked in the framework now (the vector layout): always with
        a keyword searcher and no layout to follow, else as the layout says."""
        if self._keywords is None:
            return False
        return self._layout is None or await self._layout.current() == "vector"

    @property
    def snapshots(self) -> Any:
        """The keyword searcher's kept corpora (writers announce their writes to them)."""
        return getattr(self._keywords, "snapshots", None)

    async def _fused_by_server(
        self, collection: Any, target: SearchTarget, query: SearchQuery
    ) -> tuple[list[SearchHit] | None, str]:
        """``$rankFusion``'s hits; or ``None`` and the server's reason when it refused the
        query: the stage is in preview, and ``$vectorSearch`` inputs need 8.1, so a server the
        probe let through may still refuse the shape. Permission and transient errors are
        raised as they are: they are no reason to stop using the stage."""
        try:
            docs = await _driver.aggregate(collection, rank_fusion_pipeline(target, query))
        except pm.OperationFailure as exc:
            if classify_refusal(exc) != "unsupported":
                raise
            return None, first_line(exc)
        hits = []
        for doc in docs:
            fused, sources = parse_score_details(
                doc.pop(SCORE_DETAILS, None), similarity=self._similarity
            )
            hits.append(SearchHit(doc["_id"], doc, fused, sources))
        return hits, ""

    async def _search(self, target: SearchTarget, query: SearchQuery) -> list[SearchHit]:
        collection = self._db[target.collection]
        resolved = resolve_filters(target, query)
        keywords_here = await self.ranks_keywords_here()
        with translate_errors(f"searching {target.collection}"):
            hits: list[SearchHit] | None = None
            refused = ""
            if (
                query.vector is not None
                and query.text is not None
                and self._rank_fusion
                and not keywords_here
            ):
                hits, refused = await self._fused_by_server(collection, target, query)
            if hits is not None:
                # $rankFusion gives no separate rankings: only an empty answer is suspect.
                vector_empty = not hits
                hits = [hit for hit in hits if _still_matches(hit.document, resolved)]
                hits = hits[: query.limit]
            else:
                hits, vector_empty = await self._fused_here(
                    collection, target, query, resolved, keywords_here=keywords_here
                )
                if refused and self._rank_fusion:
                    # The same query ran without the stage, so the stage was what the server
                    # refused (a bad query fails both ways and turns nothing off): every
                    # later search is fused in the framework, said once.
                    self._rank_fusion = False
                    logger.warning(
                        "rank_fusion_disabled",
                        collection=target.collection,
                        reason=refused,
                        fallback="reciprocal rank fusion in the framework",
                    )
        await index_watch.first_use(self._db, collection, target, vector_only=keywords_here)
        if query.vector is not None and vector_empty:
            await index_watch.when_vector_search_is_empty(
                self._db, collection, target, _vector_filter(target, query)
            )
        return hits

    async def _fused_here(
        self,
        collection: Any,
        target: SearchTarget,
        query: SearchQuery,
        resolved: ResolvedFilters,
        *,
        keywords_here: bool,
    ) -> tuple[list[SearchHit], bool]:
        """One aggregate per source, fused in the framework; and whether the vector source
        (when asked) returned nothing at all."""
        runs: dict[str, Any] = {}
        if query.vector is not None:
            runs["vector"] = _driver.aggregate(collection, vector_search_pipeline(target, query))
        if query.text is not None:
            runs["text"] = (
                self._keyword_ranking(target, query)
                if keywords_here
                else _driver.aggregate(collection, text_search_pipeline(target, query))
            )
        results = dict(zip(runs, await asyncio.gather(*runs.values()), strict=True))

        documents: dict[Any, dict[str, Any]] = {}
        rankings: dict[str, list[tuple[Any, float]]] = {}
        for name, docs in results.items():
            score_field = VECTOR_SCORE if name == "vector" else TEXT_SCORE
            ranking = []
            for doc in docs:
                score = float(doc.pop(score_field, 0.0))
                if not _still_matches(doc, resolved):
                    continue  # passed mongot's stale pre-filter; no longer what was asked
                if name == "vector":
                    score = cosine_from_vector_score(score, self._similarity)
                documents.setdefault(doc["_id"], doc)
                ranking.append((doc["_id"], score))
            rankings[name] = ranking
        fused = reciprocal_rank_fusion(rankings, weights=query.weights_for("atlas"), k=RRF_K)
        hits = [
            SearchHit(doc_id, documents[doc_id], score, sources)
            for doc_id, score, sources in fused[: query.limit]
        ]
        return hits, not results.get("vector")

    async def _keyword_ranking(
        self, target: SearchTarget, query: SearchQuery
    ) -> list[dict[str, Any]]:
        """The keyword ranking of the vector layout: the framework's BM25 over the tenant's
        documents (filters applied before ranking), as documents carrying their score like
        ``$search``'s, so both layouts are fused alike."""
        assert self._keywords is not None
        text_only = dataclasses.replace(
            query, vector=None, limit=query.depth, weights={"text": 1.0}, keyword_trust=None
        )
        hits = await self._keywords.search(target, text_only)
        ranked = []
        for hit in hits:
            document = dict(hit.document)
            for path in target.unread:
                document.pop(path, None)
            text = hit.sources.get("text")
            document[TEXT_SCORE] = text.score if text is not None else hit.score
            ranked.append(document)
        return ranked


# --- what the documents say now (mongot's pre-filter reads its own, lagging copy) ----------------

_ABSENT: Any = object()


def _field(document: Mapping[str, Any], path: str) -> Any:
    value: Any = document
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _ABSENT
        value = value[part]
    return value


def _equals_any(value: Any, wanted: frozenset[str]) -> bool:
    """MQL equality of a stored value with any of ``wanted`` (strings): an array matches when
    it holds one of them."""
    if isinstance(value, list):
        return any(isinstance(item, str) and item in wanted for item in value)
    return isinstance(value, str) and value in wanted


def _still_matches(document: Mapping[str, Any], resolved: ResolvedFilters) -> bool:
    """Whether ``document``, as stored now, still matches the tenant, filters and exclusions.

    The search stages pre-filter on mongot's copy of the collection, which follows writes
    with a lag, while the documents returned are looked up as they are now: a memory
    superseded a moment ago passes ``status != superseded`` and comes back superseded. A
    field the document does not carry is not re-checked: mongot's pre-filter saw it, and no
    writer of the framework removes a tenant or filter field."""
    for path, value in (*resolved.tenant.items(), *resolved.filters.items()):
        have = _field(document, path)
        wanted = frozenset(value) if isinstance(value, list) else frozenset((value,))
        if have is not _ABSENT and not _equals_any(have, wanted):
            return False
    for path, value in resolved.exclude.items():
        have = _field(document, path)
        unwanted = frozenset(value) if isinstance(value, list) else frozenset((value,))
        if have is not _ABSENT and _equals_any(have, unwanted):
            return False
    for path, span in resolved.ranges.items():
        have = _field(document, path)
        if have is not _ABSENT and not in_span(have, span):
            return False
    return True


def _unread(target: SearchTarget) -> str | list[str]:
    """What ``$unset`` leaves out of the results: the vector, and the target's omitted fields."""
    return target.vector_path if not target.omit_paths else list(target.unread)


def _path(path: str | tuple[str, ...]) -> str | list[str]:
    """A search path as Atlas Search takes it: one field name, or a list of them."""
    return path if isinstance(path, str) else list(path)

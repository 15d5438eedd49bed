"""The plain tier, for any MongoDB without search (and the embedded default): exact cosine
similarity over the tenant's candidates, ``$text`` for keywords, reciprocal rank fusion here.

Round trips: the vector scan and the keyword query run concurrently. The vector scan reads
every candidate of the tenant anyway, so it reads whole documents and the fused top ``limit``
comes from what it read; only keyword hits the scan did not read (a keyword-only search)
need one more ``find``. The embedding is the largest field of a document, so reading whole
documents costs little more than reading ids and vectors, and saves a round trip.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any, ClassVar

import numpy as np
import structlog

from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.search.fusion import RRF_K, reciprocal_rank_fusion
from agent_memory.mongo.search.types import (
    Searcher,
    SearchHit,
    SearchQuery,
    SearchTarget,
    resolve_filters,
)
from agent_memory.mongo.vectors import stack_vectors

__all__ = ["PlainSearcher", "plain_filter", "text_search_string"]

logger = structlog.get_logger(__name__)

#: Keyword matches fetched at most; $text returns matches in index order on some engines, so
#: the ranking by score is done here over what was fetched.
TEXT_FETCH_LIMIT = 1_000
_TEXT_SCORE = "_text_score"
_TERM = re.compile(r"[^\s\"]+")
# MongoDB's English text index ignores stop words; some engines (the embedded one) do not, so
# they are removed from the query here to make keyword ranking the same on both.
_STOP_WORDS = frozenset(
    "a about all am an and any are as at be been but by can could did do does for from had has "
    "have he her him his how i if in into is it its just me my no not of on or our she so than "
    "that the their them then there these they this to too up us was we were what when where "
    "which who whom why will with would you your".split()
)


def plain_filter(target: SearchTarget, query: SearchQuery) -> dict[str, Any]:
    """The ``find`` filter: tenant equality, then validated filters and exclusions."""
    resolved = resolve_filters(target, query)
    result: dict[str, Any] = {path: {"$eq": value} for path, value in resolved.tenant.items()}
    for path, value in resolved.filters.items():
        result[path] = {"$in": value} if isinstance(value, list) else {"$eq": value}
    for path, value in resolved.exclude.items():
        condition = {"$nin": value} if isinstance(value, list) else {"$ne": value}
        if path in result:
            result[path] = {**result[path], **condition}
        else:
            result[path] = condition
    return result


def text_search_string(text: str) -> str:
    """Query text for ``$text`` with its syntax neutralised: no phrases, no negations.

    ``$text`` treats ``"..."`` as a phrase and a leading ``-`` as "must not contain"; user text
    must not change the meaning of the search, so each term is passed as a plain term.
    """
    terms = [term.lstrip("-").strip("?!.,;:()[]{}'") for term in _TERM.findall(text)]
    terms = [term for term in terms if term]
    content = [term for term in terms if term.lower() not in _STOP_WORDS]
    return " ".join(content or terms)


class PlainSearcher(Searcher):
    """Exact search that works on every MongoDB server."""

    tier: ClassVar[str] = "plain"

    def __init__(self, db: Any, *, dimensions: int) -> None:
        self._db = db
        self._dimensions = dimensions

    async def _vector_ranking(
        self,
        collection: Any,
        target: SearchTarget,
        query: SearchQuery,
        where: dict[str, Any],
        documents: dict[Any, dict[str, Any]],
    ) -> list[tuple[Any, float]]:
        """The ranking by cosine similarity; every candidate read (without its vector) is
        put into ``documents``."""
        rows = await collection.find({**where, target.vector_path: {"$exists": True}}).to_list(None)
        if not rows:
            return []
        ids = [row["_id"] for row in rows]
        matrix = stack_vectors([row.pop(target.vector_path) for row in rows], self._dimensions)
        documents.update(zip(ids, rows, strict=True))
        query_vector = np.asarray(query.vector, dtype=np.float32)
        if query_vector.shape != (self._dimensions,):
            raise ValueError(
                f"the query vector has {query_vector.shape[0]} dimensions, expected {self._dimensions}"
            )
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query_vector) or 1.0)
        norms[norms == 0] = 1.0
        similarities = (matrix @ query_vector) / norms
        depth = min(query.depth, len(ids))
        top = np.argpartition(-similarities, depth - 1)[:depth]
        top = top[np.argsort(-similarities[top], kind="stable")]
        return [(ids[i], float(similarities[i])) for i in top]

    async def _text_ranking(
        self, collection: Any, query: SearchQuery, where: dict[str, Any]
    ) -> list[tuple[Any, float]]:
        terms = text_search_string(query.text or "")
        if not terms:
            return []
        cursor = (
            collection.find(
                {**where, "$text": {"$search": terms}},
                {"_id": 1, _TEXT_SCORE: {"$meta": "textScore"}},
            )
            .sort([(_TEXT_SCORE, {"$meta": "textScore"})])
            .limit(TEXT_FETCH_LIMIT)
        )
        rows = await cursor.to_list(None)
        rows.sort(key=lambda row: -float(row.get(_TEXT_SCORE, 0.0)))
        return [(row["_id"], float(row.get(_TEXT_SCORE, 0.0))) for row in rows[: query.depth]]

    async def _search(self, target: SearchTarget, query: SearchQuery) -> list[SearchHit]:
        collection = self._db[target.collection]
        where = plain_filter(target, query)
        with translate_errors(f"searching {target.collection}"):
            runs: dict[str, Any] = {}
            read: dict[Any, dict[str, Any]] = {}
            if query.vector is not None:
                runs["vector"] = self._vector_ranking(collection, target, query, where, read)
            if query.text is not None:
                runs["text"] = self._text_ranking(collection, query, where)
            rankings = dict(zip(runs, await asyncio.gather(*runs.values()), strict=True))
            fused = reciprocal_rank_fusion(rankings, weights=query.weights, k=RRF_K)[: query.limit]
            if not fused:
                return []
            ids = [doc_id for doc_id, _, _ in fused if doc_id not in read]
            if ids:  # keyword hits the vector scan did not read (a keyword-only search)
                docs = await collection.find(
                    {**where, "_id": {"$in": ids}}, {target.vector_path: 0}
                ).to_list(None)
                read.update((doc["_id"], doc) for doc in docs)
        by_id = read
        # A document deleted between the two reads is simply not returned.
        return [
            SearchHit(doc_id, by_id[doc_id], score, sources)
            for doc_id, score, sources in fused
            if doc_id in by_id
        ]

"""A tenant's searchable documents held in memory: vectors, keyword terms and the documents.

The plain tier ranks in the framework. A :class:`Corpus` is what it ranks over: one matrix of
unit vectors, one BM25 index, and the documents themselves (without their vectors and the
target's omitted fields), so that filters are applied here exactly as the server would apply
them (:func:`matches`) and the winners need no second read.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from agent_memory.mongo.search.keywords import Bm25Index, tokenize
from agent_memory.mongo.search.types import ResolvedFilters, SearchTarget
from agent_memory.mongo.vectors import stack_vectors

if TYPE_CHECKING:
    from agent_memory.mongo.search.snapshots import Change

__all__ = ["Corpus", "TokenCache", "matches", "searchable_text"]


def searchable_text(document: Mapping[str, Any], target: SearchTarget) -> str:
    """The text the keyword ranking reads: the target's text fields, in order."""
    parts = [document.get(path) for path in target.text_paths]
    return "\n".join(part for part in parts if isinstance(part, str) and part)


def _field_matches(value: Any, wanted: str | list[str]) -> bool:
    """MongoDB's equality on a field that may hold an array: any element may match."""
    choices = wanted if isinstance(wanted, list) else [wanted]
    if isinstance(value, list):
        return any(item in choices for item in value if isinstance(item, str))
    return isinstance(value, str) and value in choices


def matches(document: Mapping[str, Any], resolved: ResolvedFilters) -> bool:
    """Whether ``document`` passes ``resolved`` as the plain tier's ``find`` filter would
    (``$eq``/``$in`` for filters, ``$ne``/``$nin`` for exclusions; a missing field equals
    nothing, so it fails a filter and passes an exclusion)."""
    for path, value in resolved.tenant.items():
        if document.get(path) != value:
            return False
    for path, wanted in resolved.filters.items():
        if not _field_matches(document.get(path), wanted):
            return False
    return not any(
        _field_matches(document.get(path), unwanted) for path, unwanted in resolved.exclude.items()
    )


class TokenCache:
    """Keyword terms of documents already seen, keyed by id and a digest of their text, so a
    document is tokenized once however often it is searched (an edited text is a new entry)."""

    def __init__(self, capacity: int = 50_000) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[tuple[Hashable, bytes], list[str]] = OrderedDict()

    def tokens(self, doc_id: Hashable, text: str) -> list[str]:
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        key = (doc_id, digest)
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            return found
        terms = tokenize(text)
        self._entries[key] = terms
        if len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        return terms


@dataclass(slots=True)
class Corpus:
    """Documents of one tenant, ready to rank: ``documents[i]`` (without its vector) has the
    unit vector ``matrix[i]`` (zeros where it has none) and the keyword terms ``terms[i]``."""

    documents: list[dict[str, Any]]
    matrix: np.ndarray
    has_vector: np.ndarray
    terms: list[list[str]]
    _bm25: Bm25Index | None = field(default=None, repr=False)

    @classmethod
    def build(
        cls,
        rows: Sequence[Mapping[str, Any]],
        target: SearchTarget,
        *,
        dimensions: int,
        tokens: TokenCache,
    ) -> Corpus:
        """A corpus from whole documents (with their vectors at ``target.vector_path``)."""
        vectors = {row["_id"]: row.get(target.vector_path) for row in rows}
        return cls.merge(rows, vectors, None, target, dimensions=dimensions, tokens=tokens)

    @classmethod
    def merge(
        cls,
        documents: Sequence[Mapping[str, Any]],
        vectors: Mapping[Hashable, Any],
        old: Corpus | None,
        target: SearchTarget,
        *,
        dimensions: int,
        tokens: TokenCache,
    ) -> Corpus:
        """The corpus of ``documents`` as read now: each one's vector from ``vectors`` (as
        stored, ``None`` for none) or else from ``old``; a document in neither was added
        after its vector was read, and is left for the next refresh."""
        held = {} if old is None else {doc_id: i for i, doc_id in enumerate(old.ids)}
        kept: list[dict[str, Any]] = []
        rows: list[np.ndarray | None] = []
        unread = target.unread
        for document in documents:
            doc_id = document["_id"]
            if doc_id in vectors:
                stored = vectors[doc_id]
                rows.append(None if stored is None else stack_vectors([stored], dimensions)[0])
            elif old is not None and doc_id in held:
                position = held[doc_id]
                rows.append(old.matrix[position] if old.has_vector[position] else None)
            else:
                continue
            copy = dict(document)
            for path in unread:  # a written document comes whole (Change.added)
                copy.pop(path, None)
            kept.append(copy)
        has_vector = np.array([row is not None for row in rows], dtype=bool)
        matrix = np.zeros((len(kept), dimensions), dtype=np.float32)
        if has_vector.any():
            stacked = np.stack([row for row in rows if row is not None]).astype(np.float32)
            norms = np.linalg.norm(stacked, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            matrix[has_vector] = stacked / norms
        terms = [tokens.tokens(doc["_id"], searchable_text(doc, target)) for doc in kept]
        return cls(kept, matrix, has_vector, terms)

    def changed(
        self, change: Change, target: SearchTarget, *, dimensions: int, tokens: TokenCache
    ) -> Corpus:
        """This corpus after one writer's ``change``: removed documents dropped, fields set,
        added documents (whole, with their vectors) appended."""
        removed = set(change.removed)
        documents: list[Mapping[str, Any]] = [
            {**doc, **change.fields.get(doc["_id"], {})}
            for doc in self.documents
            if doc["_id"] not in removed
        ]
        present = {doc["_id"] for doc in documents}
        vectors: dict[Hashable, Any] = {}
        for document in change.added:
            if document["_id"] not in present:
                documents.append(document)
                vectors[document["_id"]] = document.get(target.vector_path)
        return Corpus.merge(documents, vectors, self, target, dimensions=dimensions, tokens=tokens)

    def __len__(self) -> int:
        return len(self.documents)

    @property
    def ids(self) -> list[Hashable]:
        return [doc["_id"] for doc in self.documents]

    @property
    def bm25(self) -> Bm25Index:
        if self._bm25 is None:
            self._bm25 = Bm25Index(self.terms)
        return self._bm25

    def mask(self, resolved: ResolvedFilters) -> np.ndarray:
        """Which documents pass the query's tenant, filters and exclusions."""
        return np.array([matches(doc, resolved) for doc in self.documents], dtype=bool)

    def vector_scores(self, vector: np.ndarray) -> np.ndarray:
        """Cosine similarity of every document to ``vector`` (``-inf`` without a vector)."""
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query)) or 1.0
        scores = self.matrix @ (query / norm)
        scores[~self.has_vector] = -np.inf
        return scores

    def keyword_scores(self, text: str, allowed: np.ndarray) -> tuple[np.ndarray, float | None]:
        """BM25 of every document for ``text`` (0 where no term matches), and the coverage of
        the best allowed match (:meth:`Bm25Index.coverage`; None when nothing matched)."""
        query = tokenize(text)
        scores = self.bm25.scores(query)
        candidates = np.flatnonzero(allowed & (scores > 0))
        if candidates.size == 0:
            return scores, None
        best = int(candidates[np.argmax(scores[candidates])])
        return scores, self.bm25.coverage(query, best, self.terms[best])

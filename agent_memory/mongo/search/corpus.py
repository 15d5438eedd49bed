"""A tenant's searchable documents held in memory: vectors, keyword terms and the documents.

The plain tier ranks in the framework. A :class:`Corpus` is what it ranks over: one matrix of
unit vectors, one BM25 index, and the documents themselves (without their vectors and the
target's omitted fields), so that filters are applied here exactly as the server would apply
them (:func:`matches`) and the winners need no second read.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from agent_memory.mongo.search.keywords import KeywordIndex, tokenize
from agent_memory.mongo.search.types import ResolvedFilters, SearchTarget, in_span, moment
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
    nothing, so it fails a filter and passes an exclusion; a span of time holds dates)."""
    for path, value in resolved.tenant.items():
        if document.get(path) != value:
            return False
    for path, wanted in resolved.filters.items():
        if not _field_matches(document.get(path), wanted):
            return False
    for path, span in resolved.ranges.items():
        if not in_span(document.get(path), span):
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


#: Filter masks a corpus keeps ready (one per field and value asked for), beyond which the
#: least recently asked is dropped and built again when asked.
MASKS_KEPT = 32
#: Positions of removed documents a corpus carries before it packs itself again: a quarter of
#: its documents, and never fewer than this.
MIN_DEAD_TO_PACK = 1_000
#: The memory estimate of a kept document besides its vector (:attr:`Corpus.nbytes`): the
#: document, its terms and postings, its place in the indexes...
BYTES_PER_DOCUMENT = 4_000
#: ... and this much per character of its keyword text. Fitted to tracemalloc's count of a
#: long-term memory corpus kept by a search, erring high: 1,000 memories of 256 dimensions
#: took 4.6 KB a memory of 44 characters, 5.1 KB of 214 and 6.1 KB of 622 (the estimate:
#: 5.2, 5.7 and 6.9); a smaller corpus takes more a memory (400: 5.6 to 7.4 KB).
BYTES_PER_TEXT_CHAR = 3


def _values(value: Any, *, scalar: bool) -> list[str]:
    """The strings a filter on a field holding ``value`` can match: the string itself, or
    (``scalar`` false) each string element of an array, as MongoDB's equality matches."""
    if isinstance(value, str):
        return [value]
    if not scalar and isinstance(value, list):
        return [item for item in dict.fromkeys(value) if isinstance(item, str)]
    return []


class Corpus:
    """Documents of one tenant, ready to rank, kept up to date in place as writes come.

    Each document has a position: ``document(i)`` (without its vector) has the unit vector in
    row ``i`` of the matrix (zeros where it has none) and its keyword terms indexed at ``i``.
    A new document takes the next position; a removed one leaves its position dead (masked
    out of every ranking) until dead positions are a quarter of the corpus, when the corpus
    packs itself. So a write costs what it writes, not what the tenant holds.

    Filters are answered from an inverted index of each filtered field (built on the first
    query that filters on it, then kept current by every change), with the masks of the
    values asked for kept ready: a search's filtering is a few array operations, not a test
    of every document.
    """

    def __init__(
        self, target: SearchTarget, *, dimensions: int, tokens: TokenCache | None = None
    ) -> None:
        self._target = target
        self._dimensions = dimensions
        self._tokens = tokens
        self._text_chars = 0  # of the documents held, for the estimate of their memory
        self._documents: list[dict[str, Any] | None] = []
        self._terms: list[list[str] | None] = []
        self._position: dict[Hashable, int] = {}
        self._matrix = np.zeros((0, dimensions), dtype=np.float32)
        self._has_vector = np.zeros(0, dtype=bool)
        self._alive = np.zeros(0, dtype=bool)
        self._keywords = KeywordIndex()
        # field -> value -> positions holding it; and the masks of values asked for
        self._index: dict[str, dict[str, set[int]]] = {}
        self._masks: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        # date field -> each position's date as seconds since the epoch (NaN: none), for
        # spans of time; built on the first query that asks, then kept current
        self._times: dict[str, np.ndarray] = {}
        self._dead = 0

    # --- building ---------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        rows: Sequence[Mapping[str, Any]],
        target: SearchTarget,
        *,
        dimensions: int,
        tokens: TokenCache | None = None,
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
        tokens: TokenCache | None = None,
    ) -> Corpus:
        """The corpus of ``documents`` as read now: each one's vector from ``vectors`` (as
        stored, ``None`` for none) or else from ``old``; a document in neither was added
        after its vector was read, and is left for the next refresh. A document whose text
        ``old`` holds unchanged keeps its terms (no tokenizing again)."""
        corpus = cls(target, dimensions=dimensions, tokens=tokens)
        kept: list[Mapping[str, Any]] = []
        rows: list[Any] = []
        for document in documents:
            doc_id = document["_id"]
            if doc_id in vectors:
                rows.append(vectors[doc_id])
            elif old is not None and doc_id in old._position:
                rows.append(old.vector(doc_id))
            else:
                continue
            kept.append(document)
        corpus._append(kept, rows, reuse=old)
        return corpus

    def _append(
        self,
        documents: Sequence[Mapping[str, Any]],
        stored: Sequence[Any],
        *,
        reuse: Corpus | None = None,
    ) -> None:
        """Add ``documents`` at the next positions, with their vectors (as stored, an array
        already unit length, or ``None``); terms of a text ``reuse`` holds unchanged are
        taken from it."""
        if not documents:
            return
        first = len(self._documents)
        count = len(documents)
        self._grow(first + count)
        raw = [
            (offset, value)
            for offset, value in enumerate(stored)
            if value is not None and not isinstance(value, np.ndarray)
        ]
        if raw:
            stacked = stack_vectors([value for _, value in raw], self._dimensions)
            norms = np.linalg.norm(stacked, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            rows = [first + offset for offset, _ in raw]
            self._matrix[rows] = stacked / norms
            self._has_vector[rows] = True
        for offset, value in enumerate(stored):
            if isinstance(value, np.ndarray):  # a row of another corpus: unit length already
                self._matrix[first + offset] = value
                self._has_vector[first + offset] = True
        unread = self._target.unread
        for offset, document in enumerate(documents):
            position = first + offset
            copy = dict(document)
            for path in unread:  # a written document comes whole (Change.added)
                copy.pop(path, None)
            text = searchable_text(copy, self._target)
            terms = None if reuse is None else reuse._same_terms(copy["_id"], text)
            if terms is None:
                terms = (
                    tokenize(text)
                    if self._tokens is None
                    else self._tokens.tokens(copy["_id"], text)
                )
            self._text_chars += len(text)
            self._documents.append(copy)
            self._terms.append(terms)
            self._position[copy["_id"]] = position
            self._keywords.add(position, terms)
            self._alive[position] = True
            self._index_fields(position, copy, add=True)
            for path, times in self._times.items():
                times[position] = moment(copy.get(path))

    def holds_as(self, document: Mapping[str, Any]) -> bool:
        """Whether this corpus holds ``document`` with the same searchable text (so that its
        kept vector, embedded from that text, is still the stored one)."""
        doc_id = document["_id"]
        return self._same_terms(doc_id, searchable_text(document, self._target)) is not None

    def _same_terms(self, doc_id: Hashable, text: str) -> list[str] | None:
        """The terms of ``doc_id`` when this corpus holds it with ``text``, else ``None``."""
        position = self._position.get(doc_id)
        if position is None:
            return None
        document = self._documents[position]
        if document is None or searchable_text(document, self._target) != text:
            return None
        return self._terms[position]

    def _grow(self, size: int) -> None:
        capacity = len(self._alive)
        if size <= capacity:
            return
        capacity = max(size, 2 * capacity, 64)
        matrix = np.zeros((capacity, self._dimensions), dtype=np.float32)
        matrix[: len(self._matrix)] = self._matrix
        self._matrix = matrix
        self._has_vector = _resized(self._has_vector, capacity)
        self._alive = _resized(self._alive, capacity)
        for key, mask in self._masks.items():
            self._masks[key] = _resized(mask, capacity)
        for path, times in self._times.items():
            self._times[path] = _resized(times, capacity, fill=np.nan)

    # --- changes ----------------------------------------------------------------------------

    def changed(self, change: Change) -> Corpus:
        """This corpus after one writer's ``change``: removed documents dropped, fields set,
        added documents (whole, with their vectors) appended. Changes the corpus in place
        (and returns it): a search ranks without awaiting, so none sees it half-changed."""
        for doc_id in change.removed:
            self._remove(doc_id)
        moved: list[tuple[dict[str, Any], Any]] = []
        text_paths = {*self._target.text_paths, self._target.vector_path}
        for doc_id, update in change.fields.items():
            position = self._position.get(doc_id)
            if position is None or not update:
                continue
            if text_paths & set(update):
                # New text or vector: the document moves to a new position (its postings
                # cannot be edited in place).
                document = {**self._documents[position], **update}  # type: ignore[dict-item]
                vector = update.get(self._target.vector_path, self.vector(doc_id))
                self._remove(doc_id)
                moved.append((document, vector))
            else:
                self.set_fields(doc_id, update)
        added = [document for document in change.added if document["_id"] not in self._position]
        added_ids = {document["_id"] for document in added}
        moved = [(doc, vector) for doc, vector in moved if doc["_id"] not in added_ids]
        self._append(
            [*(doc for doc, _ in moved), *added],
            [*(vector for _, vector in moved), *(d.get(self._target.vector_path) for d in added)],
        )
        self._pack_if_sparse()
        return self

    def set_fields(self, doc_id: Hashable, update: Mapping[str, Any]) -> None:
        """Set fields of one kept document (not its text or vector: see :meth:`changed`)."""
        position = self._position.get(doc_id)
        if position is None:
            return
        old = self._documents[position]
        assert old is not None
        unread = self._target.unread
        if any(path in unread for path in update):  # never kept (the vector, the omitted)
            update = {path: value for path, value in update.items() if path not in unread}
        if any(path in self._index for path in update):
            self._index_fields(position, old, add=False, paths=update.keys())
            new = {**old, **update}
            self._index_fields(position, new, add=True, paths=update.keys())
        else:
            new = {**old, **update}
        for path, times in self._times.items():
            if path in update:
                times[position] = moment(new.get(path))
        self._documents[position] = new

    def _remove(self, doc_id: Hashable) -> None:
        position = self._position.pop(doc_id, None)
        if position is None:
            return
        document = self._documents[position]
        assert document is not None
        self._index_fields(position, document, add=False)
        self._keywords.remove(self._terms[position] or ())
        self._text_chars -= len(searchable_text(document, self._target))
        self._documents[position] = None
        self._terms[position] = None
        self._alive[position] = False
        self._has_vector[position] = False
        self._dead += 1

    def _pack_if_sparse(self) -> None:
        if self._dead < max(MIN_DEAD_TO_PACK, len(self._position) // 4):
            return
        live = [doc for doc in self._documents if doc is not None]
        vectors = [self.vector(doc["_id"]) for doc in live]
        packed = Corpus(self._target, dimensions=self._dimensions, tokens=self._tokens)
        packed._append(live, vectors, reuse=self)
        self.__dict__.update(packed.__dict__)  # same target, tokens and dimensions

    # --- filters ----------------------------------------------------------------------------

    def _index_fields(
        self,
        position: int,
        document: Mapping[str, Any],
        *,
        add: bool,
        paths: Iterable[str] | None = None,
    ) -> None:
        """Add ``document``'s values at ``position`` to (or remove them from) the indexes of
        the fields indexed so far, and the masks kept ready."""
        for path in self._index if paths is None else paths:
            index = self._index.get(path)
            if index is None:
                continue
            scalar = path in self._target.tenant_paths
            for value in _values(document.get(path), scalar=scalar):
                if add:
                    index.setdefault(value, set()).add(position)
                else:
                    holders = index.get(value)
                    if holders is not None:
                        holders.discard(position)
                        if not holders:
                            del index[value]
                mask = self._masks.get((path, value))
                if mask is not None:
                    mask[position] = add

    def _field(self, path: str) -> dict[str, set[int]]:
        index = self._index.get(path)
        if index is None:
            index = self._index[path] = {}
            scalar = path in self._target.tenant_paths
            for position, document in enumerate(self._documents):
                if document is not None:
                    for value in _values(document.get(path), scalar=scalar):
                        index.setdefault(value, set()).add(position)
        return index

    def _mask_of(self, path: str, value: str) -> np.ndarray:
        """Positions whose ``path`` holds ``value``, as a mask over the capacity."""
        key = (path, value)
        mask = self._masks.get(key)
        if mask is not None:
            self._masks.move_to_end(key)
            return mask
        mask = np.zeros(len(self._alive), dtype=bool)
        holders = self._field(path).get(value)
        if holders:
            mask[np.fromiter(holders, dtype=np.int64, count=len(holders))] = True
        self._masks[key] = mask
        if len(self._masks) > MASKS_KEPT:
            self._masks.popitem(last=False)
        return mask

    def _times_of(self, path: str) -> np.ndarray:
        """Each position's date at ``path`` in seconds since the epoch (NaN: none)."""
        times = self._times.get(path)
        if times is None:
            times = np.full(len(self._alive), np.nan)
            for position, document in enumerate(self._documents):
                if document is not None:
                    times[position] = moment(document.get(path))
            self._times[path] = times
        return times

    def _in_span(self, path: str, span: tuple[datetime | None, datetime | None]) -> np.ndarray:
        times = self._times_of(path)[: len(self._documents)]
        start, end = span
        with np.errstate(invalid="ignore"):  # NaN (no date) compares false: outside
            result = ~np.isnan(times)
            if start is not None:
                result &= times >= start.timestamp()
            if end is not None:
                result &= times < end.timestamp()
        return result

    def _any_of(self, path: str, wanted: str | list[str]) -> np.ndarray:
        size = len(self._documents)
        choices = wanted if isinstance(wanted, list) else [wanted]
        result = self._mask_of(path, choices[0])[:size].copy()
        for value in choices[1:]:
            result |= self._mask_of(path, value)[:size]
        return result

    def mask(self, resolved: ResolvedFilters) -> np.ndarray:
        """Which positions hold a document that passes the query's tenant, filters and
        exclusions (as :func:`matches` says), over :meth:`positions`."""
        result = self._alive[: len(self._documents)].copy()
        for path, value in resolved.tenant.items():
            result &= self._any_of(path, value)
        for path, wanted in resolved.filters.items():
            result &= self._any_of(path, wanted)
        for path, unwanted in resolved.exclude.items():
            result &= ~self._any_of(path, unwanted)
        for path, span in resolved.ranges.items():
            result &= self._in_span(path, span)
        return result

    # --- reading ----------------------------------------------------------------------------

    def __len__(self) -> int:
        """Documents held (dead positions not counted)."""
        return len(self._position)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._position

    def get(self, doc_id: Hashable) -> Mapping[str, Any] | None:
        """The kept document with ``doc_id`` (not a copy: not to be changed), or ``None``."""
        position = self._position.get(doc_id)
        return None if position is None else self._documents[position]

    @property
    def nbytes(self) -> int:
        """An estimate of the memory this corpus holds: its arrays, and per document
        :data:`BYTES_PER_DOCUMENT` plus :data:`BYTES_PER_TEXT_CHAR` per character of its text
        (measured with tracemalloc: 4 to 5 KB a memory of 30 words besides its vector)."""
        arrays = self._matrix.nbytes + self._has_vector.nbytes + self._alive.nbytes
        return (
            arrays
            + BYTES_PER_DOCUMENT * len(self._documents)
            + BYTES_PER_TEXT_CHAR * self._text_chars
        )

    @property
    def positions(self) -> int:
        """Positions in use, dead ones included: the length of every score array."""
        return len(self._documents)

    @property
    def alive(self) -> np.ndarray:
        """Which positions hold a document."""
        return self._alive[: len(self._documents)].copy()

    @property
    def ids(self) -> list[Hashable]:
        return list(self._position)

    @property
    def documents(self) -> list[dict[str, Any]]:
        """The documents held, in position order (a new list; the documents are the kept
        ones)."""
        return [document for document in self._documents if document is not None]

    def document(self, position: int) -> dict[str, Any]:
        found = self._documents[position]
        if found is None:
            raise KeyError(position)
        return found

    def terms(self, position: int) -> list[str]:
        return self._terms[position] or []

    def vector(self, doc_id: Hashable) -> np.ndarray | None:
        """The kept unit vector of a document, ``None`` when it has none."""
        position = self._position[doc_id]
        return self._matrix[position].copy() if self._has_vector[position] else None

    def vector_scores(self, vector: np.ndarray) -> np.ndarray:
        """Cosine similarity at every position to ``vector`` (``-inf`` without a vector)."""
        size = len(self._documents)
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query)) or 1.0
        # One dot product per row, in this thread: BLAS's matrix-vector product hands the
        # work to its own threads, which on a busy machine (the embedded server's thread,
        # other processes) wait to be scheduled: 0.1 ms for 10,000 rows alone, 8 ms with the
        # second core taken. numpy's vecdot is twice as fast as einsum here (0.19 against
        # 0.39 ms at 10,000 rows of 256 floats, 7.7 against 13 ms at 100,000).
        scores = _row_dots(self._matrix[:size], query / norm)
        scores[~self._has_vector[:size]] = -np.inf
        return scores

    def vector_scores_many(self, vectors: np.ndarray) -> np.ndarray:
        """:meth:`vector_scores` for each row of ``vectors`` (queries by row), in one
        matrix product: the kept matrix is read once for all of them, where one product per
        query reads it once each (at 100,000 rows of 256 floats, 3 ms a query either way,
        bound by memory)."""
        size = len(self._documents)
        queries = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(queries, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        scores = np.matmul(queries / norms, self._matrix[:size].T)
        scores[:, ~self._has_vector[:size]] = -np.inf
        return scores

    def keyword_scores(self, text: str, allowed: np.ndarray) -> tuple[np.ndarray, float | None]:
        """BM25 at every position for ``text`` (0 where no term matches), and the coverage of
        the best allowed match (:meth:`KeywordIndex.coverage`; None when nothing matched)."""
        query = tokenize(text)
        scores = self._keywords.scores(query)[: len(self._documents)]
        candidates = np.flatnonzero(allowed & (scores > 0))
        if candidates.size == 0:
            return scores, None
        best = int(candidates[np.argmax(scores[candidates])])
        return scores, self._keywords.coverage(query, self.terms(best))


def _resized(mask: np.ndarray, capacity: int, *, fill: Any = 0) -> np.ndarray:
    grown = np.full(capacity, fill, dtype=mask.dtype)
    grown[: len(mask)] = mask
    return grown


#: numpy 2's ``vecdot`` (``None`` on numpy 1.26, which has ``einsum`` only).
_VECDOT = getattr(np, "vecdot", None)


def _row_dots(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Each row of ``matrix`` times ``vector``."""
    if _VECDOT is None:  # pragma: no cover - numpy 1.26
        return np.einsum("ij,j->i", matrix, vector)
    return _VECDOT(matrix, vector)

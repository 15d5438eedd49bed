"""What a search asks for and what it returns, the same on every tier."""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, ClassVar

import numpy as np
import structlog

from agent_memory._log import get_logger
from agent_memory.checks import check_int, check_moment, check_number, shown
from agent_memory.errors import InvalidInputError
from agent_memory.mongo.batches import BOUND
from agent_memory.mongo.search.trust import KeywordTrust

__all__ = [
    "MAX_CANDIDATES",
    "ResolvedFilters",
    "FilterValue",
    "SearchHit",
    "SearchQuery",
    "SearchTarget",
    "SourceScore",
    "Searcher",
    "TimeRange",
    "in_span",
    "moment",
    "resolve_filters",
]

logger = get_logger("agent_memory.mongo.search")

#: Atlas Vector Search's upper bound for numCandidates and limit.
MAX_CANDIDATES = 10_000
MAX_QUERY_CHARS = 8_000

FilterValue = str | list[str] | tuple[str, ...]
#: A span of time: from the first moment (included) to the second (not included); ``None``
#: leaves that side open.
TimeRange = tuple[datetime | None, datetime | None]


@dataclass(frozen=True, slots=True)
class SearchTarget:
    """A collection that can be searched, with the names its indexes have.

    ``filter_paths`` are the fields declared as ``filter`` in the vector index and as
    ``token`` in the text index; searches may filter on these and nothing else, so a
    filter can never name a field the Atlas index does not pre-filter on.
    """

    collection: str
    vector_index: str
    text_index: str
    vector_path: str = "embedding"
    #: The field the keyword search reads, or several (searched together).
    text_path: str | tuple[str, ...] = "content"
    tenant_paths: tuple[str, ...] = ("agent_id", "user_id")
    filter_paths: frozenset[str] = frozenset()

    #: Whether the plain tier may keep this collection's documents in memory between searches:
    #: true only where every writer announces its writes (see ``search.snapshots``).
    snapshot: bool = False
    #: Fields no search reads or returns (history a ranking has no use for): left out of what
    #: searches load, like the vector, and of the documents the plain tier keeps.
    omit_paths: tuple[str, ...] = ()
    #: Date fields a search may keep to a span of time (``SearchQuery.ranges``): declared as
    #: ``filter`` in the vector index and as ``date`` in the text index.
    range_paths: frozenset[str] = frozenset()

    @property
    def unread(self) -> tuple[str, ...]:
        """The vector and the omitted fields: what a search returns without."""
        return (self.vector_path, *self.omit_paths)

    @property
    def text_paths(self) -> tuple[str, ...]:
        return (self.text_path,) if isinstance(self.text_path, str) else self.text_path

    def __post_init__(self) -> None:
        missing = set(self.tenant_paths) - set(self.filter_paths)
        if missing:
            raise ValueError(f"tenant paths must be filterable: {sorted(missing)}")


def _check_value(path: str, value: Any) -> str:
    # Filterable fields are indexed as `token` for Atlas Search, where `equals` and `in` match
    # strings only; a number would silently match nothing there while $vectorSearch applied
    # it. And a dict or other object must never reach a query: it could become an operator.
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInputError(f"filter {path!r}: NaN and infinity are not allowed")
    raise InvalidInputError(f"filter {path!r}: values must be str, got {type(value).__name__}")


def check_filters(
    filters: Mapping[str, FilterValue], allowed: frozenset[str], *, kind: str
) -> dict[str, str | list[str]]:
    """Validate filter paths against ``allowed`` and values as strings (or lists of them)."""
    if not isinstance(filters, Mapping):
        raise InvalidInputError(f"{kind} must be a mapping of field to value")
    checked: dict[str, str | list[str]] = {}
    for path, value in filters.items():
        if not isinstance(path, str) or path not in allowed:
            raise InvalidInputError(
                f"{kind}: cannot filter on {shown(path)}; filterable fields are {sorted(allowed)}"
            )
        if isinstance(value, list | tuple):
            if not value:
                raise InvalidInputError(f"{kind} {path!r}: an empty list matches nothing")
            if len(value) > BOUND:  # one $in of a query; servers limit its size
                raise InvalidInputError(
                    f"{kind} {path!r}: at most {BOUND} values, got {len(value)}"
                )
            checked[path] = [_check_value(path, item) for item in value]
        else:
            checked[path] = _check_value(path, value)
    return checked


def check_ranges(
    ranges: Mapping[str, TimeRange], allowed: frozenset[str]
) -> dict[str, tuple[datetime | None, datetime | None]]:
    """Validate spans of time: paths among ``allowed``, each a (from, until) pair of
    timezone-aware datetimes or ``None``, from before until; in UTC to the millisecond."""
    if not isinstance(ranges, Mapping):
        raise InvalidInputError("ranges must be a mapping of field to (from, until)")
    checked: dict[str, tuple[datetime | None, datetime | None]] = {}
    for path, span in ranges.items():
        if not isinstance(path, str) or path not in allowed:
            raise InvalidInputError(
                f"ranges: cannot keep {shown(path)} to a span of time; such fields are "
                f"{sorted(allowed)}"
            )
        if not isinstance(span, tuple | list) or len(span) != 2:
            raise InvalidInputError(f"ranges {shown(path)}: a (from, until) pair of datetimes")
        start, end = (
            None if value is None else check_moment(value, f"ranges {shown(path)} {side}")
            for value, side in zip(span, ("from", "until"), strict=True)
        )
        if start is not None and end is not None and start >= end:
            raise InvalidInputError(f"ranges {shown(path)}: from must be before until")
        if start is not None or end is not None:
            checked[path] = (start, end)
    return checked


def moment(value: Any) -> float:
    """A stored date as seconds since the epoch (a date without a zone is UTC, as BSON's);
    NaN for anything else, which no span of time holds."""
    if not isinstance(value, datetime):
        return float("nan")
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()


def in_span(value: Any, span: tuple[datetime | None, datetime | None]) -> bool:
    """Whether a stored date lies in ``span`` (from included, until not), as the plain
    tier's ``find`` keeps it with ``$gte``/``$lt``; anything but a date does not."""
    at = moment(value)
    start, end = span
    return (
        at == at
        and (start is None or at >= start.timestamp())
        and (end is None or at < end.timestamp())
    )


@dataclass(frozen=True, slots=True)
class ResolvedFilters:
    """Tenant, filters, exclusions and spans of time of a query, checked against a target."""

    tenant: dict[str, str]
    filters: dict[str, str | list[str]]
    exclude: dict[str, str | list[str]]
    #: Field -> (from, until), UTC; a document whose field is missing is outside every span.
    ranges: dict[str, tuple[datetime | None, datetime | None]] = field(default_factory=dict)


def resolve_filters(target: SearchTarget, query: SearchQuery) -> ResolvedFilters:
    """Check a query's scope and filters against ``target``.

    The tenant must name exactly the target's tenant paths, and filters may not touch them:
    a filter on ``user_id`` would otherwise widen or move the search to another tenant.
    """
    if set(query.tenant) != set(target.tenant_paths):
        raise InvalidInputError(
            f"a search of {target.collection} must be scoped by {list(target.tenant_paths)}, "
            f"got {sorted(query.tenant)}"
        )
    allowed = target.filter_paths - set(target.tenant_paths)
    return ResolvedFilters(
        tenant={path: query.tenant[path] for path in target.tenant_paths},
        filters=check_filters(query.filters, allowed, kind="filters"),
        exclude=check_filters(query.exclude, allowed, kind="exclude"),
        ranges=check_ranges(query.ranges, target.range_paths),
    )


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """One search within one tenant.

    ``filters`` keep documents whose field equals the value (or any value of a list);
    ``exclude`` drops documents whose field equals the value (or any of a list). Either text,
    vector or both must be given; with both, the two rankings are fused.
    """

    tenant: Mapping[str, str]
    text: str | None = None
    vector: np.ndarray | None = None
    filters: Mapping[str, FilterValue] = field(default_factory=dict)
    exclude: Mapping[str, FilterValue] = field(default_factory=dict)
    limit: int = 10
    num_candidates: int | None = None
    weights: Mapping[str, float] = field(default_factory=lambda: {"vector": 1.0, "text": 1.0})
    #: Plain tier: the keyword weight is scaled by the coverage of its best match to this power.
    coverage_power: float = 0.0
    #: Plain tier: learn per tenant how far keyword matches can be trusted (:mod:`.trust`);
    #: None keeps the weights as given (and teaches the tenant's ledger nothing).
    keyword_trust: KeywordTrust | None = None
    #: Whether this query counts in the tenant's keyword trust (it is still ranked by it).
    learns: bool = True
    #: ... and only when some allowed document's cosine similarity to the query vector reaches
    #: this (a question a memory answers, not one about the weather); None: no such condition.
    learn_above: float | None = None
    #: Weights for one tier only (``{"atlas": {...}}``): each tier fuses its own way (z-scores
    #: on the plain tier, reciprocal ranks on Atlas), so a caller gives each its weights and
    #: the searcher picks its own (:meth:`weights_for`); a tier not named uses ``weights``.
    tier_weights: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: Keep documents whose date field lies in a span of time (``SearchTarget.range_paths``).
    ranges: Mapping[str, TimeRange] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.text is None and self.vector is None:
            raise InvalidInputError("a search needs query text, a query vector, or both")
        if self.text is not None:
            if not isinstance(self.text, str):
                raise InvalidInputError(f"query text must be a str, got {type(self.text).__name__}")
            if not self.text.strip():
                raise InvalidInputError("query text is empty")
            if len(self.text) > MAX_QUERY_CHARS:
                raise InvalidInputError(
                    f"query text has {len(self.text)} characters; the limit is {MAX_QUERY_CHARS}"
                )
        if self.vector is not None:
            vector = np.asarray(self.vector)
            if vector.ndim != 1 or vector.size == 0 or not np.isfinite(vector).all():
                raise InvalidInputError("the query vector must be a non-empty finite 1-d array")
        check_int(self.limit, "limit", minimum=1, maximum=MAX_CANDIDATES)
        if self.num_candidates is not None:  # from limit up
            check_int(
                self.num_candidates, "num_candidates", minimum=self.limit, maximum=MAX_CANDIDATES
            )
        if not isinstance(self.tenant, Mapping) or not self.tenant:
            raise InvalidInputError("a search must be scoped to a tenant")
        for key, value in self.tenant.items():
            if not isinstance(value, str) or not value:
                raise InvalidInputError(f"tenant {key!r} must be a non-empty str")
        check_number(self.coverage_power, "coverage_power", minimum=0, maximum=8)
        if self.keyword_trust is not None and not isinstance(self.keyword_trust, KeywordTrust):
            raise InvalidInputError("keyword_trust must be a KeywordTrust or None")
        if not isinstance(self.learns, bool):
            raise InvalidInputError("learns must be a bool")
        if self.learn_above is not None:  # a cosine similarity
            check_number(self.learn_above, "learn_above", minimum=-1, maximum=1)
        if not isinstance(self.tier_weights, Mapping) or not set(self.tier_weights) <= {
            "plain",
            "atlas",
        }:
            raise InvalidInputError("tier_weights maps 'plain' or 'atlas' to weights")
        for weights in (self.weights, *self.tier_weights.values()):
            if not isinstance(weights, Mapping):
                raise InvalidInputError("weights map 'vector' and 'text' to numbers")
            for name, weight in weights.items():
                if name not in ("vector", "text") or not (
                    isinstance(weight, int | float)
                    and not isinstance(weight, bool)
                    and math.isfinite(weight)
                    and weight >= 0
                ):
                    raise InvalidInputError(
                        "weights are non-negative numbers for 'vector' and 'text'"
                    )

    def weights_for(self, tier: str) -> Mapping[str, float]:
        """The source weights the ``tier`` fuses with."""
        return self.tier_weights.get(tier, self.weights)

    @property
    def depth(self) -> int:
        """How many results each source contributes before fusion."""
        depth = min(MAX_CANDIDATES, max(self.limit * 5, 50))
        return depth if self.num_candidates is None else min(depth, self.num_candidates)

    @property
    def ann_candidates(self) -> int:
        """``numCandidates`` for approximate search: about twenty per result, within bounds."""
        if self.num_candidates is not None:
            return self.num_candidates
        return min(MAX_CANDIDATES, self.depth * 20)


@dataclass(frozen=True, slots=True)
class SourceScore:
    """A document's place in one source's ranking: 1-based ``rank`` and the raw ``score``
    (cosine similarity for vectors, the text engine's relevance for keywords)."""

    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A found document with its fused ``score`` (on the tier's own scale), the ranking in
    each source that found it, and its ``relevance`` from 0 to 1 in the search's order, set by
    the searcher (:meth:`Searcher.search`): the one score a caller needs, on every tier."""

    id: Any
    document: dict[str, Any]
    score: float
    sources: Mapping[str, SourceScore]
    relevance: float = 0.0

    def explain(self) -> str:
        parts = [
            f"{name} #{source.rank} ({source.score:.3f})"
            for name, source in sorted(self.sources.items())
        ]
        return f"fused {self.score:.4f} = " + " + ".join(parts)


class Searcher(ABC):
    """Runs a :class:`SearchQuery` against a :class:`SearchTarget` on one tier.

    The searcher owns what differs between tiers, so the memories above it never ask which
    tier they run on: the weights it fuses with (:meth:`SearchQuery.weights_for`), the
    relevance from 0 to 1 of each hit (:attr:`relevance_scale`), and whether a document
    written a moment ago is already found (:attr:`sees_writes_at_once`).
    """

    tier: ClassVar[str]
    #: How the fused scores become relevances (:func:`.fusion.relevances`): ``"z"`` for
    #: weighted z-scores, ``"rank"`` for reciprocal-rank scores.
    relevance_scale: ClassVar[str] = "z"
    #: Whether a search finds what was written before it at once (an index that catches up
    #: with writes asynchronously, as Atlas's search indexes do, does not).
    sees_writes_at_once: ClassVar[bool] = True

    async def search(self, target: SearchTarget, query: SearchQuery) -> list[SearchHit]:
        """The fused top ``query.limit`` hits, best first, each with its relevance."""
        from agent_memory.mongo.search.fusion import relevances

        started = time.perf_counter()
        # Events logged while searching (retries, warnings) carry the tenant they concern.
        with structlog.contextvars.bound_contextvars(**query.tenant):
            hits = await self._search(target, query)
            scaled = relevances([hit.score for hit in hits], scale=self.relevance_scale)
            hits = [replace(hit, relevance=value) for hit, value in zip(hits, scaled, strict=True)]
            _log_search(self.tier, target, query, hits, started)
        return hits

    #: Whether :meth:`search_many` answers its queries together for less than one search
    #: each (the plain tier ranks a kept corpus against every query's vector in one
    #: product); callers may then ask ahead for queries they might not need.
    answers_together: ClassVar[bool] = False

    async def search_many(
        self, target: SearchTarget, queries: Sequence[SearchQuery]
    ) -> list[list[SearchHit]]:
        """:meth:`search` for each of ``queries``, in order, each hit with its relevance."""
        from agent_memory.mongo.search.fusion import relevances

        started = time.perf_counter()
        answers = await self._search_many(target, queries)
        result = []
        for query, hits in zip(queries, answers, strict=True):
            with structlog.contextvars.bound_contextvars(**query.tenant):
                scaled = relevances([hit.score for hit in hits], scale=self.relevance_scale)
                hits = [
                    replace(hit, relevance=value) for hit, value in zip(hits, scaled, strict=True)
                ]
                _log_search(self.tier, target, query, hits, started)
            result.append(hits)
        return result

    async def _search_many(
        self, target: SearchTarget, queries: Sequence[SearchQuery]
    ) -> list[list[SearchHit]]:
        return [await self._search(target, query) for query in queries]

    @abstractmethod
    async def _search(self, target: SearchTarget, query: SearchQuery) -> list[SearchHit]: ...


def _log_search(
    tier: str, target: SearchTarget, query: SearchQuery, hits: list[SearchHit], started: float
) -> None:
    """One debug event per search: what kind of search and how it went, never the query."""
    logger.debug(
        "search_completed",
        tier=tier,
        collection=target.collection,
        sources=[
            name
            for name, given in (("vector", query.vector), ("text", query.text))
            if given is not None
        ],
        limit=query.limit,
        hits=len(hits),
        duration_ms=round((time.perf_counter() - started) * 1000, 1),
    )

"""Contract tests: the Atlas pipelines and index definitions against MongoDB's documented rules.

No server is needed. Every searchable collection in the catalog (``atlas_indexes/*.json``) is
checked, so a collection added later is covered without touching this file.

What MongoDB's documentation says, checked against the docs sources (paraphrased):

``$vectorSearch`` -- https://www.mongodb.com/docs/atlas/atlas-vector-search/vector-search-stage/
  * Must be the first stage of any pipeline it appears in; not allowed in view definitions,
    ``$lookup`` sub-pipelines or ``$facet``.
  * Fields: ``exact``, ``filter``, ``index``, ``limit``, ``numCandidates``, ``path``,
    ``queryVector``. ``limit`` is an int and may not exceed ``numCandidates``;
    ``numCandidates`` is required for ANN search, must be <= 10000 and not below ``limit``
    (about 20x ``limit`` is the recommended starting point). ``queryVector`` must have as many
    numbers as the index's ``numDimensions``.
  * ``filter`` is MQL on fields indexed with ``type: "filter"``, and only these operators:
    equality ``$eq`` ``$ne``; range ``$gt`` ``$lt`` ``$gte`` ``$lte``; set ``$in`` ``$nin``;
    existence ``$exists`` (added in the current page; older revisions list it without);
    logical ``$not`` ``$nor`` ``$and`` ``$or``. No other query, aggregation or Atlas Search
    operators. The short form of ``$eq`` is accepted.
  * Filter values may be boolean, date, objectId, numeric, string and UUID values, including
    arrays of these (the docs' ``avs-filter-types`` constant).
  * Score: ``{"$meta": "vectorSearchScore"}`` after the stage.

Vector index definition -- https://www.mongodb.com/docs/atlas/atlas-vector-search/vector-search-type/
  * ``fields`` holds at least one ``type: "vector"`` entry plus optional ``type: "filter"``
    entries (``type`` and ``path`` only). Vector fields take ``numDimensions`` (at most 8192),
    ``similarity`` (``euclidean``, ``cosine`` or ``dotProduct``), optional ``quantization``
    (``none``, ``scalar``, ``binary``) and optional ``hnswOptions``.

``$search`` -- https://www.mongodb.com/docs/atlas/atlas-search/aggregation-stages/search/
  * Must be the first stage of any pipeline it appears in; ``index`` names the search index.
  * Score: ``{"$meta": "searchScore"}`` after the stage.
``compound`` -- https://www.mongodb.com/docs/atlas/atlas-search/operators-collectors/compound/
  * Clauses ``must``, ``mustNot``, ``should``, ``filter``, each an array of operators;
    ``filter`` and ``mustNot`` do not contribute to the score.
``equals`` -- https://www.mongodb.com/docs/atlas/atlas-search/operators-collectors/equals/
  * Matches boolean, objectId, number, date, uuid, null, and strings only where the path is
    indexed with the ``token`` type; array fields match when any element matches.
``in`` -- https://www.mongodb.com/docs/atlas/atlas-search/operators-collectors/in/
  * ``value`` is one value or an array of values of a single BSON type (no mixing); string
    values need the path indexed as ``token``.

``$rankFusion`` -- https://www.mongodb.com/docs/manual/reference/operator/aggregation/rankFusion/
  * Syntax ``{input: {pipelines: {name: [...]}}, combination: {weights: {name: n}},
    scoreDetails: bool}``; weights are non-negative numbers (default 1).
  * Every input pipeline must be a selection pipeline (only ``$match``, ``$search``,
    ``$vectorSearch``, ``$sample``, ``$geoNear``, ``$sort``, ``$skip``, ``$limit``: nothing
    that modifies documents) and a ranked pipeline (starts with ``$search``, ``$vectorSearch``
    or ``$geoNear``, or contains ``$sort``). Modifications go after the stage.
  * Pipeline names: not empty, no leading ``$``, no ``.``, no NUL.
  * With ``scoreDetails: true`` the details are read with ``{"$meta": "scoreDetails"}`` in a
    later ``$project``/``$addFields`` stage. Shape: ``{value, description, details: [...]}``
    where each entry has ``inputPipelineName``, ``rank`` (the docs note ``N/A`` for a document
    missing from that input), ``weight``, optional ``value`` and ``details``.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.memory.long_term.fields import FIELD, FIELDS_TAG, by_fields
from agent_memory.mongo.catalog import IndexCatalog, SearchIndexSpec, definitions_dir
from agent_memory.mongo.search.atlas import (
    STALE_MARGIN,
    parse_score_details,
    rank_fusion_pipeline,
    text_search_pipeline,
    vector_search_pipeline,
)
from agent_memory.mongo.search.types import MAX_CANDIDATES, SearchQuery, SearchTarget
from agent_memory.providers.embedders.fake import FakeEmbedder

# --- documented facts, as data ---------------------------------------------------------------

VECTOR_STAGE_FIELDS = frozenset(
    {"exact", "filter", "index", "limit", "numCandidates", "path", "queryVector"}
)
VECTOR_FILTER_OPERATORS = frozenset(
    {"$eq", "$ne", "$gt", "$lt", "$gte", "$lte", "$in", "$nin", "$exists"}
    | {"$not", "$nor", "$and", "$or"}
)
LOGICAL_LIST_OPERATORS = frozenset({"$and", "$or", "$nor"})
VECTOR_FIELD_KEYS = frozenset(
    {"type", "path", "numDimensions", "similarity", "quantization", "hnswOptions"}
)
SIMILARITIES = frozenset({"cosine", "euclidean", "dotProduct"})
QUANTIZATIONS = frozenset({"none", "scalar", "binary"})
MAX_DIMENSIONS = 8192
COMPOUND_CLAUSES = frozenset({"must", "mustNot", "should", "filter"})
SEARCH_STAGE_FIELDS = frozenset(
    {
        "index",
        "compound",
        "highlight",
        "concurrent",
        "count",
        "searchAfter",
        "searchBefore",
        "scoreDetails",
        "sort",
        "returnScope",
        "returnStoredSource",
    }
)
SELECTION_STAGES = frozenset(
    {"$match", "$search", "$vectorSearch", "$sample", "$geoNear", "$sort", "$skip", "$limit"}
)
RANKED_FIRST_STAGES = frozenset({"$search", "$vectorSearch", "$geoNear"})
FIRST_STAGE_ONLY = frozenset({"$search", "$vectorSearch", "$rankFusion"})
RANK_FUSION_FIELDS = frozenset({"input", "combination", "scoreDetails"})
# Stages the framework may put after its first stage (scores, projection, paging).
AFTER_STAGES = frozenset({"$set", "$addFields", "$unset", "$project", "$limit"})

# --- catalog, cases and queries --------------------------------------------------------------

EMBEDDER_SHAPES = [(384, "cosine"), (1024, "dotProduct")]
TENANT = {"agent_id": "agent-7", "user_id": "user-42"}
_DISCOVERY = IndexCatalog.load(dimensions=EMBEDDER_SHAPES[0][0])
SEARCHABLE = sorted(
    name for name, spec in _DISCOVERY.collections.items() if spec.search_target() is not None
)


@dataclass(frozen=True)
class Case:
    """One searchable collection of a catalog loaded for one embedder shape."""

    name: str
    catalog: IndexCatalog
    target: SearchTarget
    vector_index: SearchIndexSpec
    text_index: SearchIndexSpec
    embedder: FakeEmbedder
    similarity: str

    @property
    def dimensions(self) -> int:
        return self.embedder.dimensions

    @property
    def vector_field(self) -> dict[str, Any]:
        return next(f for f in self.vector_index.definition["fields"] if f["type"] == "vector")

    @property
    def vector_filter_paths(self) -> set[str]:
        return {f["path"] for f in self.vector_index.definition["fields"] if f["type"] == "filter"}

    @property
    def text_fields(self) -> dict[str, dict[str, Any]]:
        return self.text_index.definition["mappings"]["fields"]

    @property
    def token_paths(self) -> set[str]:
        return {path for path, spec in self.text_fields.items() if spec.get("type") == "token"}

    @property
    def date_paths(self) -> set[str]:
        return {path for path, spec in self.text_fields.items() if spec.get("type") == "date"}

    @property
    def filterable(self) -> list[str]:
        """Paths a caller may filter on: everything pre-filterable except the tenant."""
        return sorted(self.target.filter_paths - set(self.target.tenant_paths))

    def query_vector(self, text: str = "where does the user live") -> np.ndarray:
        # FakeEmbedder is deterministic; its private builder avoids an event loop in sync tests.
        vector = self.embedder._vector(text)
        return vector / np.linalg.norm(vector)


def make_case(name: str, dimensions: int, similarity: str) -> Case:
    catalog = IndexCatalog.load(dimensions=dimensions, similarity=similarity)
    spec = catalog[name]
    return Case(
        name=name,
        catalog=catalog,
        target=catalog.target(name),
        vector_index=next(s for s in spec.search_indexes if s.type == "vectorSearch"),
        text_index=next(s for s in spec.search_indexes if s.type == "search"),
        embedder=FakeEmbedder(dimensions),
        similarity=similarity,
    )


@pytest.fixture(
    params=[(name, dims, sim) for name in SEARCHABLE for dims, sim in EMBEDDER_SHAPES],
    ids=lambda p: f"{p[0]}-{p[1]}-{p[2]}",
)
def case(request: pytest.FixtureRequest) -> Case:
    return make_case(*request.param)


def filter_variants(case: Case) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(filters, exclude) pairs that use every filterable path, scalar and list, both ways."""
    paths = case.filterable
    assert paths, f"{case.name} has no filterable paths besides the tenant"

    def scalar(path: str) -> str:
        return f"{path}-a"

    def many(path: str) -> list[str]:
        return [f"{path}-b", f"{path}-c"]

    yield (
        {p: scalar(p) if i % 2 == 0 else many(p) for i, p in enumerate(paths)},
        {p: many(p) if i % 2 == 0 else scalar(p) for i, p in enumerate(paths)},
    )
    yield (
        {p: many(p) if i % 2 == 0 else scalar(p) for i, p in enumerate(paths)},
        {p: scalar(p) if i % 2 == 0 else many(p) for i, p in enumerate(paths)},
    )
    yield {}, {}
    yield {p: scalar(p) for p in paths}, {}
    yield {}, {p: many(p) for p in paths}


#: Spans of time a search may ask for: both sides, one side open, the other open.
SPANS = (
    (datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC)),
    (datetime(2025, 1, 1, tzinfo=UTC), None),
    (None, datetime(2026, 6, 15, 12, 30, tzinfo=UTC)),
)


def queries(case: Case, **overrides: Any) -> Iterator[SearchQuery]:
    spans = [{}] + [{path: span} for path in sorted(case.target.range_paths) for span in SPANS]
    for index, (filters, exclude) in enumerate(filter_variants(case)):
        arguments = {
            "tenant": dict(TENANT),
            "text": "berlin apartment",
            "vector": case.query_vector(),
            "filters": filters,
            "exclude": exclude,
            "ranges": spans[index % len(spans)],
        }
        arguments.update(overrides)
        yield SearchQuery(**arguments)


# --- helpers that read pipelines ---------------------------------------------------------------


def only_key(stage: dict[str, Any]) -> str:
    assert isinstance(stage, dict) and len(stage) == 1, f"a stage has exactly one key: {stage}"
    return next(iter(stage))


def stage_names(pipeline: list[dict[str, Any]]) -> list[str]:
    return [only_key(stage) for stage in pipeline]


def walk(value: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) pair in a nested structure of dicts and lists."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key, item
            yield from walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item)


def is_filter_scalar(value: Any) -> bool:
    """A value $vectorSearch can filter on (the documented BSON types; bool is an int)."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str | int | datetime)


def check_vector_filter(node: Any, declared: set[str]) -> set[str]:
    """Walk an MQL filter: only documented operators, only declared paths, only scalar
    values. Returns the field paths used."""
    paths: set[str] = set()
    assert isinstance(node, dict) and node, f"a filter is a non-empty document: {node!r}"
    for key, value in node.items():
        if key.startswith("$"):
            assert key in VECTOR_FILTER_OPERATORS, f"{key} is not allowed in $vectorSearch.filter"
            if key in LOGICAL_LIST_OPERATORS:
                assert isinstance(value, list) and value, f"{key} takes a non-empty array"
                for clause in value:
                    paths |= check_vector_filter(clause, declared)
            else:
                raise AssertionError(f"{key} may only appear under a field path, not at top level")
            continue
        assert key in declared, f"{key!r} is not declared as type 'filter' in the vector index"
        paths.add(key)
        check_field_condition(key, value)
    return paths


def check_field_condition(path: str, condition: Any) -> None:
    if not isinstance(condition, dict):
        assert is_filter_scalar(condition), f"{path}: {condition!r} is not a filterable value"
        return
    assert condition, f"{path}: empty condition"
    for operator, operand in condition.items():
        assert operator in VECTOR_FILTER_OPERATORS - LOGICAL_LIST_OPERATORS, (
            f"{path}: {operator} is not a documented field operator"
        )
        if operator in ("$in", "$nin"):
            assert isinstance(operand, list) and operand, f"{path}: {operator} takes an array"
            assert all(is_filter_scalar(item) for item in operand), f"{path}: {operand!r}"
        elif operator == "$not":
            check_field_condition(path, operand)
        elif operator == "$exists":
            assert isinstance(operand, bool)
        else:
            assert is_filter_scalar(operand), f"{path}: {operator} {operand!r}"


def expected_vector_clauses(query: SearchQuery) -> list[dict[str, Any]]:
    clauses = [{path: {"$eq": value}} for path, value in TENANT.items()]
    for path, value in query.filters.items():
        clauses.append({path: {"$in": list(value)} if isinstance(value, list) else {"$eq": value}})
    for path, value in query.exclude.items():
        clauses.append({path: {"$nin": list(value)} if isinstance(value, list) else {"$ne": value}})
    for path, (start, end) in query.ranges.items():
        clauses += [{path: {"$gte": start}}] if start is not None else []
        clauses += [{path: {"$lt": end}}] if end is not None else []
    return clauses


def range_clause(path: str, span: tuple[Any, Any]) -> dict[str, Any]:
    start, end = span
    bounds = {"gte": start} if start is not None else {}
    return {"range": {"path": path, **bounds, **({"lt": end} if end is not None else {})}}


def search_clause(path: str, value: Any) -> dict[str, Any]:
    if isinstance(value, list):
        return {"in": {"path": path, "value": list(value)}}
    return {"equals": {"path": path, "value": value}}


def canonical(items: list[Any]) -> list[str]:
    return sorted(json.dumps(item, sort_keys=True, default=str) for item in items)


def assert_no_tenant_match(pipeline: list[dict[str, Any]], target: SearchTarget) -> None:
    """Tenant filtering lives inside the search stage, never in a later ``$match``."""
    for stage in pipeline[1:]:
        if only_key(stage) == "$match":
            used = {key for key, _ in walk(stage["$match"])}
            assert not used & set(target.tenant_paths), f"tenant filtered after search: {stage}"


# --- $vectorSearch -------------------------------------------------------------------------


def assert_vector_stage(case: Case, query: SearchQuery, pipeline: list[dict[str, Any]]) -> None:
    names = stage_names(pipeline)
    assert names[0] == "$vectorSearch", "$vectorSearch must be the first stage"
    assert not set(names[1:]) & FIRST_STAGE_ONLY, names
    assert set(names[1:]) <= AFTER_STAGES, names
    assert_no_tenant_match(pipeline, case.target)

    stage = pipeline[0]["$vectorSearch"]
    assert set(stage) <= VECTOR_STAGE_FIELDS, set(stage) - VECTOR_STAGE_FIELDS
    assert stage["index"] == case.vector_index.name
    assert stage["path"] == case.vector_field["path"]

    vector = stage["queryVector"]
    assert isinstance(vector, list) and len(vector) == case.dimensions
    assert all(type(x) is float and math.isfinite(x) for x in vector)
    np.testing.assert_allclose(vector, np.asarray(query.vector, dtype=np.float64), rtol=1e-6)

    limit, candidates = stage["limit"], stage["numCandidates"]
    assert type(limit) is int and type(candidates) is int
    assert not stage.get("exact", False), "ANN search is expected (numCandidates is set)"
    assert 1 <= limit <= candidates <= MAX_CANDIDATES
    assert query.limit <= candidates, "numCandidates below the number of results requested"
    assert limit >= query.limit, "each source must contribute at least `limit` results"

    used = check_vector_filter(stage["filter"], case.vector_filter_paths)
    top = stage["filter"]["$and"]
    for path, value in TENANT.items():
        assert {path: {"$eq": value}} in top, f"tenant {path} must be a top-level $and clause"
    for path in case.target.tenant_paths:
        occurrences = [key for key, _ in walk(stage["filter"]) if key == path]
        assert len(occurrences) == 1, f"{path} appears only as the tenant equality"
    assert canonical(top) == canonical(expected_vector_clauses(query))
    assert used == set(TENANT) | set(query.filters) | set(query.exclude) | set(query.ranges)


def test_every_expected_collection_is_searchable() -> None:
    """The catalog still exposes the three searchable collections the framework relies on."""
    assert {"memories", "knowledge_chunks", "action_logs"} <= set(SEARCHABLE)


def test_vector_stage_is_first_with_tenant_and_filters_inside(case: Case) -> None:
    """``$vectorSearch`` leads, names the right index and path, carries the tenant as ``$eq``
    inside its ``filter``, and filters only on declared paths with documented operators."""
    for query in queries(case):
        assert_vector_stage(case, query, vector_search_pipeline(case.target, query))


@pytest.mark.parametrize(("dimensions", "similarity"), EMBEDDER_SHAPES)
@pytest.mark.parametrize(
    ("filters", "exclude"),
    [
        ({"status": "active", "tags": "lg/ns:[]"}, {}),
        ({"status": "active", "tags": "lg/ns:[]", "memory_type": "fact"}, {"tags": "lg/x"}),
    ],
)
def test_a_search_by_fields_is_a_documented_vector_filter(
    dimensions: int, similarity: str, filters: dict[str, Any], exclude: dict[str, Any]
) -> None:
    """LongTermMemory.similar(fields=True) (a LangGraph item scored by its best field): the
    field documents share the memories' one vector path, and the search widens ``status`` to
    them with ``$in`` and leaves out their memories by tag with ``$nin``, on declared paths."""
    case = make_case("memories", dimensions, similarity)
    wide, narrowed = by_fields(filters, exclude)
    assert wide["status"] == ["active", FIELD] and FIELDS_TAG in narrowed["tags"]
    query = SearchQuery(
        tenant=dict(TENANT), vector=case.query_vector(), filters=wide, exclude=narrowed, limit=20
    )
    pipeline = vector_search_pipeline(case.target, query)
    assert_vector_stage(case, query, pipeline)
    clauses = pipeline[0]["$vectorSearch"]["filter"]["$and"]
    assert {"status": {"$in": ["active", FIELD]}} in clauses
    assert any(c.get("tags", {}).get("$nin", [None])[-1] == FIELDS_TAG for c in clauses)


@pytest.mark.parametrize("limit", [1, 10, 50, 500, MAX_CANDIDATES])
def test_num_candidates_bounds_for_limits(case: Case, limit: int) -> None:
    """For any ``limit`` the stage keeps ``limit <= numCandidates <= 10000``."""
    for query in queries(case, limit=limit):
        assert_vector_stage(case, query, vector_search_pipeline(case.target, query))


@pytest.mark.parametrize(
    ("limit", "num_candidates"), [(1, 1), (10, 10), (10, 37), (1, MAX_CANDIDATES), (500, 600)]
)
def test_explicit_num_candidates_is_used_and_bounded(
    case: Case, limit: int, num_candidates: int
) -> None:
    """An explicit ``num_candidates`` is passed through and the stage ``limit`` never exceeds it."""
    query = SearchQuery(
        tenant=dict(TENANT), vector=case.query_vector(), limit=limit, num_candidates=num_candidates
    )
    pipeline = vector_search_pipeline(case.target, query)
    assert pipeline[0]["$vectorSearch"]["numCandidates"] == num_candidates
    assert_vector_stage(case, query, pipeline)


@pytest.mark.parametrize(("limit", "num_candidates"), [(10, 9), (1, MAX_CANDIDATES + 1), (0, None)])
def test_out_of_bounds_candidates_are_refused(limit: int, num_candidates: int | None) -> None:
    """Values MongoDB would reject never reach a pipeline."""
    with pytest.raises(InvalidInputError):
        SearchQuery(
            tenant=dict(TENANT), vector=np.ones(8), limit=limit, num_candidates=num_candidates
        )


@pytest.mark.parametrize("num_candidates", [20.0, 20.5, True, "30"])
def test_non_int_num_candidates_are_refused(num_candidates: Any) -> None:
    """``num_candidates`` is an int like ``limit``; anything else is refused up front."""
    with pytest.raises(InvalidInputError):
        SearchQuery(tenant=dict(TENANT), vector=np.ones(8), limit=1, num_candidates=num_candidates)


def test_vector_score_and_projection_follow_the_stage(case: Case) -> None:
    """The score is read with ``vectorSearchScore`` after the stage and the vector is dropped."""
    query = next(queries(case))
    pipeline = vector_search_pipeline(case.target, query)
    metas = [item for key, item in walk(pipeline[1:]) if key == "$meta"]
    assert metas == ["vectorSearchScore"]
    assert {"$unset": case.vector_field["path"]} in pipeline[1:]


# --- $search -------------------------------------------------------------------------------


def assert_search_stage(case: Case, query: SearchQuery, pipeline: list[dict[str, Any]]) -> None:
    names = stage_names(pipeline)
    assert names[0] == "$search", "$search must be the first stage"
    assert not set(names[1:]) & FIRST_STAGE_ONLY, names
    assert set(names[1:]) <= AFTER_STAGES, names
    assert_no_tenant_match(pipeline, case.target)

    stage = pipeline[0]["$search"]
    assert set(stage) <= SEARCH_STAGE_FIELDS, set(stage) - SEARCH_STAGE_FIELDS
    assert stage["index"] == case.text_index.name
    compound = stage["compound"]
    assert set(compound) <= COMPOUND_CLAUSES, set(compound)
    for clause in compound.values():
        assert isinstance(clause, list) and clause, "compound clauses are non-empty arrays"

    (must,) = compound["must"]
    text_path = must["text"]["path"]
    assert must == {"text": {"query": query.text, "path": text_path}}
    # One field name, or a list of them (Atlas Search's path forms); each string-mapped.
    paths = [text_path] if isinstance(text_path, str) else text_path
    assert isinstance(paths, list) and paths and all(isinstance(p, str) for p in paths)
    for path in paths:
        assert case.text_fields[path]["type"] == "string", "text needs string-mapped paths"
    expected = case.target.text_path
    assert paths == ([expected] if isinstance(expected, str) else list(expected))

    for name in ("filter", "mustNot"):
        for operator in compound.get(name, []):
            (kind,) = operator
            if kind == "range" and name == "filter":  # a span of time, on a date field
                body = operator[kind]
                assert body["path"] in case.date_paths, f"{body['path']} is not mapped as date"
                bounds = set(body) - {"path"}
                assert bounds and bounds <= {"gt", "gte", "lt", "lte"}
                assert all(isinstance(body[b], datetime) for b in bounds)
                continue
            assert kind in ("equals", "in"), f"{name} uses {kind}"
            body = operator[kind]
            assert set(body) == {"path", "value"}
            assert body["path"] in case.token_paths, f"{body['path']} is not mapped as token"
            if kind == "equals":
                assert is_filter_scalar(body["value"])
            else:
                assert isinstance(body["value"], list) and body["value"]
                assert len({type(v) for v in body["value"]}) == 1, "in takes one BSON type"

    expected_filter = (
        [search_clause(p, v) for p, v in TENANT.items()]
        + [search_clause(p, v) for p, v in query.filters.items()]
        + [range_clause(p, span) for p, span in query.ranges.items()]
    )
    assert canonical(compound["filter"]) == canonical(expected_filter)
    expected_not = [search_clause(p, v) for p, v in query.exclude.items()]
    assert canonical(compound.get("mustNot", [])) == canonical(expected_not)
    for operator in compound.get("mustNot", []):
        body = next(iter(operator.values()))
        assert body.get("path") not in case.target.tenant_paths, "tenant only in filter"


def test_search_stage_is_first_with_compound_filter(case: Case) -> None:
    """``$search`` leads with ``compound``: the text on the string path in ``must``, the tenant
    and filters as ``equals``/``in`` on token paths in ``filter``, exclusions in ``mustNot``."""
    for query in queries(case):
        assert_search_stage(case, query, text_search_pipeline(case.target, query))


def test_search_score_and_limit_follow_the_stage(case: Case) -> None:
    """Results are limited to the fusion depth and scored with ``searchScore`` afterwards."""
    query = next(queries(case, limit=7))
    pipeline = text_search_pipeline(case.target, query)
    assert pipeline[1] == {"$limit": query.depth}
    metas = [item for key, item in walk(pipeline[1:]) if key == "$meta"]
    assert metas == ["searchScore"]


# --- $rankFusion ---------------------------------------------------------------------------


def test_rank_fusion_inputs_are_selection_and_ranked_pipelines(case: Case) -> None:
    """``$rankFusion`` leads with exactly the ``vector`` and ``text`` inputs, each of which only
    selects and ranks; score details are requested and read after the stage."""
    for query in queries(case, weights={"vector": 2, "text": 0.5}):
        pipeline = rank_fusion_pipeline(case.target, query)
        names = stage_names(pipeline)
        assert names[0] == "$rankFusion"
        assert not set(names[1:]) & FIRST_STAGE_ONLY
        assert set(names[1:]) <= AFTER_STAGES
        assert_no_tenant_match(pipeline, case.target)

        stage = pipeline[0]["$rankFusion"]
        assert set(stage) <= RANK_FUSION_FIELDS
        assert stage["scoreDetails"] is True
        assert set(stage["input"]) == {"pipelines"}
        inputs = stage["input"]["pipelines"]
        assert set(inputs) == {"vector", "text"}
        for name, steps in inputs.items():
            assert name and not name.startswith("$") and "." not in name and "\0" not in name
            kinds = stage_names(steps)
            assert set(kinds) <= SELECTION_STAGES, f"{name} modifies documents: {kinds}"
            assert kinds[0] in RANKED_FIRST_STAGES or "$sort" in kinds, f"{name} is not ranked"
        assert_vector_stage(case, query, inputs["vector"])
        assert_search_stage(case, query, inputs["text"])
        assert stage_names(inputs["vector"]) == ["$vectorSearch"]
        assert stage_names(inputs["text"]) == ["$search", "$limit"]

        weights = stage["combination"]["weights"]
        assert set(weights) <= set(inputs)
        for weight in weights.values():
            assert isinstance(weight, int | float) and not isinstance(weight, bool)
            assert math.isfinite(weight) and weight >= 0
        assert weights == {"vector": 2.0, "text": 0.5}

        metas = [item for key, item in walk(pipeline[1:]) if key == "$meta"]
        assert metas == ["scoreDetails"]
        # A margin for hits dropped afterwards as stale (mongot's pre-filter lags writes).
        assert {"$limit": query.limit + STALE_MARGIN} in pipeline[1:]
        assert {"$unset": case.vector_field["path"]} in pipeline[1:]


def test_rank_fusion_default_weights_are_one(case: Case) -> None:
    """Without explicit weights both inputs weigh 1, MongoDB's own default."""
    query = SearchQuery(tenant=dict(TENANT), text="berlin", vector=case.query_vector())
    weights = rank_fusion_pipeline(case.target, query)[0]["$rankFusion"]["combination"]["weights"]
    assert weights == {"vector": 1.0, "text": 1.0}


# --- index definitions ---------------------------------------------------------------------


@pytest.mark.parametrize(("dimensions", "similarity"), EMBEDDER_SHAPES)
def test_vector_definitions_follow_the_configured_embedder(
    dimensions: int, similarity: str
) -> None:
    """``numDimensions``/``similarity`` come from the embedder; fields are ``vector`` or
    ``filter`` only, with exactly one vector field per index and documented keys only."""
    embedder = FakeEmbedder(dimensions)
    catalog = IndexCatalog.load(dimensions=embedder.dimensions, similarity=similarity)
    vector_indexes = [
        index
        for spec in catalog.collections.values()
        for index in spec.search_indexes
        if index.type == "vectorSearch"
    ]
    assert vector_indexes
    for index in vector_indexes:
        fields = index.definition["fields"]
        assert {f["type"] for f in fields} <= {"vector", "filter"}
        vectors = [f for f in fields if f["type"] == "vector"]
        assert len(vectors) == 1, f"{index.name} needs exactly one vector field"
        (vector,) = vectors
        assert set(vector) <= VECTOR_FIELD_KEYS
        assert vector["numDimensions"] == embedder.dimensions
        assert 1 <= vector["numDimensions"] <= MAX_DIMENSIONS
        assert vector["similarity"] == similarity and similarity in SIMILARITIES
        assert vector.get("quantization", "none") in QUANTIZATIONS
        for field in fields:
            if field["type"] == "filter":
                assert set(field) == {"type", "path"}, field
        paths = [f["path"] for f in fields]
        assert len(paths) == len(set(paths)), f"{index.name} indexes a path twice"


def test_loading_for_one_embedder_leaves_other_catalogs_alone() -> None:
    """Rewriting dimensions works on copies: catalogs for different embedders coexist and the
    JSON files keep their production defaults."""
    small = IndexCatalog.load(dimensions=384, similarity="cosine")
    raw = {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in definitions_dir().glob("*.json")
    }
    before = copy.deepcopy(raw)
    large = IndexCatalog.load(dimensions=1024, similarity="dotProduct")
    for catalog, dims in ((small, 384), (large, 1024)):
        for spec in catalog.collections.values():
            for index in spec.search_indexes:
                for field in index.definition.get("fields", []):
                    if field["type"] == "vector":
                        assert field["numDimensions"] == dims
    after = {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in definitions_dir().glob("*.json")
    }
    assert after == before


def test_search_mappings_are_static_and_match_the_vector_filters() -> None:
    """Text indexes use ``dynamic: false``; their ``token`` fields are exactly the vector index's
    ``filter`` fields (both stages can pre-filter on the same paths), the tenant included."""
    catalog = IndexCatalog.load(dimensions=384)
    for name in SEARCHABLE:
        case = make_case(name, 384, "cosine")
        mappings = case.text_index.definition["mappings"]
        assert mappings["dynamic"] is False
        # Equality filters are token fields, spans of time date fields; the vector index
        # declares each of them as a filter, and nothing else.
        assert case.token_paths | case.date_paths == case.vector_filter_paths
        assert not case.token_paths & case.date_paths
        assert set(case.target.tenant_paths) <= case.token_paths
        assert case.target.filter_paths == case.token_paths
        assert case.target.range_paths == case.date_paths
        strings = [p for p, spec in case.text_fields.items() if spec["type"] == "string"]
        target_paths = case.target.text_path
        assert strings == ([target_paths] if isinstance(target_paths, str) else list(target_paths))
        assert catalog[name].search_target() is not None


def test_index_names_are_unique() -> None:
    """Within a collection no two indexes share a name, and search index names are unique
    across the whole catalog (regular index names are per collection in MongoDB)."""
    catalog = IndexCatalog.load(dimensions=384)
    search_names: list[str] = []
    for spec in catalog.collections.values():
        names = [i.name for i in spec.indexes] + [i.name for i in spec.search_indexes]
        assert len(names) == len(set(names)), f"{spec.name}: {names}"
        search_names += [i.name for i in spec.search_indexes]
    assert len(search_names) == len(set(search_names)), search_names


def test_no_collection_has_a_text_index() -> None:
    """No tier uses ``$text``: Atlas searches with ``$search`` and the plain tier ranks with
    BM25 in the framework, so a text index would only slow every insert."""
    catalog = IndexCatalog.load(dimensions=384)
    for name in SEARCHABLE:
        assert not [
            index for index in catalog[name].indexes if any(v == "text" for _, v in index.key)
        ], f"{name} has a $text index"


def test_ttl_indexes_have_expire_after_seconds() -> None:
    """TTL indexes are single-field with a non-negative integer ``expireAfterSeconds``."""
    catalog = IndexCatalog.load(dimensions=384)
    ttl = [
        (spec.name, index)
        for spec in catalog.collections.values()
        for index in spec.indexes
        if "expireAfterSeconds" in index.options or index.name.endswith("_ttl")
    ]
    assert ttl, "memories expire through a TTL index"
    for collection, index in ttl:
        seconds = index.options.get("expireAfterSeconds")
        assert type(seconds) is int and seconds >= 0, f"{collection}.{index.name}"
        assert len(index.key) == 1, "MongoDB ignores TTL on compound indexes"


# --- hostile input -------------------------------------------------------------------------

BUILDERS = [vector_search_pipeline, text_search_pipeline, rank_fusion_pipeline]

HOSTILE_FILTERS = [
    pytest.param({"user_id": "someone-else"}, id="tenant-user"),
    pytest.param({"agent_id": "other-agent"}, id="tenant-agent"),
    pytest.param({"user_id": ["user-42", "someone-else"]}, id="tenant-list"),
    pytest.param({"content": "x"}, id="undeclared-text-path"),
    pytest.param({"embedding": 1.0}, id="vector-path"),
    pytest.param({"created_at": datetime(2024, 1, 1, tzinfo=UTC)}, id="undeclared-date"),
    pytest.param({"$where": "sleep(1000)"}, id="operator-as-path"),
    pytest.param({"$or": [{"user_id": "someone-else"}]}, id="or-as-path"),
    pytest.param({1: "x"}, id="non-str-path"),
]


def hostile_values(path: str) -> list[Any]:
    return [
        pytest.param({path: {"$ne": None}}, id="dict-ne-null"),
        pytest.param({path: {"$gt": ""}}, id="dict-gt"),
        pytest.param({path: [{"$ne": None}]}, id="dict-in-list"),
        pytest.param({path: float("nan")}, id="nan"),
        pytest.param({path: float("inf")}, id="inf"),
        pytest.param({path: [1.0, float("-inf")]}, id="inf-in-list"),
        pytest.param({path: []}, id="empty-list"),
        pytest.param({path: ()}, id="empty-tuple"),
        pytest.param({path: None}, id="none"),
        pytest.param({path: b"bytes"}, id="bytes"),
        pytest.param({path: [["nested"]]}, id="nested-list"),
        pytest.param({path: {"a", "b"}}, id="set"),
    ]


def hostile_queries(case: Case, mapping: dict[Any, Any]) -> Iterator[SearchQuery]:
    base = {"tenant": dict(TENANT), "text": "berlin", "vector": case.query_vector()}
    yield SearchQuery(**base, filters=mapping)
    yield SearchQuery(**base, exclude=mapping)


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
@pytest.mark.parametrize("mapping", HOSTILE_FILTERS)
def test_filters_on_tenant_or_undeclared_paths_are_refused(
    case: Case, builder: Any, mapping: dict[Any, Any]
) -> None:
    """A filter may not move the search to another tenant or touch an unindexed path."""
    for query in hostile_queries(case, mapping):
        with pytest.raises(InvalidInputError):
            builder(case.target, query)


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
@pytest.mark.parametrize("mapping", hostile_values("__path__"))
def test_operator_and_non_finite_values_are_refused(
    case: Case, builder: Any, mapping: dict[str, Any]
) -> None:
    """Values that would become operators, are not finite, are empty or of no filterable
    type are refused on every filterable path, as filters and as exclusions."""
    ((_, value),) = mapping.items()
    for path in case.filterable:
        for query in hostile_queries(case, {path: value}):
            with pytest.raises(InvalidInputError):
                builder(case.target, query)


_MARCH = datetime(2026, 3, 1, tzinfo=UTC)
HOSTILE_SPANS = [
    pytest.param({"occurred_at": (datetime(2026, 3, 1), None)}, id="no-zone"),
    pytest.param({"occurred_at": (_MARCH, _MARCH)}, id="empty"),
    pytest.param({"occurred_at": (datetime(2026, 4, 1, tzinfo=UTC), _MARCH)}, id="backwards"),
    pytest.param({"occurred_at": ("2026-03-01", None)}, id="string"),
    pytest.param({"occurred_at": ({"$gt": 0}, None)}, id="operator"),
    pytest.param({"occurred_at": (_MARCH,)}, id="one-side"),
    pytest.param({"occurred_at": _MARCH}, id="not-a-pair"),
    pytest.param({"user_id": (_MARCH, None)}, id="tenant-path"),
    pytest.param({"created_at": (_MARCH, None)}, id="undeclared-path"),
    pytest.param([("occurred_at", (_MARCH, None))], id="not-a-mapping"),
]


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
@pytest.mark.parametrize("ranges", HOSTILE_SPANS)
def test_spans_of_time_that_are_not_one_are_refused(builder: Any, ranges: Any) -> None:
    """A span of time is a (from, until) pair of timezone-aware datetimes, from before
    until, on a field both indexes declare for it; anything else is refused before a query
    is built."""
    case = make_case("memories", 384, "cosine")
    assert case.target.range_paths == {"occurred_at"}
    query = SearchQuery(
        tenant=dict(TENANT), text="march", vector=case.query_vector(), ranges=ranges
    )
    with pytest.raises(InvalidInputError):
        builder(case.target, query)


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
@pytest.mark.parametrize(
    "tenant",
    [
        pytest.param({"agent_id": "agent-7", "user_id": {"$ne": None}}, id="dict-user"),
        pytest.param({"agent_id": {"$exists": True}, "user_id": "user-42"}, id="dict-agent"),
        pytest.param({"agent_id": "agent-7", "user_id": ""}, id="empty-user"),
        pytest.param({"agent_id": "", "user_id": "user-42"}, id="empty-agent"),
        pytest.param({"agent_id": "agent-7", "user_id": None}, id="none-user"),
        pytest.param({"agent_id": "agent-7", "user_id": 42}, id="int-user"),
        pytest.param({"agent_id": "agent-7", "user_id": ["user-42"]}, id="list-user"),
        pytest.param({}, id="empty"),
        pytest.param({"agent_id": "agent-7"}, id="missing-user"),
        pytest.param({"user_id": "user-42"}, id="missing-agent"),
        pytest.param({**TENANT, "org_id": "o"}, id="extra-key"),
        pytest.param("user-42", id="not-a-mapping"),
    ],
)
def test_bad_tenants_are_refused(case: Case, builder: Any, tenant: Any) -> None:
    """A tenant of anything but the target's paths with non-empty strings never builds."""
    with pytest.raises(InvalidInputError):
        query = SearchQuery(tenant=tenant, text="berlin", vector=case.query_vector())
        builder(case.target, query)


def test_vector_only_and_text_only_builders_need_their_input(case: Case) -> None:
    """Each single-source builder refuses a query without its input."""
    with pytest.raises(ValueError):
        vector_search_pipeline(case.target, SearchQuery(tenant=dict(TENANT), text="berlin"))
    with pytest.raises(ValueError):
        text_search_pipeline(case.target, SearchQuery(tenant=dict(TENANT), vector=np.ones(4)))


def test_non_string_values_on_token_paths_are_refused() -> None:
    """Filter values must be strings wherever the text index maps the path as ``token``."""
    case = make_case(SEARCHABLE[0], 384, "cosine")
    query = SearchQuery(tenant=dict(TENANT), text="berlin", filters={case.filterable[0]: 3})
    with pytest.raises(InvalidInputError):
        text_search_pipeline(case.target, query)


def test_mixed_type_lists_are_refused() -> None:
    """``in`` takes values of one BSON type only."""
    case = make_case(SEARCHABLE[0], 384, "cosine")
    query = SearchQuery(tenant=dict(TENANT), text="berlin", filters={case.filterable[0]: ["a", 1]})
    with pytest.raises(InvalidInputError):
        text_search_pipeline(case.target, query)


# --- scoreDetails ---------------------------------------------------------------------------


def test_score_details_documented_list_shape() -> None:
    """The documented shape: ``details`` is a list of per-input entries; ``N/A`` ranks and
    inputs without a ``value`` are handled."""
    details = {
        "value": 0.0325,
        "description": "value output by reciprocal rank fusion algorithm ...",
        "details": [
            {"inputPipelineName": "vector", "rank": 1, "weight": 1, "value": 0.91, "details": []},
            {"inputPipelineName": "text", "rank": 3, "weight": 2, "value": 4.5, "details": []},
            {"inputPipelineName": "match", "rank": 7, "weight": 1, "details": []},
            {"inputPipelineName": "absent", "rank": "N/A", "weight": 1, "details": []},
        ],
    }
    fused, sources = parse_score_details(details)
    assert fused == pytest.approx(0.0325)
    assert set(sources) == {"vector", "text", "match"}
    # The vector input's value is Atlas's (1 + cosine) / 2; the source reports the cosine.
    assert (sources["vector"].rank, sources["vector"].score) == (1, pytest.approx(0.82))
    assert (sources["text"].rank, sources["text"].score) == (3, pytest.approx(4.5))
    assert (sources["match"].rank, sources["match"].score) == (7, 0.0)


def test_score_details_mapping_shape() -> None:
    """The mapping shape: pipeline name to ``{rank, value}``."""
    fused, sources = parse_score_details(
        {"value": 0.02, "details": {"vector": {"rank": 2, "value": 0.8}, "text": {"rank": 1}}}
    )
    assert fused == pytest.approx(0.02)
    assert (sources["vector"].rank, sources["vector"].score) == (2, pytest.approx(0.6))
    assert (sources["text"].rank, sources["text"].score) == (1, 0.0)


@pytest.mark.parametrize(
    "garbage",
    [
        None,
        "scoreDetails",
        42,
        [],
        [{"inputPipelineName": "vector", "rank": 1}],
        {},
        {"details": "x"},
        {"details": [1, "a", None, []]},
        {"details": {"vector": "x", "text": None}},
        {"details": [{"rank": 1, "value": 0.5}]},
        {"details": [{"inputPipelineName": "vector", "rank": 0}]},
        {"details": [{"inputPipelineName": "vector", "rank": -3}]},
        {"details": [{"inputPipelineName": "vector", "rank": 1.5}]},
        {"details": {"vector": {"rank": "1"}}},
    ],
)
def test_score_details_garbage_gives_nothing(garbage: Any) -> None:
    """Input that is not score details yields no fused score and no sources."""
    assert parse_score_details(garbage) == (0.0, {})


@pytest.mark.parametrize(
    "garbage",
    [
        {"value": None},
        {"value": "abc"},
        {"value": [1]},
        {"details": [{"inputPipelineName": "vector", "rank": 2, "value": "x"}]},
    ],
)
def test_score_details_non_numeric_values_give_nothing(garbage: Any) -> None:
    """A non-numeric ``value`` is garbage too, not an exception."""
    fused, sources = parse_score_details(garbage)
    assert fused == 0.0 and not sources


def test_score_details_boolean_rank_is_garbage() -> None:
    """``True`` is not a rank."""
    assert parse_score_details({"details": [{"inputPipelineName": "v", "rank": True}]}) == (
        0.0,
        {},
    )

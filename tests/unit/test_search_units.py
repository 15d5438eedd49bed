"""Search building blocks without a server: fusion, query validation, text neutralisation."""

from __future__ import annotations

import numpy as np
import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.mongo.catalog import IndexCatalog
from agent_memory.mongo.search import SearchQuery, reciprocal_rank_fusion
from agent_memory.mongo.search.keywords import tokenize
from agent_memory.mongo.search.plain import plain_filter

TENANT = {"agent_id": "a", "user_id": "u"}


def test_rrf_combines_ranks_with_weights():
    fused = reciprocal_rank_fusion(
        {"vector": [("x", 0.9), ("y", 0.8)], "text": [("y", 5.0), ("z", 1.0)]}, k=60
    )
    ids = [doc_id for doc_id, _, _ in fused]
    assert ids == ["y", "x", "z"]  # y is found by both sources
    score_y = dict((d, s) for d, s, _ in fused)["y"]
    assert score_y == pytest.approx(1 / 62 + 1 / 61)
    weighted = reciprocal_rank_fusion(
        {"vector": [("x", 0.9)], "text": [("z", 1.0)]}, weights={"vector": 0.0, "text": 1.0}
    )
    assert [d for d, _, _ in weighted] == ["z", "x"]
    assert fused[0][2]["text"].rank == 1 and fused[0][2]["vector"].rank == 2


def test_rrf_is_deterministic_on_ties():
    fused = reciprocal_rank_fusion({"vector": [("a", 1.0)], "text": [("b", 1.0)]})
    assert [d for d, _, _ in fused] == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"exact phrase"', ["exact", "phrase"]),
        ("-excluded term", ["exclud", "term"]),
        ("where do I live?", ["live"]),
        ("the a of", ["the", "a", "of"]),  # only stop words: keep them rather than search nothing
        ("--", []),
        ("{'$ne': null}", ["ne", "null"]),
    ],
)
def test_query_syntax_is_only_words(text, expected):
    # Keywords are ranked in the framework: quotes, minus signs and operators are not syntax.
    assert tokenize(text) == expected


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "query text, a query vector, or both"),
        ({"text": "   "}, "empty"),
        ({"text": "x" * 9000}, "limit is"),
        ({"text": 42}, "must be a str"),
        ({"vector": np.array([np.nan, 1.0])}, "finite"),
        ({"text": "x", "limit": 0}, "limit must be an int from 1 to"),
        ({"text": "x", "limit": True}, "must be an int"),
        ({"text": "x", "limit": 10, "num_candidates": 5}, "num_candidates"),
        ({"text": "x", "weights": {"vector": -1.0}}, "non-negative"),
        ({"text": "x", "weights": {"bm25": 1.0}}, "non-negative"),
    ],
)
def test_bad_queries_are_rejected(kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        SearchQuery(tenant=TENANT, **kwargs)


@pytest.mark.parametrize(
    "tenant", [{}, {"agent_id": ""}, {"agent_id": {"$ne": None}, "user_id": "u"}]
)
def test_tenant_values_must_be_plain_strings(tenant):
    with pytest.raises(InvalidInputError):
        SearchQuery(tenant=tenant, text="x")


def test_candidate_depth_stays_within_atlas_bounds():
    for limit in (1, 10, 500, 10_000):
        query = SearchQuery(tenant=TENANT, text="x", limit=limit)
        assert limit <= query.depth <= query.ann_candidates <= 10_000


def test_plain_filter_keeps_tenant_and_values_as_data():
    target = IndexCatalog.load(dimensions=8).target("memories")
    query = SearchQuery(
        tenant=TENANT,
        text="x",
        filters={"memory_type": ["fact", "preference"]},
        exclude={"status": "superseded"},
    )
    assert plain_filter(target, query) == {
        "agent_id": {"$eq": "a"},
        "user_id": {"$eq": "u"},
        "memory_type": {"$in": ["fact", "preference"]},
        "status": {"$ne": "superseded"},
    }


def test_search_index_drift_ignores_server_defaults_and_field_order():
    from agent_memory.mongo.indexes import _differences

    expected = {
        "fields": [
            {"type": "vector", "path": "embedding", "numDimensions": 384, "similarity": "cosine"},
            {"type": "filter", "path": "agent_id"},
        ]
    }
    stored = {
        "fields": [
            {"type": "filter", "path": "agent_id"},
            {
                "type": "vector",
                "path": "embedding",
                "numDimensions": 384,
                "similarity": "cosine",
                "quantization": "none",
            },
        ]
    }
    assert _differences(expected, stored) == []
    stored["fields"][1]["numDimensions"] = 1024
    assert _differences(expected, stored) == [
        'fields[["vector", "embedding"]].numDimensions is 1024, expected 384'
    ]
    stored["fields"][0]["path"] = "user_id"
    assert any("lacks" in item for item in _differences(expected, stored))


def test_each_tier_fuses_with_its_own_weights():
    query = SearchQuery(
        tenant={"agent_id": "a", "user_id": "u"},
        text="hello",
        weights={"vector": 0.3, "text": 0.7},
        tier_weights={"atlas": {"vector": 0.6, "text": 0.4}},
    )
    assert query.weights_for("plain") == {"vector": 0.3, "text": 0.7}
    assert query.weights_for("atlas") == {"vector": 0.6, "text": 0.4}
    for bad in ({"elsewhere": {"vector": 1.0}}, {"atlas": {"vector": -1.0}}, {"atlas": [1]}):
        with pytest.raises(InvalidInputError):
            SearchQuery(tenant={"agent_id": "a", "user_id": "u"}, text="x", tier_weights=bad)


@pytest.mark.parametrize(
    ("scale", "scores", "expected"),
    [
        ("z", [2.0, 0.0, -2.0], [0.8808, 0.5, 0.1192]),
        ("rank", [0.0328, 0.0164, 0.0], [1.0, 0.5, 0.0]),
    ],
)
async def test_the_searcher_gives_every_hit_a_relevance_on_its_own_scale(scale, scores, expected):
    from agent_memory.mongo.search import Searcher, SearchHit

    class Fixed(Searcher):
        tier = "plain"
        relevance_scale = scale

        async def _search(self, target, query):
            return [SearchHit(f"d{i}", {}, score, {}) for i, score in enumerate(scores)]

    target = IndexCatalog.load(dimensions=8).target("memories")
    hits = await Fixed().search(
        target, SearchQuery(tenant={"agent_id": "a", "user_id": "u"}, text="x")
    )
    assert [hit.relevance for hit in hits] == pytest.approx(expected, abs=1e-4)


def test_no_kind_of_memory_asks_which_tier_it_runs_on():
    """The searcher owns the tier's decisions (weights, fusion, relevance, whether a write is
    found at once): code under memory/ (long-term, episodic, knowledge and the rest) never
    reads the connection's tier or the searcher's scale, and never fuses rankings itself."""
    import re
    from pathlib import Path

    import agent_memory.memory as memory_package

    root = Path(memory_package.__file__).parent
    kinds = {path.parent.name for path in root.rglob("*.py")}
    assert {"long_term", "episodic", "knowledge"} <= kinds
    asking = [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"\.tier\b|relevance_scale|reciprocal_rank_fusion|score_fusion", line)
        and not line.lstrip().startswith("#")
    ]
    assert asking == []


def test_a_filter_of_more_values_than_one_query_takes_is_refused_clearly():
    tags = [f"t{n}" for n in range(401)]
    target = IndexCatalog.load(dimensions=8).target("memories")
    with pytest.raises(InvalidInputError, match="at most 400 values, got 401"):
        plain_filter(target, SearchQuery(tenant=TENANT, text="x", filters={"tags": tags}))
    with pytest.raises(InvalidInputError, match="at most 400 values"):
        plain_filter(target, SearchQuery(tenant=TENANT, text="x", exclude={"tags": tags}))
    assert plain_filter(target, SearchQuery(tenant=TENANT, text="x", filters={"tags": tags[:400]}))

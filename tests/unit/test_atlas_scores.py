"""The Atlas tier reports vector scores as cosines, whatever the index's similarity: Atlas
normalises ``$vectorSearch`` scores to 0..1 (``(1 + cosine) / 2``, ``(1 + dotProduct) / 2``,
``1 / (1 + euclidean distance)``), and no layer above the search tier may need to know it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from agent_memory.mongo.search import SearchQuery, SearchTarget
from agent_memory.mongo.search.atlas import (
    SCORE_DETAILS,
    TEXT_SCORE,
    VECTOR_SCORE,
    AtlasSearcher,
    cosine_from_vector_score,
    parse_score_details,
)


def _atlas_score(u: np.ndarray, v: np.ndarray, similarity: str) -> float:
    """What Atlas documents it returns for two vectors under ``similarity``."""
    if similarity == "euclidean":
        return 1.0 / (1.0 + float(np.linalg.norm(u - v)))
    return (1.0 + float(u @ v)) / 2.0


@pytest.mark.parametrize("similarity", ["cosine", "dotProduct", "euclidean"])
def test_every_similarity_converts_back_to_the_cosine_of_unit_vectors(similarity: str) -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        u, v = rng.normal(size=(2, 16))
        u, v = u / np.linalg.norm(u), v / np.linalg.norm(v)
        cosine = float(u @ v)
        assert cosine_from_vector_score(_atlas_score(u, v, similarity), similarity) == (
            pytest.approx(cosine, abs=1e-9)
        )
    same = np.ones(4) / 2.0
    assert cosine_from_vector_score(_atlas_score(same, same, similarity), similarity) == 1.0
    assert cosine_from_vector_score(_atlas_score(same, -same, similarity), similarity) == (
        pytest.approx(-1.0)
    )


def test_euclidean_scores_at_the_edges_stay_in_range() -> None:
    assert cosine_from_vector_score(0.0, "euclidean") == -1.0  # infinitely far
    assert cosine_from_vector_score(1.0, "euclidean") == 1.0
    assert cosine_from_vector_score(1.0 + 1e-12, "euclidean") == 1.0  # rounding above 1
    assert -1.0 <= cosine_from_vector_score(1e-9, "euclidean") <= 1.0


def test_an_unknown_similarity_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown vector similarity 'manhattan'"):
        cosine_from_vector_score(0.5, "manhattan")
    with pytest.raises(ValueError, match="manhattan"):
        AtlasSearcher(object(), rank_fusion=False, similarity="manhattan")


class _Cursor:
    def __init__(self, docs: list[dict[str, Any]]) -> None:
        self._docs = docs

    async def to_list(self, _length: Any) -> list[dict[str, Any]]:
        return [dict(doc) for doc in self._docs]


class _Collection:
    """Answers each pipeline by its first stage, as the server would."""

    def __init__(self, answers: dict[str, list[dict[str, Any]]]) -> None:
        self.answers = answers
        self.stages: list[str] = []

    def aggregate(self, pipeline: list[dict[str, Any]], **_: Any) -> _Cursor:
        stage = next(iter(pipeline[0]))
        self.stages.append(stage)
        return _Cursor(self.answers[stage])


TARGET = SearchTarget(
    collection="memories",
    vector_index="memories_vector",
    text_index="memories_text",
    vector_path="embedding",
    text_path="content",
    filter_paths=frozenset({"agent_id", "user_id"}),
)


def _query(**kwargs: Any) -> SearchQuery:
    return SearchQuery(
        tenant={"agent_id": "a", "user_id": "u"}, vector=np.ones(4) / 2.0, limit=5, **kwargs
    )


@pytest.mark.parametrize(
    ("similarity", "raw", "cosine"),
    [
        ("cosine", 0.9, 0.8),
        ("dotProduct", 0.25, -0.5),
        ("euclidean", 1 / (1 + math.sqrt(0.4)), 0.8),
    ],
)
async def test_the_searcher_reports_cosines_from_both_fusion_paths(
    similarity: str, raw: float, cosine: float
) -> None:
    # Framework fusion: one aggregate per source.
    collection = _Collection(
        {
            "$vectorSearch": [{"_id": 1, VECTOR_SCORE: raw}],
            "$search": [{"_id": 1, TEXT_SCORE: 3.5}],
        }
    )
    searcher = AtlasSearcher({"memories": collection}, rank_fusion=False, similarity=similarity)
    [hit] = await searcher.search(TARGET, _query(text="tea"))
    assert hit.sources["vector"].score == pytest.approx(cosine)
    assert hit.sources["text"].score == pytest.approx(3.5)  # keyword scores are left alone
    assert sorted(collection.stages) == ["$search", "$vectorSearch"]

    # $rankFusion: the vector input's value in scoreDetails is converted the same way.
    details = {
        "value": 0.03,
        "details": [
            {"inputPipelineName": "vector", "rank": 1, "value": raw},
            {"inputPipelineName": "text", "rank": 1, "value": 3.5},
        ],
    }
    fused = _Collection({"$rankFusion": [{"_id": 1, SCORE_DETAILS: details}]})
    searcher = AtlasSearcher({"memories": fused}, rank_fusion=True, similarity=similarity)
    [hit] = await searcher.search(TARGET, _query(text="tea"))
    assert hit.sources["vector"].score == pytest.approx(cosine)
    assert hit.sources["text"].score == pytest.approx(3.5)
    assert parse_score_details(details, similarity=similarity)[1]["vector"].score == (
        pytest.approx(cosine)
    )


class _Refusing(_Collection):
    """A server whose ``$rankFusion`` refuses (as an 8.0 cluster refuses ``$vectorSearch``
    inputs), answering the single-source stages."""

    def __init__(self, error: Exception) -> None:
        super().__init__(
            {
                "$vectorSearch": [{"_id": 1, VECTOR_SCORE: 0.9}, {"_id": 2, VECTOR_SCORE: 0.7}],
                "$search": [{"_id": 2, TEXT_SCORE: 2.0}],
            }
        )
        self.error = error

    def aggregate(self, pipeline: list[dict[str, Any]], **kwargs: Any) -> _Cursor:
        if "$rankFusion" in pipeline[0]:
            self.stages.append("$rankFusion")
            raise self.error
        return super().aggregate(pipeline, **kwargs)


async def test_a_refused_rank_fusion_falls_back_to_the_frameworks_fusion_once() -> None:
    from pymongo import errors as pm
    from structlog.testing import capture_logs

    refusal = pm.OperationFailure(
        "Unrecognized pipeline stage name: '$rankFusion'",
        code=40324,
        details={"codeName": "Location40324"},
    )
    collection = _Refusing(refusal)
    searcher = AtlasSearcher({"memories": collection}, rank_fusion=True)
    with capture_logs() as logs:
        first = await searcher.search(TARGET, _query(text="tea"))
        second = await searcher.search(TARGET, _query(text="tea"))
    assert searcher.rank_fusion is False
    # Asked once; then both searches were fused in the framework from the two stages.
    assert collection.stages.count("$rankFusion") == 1
    assert collection.stages.count("$vectorSearch") == collection.stages.count("$search") == 2
    for hits in (first, second):
        assert [hit.id for hit in hits] == [2, 1]  # found by both sources, then by one
        assert hits[0].sources["vector"].rank == 2 and hits[0].sources["text"].rank == 1
    warnings = [e for e in logs if e["event"] == "rank_fusion_disabled"]
    assert len(warnings) == 1 and warnings[0]["log_level"] == "warning"
    assert "Unrecognized pipeline stage" in warnings[0]["reason"]


@pytest.mark.parametrize(
    ("code", "message", "raised"),
    [
        (8000, "user is not allowed to do action [aggregate] on [app.memories]", "Authentication"),
        (6, "Error connecting to localhost:28000", "Storage"),
    ],
)
async def test_permission_and_transient_errors_do_not_turn_rank_fusion_off(
    code: int, message: str, raised: str
) -> None:
    from pymongo import errors as pm

    from agent_memory.errors import AgentMemoryError

    collection = _Refusing(pm.OperationFailure(message, code=code))
    searcher = AtlasSearcher({"memories": collection}, rank_fusion=True)
    with pytest.raises(AgentMemoryError) as caught:
        await searcher.search(TARGET, _query(text="tea"))
    assert type(caught.value).__name__.startswith(raised)
    assert searcher.rank_fusion is True and collection.stages == ["$rankFusion"]


async def test_a_query_the_server_refuses_with_or_without_rank_fusion_turns_nothing_off() -> None:
    """A bad query (here a filter path the index does not declare) fails inside $rankFusion
    and again without it: the stage was not the problem, so it stays in use."""
    from pymongo import errors as pm

    from agent_memory.errors import StorageError

    bad = pm.OperationFailure("Path 'colour' needs to be indexed as token", code=8)

    class _BadQuery(_Refusing):
        def aggregate(self, pipeline: list[dict[str, Any]], **kwargs: Any) -> _Cursor:
            self.stages.append(next(iter(pipeline[0])))
            raise self.error

    collection = _BadQuery(bad)
    searcher = AtlasSearcher({"memories": collection}, rank_fusion=True)
    with pytest.raises(StorageError, match="needs to be indexed"):
        await searcher.search(TARGET, _query(text="tea"))
    assert searcher.rank_fusion is True
    assert collection.stages[0] == "$rankFusion"


def test_a_vector_input_without_a_value_has_no_score_to_convert() -> None:
    fused, sources = parse_score_details(
        {"value": 0.02, "details": [{"inputPipelineName": "vector", "rank": 1}]}
    )
    assert fused == pytest.approx(0.02)
    assert (sources["vector"].rank, sources["vector"].score) == (1, 0.0)

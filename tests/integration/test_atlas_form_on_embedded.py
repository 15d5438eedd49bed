"""The framework's Atlas pipelines, run in a form the embedded engine (mongoeco) can execute.

mongoeco's in-process client implements local ``$vectorSearch`` and ``$search`` indexes, which
lets the stages the framework builds run for real without Atlas. Its limits, measured against
mongoeco 4.11 and stated per test below:

* a local ``vectorSearch`` index accepts only ``type: "vector"`` fields, so the ``filter``
  fields of the catalog's definition are left out (the pre-filter still runs, unindexed);
* vectors must be stored as plain arrays: BSON binary vectors are skipped by its search;
* ``{"$meta": "searchScore"}`` is not supported, so ``$search`` pipelines stop before the
  framework's score stage;
* ``$rankFusion`` is not supported, so fusion is not exercised here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest

pytest.importorskip("mongoeco", reason="the embedded engine (mongoeco) needs Python 3.13+")

from mongoeco import AsyncMongoClient, SearchIndexModel
from mongoeco.engines import MemoryEngine

from agent_memory.mongo import _driver
from agent_memory.mongo.catalog import IndexCatalog
from agent_memory.mongo.search.atlas import (
    VECTOR_SCORE,
    text_search_pipeline,
    vector_search_pipeline,
)
from agent_memory.mongo.search.types import SearchQuery, SearchTarget
from agent_memory.providers.embedders.fake import FakeEmbedder

DIMENSIONS = 64
AGENT = "agent-1"
COLLECTION = "memories"

# (user, id suffix, memory_type, tags, status, content)
MEMORIES = [
    ("ada", "home", "fact", ["home"], "active", "I live in Berlin near the river Spree"),
    ("ada", "tea", "preference", ["food"], "active", "I prefer green tea in the morning"),
    ("ada", "german", "instruction", ["style"], "active", "Always answer in German"),
    ("ada", "winter", "fact", ["weather", "home"], "active", "Berlin winters are cold and grey"),
    ("ada", "old", "fact", ["home"], "archived", "I used to live in Munich"),
    ("bob", "home", "fact", ["home"], "active", "I live in Berlin as well, in Kreuzberg"),
    ("bob", "coffee", "preference", ["food"], "active", "I prefer strong coffee"),
    ("bob", "winter", "fact", ["weather"], "active", "Berlin winters are long"),
]


def tenant(user: str) -> dict[str, str]:
    return {"agent_id": AGENT, "user_id": user}


@pytest.fixture
async def embedder() -> AsyncIterator[FakeEmbedder]:
    async with FakeEmbedder(DIMENSIONS) as instance:
        yield instance


@pytest.fixture
def catalog() -> IndexCatalog:
    return IndexCatalog.load(dimensions=DIMENSIONS)


@pytest.fixture
def target(catalog: IndexCatalog) -> SearchTarget:
    return catalog.target(COLLECTION)


@pytest.fixture
async def store(
    catalog: IndexCatalog, embedder: FakeEmbedder
) -> AsyncIterator[tuple[Any, dict[str, dict[str, Any]]]]:
    """A memories collection in mongoeco's memory engine with both search indexes."""
    client = AsyncMongoClient(MemoryEngine())
    try:
        collection = client["atlas_form"][COLLECTION]
        vectors = await embedder.embed_documents([m[5] for m in MEMORIES])
        docs = {}
        for (user, suffix, kind, tags, status, content), vector in zip(
            MEMORIES, vectors, strict=True
        ):
            doc_id = f"{user}-{suffix}"
            docs[doc_id] = {
                "_id": doc_id,
                "agent_id": AGENT,
                "user_id": user,
                "memory_type": kind,
                "tags": tags,
                "status": status,
                "content": content,
                # Plain array: mongoeco's local vector search skips BSON binary vectors.
                "embedding": [float(x) for x in vector],
            }
        # A third tenant under another agent with the same user id must never leak in.
        stranger = dict(docs["ada-home"], _id="other-agent-ada", agent_id="agent-2")
        docs[stranger["_id"]] = stranger
        await collection.insert_many(list(docs.values()))

        spec = catalog[COLLECTION]
        models = []
        for index in spec.search_indexes:
            definition = index.definition
            if index.type == "vectorSearch":
                # mongoeco accepts only vector fields; the filter fields are dropped.
                definition = {"fields": [f for f in definition["fields"] if f["type"] == "vector"]}
            models.append(SearchIndexModel(definition, name=index.name, type=index.type))
        await collection.create_search_indexes(models)
        yield collection, docs
    finally:
        await client.close()


def matches(doc: dict[str, Any], query: SearchQuery) -> bool:
    """The documented semantics of tenant, filters and exclude, evaluated in Python."""
    if any(doc[path] != value for path, value in query.tenant.items()):
        return False

    def hit(path: str, value: Any) -> bool:
        have = doc[path] if isinstance(doc[path], list) else [doc[path]]
        wanted = value if isinstance(value, list) else [value]
        return bool(set(have) & set(wanted))

    return all(hit(p, v) for p, v in query.filters.items()) and not any(
        hit(p, v) for p, v in query.exclude.items()
    )


def exact_ranking(docs: dict[str, dict[str, Any]], query: SearchQuery) -> list[tuple[str, float]]:
    """Exact cosine ranking of the tenant's matching documents, computed with numpy."""
    candidates = [doc for doc in docs.values() if matches(doc, query)]
    matrix = np.asarray([doc["embedding"] for doc in candidates], dtype=np.float64)
    q = np.asarray(query.vector, dtype=np.float64)
    scores = matrix @ q / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(q))
    order = np.argsort(-scores, kind="stable")
    return [(candidates[i]["_id"], float(scores[i])) for i in order]


VECTOR_CASES = [
    pytest.param("ada", {}, {}, id="ada-unfiltered"),
    pytest.param("bob", {}, {}, id="bob-unfiltered"),
    pytest.param("ada", {"memory_type": "fact"}, {}, id="filter-scalar"),
    pytest.param("ada", {"tags": ["home", "food"]}, {"status": "archived"}, id="filter-list"),
    pytest.param("ada", {}, {"tags": ["weather", "style"]}, id="exclude-list"),
    pytest.param("bob", {"memory_type": ["fact", "preference"]}, {"tags": "food"}, id="mixed"),
]


@pytest.mark.parametrize(("user", "filters", "exclude"), VECTOR_CASES)
async def test_vector_stage_prefilters_the_tenant_and_ranks_exactly(
    store: tuple[Any, dict[str, dict[str, Any]]],
    target: SearchTarget,
    embedder: FakeEmbedder,
    user: str,
    filters: dict[str, Any],
    exclude: dict[str, Any],
) -> None:
    """The framework's ``$vectorSearch`` stage, tenant and filters inside it, returns exactly
    the tenant's matching documents, in exact cosine order, with the score stage after it.

    Not run here: the ``filter``-typed index fields (mongoeco refuses them, so its pre-filter
    runs unindexed) and BSON binary vectors (stored as arrays instead).
    """
    collection, docs = store
    query = SearchQuery(
        tenant=tenant(user),
        vector=await embedder.embed_query("where do I live in Berlin"),
        filters=filters,
        exclude=exclude,
        limit=20,
    )
    pipeline = vector_search_pipeline(target, query)
    score_stage = {"$set": {VECTOR_SCORE: {"$meta": "vectorSearchScore"}}}
    assert pipeline[1] == score_stage
    results = await _driver.aggregate(collection, pipeline[:2])

    expected = exact_ranking(docs, query)
    assert expected, "every case has at least one matching document"
    assert [doc["_id"] for doc in results] == [doc_id for doc_id, _ in expected]
    for doc in results:
        assert doc["agent_id"] == AGENT and doc["user_id"] == user
        assert matches(doc, query)
    scores = [doc[VECTOR_SCORE] for doc in results]
    assert scores == sorted(scores, reverse=True)
    for score, (_, cosine) in zip(scores, expected, strict=True):
        # Atlas reports (1 + cosine) / 2; mongoeco reports the cosine itself.
        assert score == pytest.approx(cosine, abs=1e-5) or score == pytest.approx(
            (1 + cosine) / 2, abs=1e-5
        )


async def test_full_vector_pipeline_drops_the_vector(
    store: tuple[Any, dict[str, dict[str, Any]]], target: SearchTarget, embedder: FakeEmbedder
) -> None:
    """The complete vector pipeline (score, then ``$unset`` of the vector) runs as built."""
    collection, _ = store
    query = SearchQuery(tenant=tenant("ada"), vector=await embedder.embed_query("green tea"))
    results = await _driver.aggregate(collection, vector_search_pipeline(target, query))
    assert results and results[0]["_id"] == "ada-tea"
    assert all(target.vector_path not in doc and VECTOR_SCORE in doc for doc in results)


TEXT_CASES = [
    pytest.param("ada", "berlin", {}, {}, id="ada"),
    pytest.param("bob", "berlin", {}, {}, id="bob"),
    pytest.param("ada", "berlin", {"tags": ["weather"]}, {}, id="filter-list"),
    pytest.param("ada", "live", {"memory_type": "fact"}, {"status": "archived"}, id="exclude"),
    pytest.param("bob", "prefer", {}, {"tags": ["home"]}, id="other-word"),
]


@pytest.mark.parametrize(("user", "text", "filters", "exclude"), TEXT_CASES)
async def test_search_stage_keeps_the_tenant_and_finds_matches(
    store: tuple[Any, dict[str, dict[str, Any]]],
    target: SearchTarget,
    user: str,
    text: str,
    filters: dict[str, Any],
    exclude: dict[str, Any],
) -> None:
    """The framework's ``$search`` stage (``compound`` with the tenant as ``equals`` in
    ``filter``, filters as ``equals``/``in``, exclusions in ``mustNot``) returns exactly the
    tenant's matching documents that contain the word.

    Not run here: the ``{"$meta": "searchScore"}`` stage that follows (mongoeco supports only
    ``searchHighlights``, ``textScore`` and ``vectorSearchScore``), so the pipeline is cut
    after ``$search`` and its ``$limit``; the relevance order is not compared with Atlas's.
    """
    collection, docs = store
    query = SearchQuery(tenant=tenant(user), text=text, filters=filters, exclude=exclude)
    pipeline = text_search_pipeline(target, query)
    assert [next(iter(stage)) for stage in pipeline[:2]] == ["$search", "$limit"]
    results = await _driver.aggregate(collection, pipeline[:2])

    def has_word(doc: dict[str, Any]) -> bool:
        words = {w.strip(".,").lower() for w in doc["content"].split()}
        return text.lower() in words

    expected = {doc_id for doc_id, doc in docs.items() if matches(doc, query) and has_word(doc)}
    assert expected, "every case has at least one matching document"
    assert {doc["_id"] for doc in results} == expected
    assert all(doc["user_id"] == user and doc["agent_id"] == AGENT for doc in results)

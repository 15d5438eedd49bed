"""The Atlas double (:mod:`tests.integration.atlas_double`) answers as MongoDB documents Atlas.

Everything here goes over the wire: a plain pymongo ``AsyncMongoClient`` (and, at the end, the
framework's own connection) talks to the double, which answers the search commands and stages
itself and forwards the rest to the session's embedded server. Each test proves one documented
behaviour the framework's Atlas tier depends on, so that tests of the framework against the
double prove something about Atlas:

- the search index lifecycle and the ``$listSearchIndexes`` shape, including an updated index
  that still serves its old definition (the documented sample);
- ``$vectorSearch``: exact ranking with the documented normalised scores, the pre-filter, the
  indexing lag (the filter sees mongot's copy, the documents returned are the current ones), and
  an empty result for a missing, misnamed or building index;
- ``$search`` with the ``compound`` operator the framework builds;
- ``$rankFusion``: reciprocal rank fusion with its ``scoreDetails``, or an 8.0 cluster's refusal;
- refusals with the exact code, codeName and errmsg Atlas sends, and the M0 index limit.

Nothing waits on time: the view of a collection moves only on ``sync()`` (or on a fake clock
passing the lag), and builds only on ``advance()``/``ready()`` (or one step per listing).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
from bson.binary import Binary, BinaryVectorDtype
from pymongo import AsyncMongoClient
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.mongo.connection import connect
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.embedders.fake import FakeEmbedder
from agent_memory.tenancy import Tenant
from tests.integration.atlas_double import (
    ATLAS_NOT_ALLOWED,
    RRF_DESCRIPTION,
    AtlasDouble,
    ManualClock,
)

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")

VECTOR_INDEX = {
    "fields": [
        {"type": "vector", "path": "embedding", "numDimensions": 3, "similarity": "cosine"},
        {"type": "filter", "path": "user_id"},
        {"type": "filter", "path": "tags"},
        {"type": "filter", "path": "status"},
    ]
}
TEXT_INDEX = {
    "mappings": {
        "dynamic": False,
        "fields": {
            "content": {"type": "string"},
            "user_id": {"type": "token"},
            "status": {"type": "token"},
        },
    }
}
#: Three-dimensional vectors at known angles from the query [1, 0, 0].
DOCS = [
    {"_id": "a", "user_id": "u1", "embedding": [1.0, 0.0, 0.0], "tags": ["x"], "status": "active",
     "content": "Alice likes green tea in the morning"},
    {"_id": "b", "user_id": "u1", "embedding": [1.0, 1.0, 0.0], "tags": ["y"], "status": "active",
     "content": "Alice drinks coffee"},
    {"_id": "c", "user_id": "u1", "embedding": [0.0, 1.0, 0.0], "tags": ["x", "y"],
     "status": "superseded", "content": "Tea is a drink; green tea is a tea"},
    {"_id": "d", "user_id": "u2", "embedding": [1.0, 0.1, 0.0], "tags": ["x"], "status": "active",
     "content": "Bob likes tea"},
]  # fmt: skip
QUERY = [1.0, 0.0, 0.0]


@pytest.fixture
async def double(embedded_server) -> AsyncIterator[AtlasDouble]:
    info = embedded_server.info
    async with AtlasDouble(info.host, info.port, info.secret) as running:
        yield running


@pytest.fixture
async def db(double, settings) -> AsyncIterator[Any]:
    """The test's database, reached through the double by plain pymongo."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(double.uri)
    try:
        yield client[settings.database]
    finally:
        await client.drop_database(settings.database)
        await client.close()


async def aggregate(collection: Any, pipeline: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return await (await collection.aggregate(pipeline)).to_list(None)


async def listed(collection: Any, name: str | None = None) -> list[dict[str, Any]]:
    return await (await collection.list_search_indexes(name)).to_list(None)


async def indexed(double: AtlasDouble, db: Any, *, similarity: str = "cosine") -> Any:
    """``db.docs`` holding DOCS, with a READY vector and text index, and mongot caught up."""
    collection = db.docs
    await collection.insert_many([dict(doc) for doc in DOCS])
    definition = {
        "fields": [
            {**VECTOR_INDEX["fields"][0], "similarity": similarity},
            *VECTOR_INDEX["fields"][1:],
        ]
    }
    await collection.create_search_indexes(
        [
            SearchIndexModel(definition, name="vec", type="vectorSearch"),
            SearchIndexModel(TEXT_INDEX, name="text", type="search"),
        ]
    )
    double.ready()
    await double.sync()
    return collection


def vector_stage(**overrides: Any) -> dict[str, Any]:
    spec = {
        "index": "vec",
        "path": "embedding",
        "queryVector": QUERY,
        "numCandidates": 100,
        "limit": 10,
        **overrides,
    }
    return {"$vectorSearch": spec}


SCORED = [{"$set": {"score": {"$meta": "vectorSearchScore"}}}, {"$unset": "embedding"}]


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- search index lifecycle ----------------------------------------------------------------------


async def test_a_new_index_lists_as_pending_then_building_then_ready(double, db):
    collection = db.docs
    await collection.insert_one({"_id": 1})
    assert (
        await collection.create_search_index(
            SearchIndexModel(VECTOR_INDEX, name="vec", type="vectorSearch")
        )
        == "vec"
    )

    (pending,) = await listed(collection)
    assert {k: pending[k] for k in ("name", "type", "status", "queryable")} == {
        "name": "vec",
        "type": "vectorSearch",
        "status": "PENDING",
        "queryable": False,
    }
    assert isinstance(pending["id"], str)
    assert pending["latestDefinition"] == VECTOR_INDEX
    assert pending["latestDefinitionVersion"]["version"] == 0
    assert "createdAt" in pending["latestDefinitionVersion"]
    (host,) = pending["statusDetail"]
    assert set(host) == {"hostname", "status", "queryable", "mainIndex"}
    assert host["mainIndex"]["status"] == "PENDING"
    assert host["mainIndex"]["queryable"] is False
    assert host["mainIndex"]["definitionVersion"]["version"] == 0

    assert double.advance("vec") == {("docs", "vec"): "BUILDING"}
    (building,) = await listed(collection)
    assert (building["status"], building["queryable"]) == ("BUILDING", False)

    double.advance("vec")
    (ready,) = await listed(collection, "vec")
    assert (ready["status"], ready["queryable"]) == ("READY", True)
    assert ready["statusDetail"][0]["mainIndex"]["status"] == "READY"
    assert "stagedIndex" not in ready["statusDetail"][0]
    assert double.answered == ["createSearchIndexes", *["$listSearchIndexes"] * 3]


async def test_an_updated_index_serves_the_old_definition_until_the_rebuild_ends(double, db):
    """The documented sample: right after an update the index is BUILDING *and* queryable, its
    latestDefinition is the new one, and mainIndex still serves the old one."""
    collection = await indexed(double, db)
    euclidean = {
        "fields": [
            {**VECTOR_INDEX["fields"][0], "similarity": "euclidean"},
            *VECTOR_INDEX["fields"][1:],
        ]
    }
    await collection.update_search_index("vec", euclidean)

    (index,) = await listed(collection, "vec")
    assert (index["status"], index["queryable"]) == ("BUILDING", True)
    assert index["latestDefinition"] == euclidean
    assert index["latestDefinitionVersion"]["version"] == 1
    (host,) = index["statusDetail"]
    assert host["mainIndex"]["status"] == "READY"
    assert host["mainIndex"]["queryable"] is True
    assert host["mainIndex"]["definitionVersion"]["version"] == 0
    assert host["mainIndex"]["definition"] == VECTOR_INDEX
    assert host["stagedIndex"]["status"] == "PENDING"
    assert host["stagedIndex"]["queryable"] is False
    assert host["stagedIndex"]["definitionVersion"]["version"] == 1
    assert host["stagedIndex"]["definition"] == euclidean

    # Queries still use the old (cosine) definition.
    top = (await aggregate(collection, [vector_stage(limit=1), *SCORED]))[0]
    assert top["score"] == pytest.approx(1.0)  # (1 + cos 0) / 2; euclidean would give 1/(1+0)
    second = (await aggregate(collection, [vector_stage(limit=2), *SCORED]))[1]
    assert second["score"] == pytest.approx((1 + cosine(QUERY, [1.0, 0.1, 0.0])) / 2)

    double.ready("vec")
    (index,) = await listed(collection, "vec")
    assert (index["status"], index["queryable"]) == ("READY", True)
    assert "stagedIndex" not in index["statusDetail"][0]
    assert index["statusDetail"][0]["mainIndex"]["definitionVersion"]["version"] == 1
    second = (await aggregate(collection, [vector_stage(limit=2), *SCORED]))[1]
    assert second["score"] == pytest.approx(1 / (1 + 0.1))  # now euclidean


async def test_a_failed_build_reports_its_message_where_the_api_puts_it(double, db):
    collection = db.docs
    await collection.insert_one({"_id": 1})
    await collection.create_search_index(SearchIndexModel(TEXT_INDEX, name="text"))
    double.fail("text", "bad analyzer")
    (index,) = await listed(collection)
    assert (index["status"], index["queryable"]) == ("FAILED", False)
    assert index["statusDetail"][0]["mainIndex"]["message"] == "bad analyzer"
    assert "message" not in index  # no top-level message is documented


async def test_listings_of_other_deployments(double, db):
    collection = db.docs
    await collection.insert_one({"_id": 1})
    await collection.create_search_index(SearchIndexModel(TEXT_INDEX, name="text"))
    double.listing = "on_prem"
    (index,) = await listed(collection)
    assert set(index) == {"id", "name", "type", "latestDefinition", "latestDefinitionVersion"}
    double.listing = "empty"
    assert await listed(collection) == []


async def test_unknown_names_and_drops(double, db):
    collection = db.docs
    await collection.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as raised:
        await collection.update_search_index("nope", TEXT_INDEX)
    assert raised.value.details["errmsg"] == (
        f"No index with name nope exists in namespace {db.name}.docs"
    )
    await collection.create_search_index(SearchIndexModel(TEXT_INDEX, name="text"))
    await collection.drop_search_index("text")
    assert await listed(collection) == []
    assert double.index_states == {}

    # Search indexes go with their collection.
    await collection.create_search_index(SearchIndexModel(TEXT_INDEX, name="text"))
    await collection.drop()
    assert double.index_states == {}


async def test_the_fourth_index_on_m0_is_refused_with_the_tier_limit(double, db):
    double.max_search_indexes = 3
    await db.docs.insert_one({"_id": 1})
    for name in ("one", "two", "three"):
        await db.docs.create_search_index(SearchIndexModel(TEXT_INDEX, name=name))
    with pytest.raises(OperationFailure) as raised:
        await db.other.create_search_index(SearchIndexModel(TEXT_INDEX, name="four"))
    assert raised.value.code == 20
    assert raised.value.details["codeName"] == "IllegalOperation"
    assert raised.value.details["errmsg"] == (
        "The maximum number of FTS indexes has been reached for this instance size."
    )
    assert len(double.index_states) == 3


# --- $vectorSearch --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("similarity", "score"),
    [
        ("cosine", lambda q, v: (1 + cosine(q, v)) / 2),
        ("dotProduct", lambda q, v: (1 + float(np.dot(q, v))) / 2),
        ("euclidean", lambda q, v: 1 / (1 + float(np.linalg.norm(np.subtract(q, v))))),
    ],
)
async def test_vector_search_ranks_exactly_with_the_documented_score(double, db, similarity, score):
    collection = await indexed(double, db, similarity=similarity)
    found = await aggregate(collection, [vector_stage(), *SCORED])
    vectors = {doc["_id"]: doc["embedding"] for doc in DOCS}
    expected = sorted(vectors, key=lambda i: -score(QUERY, vectors[i]))
    assert [doc["_id"] for doc in found] == expected
    for doc in found:
        assert doc["score"] == pytest.approx(score(QUERY, vectors[doc["_id"]]))
        assert 0.0 <= doc["score"] <= 1.0
        assert "embedding" not in doc  # the rest of the pipeline ran
    assert double.answered[-1] == "$vectorSearch"
    assert "aggregate" not in double.commands  # answered, not forwarded


async def test_binary_vectors_limit_and_num_candidates(double, db):
    collection = db.docs
    await collection.insert_many(
        [
            {"_id": "f32", "embedding": Binary.from_vector([1.0, 0.0, 0.0], BinaryVectorDtype.FLOAT32)},
            {"_id": "i8", "embedding": Binary.from_vector([1, 1, 0], BinaryVectorDtype.INT8)},
            {"_id": "arr", "embedding": [0.0, 1.0, 0.0]},
            {"_id": "short", "embedding": [1.0, 0.0]},  # another length: not indexed
            {"_id": "none"},
        ]
    )  # fmt: skip
    await collection.create_search_index(
        SearchIndexModel(VECTOR_INDEX, name="vec", type="vectorSearch")
    )
    double.ready()
    await double.sync()
    found = await aggregate(collection, [vector_stage(), *SCORED])
    assert [doc["_id"] for doc in found] == ["f32", "i8", "arr"]
    assert found[1]["score"] == pytest.approx((1 + math.sqrt(0.5)) / 2)
    found = await aggregate(collection, [vector_stage(limit=2, numCandidates=2)])
    assert [doc["_id"] for doc in found] == ["f32", "i8"]
    found = await aggregate(collection, [vector_stage(), {"$limit": 1}])
    assert [doc["_id"] for doc in found] == ["f32"]

    with pytest.raises(OperationFailure) as raised:
        await aggregate(collection, [vector_stage(limit=5, numCandidates=2)])
    assert "numCandidates" in raised.value.details["errmsg"]
    with pytest.raises(OperationFailure) as raised:
        await aggregate(collection, [vector_stage(queryVector=[1.0, 0.0])])
    assert "indexed with 3 dimensions but queried with 2" in raised.value.details["errmsg"]


async def test_the_filter_is_applied_inside_the_stage(double, db):
    collection = await indexed(double, db)
    the_filter = {
        "$and": [
            {"user_id": {"$eq": "u1"}},
            {"tags": {"$in": ["x"]}},  # an array field matches when it holds the value
            {"status": {"$ne": "superseded"}},
        ]
    }
    found = await aggregate(collection, [vector_stage(filter=the_filter)])
    assert [doc["_id"] for doc in found] == ["a"]
    found = await aggregate(collection, [vector_stage(filter={"tags": {"$nin": ["x"]}})])
    assert [doc["_id"] for doc in found] == ["b"]

    # A field the index does not declare as a filter: the troubleshooting page's error.
    with pytest.raises(OperationFailure) as raised:
        await aggregate(collection, [vector_stage(filter={"content": {"$eq": "x"}})])
    assert raised.value.details["errmsg"] == (
        "PlanExecutor error during aggregation :: caused by :: "
        "Path 'content' needs to be indexed as token"
    )


async def test_missing_misnamed_or_building_indexes_give_no_documents(double, db):
    collection = db.docs
    await collection.insert_many([dict(doc) for doc in DOCS])
    await double.sync(f"{db.name}.docs")
    # No index at all, or a misspelt one: an empty cursor, never an error (documented).
    assert await aggregate(collection, [vector_stage()]) == []
    assert await aggregate(collection, [vector_stage(index="vecc")]) == []
    await collection.create_search_index(
        SearchIndexModel(VECTOR_INDEX, name="vec", type="vectorSearch")
    )
    await double.sync()
    assert await aggregate(collection, [vector_stage()]) == []  # PENDING
    double.advance()
    assert await aggregate(collection, [vector_stage()]) == []  # BUILDING
    double.advance()
    assert len(await aggregate(collection, [vector_stage()])) == 4  # READY
    # A vectorSearch stage naming a search-type index finds nothing either.
    await collection.create_search_index(SearchIndexModel(TEXT_INDEX, name="text"))
    double.ready()
    assert await aggregate(collection, [vector_stage(index="text")]) == []


async def test_new_writes_are_invisible_until_mongot_catches_up(double, db):
    """The indexing lag: the filter is evaluated on mongot's copy, the documents returned are
    looked up as they are now."""
    collection = await indexed(double, db)
    await collection.insert_one(
        {"_id": "new", "user_id": "u1", "embedding": [1.0, 0.0, 0.0], "status": "active"}
    )
    await collection.update_one({"_id": "a"}, {"$set": {"status": "superseded"}})
    await collection.delete_one({"_id": "b"})
    active = vector_stage(filter={"status": {"$eq": "active"}})

    before = await aggregate(collection, [active])
    assert "new" not in [doc["_id"] for doc in before]  # not indexed yet
    assert "b" not in [doc["_id"] for doc in before]  # deleted: the lookup finds nothing
    a = next(doc for doc in before if doc["_id"] == "a")
    assert a["status"] == "superseded"  # passed the stale pre-filter, returned as it is now

    await double.sync()
    after = [doc["_id"] for doc in await aggregate(collection, [active])]
    assert after[0] == "new"
    assert "a" not in after


async def test_the_lag_can_run_on_a_clock(double, db):
    clock = ManualClock()
    double.clock, double.lag = clock, 2.0
    collection = await indexed(double, db)  # synced at clock.now
    await collection.insert_one({"_id": "new", "user_id": "u1", "embedding": [1.0, 0.0, 0.0]})
    clock.now += 1.9
    assert "new" not in [d["_id"] for d in await aggregate(collection, [vector_stage()])]
    clock.now += 0.1
    assert "new" in [d["_id"] for d in await aggregate(collection, [vector_stage()])]


# --- $search --------------------------------------------------------------------------------------


async def test_search_compound_text_with_filters(double, db):
    collection = await indexed(double, db)
    pipeline = [
        {
            "$search": {
                "index": "text",
                "compound": {
                    "must": [{"text": {"query": "GREEN tea!", "path": ["content", "context"]}}],
                    "filter": [
                        {"equals": {"path": "user_id", "value": "u1"}},
                        {"in": {"path": "status", "value": ["active", "superseded"]}},
                    ],
                },
            }
        },
        {"$limit": 10},
        {"$set": {"score": {"$meta": "searchScore"}}},
        {"$unset": "embedding"},
    ]
    found = await aggregate(collection, pipeline)
    # Score: how many distinct query words ("green", "tea") the searched fields contain.
    assert [(doc["_id"], doc["score"]) for doc in found] == [("a", 2.0), ("c", 2.0)]
    assert "embedding" not in found[0]

    pipeline[0]["$search"]["compound"]["mustNot"] = [
        {"equals": {"path": "status", "value": "superseded"}}
    ]
    assert [doc["_id"] for doc in await aggregate(collection, pipeline)] == ["a"]

    # equals on a field the index does not map as token matches nothing (Lucene never saw it).
    pipeline[0]["$search"]["compound"]["filter"] = [{"equals": {"path": "tags", "value": "x"}}]
    assert await aggregate(collection, pipeline) == []
    pipeline[0]["$search"]["index"] = "missing"
    assert await aggregate(collection, pipeline) == []


# --- $rankFusion -----------------------------------------------------------------------------------


def fusion(weights: dict[str, float]) -> list[dict[str, Any]]:
    return [
        {
            "$rankFusion": {
                "input": {
                    "pipelines": {
                        "vector": [vector_stage(filter={"user_id": {"$eq": "u1"}})],
                        "text": [
                            {
                                "$search": {
                                    "index": "text",
                                    "compound": {
                                        "must": [{"text": {"query": "tea", "path": "content"}}],
                                        "filter": [{"equals": {"path": "user_id", "value": "u1"}}],
                                    },
                                }
                            },
                            {"$limit": 10},
                        ],
                    }
                },
                "combination": {"weights": weights},
                "scoreDetails": True,
            }
        },
        {"$limit": 10},
        {"$set": {"details": {"$meta": "scoreDetails"}, "fused": {"$meta": "score"}}},
        {"$unset": "embedding"},
    ]


async def test_rank_fusion_fuses_by_reciprocal_rank_with_score_details(double, db):
    collection = await indexed(double, db)
    found = await aggregate(collection, fusion({"vector": 2.0, "text": 1.0}))
    # vector ranks a (1), b (2), c (3); text ranks a (1, "tea"), c (2, "tea").
    expected = {
        "a": 2.0 / 61 + 1.0 / 61,
        "b": 2.0 / 62,
        "c": 2.0 / 63 + 1.0 / 62,
    }
    assert [doc["_id"] for doc in found] == sorted(expected, key=lambda i: -expected[i])
    for doc in found:
        assert doc["fused"] == pytest.approx(expected[doc["_id"]])
        assert doc["details"]["value"] == pytest.approx(expected[doc["_id"]])
        assert doc["details"]["description"] == RRF_DESCRIPTION
    b = next(doc for doc in found if doc["_id"] == "b")
    text, vector = b["details"]["details"]  # inputs in name order, as the server does
    assert text == {"inputPipelineName": "text", "rank": "N/A", "weight": 1.0, "details": []}
    assert vector["inputPipelineName"] == "vector"
    assert (vector["rank"], vector["weight"]) == (2, 2.0)
    assert vector["value"] == pytest.approx((1 + cosine(QUERY, [1.0, 1.0, 0.0])) / 2)
    assert double.answered[-1] == "$rankFusion"


async def test_rank_fusion_refused_like_an_8_0_cluster(double, db):
    collection = await indexed(double, db)
    double.rank_fusion = "refuse"
    with pytest.raises(OperationFailure) as raised:
        await aggregate(collection, fusion({}))
    assert raised.value.code == 40324
    assert raised.value.details["codeName"] == "Location40324"
    assert raised.value.details["errmsg"] == "Unrecognized pipeline stage name: '$rankFusion'"

    double.rank_fusion = "refuse_vector_inputs"
    with pytest.raises(OperationFailure):
        await aggregate(collection, fusion({}))
    text_only = fusion({})
    inputs = text_only[0]["$rankFusion"]["input"]["pipelines"]
    del inputs["vector"]
    text_only[0]["$rankFusion"]["combination"] = {"weights": {"text": 1.0}}
    assert [doc["_id"] for doc in await aggregate(collection, text_only)] == ["a", "c"]


async def test_rank_fusion_inputs_must_select_and_rank(double, db):
    collection = await indexed(double, db)
    unranked = [{"$rankFusion": {"input": {"pipelines": {"m": [{"$match": {}}]}}}}]
    with pytest.raises(OperationFailure) as raised:
        await aggregate(collection, unranked)
    assert raised.value.code == 9191100
    # An input without a search stage runs on the server as it is.
    ranked = [
        {"$rankFusion": {"input": {"pipelines": {"m": [{"$match": {}}, {"$sort": {"_id": -1}}]}}}}
    ]
    assert [doc["_id"] for doc in await aggregate(collection, ranked)] == ["d", "c", "b", "a"]


async def test_what_the_double_does_not_model_is_an_error_not_a_silent_answer(double, db):
    collection = await indexed(double, db)
    with pytest.raises(OperationFailure) as raised:
        await aggregate(collection, [vector_stage(), {"$group": {"_id": None}}])
    assert raised.value.code == 1
    assert "atlas_double does not model the stage $group" in raised.value.details["errmsg"]


async def test_a_client_asking_for_compression_is_still_answered(double, settings):
    """The embedded server offers no compression, so none is negotiated and every message stays
    readable (OP_COMPRESSED would be forwarded untouched, never answered)."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(double.uri + "&compressors=zlib")
    try:
        await client[settings.database].docs.insert_one({"_id": 1})
        assert await listed(client[settings.database].docs) == []
        assert double.answered == ["$listSearchIndexes"]
    finally:
        await client.drop_database(settings.database)
        await client.close()


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "code_name", "errmsg"),
    [
        (8000, "AtlasError", ATLAS_NOT_ALLOWED.format("$listSearchIndexes")),
        (8000, "AtlasError", "user is not allowed to do action [listSearchIndexes] on [db.docs]"),
        (31082, "SearchNotEnabled", "Search is not enabled"),
    ],
)
async def test_refusals_surface_with_their_exact_code_and_message(
    double, db, code, code_name, errmsg
):
    await db.docs.insert_one({"_id": 1})
    double.refuse("$listSearchIndexes", code, code_name, errmsg)
    for _ in range(2):
        with pytest.raises(OperationFailure) as raised:
            await listed(db.docs)
        assert raised.value.code == code
        assert raised.value.details["codeName"] == code_name
        assert raised.value.details["errmsg"] == errmsg
        assert raised.value.details["ok"] == 0
    assert double.refused == [("$listSearchIndexes", code)] * 2
    double.allow()
    assert await listed(db.docs) == []


async def test_a_refusal_limited_in_number_then_normal_answers(double, db):
    collection = await indexed(double, db)
    double.refuse("$search", 31082, "SearchNotEnabled", "not now", times=1)
    with pytest.raises(OperationFailure):
        await aggregate(
            collection,
            [{"$search": {"index": "text", "text": {"query": "tea", "path": "content"}}}],
        )
    assert (
        len(
            await aggregate(
                collection,
                [{"$search": {"index": "text", "text": {"query": "tea", "path": "content"}}}],
            )
        )
        == 3
    )

    # HostUnreachable (mongot down) is retryable: pymongo asks once more by itself, so one
    # refusal costs the caller nothing but a round trip.
    before = len(double.answered)
    double.refuse("$vectorSearch", 6, "HostUnreachable", "Error connecting to mongot", times=1)
    assert len(await aggregate(collection, [vector_stage()])) == 4
    assert double.answered[before:] == ["$vectorSearch", "$vectorSearch"]
    assert double.refused[-1] == ("$vectorSearch", 6)

    # A refusal of a stage also hits it inside $rankFusion inputs.
    double.refuse("$vectorSearch", 6, "HostUnreachable", "Error connecting to mongot", times=2)
    with pytest.raises(OperationFailure) as raised:
        await aggregate(collection, fusion({}))
    assert raised.value.code == 6


# --- through the framework ------------------------------------------------------------------------


async def test_the_framework_finds_atlas_search_behind_the_double(double, through):
    async with await connect(through(search_tier="auto")) as conn:
        assert conn.tier == "atlas"
        assert conn.capabilities.atlas_search
        assert conn.capabilities.rank_fusion
        await conn.client.drop_database(conn.db.name)
    assert "$rankFusion" in double.answered


async def test_indexes_memories_store_and_retrieve_end_to_end(double, through):
    """``IndexManager.setup`` creates the catalog's search indexes and waits until the double
    lists them READY (one build step per listing); then a memory stored is found by
    ``retrieve`` through $vectorSearch and $search (fused by $rankFusion) once mongot has
    caught up, and not before."""
    double.auto_advance = True
    embedder = FakeEmbedder()
    async with await connect(through()) as conn:
        try:
            states = await IndexManager(conn, embedder.signature).setup(
                timeout=10, poll_interval=0.001
            )
            created = {
                (s.collection, s.name)
                for s in states
                if s.state == "created" and s.kind in ("search", "vectorSearch")
            }
            assert ("memories", "memories_vector") in created
            assert ("memories", "memories_text") in created
            assert set(double.index_states) == created
            assert set(double.index_states.values()) == {"READY"}
            definition = double.index("memories_vector").definition
            assert definition is not None
            assert definition["fields"][0]["numDimensions"] == embedder.dimensions

            memory = LongTermMemory(conn, embedder)
            before = len(double.answered)
            stored = await memory.store(ALICE, "Alice is allergic to peanuts")
            await memory.store(BOB, "Bob is allergic to cats")
            assert stored.action == "inserted"
            # Consolidation looked for close memories with $vectorSearch, once per store.
            assert double.answered[before:] == ["$vectorSearch", "$vectorSearch"]
            question = "what is she allergic to?"
            assert await memory.retrieve(ALICE, question) == []  # the lag
            await double.sync()
            before = len(double.answered)
            hits = await memory.retrieve(ALICE, question)
            assert double.answered[before:] == ["$rankFusion"]
            assert [hit.memory.id for hit in hits] == [stored.id]  # Bob's stays out
            assert set(hits[0].sources) == {"vector", "text"}
            # The vector source reads as a cosine again, from the normalised score.
            query = await embedder.embed_query(question)
            (document,) = await embedder.embed_documents(["Alice is allergic to peanuts"])
            assert hits[0].sources["vector"].score == pytest.approx(
                cosine(list(query), list(document)), abs=1e-5
            )
            await memory.aclose()
        finally:
            await conn.client.drop_database(conn.db.name)

"""The importance trail's helpers and how a memory reads it back, without a server."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from bson import Int64

from agent_memory.errors import InvalidInputError
from agent_memory.memory.long_term.records import Memory
from agent_memory.memory.long_term.trail import (
    TRAIL_FIELD,
    TRAIL_LENGTH,
    TRAIL_REASONS,
    TrailPoint,
    parse_trail,
    trail_append,
    trail_entry,
    trail_push,
    trail_start,
)

AT = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def document(**fields):
    return {
        "_id": "mem_1",
        "agent_id": "agent",
        "user_id": "alice",
        "content": "Alice likes tea",
        "importance": 0.5,
        "created_at": AT,
        **fields,
    }


def test_the_bound_and_the_reasons():
    assert TRAIL_FIELD == "importance_trail" and TRAIL_LENGTH == 24
    assert TRAIL_REASONS == ("stored", "reinforced", "decayed", "edited")


def test_a_new_memory_starts_with_its_stored_entry():
    assert trail_start(0.4, AT) == [{"at": AT, "importance": 0.4, "why": "stored"}]


def test_the_pipeline_expression_appends_one_entry_and_keeps_the_last_n():
    expression = {"$min": [1.0, {"$add": ["$importance", 0.05]}]}
    assert trail_append(expression, AT, "reinforced") == {
        "$slice": [
            {
                "$concatArrays": [
                    {"$cond": [{"$isArray": "$importance_trail"}, "$importance_trail", []]},
                    [{"at": AT, "importance": expression, "why": "reinforced"}],
                ]
            },
            -TRAIL_LENGTH,
        ]
    }
    assert trail_append(0.7, AT, "edited")["$slice"][0]["$concatArrays"][1] == [
        {"at": AT, "importance": 0.7, "why": "edited"}
    ]
    assert trail_append("$importance", AT, "edited")["$slice"][0]["$concatArrays"][1][0][
        "importance"
    ] == ("$importance")


def test_the_classic_push_appends_one_entry_and_keeps_the_last_n():
    assert trail_push(0.7, AT, "edited") == {
        "$each": [{"at": AT, "importance": 0.7, "why": "edited"}],
        "$slice": -TRAIL_LENGTH,
    }


@pytest.mark.parametrize(
    ("importance", "at", "why", "message"),
    [
        (0.5, AT, "guessed", "why must be one of"),
        (0.5, AT.replace(tzinfo=None), "edited", "timezone-aware"),
        (0.5, "2026-11-22", "edited", "timezone-aware"),
        (1.5, AT, "edited", "importance"),
        (math.nan, AT, "edited", "importance"),
        (True, AT, "edited", "importance"),
        ("importance", AT, "edited", "field path or an expression"),
    ],
)
def test_bad_entries_are_refused(importance, at, why, message):
    with pytest.raises(InvalidInputError, match=message):
        trail_append(importance, at, why)
    with pytest.raises(InvalidInputError, match=message):
        trail_entry(importance, at, why)


def test_the_classic_push_takes_numbers_only():
    with pytest.raises(InvalidInputError):
        trail_push("$importance", AT, "edited")  # a classic update evaluates no expression


def test_a_trail_reads_back_oldest_first():
    stored = [
        {"at": AT, "importance": 0.4, "why": "stored"},
        {"at": AT + timedelta(days=1), "importance": Int64(1), "why": "reinforced"},
    ]
    assert parse_trail(stored) == (
        TrailPoint(AT, 0.4, "stored"),
        TrailPoint(AT + timedelta(days=1), 1.0, "reinforced"),
    )
    assert isinstance(parse_trail(stored)[1].importance, float)


@pytest.mark.parametrize("stored", [None, "junk", {"at": AT}, 3, b"bytes"])
def test_no_trail_or_no_list_reads_as_an_empty_trail(stored):
    assert parse_trail(stored) == ()


def test_malformed_entries_are_skipped():
    good = {"at": AT, "importance": 0.5, "why": "decayed"}
    stored = [
        "junk",
        None,
        {"at": "2026-11-22", "importance": 0.5, "why": "decayed"},
        {"at": AT, "importance": "0.5", "why": "decayed"},
        {"at": AT, "importance": True, "why": "decayed"},
        {"at": AT, "importance": math.inf, "why": "decayed"},
        {"at": AT, "importance": 0.5, "why": "guessed"},
        {"at": AT, "importance": 0.5},
        good,
    ]
    assert parse_trail(stored) == (TrailPoint(AT, 0.5, "decayed"),)


def test_a_memory_exposes_its_trail_and_older_documents_have_none():
    memory = Memory.from_document(
        document(importance_trail=[{"at": AT, "importance": 0.5, "why": "stored"}, 7])
    )
    assert memory.importance_trail == (TrailPoint(AT, 0.5, "stored"),)
    assert Memory.from_document(document()).importance_trail == ()
    assert Memory.from_document(document(importance_trail="junk")).importance_trail == ()


def test_a_trail_point_is_frozen():
    point = TrailPoint(AT, 0.5, "stored")
    with pytest.raises(AttributeError):
        point.importance = 0.6  # type: ignore[misc]


def test_searches_leave_the_trail_out_on_every_tier():
    import numpy as np

    from agent_memory.mongo.catalog import IndexCatalog
    from agent_memory.mongo.search.atlas import (
        rank_fusion_pipeline,
        text_search_pipeline,
        vector_search_pipeline,
    )
    from agent_memory.mongo.search.types import SearchQuery

    catalog = IndexCatalog.load(dimensions=8)
    target = catalog.target("memories", snapshot=True, omit=(TRAIL_FIELD,))
    assert target.snapshot and target.unread == ("embedding", TRAIL_FIELD)
    assert catalog.target("memories").omit_paths == ()  # nothing left out unless asked
    query = SearchQuery(tenant={"agent_id": "a", "user_id": "u"}, text="tea", vector=np.ones(8))
    for build in (vector_search_pipeline, text_search_pipeline, rank_fusion_pipeline):
        pipeline = build(target, query)
        # The search stage first, as Atlas requires; $unset takes a list of fields.
        assert next(iter(pipeline[0])) in {"$vectorSearch", "$search", "$rankFusion"}
        assert pipeline[-1] == {"$unset": ["embedding", TRAIL_FIELD]}

"""The importance trail's update expressions, evaluated by the server the tests run on (the
embedded engine by default), against the result MongoDB documents for them: ``$concatArrays``
of the stored trail (``$cond``/``$isArray``: none or not an array starts a new one) and the
new entry, ``$slice`` with a negative count keeping the last ones; ``$push`` with ``$each``
and ``$slice`` for a classic update."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pymongo.errors import OperationFailure

from agent_memory.memory.long_term.trail import (
    TRAIL_FIELD,
    TRAIL_LENGTH,
    trail_append,
    trail_push,
)

AT = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
_ABSENT = object()


def entries(count):
    return [
        {"at": AT - timedelta(days=count - i), "importance": round(0.01 * i, 2), "why": "stored"}
        for i in range(count)
    ]


#: What a document may hold in its trail field: nothing, null, not an array, arrays around
#: the bound.
STORED = {
    "absent": _ABSENT,
    "null": None,
    "string": "junk",
    "object": {"at": AT},
    **{
        f"{n} entries": entries(n) for n in (0, 1, TRAIL_LENGTH - 1, TRAIL_LENGTH, TRAIL_LENGTH + 5)
    },
}


def expected(stored, entry):
    """The documented result of trail_append: the array (or nothing), the entry, the last N."""
    trail = stored if isinstance(stored, list) else []
    return [*trail, entry][-TRAIL_LENGTH:]


async def _insert(collection, stored):
    doc = {"_id": "m", "importance": 0.3}
    if stored is not _ABSENT:
        doc[TRAIL_FIELD] = stored
    await collection.insert_one(doc)


@pytest.mark.parametrize("case", list(STORED))
async def test_a_pipeline_update_appends_and_keeps_the_last_entries(connection, case):
    collection = connection.collection("trail_probe")
    stored = STORED[case]
    await _insert(collection, stored)
    new = {"$multiply": ["$importance", 2]}
    await collection.update_one(
        {"_id": "m"}, [{"$set": {"importance": new, TRAIL_FIELD: trail_append(new, AT, "edited")}}]
    )
    doc = await collection.find_one({"_id": "m"})
    # In one $set, "$importance" is the value before the update: both fields get 0.6.
    assert doc["importance"] == pytest.approx(0.6)
    assert doc[TRAIL_FIELD] == expected(stored, {"at": AT, "importance": 0.6, "why": "edited"})


async def test_update_many_and_aggregate_evaluate_it_alike(connection):
    collection = connection.collection("trail_probe")
    docs = [{"_id": case, "importance": 0.5, TRAIL_FIELD: STORED[case]} for case in STORED]
    docs[0].pop(TRAIL_FIELD)  # absent
    await collection.insert_many(docs)
    expression = trail_append("$importance", AT, "decayed")
    projected = await (
        await collection.aggregate([{"$project": {"trail": expression}}, {"$sort": {"_id": 1}}])
    ).to_list(None)
    await collection.update_many({}, [{"$set": {TRAIL_FIELD: expression}}])
    updated = await collection.find({}, sort=[("_id", 1)]).to_list(None)
    entry = {"at": AT, "importance": 0.5, "why": "decayed"}
    for row, doc in zip(projected, updated, strict=True):
        assert row["trail"] == doc[TRAIL_FIELD] == expected(STORED[doc["_id"]], entry)


@pytest.mark.parametrize("case", ["absent", "0 entries", "1 entries", f"{TRAIL_LENGTH} entries"])
async def test_a_classic_push_appends_and_keeps_the_last_entries(connection, case):
    collection = connection.collection("trail_probe")
    await _insert(collection, STORED[case])
    await collection.update_one(
        {"_id": "m"},
        {"$set": {"importance": 0.9}, "$push": {TRAIL_FIELD: trail_push(0.9, AT, "edited")}},
    )
    doc = await collection.find_one({"_id": "m"})
    assert doc[TRAIL_FIELD] == expected(
        STORED[case], {"at": AT, "importance": 0.9, "why": "edited"}
    )


async def test_a_classic_push_onto_something_else_than_an_array_is_refused(connection):
    collection = connection.collection("trail_probe")
    await _insert(collection, "junk")
    with pytest.raises(OperationFailure):
        await collection.update_one(
            {"_id": "m"}, {"$push": {TRAIL_FIELD: trail_push(0.9, AT, "edited")}}
        )

"""The export format's lines: every BSON type a stored document holds comes back as it was."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest
from bson import Decimal128, Int64, ObjectId, Regex
from bson.binary import Binary

from agent_memory.errors import InvalidInputError
from agent_memory.mongo.vectors import from_bson_vector, to_bson_vector
from agent_memory.ops.transfer.records import (
    KINDS,
    checked_document,
    encode_line,
    kind_named,
    read_line,
)


def round_trip(doc):
    return read_line(encode_line({"kind": "memories", "doc": doc}))["doc"]


def test_every_stored_type_comes_back_as_it_was():
    vector = np.linspace(-1, 1, 16, dtype=np.float32)
    doc = {
        "_id": ObjectId(),
        "text": 'naïve café ✓ 日本語 "quoted" \\ back\nslash',
        "when": datetime(2024, 2, 29, 23, 59, 59, 123000, tzinfo=UTC),
        "old": datetime(1901, 1, 1, tzinfo=UTC),
        "big": Int64(2**62),
        "small": -3,
        "ratio": 0.1,
        "decimal": Decimal128("1.10"),
        "blob": Binary(b"\x00\x01\xff", 0),
        "embedding": to_bson_vector(vector),
        "nested": {"list": [1, {"at": datetime(2025, 1, 1, tzinfo=UTC)}, None, True]},
        "pattern": Regex("^a", "i"),
    }
    back = round_trip(doc)
    # Binary of subtype 0 is read back as bytes, as pymongo reads it from the server: the
    # same BSON once stored.
    assert back.pop("blob") == b"\x00\x01\xff"
    assert back == {key: value for key, value in doc.items() if key != "blob"}
    assert np.array_equal(from_bson_vector(back["embedding"]), vector)
    assert isinstance(back["big"], int) and back["big"] == 2**62


def test_nan_and_infinity_are_written_as_extended_json_not_invalid_json():
    line = encode_line({"kind": "memories", "doc": {"_id": "m", "a": math.nan, "b": -math.inf}})
    assert "NaN" in line and '"$numberDouble"' in line
    back = read_line(line)["doc"]
    assert math.isnan(back["a"]) and back["b"] == -math.inf


@pytest.mark.parametrize("value", [None, [], "doc", 3, {1: "x"}])
def test_a_doc_that_is_not_a_document_is_refused_naming_the_line(value):
    with pytest.raises(InvalidInputError, match="line 7"):
        checked_document(value, 7)


def test_lines_that_are_not_extended_json_raise():
    for line in ('{"doc": {"$date": "not a date"}}', "{", '{"a": ' * 100_000 + "1"):
        with pytest.raises((ValueError, TypeError, RecursionError)):
            read_line(line)


def test_the_kinds_are_known_by_name_and_nothing_else_is():
    assert [kind.name for kind in KINDS][:2] == ["memories", "profiles"]
    assert kind_named("memories") is KINDS[0]
    for name in ("passwords", None, 3, ["memories"], "Memories"):
        assert kind_named(name) is None


def test_what_a_vector_is_made_from_follows_the_memory():
    memories = kind_named("memories")
    assert memories is not None and memories.text is not None
    doc = {"content": "Ada likes tea", "context": "said at lunch"}
    assert memories.text(doc, False) == "Ada likes tea"
    assert memories.text(doc, True) == "Ada likes tea\nsaid at lunch"
    assert memories.text({**doc, "status": "field"}, False) is None
    assert memories.text({**doc, "indexed": False}, False) is None
    assert memories.text({"content": "  "}, False) is None

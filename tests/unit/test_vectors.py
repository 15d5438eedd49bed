"""BSON binary vectors: compact, exact round trips, and loud failures on mixed dimensions."""

from __future__ import annotations

import numpy as np
import pytest
from bson import BSON
from bson.binary import Binary, BinaryVectorDtype

from agent_memory.errors import EmbeddingMismatchError, InvalidInputError
from agent_memory.mongo.vectors import from_bson_vector, stack_vectors, to_bson_vector


def test_round_trip_is_exact_and_compact():
    vector = np.random.default_rng(1).standard_normal(1024).astype(np.float32)
    stored = to_bson_vector(vector)
    assert stored.subtype == 9
    assert stored == Binary.from_vector(vector.tolist(), BinaryVectorDtype.FLOAT32)
    assert np.array_equal(from_bson_vector(stored), vector)
    as_binary = len(BSON.encode({"v": stored}))
    as_array = len(BSON.encode({"v": vector.tolist()}))
    assert as_binary < as_array / 2


def test_plain_arrays_and_int8_vectors_are_read_too():
    assert from_bson_vector([1.0, 2.0]).tolist() == [1.0, 2.0]
    int8 = Binary.from_vector([1, -2, 3], BinaryVectorDtype.INT8)
    assert from_bson_vector(int8).tolist() == [1.0, -2.0, 3.0]


@pytest.mark.parametrize("bad", [np.array([]), np.ones((2, 2)), np.array([np.inf, 1.0])])
def test_bad_vectors_are_rejected(bad):
    with pytest.raises(InvalidInputError):
        to_bson_vector(bad)


def test_mixed_dimensions_are_an_embedding_mismatch():
    with pytest.raises(EmbeddingMismatchError, match="3 dimensions"):
        stack_vectors([to_bson_vector(np.ones(4)), to_bson_vector(np.ones(3))], 4)

"""Vectors stored compactly as BSON binary vectors (subtype 9, float32), on every tier.

A 1024-dimension float32 vector takes 4 KiB as a binary vector against about 9 KiB as a BSON
array of doubles, and Atlas Vector Search indexes binary vectors directly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from bson.binary import Binary, BinaryVectorDtype

from agent_memory.errors import EmbeddingMismatchError, InvalidInputError

__all__ = ["from_bson_vector", "stack_vectors", "to_bson_vector"]

_FLOAT32_HEADER = BinaryVectorDtype.FLOAT32.value + b"\x00"  # dtype byte, then padding


def to_bson_vector(vector: np.ndarray) -> Binary:
    """A float32 BSON binary vector for a 1-d array."""
    array = np.asarray(vector, dtype=np.float32)
    if array.ndim != 1 or array.size == 0:
        raise InvalidInputError(f"a vector must be 1-dimensional and non-empty, got {array.shape}")
    if not np.isfinite(array).all():
        raise InvalidInputError("a vector contains NaN or infinity")
    # Same bytes as Binary.from_vector(list, FLOAT32), without the round trip through a list.
    return Binary(_FLOAT32_HEADER + array.astype("<f4").tobytes(), 9)


def from_bson_vector(value: Any) -> np.ndarray:
    """A float32 array from a stored vector (binary vector of any dtype, or a plain array)."""
    if isinstance(value, Binary) and value.subtype == 9:
        raw = bytes(value)
        if raw[:2] == _FLOAT32_HEADER:
            return np.frombuffer(raw, dtype="<f4", offset=2)
        return np.asarray(value.as_vector().data, dtype=np.float32)
    if isinstance(value, list | tuple):
        return np.asarray(value, dtype=np.float32)
    raise InvalidInputError(f"not a stored vector: {type(value).__name__}")


def stack_vectors(values: list[Any], dimensions: int) -> np.ndarray:
    """Stack stored vectors into a ``(n, dimensions)`` matrix, checking every dimension."""
    if not values:
        return np.zeros((0, dimensions), dtype=np.float32)
    rows = [from_bson_vector(value) for value in values]
    for row in rows:
        if row.shape != (dimensions,):
            raise EmbeddingMismatchError(
                f"a stored vector has {row.shape[0]} dimensions but the embedder produces "
                f"{dimensions}; run `agent-memory indexes status` to see what the data was "
                "embedded with"
            )
    return np.stack(rows)

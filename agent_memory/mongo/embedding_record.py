"""The record of which embedder the stored vectors were made with, and the check against it.

``agent-memory indexes setup`` records the embedder in the meta collection. Stores that write
or search vectors check the configured embedder against that record once per instance, so
vectors of two models are never mixed or compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_memory.errors import EmbeddingMismatchError
from agent_memory.mongo.connection import META_COLLECTION, Connection
from agent_memory.providers.embedders.base import EmbeddingSignature

__all__ = ["EMBEDDING_META_ID", "EmbedderGuard", "embedding_drift", "recorded_signature"]

EMBEDDING_META_ID = "embedding"


def recorded_signature(stored: Mapping[str, Any]) -> EmbeddingSignature:
    return EmbeddingSignature(
        stored.get("provider", "?"),
        stored.get("model", "?"),
        int(stored.get("dimensions", 0)),
        stored.get("similarity", "cosine"),
    )


def embedding_drift(stored: Mapping[str, Any] | None, signature: EmbeddingSignature) -> str:
    """Why vectors stored under ``stored`` do not fit ``signature`` ("" when they do, or when
    nothing is recorded yet)."""
    if stored is None:
        return ""
    recorded = recorded_signature(stored)
    prefix = f"data was embedded with {recorded.describe()}, the configured embedder is {signature.describe()}"
    if recorded.dimensions != signature.dimensions or recorded.similarity != signature.similarity:
        return f"{prefix}; configure the previous embedder, or re-embed into a new database"
    if recorded != signature:
        # Same shape, different model: nothing breaks loudly, but similarities are meaningless.
        return f"{prefix}; similarities across models are meaningless"
    return ""


class EmbedderGuard:
    """Checks once per instance that ``signature`` matches the recorded embedder."""

    def __init__(self, connection: Connection, signature: EmbeddingSignature) -> None:
        self._connection = connection
        self._signature = signature
        self._checked = False

    async def check(self) -> None:
        """Raise :class:`EmbeddingMismatchError` when the stored vectors were made differently."""
        if self._checked:
            return
        stored = await self._connection.collection(META_COLLECTION).find_one(
            {"_id": EMBEDDING_META_ID}
        )
        reason = embedding_drift(stored, self._signature)
        if reason:
            raise EmbeddingMismatchError(reason)
        self._checked = True

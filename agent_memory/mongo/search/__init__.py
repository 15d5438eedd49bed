"""Hybrid search (vector + keyword) on two tiers with one result type.

``make_searcher(connection, dimensions)`` picks the tier the connection chose: Atlas pipelines
where the server has Atlas Search, exact similarity and BM25 in the framework everywhere else.
On Atlas with vector indexes only (:mod:`.layout`), ``$vectorSearch`` ranks by similarity and
the framework's BM25 ranks the keywords.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.mongo.search.atlas import AtlasSearcher
from agent_memory.mongo.search.fusion import reciprocal_rank_fusion
from agent_memory.mongo.search.plain import PlainSearcher
from agent_memory.mongo.search.snapshots import GENERATIONS, Snapshots
from agent_memory.mongo.search.types import (
    MAX_CANDIDATES,
    Searcher,
    SearchHit,
    SearchQuery,
    SearchTarget,
    SourceScore,
)

if TYPE_CHECKING:
    from agent_memory.mongo.connection import Connection

__all__ = [
    "MAX_CANDIDATES",
    "AtlasSearcher",
    "PlainSearcher",
    "SearchHit",
    "SearchQuery",
    "SearchTarget",
    "Searcher",
    "SourceScore",
    "make_searcher",
    "reciprocal_rank_fusion",
]


def make_searcher(
    connection: Connection, *, dimensions: int, similarity: str = "cosine"
) -> Searcher:
    """The searcher for the tier ``connection`` uses. ``similarity`` is the embedder's (the
    vector indexes' on Atlas); either tier reports vector scores as cosines."""
    snapshots = Snapshots(
        connection.collection(GENERATIONS),
        dimensions=dimensions,
        reads=connection.token_reads,
        budget=connection.kept_budget,
    )
    if connection.tier == "atlas":
        # With vector indexes only (search/layout.py) the plain tier ranks the keywords; the
        # layout can change under a running process, so the keyword searcher is always there.
        return AtlasSearcher(
            connection.db,
            rank_fusion=connection.capabilities.rank_fusion,
            similarity=similarity,
            keywords=PlainSearcher(connection.db, dimensions=dimensions, snapshots=snapshots),
            layout=connection.layout_watch,
        )
    return PlainSearcher(connection.db, dimensions=dimensions, snapshots=snapshots)

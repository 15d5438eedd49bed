"""Reciprocal rank fusion, done in the framework when the server cannot do it."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from agent_memory.mongo.search.types import SourceScore

__all__ = ["RRF_K", "reciprocal_rank_fusion"]

#: The constant of reciprocal rank fusion; 60 is the value MongoDB's $rankFusion uses.
RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[tuple[Hashable, float]]],
    *,
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
) -> list[tuple[Hashable, float, dict[str, SourceScore]]]:
    """Fuse ranked lists of ``(id, raw score)``, best first, into one ranking.

    Each id scores ``sum(weight / (k + rank))`` over the sources that found it (rank counted
    from 1). Ties keep the order in which ids were first seen, so results are deterministic.
    """
    fused: dict[Hashable, float] = {}
    sources: dict[Hashable, dict[str, SourceScore]] = {}
    for name, ranking in rankings.items():
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        for rank, (doc_id, raw) in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + weight / (k + rank)
            sources.setdefault(doc_id, {})[name] = SourceScore(rank=rank, score=float(raw))
    order = sorted(fused, key=lambda doc_id: -fused[doc_id])
    return [(doc_id, fused[doc_id], sources[doc_id]) for doc_id in order]

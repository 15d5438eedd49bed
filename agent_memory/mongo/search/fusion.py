"""Fusing a vector and a keyword ranking into one.

Two ways, one per situation:

- :func:`score_fusion`, where the framework has every document's score from every source (the
  plain tier): each source's scores are standardised over the documents the query may return
  (mean 0, standard deviation 1) and added with the source weights. A source that separates
  nothing (no keyword matched, so every score is 0) adds nothing, and a document far above the
  rest in one source keeps that lead, which ranks cannot express.
- :func:`reciprocal_rank_fusion`, where only each source's top results are known (the Atlas tier
  without ``$rankFusion``, and ``$rankFusion`` itself): ``sum(weight / (k + rank))``.

The choice between them and the weights were made by cross-validation on LoCoMo and
datasets/dialogues, tuning on some conversations and scoring on the others (docs/benchmarks.md,
``bench fusion``); on the plain tier the keyword weight also follows each user's questions
(:mod:`.trust`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from agent_memory.mongo.search.types import SourceScore

__all__ = [
    "RRF_K",
    "SHRINK",
    "reciprocal_rank_fusion",
    "relevances",
    "score_fusion",
    "standardise",
]

#: The constant of reciprocal rank fusion; 60 is the value MongoDB's $rankFusion uses.
RRF_K = 60
#: z-scores of a handful of documents say little (of two documents, one is always +1 and the
#: other -1 however close they are): a fused score over ``n`` documents is shrunk toward 0 by
#: ``n / (n + SHRINK)``. The same factor for every document of a search, so it never changes
#: the order, only how near a near-tie looks to the memory score.
SHRINK = 5


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


def standardise(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``values`` as z-scores over the ``valid`` entries; invalid entries get the lowest
    valid z-score, and a source whose valid values are all equal gets 0 everywhere."""
    return _z_at(values, valid, np.arange(values.shape[0]), _scale(values, valid))


def _scale(values: np.ndarray, valid: np.ndarray) -> tuple[float, float, float] | None:
    """The mean, standard deviation and lowest value of the ``valid`` entries, or ``None``
    when they do not separate anything (none, or all equal)."""
    if not valid.any():
        return None
    chosen = values[valid].astype(np.float64)
    spread = float(chosen.std())
    if spread <= 1e-12:
        return None
    return float(chosen.mean()), spread, float(chosen.min())


def _z_at(
    values: np.ndarray,
    valid: np.ndarray,
    positions: np.ndarray,
    scale: tuple[float, float, float] | None,
) -> np.ndarray:
    """:func:`standardise`'s z-scores at ``positions`` alone, from :func:`_scale`'s figures:
    the same arithmetic on each value, so the same numbers, without computing them for
    every document (the lowest z-score is the lowest value's: the map is monotonic)."""
    if scale is None:
        return np.zeros(positions.shape, dtype=np.float64)
    mean, spread, lowest = scale
    z = (values[positions].astype(np.float64) - mean) / spread
    z[~valid[positions]] = (lowest - mean) / spread
    return z


def _top(positions: np.ndarray, values: np.ndarray, depth: int) -> np.ndarray:
    """The first ``depth`` of ``positions`` (ascending) by descending ``values`` (theirs, in
    the same order), ties in position order, without sorting them all."""
    if positions.size <= depth:
        return positions
    cut = positions.size - depth
    kth = np.partition(values, cut)[cut]  # the depth-th largest value
    above = positions[values > kth]
    return np.concatenate([above, positions[values == kth][: depth - above.size]])


def _ranks(chosen: np.ndarray, positions: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The rank (from 1, by descending value, ties in position order) among ``positions``
    (ascending, with ``values``) of each of ``chosen``, which are among them.

    Without sorting ``values``: only values at or above the lowest chosen one can rank above
    or beside a chosen one; each of those is placed among the few distinct chosen values (a
    binary search in at most ``len(chosen)``), and how many lie above each chosen value is a
    running sum of those places; ties are counted in one sort of the values equal to a chosen
    one."""
    at = np.searchsorted(positions, chosen)  # where each chosen one is among positions
    mine = values[at]
    if mine.size == 0:
        return np.zeros(0, dtype=np.int64)
    distinct = np.unique(mine)  # ascending
    high_at = np.flatnonzero(values >= distinct[0])
    high = values[high_at]
    below = np.searchsorted(distinct, high, side="left")  # how many of distinct lie below
    equal = distinct[np.minimum(below, distinct.size - 1)] == high
    # values above distinct[j]: those with more than j of distinct below them
    placed = np.bincount(below, minlength=distinct.size + 1)
    greater = placed[::-1].cumsum()[::-1][1:]
    index = np.searchsorted(distinct, mine)
    ranks = greater[index] + 1
    # Ties: those of the same value before it in position order count too. The values equal
    # to a chosen one, keyed by (which of distinct, place among positions) in one sort; each
    # chosen one counts the keys of its value below its own.
    keys = below[equal] * (values.size + 1) + high_at[equal]
    keys.sort()
    own = index * (values.size + 1)
    ranks += np.searchsorted(keys, own + at) - np.searchsorted(keys, own)
    return ranks


def score_fusion(
    scores: Mapping[str, np.ndarray],
    allowed: np.ndarray,
    *,
    weights: Mapping[str, float],
    depth: int,
    limit: int | None = None,
) -> list[tuple[int, float, dict[str, SourceScore]]]:
    """Fuse full score arrays (one per source, aligned with ``allowed``) into positions best
    first, with each position's fused score and its rank and raw score in every source that
    found it.

    Candidates are each source's top ``depth`` among the allowed documents (for ``"text"``,
    only documents that matched a term); their fused score is the weighted sum of the sources'
    z-scores (:func:`standardise`). Ties keep corpus order. ``limit``: only the first
    ``limit`` of them are returned (and only theirs ranked and described).

    The cost is a few passes over the arrays and binary searches among the few candidates;
    nothing sorts the documents, so a corpus ten times larger costs about ten times the
    array work and nothing more.
    """
    # Per source: which documents it found, their positions and their values.
    found_in: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    scaled: list[tuple[float, np.ndarray, np.ndarray, tuple[float, float, float] | None]] = []
    tops: list[np.ndarray] = []
    for name, values in scores.items():
        valid = allowed & np.isfinite(values)
        found = valid & (values > 0) if name == "text" else valid
        where = np.flatnonzero(found)
        present = values[where]
        found_in[name] = (found, where, present)
        tops.append(_top(where, present, depth))
        scaled.append((float(weights.get(name, 1.0)), values, valid, _scale(values, valid)))
    positions = np.unique(np.concatenate(tops)) if tops else np.zeros(0, dtype=np.int64)
    # The fused score of the candidates alone (the sum in the same order as over every
    # document, so the same numbers).
    fused = np.zeros(positions.shape, dtype=np.float64)
    for weight, values, valid, scale in scaled:
        fused += weight * _z_at(values, valid, positions, scale)
    allowed_count = int(allowed.sum())
    fused *= allowed_count / (allowed_count + SHRINK)
    order = np.lexsort((positions, -fused))[:limit]
    positions, fused = positions[order], fused[order]
    ranks: dict[str, dict[int, int]] = {}
    for name, (found, where, present) in found_in.items():
        chosen = positions[found[positions]]
        ranks[name] = dict(
            zip(chosen.tolist(), _ranks(chosen, where, present).tolist(), strict=True)
        )
    result = []
    for position, value in zip(positions.tolist(), fused.tolist(), strict=True):
        sources = {
            name: SourceScore(rank=ranks[name][position], score=float(scores[name][position]))
            for name in scores
            if position in ranks[name]
        }
        result.append((position, value, sources))
    return result


def relevances(fused: Sequence[float], *, scale: str = "z") -> list[float]:
    """Relevance from 0 to 1 for each hit of one search, from its fused search score, keeping
    the search's order, so that with equal recency, importance and feedback the memories rank
    exactly as the search ranked them.

    ``scale="z"`` (the plain tier: weighted z-scores, 0 = an average document of the tenant)
    maps through the logistic function: a hit a few standard deviations above the rest is near
    1, a near-tie stays a near-tie that feedback, importance or recency can decide.
    ``scale="rank"`` (the Atlas tier: reciprocal rank fusion, small positive numbers) takes the
    share of the best hit's score.
    """
    if scale == "rank":
        best = max(fused, default=0.0)
        if not best > 0:
            return [0.0 for _ in fused]
        return [max(0.0, min(1.0, value / best)) for value in fused]
    return [1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, value)))) for value in fused]

"""Measure an embedder's strong-match similarity for routing, on LoCoMo.

::

    python -m agent_memory.bench.routing --dataset ../shared/data/locomo10.json [--embedder local]

For every question with evidence, two similarities are taken: the best cosine between the
question and one of its evidence turns (a relevant match), and the best cosine between the
question and any turn of another conversation (the strongest irrelevant match a memory store
of someone else's life would offer). The threshold printed is the one that separates the two
best (largest true-positive minus false-positive rate); it is what an embedder's
``strong_match_similarity`` is set to.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from agent_memory.bench.embedders import load_locomo, make_embedder
from agent_memory.providers.embedders import Embedder

__all__ = ["Calibration", "calibrate", "main"]


@dataclass(frozen=True, slots=True)
class Calibration:
    embedder: str
    questions: int
    threshold: float
    true_positive_rate: float
    false_positive_rate: float
    relevant_percentiles: dict[str, float]
    irrelevant_percentiles: dict[str, float]


async def calibrate(embedder: Embedder, dataset: Path, *, limit: int | None = None) -> Calibration:
    conversations, _ = load_locomo(dataset, limit=limit)
    if len(conversations) < 2:
        raise ValueError("calibration needs at least two conversations")
    corpora = []
    for conversation in conversations:
        passages = await embedder.embed_documents([t.passage("turn") for t in conversation.turns])
        questions = [q for q in conversation.questions if q.evidence]
        queries = np.stack([await embedder.embed_query(q.text) for q in questions])
        corpora.append((questions, passages, queries))
    relevant: list[float] = []
    irrelevant: list[float] = []
    for index, (questions, passages, queries) in enumerate(corpora):
        scores = queries @ passages.T
        relevant += [float(scores[i, list(q.evidence)].max()) for i, q in enumerate(questions)]
        other = corpora[(index + 1) % len(corpora)][1]
        irrelevant += (queries @ other.T).max(axis=1).astype(float).tolist()
    rel, irr = np.asarray(relevant), np.asarray(irrelevant)
    candidates = np.round(np.arange(-1.0, 1.0, 0.01), 2)
    gains = np.array([(rel >= t).mean() - (irr >= t).mean() for t in candidates])
    plateau = np.flatnonzero(gains == gains.max())  # equally good thresholds: the middle one
    best = float(candidates[plateau[len(plateau) // 2]])
    points = (5, 10, 25, 50, 75, 90, 95)
    return Calibration(
        embedder=embedder.signature.describe(),
        questions=len(rel),
        threshold=best,
        true_positive_rate=round(float((rel >= best).mean()), 3),
        false_positive_rate=round(float((irr >= best).mean()), 3),
        relevant_percentiles={str(p): round(float(np.percentile(rel, p)), 3) for p in points},
        irrelevant_percentiles={str(p): round(float(np.percentile(irr, p)), 3) for p in points},
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent_memory.bench.routing")
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--limit", type=int, default=None, help="conversations to use")
    args = parser.parse_args(argv)
    if not args.dataset.is_file():
        print(f"error: no dataset at {args.dataset}", file=sys.stderr)
        return 2
    result = asyncio.run(calibrate(make_embedder(args.embedder), args.dataset, limit=args.limit))
    print(json.dumps(asdict(result), indent=2))
    print(
        f"strong_match_similarity = {result.threshold} "
        f"(evidence above it {result.true_positive_rate:.0%}, "
        f"another user's best match above it {result.false_positive_rate:.0%})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""LoCoMo turn-level evidence recall for embedders, BM25 and their rank fusion.

::

    python -m agent_memory.bench.embedders --dataset ../shared/data/locomo10.json \\
        [--embedders local,fake] [--out results.json] [--limit 3]

Each conversation is its own corpus: every turn is a passage (``"Speaker: text"``, or with the
session date in front for the ``turn+date`` variant) and every question a query. Recall@k is
the share of questions with at least one evidence turn in the top k (the usual definition);
all-evidence recall, the share of a question's evidence turns in the top k averaged over
questions, is reported too. Questions without evidence are skipped. The dataset is read in
place (it is CC BY-NC 4.0 and stays out of this repository).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from agent_memory.errors import DependencyMissingError, InvalidInputError, UnknownProviderError
from agent_memory.mongo.search.fusion import RRF_K
from agent_memory.providers.embedders import Embedder, FakeEmbedder

__all__ = [
    "CATEGORIES",
    "KS",
    "VARIANTS",
    "Conversation",
    "WrappedEmbedder",
    "load_locomo",
    "main",
    "run",
]

KS = (1, 5, 10, 25, 50)
VARIANTS = ("turn", "turn+date")
#: Category numbers as they appear in locomo10.json.
CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
    6: "changed-fact",
    7: "other-people",
}
EMBEDDER_CHOICES = ("local", "fake", "voyage", "voyage:<model>")

_SESSION = re.compile(r"session_(\d+)")
# A few evidence ids are malformed: "D:11:26", "D30:05", several ids in one string.
_DIA_ID = re.compile(r"D:?(\d+):0*(\d+)")


# --- the dataset -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    date: str

    def passage(self, variant: str) -> str:
        line = f"{self.speaker}: {self.text}"
        return line if variant == "turn" else f"[{self.date}] {line}"

    @property
    def when(self) -> datetime | None:
        """The session's date as a time (UTC), or ``None`` when it has none LoCoMo's way
        ("1:56 pm on 8 May, 2023")."""
        return session_time(self.date)


def session_time(date: str) -> datetime | None:
    """A LoCoMo session date ("1:56 pm on 8 May, 2023") as a UTC time; ``None`` for any
    other text."""
    try:
        return datetime.strptime(date.strip(), _SESSION_DATE).replace(tzinfo=UTC)
    except ValueError:
        return None


_SESSION_DATE = "%I:%M %p on %d %B, %Y"


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    category: int
    evidence: tuple[int, ...]  # indices into the conversation's turns
    #: Changed facts: the turns that stated an earlier value (the dialogue set's
    #: ``superseded``), which must rank below the evidence.
    stale: tuple[int, ...] = ()


@dataclass(slots=True)
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]


@dataclass(slots=True)
class LoadReport:
    questions: int = 0
    without_evidence: int = 0
    unresolvable: int = 0  # evidence given, but no id names a turn of the conversation
    unknown_ids: int = 0  # evidence ids dropped because no turn has them
    repaired_ids: int = 0  # ids that only matched after normalising ("D:11:26" -> "D11:26")


def _evidence_ids(raw: Iterable[object], report: LoadReport) -> list[str]:
    ids = []
    for item in raw:
        for piece in re.split(r"[;,\s]+", str(item).strip()):
            match = _DIA_ID.fullmatch(piece)
            if match is None:
                if piece:
                    report.unknown_ids += 1
                continue
            normalised = f"D{int(match[1])}:{int(match[2])}"
            report.repaired_ids += normalised != piece
            ids.append(normalised)
    return ids


def load_locomo(path: Path, *, limit: int | None = None) -> tuple[list[Conversation], LoadReport]:
    """Read ``locomo10.json`` into conversations whose questions point at turn indices.

    A file that is not JSON, or not shaped like LoCoMo (a list of samples, each with a
    ``conversation`` of ``session_N`` turn lists and a ``qa`` list), is an
    :class:`InvalidInputError` naming what is wrong."""
    try:
        samples = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"cannot read {path} as JSON: {exc}") from None
    if not isinstance(samples, list):
        raise InvalidInputError(f"{path} is not a LoCoMo dataset: expected a list of samples")
    try:
        return _parse_locomo(samples, limit)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidInputError(
            f"{path} is not a LoCoMo dataset: {type(exc).__name__} {exc}"
        ) from None


def _parse_locomo(samples: list[Any], limit: int | None) -> tuple[list[Conversation], LoadReport]:
    report = LoadReport()
    conversations = []
    for sample in samples[:limit]:
        conv = sample["conversation"]
        sessions = sorted(
            (int(m[1]), key) for key in conv if (m := _SESSION.fullmatch(key)) is not None
        )
        turns = [
            Turn(t["dia_id"], t["speaker"], t["text"], conv.get(f"{key}_date_time", ""))
            for _, key in sessions
            for t in conv[key]
        ]
        index = {turn.dia_id: i for i, turn in enumerate(turns)}
        questions = []
        for qa in sample["qa"]:
            report.questions += 1
            ids = _evidence_ids(qa.get("evidence") or [], report)
            if not ids:
                report.without_evidence += 1
                continue
            found = sorted({index[i] for i in ids if i in index})
            report.unknown_ids += sum(i not in index for i in ids)
            if not found:
                report.unresolvable += 1
                continue
            stale = sorted(
                {
                    index[i]
                    for i in _evidence_ids(qa.get("superseded") or [], LoadReport())
                    if i in index
                }
            )
            questions.append(
                Question(qa["question"], int(qa["category"]), tuple(found), tuple(stale))
            )
        conversations.append(Conversation(str(sample.get("sample_id", "")), turns, questions))
    return conversations, report


# --- scoring ---------------------------------------------------------------------------------


def ranks_of(scores: np.ndarray) -> np.ndarray:
    """1-based rank of every passage for every query (ties keep passage order)."""
    order = np.argsort(-scores, axis=1, kind="stable")
    ranks = np.empty_like(order)
    rows = np.arange(scores.shape[0])[:, None]
    ranks[rows, order] = np.arange(1, scores.shape[1] + 1)
    return ranks


def rrf_scores(*score_matrices: np.ndarray, k: int = RRF_K) -> np.ndarray:
    """Reciprocal rank fusion over full rankings, as ``mongo.search.fusion`` computes it."""
    return sum(1.0 / (k + ranks_of(scores)) for scores in score_matrices)  # type: ignore[return-value]


def bm25_scores(passages: Sequence[str], queries: Sequence[str]) -> np.ndarray:
    """Lucene-style BM25 (``bm25s``, k1=1.5, b=0.75, English stop words, no stemming)."""
    try:
        import bm25s
    except ImportError as exc:
        raise DependencyMissingError("bm25s", "bench") from exc

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build at DEBUG
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(list(passages), stopwords="en", show_progress=False), show_progress=False
    )
    tokens = bm25s.tokenize(list(queries), stopwords="en", return_ids=False, show_progress=False)
    return np.stack([retriever.get_scores(q) if q else np.zeros(len(passages)) for q in tokens])


@dataclass(slots=True)
class MethodResult:
    """Evidence ranks collected for one method and passage variant over all conversations."""

    method: str
    variant: str
    seconds: float = 0.0
    evidence_ranks: list[tuple[int, np.ndarray]] = field(default_factory=list)

    def add(self, conversation: Conversation, scores: np.ndarray, seconds: float) -> None:
        ranks = ranks_of(scores)
        for row, question in enumerate(conversation.questions):
            self.evidence_ranks.append((question.category, ranks[row, list(question.evidence)]))
        self.seconds += seconds

    def recall(self, category: int | None = None) -> dict[str, Any]:
        chosen = [r for c, r in self.evidence_ranks if category is None or c == category]
        if not chosen:
            return {"questions": 0, "any": {}, "all": {}}
        return {
            "questions": len(chosen),
            "any": {k: float(np.mean([r.min() <= k for r in chosen])) for k in KS},
            "all": {k: float(np.mean([(r <= k).mean() for r in chosen])) for k in KS},
        }

    def summary(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "variant": self.variant,
            "seconds": round(self.seconds, 2),
            "overall": self.recall(),
            "by_category": {
                CATEGORIES.get(c, str(c)): self.recall(c)
                for c in sorted({c for c, _ in self.evidence_ranks})
            },
        }


# --- running ---------------------------------------------------------------------------------


class WrappedEmbedder(Embedder):
    """An embedder that stands in for ``inner``: the same signature and limits, so what it
    returns counts as ``inner``'s vectors. Subclasses implement ``_embed``."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.provider = inner.provider  # type: ignore[misc]
        self.model = inner.model
        self.dimensions = inner.dimensions
        self.similarity = inner.similarity
        self.max_chars = inner.max_chars  # type: ignore[misc]
        self.strong_match_similarity = inner.strong_match_similarity  # type: ignore[misc]

    async def aclose(self) -> None:
        await self.inner.aclose()


def make_embedder(name: str) -> Embedder:
    if name == "local":
        from agent_memory.providers.embedders import LocalEmbedder

        return LocalEmbedder()
    if name == "fake":
        return FakeEmbedder()
    if name == "voyage" or name.startswith("voyage:"):
        from agent_memory.providers.embedders import VoyageEmbedder

        return VoyageEmbedder(name.partition(":")[2] or "voyage-3.5")
    raise UnknownProviderError("embedder", name, EMBEDDER_CHOICES)


async def _query_vectors(embedder: Embedder, questions: Sequence[Question]) -> np.ndarray:
    # One call per question: the path a memory search takes.
    return np.stack([await embedder.embed_query(q.text) for q in questions])


async def run(
    conversations: Sequence[Conversation], embedder_names: Sequence[str]
) -> list[MethodResult]:
    """Score BM25, each embedder and RRF(BM25 + embedder) under both passage variants.

    ``seconds`` covers embedding passages and queries (query time is counted in each variant),
    BM25 indexing and scoring, and for RRF both inputs plus the fusion.
    """
    embedders = {name: make_embedder(name) for name in embedder_names}
    results: dict[tuple[str, str], MethodResult] = {}

    def record(method: str, variant: str, conv: Conversation, scores: np.ndarray, s: float) -> None:
        results.setdefault((method, variant), MethodResult(method, variant)).add(conv, scores, s)

    try:
        for conv in conversations:
            if not conv.questions:
                continue
            queries = [q.text for q in conv.questions]
            lexical: dict[str, tuple[np.ndarray, float]] = {}
            for variant in VARIANTS:
                started = time.perf_counter()
                scores = bm25_scores([t.passage(variant) for t in conv.turns], queries)
                lexical[variant] = (scores, time.perf_counter() - started)
                record("bm25", variant, conv, *lexical[variant])
            for name, embedder in embedders.items():
                started = time.perf_counter()
                query_vectors = await _query_vectors(embedder, conv.questions)
                query_seconds = time.perf_counter() - started
                for variant in VARIANTS:
                    started = time.perf_counter()
                    passages = await embedder.embed_documents(
                        [t.passage(variant) for t in conv.turns]
                    )
                    dense = query_vectors @ passages.T
                    dense_seconds = time.perf_counter() - started + query_seconds
                    record(name, variant, conv, dense, dense_seconds)
                    started = time.perf_counter()
                    fused = rrf_scores(lexical[variant][0], dense)
                    fused_seconds = time.perf_counter() - started
                    record(
                        f"rrf(bm25+{name})",
                        variant,
                        conv,
                        fused,
                        lexical[variant][1] + dense_seconds + fused_seconds,
                    )
    finally:
        for embedder in embedders.values():
            await embedder.aclose()
    order = ["bm25", *embedder_names, *(f"rrf(bm25+{n})" for n in embedder_names)]
    return sorted(results.values(), key=lambda r: (order.index(r.method), r.variant))


# --- reporting -------------------------------------------------------------------------------


def _table(rows: Iterable[tuple[str, str, dict[int, float], str]], extra: str = "") -> list[str]:
    header = (
        "| method | passages | "
        + " | ".join(f"R@{k}" for k in KS)
        + (f" | {extra} |" if extra else " |")
    )
    lines = [header, "|" + "---|" * (len(KS) + 2 + bool(extra))]
    for method, variant, values, tail in rows:
        cells = " | ".join(f"{values[k]:.3f}" for k in KS)
        lines.append(f"| {method} | {variant} | {cells} |" + (f" {tail} |" if extra else ""))
    return lines


def render(results: Sequence[MethodResult], report: LoadReport, conversations: int) -> str:
    evaluated = report.questions - report.without_evidence - report.unresolvable
    lines = [
        "## LoCoMo turn-level evidence recall",
        "",
        f"{conversations} conversations; {evaluated} of {report.questions} questions evaluated "
        f"({report.without_evidence} without evidence, {report.unresolvable} whose evidence names "
        f"no turn; {report.repaired_ids} malformed ids repaired, {report.unknown_ids} dropped).",
        "Recall@k = share of questions with ANY evidence turn in the top k. Passages: "
        '`turn` = "Speaker: text", `turn+date` = "[session date] Speaker: text".',
        "",
    ]
    summaries = [(r, r.summary()) for r in results]
    rows = [(r.method, r.variant, s["overall"]["any"], f"{r.seconds:.1f}") for r, s in summaries]
    lines += _table(rows, extra="seconds")
    lines += ["", "All-evidence recall (share of a question's evidence turns in the top k):", ""]
    lines += _table((r.method, r.variant, s["overall"]["all"], "") for r, s in summaries)
    for number, name in CATEGORIES.items():
        picked = [(r, s["by_category"].get(name)) for r, s in summaries]
        picked = [(r, c) for r, c in picked if c and c["questions"]]
        if not picked:
            continue
        lines += ["", f"### category {number}: {name} ({picked[0][1]['questions']} questions)", ""]
        lines += _table((r.method, r.variant, c["any"], "") for r, c in picked)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agent_memory.bench.embedders", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--dataset", type=Path, required=True, help="path to locomo10.json")
    parser.add_argument(
        "--embedders",
        default="local",
        help=f"comma-separated, from: {', '.join(EMBEDDER_CHOICES)} (default: local)",
    )
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.embedders.split(",") if n.strip()]
    # One "embeddings_computed" line per question would bury the tables.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

    conversations, report = load_locomo(args.dataset, limit=args.limit)
    started = time.perf_counter()
    results = asyncio.run(run(conversations, names))
    total = time.perf_counter() - started
    print(render(results, report, len(conversations)))
    print(f"\nTotal {total:.1f} s.")
    if args.out:
        payload = {
            "dataset": str(args.dataset),
            "conversations": len(conversations),
            "questions": report.questions,
            "skipped_without_evidence": report.without_evidence,
            "skipped_unresolvable_evidence": report.unresolvable,
            "definitions": {
                "any": "share of questions with at least one evidence turn in the top k",
                "all": "share of a question's evidence turns in the top k, averaged",
                "categories": CATEGORIES,
                "rrf_k": RRF_K,
            },
            "total_seconds": round(total, 2),
            "results": [r.summary() for r in results],
        }
        args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

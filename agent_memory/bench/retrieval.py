"""Retrieval quality on LoCoMo through the framework's own write and read paths.

``agent-memory bench retrieval --dataset locomo10.json --out retrieval.json``

Every conversation is one user of one agent. Every turn is stored as a long-term memory with
``LongTermMemory.store_many`` (the write path: validation, one embedding call, consolidation,
the stored document with its vector), its content the turn as a memory of it would read,
``Speaker: text``, and its context the session's date and the turns around it (the context is
what the keyword ranking and the prompt read; the vector reads the content, as a memory formed
by the agent would have it). Every question with evidence is then asked with
``LongTermMemory.retrieve`` (the read path: the search tier's hybrid search, fused, re-ranked
by the memory score) and scored by evidence recall at k: the share of questions with at least
one evidence turn among the first k memories.

Baselines, computed in the same run with the same embedder and the very vectors the framework
stored and searched with (recorded as the embedder produced them, not recomputed): the plain
vector top-k a vector store gives (cosine over the same stored texts) and BM25 (``bm25s``) over
the same texts. The dataset is read in place, never copied.

Time, by default, is the dataset's: each turn is stored with its session's date as its event
time (``NewMemory.occurred_at``; a second a turn keeps their order within a session), and
every question is asked a day after the conversation's last session, without recording the
access (each question sees the memories as ingested, whatever was asked before it). With
``dated=False`` (``--at-once``) everything is stored at one moment and asked as of just
before it, so recency is 1 for every memory: the mode of earlier runs, for comparison. A
conversation with a turn whose date cannot be read is stored at once (``undated`` counts
them).

Questions about a changed fact (the dialogue set's ``superseded`` turns) also count how
often a turn with the earlier value ranks above every turn with the current one, and how
often it is the first result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agent_memory._log import get_logger
from agent_memory.bench import write_with_plot
from agent_memory.bench.embedders import (
    CATEGORIES,
    KS,
    Conversation,
    LoadReport,
    Question,
    Turn,
    WrappedEmbedder,
    bm25_scores,
    load_locomo,
    ranks_of,
)
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import NewMemory
from agent_memory.mongo.connection import Connection
from agent_memory.providers.embedders.base import Embedder
from agent_memory.tenancy import Tenant

__all__ = ["AGENT_ID", "RecordingEmbedder", "RetrievalRun", "render", "run_retrieval"]

logger = get_logger(__name__)

AGENT_ID = "bench-retrieval"
#: A rank beyond every k: the evidence was not retrieved at all.
_MISSED = 10**6


class RecordingEmbedder(WrappedEmbedder):
    """Wraps an embedder and keeps the vectors it produced, so baselines use exactly what the
    framework stored and searched with."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.documents: dict[str, np.ndarray] = {}
        self.queries: dict[str, np.ndarray] = {}

    async def _embed(self, texts: list[str], *, kind: Literal["document", "query"]) -> np.ndarray:
        vectors = await self.inner._embed(texts, kind=kind)
        store = self.documents if kind == "document" else self.queries
        for text, vector in zip(texts, vectors, strict=True):
            norm = float(np.linalg.norm(vector)) or 1.0
            store[text] = np.asarray(vector, dtype=np.float32) / norm
        return vectors


def memory_text(conversation: Conversation, index: int) -> str:
    """What was said, by whom: ``Speaker: text``. The session's date is not part of it: a
    memory's text is what a search compares with a question, and a date in front of every
    memory makes all of them alike to the embedder (on datasets/dialogues the plain vector's
    R@10 was 0.668 with the date in the text and 0.748 without); it goes into the context."""
    turn = conversation.turns[index]
    return f"{turn.speaker}: {turn.text}".strip()


def neighbour_context(conversation: Conversation, index: int, *, chars: int = 900) -> str | None:
    """When it was said (``[session date]``) and the turns before and after ``index`` in the
    same session, as a memory formed from a conversation carries them (``NewMemory.context``)."""
    turn = conversation.turns[index]
    lines = [f"[{turn.date}]"] if turn.date else []
    for other in (index - 1, index + 1):
        if 0 <= other < len(conversation.turns) and conversation.turns[other].date == turn.date:
            near = conversation.turns[other]
            lines.append(f"{near.speaker}: {near.text}".strip()[:chars])
    return "\n".join(lines) or None


@dataclass(slots=True)
class Ranks:
    """Evidence ranks (1-based; _MISSED when not retrieved) per question, with categories
    and the conversation each question belongs to."""

    rows: list[tuple[int, np.ndarray]] = field(default_factory=list)
    conversations: list[str] = field(default_factory=list)
    #: Per question about a changed fact: the best rank of its evidence (the current value)
    #: and of the turns with the earlier value.
    changed: list[tuple[str, int, int]] = field(default_factory=list)

    def add(
        self, sample_id: str, category: int, ranks: np.ndarray, stale: np.ndarray | None = None
    ) -> None:
        self.rows.append((category, ranks))
        self.conversations.append(sample_id)
        if stale is not None and stale.size:
            self.changed.append((sample_id, int(ranks.min()), int(stale.min())))

    def of(self, sample_id: str) -> Ranks:
        chosen = [i for i, name in enumerate(self.conversations) if name == sample_id]
        return Ranks(
            [self.rows[i] for i in chosen],
            [sample_id] * len(chosen),
            [row for row in self.changed if row[0] == sample_id],
        )

    def stale(self) -> dict[str, int]:
        """Of the questions about a changed fact: how many rank an earlier value above every
        turn with the current one (among the first ``max(KS)``, or at all), and how many
        return it first."""
        return {
            "questions": len(self.changed),
            "stale_above_current": sum(
                old < current for _, current, old in self.changed if old != _MISSED
            ),
            "stale_first": sum(old == 1 for _, _, old in self.changed),
        }

    def recall(self, category: int | None = None) -> dict[str, float]:
        chosen = [r for c, r in self.rows if category is None or c == category]
        return {str(k): round(float(np.mean([r.min() <= k for r in chosen])), 4) for k in KS}

    def by_category(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for category in sorted({c for c, _ in self.rows}):
            count = sum(1 for c, _ in self.rows if c == category)
            out[CATEGORIES.get(category, str(category))] = {
                "questions": count,
                "recall": self.recall(category),
            }
        return out


@dataclass(slots=True)
class RetrievalRun:
    dataset: str
    embedder: str
    tier: str
    report: LoadReport
    context: bool = True
    embed_context: bool = False
    #: Stored at their sessions' dates and asked after the last (False: all at one moment).
    dated: bool = True
    #: Conversations stored at one moment although ``dated``: a turn's date was unreadable.
    undated: int = 0
    framework: Ranks = field(default_factory=Ranks)
    vector: Ranks = field(default_factory=Ranks)
    vector_content: Ranks = field(default_factory=Ranks)
    bm25: Ranks = field(default_factory=Ranks)
    sample_ids: list[str] = field(default_factory=list)
    ingest_seconds: float = 0.0
    query_seconds: float = 0.0
    seconds: float = 0.0
    conversations: int = 0

    def baselines(self) -> dict[str, Ranks]:
        return {"vector": self.vector, "vector_content": self.vector_content, "bm25": self.bm25}

    def per_conversation(self) -> list[dict[str, Any]]:
        out = []
        for sample_id in self.sample_ids:
            mine = self.framework.of(sample_id)
            baselines = {
                name: {"recall": ranks.of(sample_id).recall()}
                for name, ranks in self.baselines().items()
            }
            recall = mine.recall()
            below = sorted(
                f"{name} R@{k}"
                for name, found in baselines.items()
                for k in ("5", "10")
                if recall[k] < found["recall"][k]
            )
            out.append(
                {
                    "sample_id": sample_id,
                    "questions": len(mine.rows),
                    "recall": recall,
                    "baselines": baselines,
                    "below_baseline": below,
                    # Its questions about a changed fact (by language, for a mixed set).
                    "changed_facts": mine.stale(),
                }
            )
        return out

    def as_json(self) -> dict[str, Any]:
        questions = len(self.framework.rows)
        return {
            "dataset": self.dataset,
            "questions": questions,
            "conversations": self.conversations,
            "recall": self.framework.recall(),
            "per_category": self.framework.by_category(),
            "baselines": {
                name: {"recall": ranks.recall(), "per_category": ranks.by_category()}
                for name, ranks in self.baselines().items()
            },
            "baseline_texts": {
                "vector": "cosine over vectors of the memory's content and context",
                "vector_content": "cosine over vectors of the memory's content alone",
                "bm25": "bm25s (k1 1.5, b 0.75, English stop words, no stemming) over the "
                "memory's content and context",
            },
            "changed_facts": {
                "agent_memory": self.framework.stale(),
                **{name: ranks.stale() for name, ranks in self.baselines().items()},
            },
            "per_conversation": self.per_conversation(),
            "time": (
                "each turn stored at its session's date, each question asked a day after the "
                "last session without recording accesses"
                if self.dated
                else "everything stored at one moment and asked as of just before it"
            ),
            "undated_conversations": self.undated,
            "embedder": self.embedder,
            "tier": self.tier,
            "memory_context": (
                "neighbouring turns (keyword ranking; the vector reads "
                + ("content and context" if self.embed_context else "the content alone")
                + ")"
                if self.context
                else "none"
            ),
            "seconds": round(self.seconds, 1),
            "ingest_seconds": round(self.ingest_seconds, 1),
            "query_seconds": round(self.query_seconds, 1),
            "ms_per_query": round(1000 * self.query_seconds / questions, 1) if questions else None,
            "skipped_questions_without_evidence": self.report.without_evidence,
        }


async def run_retrieval(
    connection: Connection,
    embedder: Embedder,
    dataset: Path,
    *,
    limit: int | None = None,
    context: bool = True,
    one_user: bool = False,
    dated: bool = True,
    progress: Callable[[str], None] | None = None,
) -> RetrievalRun:
    """Ingest and ask every conversation of ``dataset``; the memories stored for the run are
    erased again afterwards (also when it fails). With ``context`` every memory carries its
    neighbouring turns of the same session as ``NewMemory.context``. With ``one_user`` the
    conversations are one user's history, stored and asked in order (a long-time user); the
    per-conversation table still shows each conversation's questions. ``dated``: each turn
    stored at its session's date and the questions asked after the last (the module's
    docstring); False, everything at one moment."""
    started = time.perf_counter()
    conversations, report = load_locomo(dataset, limit=limit)
    labels: list[str] | None = None
    if one_user and conversations:
        labels = [c.sample_id for c in conversations for _ in c.questions]
        conversations = [merge_conversations(conversations)]
    recorder = RecordingEmbedder(embedder)
    memory = LongTermMemory(connection, recorder)
    result = RetrievalRun(
        str(dataset),
        embedder.signature.describe(),
        connection.tier,
        report,
        context=context,
        embed_context=memory.config.embed_context,
        dated=dated,
    )
    try:
        for number, conversation in enumerate(conversations, start=1):
            tenant = Tenant(AGENT_ID, _user_id(conversation.sample_id, number))
            await memory.forget_user(tenant)
            try:
                await _one(memory, recorder, tenant, conversation, result, context, labels)
            finally:
                await memory.drain()
                await memory.forget_user(tenant)
            result.conversations += 1
            if progress is not None:
                progress(
                    f"conversation {number}/{len(conversations)}: {len(conversation.turns)} turns, "
                    f"{len(conversation.questions)} questions, recall@10 so far "
                    f"{result.framework.recall()['10']:.3f} (ingest {result.ingest_seconds:.0f} s, "
                    f"queries {result.query_seconds:.0f} s in total)"
                )
    finally:
        await memory.aclose()
    result.seconds = time.perf_counter() - started
    return result


def merge_conversations(conversations: list[Conversation]) -> Conversation:
    """One conversation of all of ``conversations``, in order: their turns one after the
    other and their questions with evidence pointing at the merged turns."""
    turns: list[Turn] = []
    questions: list[Question] = []
    for conversation in conversations:
        offset = len(turns)
        turns.extend(conversation.turns)
        questions.extend(
            Question(
                q.text,
                q.category,
                tuple(offset + e for e in q.evidence),
                tuple(offset + e for e in q.stale),
            )
            for q in conversation.questions
        )
    return Conversation(f"one-user-{len(conversations)}", turns, questions)


def said_times(conversation: Conversation) -> list[datetime] | None:
    """When each turn was said: its session's date, a second more for each turn before it
    (their order within the session); ``None`` when a turn's date cannot be read."""
    times = []
    for index, turn in enumerate(conversation.turns):
        when = turn.when
        if when is None:
            return None
        times.append(when + timedelta(seconds=index))
    return times


def _user_id(sample_id: str, number: int) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in sample_id)[:60]
    return cleaned or f"conversation-{number}"


async def _one(
    memory: LongTermMemory,
    recorder: RecordingEmbedder,
    tenant: Tenant,
    conversation: Conversation,
    result: RetrievalRun,
    with_context: bool,
    labels: list[str] | None = None,
) -> None:
    """One conversation stored for ``tenant`` and its questions asked; ``labels`` names the
    conversation each question counts for (by default this one)."""
    texts = [memory_text(conversation, i) for i in range(len(conversation.turns))]
    times = said_times(conversation) if result.dated else None
    if result.dated and times is None:
        result.undated += 1
    items = [
        NewMemory(
            text,
            "fact",
            source={"turn": i},
            context=neighbour_context(conversation, i) if with_context else None,
            occurred_at=None if times is None else times[i],
        )
        for i, text in enumerate(texts)
    ]
    if times is not None:
        # A day after the last session, each question as if it were the first: no access
        # is recorded, so what earlier questions returned does not become more recent.
        asked_at, record_access = max(times) + timedelta(days=1), False
    else:
        # Everything at one moment, asked as of the moment before ingest: every memory's
        # recency is exactly 1, so access statistics written by earlier questions cannot
        # favour the memories they returned.
        asked_at, record_access = datetime.now(UTC), True
    t0 = time.perf_counter()
    stored = await memory.store_many(tenant, items)
    result.ingest_seconds += time.perf_counter() - t0
    # Consolidation keeps one memory for turns with the same text ("assistant: Got it."), so
    # a memory stands for every turn it was stored for: each of them is found where it is.
    turns_of: dict[str, list[int]] = {}
    for i, item in enumerate(stored):
        turns_of.setdefault(item.id, []).append(i)

    t0 = time.perf_counter()
    framework_rows = []
    for question in conversation.questions:
        hits = await memory.retrieve(
            tenant, question.text, k=max(KS), now=asked_at, record_access=record_access
        )
        position = {
            turn: rank for rank, h in enumerate(hits, 1) for turn in turns_of.get(h.memory.id, ())
        }
        framework_rows.append(
            tuple(
                np.array([position.get(t, _MISSED) for t in turns], dtype=np.int64)
                for turns in (question.evidence, question.stale)
            )
        )
    result.query_seconds += time.perf_counter() - t0
    names = labels or [conversation.sample_id] * len(conversation.questions)
    result.sample_ids.extend(dict.fromkeys(names))
    for name, question, (ranks, stale) in zip(
        names, conversation.questions, framework_rows, strict=True
    ):
        result.framework.add(name, question.category, ranks, stale)

    # Baselines over the same memories: vectors of their content and context (and of their
    # content alone), and BM25 over content and context, with the same embedder.
    indexed = [item.checked(memory.config).index_text for item in items]
    queries = np.stack([recorder.queries[q.text] for q in conversation.questions])
    for ranks_table, scores in (
        (result.vector, queries @ (await _vectors(recorder, indexed)).T),
        (result.vector_content, queries @ (await _vectors(recorder, texts)).T),
        (result.bm25, bm25_scores(indexed, [q.text for q in conversation.questions])),
    ):
        ranks = ranks_of(scores)
        for row, question in enumerate(conversation.questions):
            ranks_table.add(
                names[row],
                question.category,
                ranks[row, list(question.evidence)],
                ranks[row, list(question.stale)],
            )


async def _vectors(recorder: RecordingEmbedder, texts: list[str]) -> np.ndarray:
    """Unit vectors of ``texts``: those the framework stored, the rest embedded now."""
    missing = [text for text in dict.fromkeys(texts) if text not in recorder.documents]
    if missing:
        await recorder.embed_documents(missing)
    return np.stack([recorder.documents[text] for text in texts])


_NAMES = {
    "vector": "plain vector top-k (content + context)",
    "vector_content": "plain vector top-k (content)",
    "bm25": "BM25, bm25s (content + context)",
}


def render(run: RetrievalRun) -> str:
    """Markdown tables of recall@k: the framework and the baselines, overall, per category
    and per conversation (marking any conversation where the framework is below a baseline
    at R@5 or R@10)."""
    data = run.as_json()
    head = "| method | " + " | ".join(f"R@{k}" for k in KS) + " |"
    rule = "|---|" + "---|" * len(KS)
    rows = [("agent_memory retrieve", data["recall"])] + [
        (_NAMES[name], found["recall"]) for name, found in data["baselines"].items()
    ]
    lines = [
        f"LoCoMo-format evidence recall, {data['questions']} questions in "
        f"{data['conversations']} conversations ({Path(data['dataset']).name}); embedder "
        f"{data['embedder']}; search tier {data['tier']}; memory context: "
        f"{data['memory_context']}; time: {data['time']}; {data['seconds']} s "
        f"({data['ms_per_query']} ms per retrieve).",
        "",
        head,
        rule,
        *(f"| {name} | " + " | ".join(f"{r[str(k)]:.3f}" for k in KS) + " |" for name, r in rows),
        "",
        "| category | questions | " + " | ".join(f"R@{k}" for k in KS) + " |",
        "|---|---|" + "---|" * len(KS),
        *(
            f"| {name} | {cat['questions']} | "
            + " | ".join(f"{cat['recall'][str(k)]:.3f}" for k in KS)
            + " |"
            for name, cat in data["per_category"].items()
        ),
        *_changed_table(data["changed_facts"]),
        "",
        "| conversation | questions | R@5 | R@10 | vector R@5 / R@10 | vector (content) R@5 / "
        "R@10 | BM25 R@5 / R@10 | below a baseline |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for entry in data["per_conversation"]:
        found = entry["baselines"]
        pairs = [
            f"{found[name]['recall']['5']:.3f} / {found[name]['recall']['10']:.3f}"
            for name in ("vector", "vector_content", "bm25")
        ]
        lines.append(
            f"| {entry['sample_id']} | {entry['questions']} | {entry['recall']['5']:.3f} | "
            f"{entry['recall']['10']:.3f} | {' | '.join(pairs)} | "
            f"{'**' + ', '.join(entry['below_baseline']) + '**' if entry['below_baseline'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def _changed_table(changed: dict[str, dict[str, int]]) -> list[str]:
    """Questions about a changed fact: how often an earlier value outranks the current one."""
    if not changed["agent_memory"]["questions"]:
        return []
    rows = [("agent_memory retrieve", changed["agent_memory"])] + [
        (_NAMES[name], found) for name, found in changed.items() if name != "agent_memory"
    ]
    return [
        "",
        "| changed facts | questions | an earlier value above the current one | an earlier "
        "value first |",
        "|---|---|---|---|",
        *(
            f"| {name} | {found['questions']} | {found['stale_above_current']} | "
            f"{found['stale_first']} |"
            for name, found in rows
        ),
    ]


def plot(run: RetrievalRun, path: Path) -> None:
    """Recall against k for the framework and the baselines, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = run.as_json()
    figure, axes = plt.subplots(figsize=(6, 4), dpi=120)
    for name, recall in (
        ("agent_memory retrieve", data["recall"]),
        *((_NAMES[name], found["recall"]) for name, found in data["baselines"].items()),
    ):
        axes.plot(KS, [recall[str(k)] for k in KS], marker="o", label=name)
    axes.set_xscale("log")
    axes.set_xticks(KS, [str(k) for k in KS])
    axes.set_ylim(0, 1)
    axes.set_xlabel("k (memories retrieved)")
    axes.set_ylabel("evidence recall@k")
    axes.set_title(f"LoCoMo, {data['questions']} questions, {data['embedder'].split(' ')[0]}")
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def write_outputs(run: RetrievalRun, out: Path, *, commit: str | None = None) -> tuple[Path, Path]:
    """The JSON result at ``out``, the markdown table and the PNG plot beside it; ``commit``,
    the code measured, is recorded in both when known."""
    data = run.as_json() if commit is None else {**run.as_json(), "commit": commit}
    table = render(run) if commit is None else f"Commit {commit}.\n\n{render(run)}"
    return write_with_plot(out, data, table, lambda image: plot(run, image))

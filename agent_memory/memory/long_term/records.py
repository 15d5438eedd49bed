"""The shapes of long-term memories: what a caller stores, what is stored, what comes back."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from agent_memory.checks import (
    check_event_time,
    check_id,
    check_importance,
    check_int,
    check_mapping,
    check_number,
    check_text,
    is_number,
    shown,
)
from agent_memory.errors import InvalidInputError
from agent_memory.memory.long_term.fields import FIELDS_TAG, MAX_FIELD_TEXTS
from agent_memory.memory.long_term.ranking import RankingWeights, ScoreBreakdown
from agent_memory.memory.long_term.trail import TRAIL_FIELD, TrailPoint, parse_trail
from agent_memory.mongo.search import SourceScore
from agent_memory.mongo.search.trust import KeywordTrust

__all__ = [
    "MEMORY_TYPES",
    "LongTermConfig",
    "Memory",
    "NewMemory",
    "RetrievedMemory",
    "StoreResult",
]

MEMORY_TYPES = ("fact", "preference", "instruction", "learned")
# Chosen by leave-one-conversation-out cross-validation over LoCoMo and datasets/dialogues
# (agent-memory bench fusion; docs/benchmarks.md): 23 of 25 folds chose these for the plain
# tier, with the keyword trust's defaults (KeywordTrust: 0.35 to 0.55, prior 0.3 counted as
# three questions, read one standard error below the mean); for the Atlas tier (simulated)
# 15 of 25 chose vector 0.3, the other 10 vector 0.7.
SEARCH_VECTOR_WEIGHT = 0.3
SEARCH_TEXT_WEIGHT = 0.7
SEARCH_COVERAGE_POWER = 1.0
RANK_VECTOR_WEIGHT = 0.3
RANK_TEXT_WEIGHT = 0.7
MemoryType = Literal["fact", "preference", "instruction", "learned"]
#: The stored memories a new one is compared with (its nearest, of the same type), and
#: among which a memory that announces a change finds the older ones it likely updates.
NEIGHBOURS = 3
#: The most older memories one memory is read to update (it links to at most its
#: :data:`NEIGHBOURS` nearest; a hand-written list is read this far).
MAX_UPDATES = 8


@dataclass(frozen=True, slots=True)
class LongTermConfig:
    """Tunables of long-term memory; the defaults follow the blueprint's best practices."""

    default_importance: float = 0.5
    max_content_chars: int = 8_000
    max_tags: int = 32
    ranking: RankingWeights = field(default_factory=RankingWeights)
    #: How much each search source counts in the fused relevance on the plain tier (weights
    #: of z-scores); chosen by cross-validation, see docs/benchmarks.md (``bench fusion``).
    search_weights: Mapping[str, float] = field(
        default_factory=lambda: {"vector": SEARCH_VECTOR_WEIGHT, "text": SEARCH_TEXT_WEIGHT}
    )
    #: Plain tier: the keyword weight is scaled by how much of the query its best match covers,
    #: to this power (0 turns it off); chosen with the weights.
    coverage_power: float = SEARCH_COVERAGE_POWER
    #: Plain tier: how the keyword weight follows each user's own questions (a running mean
    #: of their coverage, read below the mean until the questions agree; see
    #: agent_memory/mongo/search/trust.py). None: the same weights for every user.
    keyword_trust: KeywordTrust | None = field(default_factory=KeywordTrust)
    #: The same for the Atlas tier, whose ``$rankFusion`` (or the framework's reciprocal rank
    #: fusion where the server has none) weighs ranks, not scores.
    rank_fusion_weights: Mapping[str, float] = field(
        default_factory=lambda: {"vector": RANK_VECTOR_WEIGHT, "text": RANK_TEXT_WEIGHT}
    )
    #: Whether a memory's vector is computed from its content and its context (the turns
    #: around it) or from its content alone; the keyword ranking reads both either way.
    #: Chosen by cross-validation: context in the vector lowered recall on paraphrased
    #: questions far more than it raised it elsewhere (docs/benchmarks.md).
    embed_context: bool = False
    #: With a reranker: how many of the search's best candidates it scores again.
    rerank_candidates: int = 30
    #: Search this many times ``k`` candidates, then re-rank them with the full score.
    overfetch: int = 4
    #: ... but never fewer than this many: scores are scaled over the candidates, so with a
    #: pool that does not change with ``k``, a smaller ``k`` gives the head of a larger one
    #: (for ``k`` up to ``min_candidates // overfetch``).
    min_candidates: int = 64
    #: Cosine similarity from which a new memory without a key counts as a repeat.
    repeat_similarity: float = 0.98
    #: Cosine similarity from which a judge model (if any) is asked whether two memories agree.
    judge_similarity: float = 0.85
    #: How much a repeat raises importance (capped at 1).
    reinforce_step: float = 0.05
    #: Atlas tier: a new memory is also compared with the memories stored this many seconds
    #: before it, read from the collection, because ``$vectorSearch``'s index catches up with
    #: writes asynchronously (0 turns it off). The plain tier always searches what is stored.
    recent_writes_s: float = 300.0
    #: A memory that announces a change ("I've moved to Lisbon"; memory/long_term/change.py)
    #: is stored with the older memories among its nearest that it likely updates
    #: (``Memory.updates``).
    #: A question about the present (one that neither asks when nor names a span of time)
    #: ranks it just above the highest of those ranked above it, when it is itself among the
    #: first ``update_window`` candidates; the older one is then marked ``updated_by`` it.
    #: 0 turns the move off. Chosen by leaving conversations out (``bench fusion``,
    #: docs/benchmarks.md), with ``update_links`` and the recency of ``ranking``.
    update_window: int = 20
    #: How many of the memories a change likely updates it is moved above: the nearest
    #: ``update_links`` of those stored with it (1 to 3; up to three are stored).
    update_links: int = 2

    def __post_init__(self) -> None:
        for name in ("search_weights", "rank_fusion_weights"):
            _check_weights(name, getattr(self, name))
        check_number(self.coverage_power, "coverage_power", minimum=0, maximum=8)
        if self.keyword_trust is not None and not isinstance(self.keyword_trust, KeywordTrust):
            raise InvalidInputError("keyword_trust must be a KeywordTrust or None")
        check_number(self.recent_writes_s, "recent_writes_s", minimum=0, maximum=86_400)
        for name in ("overfetch", "min_candidates", "rerank_candidates"):
            check_int(getattr(self, name), name, minimum=1)
        check_int(self.update_window, "update_window", minimum=0, maximum=10_000)
        check_int(self.update_links, "update_links", minimum=1, maximum=NEIGHBOURS)


def _check_weights(name: str, weights: object) -> None:
    if (
        not isinstance(weights, Mapping)
        or not weights
        or set(weights) - {"vector", "text"}
        or not all(is_number(w) and math.isfinite(w) and w >= 0 for w in weights.values())
        or not any(w > 0 for w in weights.values())
    ):
        raise InvalidInputError(
            f"{name} maps 'vector' and 'text' to non-negative numbers, one above 0"
        )


def check_content(content: object, config: LongTermConfig) -> str:
    """A memory's content: text within ``config.max_content_chars``, not blank, stripped."""
    return check_text(content, "content", max_chars=config.max_content_chars).strip()


def check_tags(tags: object, config: LongTermConfig) -> tuple[str, ...]:
    """A memory's tags: a list of ids, at most ``config.max_tags``, repeats dropped."""
    if isinstance(tags, str) or not isinstance(tags, Sequence):
        raise InvalidInputError("tags must be a list of strings")
    if len(tags) > config.max_tags:
        raise InvalidInputError(f"at most {config.max_tags} tags")
    return tuple(dict.fromkeys(check_id(tag, "tag") for tag in tags))


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A memory to store. ``key`` names a single-valued slot ("home", "seat_preference"):
    a new memory with the key of an active one either repeats it or supersedes it."""

    content: str
    memory_type: str = "fact"
    importance: float | None = None
    tags: Sequence[str] = ()
    key: str | None = None
    source: Mapping[str, Any] | None = None
    expires_at: datetime | None = None
    #: Text around the memory (the conversation turns it came from): searched with it, by
    #: vector and by keyword, so it is found by what surrounded it; never shown as content.
    #: Such a memory repeats a stored one only when their contents are the same text.
    context: str | None = None
    schema: str | None = None
    #: False: stored without a vector, so no search finds it; it is read by key or id (a
    #: LangGraph item put with ``index=False``).
    indexed: bool = True
    #: Texts embedded one vector each, for a search by the memory's best field
    #: (:mod:`.fields`; a LangGraph item with several index fields); needs a ``key``. Two or
    #: more replace the field vectors of the key; ``()`` removes them; ``None`` leaves them.
    field_texts: Sequence[str] | None = None
    #: When what it says was said or happened (its event time), if not now: a history
    #: imported or formed late keeps its dates. Ranking's recency, the order of a key's values
    #: (the later statement wins, an earlier one is history) and decay read it; ``created_at``
    #: stays the time it was stored. Timezone-aware, not in the future.
    occurred_at: datetime | None = None

    @property
    def index_text(self) -> str:
        """The content, then its context: what the keyword ranking reads (and the vector, with
        ``LongTermConfig.embed_context``)."""
        return self.content if not self.context else f"{self.content}\n{self.context}"

    def vector_text(self, config: LongTermConfig) -> str:
        """What the memory's vector is computed from."""
        return self.index_text if config.embed_context else self.content

    def checked(self, config: LongTermConfig) -> NewMemory:
        """This memory with every field validated (raises :class:`InvalidInputError`)."""
        content = check_content(self.content, config)
        if self.memory_type not in MEMORY_TYPES:
            raise InvalidInputError(
                f"memory_type must be one of {', '.join(MEMORY_TYPES)}, got {shown(self.memory_type)}"
            )
        importance = (
            config.default_importance
            if self.importance is None
            else check_importance(self.importance)
        )
        tags = check_tags(self.tags, config)
        key = None if self.key is None else check_id(self.key, "key")
        source = None if self.source is None else check_mapping(self.source, "source")
        if self.expires_at is not None and (
            not isinstance(self.expires_at, datetime) or self.expires_at.tzinfo is None
        ):
            raise InvalidInputError("expires_at must be a timezone-aware datetime")
        context = (
            None if self.context is None else check_text(self.context, "context", max_chars=2_000)
        )
        schema = None if self.schema is None else check_id(self.schema, "schema")
        if not isinstance(self.indexed, bool):
            raise InvalidInputError(f"indexed must be a bool, got {type(self.indexed).__name__}")
        field_texts = self._checked_fields(config, key)
        if field_texts and len(field_texts) >= 2:
            tags = (*(tag for tag in tags if tag != FIELDS_TAG), FIELDS_TAG)
        occurred_at = (
            None if self.occurred_at is None else check_event_time(self.occurred_at, "occurred_at")
        )
        return NewMemory(
            content,
            self.memory_type,
            importance,
            tags,
            key,
            source,
            self.expires_at,
            context,
            schema,
            self.indexed,
            field_texts,
            occurred_at,
        )

    def _checked_fields(self, config: LongTermConfig, key: str | None) -> tuple[str, ...] | None:
        if self.field_texts is None:
            return None
        if isinstance(self.field_texts, str | bytes) or not isinstance(self.field_texts, Sequence):
            raise InvalidInputError("field_texts must be a list of texts or None")
        if len(self.field_texts) > MAX_FIELD_TEXTS:
            raise InvalidInputError(f"at most {MAX_FIELD_TEXTS} field texts per memory")
        if key is None:
            raise InvalidInputError("field_texts need a key (the field vectors are the key's)")
        texts = tuple(
            check_text(text, "field text", max_chars=config.max_content_chars)
            for text in self.field_texts
        )
        if texts and not self.indexed:
            raise InvalidInputError("a memory stored without a vector has no field vectors")
        return texts


@dataclass(frozen=True, slots=True)
class Memory:
    """A stored long-term memory as read back."""

    id: str
    agent_id: str
    user_id: str
    memory_type: str
    content: str
    importance: float
    tags: tuple[str, ...]
    key: str | None
    status: Literal["active", "superseded"]
    created_at: datetime
    valid_from: datetime
    valid_to: datetime | None
    supersedes: tuple[str, ...]
    superseded_by: str | None
    last_accessed: datetime | None
    access_count: int
    reinforced: int
    feedback_count: int
    feedback_sum: float
    source: dict[str, Any] | None
    expires_at: datetime | None
    context: str | None
    schema: str | None
    #: False for a memory stored without a vector (no search finds it).
    indexed: bool = True
    #: How its importance changed, oldest first, the last ``TRAIL_LENGTH`` (24) changes
    #: (``memory/long_term/trail.py``). Empty for a memory stored before trails were kept, and
    #: for memories returned by a search (``retrieve``, ``similar``), which never read it:
    #: ``get``, ``list_memories``, ``history``, ``current`` and ``browse`` carry it.
    importance_trail: tuple[TrailPoint, ...] = ()
    #: When what it says was said or happened (``NewMemory.occurred_at``); its
    #: ``created_at`` for a memory stored without one.
    occurred_at: datetime | None = None
    #: For a memory that announces a change, the older memories it likely updates (the
    #: older among its nearest when it was stored; ``LongTermConfig.update_window``).
    updates: tuple[str, ...] = ()

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Memory:
        feedback = doc.get("feedback") or {}
        return cls(
            id=doc["_id"],
            agent_id=doc["agent_id"],
            user_id=doc["user_id"],
            memory_type=doc.get("memory_type", "fact"),
            content=doc.get("content", ""),
            importance=float(doc.get("importance", 0.0)),
            tags=tuple(doc.get("tags") or ()),
            key=doc.get("key"),
            status=doc.get("status", "active"),
            created_at=doc["created_at"],
            valid_from=doc.get("valid_from") or doc["created_at"],
            valid_to=doc.get("valid_to"),
            supersedes=tuple(doc.get("supersedes") or ()),
            superseded_by=doc.get("superseded_by"),
            last_accessed=doc.get("last_accessed"),
            access_count=int(doc.get("access_count", 0)),
            reinforced=int(doc.get("reinforced", 0)),
            feedback_count=int(feedback.get("count", 0)),
            feedback_sum=float(feedback.get("sum", 0.0)),
            source=doc.get("source"),
            expires_at=doc.get("expires_at"),
            context=doc.get("context"),
            schema=doc.get("schema"),
            indexed=doc.get("indexed", True) is not False,
            importance_trail=parse_trail(doc.get(TRAIL_FIELD)),
            occurred_at=doc.get("occurred_at") or doc["created_at"],
            updates=updates_of(doc),
        )


def updates_of(document: Mapping[str, Any]) -> tuple[str, ...]:
    """The ids a stored memory likely updates (none for a value of another shape)."""
    found = document.get("updates")
    if not isinstance(found, list):
        return ()
    return tuple(item for item in found[:MAX_UPDATES] if isinstance(item, str))


@dataclass(frozen=True, slots=True)
class StoreResult:
    """What storing did: ``inserted`` a new memory, ``reinforced`` an existing one (``id`` is
    the existing memory), inserted one that ``superseded`` the memories listed, or inserted
    one already ``outdated``: history, superseded by the active memory of its key that was
    said after it (``superseded`` lists that one)."""

    id: str
    action: Literal["inserted", "reinforced", "superseded", "outdated"]
    superseded: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RetrievedMemory:
    """A memory found by :meth:`LongTermMemory.retrieve`, with why it ranked where it did."""

    memory: Memory
    score: float
    breakdown: ScoreBreakdown
    sources: Mapping[str, SourceScore]
    #: The id of a memory ranked above this one that likely updates it (history: the newer
    #: statement about the same thing; ``LongTermConfig.update_window``), else None.
    updated_by: str | None = None

    def explain(self, weights: RankingWeights | None = None) -> str:
        ranks = ", ".join(f"{name} #{source.rank}" for name, source in sorted(self.sources.items()))
        history = f" (updated by {self.updated_by})" if self.updated_by else ""
        return f"{self.breakdown.explain(weights or RankingWeights())} [{ranks}]{history}"

"""Hierarchical routing (seed 002): recent context, then memory, then knowledge, then the model.

Recall runs every source in parallel first (so routing adds no round trip); routing then decides
which sources the prompt leans on, in the seed's order:

1. recent context, when the recent window already covers the question;
2. long-term memory, when a memory is a strong match (and no chunk is a better one), or
   memories were found and the question points to the past;
3. the knowledge base, when a document chunk is a strong match;
   then memory again when memories were found and the question is about the user ("my",
   "I", "我"): "Can I return shoes after 40 days?" is about the user yet answered by the
   refund policy, so a strong chunk outranks the pronoun;
4. the model's own knowledge, when nothing stored is relevant.

Strong matches are judged on the vector source's similarity (cosine), which unlike fused scores
is comparable between queries. What counts as strong depends on the embedder (e5 models score
unrelated sentences above 0.75), so the thresholds default to the embedder's measured
``strong_match_similarity`` (``python -m agent_memory.bench.routing``) and to 0.5 for an
embedder that was never measured. The decision and its reasons are recorded with the turn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["GENERIC_STRONG_MATCH", "Route", "RoutingConfig", "RoutingInput", "route"]

Level = Literal["recent", "memory", "knowledge", "model"]

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    "a an and are as at be but by can could did do does for from had has have how i if in is it "
    "its me my of on or our so that the their them then there they this to was we were what when "
    "where which who why will with would you your".split()
)
# Questions about the past need memory even when the window looks related.
_PAST = re.compile(
    r"\b(before|earlier|last time|previously|remember|used to|again|ago|yesterday)\b|"
    r"(之前|以前|上次|记得|刚才)",
    re.IGNORECASE,
)


GENERIC_STRONG_MATCH = 0.5

# Questions about the user themselves are what memory is for.
_PERSONAL = re.compile(r"\b(i|i'm|i've|me|my|mine|myself)\b|我", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class RoutingConfig:
    #: Cosine similarity from which a memory or a chunk counts as a strong match; None takes
    #: the embedder's measured value (see :meth:`for_embedder`).
    memory_similarity: float | None = None
    knowledge_similarity: float | None = None
    #: Share of the question's content words found in the recent window to answer from it.
    recent_overlap: float = 0.6

    def for_embedder(self, strong_match: float | None) -> RoutingConfig:
        """These settings with unset thresholds filled from an embedder's measured value."""
        default = GENERIC_STRONG_MATCH if strong_match is None else strong_match
        return RoutingConfig(
            default if self.memory_similarity is None else self.memory_similarity,
            default if self.knowledge_similarity is None else self.knowledge_similarity,
            self.recent_overlap,
        )


@dataclass(frozen=True, slots=True)
class RoutingInput:
    query: str
    recent_texts: Sequence[str] = ()
    memory_similarities: Sequence[float] = ()
    knowledge_similarities: Sequence[float] = ()


@dataclass(frozen=True, slots=True)
class Route:
    """Where the answer should come from, with the levels to include in order of weight."""

    level: Level
    levels: tuple[Level, ...]
    reasons: tuple[str, ...] = field(default=())


def _content_words(text: str) -> set[str]:
    words = set()
    for word in _WORD.findall(text.lower()):
        if any("\u3400" <= ch <= "\u9fff" for ch in word):
            words.update(ch for ch in word if "\u3400" <= ch <= "\u9fff")
        elif word not in _STOP and len(word) > 1:
            words.add(word)
    return words


def route(data: RoutingInput, config: RoutingConfig | None = None) -> Route:
    """Choose the level that answers ``data.query`` and the levels worth including."""
    config = (config or RoutingConfig()).for_embedder(None)
    reasons: list[str] = []
    query_words = _content_words(data.query)
    recent_words = (
        set().union(*(_content_words(t) for t in data.recent_texts)) if data.recent_texts else set()
    )
    overlap = len(query_words & recent_words) / len(query_words) if query_words else 0.0
    asks_past = bool(_PAST.search(data.query))
    personal = bool(_PERSONAL.search(data.query))
    best_memory = max(data.memory_similarities, default=0.0)
    best_knowledge = max(data.knowledge_similarities, default=0.0)

    assert config.memory_similarity is not None and config.knowledge_similarity is not None
    strong_memory = best_memory >= config.memory_similarity
    strong_knowledge = best_knowledge >= config.knowledge_similarity
    levels: list[Level] = []
    if data.recent_texts:
        levels.append("recent")
    if strong_memory or asks_past or (personal and data.memory_similarities):
        levels.append("memory")
    if strong_knowledge:
        levels.append("knowledge")

    if overlap >= config.recent_overlap and not asks_past:
        level: Level = "recent"
        reasons.append(f"recent window covers {overlap:.0%} of the question's words")
    elif (strong_memory and not (strong_knowledge and best_knowledge > best_memory)) or (
        asks_past and data.memory_similarities
    ):
        level = "memory"
        reasons.append(
            f"best memory similarity {best_memory:.2f}"
            + (" (a strong match)" if strong_memory else "")
            + (" and the question refers to the past" if asks_past else "")
        )
    elif strong_knowledge:
        level = "knowledge"
        reasons.append(
            f"best knowledge similarity {best_knowledge:.2f}"
            + (f", above the best memory's {best_memory:.2f}" if data.memory_similarities else "")
        )
    elif personal and data.memory_similarities:
        level = "memory"
        reasons.append(
            f"best memory similarity {best_memory:.2f} and the question is about the user"
        )
    else:
        level = "model"
        reasons.append(
            f"nothing stored is a strong match (memory {best_memory:.2f}, knowledge {best_knowledge:.2f})"
        )
    if level not in levels:
        levels.insert(0, level)
    else:
        levels.remove(level)
        levels.insert(0, level)
    return Route(level, tuple(levels), tuple(reasons))

"""The knowledge base: documents cut into chunks, searched by meaning, per user or shared.

- ``base.py``: :class:`KnowledgeBase` and :class:`SharedKnowledge`.
- ``chunking.py``: how a document is cut into overlapping chunks.
"""

from agent_memory.memory.knowledge.base import (
    SHARED_USER,
    IngestReport,
    KnowledgeBase,
    KnowledgeConfig,
    KnowledgeHit,
    SharedKnowledge,
    SourceInfo,
)

__all__ = [
    "IngestReport",
    "KnowledgeBase",
    "KnowledgeConfig",
    "KnowledgeHit",
    "SHARED_USER",
    "SharedKnowledge",
    "SourceInfo",
]

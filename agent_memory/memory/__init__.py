"""The four memories: conversation, long-term (with profiles and decay), working, episodic;
and the knowledge base.

Each store takes the shared :class:`~agent_memory.mongo.connection.Connection` and the
providers it needs; none opens a connection of its own. :class:`MemorySystem` builds all of
them over one connection and forgets a user across every one.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = [
    "ConversationMemory",
    "DecayConfig",
    "DecayJob",
    "EpisodicMemory",
    "KnowledgeBase",
    "LongTermConfig",
    "LongTermMemory",
    "Memory",
    "MemorySchema",
    "MemorySystem",
    "NewMemory",
    "PatchOp",
    "ProfileMemory",
    "RankingWeights",
    "RetrievedMemory",
    "StoreResult",
    "Tenant",
    "WorkingMemory",
]

_WHERE = {
    "ConversationMemory": "conversation",
    "DecayConfig": "decay",
    "DecayJob": "decay",
    "EpisodicMemory": "episodic",
    "KnowledgeBase": "knowledge",
    "LongTermConfig": "records",
    "LongTermMemory": "long_term",
    "Memory": "records",
    "MemorySchema": "profile",
    "MemorySystem": "system",
    "NewMemory": "records",
    "PatchOp": "profile",
    "ProfileMemory": "profile",
    "RankingWeights": "ranking",
    "RetrievedMemory": "records",
    "StoreResult": "records",
    "Tenant": "_common",
    "WorkingMemory": "working",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_memory.memory' has no attribute {name!r}")
    value = getattr(import_module(f"agent_memory.memory.{module}"), name)
    globals()[name] = value
    return value

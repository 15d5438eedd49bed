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
    "ConversationMemory": "agent_memory.memory.conversation",
    "DecayConfig": "agent_memory.memory.long_term",
    "DecayJob": "agent_memory.memory.long_term",
    "EpisodicMemory": "agent_memory.memory.episodic",
    "KnowledgeBase": "agent_memory.memory.knowledge",
    "LongTermConfig": "agent_memory.memory.long_term",
    "LongTermMemory": "agent_memory.memory.long_term",
    "Memory": "agent_memory.memory.long_term",
    "MemorySchema": "agent_memory.memory.long_term",
    "MemorySystem": "agent_memory.memory.system",
    "NewMemory": "agent_memory.memory.long_term",
    "PatchOp": "agent_memory.memory.long_term",
    "ProfileMemory": "agent_memory.memory.long_term",
    "RankingWeights": "agent_memory.memory.long_term",
    "RetrievedMemory": "agent_memory.memory.long_term",
    "StoreResult": "agent_memory.memory.long_term",
    "Tenant": "agent_memory.tenancy",
    "WorkingMemory": "agent_memory.memory.working",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_memory.memory' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value

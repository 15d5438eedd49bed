"""The four memories: conversation, long-term (with profiles and decay), working, episodic;
and the knowledge base.

Each store takes the shared :class:`~agent_memory.mongo.connection.Connection` and the
providers it needs; none opens a connection of its own. :class:`MemorySystem` builds all of
them over one connection and forgets a user across every one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory._lazy import lazy_names

if TYPE_CHECKING:
    from agent_memory.memory.conversation import ConversationMemory
    from agent_memory.memory.episodic import EpisodicMemory
    from agent_memory.memory.knowledge import KnowledgeBase
    from agent_memory.memory.long_term import (
        DecayConfig,
        DecayJob,
        LongTermConfig,
        LongTermMemory,
        Memory,
        MemorySchema,
        NewMemory,
        PatchOp,
        ProfileMemory,
        RankingWeights,
        RetrievedMemory,
        StoreResult,
    )
    from agent_memory.memory.system import MemorySystem
    from agent_memory.memory.working import WorkingMemory
    from agent_memory.tenancy import Tenant

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

__getattr__, __dir__ = lazy_names(__name__, __all__)

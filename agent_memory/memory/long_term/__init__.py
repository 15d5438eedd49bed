"""Long-term memory: facts and preferences found again by meaning, ranked, decayed with disuse.

- ``memory.py``: :class:`LongTermMemory`, the store's API (store, retrieve, update, forget).
- ``records.py``: the stored shapes and the store's configuration.
- ``ranking.py``: how similarity, importance, recency and feedback combine into one score.
- ``access.py``: access statistics, written in the background after a retrieve.
- ``consolidation.py``: whether a new memory adds, updates or repeats an old one.
- ``decay.py``: the scheduled job that lowers the importance of memories not used.
- ``profile.py``: :class:`ProfileMemory`, one structured document per user and schema.
- ``trail.py``: each memory's importance trail (its last changes of importance, bounded).
"""

from agent_memory.memory.long_term.decay import DecayConfig, DecayJob, DecayReport
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.profile import MemorySchema, PatchOp, Profile, ProfileMemory
from agent_memory.memory.long_term.ranking import RankingWeights
from agent_memory.memory.long_term.records import (
    LongTermConfig,
    Memory,
    NewMemory,
    RetrievedMemory,
    StoreResult,
)
from agent_memory.memory.long_term.trail import (
    TRAIL_FIELD,
    TRAIL_LENGTH,
    TrailPoint,
    trail_append,
    trail_push,
)

__all__ = [
    "DecayConfig",
    "DecayJob",
    "DecayReport",
    "LongTermConfig",
    "LongTermMemory",
    "Memory",
    "MemorySchema",
    "NewMemory",
    "PatchOp",
    "Profile",
    "ProfileMemory",
    "RankingWeights",
    "RetrievedMemory",
    "StoreResult",
    "TRAIL_FIELD",
    "TRAIL_LENGTH",
    "TrailPoint",
    "trail_append",
    "trail_push",
]

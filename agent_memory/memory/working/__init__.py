"""Working memory: a task's plan, its steps and checkpoints, resumable after a crash.

- ``memory.py``: :class:`WorkingMemory`, the store's API.
- ``records.py``: the stored shapes (task, step, checkpoint, snapshot).
- ``tasks.py``: statuses and their transitions, plan parsing, the checks on a change.
- ``store.py``: the two collections and the guarded writes to them.
"""

from agent_memory.memory.working.memory import (
    STEP_TRANSITIONS,
    TASK_TRANSITIONS,
    InvalidTransitionError,
    WorkingMemory,
)
from agent_memory.memory.working.records import Checkpoint, Resumed, Snapshot, Step, Task
from agent_memory.memory.working.tasks import WorkingConfig

__all__ = [
    "Checkpoint",
    "InvalidTransitionError",
    "Resumed",
    "STEP_TRANSITIONS",
    "Snapshot",
    "Step",
    "TASK_TRANSITIONS",
    "Task",
    "WorkingConfig",
    "WorkingMemory",
]

"""Operations: the scheduled maintenance run and its lock, erasing a user, counting data.

- :class:`Maintenance` (:mod:`~agent_memory.ops.maintenance`): decay and retention under one
  lease, for cron, Kubernetes CronJobs or an app's own scheduler (``agent-memory decay``).
- :class:`Lease` (:mod:`~agent_memory.ops.lease`): a named lease in the ``locks`` collection.
- :func:`forget_user` (:mod:`~agent_memory.ops.forget`): a user erased from the memories, the
  formation queue and the LangGraph checkpointer (``agent-memory forget``); :func:`held`
  counts what it would erase.
- :func:`collect_stats` (:mod:`~agent_memory.ops.stats`): counts per kind and tenant
  (``agent-memory stats``).
- :func:`export_memories`, :func:`import_memories`, :func:`migrate_memories`
  (:mod:`~agent_memory.ops.transfer`): memories moved to a file, from a file, or from one
  database to another (``agent-memory export | import | migrate``).
"""

from __future__ import annotations

from agent_memory.ops.forget import Held, agents_of, forget_user, held
from agent_memory.ops.lease import Lease, LeaseHeldError, LeaseLostError, LeaseState
from agent_memory.ops.maintenance import Maintenance, MaintenanceReport
from agent_memory.ops.stats import Stats, collect_stats
from agent_memory.ops.transfer import (
    ExportReport,
    ExportScope,
    ImportReport,
    MigrationPlan,
    export_memories,
    import_memories,
    migrate_memories,
)

__all__ = [
    "ExportReport",
    "ExportScope",
    "Held",
    "ImportReport",
    "Lease",
    "LeaseHeldError",
    "LeaseLostError",
    "LeaseState",
    "Maintenance",
    "MaintenanceReport",
    "MigrationPlan",
    "Stats",
    "agents_of",
    "collect_stats",
    "export_memories",
    "forget_user",
    "held",
    "import_memories",
    "migrate_memories",
]

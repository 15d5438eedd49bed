"""Moving memory: export, import and migrate (``agent-memory export | import | migrate``).

- :func:`export_memories` (:mod:`.export`): an agent's or a user's memories of every kind to
  JSON Lines (:mod:`.records` describes the format), in constant memory.
- :func:`import_memories` (:mod:`.load`): such a file into any target, checked whole before
  anything is written, idempotent, re-embedded when the target's embedder differs, verified.
- :func:`migrate_memories` (:mod:`.migrate`): one database straight into another, with a dry
  run that says what would move and how long embedding would take.
"""

from __future__ import annotations

from agent_memory.ops.transfer.export import (
    ExportReport,
    ExportScope,
    export_lines,
    export_memories,
)
from agent_memory.ops.transfer.load import ImportReport, import_memories, read_export
from agent_memory.ops.transfer.migrate import MigrationPlan, migrate_memories
from agent_memory.ops.transfer.records import FORMAT, KINDS, VERSION

__all__ = [
    "FORMAT",
    "KINDS",
    "VERSION",
    "ExportReport",
    "ImportReport",
    "MigrationPlan",
    "ExportScope",
    "export_lines",
    "export_memories",
    "import_memories",
    "migrate_memories",
    "read_export",
]

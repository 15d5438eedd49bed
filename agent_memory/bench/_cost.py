"""What a unit of work costs the server: the commands it sends and the CPU each process spends.

A closed-loop benchmark (users who wait for their answer before they think and ask again)
runs the server flat out, so its latency says how long the queue was, not what a turn costs.
These figures do not depend on how saturated the run was:

- :class:`CommandTally`, a pymongo command listener: every command sent on a connection, by
  command and collection, with the documents the server returned and the time until its
  reply arrived (which, on a busy server, includes waiting for it);
- :func:`cpu_seconds`: the CPU time a process has used (user and system, all its threads),
  so that the server's and the framework's CPU per turn can be read off two samples.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from pymongo import monitoring

__all__ = ["CommandTally", "cpu_seconds"]

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
#: Commands that are the driver's own (monitoring, sessions), not the framework's.
_DRIVER_COMMANDS = frozenset({"hello", "ismaster", "isMaster", "endSessions", "ping"})


def cpu_seconds(pid: int | None = None) -> float | None:
    """CPU seconds (user + system) process ``pid`` (this one by default) has used so far;
    ``None`` when it cannot be read (the process is gone, or not Linux for another pid)."""
    if pid is None or pid == os.getpid():
        times = os.times()
        return round(times.user + times.system, 3)
    try:
        # The command name (field 2) may hold spaces; the fields after it are fixed.
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return round((int(fields[11]) + int(fields[12])) / _TICKS, 3)
    except (OSError, IndexError, ValueError):
        return None


class CommandTally(monitoring.CommandListener):
    """Counts the commands sent through the clients it listens to.

    ``commands[(name, collection)]`` is how many were sent, ``documents[...]`` how many
    documents their replies carried (the first batch and every ``getMore``), ``ms[...]`` the
    time from sending to the reply. Thread-safe: a pymongo client may call it from several
    threads.
    """

    def __init__(self) -> None:
        self.commands: Counter[tuple[str, str]] = Counter()
        self.documents: Counter[tuple[str, str]] = Counter()
        self.ms: Counter[tuple[str, str]] = Counter()
        self.failures = 0
        self._open: dict[tuple[Any, int], tuple[str, str]] = {}
        self._lock = threading.Lock()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        name = event.command_name
        if name in _DRIVER_COMMANDS:
            return
        target = event.command.get(name)
        if name == "getMore":
            target = event.command.get("collection")
        key = (name, target if isinstance(target, str) else "")
        with self._lock:
            self.commands[key] += 1
            self._open[(event.connection_id, event.request_id)] = key

    def _finished(self, event: Any, reply: Any) -> tuple[str, str] | None:
        with self._lock:
            key = self._open.pop((event.connection_id, event.request_id), None)
            if key is None:
                return None
            self.ms[key] += event.duration_micros / 1000
            cursor = reply.get("cursor") if isinstance(reply, dict) else None
            if isinstance(cursor, dict):
                batch = cursor.get("firstBatch", cursor.get("nextBatch"))
                if isinstance(batch, list):
                    self.documents[key] += len(batch)
            elif isinstance(reply, dict) and isinstance(reply.get("value"), dict):
                self.documents[key] += 1  # findAndModify
        return key

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        self._finished(event, event.reply)

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        if self._finished(event, None) is not None:
            with self._lock:
                self.failures += 1

    def snapshot(self) -> CommandTally:
        """A copy of the counts so far, to subtract from a later :meth:`summary`."""
        copy = CommandTally()
        with self._lock:
            copy.commands, copy.documents = self.commands.copy(), self.documents.copy()
            copy.ms, copy.failures = self.ms.copy(), self.failures
        return copy

    def summary(self, per: int, *, since: CommandTally | None = None, top: int = 12) -> dict:
        """The commands counted (after ``since``, a :meth:`snapshot`) divided by ``per``
        (turns, jobs): the total, and the ``top`` commands with their documents and times."""
        base = since or CommandTally()
        with self._lock:
            commands = self.commands - base.commands
            documents, ms = self.documents - base.documents, self.ms - base.ms
            failed = self.failures - base.failures
        per = max(per, 1)
        rows = [
            {
                "command": name,
                "collection": collection,
                "per_unit": round(count / per, 2),
                "documents_per_command": round(documents[(name, collection)] / count, 1),
                "ms_per_command": round(ms[(name, collection)] / count, 2),
            }
            for (name, collection), count in commands.most_common(top)
        ]
        return {
            "units": per,
            "commands_per_unit": round(sum(commands.values()) / per, 2),
            "failed": failed,
            "top": rows,
        }

"""The embedded server as a benchmark sees it: started in a process of its own when asked,
and watched (its resident memory, its write-ahead log) while the benchmark runs.

A production deployment runs the server apart from the application (``agent-memory embedded
serve``), so that is what the soak measures by default: :func:`served_apart` starts
``agent-memory embedded serve`` on the settings' data directory and stops it afterwards;
:class:`ServerWatch` reads ``/proc/<pid>/statm`` and the size of the database's ``-wal`` file.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_memory.bench._memory import rss_bytes
from agent_memory.config import Settings
from agent_memory.errors import EmbeddedServerError
from agent_memory.mongo.embedded import DATABASE_FILE, find_running_server

__all__ = ["ServerWatch", "describe_server", "served_apart", "watch_for"]

_MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ServerWatch:
    """Where to read an embedded server's memory and write-ahead log."""

    pid: int
    database: Path

    @property
    def apart(self) -> bool:
        """Whether the server runs in another process than this one."""
        return self.pid != os.getpid()

    def rss_mb(self) -> float | None:
        rss = rss_bytes(self.pid)
        return None if rss is None else round(rss / _MB, 1)

    def wal_mb(self) -> float | None:
        try:
            return round(os.stat(f"{self.database}-wal").st_size / _MB, 1)
        except FileNotFoundError:
            return 0.0
        except OSError:
            return None

    def sample(self) -> dict[str, Any]:
        sample: dict[str, Any] = {"wal_mb": self.wal_mb()}
        if self.apart:
            sample["server_rss_mb"] = self.rss_mb()
        return sample


def describe_server(watch: ServerWatch | None) -> str:
    if watch is None:
        return "server at MONGODB_URI"
    return "embedded server, own process" if watch.apart else "embedded server, same process"


def watch_for(settings: Settings) -> ServerWatch | None:
    """The embedded server serving ``settings.data_dir`` now, or ``None`` (another tier)."""
    if settings.uri() is not None:
        return None
    info = find_running_server(settings.data_dir, wait=0.5)
    pid = info.pid if info is not None else os.getpid()
    return ServerWatch(pid, (settings.data_dir / DATABASE_FILE).expanduser())


def _answering(settings: Settings) -> bool:
    """Whether the server this module started answers yet. Holding the lock without answering
    is a server still starting (slowly, on a busy machine), not an error: nobody else served
    the directory when it was started."""
    try:
        return find_running_server(settings.data_dir, wait=0.5) is not None
    except EmbeddedServerError:
        return False


@contextlib.contextmanager
def served_apart(settings: Settings, *, timeout: float = 60.0) -> Iterator[int]:
    """Run ``agent-memory embedded serve`` for ``settings.data_dir`` in its own process until
    the block ends; yields its pid. Refuses a directory another process already serves."""
    if settings.uri() is not None:
        raise EmbeddedServerError("--server apart needs the embedded default (no MONGODB_URI)")
    if find_running_server(settings.data_dir, wait=0.5) is not None:
        raise EmbeddedServerError(
            f"{str(settings.data_dir)!r} is already served by another process; stop it or "
            "use another AGENT_MEMORY_DATA_DIR"
        )
    command = [sys.executable, "-m", "agent_memory", "embedded", "serve"]
    # It stops by itself if this process dies without stopping it (SIGTERM, SIGKILL).
    command += ["--data-dir", str(settings.data_dir), "--exit-with", str(os.getpid())]
    errors = tempfile.TemporaryFile()  # a pipe nobody reads could stall the server
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors
    )
    try:
        deadline = time.monotonic() + timeout
        while not _answering(settings):
            if process.poll() is not None:
                errors.seek(0)
                why = errors.read().decode(errors="replace")[-500:]
                raise EmbeddedServerError(f"the embedded server did not start: {why.strip()}")
            if time.monotonic() > deadline:
                raise EmbeddedServerError(f"the embedded server did not start in {timeout:g} s")
            time.sleep(0.1)
        yield process.pid
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        errors.close()

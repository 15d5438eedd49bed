"""Programs that share an embedded server outlive the program that started it.

A process that connects to the server another process runs for a data directory (found with
:func:`~agent_memory.mongo.embedded.find_running_server`) keeps a :class:`Standby`: a daemon
thread that tries the directory's lock every :data:`POLL_SECONDS`. The kernel frees the lock
when its holder lets go of it, whether that process closed its connection, exited or was
killed (``SIGKILL`` included), and the first standby to get it serves the directory itself:
an :class:`~agent_memory.mongo.embedded.EmbeddedServer` on the host and port the old server
used, with the directory's own password (``server.secret``), so the ``AsyncMongoClient`` whose
URI names that port reconnects by itself. SQLite replays what a killed server left in the
write-ahead log. The other standbys keep trying, and keep using the port, now served by the
new owner; when that one closes its connection, the next takes over.

What a caller sees meanwhile: an operation sent while nobody serves waits in pymongo's server
selection (up to ``connect_timeout_ms``) and runs once the new server answers; a read in
flight when the old server went is run again once by pymongo (``retryReads``). A write in
flight fails once with :class:`~agent_memory.errors.StorageUnavailableError`. It is not run
again here: it may have been applied before the connection dropped, and running an
``$inc``, a ``$push`` or an insert without a fixed ``_id`` twice applies it twice; the caller
knows whether its write can be repeated (the framework's own writes are built to be, a turn
or a job at a time), so the retry is the caller's. A program still connecting when its server
goes waits for the takeover (up to :data:`START_WAIT`) and connects.

Should another program have bound the port meanwhile, the takeover fails: the error is logged
(``embedded_server_takeover_failed``), the lock is let go, and every failure to reach that
port says what happened and what to do: connect again, which serves the directory on a free
port (clients cannot follow a server to another port).

:func:`serve_or_share` is how :func:`~agent_memory.mongo.connection.connect` reaches the
embedded default: it shares the server that runs, or starts one; when two programs start at
the same moment on a directory nobody serves, one serves it and the other waits for it and
shares it.
"""

from __future__ import annotations

import asyncio
import errno
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import IO

from agent_memory._log import get_logger
from agent_memory.errors import EmbeddedServerError
from agent_memory.mongo._errors import explain_unreachable
from agent_memory.mongo.embedded import (
    LOCK_FILE,
    EmbeddedServer,
    ServedElsewhereError,
    ServerInfo,
    find_running_server,
)
from agent_memory.mongo.embedded_files import open_private, unusable

try:
    import fcntl
except ImportError:  # pragma: no cover - no shared data directories without it
    fcntl = None  # type: ignore[assignment]

__all__ = ["POLL_SECONDS", "START_WAIT", "Standby", "serve_or_share"]

logger = get_logger(__name__)

#: How often a standby tries the directory's lock.
POLL_SECONDS = 0.15
#: How long a program starting at the same moment as another waits for the other's server.
START_WAIT = 30.0


class Standby:
    """Watch the data directory whose server another process runs, and serve it from this
    process, on the same port, once that process lets it go. :meth:`stop` ends the watch and
    stops a server taken over."""

    def __init__(self, data_dir: Path, info: ServerInfo, *, poll: float = POLL_SECONDS) -> None:
        self.data_dir = data_dir.expanduser()
        self.info = info
        self.poll = poll
        #: The server this process serves the directory with, once it took it over.
        self.server: EmbeddedServer | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._handle: IO[bytes] | None = None

    def start(self) -> None:
        """Start watching, when this process can serve the directory (mongoeco importable)."""
        if fcntl is None or importlib.util.find_spec("mongoeco") is None:
            return
        try:
            self._handle = os.fdopen(open_private(self.data_dir / LOCK_FILE, os.O_RDWR), "r+b")
        except OSError as exc:
            raise unusable(self.data_dir, f"is not usable ({exc.strerror or exc})") from exc
        self._thread = threading.Thread(
            target=self._watch, name="agent-memory-standby", daemon=True
        )
        self._thread.start()

    @property
    def may_serve(self) -> bool:
        """Whether this process serves the directory or may still take it over (it watches
        the lock, or a takeover is under way): a caller that cannot reach the port may wait
        for it."""
        thread = self._thread
        return self.server is not None or (thread is not None and thread.is_alive())

    def _watch(self) -> None:
        handle = self._handle
        assert handle is not None and fcntl is not None
        while not self._stopping.wait(self.poll):
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # still served
            except OSError as exc:
                logger.warning("embedded_standby_ended", error=exc.strerror or str(exc))
                return
            self._handle = None  # the server's now: it lets the lock go when it stops
            self._take_over(handle)
            return

    def _take_over(self, handle: IO[bytes]) -> None:
        if self._stopping.is_set():  # closing: the directory goes to the next program
            handle.close()
            return
        server = EmbeddedServer(self.data_dir, host=self.info.host, port=self.info.port)
        try:
            server.start(lock=handle)
        except EmbeddedServerError as exc:
            self._failed(exc)
            return
        self.server = server
        logger.info(
            "embedded_server_taken_over",
            data_dir=str(self.data_dir),
            port=self.info.port,
            previous_pid=self.info.pid,
        )

    def _failed(self, exc: EmbeddedServerError) -> None:
        lost = (
            f"the program serving {self.data_dir} stopped and this process could not take it over"
        )
        cause = exc.__cause__
        if isinstance(cause, OSError) and cause.errno == errno.EADDRINUSE:
            why = (
                f"{lost}: port {self.info.port} on {self.info.host}, which this connection "
                "uses, is now taken by another program; close this connection and connect "
                "again (the directory is then served on a free port)"
            )
        else:
            why = f"{lost}: {exc}"
        logger.error("embedded_server_takeover_failed", data_dir=str(self.data_dir), error=why)
        for address in self._addresses():
            explain_unreachable(address, why)

    def _addresses(self) -> tuple[str, ...]:
        """The address as pymongo's errors write it: ``host:port``, or the ``(host, port)``
        of a topology description."""
        host, port = self.info.host, self.info.port
        return (f"{host}:{port}", f"[{host}]:{port}", repr((host, port)))

    def stop(self, *, timeout: float = 30.0) -> None:
        """End the watch (a takeover under way finishes first) and stop the server taken
        over, which lets the directory go to the next program. Idempotent."""
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join()  # a takeover under way is bounded by the server's start timeout
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.close()
        server, self.server = self.server, None
        if server is not None:
            server.stop(timeout=timeout)
        for address in self._addresses():
            explain_unreachable(address, None)

    async def astop(self) -> None:
        """:meth:`stop` without blocking the calling event loop."""
        await asyncio.to_thread(self.stop)


async def serve_or_share(
    data_dir: Path, *, host: str, port: int, wait: float = START_WAIT
) -> tuple[str, EmbeddedServer | None, Standby | None]:
    """The URI of the embedded server for ``data_dir``, with the server when this process
    started it, or the :class:`Standby` (started) when it shares another process's server.

    A process that finds the lock taken just after it looked (another program started at the
    same moment) waits up to ``wait`` seconds for that program's server and shares it."""
    deadline = time.monotonic() + wait
    while True:
        left = max(deadline - time.monotonic(), 5.0)
        running = await asyncio.to_thread(find_running_server, data_dir, wait=left)
        if running is not None:
            standby = Standby(data_dir, running)
            standby.start()
            return running.uri, None, standby
        server = EmbeddedServer(data_dir, host=host, port=port)
        try:
            return await server.astart(), server, None
        except ServedElsewhereError:
            if time.monotonic() >= deadline:
                raise
            logger.debug("embedded_server_start_raced", data_dir=str(data_dir))
        except BaseException:
            await asyncio.shield(server.astop())
            raise
        await asyncio.sleep(0.05)

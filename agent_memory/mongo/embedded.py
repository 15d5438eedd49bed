"""The embedded default: mongoeco's SQLite engine served on loopback by its MongoDB wire server.

The server runs on its own event loop in a background thread, so a busy application loop
never stalls the database, and the framework reaches it like any other server: through
``pymongo.AsyncMongoClient`` over the wire protocol.

One process owns a data directory at a time (an exclusive lock on ``server.lock``); it writes
its address to ``server.json``. Other processes that find the lock held read that file and
connect to the running server instead of opening the SQLite file a second time, so a demo,
a worker and ``agent-memory`` commands can share one embedded database.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import socket
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import structlog

from agent_memory.errors import DependencyMissingError, EmbeddedServerError

try:  # fcntl is POSIX-only; elsewhere the data directory is not shared between processes.
    import fcntl
except ImportError:  # pragma: no cover - exercised only on Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["EmbeddedServer", "ServerInfo", "find_running_server"]

logger = structlog.get_logger(__name__)

DATABASE_FILE = "agent_memory.sqlite3"
LOCK_FILE = "server.lock"
INFO_FILE = "server.json"
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """Where a running embedded server listens."""

    host: str
    port: int
    pid: int

    @property
    def uri(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"mongodb://{host}:{self.port}/?directConnection=true"


def _prepare_data_dir(data_dir: Path) -> Path:
    data_dir = data_dir.expanduser()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        probe = data_dir / ".write-test"
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:
        raise EmbeddedServerError(
            f"the data directory {str(data_dir)!r} is not usable ({exc.strerror or exc}); "
            "set AGENT_MEMORY_DATA_DIR to a writable directory"
        ) from exc
    return data_dir.resolve()


def _read_info(data_dir: Path) -> ServerInfo | None:
    try:
        raw = json.loads((data_dir / INFO_FILE).read_text(encoding="utf-8"))
        return ServerInfo(host=str(raw["host"]), port=int(raw["port"]), pid=int(raw["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _answers(info: ServerInfo, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((info.host, info.port), timeout=timeout):
            return True
    except OSError:
        return False


def find_running_server(data_dir: Path, *, wait: float = 5.0) -> ServerInfo | None:
    """The server another process runs for ``data_dir``, or ``None`` if nobody serves it.

    Someone serves it when ``server.lock`` is held. Right after the owner took the lock it
    may not have written ``server.json`` yet, so this waits up to ``wait`` seconds for it.
    """
    data_dir = data_dir.expanduser()
    if fcntl is None or not (data_dir / LOCK_FILE).exists():
        return None
    with open(data_dir / LOCK_FILE, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held: a live owner exists
        else:
            fcntl.flock(handle, fcntl.LOCK_UN)
            return None
    deadline = time.monotonic() + wait
    while True:
        info = _read_info(data_dir)
        if info is not None and _answers(info):
            return info
        if time.monotonic() >= deadline:
            raise EmbeddedServerError(
                f"the data directory {str(data_dir)!r} is locked by another process whose "
                "server does not answer; stop that process or use another AGENT_MEMORY_DATA_DIR"
            )
        time.sleep(0.05)


class EmbeddedServer:
    """Serve a mongoeco SQLite database on a loopback port from a background thread.

    >>> server = EmbeddedServer(Path("/tmp/agent-memory-doctest"))  # doctest: +SKIP
    >>> uri = server.start()                                         # doctest: +SKIP
    >>> server.stop()                                                # doctest: +SKIP

    ``port=0`` picks a free port. A fixed port that is taken is an error that says so.
    """

    def __init__(self, data_dir: Path, *, host: str = "127.0.0.1", port: int = 0) -> None:
        if host not in _LOOPBACK:
            raise EmbeddedServerError(
                f"the embedded server has no authentication and listens on loopback only; "
                f"{host!r} is not a loopback address (use 127.0.0.1)"
            )
        self.data_dir = data_dir
        self.host = host
        self.port = port
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Any = None
        self._info: ServerInfo | None = None
        self._lock_handle: IO[bytes] | None = None

    @property
    def info(self) -> ServerInfo:
        if self._info is None:
            raise EmbeddedServerError("the embedded server is not running")
        return self._info

    @property
    def uri(self) -> str:
        return self.info.uri

    @property
    def running(self) -> bool:
        return self._info is not None

    def _acquire_lock(self, data_dir: Path) -> None:
        if fcntl is None:  # pragma: no cover
            return
        handle = open(data_dir / LOCK_FILE, "a+b")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            running = _read_info(data_dir)
            where = f" at {running.uri}" if running else ""
            raise EmbeddedServerError(
                f"another process already serves {str(data_dir)!r}{where}; connect to it "
                "(MONGODB_URI) or choose another AGENT_MEMORY_DATA_DIR"
            ) from None
        self._lock_handle = handle

    def _release_lock(self, data_dir: Path) -> None:
        # Only the owner may remove server.json: another process may be serving this directory.
        if self._lock_handle is None:
            return
        with suppress(OSError):
            (data_dir / INFO_FILE).unlink()
        with suppress(OSError):
            fcntl.flock(self._lock_handle, fcntl.LOCK_UN)
        self._lock_handle.close()
        self._lock_handle = None

    def start(self, *, timeout: float = 30.0) -> str:
        """Start serving and return the connection URI. Idempotent."""
        if self._info is not None:
            return self._info.uri
        try:
            from mongoeco.wire import AsyncMongoEcoProxyServer

            from agent_memory.mongo._engine import engine_class
        except ImportError as exc:
            raise DependencyMissingError(
                "mongoeco",
                "embedded",
                detail="the embedded server needs Python 3.13+; on older Pythons set MONGODB_URI",
            ) from exc

        data_dir = _prepare_data_dir(self.data_dir)
        self._acquire_lock(data_dir)
        ready = threading.Event()
        outcome: dict[str, Any] = {}

        async def serve() -> None:
            engine = engine_class()(str(data_dir / DATABASE_FILE))
            server = AsyncMongoEcoProxyServer(engine=engine, host=self.host, port=self.port)
            try:
                address = await server.start()
            except BaseException as exc:
                outcome["error"] = exc
                ready.set()
                return
            self._server = server
            outcome["address"] = address
            ready.set()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(serve())
                if "address" in outcome:
                    loop.run_forever()
            finally:
                with suppress(Exception):
                    loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name="agent-memory-embedded", daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            self._release_lock(data_dir)
            raise EmbeddedServerError(f"the embedded server did not start within {timeout:.0f} s")
        error = outcome.get("error")
        if error is not None:
            self._thread.join(timeout)
            self._thread = None
            self._release_lock(data_dir)
            if isinstance(error, OSError) and error.errno == errno.EADDRINUSE:
                raise EmbeddedServerError(
                    f"port {self.port} on {self.host} is already in use; set "
                    "AGENT_MEMORY_EMBEDDED_PORT to another port, or to 0 to pick a free one"
                ) from error
            raise EmbeddedServerError(f"the embedded server could not start: {error}") from error

        address = outcome["address"]
        self._info = ServerInfo(host=address.host, port=address.port, pid=os.getpid())
        (data_dir / INFO_FILE).write_text(
            json.dumps({"host": address.host, "port": address.port, "pid": os.getpid()}),
            encoding="utf-8",
        )
        logger.info("embedded_server_started", port=address.port, data_dir=str(data_dir))
        return self._info.uri

    def stop(self, *, timeout: float = 30.0) -> None:
        """Stop serving and release the data directory. Idempotent."""
        loop, thread, server = self._loop, self._thread, self._server
        if loop is not None and thread is not None and thread.is_alive():
            if server is not None:
                future = asyncio.run_coroutine_threadsafe(server.close(), loop)
                try:
                    future.result(timeout)
                except Exception as exc:  # still stop the loop and free the lock
                    logger.warning("embedded_server_close_failed", error=str(exc))
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
        self._loop = self._thread = self._server = None
        if self._info is not None:
            logger.info("embedded_server_stopped", port=self._info.port)
        self._info = None
        self._release_lock(self.data_dir.expanduser())

    async def astart(self) -> str:
        """:meth:`start` without blocking the calling event loop."""
        return await asyncio.to_thread(self.start)

    async def astop(self) -> None:
        """:meth:`stop` without blocking the calling event loop."""
        await asyncio.to_thread(self.stop)

    def __enter__(self) -> EmbeddedServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

"""The embedded default: mongoeco's SQLite engine served on loopback by its MongoDB wire server.

The server runs on its own event loop in a background thread, so a busy application loop
never stalls the database, and the framework reaches it like any other server: through
``pymongo.AsyncMongoClient`` over the wire protocol.

One process owns a data directory at a time (an exclusive lock on ``server.lock``); it writes
its address to ``server.json`` (and keeps it in ``server.lock``, for the next owner). Other
processes that find the lock held read that file and connect to the running server instead
of opening the SQLite file a second time, so a demo, a worker and ``agent-memory`` commands
can share one embedded database. When the owner goes, one of them takes the directory over
on the same port (:mod:`agent_memory.mongo.embedded_takeover`).

Loopback is not a lock: other local users and programs reach the port. So the directory is
private to the user who runs it (created 0700, its files 0600; one owned by someone else, or
writable by others, is refused), nothing in it is opened through a symbolic link, the server
asks for a password (a random secret per directory, in ``server.secret``, 0600) from every
client, ``server.json`` is believed only when the user owns it, only the user can read it and
it names a loopback address, and the server refuses server-side code (``$where``,
``$function``, ``$accumulator``; see :mod:`agent_memory.mongo._mongoeco`). What this does
not protect against: anyone who can act as the same OS user, or as root.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import secrets
import socket
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote_plus

from agent_memory._log import get_logger
from agent_memory._redact import register_secret
from agent_memory.config import redact_uri
from agent_memory.errors import DependencyMissingError, EmbeddedServerError
from agent_memory.mongo._embedded_reads import FileReads
from agent_memory.mongo.embedded_files import (
    DATABASE_FILE,
    check_private,
    damage_reason,
    damaged_error,
    open_private,
    prepare_data_dir,
    prepare_database,
    read_private,
    unusable,
    write_private,
)

try:  # fcntl is POSIX-only; elsewhere the data directory is not shared between processes.
    import fcntl
except ImportError:  # pragma: no cover - exercised only on Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["EmbeddedServer", "ServedElsewhereError", "ServerInfo", "find_running_server"]

logger = get_logger(__name__)

LOCK_FILE = "server.lock"
INFO_FILE = "server.json"
SECRET_FILE = "server.secret"
#: The one user the embedded server knows; its password is the directory's secret.
USER = "agent-memory"
_LOOPBACK = ("127.0.0.1", "::1", "localhost")
_LOCK_TRIES = 5


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """Where a running embedded server listens, and the password it asks for."""

    host: str
    port: int
    pid: int
    secret: str | None = field(default=None, repr=False)

    @property
    def uri(self) -> str:
        """The URI every client uses, credentials included: keep it out of logs
        (:func:`agent_memory.config.redact_uri`)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.secret is None:
            return f"mongodb://{host}:{self.port}/?directConnection=true"
        return (
            f"mongodb://{USER}:{quote_plus(self.secret)}@{host}:{self.port}/"
            "?directConnection=true&authSource=admin&authMechanism=SCRAM-SHA-256"
        )


class ServedElsewhereError(EmbeddedServerError):
    """Another process holds the data directory's lock: it serves the directory, or is about
    to (:func:`find_running_server` finds it once it has written ``server.json``)."""


def _secret(data_dir: Path, *, create: bool) -> str | None:
    """The directory's server password, created by the server's owner on first start."""
    text = read_private(data_dir / SECRET_FILE)
    if text and text.strip():
        register_secret(text.strip())  # masked in every message, as the settings' secrets are
        return text.strip()
    if not create:
        return None
    if os.path.lexists(data_dir / SECRET_FILE):
        raise unusable(data_dir, f"holds {SECRET_FILE} that is not this user's private file")
    write_private(data_dir / SECRET_FILE, secrets.token_urlsafe(32))
    return _secret(data_dir, create=False)


def _read_info(data_dir: Path) -> ServerInfo | None:
    text = read_private(data_dir / INFO_FILE)
    if text is None:
        return None
    try:
        raw = json.loads(text)
        info = ServerInfo(host=str(raw["host"]), port=int(raw["port"]), pid=int(raw["pid"]))
    except (ValueError, KeyError, TypeError):
        return None
    if info.host not in _LOOPBACK or not 0 < info.port < 65536:
        logger.warning("embedded_server_info_refused", host=info.host)
        return None
    secret = _secret(data_dir, create=False)
    return ServerInfo(info.host, info.port, info.pid, secret) if secret else None


def _answers(info: ServerInfo, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((info.host, info.port), timeout=timeout):
            return True
    except OSError:
        return False


def find_running_server(data_dir: Path, *, wait: float = 5.0) -> ServerInfo | None:
    """The server another process runs for ``data_dir``, or ``None`` if nobody serves it.

    Someone serves it when ``server.lock`` is held. Right after the owner took the lock it
    may not have written ``server.json`` yet, so this waits up to ``wait`` seconds for it;
    an owner that lets the lock go meanwhile (it ended) serves nobody.
    """
    data_dir = data_dir.expanduser()
    if fcntl is None or not (data_dir / LOCK_FILE).exists():
        return None
    try:
        check_private(data_dir, os.stat(data_dir))
        fd = open_private(data_dir / LOCK_FILE, os.O_RDWR)
    except OSError as exc:
        raise unusable(data_dir, f"is not usable ({exc.strerror or exc})") from exc
    deadline = time.monotonic() + wait
    with os.fdopen(fd, "r+b") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass  # held: a live owner exists
            else:
                fcntl.flock(handle, fcntl.LOCK_UN)
                return None
            info = _read_info(data_dir)
            if info is not None and _answers(info):
                return info
            if time.monotonic() >= deadline:
                raise EmbeddedServerError(
                    f"the data directory {str(data_dir)!r} is locked by another process whose "
                    "server does not answer; stop that process or use another "
                    "AGENT_MEMORY_DATA_DIR"
                )
            time.sleep(0.05)


class EmbeddedServer:
    """Serve a mongoeco SQLite database on a loopback port from a background thread.

    >>> server = EmbeddedServer(Path("/tmp/agent-memory-doctest"))  # doctest: +SKIP
    >>> uri = server.start()                                         # doctest: +SKIP
    >>> server.stop()                                                # doctest: +SKIP

    ``port=0`` picks a free port: the one the directory was last served on when it is free
    (so that programs still connected to that port reach this server), else any. A fixed
    port that is taken is an error that says so.
    """

    def __init__(self, data_dir: Path, *, host: str = "127.0.0.1", port: int = 0) -> None:
        if host not in _LOOPBACK:
            raise EmbeddedServerError(
                f"the embedded server listens on loopback only; "
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
        self._database: Path | None = None
        self._readers: list[FileReads] = []
        # start() and stop() one at a time: a stop() called while a start runs in another
        # thread (a cancelled astart) waits for it and stops what it started.
        self._lifecycle = threading.Lock()

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
        if fcntl is None or self._lock_handle is not None:  # held already: handed over
            return
        try:
            handle = os.fdopen(open_private(data_dir / LOCK_FILE, os.O_RDWR), "r+b")
        except OSError as exc:
            raise unusable(data_dir, f"is not usable ({exc.strerror or exc})") from exc
        # A program looking for the server (find_running_server) holds the lock for a
        # moment when nobody serves: try a few times before taking it for an owner's.
        for attempt in range(_LOCK_TRIES):
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt < _LOCK_TRIES - 1:
                    time.sleep(0.02)
        else:
            handle.close()
            running = _read_info(data_dir)
            where = f" at {redact_uri(running.uri)}" if running else ""
            raise ServedElsewhereError(
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

    def _last_port(self) -> int | None:
        """The port the directory was last served on, from ``server.lock`` (held by now)."""
        if self._lock_handle is None:
            return None
        try:
            self._lock_handle.seek(0)
            last = json.loads(self._lock_handle.read(4096) or b"{}")
            port = int(last["port"]) if last.get("host") == self.host else 0
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return port if 0 < port < 65536 else None

    def _remember_port(self, port: int) -> None:
        if self._lock_handle is None:
            return
        with suppress(OSError):
            self._lock_handle.seek(0)
            self._lock_handle.truncate()
            self._lock_handle.write(json.dumps({"host": self.host, "port": port}).encode())
            self._lock_handle.flush()

    def start(self, *, timeout: float = 30.0, lock: IO[bytes] | None = None) -> str:
        """Start serving and return the connection URI. Idempotent.

        ``lock``: the directory's ``server.lock``, open and locked already by the caller (a
        program taking the directory over); the server holds it from then on, and lets it go
        when it stops or fails to start."""
        with self._lifecycle:
            return self._start(timeout, lock)

    def _start(self, timeout: float, lock: IO[bytes] | None) -> str:
        if self._info is not None:
            return self._info.uri
        if lock is not None and self._lock_handle is None:
            self._lock_handle = lock
        try:
            from mongoeco.wire import AsyncMongoEcoProxyServer  # noqa: F401
        except ImportError as exc:
            self._release_lock(self.data_dir.expanduser())
            raise DependencyMissingError(
                "mongoeco",
                "embedded",
                detail="the embedded server needs Python 3.13+; on older Pythons set MONGODB_URI",
            ) from exc

        try:
            data_dir = prepare_data_dir(self.data_dir)
        except BaseException:
            self._release_lock(self.data_dir.expanduser())  # a lock handed over is let go
            raise
        self._acquire_lock(data_dir)
        try:
            secret = _secret(data_dir, create=True)
            assert secret is not None
            database = data_dir / DATABASE_FILE
            prepare_database(database)
            self._database = database
            last = self._last_port() if self.port == 0 else None
            ports = [self.port] if self.port or last is None else [last, 0]
            for port in ports:
                try:
                    address = self._serve(database, secret, port, timeout)
                    break
                except OSError as exc:
                    if exc.errno != errno.EADDRINUSE or port == ports[-1]:
                        raise
                    logger.debug("embedded_last_port_taken", port=port)
        except OSError as exc:
            self._release_lock(data_dir)
            if exc.errno == errno.EADDRINUSE:
                raise EmbeddedServerError(
                    f"port {self.port} on {self.host} is already in use; set "
                    "AGENT_MEMORY_EMBEDDED_PORT to another port, or to 0 to pick a free one"
                ) from exc
            raise unusable(data_dir, f"is not usable ({exc.strerror or exc})") from exc
        except BaseException:
            self._release_lock(data_dir)
            raise

        self._info = ServerInfo(address.host, address.port, os.getpid(), secret)
        write_private(
            data_dir / INFO_FILE,
            json.dumps({"host": address.host, "port": address.port, "pid": os.getpid()}),
        )
        self._remember_port(address.port)
        logger.info("embedded_server_started", port=address.port, data_dir=str(data_dir))
        return self._info.uri

    def _serve(self, database: Path, secret: str, port: int, timeout: float) -> Any:
        """Run the server on ``port`` in a thread of its own; its address once it listens.
        An ``OSError`` from binding the port comes as it is."""
        from mongoeco.wire import AsyncMongoEcoProxyServer
        from mongoeco.wire.auth import WireAuthUser

        from agent_memory.mongo._mongoeco import engine_class, guard_server

        ready = threading.Event()
        outcome: dict[str, Any] = {}

        async def serve() -> None:
            try:
                server = AsyncMongoEcoProxyServer(
                    engine=engine_class()(str(database)),
                    host=self.host,
                    port=port,
                    auth_users=(
                        WireAuthUser(USER, password=secret, mechanisms=("SCRAM-SHA-256",)),
                    ),
                )
                guard_server(server, database=database)
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
            raise EmbeddedServerError(f"the embedded server did not start within {timeout:.0f} s")
        error = outcome.get("error")
        if error is None:
            return outcome["address"]
        self._thread.join(timeout)
        self._thread = self._loop = None
        if isinstance(error, OSError) and error.errno == errno.EADDRINUSE:
            raise error
        damage = damage_reason(error)
        if damage is not None:
            raise damaged_error(database, damage) from None
        raise EmbeddedServerError(f"the embedded server could not start: {error}") from error

    def stop(self, *, timeout: float = 30.0) -> None:
        """Stop serving and release the data directory. Idempotent. A start under way in
        another thread ends first, and what it started is stopped.

        While the server's thread runs, its engine may still write the database: a thread
        that has not ended within ``timeout`` keeps the directory (its lock and
        ``server.json``; ``running`` stays true), with a warning, so that no other program
        opens the database beside it. A later ``stop()`` finishes the job once the thread
        has ended; the lock goes with this process in any case."""
        with self._lifecycle:
            self._stop(timeout)

    def _file_reads(self, db_name: str, collection: str) -> FileReads | None:
        """Reads by ``_id`` of ``collection`` straight from the database file, for this
        process while it serves the file (:mod:`._embedded_reads`); ``None`` when the server
        is not running or its engine is not one they know."""
        server, database = self._server, self._database
        engine = getattr(getattr(server, "_client", None), "_engine", None)
        if engine is None or database is None:
            return None
        if not (
            callable(getattr(engine, "_storage_key", None))
            and callable(getattr(engine, "_deserialize_document", None))
        ):
            return None
        reads = FileReads(engine, database, db_name, collection, lambda: self._server is server)
        with self._lifecycle:
            if self._server is not server:
                return None
            self._readers.append(reads)
        return reads

    def _stop(self, timeout: float) -> None:
        for reads in self._readers:  # the file is not this process's to read any more
            reads.close()
        self._readers.clear()
        loop, thread, server = self._loop, self._thread, self._server
        if loop is not None and thread is not None and thread.is_alive():
            self._server = None  # asked to close once; a later stop() waits for the thread
            try:
                if server is not None:
                    future = asyncio.run_coroutine_threadsafe(server.close(), loop)
                    try:
                        future.result(timeout)
                    except Exception as exc:  # still stop the loop
                        logger.warning(
                            "embedded_server_close_failed", error=str(exc) or type(exc).__name__
                        )
                loop.call_soon_threadsafe(loop.stop)
            except RuntimeError:
                pass  # the loop closed meanwhile: the thread is ending
            thread.join(timeout)
            if thread.is_alive():
                logger.warning(
                    "embedded_server_stop_timed_out",
                    data_dir=str(self.data_dir),
                    timeout=timeout,
                    detail="the server thread still runs; the data directory stays locked "
                    "until stop() finds it ended or this process exits",
                )
                return
        self._loop = self._thread = self._server = None
        if self._info is not None:
            logger.info("embedded_server_stopped", port=self._info.port)
        self._info = None
        self._release_lock(self.data_dir.expanduser())

    async def astart(self) -> str:
        """:meth:`start` without blocking the calling event loop.

        The start runs in a thread, which a cancellation cannot interrupt: cancelled, this
        lets the start end and then stops what it started before the cancellation goes on,
        so that no server is left running that nobody stops, its directory let go."""
        starting = asyncio.ensure_future(asyncio.to_thread(self.start))
        try:
            return await asyncio.shield(starting)
        except asyncio.CancelledError:
            await asyncio.shield(self._stop_after(starting))
            raise

    async def _stop_after(self, starting: asyncio.Future[str]) -> None:
        await asyncio.wait([starting])
        if not starting.cancelled():
            starting.exception()  # a failed start let the directory go itself
        await self.astop()

    async def astop(self) -> None:
        """:meth:`stop` without blocking the calling event loop."""
        await asyncio.to_thread(self.stop)

    def __enter__(self) -> EmbeddedServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

"""Programs sharing an embedded data directory outlive the one that started its server: the
survivor takes the directory over on the same port and carries on (issue 35, item 2)."""

from __future__ import annotations

import asyncio
import fcntl
import importlib
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
from pymongo import AsyncMongoClient
from structlog.testing import capture_logs

from agent_memory.config import load_settings
from agent_memory.errors import ConflictError, EmbeddedServerError, StorageUnavailableError
from agent_memory.mongo import embedded
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.connection import connect
from agent_memory.mongo.embedded import INFO_FILE, LOCK_FILE, EmbeddedServer

pytestmark = pytest.mark.mongoeco

#: A program that starts the embedded server (the default, no MONGODB_URI), says so, and
#: closes its connection when a line comes on its standard input.
OWNER = """
import asyncio, sys
from agent_memory.mongo.connection import connect
async def main():
    connection = await connect()
    print(connection.capabilities.embedded, flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    await connection.close()
asyncio.run(main())
"""


def _served_by(data_dir: Path) -> int | None:
    try:
        return json.loads((data_dir / INFO_FILE).read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


def _lock_is_free(data_dir: Path) -> bool:
    with open(data_dir / LOCK_FILE, "rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def _our_threads(before: set[threading.Thread]) -> list[str]:
    """The server and standby threads started since ``before`` still running (a server of the
    test session, started by another file in this worker, is not the test's)."""
    names = ("agent-memory-embedded", "agent-memory-standby")
    return [t.name for t in threading.enumerate() if t.name in names and t not in before]


async def _until(condition, what: str, deadline: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, f"not within {deadline:.0f} s: {what}"
        await asyncio.sleep(0.05)


class _Writer:
    """Writes numbered documents one after another, retrying a write that failed (an insert
    with a fixed ``_id``: a retry of one that landed is a duplicate, and counted as landed)."""

    def __init__(self, collection) -> None:  # type: ignore[no-untyped-def]
        self.collection = collection
        self.landed = 0
        self.failures: list[str] = []
        self.stopping = False

    async def write(self, count: int) -> None:
        target = self.landed + count
        while self.landed < target and not self.stopping:
            try:
                with translate_errors("writing"):
                    await self.collection.insert_one({"_id": self.landed, "n": self.landed})
            except ConflictError:
                pass  # the failed call had landed before its connection went
            except StorageUnavailableError as exc:
                self.failures.append(str(exc))
                continue
            self.landed += 1


@pytest.mark.parametrize("end", ["clean exit", "SIGKILL"])
async def test_a_program_sharing_the_server_takes_it_over_when_its_owner_ends(
    tmp_path: Path, end: str
) -> None:
    before = set(threading.enumerate())
    data_dir = tmp_path / "data"
    owner = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        OWNER,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "AGENT_MEMORY_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert await asyncio.wait_for(owner.stdout.readline(), 120) == b"True\n"
        # A busy machine may take seconds to start the new server: operations wait for it.
        settings = load_settings(data_dir=data_dir, connect_timeout_ms=60_000)
        with capture_logs() as logs:
            connection = await connect(settings)
            writer = _Writer(connection.collection("writes"))
            writing = asyncio.create_task(writer.write(100_000))
            try:
                assert _served_by(data_dir) == owner.pid  # shared, not started here
                await _until(lambda: writer.landed >= 60, "60 writes")
                if end == "SIGKILL":
                    owner.kill()
                else:
                    owner.stdin.write(b"close\n")
                    await owner.stdin.drain()
                assert await asyncio.wait_for(owner.wait(), 60) == (-9 if end == "SIGKILL" else 0)
                await _until(lambda: _served_by(data_dir) == os.getpid(), "the takeover")
                landed = writer.landed
                await _until(lambda: writer.landed >= landed + 30, "30 writes after it")
                writer.stopping = True
                await writing
                # Every write is there, once; at most the one in flight when the server went
                # failed (and its retry landed).
                assert len(writer.failures) <= 1, writer.failures
                stored = await connection.collection("writes").distinct("_id")
                assert sorted(stored) == list(range(writer.landed))
            finally:
                writing.cancel()
                await connection.close()
    finally:
        if owner.returncode is None:
            owner.kill()
            await owner.wait()
    taken = [entry for entry in logs if entry["event"] == "embedded_server_taken_over"]
    assert len(taken) == 1 and taken[0]["previous_pid"] == owner.pid
    # The server taken over stopped with the connection, and let the directory go.
    assert _lock_is_free(data_dir) and _our_threads(before) == []
    assert not (data_dir / INFO_FILE).exists()


async def test_one_of_several_sharers_takes_over_and_the_next_after_it(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    settings = load_settings(data_dir=tmp_path / "data")
    owner = await connect(settings)
    sharers = [await connect(settings) for _ in range(2)]
    try:
        await sharers[0].collection("items").insert_one({"_id": "before"})
        with capture_logs() as logs:
            await owner.close()
            await _until(
                lambda: any(e["event"] == "embedded_server_taken_over" for e in logs),
                "a takeover",
            )
            await asyncio.sleep(0.5)  # time for a second, wrong takeover to show
            assert [e["event"] for e in logs].count("embedded_server_taken_over") == 1
            # Both go on through the port, whichever serves it.
            for number, sharer in enumerate(sharers):
                await sharer.collection("items").insert_one({"_id": f"after-{number}"})
            first = next(s for s in sharers if s._standby.server is not None)
            second = next(s for s in sharers if s is not first)
            await first.close()
            await _until(lambda: second._standby.server is not None, "the second takeover")
            assert [e["event"] for e in logs].count("embedded_server_taken_over") == 2
            ids = await second.collection("items").distinct("_id")
            assert sorted(ids) == ["after-0", "after-1", "before"]
    finally:
        for connection in (owner, *sharers):
            await connection.close()
    assert _lock_is_free(settings.data_dir) and _our_threads(before) == []


async def test_a_program_starting_as_another_takes_the_directory_shares_its_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two programs started at the same moment: both found nobody serving; the other took
    the lock first. This one must wait for the other's server and share it."""
    data_dir = tmp_path / "data"
    winner = EmbeddedServer(data_dir)
    winner.start()
    looked: list[bool] = []

    def just_before_the_winner(data_dir: Path, *, wait: float = 5.0):  # type: ignore[no-untyped-def]
        if not looked:
            looked.append(True)
            return None  # as it was when this program looked
        return embedded.find_running_server(data_dir, wait=wait)

    # connect() looks the running server up through this name (in the module it uses).
    for name in ("agent_memory.mongo.embedded_takeover", "agent_memory.mongo.connection"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        monkeypatch.setattr(module, "find_running_server", just_before_the_winner, raising=False)
    try:
        connection = await connect(load_settings(data_dir=data_dir))
        try:
            await connection.collection("items").insert_one({"_id": 1})
            assert looked and _served_by(data_dir) == os.getpid()
            assert connection._embedded is None  # shared: the winner's server stays its own
        finally:
            await connection.close()
        assert winner.running
    finally:
        winner.stop()


async def test_a_program_whose_shared_server_goes_while_it_connects_connects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner ends between this program finding its server and its first command (seen in
    CI: three commands started together, the first to finish ended while the third was
    connecting), and the takeover takes longer than the connect timeout (a busy machine): the
    first command fails, the standby serves the directory again on the same port, and
    connect() goes on instead of failing."""
    from pymongo.monitoring import ConnectionPoolListener

    from agent_memory.mongo import connection as connection_module
    from agent_memory.mongo import embedded_takeover

    before = set(threading.enumerate())
    data_dir = tmp_path / "data"
    owner = EmbeddedServer(data_dir)
    owner.start()
    port = owner.info.port
    refused = threading.Event()

    class TakesOverOnceRefused(embedded_takeover.Standby):
        def _take_over(self, handle) -> None:  # type: ignore[no-untyped-def]
            refused.wait(60)  # the owner is gone: take over only once connect's steps failed
            super()._take_over(handle)

    first_steps = connection_module._first_steps

    async def steps_noting_a_failure(*args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return await first_steps(*args, **kwargs)
        except Exception:
            refused.set()  # after pymongo's own retries, which a slow takeover outlasts
            raise

    class Events(ConnectionPoolListener):
        """The owner ends as the first command checks a connection out."""

        checked_out = 0

        def connection_check_out_started(self, event) -> None:  # type: ignore[no-untyped-def]
            self.checked_out += 1
            if self.checked_out == 1:
                owner.stop()

        def _ignored(self, event) -> None:  # type: ignore[no-untyped-def]
            pass

        pool_created = pool_ready = pool_cleared = pool_closed = _ignored
        connection_created = connection_ready = connection_closed = _ignored
        connection_checked_out = connection_checked_in = connection_check_out_failed = _ignored

    monkeypatch.setattr(embedded_takeover, "Standby", TakesOverOnceRefused)
    monkeypatch.setattr(connection_module, "_first_steps", steps_noting_a_failure)
    try:
        with capture_logs() as logs:
            connection = await connect(
                load_settings(data_dir=data_dir, connect_timeout_ms=500),
                client_options={"event_listeners": [Events()]},
            )
        try:
            assert refused.is_set() and not owner.running
            standby = connection._standby
            assert standby is not None and standby.server is not None
            assert standby.server.info.port == port
            await connection.collection("items").insert_one({"_id": 1})
            assert await connection.collection("items").count_documents({}) == 1
            events = [entry["event"] for entry in logs]
            assert "embedded_server_went_while_connecting" in events
            assert events.count("embedded_server_taken_over") == 1
        finally:
            await connection.close()
    finally:
        refused.set()
        owner.stop()
    assert _lock_is_free(data_dir) and _our_threads(before) == []


async def test_a_takeover_whose_port_was_taken_says_so_in_every_failure(tmp_path: Path) -> None:
    from agent_memory.mongo.embedded_takeover import Standby

    before = set(threading.enumerate())
    data_dir = tmp_path / "data"
    server = EmbeddedServer(data_dir)
    server.start()
    info = server.info
    server.stop()
    squatter = socket.create_server(("127.0.0.1", 0))
    port = squatter.getsockname()[1]
    lost = embedded.ServerInfo("127.0.0.1", port, pid=1, secret=info.secret)
    standby = Standby(data_dir, lost)
    with capture_logs() as logs:
        standby.start()
        await _until(
            lambda: any(e["event"] == "embedded_server_takeover_failed" for e in logs),
            "the failed takeover",
        )
    try:
        assert _lock_is_free(data_dir)  # let go: a new program serves it on a free port
        client: AsyncMongoClient = AsyncMongoClient(lost.uri, serverSelectionTimeoutMS=500)
        try:
            with pytest.raises(StorageUnavailableError) as caught:
                with translate_errors("reading"):
                    await client["db"]["items"].find_one({})
        finally:
            await client.close()
        message = str(caught.value)
        assert f"port {port}" in message and "connect again" in message, message
        assert "\n" not in message and info.secret not in message
    finally:
        standby.stop()
        squatter.close()
    assert _our_threads(before) == []


def test_embedded_serve_of_a_served_directory_still_refuses(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with EmbeddedServer(data_dir):
        with pytest.raises(EmbeddedServerError, match="another process already serves"):
            EmbeddedServer(data_dir).start()


def test_a_new_owner_serves_on_the_port_last_used(tmp_path: Path) -> None:
    """So that programs still connected to that port reach it (an owner killed before a
    sharer took over)."""
    data_dir = tmp_path / "data"
    with EmbeddedServer(data_dir) as first:
        port = first.info.port
    with EmbeddedServer(data_dir) as second:
        assert second.info.port == port
    # Taken meanwhile: any free port.
    with socket.create_server(("127.0.0.1", port)):
        with EmbeddedServer(data_dir) as third:
            assert third.info.port != port


def test_looking_for_the_server_of_an_owner_that_ends_finds_nobody(tmp_path: Path) -> None:
    """An owner that took the lock and ended before it served (or a program that ran a
    command and exited while this one waited for it) leaves the directory to this one."""
    data_dir = tmp_path / "data"
    with EmbeddedServer(data_dir):
        pass  # the directory, its files
    found: list[object] = []

    def look() -> None:
        found.append(embedded.find_running_server(data_dir, wait=30))

    looking = threading.Thread(target=look)
    with open(data_dir / LOCK_FILE, "r+b") as owner:
        fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
        looking.start()
        time.sleep(0.3)
        assert looking.is_alive()  # locked, no server.json: it waits for the server
    looking.join(30)  # the owner ended without serving
    assert not looking.is_alive() and found == [None]


async def test_a_cancelled_start_leaves_no_server_and_frees_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A start runs in a thread, which a cancellation (Ctrl+C, a ``wait_for`` around
    ``connect()``) cannot interrupt: the start under way ends, then what it started is stopped.
    It used to be stopped first, finding nothing, and then to start a server nobody owned,
    its lock let go, for the next program to open the same database beside it."""
    before = set(threading.enumerate())
    data_dir = tmp_path / "data"
    preparing, started = threading.Event(), threading.Event()
    prepare, start = embedded.prepare_database, EmbeddedServer.start

    def slow_prepare(database: Path) -> None:
        preparing.set()
        time.sleep(0.5)
        prepare(database)

    def start_and_say(self: EmbeddedServer, **options: object) -> str:
        try:
            return start(self, **options)  # type: ignore[arg-type]
        finally:
            started.set()

    monkeypatch.setattr(embedded, "prepare_database", slow_prepare)
    monkeypatch.setattr(EmbeddedServer, "start", start_and_say)
    connecting = asyncio.create_task(connect(load_settings(data_dir=data_dir)))
    await _until(preparing.is_set, "the start prepares the database")
    connecting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await connecting
    await _until(started.is_set, "the start under way ends")

    def released() -> bool:
        return (
            not _our_threads(before)
            and _lock_is_free(data_dir)
            and not (data_dir / INFO_FILE).exists()
        )

    await _until(released, "no server left, the lock free, no server.json", deadline=30.0)


def test_a_server_that_does_not_stop_in_time_keeps_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the server's thread runs, its engine may still write the database: the lock and
    server.json stay, so that no other program (a standby) opens the file beside it, until a
    later stop() finds the thread ended."""
    before = set(threading.enumerate())
    data_dir = tmp_path / "data"
    server = EmbeddedServer(data_dir)
    server.start()
    release = threading.Event()
    close = server._server.close

    async def hanging_close() -> None:
        await close()
        release.wait(60)  # then holds the server's loop, as an engine stuck in a write would

    monkeypatch.setattr(server._server, "close", hanging_close)
    try:
        with capture_logs() as logs:
            server.stop(timeout=0.2)
        assert _our_threads(before) == ["agent-memory-embedded"]
        assert not _lock_is_free(data_dir)
        assert (data_dir / INFO_FILE).exists()
        assert server.running
        assert [e for e in logs if e["event"] == "embedded_server_stop_timed_out"]
    finally:
        release.set()
    deadline = time.monotonic() + 30
    while _our_threads(before) and time.monotonic() < deadline:
        time.sleep(0.05)
    server.stop()
    assert _our_threads(before) == [] and not server.running
    assert _lock_is_free(data_dir) and not (data_dir / INFO_FILE).exists()


def test_commands_started_at_the_same_moment_on_an_unserved_directory_all_connect(
    tmp_path: Path, offline_env: dict[str, str]
) -> None:
    """The race of item 2 with real programs: three ``agent-memory stats`` started together
    on a data directory nobody serves; one serves it, the others share its server (none fails
    with "another process already serves"). Twice, on fresh directories."""
    import subprocess

    for attempt in range(2):
        env = {**offline_env, "AGENT_MEMORY_DATA_DIR": str(tmp_path / f"data-{attempt}")}
        runs = [
            subprocess.Popen(
                [sys.executable, "-m", "agent_memory", "stats"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        try:
            for run in runs:
                out, err = run.communicate(timeout=180)
                assert run.returncode == 0, err
                assert "already serves" not in err + out
        finally:  # a failure leaves no program running, nor a pipe open, for later tests
            for run in runs:
                if run.returncode is None:
                    run.kill()
                run.communicate()

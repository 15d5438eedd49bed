"""One embedded server for the whole session; a fresh database for every test.

The server is started in this process, or, when ``AGENT_MEMORY_TEST_SERVER_URI`` is set, is
one already running elsewhere: an ``agent-memory embedded serve`` started from a Python 3.13
environment, which prints this URI (password included). That is how CI runs these tests on
Python 3.11 and 3.12, where the embedded engine (mongoeco) cannot be installed but the library
must work against a server reached by URI (``.ci/older_pythons``).
"""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient, monitoring, uri_parser
from pymongo.errors import PyMongoError

from agent_memory.config import Settings, load_settings, redact_uri
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.mongo.connection import Connection, connect
from agent_memory.mongo.embedded import EmbeddedServer, ServerInfo
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.embedders.fake import FakeEmbedder

#: Read once, at import, before each test's isolation removes it from the environment
#: (tests/conftest.py): neither the tests nor the programs they start see it.
TEST_SERVER_URI = os.environ.get("AGENT_MEMORY_TEST_SERVER_URI", "").strip() or None
#: As in tests/conftest.py: the embedded engine can run in this process.
HAS_MONGOECO = sys.version_info >= (3, 13) and importlib.util.find_spec("mongoeco") is not None


class ExternalServer:
    """The session's server when ``AGENT_MEMORY_TEST_SERVER_URI`` names one: what the tests
    use of :class:`EmbeddedServer` (``uri``, ``info``, ``running``), pointing at that server.

    It is neither started nor stopped here, and its data directory is not known here
    (``data_dir`` is ``None``). ``info.secret`` is the URI's password, so that a test can build
    a URI of its own to the server (the fault proxy); it assumes the embedded server's user.
    """

    data_dir: Path | None = None
    running = True

    def __init__(self, uri: str) -> None:
        parsed = uri_parser.parse_uri(uri)
        host, port = parsed["nodelist"][0]
        self.uri = uri
        self.info = ServerInfo(host, port, pid=0, secret=parsed["password"])

    def check(self) -> None:
        """Stop the session at once if the server does not answer: every test would fail."""
        try:
            with MongoClient(self.uri, serverSelectionTimeoutMS=10_000) as client:
                client.admin.command("ping")
        except PyMongoError as exc:
            pytest.exit(
                f"AGENT_MEMORY_TEST_SERVER_URI={redact_uri(self.uri)} does not answer: "
                f"{type(exc).__name__}",
                returncode=3,
            )


@pytest.fixture(scope="session")
def embedded_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[EmbeddedServer | ExternalServer]:
    if TEST_SERVER_URI is not None:
        server = ExternalServer(TEST_SERVER_URI)
        server.check()
        yield server
        return
    if not HAS_MONGOECO:
        pytest.skip(
            f"no embedded engine on Python {platform.python_version()} (mongoeco needs 3.13+): "
            "set AGENT_MEMORY_TEST_SERVER_URI to the URI of a running server "
            "(`agent-memory embedded serve` from Python 3.13 prints it)"
        )
    server = EmbeddedServer(Path(tmp_path_factory.mktemp("embedded")))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def own_embedded_server(tmp_path: Path) -> Iterator[EmbeddedServer]:
    """An embedded server of this test's own, in ``tmp_path / "data"`` (for tests of the
    server itself: its files, its password, what other programs see)."""
    server = EmbeddedServer(tmp_path / "data")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def settings(embedded_server: EmbeddedServer) -> Settings:
    """Settings pointing at the session's embedded server with a database of this test's own."""
    return load_settings(
        mongodb_uri=embedded_server.uri,
        database=f"t_{uuid.uuid4().hex[:12]}",
        embedder="fake",
        connect_timeout_ms=5_000,
    )


@pytest.fixture
def cli_env(embedded_server: EmbeddedServer) -> dict[str, str]:
    """Environment for a command under test: the session's server, a database of its own."""
    return {
        "MONGODB_URI": embedded_server.uri,
        "AGENT_MEMORY_DATABASE": f"cli_{uuid.uuid4().hex[:10]}",
        "AGENT_MEMORY_EMBEDDER": "fake",
    }


@pytest.fixture
async def connection(settings: Settings) -> AsyncIterator[Connection]:
    conn = await connect(settings)
    try:
        yield conn
    finally:
        await conn.client.drop_database(settings.database)
        await conn.close()


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
async def long_term(
    connection: Connection, embedder: FakeEmbedder
) -> AsyncIterator[LongTermMemory]:
    """Long-term memory on this test's database, its indexes set up; closed afterwards."""
    await IndexManager(connection, embedder.signature).setup()
    memory = LongTermMemory(connection, embedder)
    yield memory
    await memory.aclose()


class CommandCounter(monitoring.CommandListener):
    """Counts the commands a connection sends (handshakes, the authentication of a new pooled
    connection and session ends not included)."""

    IGNORED = frozenset(
        {
            "hello",
            "ismaster",
            "isMaster",
            "ping",
            "endSessions",
            "buildInfo",
            "saslStart",
            "saslContinue",
            "authenticate",
        }
    )

    def __init__(self) -> None:
        self.commands: list[str] = []
        #: The same commands whole (name, document), for tests of what a command holds.
        self.documents: list[tuple[str, dict[str, Any]]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name not in self.IGNORED:
            self.commands.append(event.command_name)
            self.documents.append((event.command_name, dict(event.command)))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    @contextmanager
    def count(self) -> Iterator[list[str]]:
        """``with counter.count() as sent:`` - ``sent`` lists the commands sent inside."""
        start = len(self.commands)
        sent: list[str] = []
        try:
            yield sent
        finally:
            sent.extend(self.commands[start:])


@pytest.fixture
async def counted(settings: Settings) -> AsyncIterator[tuple[Connection, CommandCounter]]:
    """A connection whose commands are counted: ``conn, counter = counted``."""
    counter = CommandCounter()
    conn = await connect(settings, client_options={"event_listeners": [counter]})
    try:
        yield conn, counter
    finally:
        await conn.client.drop_database(settings.database)
        await conn.close()


@pytest.fixture
def through(double, settings: Settings) -> Callable[..., Settings]:
    """Settings that reach the test's database through the Atlas double of the test's module
    (its ``double`` fixture), on the Atlas tier with the fake embedder; keyword arguments
    override any setting (``search_tier="auto"`` to let the probe decide)."""

    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "mongodb_uri": double.uri,
            "database": settings.database,
            "embedder": "fake",
            "search_tier": "atlas",
            "connect_timeout_ms": 5_000,
        }
        values.update(overrides)
        return load_settings(**values)

    return make

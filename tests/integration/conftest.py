"""One embedded server for the whole session; a fresh database for every test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pymongo import monitoring

from agent_memory.config import Settings, load_settings
from agent_memory.mongo.connection import Connection, connect
from agent_memory.mongo.embedded import EmbeddedServer
from agent_memory.providers.embedders.fake import FakeEmbedder


@pytest.fixture(scope="session")
def embedded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
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

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name not in self.IGNORED:
            self.commands.append(event.command_name)

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

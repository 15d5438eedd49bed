"""One embedded server for the whole session; a fresh database for every test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

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
def settings(embedded_server: EmbeddedServer) -> Settings:
    """Settings pointing at the session's embedded server with a database of this test's own."""
    return load_settings(
        mongodb_uri=embedded_server.uri,
        database=f"t_{uuid.uuid4().hex[:12]}",
        embedder="fake",
        connect_timeout_ms=5_000,
    )


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

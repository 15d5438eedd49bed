"""Set-up for the Atlas suite: a real Atlas or atlas-local deployment named by ``MONGODB_URI``.

Every test here is skipped, with the reason, unless ``MONGODB_URI`` is set; a server without
Atlas Search (the probe's ``$listSearchIndexes`` fails) skips the suite too. One database with
a random name serves the whole session and is dropped at the end, search indexes included.

Free and shared Atlas tiers cap the number of search indexes below what the catalog needs
(six, and six more for the drop test), so use atlas-local or a dedicated cluster. Run it
against atlas-local::

    MONGODB_INITDB_ROOT_PASSWORD='choose-one' docker compose up -d --wait
    MONGODB_URI='mongodb://agent:choose-one@127.0.0.1:27017/?directConnection=true' \\
        python -m pytest tests/atlas -q
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import pytest_asyncio

from agent_memory.config import Settings, load_settings
from agent_memory.mongo.connection import Connection, connect
from agent_memory.providers.embedders.fake import FakeEmbedder

T = TypeVar("T")

URI_VARIABLE = "MONGODB_URI"
#: Dimensions of the fake embedder the suite stores vectors with.
DIMENSIONS = 64
#: Seconds to wait for search indexes to become queryable (building on a busy cluster is slow).
INDEX_TIMEOUT = float(os.environ.get("AGENT_MEMORY_ATLAS_INDEX_TIMEOUT", "600"))
#: Seconds to wait for newly written documents to show up in search results.
SYNC_TIMEOUT = float(os.environ.get("AGENT_MEMORY_ATLAS_SYNC_TIMEOUT", "120"))

_HERE = Path(__file__).resolve().parent


def atlas_uri() -> str | None:
    value = os.environ.get(URI_VARIABLE, "").strip()
    return value or None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark this directory's tests ``atlas``, give them time for index builds, and skip them
    when no deployment is configured."""
    skip = pytest.mark.skip(
        reason=f"{URI_VARIABLE} is not set; the Atlas suite needs Atlas or atlas-local "
        "(`MONGODB_INITDB_ROOT_PASSWORD='choose-one' docker compose up -d --wait`, then export "
        "MONGODB_URI='mongodb://agent:choose-one@127.0.0.1:27017/?directConnection=true')"
    )
    # The first test that needs the indexes pays for building them (fixture time counts).
    budget = int(2 * INDEX_TIMEOUT + 6 * SYNC_TIMEOUT + 300)
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.atlas)
            item.add_marker(pytest.mark.timeout(budget))
            if atlas_uri() is None:
                item.add_marker(skip)


def _settings(database: str, **overrides: Any) -> Settings:
    uri = atlas_uri()
    assert uri is not None
    values: dict[str, Any] = {
        "mongodb_uri": uri,
        "database": database,
        "embedder": "fake",
        "embedding_dimensions": DIMENSIONS,
        "search_tier": "auto",
        "connect_timeout_ms": 20_000,
    }
    values.update(overrides)
    return load_settings(**values)


async def _eventually(
    probe: Callable[[], Awaitable[T]],
    done: Callable[[T], bool],
    *,
    timeout: float = SYNC_TIMEOUT,
    what: str = "condition",
) -> T:
    """Call ``probe`` until ``done(result)``; fail with the last result after ``timeout``.

    Atlas Search indexes documents asynchronously (mongot tails the change stream), so a
    document written a moment ago may not be searchable yet.
    """
    deadline = time.monotonic() + timeout
    delay = 0.25
    while True:
        result = await probe()
        if done(result):
            return result
        if time.monotonic() >= deadline:
            pytest.fail(f"{what} not reached within {timeout:.0f} s; last result: {result!r}")
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, 3.0)


@pytest.fixture(scope="session")
def database_name() -> str:
    """A database of this session's own; nothing else on the deployment is touched."""
    return f"agent_memory_atlas_{uuid.uuid4().hex[:12]}"


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def connection(database_name: str) -> AsyncIterator[Connection]:
    """The session's connection; skips the suite when the server has no Atlas Search."""
    conn = await connect(_settings(database_name))
    try:
        if not conn.capabilities.atlas_search:
            reason = conn.capabilities.notes.get("atlas_search", "no reason given")
            pytest.skip(
                f"the server at {URI_VARIABLE} has no Atlas Search "
                f"({conn.capabilities.describe()}): {reason}"
            )
        yield conn
    finally:
        try:
            await conn.client.drop_database(database_name)
        finally:
            await conn.close()


@pytest.fixture(scope="session")
def embedder() -> FakeEmbedder:
    """The embedder the suite's vectors come from (deterministic, offline)."""
    return FakeEmbedder(DIMENSIONS)


@pytest.fixture(scope="session")
def index_timeout() -> float:
    """Seconds ``setup``/``drop`` may take for search indexes to settle."""
    return INDEX_TIMEOUT


@pytest.fixture(scope="session")
def eventually() -> Callable[..., Awaitable[Any]]:
    """Bounded polling for eventually consistent search results: ``await eventually(probe,
    done, what=...)``."""
    return _eventually


@pytest.fixture(scope="session")
def atlas_settings() -> Callable[..., Settings]:
    """Settings for the deployment at ``MONGODB_URI``: ``atlas_settings(database, **overrides)``."""
    return _settings

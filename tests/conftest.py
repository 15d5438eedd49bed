"""Shared test set-up: no test ever reaches a real provider or a configured database."""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
from typing import Any

import pytest
import structlog

from agent_memory.providers._live import set_live_calls

# Providers still run their real SDK code against loopback stubs; anything else is refused.
set_live_calls(False)
os.environ["AGENT_MEMORY_BLOCK_LIVE_CALLS"] = "1"

_ISOLATED_ENV = (
    "MONGODB_URI",
    "AGENT_MEMORY_MONGODB_URI",
    "ANTHROPIC_API_KEY",
    "VOYAGE_API_KEY",
    "AGENT_MEMORY_EMBEDDER",
    "AGENT_MEMORY_CHAT_MODEL",
    "AGENT_MEMORY_RERANKER",
    "AGENT_MEMORY_RERANK_MODEL",
    "AGENT_MEMORY_SEARCH_TIER",
    "AGENT_MEMORY_DATA_DIR",
    "AGENT_MEMORY_DATABASE",
    # Read once by tests/integration/conftest.py when it is imported; no test or child sees it.
    "AGENT_MEMORY_TEST_SERVER_URI",
)

#: The embedded engine can run in this process: mongoeco is installed, which it is only on
#: Python 3.13+ (pyproject.toml's ``embedded`` extra).
HAS_MONGOECO = sys.version_info >= (3, 13) and importlib.util.find_spec("mongoeco") is not None
NO_MONGOECO = (
    f"runs the embedded engine (mongoeco) in this process or in a program it starts; "
    f"mongoeco needs Python 3.13+ and cannot be imported on Python {platform.python_version()}"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "mongoeco: runs the embedded engine (mongoeco, Python 3.13+) in this process or in a "
        "program it starts (an embedded server of its own, the embedded default without "
        "MONGODB_URI); skipped where mongoeco cannot be imported",
    )
    # pymongo's async connect closes its socket on a refusal or a timeout but not when the
    # connecting task is cancelled (pymongo/pool_shared.py, _async_create_connection, 4.20):
    # a client closed while its monitor connects to a server that is down leaves a socket
    # that was bound but never connected, and the garbage collector warns wherever it runs
    # next (seen in about one full run in three, attributed to whichever test ran then).
    # Only such sockets are ignored: one that names a peer (raddr) still fails the test.
    config.addinivalue_line(
        "filterwarnings",
        r"ignore:Exception ignored in. <socket\.socket fd=\d+, family=\d+, type=\d+, "
        r"proto=\d+, laddr=\('127\.0\.0\.1', \d+\)>:pytest.PytestUnraisableExceptionWarning",
    )
    if sys.version_info < (3, 12):
        # On Python 3.11 pymongo's AsyncMongoClient, closed while its monitor is connecting
        # (to a server that refused or did not answer), leaves that socket to the garbage
        # collector, which warns wherever it runs next (pymongo 4.20; PYTHON-5867). Plain
        # pymongo does it too, so it is not the library's leak: ignored on 3.11 only, and
        # 3.12 and 3.13 still fail on any unclosed socket.
        config.addinivalue_line(
            "filterwarnings",
            r"ignore:Exception ignored in. <socket\.socket:pytest.PytestUnraisableExceptionWarning",
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without mongoeco (Python 3.11 and 3.12), tests that need it are skipped, saying why.

    The rest still runs: unit tests need no server, and the integration tests reach a server
    started elsewhere through AGENT_MEMORY_TEST_SERVER_URI (tests/integration/conftest.py).
    """
    if HAS_MONGOECO:
        return
    skip = pytest.mark.skip(reason=NO_MONGOECO)
    for item in items:
        if item.get_closest_marker("mongoeco") or "own_embedded_server" in getattr(
            item, "fixturenames", ()
        ):
            item.add_marker(skip)


#: Test files that read the same recipe runs (tests/integration/recipe_runs.py: each recipe run
#: once per process): one unit of work for pytest-xdist, so that no recipe runs twice.
_RECIPE_FILES = frozenset(
    f"tests/integration/{name}.py"
    for name in ("test_recipes", "test_recipes_1_3", "test_recipes_4_6")
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pyproject.toml runs the suite on pytest-xdist workers, a test file to a worker
    (``--dist loadfile``): module fixtures are made once and a file's tests keep their order.
    The recipe test files go to one worker together. Each worker has its own embedded server
    (tests/integration/conftest.py); every test has a database of its own on it."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return "recipes" if path in _RECIPE_FILES else path

    return FileScheduling(config, log)


@pytest.fixture(autouse=True)
def _isolated_environment(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path
):
    """Unit and integration tests see none of the developer's own settings or .env file.

    The Atlas suite is the exception: it runs precisely because MONGODB_URI is set.
    """
    if "atlas" in request.node.path.parts:
        return
    for name in _ISOLATED_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env, and the default data dir lands in tmp


@pytest.fixture(autouse=True)
def _fresh_logging_configuration():
    """Commands under test configure structlog for the process; no test inherits that."""
    yield
    structlog.reset_defaults()


@pytest.fixture
def offline_env() -> dict[str, str]:
    """Environment for a subprocess run as a user would: embedded default, fake embedder, no
    live provider calls, none of the developer's own settings."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("MONGODB", "AGENT_MEMORY_"))},
        "AGENT_MEMORY_EMBEDDER": "fake",
        "AGENT_MEMORY_BLOCK_LIVE_CALLS": "1",
    }

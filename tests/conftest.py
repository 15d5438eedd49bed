"""Shared test set-up: no test ever reaches a real provider or a configured database."""

from __future__ import annotations

import os

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
)


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

"""A library is silent until its application configures logging (issue 15 item 3): the
README's agent example, run with nothing configured, prints only what the program prints;
with the standard library's logging configured, the library's events arrive there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# The app runs on the embedded default: it starts the embedded server in its own process.
pytestmark = pytest.mark.mongoeco

APP = """
import asyncio, logging, sys
if sys.argv[1:] == ["configured"]:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s|%(message)s")
from agent_memory import (AgentConfig, IndexManager, RAGAgent, connect, load_settings,
                          make_chat_model, make_embedder)

async def main():
    settings = load_settings()
    embedder, chat = make_embedder(settings), make_chat_model(settings)
    async with await connect(settings) as conn:
        await IndexManager(conn, embedder.signature).setup()
        async with RAGAgent(conn, embedder, chat, config=AgentConfig("support")) as agent:
            await agent.process_query("alice", "s1", "My name is Alice, I like window seats.")
            async for piece in agent.stream("alice", "s1", "Which seat do I like?"):
                pass
            print("done")

asyncio.run(main())
"""


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AGENT_MEMORY_", "MONGODB_"))
    }
    env.update(
        AGENT_MEMORY_DATA_DIR=str(tmp_path / "data"),
        AGENT_MEMORY_EMBEDDER="fake",
        AGENT_MEMORY_CHAT_MODEL="offline",
    )
    return subprocess.run(
        [sys.executable, "-c", APP, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=180,
    )


def test_nothing_is_printed_until_the_application_configures_logging(tmp_path: Path) -> None:
    quiet = _run(tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.splitlines() == ["done"]
    assert quiet.stderr == ""


def test_configured_standard_logging_receives_the_library_events(tmp_path: Path) -> None:
    loud = _run(tmp_path, "configured")
    assert loud.returncode == 0, loud.stderr
    assert loud.stdout.splitlines() == ["done"]
    events = [line.split("|", 1) for line in loud.stderr.splitlines() if "|" in line]
    names = {name for name, _ in events}
    messages = [message.split()[0] for _, message in events]
    assert "agent_memory.mongo.connection" in names and "database_connected" in messages
    assert all(name.startswith("agent_memory") for name in names)

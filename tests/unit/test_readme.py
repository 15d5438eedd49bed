"""README.md keeps exactly two set-up commands, and CI runs the second one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", quick_start, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_readme_has_exactly_two_commands():
    commands = _commands()
    assert len(commands) == 2
    assert commands[0].endswith("agent-memory demo")
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = _commands()[1].removeprefix("PYENV_VERSION=3.13.0 ")
    assert "PYENV_VERSION=3.13.0" in ci
    assert test_command in ci


def _run_block(section: str, tmp_path, env, *, then: str = "") -> list[str]:
    """Run the first Python block under ``section`` of README.md, followed by ``then``; return
    its output lines."""
    import subprocess
    import sys

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = readme.split(section, 1)[1].split("```python", 1)[1].split("```", 1)[0] + then
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return [line for line in result.stdout.splitlines() if line and not line.startswith("20")]


@pytest.mark.mongoeco
def test_the_python_example_runs(tmp_path, offline_env):
    lines = _run_block("## Using it from Python", tmp_path, offline_env)
    assert lines[0].startswith("Prefers a window seat")
    assert lines[-1] == "['Lives in Lisbon', 'Lives in Berlin']"


@pytest.mark.mongoeco
def test_the_agent_example_runs(tmp_path, offline_env):
    lines = _run_block("## The agent", tmp_path, offline_env)
    level, action_id, documents = lines[0].split(" ", 2)
    assert level in ("recent", "memory", "knowledge", "model") and action_id.startswith("act_")
    assert documents.startswith("(") and "[offline model]" in lines[-1]


@pytest.mark.mongoeco
def test_the_agent_example_after_the_python_example_asks_the_knowledge_base(tmp_path, offline_env):
    """Run in order in one directory with the README's default (local) embedder, as a reader
    would: the memories example 1 leaves behind must not pull example 2's refund question away
    from the refund policy."""
    env = {**offline_env, "AGENT_MEMORY_EMBEDDER": "local"}
    _run_block("## Using it from Python", tmp_path, env)
    lines = _run_block("## The agent", tmp_path, env)
    assert lines[0].split(" ", 1)[0] == "knowledge", lines


_DRIVE_THE_APP = """
import asyncio, httpx

async def drive():
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
            told = await client.post("/chat/ann/s1", params={"message": "My name is Ann"})
            asked = await client.post("/chat/ann/s1", params={"message": "What is my name?"})
            other = await client.post("/chat/bob/s2", params={"message": "What is my name?"})
            refused = [
                await client.post("/chat/ann/s1", params={"message": message})
                for message in ("", " ", "x" * 8_001)
            ]
    for response in refused:
        print("REFUSED", response.status_code, response.json())
    for response in (told, asked, other):
        print("HTTP", response.status_code, response.json()["action_id"], response.json()["answer"])

asyncio.run(drive())
"""


@pytest.mark.mongoeco
def test_the_app_example_serves_turns_with_memory(tmp_path, offline_env):
    lines = _run_block("## In your app", tmp_path, offline_env, then=_DRIVE_THE_APP)
    told, asked, other = (line.removeprefix("HTTP ").split(" ", 2) for line in lines[-3:])
    assert [told[0], asked[0], other[0]] == ["200", "200", "200"]
    assert len({told[1], asked[1], other[1]}) == 3
    assert all(action.startswith("act_") for action in (told[1], asked[1], other[1]))
    assert "Ann" in asked[2] and "Ann" not in other[2]
    # An empty or over-long message is the caller's mistake, answered 422 with the library's
    # one line by the snippet's handler (issue 35 item 12: it was a bare 500).
    refused = [line for line in lines if line.startswith("REFUSED ")]
    assert refused == [
        "REFUSED 422 {'detail': 'query is empty'}",
        "REFUSED 422 {'detail': 'query is empty'}",
        "REFUSED 422 {'detail': 'the query has 8001 characters; the limit is 8000'}",
    ]


def test_the_app_example_is_about_twenty_lines():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = readme.split("## In your app", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    assert len([line for line in code.splitlines() if line.strip()]) <= 22

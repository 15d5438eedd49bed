"""Bad input to the commands that manage the deployment: a usage error (exit 2) before anything
connects, or one clear line and an exit code, never a traceback, and nothing written."""

from __future__ import annotations

import math

import pytest
from pymongo import MongoClient
from typer.testing import CliRunner

from agent_memory.cli import app
from agent_memory.errors import InvalidInputError
from agent_memory.formation.queue import FormationQueue
from agent_memory.formation.worker import FormationWorker
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo.indexes import IndexManager


def invoke(args, env):
    return CliRunner().invoke(app, args, env=env, catch_exceptions=False)


def _collections(uri: str, database: str) -> list[str]:
    with MongoClient(uri) as client:
        return client[database].list_collection_names()


@pytest.mark.parametrize(
    "args",
    [
        ["--log-level", "loud", "indexes", "status"],
        ["--log-format", "xml", "indexes", "status"],
        ["indexes", "setup", "--timeout", "-5"],
        ["indexes", "setup", "--timeout", "soon"],
        ["indexes", "setup", "--timeout", "nan"],
        ["indexes", "setup", "--no-such-option"],
        ["indexes", "rebuild"],
        ["worker", "--poll-interval", "-1"],
        ["worker", "--poll-interval", "0"],
        ["api", "--port", "99999"],
        ["api", "--port", "-1"],
        ["embedded", "serve", "--port", "x"],
    ],
)
def test_usage_errors_exit_2_before_connecting(args, cli_env, embedded_server):
    result = invoke(args, cli_env)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    # One line, like every other error of the CLI, pointing at the help.
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert lines[0].endswith("--help')")
    assert _collections(embedded_server.uri, cli_env["AGENT_MEMORY_DATABASE"]) == []


@pytest.mark.parametrize(
    ("option", "choices"),
    [
        ("--log-level", ["debug", "info", "warning", "error"]),
        ("--log-format", ["auto", "json", "console"]),
    ],
)
def test_log_options_list_their_choices_and_take_only_those(option, choices, cli_env):
    shown = invoke(["--help"], {**cli_env, "COLUMNS": "80"}).output
    assert f"  {option} <{'|'.join(choices)}>" in shown
    for choice in choices:
        result = invoke([option, choice, "indexes", "status"], cli_env)
        assert result.exit_code == 0, (choice, result.output)
    refused = invoke([option, choices[0].upper(), "indexes", "status"], cli_env)
    assert refused.exit_code == 2
    assert refused.output == (
        f"error: Invalid value for '{option}': '{choices[0].upper()}' is not one of "
        f"{', '.join(choices)} (see 'agent-memory --help')\n"
    )


@pytest.mark.parametrize("rating", ["7", "0", "-1"])
def test_a_rating_out_of_range_is_one_line_in_the_librarys_words(rating, cli_env, embedded_server):
    """Issue 35 item 19: the command says what the feedback API and the library say."""
    result = invoke(["feedback", "act_x", "--user", "alice", "--rating", rating], cli_env)
    assert result.exit_code == 2
    assert result.output == (
        f"error: Invalid value for '--rating': rating must be an int from 1 to 5, got {rating} "
        "(see 'agent-memory feedback --help')\n"
    )
    assert _collections(embedded_server.uri, cli_env["AGENT_MEMORY_DATABASE"]) == []


@pytest.mark.parametrize("name", ["result.md", "plot.png", "result", "result.JSON.md"])
@pytest.mark.parametrize("command", ["speed", "fusion", "retrieval", "tokens", "latency"])
def test_bench_out_must_be_a_json_name(tmp_path, cli_env, command, name):
    """The table and plot are written beside --out with .md and .png: any other name would
    be overwritten by them, so it is refused before anything runs."""
    target = tmp_path / name
    target.write_text("keep me")
    result = invoke(["bench", command, "--out", str(target)], cli_env)
    shown = " ".join(result.output.replace("│", " ").split())  # the error box wraps lines
    assert result.exit_code == 2 and "must end in .json" in shown
    assert target.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_the_embedded_server_refuses_a_public_address(tmp_path):
    result = invoke(
        ["embedded", "serve", "--host", "0.0.0.0", "--data-dir", str(tmp_path)],
        {"AGENT_MEMORY_EMBEDDER": "fake"},
    )
    assert result.exit_code == 2 and "loopback" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", [["worker", "--once"], ["indexes", "validate"], ["api"]])
def test_a_server_that_is_down_is_one_line(command):
    env = {
        "MONGODB_URI": "mongodb://127.0.0.1:9/",
        "AGENT_MEMORY_CONNECT_TIMEOUT_MS": "300",
        "AGENT_MEMORY_EMBEDDER": "fake",
        "AGENT_MEMORY_API_KEYS": '{"support": "a-key-of-at-least-24-characters"}',
    }
    result = invoke(command, env)
    assert result.exit_code == 3, result.output
    assert "cannot be reached" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("value", [0, -1.0, math.nan, math.inf, "1", True])
async def test_the_library_refuses_bad_seconds(value, connection, embedder):
    before = await connection.db.list_collection_names()
    memories = MemorySystem(connection, embedder)
    with pytest.raises(InvalidInputError, match="poll_interval"):
        FormationWorker(memories, None, queue=FormationQueue(connection), poll_interval=value)
    if value != 0:  # no wait at all is a valid timeout
        with pytest.raises(InvalidInputError, match="timeout"):
            await IndexManager(connection, embedder.signature).setup(timeout=value)
    assert await connection.db.list_collection_names() == before


def test_forcing_the_atlas_tier_on_a_server_without_it_is_a_configuration_error(cli_env):
    result = invoke(["indexes", "status"], {**cli_env, "AGENT_MEMORY_SEARCH_TIER": "atlas"})
    assert result.exit_code == 2, result.output
    assert "AGENT_MEMORY_SEARCH_TIER=plain" in result.output and "Traceback" not in result.output
    # atlas-local, as suggested, starts: docker-compose.yml requires the root password. An
    # error masks every value of a variable named like a password, the example one too.
    assert "MONGODB_INITDB_ROOT_PASSWORD='***' docker compose up -d --wait" in result.output


def test_debug_shows_the_traceback_and_keeps_the_exit_code():
    env = {
        "MONGODB_URI": "mongodb://127.0.0.1:9/",
        "AGENT_MEMORY_CONNECT_TIMEOUT_MS": "300",
        "AGENT_MEMORY_EMBEDDER": "fake",
    }
    result = invoke(["--debug", "indexes", "status"], env)
    assert result.exit_code == 3  # what a script sees does not depend on --debug
    assert "Traceback" in result.output and "StorageUnavailableError" in result.output
    assert result.output.rstrip().splitlines()[-1].startswith("error:")


def test_the_api_on_a_port_in_use_is_one_line(cli_env):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**cli_env, "AGENT_MEMORY_API_KEYS": '{"support": "a-key-of-at-least-24-characters"}'}
        result = invoke(["api", "--port", str(port)], env)
    assert result.exit_code == 1, result.output
    assert f"cannot listen on 127.0.0.1:{port}" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1

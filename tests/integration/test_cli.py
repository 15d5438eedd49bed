"""The command line as a user runs it."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from pymongo import MongoClient
from typer.testing import CliRunner

from agent_memory.cli import app
from agent_memory.cli.api import listening_line
from agent_memory.config import redact_uri


def invoke(args, env):
    return CliRunner().invoke(app, args, env=env, catch_exceptions=False)


def test_indexes_setup_status_validate_drop(cli_env):
    result = invoke(["indexes", "validate"], cli_env)
    assert result.exit_code == 4 and "missing" in result.output

    result = invoke(["indexes", "setup"], cli_env)
    assert result.exit_code == 0, result.output
    assert "│ created" in result.output and "plain tier" in result.output

    result = invoke(["indexes", "setup"], cli_env)
    assert result.exit_code == 0 and "│ created" not in result.output

    result = invoke(["indexes", "validate"], cli_env)
    assert result.exit_code == 0 and "all indexes are in place" in result.output

    result = invoke(["indexes", "status"], cli_env)
    assert "tenant_type_created" in result.output and "fake/hashing-v1" in result.output

    result = invoke(["indexes", "drop", "--yes"], cli_env)
    assert result.exit_code == 0 and "dropped" in result.output
    assert invoke(["indexes", "validate"], cli_env).exit_code == 4


def test_indexes_status_on_the_plain_tier_says_the_server_has_no_atlas_search(cli_env):
    result = invoke(["indexes", "status"], cli_env)
    assert result.exit_code == 0, result.output
    tier = result.output.splitlines()[1]
    assert tier == (
        "plain tier: this server has no Atlas Search; search ranks by exact similarity and "
        "BM25 in the framework"
    )
    # The probe's refusal is no problem to report; it was once cut at its bracket.
    assert "not found with name" not in result.output
    forced = invoke(["indexes", "status"], {**cli_env, "AGENT_MEMORY_SEARCH_TIER": "plain"})
    assert forced.output.splitlines()[1].startswith(
        "plain tier (AGENT_MEMORY_SEARCH_TIER=plain): this server has no Atlas Search;"
    )


def test_index_details_are_shown_as_text(cli_env, embedded_server):
    assert invoke(["indexes", "setup"], cli_env).exit_code == 0
    with MongoClient(embedded_server.uri) as client:
        sessions = client[cli_env["AGENT_MEMORY_DATABASE"]].sessions
        sessions.drop_index("status_activity")
        sessions.create_index([("b", 1)], name="status_activity")
    result = invoke(["indexes", "status"], cli_env)
    # A detail in brackets that looks like markup ([('b', 1)] would not; [b] would) is kept.
    assert "key [('b', 1)] instead of" in " ".join(result.output.split())


def _error_line(result) -> str:
    """The one error line of a command (stderr), after whatever it printed on stdout."""
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    return errors[0]


def test_indexes_validate_says_what_to_run(cli_env, embedded_server):
    result = invoke(["indexes", "validate"], cli_env)
    assert result.exit_code == 4 and "│ missing" in result.output  # the table of problems
    assert re.fullmatch(
        r"error: \d+ indexes missing and no embedder recorded yet; "
        r"run `agent-memory indexes setup`",
        _error_line(result),
    )
    assert invoke(["indexes", "setup"], cli_env).exit_code == 0

    with MongoClient(embedded_server.uri) as client:
        sessions = client[cli_env["AGENT_MEMORY_DATABASE"]].sessions
        sessions.drop_index("status_activity")
        result = invoke(["indexes", "validate"], cli_env)
        assert result.exit_code == 4
        assert _error_line(result) == "error: 1 index missing; run `agent-memory indexes setup`"

        # Another definition under the index's name: setup alone cannot replace it.
        sessions.create_index([("elsewhere", 1)], name="status_activity")
        result = invoke(["indexes", "validate"], cli_env)
        assert result.exit_code == 4
        assert _error_line(result) == (
            "error: 1 index drifted; "
            "run `agent-memory indexes drop --yes`, then `agent-memory indexes setup`"
        )
        setup = invoke(["indexes", "setup"], cli_env)  # it says the same, as setup fails
        assert setup.exit_code == 4 and _error_line(setup) == _error_line(result)

    # What the line says to run puts it right.
    assert invoke(["indexes", "drop", "--yes"], cli_env).exit_code == 0
    assert invoke(["indexes", "setup"], cli_env).exit_code == 0
    assert invoke(["indexes", "validate"], cli_env).exit_code == 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _Lines:
    """The lines of a process's text stream as they come, read by a thread of their own: a
    select() on the stream would miss lines the first readline() already buffered (two lines
    written at once, as a busy machine delivers them)."""

    def __init__(self, stream) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            self._lines.put(line)

    def next(self, seconds: float) -> str:
        """The next line, or "" when none comes within ``seconds``."""
        try:
            return self._lines.get(timeout=seconds)
        except queue.Empty:
            return ""

    def finish(self, seconds: float = 30) -> None:
        """Wait for the stream's end (the process exited)."""
        self._thread.join(seconds)


def _wait_for_200(url: str, seconds: float = 30) -> None:
    """Wait until ``url`` answers 200: the socket listens already, the server answers once it
    started."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                assert response.status == 200
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_api_prints_the_url_it_listens_on(cli_env):
    port = _free_port()
    keys = '{"support": "a-key-of-at-least-24-characters"}'
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_memory", "api", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **cli_env, "AGENT_MEMORY_API_KEYS": keys, "PYTHONUNBUFFERED": "1"},
    )
    lines = _Lines(process.stderr)
    try:
        line = lines.next(60).strip()
        url = f"http://127.0.0.1:{port}"
        assert (
            line
            == f"serving the feedback API at {url} (OpenAPI docs at {url}/docs; Ctrl+C to stop)"
        )
        _wait_for_200(f"{url}/openapi.json")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert process.stdout.read() == ""  # stdout stays free, as with `embedded serve`
        lines.finish()
        process.stdout.close()
        process.stderr.close()


def test_the_api_start_line_brackets_an_ipv6_address():
    try:
        listener = socket.create_server(("::1", 0), family=socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with listener:
        port = listener.getsockname()[1]
        assert f" at http://[::1]:{port} (OpenAPI docs at http://[::1]:{port}/docs;" in (
            listening_line(listener)
        )


def test_embedder_change_exits_with_a_clear_line(cli_env):
    assert invoke(["indexes", "setup"], cli_env).exit_code == 0
    result = invoke(["indexes", "setup"], {**cli_env, "AGENT_MEMORY_EMBEDDING_DIMENSIONS": "64"})
    assert result.exit_code == 4
    assert "error:" in result.output and "Traceback" not in result.output


def test_unreachable_database_is_one_line_and_exit_3():
    env = {
        "MONGODB_URI": "mongodb://127.0.0.1:9/",
        "AGENT_MEMORY_CONNECT_TIMEOUT_MS": "300",
        "AGENT_MEMORY_EMBEDDER": "fake",
    }
    result = invoke(["indexes", "status"], env)
    assert result.exit_code == 3
    assert "cannot be reached" in result.output and "Traceback" not in result.output


def test_bad_configuration_exits_2():
    result = invoke(["indexes", "status"], {"AGENT_MEMORY_EMBEDDER": "openai"})
    assert result.exit_code == 2 and "choose one of" in result.output


SERVE = [sys.executable, "-m", "agent_memory", "embedded", "serve"]


@pytest.mark.mongoeco
def test_embedded_serve_exits_with_the_process_it_serves(tmp_path: Path):
    """A benchmark's server apart must not outlive a benchmark killed without a chance to
    stop it: ``--exit-with PID`` stops the server once that process is gone."""
    data_dir = tmp_path / "served"
    owner = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    process = subprocess.Popen(
        [*SERVE, "--data-dir", str(data_dir), "--exit-with", str(owner.pid)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline().startswith("mongodb://")  # serving
        assert process.poll() is None
        owner.kill()
        owner.wait(timeout=30)
        assert process.wait(timeout=60) == 0
        assert "is gone; stopping" in process.stderr.read()
    finally:
        for started in (owner, process):
            if started.poll() is None:
                started.kill()
                started.wait(timeout=30)
        owner.stdin.close()
        process.stdout.close()
        process.stderr.close()
    assert not (data_dir / "server.json").exists()


@pytest.mark.mongoeco
def test_embedded_serve_prints_its_uri_and_stops_cleanly(tmp_path: Path):
    data_dir = tmp_path / "served"
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_memory", "embedded", "serve", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        uri = process.stdout.readline().strip()
        assert uri.startswith("mongodb://agent-memory:") and "@127.0.0.1:" in uri, uri
        with MongoClient(uri, serverSelectionTimeoutMS=5_000) as client:
            client.shared.items.insert_one({"_id": 1})
            assert client.shared.items.count_documents({}) == 1
        assert (data_dir / "server.json").exists()
        # a second server for the same directory refuses and names the running one
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "agent_memory",
                "embedded",
                "serve",
                "--data-dir",
                str(data_dir),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 2 and redact_uri(uri) in second.stderr
        assert uri.split("@")[0] not in second.stderr  # the password is not printed
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        process.stdout.close()
        process.stderr.close()
    assert not (data_dir / "server.json").exists()


def _queue_sessions(cli_env, embedded_server, said: dict[str, str]) -> None:
    """For each user, a session s1 holding what they said and its formation job, due now."""
    import asyncio

    from agent_memory.config import load_settings
    from agent_memory.formation.queue import FormationQueue
    from agent_memory.memory import Tenant
    from agent_memory.memory.conversation.records import NewMessage
    from agent_memory.memory.system import MemorySystem
    from agent_memory.mongo.connection import connect
    from agent_memory.mongo.indexes import IndexManager
    from agent_memory.providers.embedders.fake import FakeEmbedder

    async def prepare():
        settings = load_settings(
            mongodb_uri=embedded_server.uri,
            database=cli_env["AGENT_MEMORY_DATABASE"],
            embedder="fake",
        )
        async with await connect(settings) as conn:
            embedder = FakeEmbedder()
            await IndexManager(conn, embedder.signature).setup()
            memories = MemorySystem(conn, embedder)
            for user, text in said.items():
                tenant = Tenant("agent", user)
                await memories.conversation.append_turn(tenant, "s1", [NewMessage.user(text)])
                await FormationQueue(conn, debounce_seconds=0).schedule(tenant, "s1")
            await memories.aclose()

    asyncio.run(prepare())


def test_worker_once_forms_due_memories(cli_env, embedded_server):
    _queue_sessions(cli_env, embedded_server, {"ann": "my name is Ann"})
    result = invoke(["worker", "--once"], cli_env)
    assert result.exit_code == 0, result.output
    assert "formed memories for 1 job\n" in result.output
    again = invoke(["worker", "--once"], cli_env)
    assert "formed memories for 0 jobs\n" in again.output


def test_the_worker_logs_one_line_per_job_at_the_default_level(cli_env, embedded_server):
    _queue_sessions(cli_env, embedded_server, {"ann": "my name is Ann", "bob": "hello there"})
    result = invoke(["worker", "--once"], cli_env)
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    formed = [event for event in events if event["event"] == "memories_formed"]
    # one per job, the one that found nothing to remember included; nothing else at info
    assert sorted(event["facts"] for event in formed) == [0, 1]
    assert all(event["messages"] == 1 and event["level"] == "info" for event in formed)
    assert [event for event in events if event["level"] == "info"] == formed
    _queue_sessions(cli_env, embedded_server, {"cy": "my name is Cy"})
    quiet = invoke(["--log-level", "error", "worker", "--once"], cli_env)
    assert "formed memories for 1 job" in quiet.output and "memories_formed" not in quiet.output


def test_bench_retrieval_writes_json_table_and_plot(cli_env, tmp_path: Path):
    from tests.integration.test_bench_retrieval import _two_conversations

    dataset = _two_conversations(tmp_path / "locomo.json")
    out = tmp_path / "results" / "retrieval.json"
    result = invoke(["bench", "retrieval", "--dataset", str(dataset), "--out", str(out)], cli_env)
    assert result.exit_code == 0, result.output
    assert "| agent_memory retrieve |" in result.output and "| BM25, bm25s" in result.output
    from agent_memory.cli.bench import _commit

    data = json.loads(out.read_text())
    assert data["questions"] == 4
    # The code measured is on record, as for the other benchmarks (in a git checkout).
    assert data.get("commit") == _commit()
    if data.get("commit"):
        assert f"Commit {data['commit']}." in out.with_suffix(".md").read_text()
    assert out.with_suffix(".png").is_file() and out.with_suffix(".md").is_file()
    missing = invoke(["bench", "retrieval", "--dataset", str(tmp_path / "nope.json")], cli_env)
    assert missing.exit_code == 2 and "no dataset" in missing.output


def test_bench_tokens_writes_json_table_and_plot(cli_env, tmp_path: Path):
    from tests.integration.test_bench_tokens import _dataset

    dataset = _dataset(tmp_path / "locomo.json", sessions=2, turns=6)
    out = tmp_path / "results" / "tokens.json"
    args = ["bench", "tokens", "--dataset", str(dataset), "--out", str(out), "--questions", "2"]
    result = invoke(args, cli_env)
    assert result.exit_code == 0, result.output
    assert "| agent turn | session | prompt tokens |" in result.output
    data = json.loads(out.read_text())
    assert data["questions"] == 2 and data["over_budget"] == 0 and data["agent_turns"] == 6
    assert out.with_suffix(".png").is_file() and out.with_suffix(".md").is_file()
    unknown = invoke([*args, "--conversation", "conv-x"], cli_env)
    assert unknown.exit_code != 0 and "no conversation 'conv-x'" in unknown.output
    assert "Traceback" not in unknown.output
    missing = invoke(["bench", "tokens", "--dataset", str(tmp_path / "nope.json")], cli_env)
    assert missing.exit_code == 2 and "no dataset" in missing.output


def test_bench_concurrency_and_latency_commands(cli_env, tmp_path: Path):
    out = tmp_path / "c.json"
    result = invoke(
        [
            "bench",
            "concurrency",
            "--sessions",
            "3",
            "--turns",
            "2",
            "--chat-ms",
            "5",
            "--out",
            str(out),
        ],
        cli_env,
    )
    assert result.exit_code == 0, result.output
    assert "nothing lost or crossed" in result.output and json.loads(out.read_text())["ok"]
    written = json.loads(out.read_text())
    assert written["server"] == "server at MONGODB_URI" and written["embedder"].startswith("fake")
    bad = invoke(["bench", "latency", "--ttft-ms", "500", "--chat-ms", "100"], cli_env)
    assert bad.exit_code == 2 and "--chat-ms" in bad.output


def test_console_prints_its_url_and_a_token_that_signs_in(cli_env):
    """Without API keys the command prints a one-time token; the console it serves (the
    memories wired from the settings) takes it and shows the agents."""
    port = _free_port()
    env = {k: v for k, v in {**os.environ, **cli_env}.items() if k != "AGENT_MEMORY_API_KEYS"}
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_memory", "console", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, "PYTHONUNBUFFERED": "1"},
    )
    lines = _Lines(process.stderr)
    try:
        url = f"http://127.0.0.1:{port}"
        first = lines.next(60).strip()
        assert first == f"serving the memory console at {url} (Ctrl+C to stop)"
        second = lines.next(30).strip()
        assert second.startswith("sign in with this run's token")
        token = second.rsplit(" ", 1)[1]
        _wait_for_200(f"{url}/login")
        jar = urllib.request.HTTPCookieProcessor()
        opener = urllib.request.build_opener(jar)
        body = urllib.parse.urlencode({"secret": token}).encode()
        with opener.open(f"{url}/login", data=body, timeout=30) as response:
            assert response.status == 200 and "<h2>Agents</h2>" in response.read().decode()
        wrong = urllib.parse.urlencode({"secret": token + "x"}).encode()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{url}/login", data=wrong, timeout=30)
        refused.value.close()
        assert refused.value.code == 401
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert process.stdout.read() == ""
        lines.finish()
        process.stdout.close()
        process.stderr.close()

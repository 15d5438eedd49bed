"""``served_apart`` waits for the server it started, however slowly it starts: a server that
holds the data directory's lock but does not answer yet is still starting (a busy machine),
not another process's."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_memory.bench import _server
from agent_memory.config import load_settings
from agent_memory.errors import EmbeddedServerError


class _Started:
    pid = 4242

    def poll(self) -> None:
        return None  # running

    def send_signal(self, signal: int) -> None:
        self.signalled = signal

    def wait(self, timeout: float | None = None) -> int:
        return 0


def test_a_server_still_starting_is_waited_for(monkeypatch, tmp_path: Path):
    answers = iter(
        [None]  # before starting: nobody serves the directory
        + ["locked"] * 3  # ours holds the lock, not answering yet
        + ["info"]
    )

    def find(data_dir: Path, *, wait: float = 5.0):
        answer = next(answers)
        if answer == "locked":
            raise EmbeddedServerError("locked by another process whose server does not answer")
        return answer

    process = _Started()
    monkeypatch.setattr(_server, "find_running_server", find)
    monkeypatch.setattr(_server.subprocess, "Popen", lambda *a, **k: process)
    monkeypatch.setattr(_server.time, "sleep", lambda seconds: None)
    settings = load_settings(mongodb_uri=None, data_dir=tmp_path)
    with _server.served_apart(settings) as pid:
        assert pid == 4242
    assert next(answers, "none left") == "none left"  # it asked until the server answered


def test_a_server_that_never_answers_ends_at_the_deadline(monkeypatch, tmp_path: Path):
    def find(data_dir: Path, *, wait: float = 5.0):
        find.calls += 1
        if find.calls == 1:
            return None
        raise EmbeddedServerError("locked by another process whose server does not answer")

    find.calls = 0
    monkeypatch.setattr(_server, "find_running_server", find)
    monkeypatch.setattr(_server.subprocess, "Popen", lambda *a, **k: _Started())
    settings = load_settings(mongodb_uri=None, data_dir=tmp_path)
    with pytest.raises(EmbeddedServerError, match=r"did not start in 0\.2 s"):
        with _server.served_apart(settings, timeout=0.2):
            pass

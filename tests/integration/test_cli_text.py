"""What the command line says: help that is whole at any width, on a terminal or in a pipe,
and counts with their noun in the right number."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from agent_memory.cli import app
from agent_memory.cli._app import noun, plural
from agent_memory.cli.indexes import what_to_run
from agent_memory.mongo.indexes import IndexState

HELP = [
    [],
    ["feedback"],
    ["decay"],
    ["forget"],
    ["stats"],
    ["worker"],
    ["api"],
    ["chat"],
    ["demo"],
    ["indexes"],
    ["indexes", "setup"],
    ["embedded", "serve"],
    ["bench"],
    ["bench", "retrieval"],
    ["bench", "soak"],
]


def _command(path: list[str]):
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


def _flat(text: str) -> str:
    """Help text as one line: wrapped lines joined, a word broken after a hyphen mended."""
    return " ".join(re.sub(r"-\n\s+", "-", text).replace("\b", "").split())


def _first_sentence(text: str) -> str:
    paragraph = _flat(text.split("\n\n")[0])
    found = re.match(r"(.+?\.)(\s|$)", paragraph)
    return found.group(1) if found else paragraph


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("path", HELP, ids=lambda path: " ".join(path) or "agent-memory")
def test_help_is_whole_and_fits_the_width(path, columns):
    """Every option name, every help text and every command's summary is shown whole,
    wrapped between words to the width: nothing cut (``--idempotency-k…``, ``...``)."""
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    shown = result.output
    assert "…" not in shown
    assert max(len(line) for line in shown.splitlines()) <= columns, shown
    flat = _flat(shown)
    command = _command(path)
    assert _flat(command.help or "") in flat
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        for name in [*param.opts, *param.secondary_opts]:
            if name.startswith("-"):
                assert re.search(rf"(^|[\s,/]){re.escape(name)}($|[\s,=])", shown), name
        if getattr(param, "help", None):
            assert _flat(param.help) in flat, param.help
    for name, sub in getattr(command, "commands", {}).items():
        assert re.search(rf"^  {re.escape(name)} ", shown, re.MULTILINE), name
        assert _first_sentence(sub.help or "") in flat, name


def test_help_in_a_pipe_is_whole():
    """`agent-memory feedback --help | cat`: no terminal, no COLUMNS."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    shown = subprocess.run(
        [sys.executable, "-m", "agent_memory", "feedback", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    ).stdout
    assert "  --idempotency-key <str>" in shown and "…" not in shown
    assert "Retrying with the same key does not count twice." in _flat(shown)
    assert max(len(line) for line in shown.splitlines()) <= 80


def test_an_indented_paragraph_is_kept_as_written():
    result = CliRunner().invoke(app, ["decay", "--help"], env={"COLUMNS": "60"})
    assert "\n      17 3 * * *  agent-memory --log-format json decay\n" in result.output


@pytest.mark.parametrize(
    ("count", "expected"),
    [(0, "0 memories"), (1, "1 memory"), (2, "2 memories"), (-1, "-1 memories")],
)
def test_plural(count, expected):
    assert plural(count, "memory", "memories") == expected


def test_plural_defaults_to_an_s():
    assert plural(1, "job") == "1 job" and plural(3, "job") == "3 jobs"
    assert noun(1, "agent") == "agent" and noun(2, "agent") == "agents"
    assert plural(1, "index", "indexes") == "1 index"


def _state(kind: str, state: str, detail: str = "") -> IndexState:
    return IndexState("memories", f"{kind}_{state}", kind, state, detail)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("problems", "expected"),
    [
        (
            [_state("regular", "missing"), _state("embedding", "missing")],
            "1 index missing and no embedder recorded yet; run `agent-memory indexes setup`",
        ),
        (
            [_state("embedding", "missing")],
            "no embedder recorded yet; run `agent-memory indexes setup`",
        ),
        (
            [_state("vectorSearch", "drift"), _state("regular", "missing")],
            "2 indexes not in place (1 missing, 1 drifted); "
            "run `agent-memory indexes setup --update`",
        ),
        (
            [_state("search", "failed")],
            "1 index failed; "
            "run `agent-memory indexes drop --yes`, then `agent-memory indexes setup`",
        ),
        (
            [_state("text", "drift"), _state("search", "drift"), _state("regular", "drift")],
            "3 indexes drifted; "
            "run `agent-memory indexes drop --yes`, then `agent-memory indexes setup`",
        ),
    ],
)
def test_what_to_run(problems, expected):
    assert what_to_run(problems) == expected


def test_a_changed_embedder_is_said_first():
    problems = [
        _state("regular", "missing"),
        _state("embedding", "drift", "data was embedded with a/b (8 dims), the configured ..."),
    ]
    assert what_to_run(problems) == (
        "the embedder changed: data was embedded with a/b (8 dims), the configured ..."
    )


def test_maintenance_and_decay_summaries_count_in_words():
    from datetime import UTC, datetime

    from agent_memory.memory.long_term.decay import DecayReport
    from agent_memory.ops.maintenance import MaintenanceReport

    now = datetime.now(UTC)
    decay = DecayReport("run", None, "2026-11-24", 1, 1, False, now, now)
    assert decay.summary().endswith("decayed 1 memory")
    report = MaintenanceReport(None, False, True, decay, 0, 0, 1, 1, 0, 0, False, None, None, 0.1)
    line = report.summary()
    assert "decayed 1 of 1 eligible memory" in line and "(1 message)" in line

"""The floors of docs/architecture.md hold: no module imports from a floor above its own.

The contract lives in pyproject.toml (``[tool.importlinter]``) and is checked by import-linter,
which reads the imports of the package as written, lazy ones inside functions included.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports over the package found first on the path from ``root``."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))",
        ],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_no_module_imports_from_a_floor_above():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" in result.stdout and "0 broken" in result.stdout


def test_an_import_running_up_the_floors_is_caught(tmp_path):
    # The contract must be able to fail: the ground floor importing the agent breaks it.
    shutil.copytree(
        ROOT / "agent_memory",
        tmp_path / "agent_memory",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    checks = tmp_path / "agent_memory" / "checks.py"
    checks.write_text(checks.read_text() + "\nfrom agent_memory.agent import rag_agent  # noqa\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "agent_memory.checks -> agent_memory.agent.rag_agent" in result.stdout

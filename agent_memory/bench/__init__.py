"""Benchmarks that run the framework's own code paths (``agent-memory bench ...``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["write_result", "write_with_plot"]


def write_result(out: Path, data: dict[str, Any], table: str) -> Path:
    """Write ``data`` as JSON to ``out`` and ``table`` (markdown) beside it; returns the
    table's path. Missing folders are created."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    markdown = out.with_suffix(".md")
    markdown.write_text(table, encoding="utf-8")
    return markdown


def write_with_plot(
    out: Path, data: dict[str, Any], table: str, plot: Callable[[Path], None]
) -> tuple[Path, Path]:
    """:func:`write_result`, and ``plot`` drawn as a PNG beside it; returns both paths."""
    markdown = write_result(out, data, table)
    image = out.with_suffix(".png")
    plot(image)
    return markdown, image

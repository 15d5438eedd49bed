"""Counts in words, for what the CLI and the maintenance job print."""

from __future__ import annotations

__all__ = ["noun", "plural"]


def noun(count: int, one: str, many: str | None = None) -> str:
    """The noun for ``count`` things: ``memory`` for 1, ``memories`` otherwise (``many``
    defaults to ``one`` + "s")."""
    return one if count == 1 else many or f"{one}s"


def plural(count: int, one: str, many: str | None = None) -> str:
    """A count with its noun: ``1 memory``, ``0 memories``, ``2 memories``."""
    return f"{count} {noun(count, one, many)}"

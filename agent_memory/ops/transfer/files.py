"""Export files on disk: created private, gzip when asked, read gzip or not."""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path
from typing import IO

from agent_memory.errors import InvalidInputError

__all__ = ["COMPRESSION", "open_input", "open_output"]

#: gzip's level: 9 (its default) took a fifth of an export's time for a few percent less
#: size (vectors in base64 compress little at any level).
COMPRESSION = 3


class _OwningGzip(gzip.GzipFile):
    """A gzip stream over a file it closes with itself (``GzipFile`` leaves a file it was
    handed open)."""

    def __init__(self, raw: IO[bytes], mode: str) -> None:
        super().__init__(fileobj=raw, mode=mode, compresslevel=COMPRESSION)
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def _private(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


def open_output(path: str | Path, *, compress: bool) -> IO[str]:
    """A new text file to write an export to (refused if it exists: ``FileExistsError``),
    readable by its owner only (an export holds users' data); gzip with ``compress``."""
    raw = open(path, "xb", opener=_private)
    try:
        binary: IO[bytes] = _OwningGzip(raw, "wb") if compress else raw
    except BaseException:
        raw.close()
        raise
    return io.TextIOWrapper(binary, encoding="utf-8", newline="\n")


def open_input(path: str | Path) -> IO[str]:
    """An export file as text, gzip or not (read from its first bytes, not its name)."""
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror}") from None
    try:
        compressed = raw.peek(2)[:2] == b"\x1f\x8b"
        binary: IO[bytes] = _OwningGzip(raw, "rb") if compressed else raw
    except BaseException:
        raw.close()
        raise
    return io.TextIOWrapper(binary, encoding="utf-8", errors="strict", newline="\n")

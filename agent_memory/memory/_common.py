"""What every memory store shares: the tenant, input validation, ids, time, background writes.

Values from callers are checked here before anything is written, so a bad value is a clear
:class:`~agent_memory.errors.InvalidInputError` and never a half-done write. Ids and other
strings from users are only ever used as values under ``$eq``-style comparisons; mapping keys
from users are checked so they cannot become operators (``$...``) or paths (``a.b``).
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import bson
import structlog

from agent_memory.errors import InvalidInputError

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_ID_CHARS",
    "BackgroundWrites",
    "Tenant",
    "check_count",
    "check_document_size",
    "check_id",
    "check_ids",
    "check_importance",
    "check_mapping",
    "check_text",
    "new_id",
    "utcnow",
]

logger = structlog.get_logger(__name__)

#: MongoDB's document limit is 16 MiB; leave room for the fields the framework adds.
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024 - 64 * 1024
MAX_ID_CHARS = 256
MAX_NESTING = 32


def utcnow() -> datetime:
    """Now, in UTC, at the millisecond precision BSON stores (so round trips compare equal)."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def new_id(prefix: str) -> str:
    """A new unique string id such as ``mem_3f2a...`` (the prefix says what it names)."""
    return f"{prefix}_{uuid.uuid4().hex}"


def check_id(value: Any, name: str) -> str:
    """A caller-supplied id: a non-empty ``str`` of printable characters, at most 256 long."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, got {type(value).__name__}")
    if not value or not value.strip():
        raise InvalidInputError(f"{name} is empty")
    if len(value) > MAX_ID_CHARS:
        raise InvalidInputError(f"{name} is longer than {MAX_ID_CHARS} characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise InvalidInputError(f"{name} contains control characters")
    _check_encodable(value, name)
    return value


def _check_encodable(value: str, name: str) -> None:
    """Refuse what BSON cannot hold: a lone surrogate (what undecodable bytes become with
    ``errors="surrogateescape"``) would otherwise fail deep inside the driver."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{name} is not valid Unicode text (a lone surrogate at {exc.start})"
        ) from None


def check_ids(value: str | Sequence[str] | None, name: str) -> list[str] | None:
    """One id or a non-empty list of ids (each checked), as a list; ``None`` stays ``None``."""
    if value is None:
        return None
    items = (
        [value]
        if isinstance(value, str)
        else list(value)
        if isinstance(value, Sequence)
        else [value]
    )
    if not items:
        raise InvalidInputError(f"{name} is an empty list")
    return [check_id(item, name) for item in items]


def check_count(value: Any, name: str, *, maximum: int) -> int:
    """An ``int`` (not a bool) from 1 to ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidInputError(f"{name} must be an int from 1 to {maximum}")
    return value


def check_text(value: Any, name: str, *, max_chars: int) -> str:
    """Text content: a ``str`` that is not blank and not longer than ``max_chars``."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInputError(f"{name} is empty")
    if len(value) > max_chars:
        raise InvalidInputError(f"{name} has {len(value)} characters; the limit is {max_chars}")
    if "\x00" in value:
        raise InvalidInputError(f"{name} contains a NUL character")
    _check_encodable(value, name)
    return value


def check_importance(value: Any, name: str = "importance") -> float:
    """A number from 0 to 1 (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{name} must be a number from 0 to 1, got {type(value).__name__}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise InvalidInputError(f"{name} must be from 0 to 1, got {value!r}")
    return float(value)


def check_seconds(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """A finite number of seconds, above zero (or zero with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        floor = "0 or more" if allow_zero else "above 0"
        raise InvalidInputError(f"{name} must be a finite number of seconds {floor}, got {value!r}")
    return float(value)


def _check_value(value: Any, where: str, depth: int) -> None:
    if depth > MAX_NESTING:
        raise InvalidInputError(f"{where} is nested deeper than {MAX_NESTING} levels")
    if value is None or isinstance(value, bool | str | int | datetime | bytes):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
            raise InvalidInputError(f"{where} is an integer too large for BSON")
        if isinstance(value, str) and "\x00" in value:
            raise InvalidInputError(f"{where} contains a NUL character")
        if isinstance(value, str):
            _check_encodable(value, where)
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{where} is NaN or infinite")
        return
    if isinstance(value, Mapping):
        check_mapping(value, where, _depth=depth + 1)
        return
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check_value(item, f"{where}[{index}]", depth + 1)
        return
    raise InvalidInputError(
        f"{where} has a value of type {type(value).__name__} that cannot be stored"
    )


def check_mapping(value: Any, name: str, *, _depth: int = 0) -> dict[str, Any]:
    """A mapping safe to store: keys are non-empty strings without ``$`` at the start, without
    ``.`` and NUL; values are BSON scalars, lists or mappings of the same, finite numbers."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{name} must be a mapping, got {type(value).__name__}")
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"{name} has a key that is not a non-empty str: {key!r}")
        if key.startswith("$") or "." in key or "\x00" in key:
            raise InvalidInputError(
                f"{name} has the key {key!r}; keys may not start with '$' or contain '.'"
            )
        _check_encodable(key, f"a key of {name}")
        _check_value(item, f"{name}.{key}", _depth)
    return dict(value)


def check_document_size(document: Mapping[str, Any], what: str) -> None:
    """Refuse a document MongoDB would refuse (16 MiB), before anything is written."""
    size = len(bson.encode(document))
    if size > MAX_DOCUMENT_BYTES:
        raise InvalidInputError(
            f"{what} would be {size / 1_048_576:.1f} MiB; MongoDB stores at most 16 MiB per document"
        )


@dataclass(frozen=True, slots=True)
class Tenant:
    """Whose data an operation touches. Every read and write filters on both fields."""

    agent_id: str
    user_id: str

    def __post_init__(self) -> None:
        check_id(self.agent_id, "agent_id")
        check_id(self.user_id, "user_id")

    def filter(self) -> dict[str, str]:
        return {"agent_id": self.agent_id, "user_id": self.user_id}


class BackgroundWrites:
    """Writes the caller should not wait for (access statistics, touch timestamps).

    Each is a tracked task; a failure is logged, never raised into an unrelated caller.
    :meth:`drain` waits for what is pending, for clean shutdown and for tests.
    """

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def schedule(self, operation: Awaitable[Any], what: str) -> None:
        task = asyncio.ensure_future(operation)
        self._tasks.add(task)

        def done(finished: asyncio.Task[Any]) -> None:
            self._tasks.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                logger.warning(
                    "background_write_failed",
                    what=what,
                    error=type(finished.exception()).__name__,
                    detail=str(finished.exception())[:200],
                )

        task.add_done_callback(done)

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def drain(self, timeout: float | None = 10.0) -> None:
        """Wait for pending writes (up to ``timeout`` seconds), then cancel what is left."""
        if not self._tasks:
            return
        tasks = set(self._tasks)
        _, still_running = await asyncio.wait(tasks, timeout=timeout)
        for task in still_running:
            task.cancel()
        if still_running:
            await asyncio.gather(*still_running, return_exceptions=True)

"""Checks on values from callers, and how an error message shows such a value.

Values from callers are checked before anything is written, so a bad value is a clear
:class:`~agent_memory.errors.InvalidInputError` and never a half-done write. Ids and other
strings from users are only ever used as values under ``$eq``-style comparisons; mapping keys
from users are checked so they cannot become operators (``$...``) or paths (``a.b``).

This module is on the ground floor: it imports nothing of the framework but its errors.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import bson
import numpy as np

from agent_memory.errors import InvalidInputError

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_ID_CHARS",
    "check_count",
    "check_document_size",
    "check_event_time",
    "check_id",
    "check_ids",
    "check_importance",
    "check_int",
    "check_mapping",
    "check_number",
    "check_seconds",
    "check_text",
    "check_vector",
    "clipped",
    "is_int",
    "is_number",
    "shown",
]

#: MongoDB's document limit is 16 MiB; leave room for the fields the framework adds.
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024 - 64 * 1024
MAX_ID_CHARS = 256
MAX_NESTING = 32
#: How far ahead of this machine's clock an event time may be: another machine's clock drifts.
EVENT_CLOCK_SKEW = timedelta(minutes=5)
#: How much of a caller's value an error message repeats.
SHOWN_CHARS = 80

# Bounded at every level, so showing a megabyte string or a 10,000-item list costs little.
# Set by attribute: Repr() takes keyword arguments only from Python 3.12.
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 3, SHOWN_CHARS, SHOWN_CHARS, 40
for _kind in ("maxtuple", "maxlist", "maxarray", "maxdict", "maxset", "maxfrozenset", "maxdeque"):
    setattr(_REPR, _kind, 6)


def clipped(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` cut to about ``limit`` characters (with how long it was), for messages."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def shown(value: Any) -> str:
    """A caller's value as an error message echoes it: a short repr (at most ~80 characters),
    so a huge value never makes a huge message or log line."""
    try:
        text = _REPR.repr(value)
    except Exception:  # a hostile __repr__ is still only the caller's value
        text = f"<{type(value).__name__}>"
    return text if len(text) <= SHOWN_CHARS else f"{text[: SHOWN_CHARS - 3]}..."


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


def is_int(value: Any) -> bool:
    """An ``int`` that is not a ``bool`` (``True`` is an ``int`` to Python, never a count here)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """An ``int`` or a ``float``, not a ``bool``. A type test only: NaN and infinity are numbers
    here; :func:`check_number` is what refuses them."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond any float
        return False


def _bound(number: float) -> str:
    return str(number) if is_int(number) else f"{number:g}"


def _bounds(minimum: float | None, maximum: float | None, above: float | None) -> str:
    """The range in a message: "from 1 to 5", ">= 0", "> 0", "<= 8", "> 0 and <= 1"."""
    if minimum is not None and maximum is not None:
        return f" from {_bound(minimum)} to {_bound(maximum)}"
    parts = []
    if minimum is not None:
        parts.append(f">= {_bound(minimum)}")
    if above is not None:
        parts.append(f"> {_bound(above)}")
    if maximum is not None:
        parts.append(f"<= {_bound(maximum)}")
    return " " + " and ".join(parts) if parts else ""


def check_int(
    value: Any,
    name: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    error: type[Exception] = InvalidInputError,
) -> int:
    """An ``int`` (not a bool, not a float, not a str) from ``minimum`` to ``maximum``, both
    included when given. Else ``error`` (a configuration's checks pass
    :class:`~agent_memory.errors.ConfigurationError`) saying so and echoing the value."""
    if (
        not is_int(value)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        raise error(f"{name} must be an int{_bounds(minimum, maximum, None)}, got {shown(value)}")
    return value


def check_number(
    value: Any,
    name: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    finite: bool = True,
    error: type[Exception] = InvalidInputError,
) -> float:
    """An ``int`` or ``float`` (not a bool) from ``minimum`` (included) or ``above`` it
    (excluded) to ``maximum`` (included), when given. NaN is always refused; infinity (and an
    int too large for a float) too, unless ``finite=False``. Returns the value as given: an
    ``int`` stays an ``int``. Else ``error`` saying so and echoing the value."""
    if minimum is not None and above is not None:
        raise TypeError("give minimum or above, not both")
    if (
        not is_number(value)
        or value != value  # NaN
        or (finite and not _finite(value))
        or (minimum is not None and not value >= minimum)
        or (above is not None and not value > above)
        or (maximum is not None and not value <= maximum)
    ):
        kind = "a finite number" if finite else "a number"
        bounds = _bounds(minimum, maximum, above)
        raise error(f"{name} must be {kind}{bounds}, got {shown(value)}")
    return value


def check_count(value: Any, name: str, *, maximum: int, minimum: int = 1) -> int:
    """A count: an ``int`` (not a bool) from ``minimum`` (1 unless given) to ``maximum``."""
    return check_int(value, name, minimum=minimum, maximum=maximum)


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
    """A finite number from 0 to 1 (bools are not numbers here), as a ``float``."""
    return float(check_number(value, name, minimum=0, maximum=1))


def check_moment(value: Any, name: str) -> datetime:
    """A timezone-aware ``datetime``, returned in UTC to the millisecond (what a BSON date
    keeps, so a value compares the same before and after it is stored)."""
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(f"{name} must be a timezone-aware datetime")
    try:
        moment = value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidInputError(f"{name} is out of range") from None
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def check_event_time(value: Any, name: str, *, now: datetime | None = None) -> datetime:
    """When something happened: :func:`check_moment`, and not later than ``now`` (this
    machine's clock unless given) by more than ``EVENT_CLOCK_SKEW``."""
    moment = check_moment(value, name)
    if moment > (now or datetime.now(UTC)) + EVENT_CLOCK_SKEW:
        raise InvalidInputError(f"{name} is in the future: it says when something happened")
    return moment


def check_seconds(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """A finite number of seconds, above zero (or zero with ``allow_zero``), as a ``float``."""
    if allow_zero:
        return float(check_number(value, name, minimum=0))
    return float(check_number(value, name, above=0))


def _check_value(value: Any, where: str, depth: int) -> None:
    if depth > MAX_NESTING:
        raise InvalidInputError(f"{where} is nested deeper than {MAX_NESTING} levels")
    if value is None or isinstance(value, bool | str | int | datetime | bytes):
        if is_int(value) and abs(value) >= 2**63:
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
            raise InvalidInputError(f"{name} has a key that is not a non-empty str: {shown(key)}")
        if key.startswith("$") or "." in key or "\x00" in key:
            raise InvalidInputError(
                f"{name} has the key {shown(key)}; keys may not start with '$' or contain '.'"
            )
        _check_encodable(key, f"a key of {name}")
        _check_value(item, f"{name}.{clipped(key)}", _depth)
    return dict(value)


def check_vector(value: Any, name: str, *, dimensions: int) -> np.ndarray:
    """A caller's embedding: ``dimensions`` finite numbers (as float32), so a wrong one is
    refused here and not deep inside a search."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInputError(f"{name} must be a sequence of numbers") from exc
    # Numbers only: numpy would also read "1.5" as a number, and True as 1.
    if raw.dtype.kind not in "iuf":
        raise InvalidInputError(f"{name} must be a sequence of numbers, got {type(value).__name__}")
    with np.errstate(over="ignore"):  # a number beyond float32 becomes inf, refused below
        vector = raw.astype(np.float32)
    if vector.shape != (dimensions,):
        raise InvalidInputError(
            f"{name} has shape {clipped(str(vector.shape))}; the embedder makes vectors of "
            f"{dimensions} dimensions"
        )
    if not np.isfinite(vector).all():
        raise InvalidInputError(f"{name} contains NaN or infinity (or a number too large)")
    return vector


def check_document_size(document: Mapping[str, Any], what: str) -> None:
    """Refuse a document MongoDB would refuse (16 MiB), before anything is written."""
    size = len(bson.encode(document))
    if size > MAX_DOCUMENT_BYTES:
        raise InvalidInputError(
            f"{what} would be {size / 1_048_576:.1f} MiB; MongoDB stores at most 16 MiB per document"
        )

"""Which of the engine's cached collection facts a newly written document leaves true.

mongoeco plans a read from facts about the collection it probes for ("does any document hold
an array at ``tags``?", "a real number at ``seq``?", "a tagged decimal at ``user_id``?",
"are all ``seq`` values of one type?"). Each probe is a query over the whole collection, and
every write used to forget every fact of its collection, so the next read probed again: up to
a dozen full scans per read after each write, a cost that grows with the collection.

A fact of the form "some document has P" can only become true by a write of a document that
has P, so the written document alone decides whether it still holds; a fact "every document
has P" stays true exactly when the written document has P too. Removals never make such a
fact wrong in the unsafe direction: every fact that is true makes the engine take its slower,
general path. :func:`still_holds` reads the written document as stored (the engine's JSON,
with tagged values as ``{"$mongoeco": {"type": ..., "value": ...}}``) and answers with the
fact's new value, or ``None`` when it cannot tell, in which case the fact is forgotten as
before. Paths follow SQLite's JSON path rules as the engine writes them (``a.b`` is
``$.a.b``, a segment of digits is an array index).

A write that changes only some top-level fields of a document (the access statistics the
counters path writes) leaves every fact about the other fields as it was: :func:`fields_written`
tells the trigger so, with the stored JSON of those fields alone, and the facts about them are
read from that small document instead of parsing the whole one (a memory's vector and texts)
in the interpreter the application's retrieves run in.
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
from collections.abc import Collection, Iterator
from typing import Any

__all__ = [
    "SORT_SHAPE",
    "SORT_SHAPE_TAGS",
    "TEXT_AT",
    "UNKNOWN",
    "about_fields",
    "fact_field",
    "fields_written",
    "json_type",
    "partial_write",
    "still_holds",
]

#: The marker and keys of a tagged value in the engine's stored JSON.
_MARKER, _TYPE = "$mongoeco", "type"
#: Segments a path may have for this module to resolve it exactly like SQLite.
_PLAIN_SEGMENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$|^[0-9]+$")
_INT64 = 2**63


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


#: A path this module does not resolve the way SQLite would.
UNKNOWN: Any = _Unknown()
_MISSING = object()

_SCALAR_ALLOWED = {
    "number": ("integer", "real"),
    "string": ("text",),
    "bool": ("true", "false"),
}
_UNIFORM = {"number": ("integer", "real"), "string": ("text",), "bool": ("true", "false")}


def json_type(value: Any) -> str | None:
    """SQLite's ``json_type`` of a value parsed from JSON; ``None`` for a missing one."""
    if value is _MISSING:
        return None
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return "integer" if -_INT64 <= value < _INT64 else UNKNOWN
    if isinstance(value, float):
        return "real" if math.isfinite(value) else UNKNOWN
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return UNKNOWN


def _resolve(document: Any, field: str) -> Any:
    """The value at ``field`` as SQLite's ``json_extract(document, '$.a.b')`` finds it:
    ``_MISSING`` when absent, :data:`UNKNOWN` when the path is not one resolved here."""
    current = document
    for segment in field.split("."):
        if not _PLAIN_SEGMENT.match(segment):
            return UNKNOWN
        if segment.isdigit():
            if not isinstance(current, list) or int(segment) >= len(current):
                return _MISSING
            current = current[int(segment)]
        else:
            if not isinstance(current, dict) or segment not in current:
                return _MISSING
            current = current[segment]
    return current


def _tagged_type(document: Any, field: str) -> Any:
    value = _resolve(document, field)
    if value is UNKNOWN:
        return UNKNOWN
    if isinstance(value, dict) and isinstance(value.get(_MARKER), dict):
        return value[_MARKER].get(_TYPE)
    return None


def _array_prefixes(field: str) -> list[str]:
    parts = field.split(".")
    prefixes, current = [], []
    for part in parts[:-1]:
        current.append(part)
        if not part.isdigit():
            prefixes.append(".".join(current))
    return prefixes


#: This package's own fact (kept in the engine's cache beside the engine's): "some document
#: holds at the field a value that makes a sort on it need Python" - an array, or an object
#: that is not a tagged value, or one tagged as a number SQLite cannot order (the check of
#: ``mongoeco.engines._sqlite_plan_heuristics.sort_requires_python``).
SORT_SHAPE = "agent_memory_sort_shape"
SORT_SHAPE_TAGS = frozenset({"", "int64", "decimal", "decimal128", "decimal128_public"})


#: This package's own fact: "some document holds a string at the (top-level) field". Where
#: none does, a string equality on a field of arrays is answered by its multikey index alone
#: (``agent_memory.mongo._engine_tuning``).
TEXT_AT = "agent_memory_text_at"


def _sort_shape(document: Any, field: str) -> bool | Any:
    value = _resolve(document, field)
    if value is UNKNOWN:
        return UNKNOWN
    if isinstance(value, list):
        return True
    if not isinstance(value, dict):
        return False
    marker = value.get(_MARKER)
    tag = marker.get(_TYPE) if isinstance(marker, dict) else None
    if tag is None:  # SQLite's COALESCE(json_extract(...type), '')
        return True
    return tag in SORT_SHAPE_TAGS if isinstance(tag, str) else False


def _has(document: Any, kind: str, field: str, argument: str | None) -> bool | Any:
    """Whether ``document`` has the property fact ``kind`` is about (UNKNOWN if unsure)."""
    if kind == "traverses_array":
        types = [json_type(_resolve(document, p)) for p in _array_prefixes(field)]
        return UNKNOWN if UNKNOWN in types else "array" in types
    if kind == "traverses_dbref":
        parts = field.split(".")
        tags = [_tagged_type(document, ".".join(parts[:n])) for n in range(1, len(parts))]
        return UNKNOWN if UNKNOWN in tags else "dbref" in tags
    if kind == "tagged_type":
        tag = _tagged_type(document, field)
        return UNKNOWN if tag is UNKNOWN else tag == argument
    if kind == SORT_SHAPE:
        return _sort_shape(document, field)
    value = _resolve(document, field)
    kind_of = json_type(value)
    if value is UNKNOWN or kind_of is UNKNOWN:
        return UNKNOWN
    if kind == "top_level_array":
        return kind_of == "array"
    if kind == TEXT_AT:
        return kind_of == "text"
    if kind == "contains_real_numeric":
        return kind_of == "real"
    if kind == "contains_non_ascii_text":
        return kind_of == "text" and not value.isascii()
    if kind in ("comparison_mismatch", "scalar_or_array_comparison_mismatch"):
        allowed = _SCALAR_ALLOWED.get(argument or "")
        if allowed is None or kind_of is None:
            return UNKNOWN if allowed is None else False
        if kind == "comparison_mismatch":
            return kind_of not in allowed
        if kind_of == "array":
            elements = [json_type(item) for item in value]
            return UNKNOWN if UNKNOWN in elements else any(e not in allowed for e in elements)
        return kind_of not in allowed
    return UNKNOWN


#: Fact kinds whose key ends in an argument after the field (``kind:field:argument``).
_WITH_ARGUMENT = ("tagged_type", "comparison_mismatch", "scalar_or_array_comparison_mismatch")


def fact_field(key: str) -> str | None:
    """The field the cached fact ``key`` (``"kind:field[:argument]"``) is about; ``None`` when
    the key names none."""
    kind, _, rest = key.partition(":")
    field = rest.rpartition(":")[0] if kind in _WITH_ARGUMENT else rest
    return field or None


def about_fields(key: str, fields: Collection[str]) -> bool:
    """Whether the fact ``key`` may depend on one of the top-level ``fields`` (a key whose
    field is not known may: it is reconciled, which at worst forgets it)."""
    field = fact_field(key)
    return field is None or field.split(".", 1)[0] in fields


class _FieldsWritten(threading.local):
    #: (top-level fields written, their stored JSON as one document) while a statement that
    #: changes only those fields of one document runs on this thread.
    current: tuple[frozenset[str], str] | None = None


_FIELDS_WRITTEN = _FieldsWritten()


@contextlib.contextmanager
def fields_written(fields: Collection[str], stored: str) -> Iterator[None]:
    """Around a statement that sets only the top-level ``fields`` of the one document it
    writes, to the values of ``stored`` (the engine's JSON of those fields): what the trigger
    that reconciles facts reads instead of the whole document (:func:`partial_write`)."""
    _FIELDS_WRITTEN.current = (frozenset(fields), stored)
    try:
        yield
    finally:
        _FIELDS_WRITTEN.current = None


def partial_write() -> tuple[frozenset[str], str] | None:
    """The fields and stored JSON announced by :func:`fields_written` on this thread."""
    return _FIELDS_WRITTEN.current


def still_holds(key: str, cached: bool | str, document: Any) -> bool | str | None:
    """The value of the cached fact ``key`` (the engine's ``"kind:field[:argument]"``) after
    ``document`` was written, or ``None`` when it must be probed again."""
    kind, _, rest = key.partition(":")
    if kind == "uniform_scalar_sort_type":
        if cached is False:
            return False  # "not one type": a write never makes the general path wrong
        value = _resolve(document, rest)
        kind_of = json_type(value)
        allowed = _UNIFORM.get(cached) if isinstance(cached, str) else None
        if allowed is None or value is UNKNOWN or kind_of is UNKNOWN:
            return None
        return cached if kind_of in allowed else None
    if cached is True:
        return True  # "some document has it": a write cannot make that unsafe
    if cached is not False:
        return None
    if kind in _WITH_ARGUMENT:
        field, _, argument = rest.rpartition(":")
        if not field:
            return None
    else:
        field, argument = rest, None
    if not field:
        return None
    has = _has(document, kind, field, argument)
    if has is UNKNOWN:
        return None
    return True if has else False

"""The export format: JSON Lines, one record a line, read and written a line at a time.

A file is a header, the records, and an end line::

    {"format": "agent-memory-export", "version": 1, "exported_at": ..., "scope": {...},
     "vectors": true, "embedder": {"provider": ..., "model": ..., "dimensions": ...,
     "similarity": ...}, "counts": {"memories": 120, ...}}
    {"kind": "memories", "doc": {...}}
    ...
    {"end": {"counts": {"memories": 120, ...}}}

``doc`` is the stored document in MongoDB Extended JSON (relaxed: dates as ISO 8601, vectors
as ``$binary`` subtype 9), so every field, id and type comes back as it was stored. A record
whose vector was left out (``--no-vectors``) says so with ``"vector": false``; the importer
embeds it again. The header's counts are what the export expected to write when it began; the
end line's are what it wrote, and an importer reads a file without one as cut short.

Every kind of memory is a collection of documents keyed by tenant (:data:`KINDS`); what the
framework derives from them (search generations, hourly counts of actions, the keyword trust
it learns in memory, the embedder record) is not exported and is rebuilt by the target.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from bson import json_util
from bson.json_util import JSONMode, JSONOptions

from agent_memory.errors import InvalidInputError

__all__ = [
    "FORMAT",
    "KINDS",
    "VERSION",
    "Kind",
    "checked_document",
    "encode_line",
    "kind_named",
    "read_line",
]

FORMAT = "agent-memory-export"
#: The format's version: an importer refuses a file of another one.
VERSION = 1

_OPTIONS = JSONOptions(json_mode=JSONMode.RELAXED, tz_aware=True, tzinfo=UTC)


def _content(doc: Mapping[str, Any]) -> str | None:
    content = doc.get("content")
    return content if isinstance(content, str) and content.strip() else None


def _memory_text(doc: Mapping[str, Any], embed_context: bool) -> str | None:
    """What a memory's vector is made from (``NewMemory.vector_text``); field documents and
    memories stored without a vector have none."""
    if doc.get("status") == "field" or doc.get("indexed") is False:
        return None
    content = _content(doc)
    context = doc.get("context")
    if content and embed_context and isinstance(context, str) and context:
        return f"{content}\n{context}"
    return content


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of stored memory: its collection, the field ``--since`` reads, and what its
    vector is made from (``None``: it has none)."""

    name: str
    #: The time a document was written (or last changed), which ``since`` compares.
    written: str
    #: The text a document's vector is made from, for a document that had one (None: this
    #: document has none); the flag is ``LongTermConfig.embed_context``.
    text: Callable[[Mapping[str, Any], bool], str | None] | None = None
    #: Held per agent, not per user (exported only with no user named).
    agent_wide: bool = False


#: The kinds, in the order they are written and read: a memory's history and the field
#: documents it is searched by are in ``memories`` with it.
KINDS: tuple[Kind, ...] = (
    Kind("memories", "created_at", _memory_text),
    Kind("profiles", "updated_at"),
    Kind("sessions", "updated_at"),
    Kind("messages", "created_at"),
    Kind("tasks", "updated_at"),
    Kind("checkpoints", "created_at"),
    Kind("action_logs", "timestamp", lambda doc, _: _content(doc)),
    Kind("knowledge_chunks", "ingested_at", lambda doc, _: _content(doc)),
    # Per agent and day: the counts of actions older than the logs' retention.
    Kind("action_aggregates", "day", agent_wide=True),
)
_BY_NAME = {kind.name: kind for kind in KINDS}


def kind_named(name: Any) -> Kind | None:
    return _BY_NAME.get(name) if isinstance(name, str) else None


def _extended(value: Any) -> Any:
    """A BSON value JSON has no type for (a date, a vector, an id) in Extended JSON."""
    return json_util.default(value, json_options=_OPTIONS)


def encode_line(record: Mapping[str, Any]) -> str:
    """One record as its line (without the newline): JSON, the document's BSON types in
    Extended JSON (relaxed). Values JSON has a type for are written as they are; only dates,
    vectors, ids and the like go through Extended JSON, and a document holding NaN or an
    infinity, which JSON cannot hold, is written by the full Extended JSON encoder."""
    try:
        return json.dumps(record, default=_extended, allow_nan=False, ensure_ascii=False)
    except ValueError:
        return json_util.dumps(record, json_options=_OPTIONS, ensure_ascii=False)


def read_line(line: str) -> Any:
    """A line parsed, its Extended JSON values turned back into their BSON types (raises
    ``ValueError`` for a line that is not JSON)."""
    return json.loads(line, object_pairs_hook=_HOOK)


_HOOK = functools.partial(json_util.object_pairs_hook, json_options=_OPTIONS)


def checked_document(value: Any, line: int) -> dict[str, Any]:
    """A record's ``doc``, read by :func:`read_line`: an object of string keys."""
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise InvalidInputError(f"line {line}: the record's doc is not a document")
    return value

"""Counters and times of documents named by id, written without the engine's general update.

The framework's most frequent write is the access statistics of the memories a retrieve
returned: ``update_many({"_id": {"$in": ids}, "agent_id": a, "user_id": u}, {"$inc":
{"access_count": n}, "$max": {"last_accessed": t}})``. mongoeco applies an ``update_many``
document by document through its general update path: the matching documents found and
decoded, then for each one a separate engine step and transaction that selects it again,
deep-copies it five times, checks the unique indexes, rebuilds its index entries and commits
(about 2.5 ms a memory on a 2-core machine whatever the collection's size, holding the
interpreter that the application's retrieves run in). The embedded server serves an update
of that shape here instead, in one engine step and one transaction: the documents are read
by their primary key, the new values computed, and each document changed with SQLite's
``json_set`` on those fields alone; the trigger that keeps the engine's collection facts is
told which fields changed (:func:`~agent_memory.mongo._engine_features.fields_written`) and
reads only their values, not the whole document.

Only what this path can answer exactly as the general path does comes here
(:func:`counter_update`): a multi-document update with no upsert, collation, array filters,
hint, variables or transaction; a filter of ``_id`` (one string or ``$in`` of strings) and
equalities of other top-level fields to strings; ``$inc`` by a non-zero int or float and
``$max``/``$min`` of a datetime on top-level fields. :func:`update_counters` then declines
(``None``, before anything is written) for a collection with a validator or a default
collation, a search index
or an index that reads one of the fields, and for a document whose value it cannot compute
as MongoDB does (a counter that is not an int or a float, a time that is not a datetime, an
array where an equality is asked); the command then goes the general way, which applies it
or refuses it as before. Both paths store values through the engine's own codec.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from agent_memory.mongo._engine_features import fields_written

__all__ = [
    "CounterUpdate",
    "counter_update",
    "plain_field",
    "stored_documents",
    "update_counters",
]

#: Field names this path writes into a JSON path literal (letters, digits, underscores).
_PLAIN_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
#: Ids in one command this path serves (the framework sends at most 400).
MAX_IDS = 1000
#: Storage keys looked up in one statement.
_LOOKUP_CHUNK = 250
#: Keys of an update command and of its one statement that this path knows the meaning of.
_COMMAND_KEYS = frozenset(
    {"update", "updates", "ordered", "lsid", "$db", "writeConcern", "$clusterTime", "comment"}
)
_STATEMENT_KEYS = frozenset({"q", "u", "multi", "upsert"})
_INT64 = 2**63
_MISSING = object()


@dataclasses.dataclass(frozen=True)
class CounterUpdate:
    """One update command of the shape this path serves (see the module's docstring)."""

    collection: str
    ids: tuple[str, ...]
    #: Other conditions: a top-level field equal to a string.
    equal: tuple[tuple[str, str], ...]
    #: ``$inc``: field, amount.
    inc: tuple[tuple[str, int | float], ...]
    #: ``$max`` / ``$min``: operator, field, datetime.
    bounds: tuple[tuple[str, str, datetime.datetime], ...]

    @property
    def fields(self) -> frozenset[str]:
        return frozenset([f for f, _ in self.inc] + [f for _, f, _ in self.bounds])


def plain_field(field: Any) -> bool:
    """A top-level field name this path writes into a JSON path literal."""
    return isinstance(field, str) and field != "_id" and _PLAIN_FIELD.fullmatch(field) is not None


def counter_update(command: Any) -> CounterUpdate | None:
    """The update ``command`` (a wire command document) as this path serves it, or ``None``
    when it is not of that shape."""
    if not isinstance(command, Mapping) or not set(command) <= _COMMAND_KEYS:
        return None
    collection, statements = command.get("update"), command.get("updates")
    if not isinstance(collection, str) or not isinstance(statements, list):
        return None
    if len(statements) != 1 or not isinstance(statements[0], Mapping):
        return None
    statement = statements[0]
    if not set(statement) <= _STATEMENT_KEYS or statement.get("multi") is not True:
        return None
    if statement.get("upsert", False) is not False:
        return None
    query, change = statement.get("q"), statement.get("u")
    if not isinstance(query, Mapping) or not isinstance(change, Mapping) or not change:
        return None
    ids = _ids(query.get("_id", _MISSING))
    if ids is None:
        return None
    equal = []
    for field, value in query.items():
        if field == "_id":
            continue
        if not plain_field(field) or not isinstance(value, str):
            return None
        equal.append((field, value))
    inc: list[tuple[str, int | float]] = []
    bounds: list[tuple[str, str, datetime.datetime]] = []
    seen: set[str] = set()
    for operator, fields in change.items():
        if operator not in ("$inc", "$max", "$min") or not isinstance(fields, Mapping):
            return None
        for field, value in fields.items():
            if not plain_field(field) or field in seen:
                return None
            seen.add(field)
            if operator == "$inc":
                if type(value) not in (int, float) or value == 0 or value != value:
                    return None
                if type(value) is int and not -_INT64 <= value < _INT64:
                    return None
                inc.append((field, value))
            elif type(value) is datetime.datetime:
                bounds.append((operator, field, value))
            else:
                return None
    return CounterUpdate(collection, ids, tuple(equal), tuple(inc), tuple(bounds))


def _ids(condition: Any) -> tuple[str, ...] | None:
    if isinstance(condition, str):
        return (condition,)
    if not isinstance(condition, Mapping) or set(condition) != {"$in"}:
        return None
    values = condition["$in"]
    if not isinstance(values, list) or len(values) > MAX_IDS:
        return None
    if not all(isinstance(value, str) for value in values):
        return None
    return tuple(dict.fromkeys(values))


def _named_fields(value: Any) -> Iterable[str]:
    """Every field name inside a filter document (a partial index's condition)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and not key.startswith("$"):
                yield key
            yield from _named_fields(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _named_fields(item)


def _reads(index: Any) -> set[str]:
    """The top-level fields an index's entries or membership depend on ("$" for any)."""
    names = [*(getattr(index, "fields", None) or ())]
    names += list(_named_fields(getattr(index, "partial_filter_expression", None)))
    names += list((getattr(index, "weights", None) or {}).keys())
    key = getattr(index, "key", None)
    if isinstance(key, Mapping):
        names += list(key)
    elif isinstance(key, list | tuple):
        names += [part[0] if isinstance(part, list | tuple) else part for part in key]
    return {str(name).split(".", 1)[0] if not str(name).startswith("$") else "$" for name in names}


def _has_entries(index: Any) -> bool:
    """Whether the engine keeps entries of ``index`` in tables of its own (one-field indexes:
    scalar entries; multikey ones; TTL ones), which a change of the document must rebuild."""
    return (
        len(getattr(index, "fields", None) or ()) == 1
        or bool(getattr(index, "multikey", False))
        or getattr(index, "expire_after_seconds", None) is not None
    )


def _partial(fields: Sequence[str], values: Sequence[str | None]) -> str:
    """The stored JSON of a document's ``fields`` (their values as stored, ``None`` where
    the document has none), as one document the engine's decoder reads."""
    return (
        "{"
        + ",".join(
            f'"{field}":{value}'
            for field, value in zip(fields, values, strict=True)
            if value is not None
        )
        + "}"
    )


def stored_documents(
    connection: Any,
    db_name: str,
    coll_name: str,
    keys: Sequence[str],
    fields: Sequence[str] | None,
) -> Iterator[tuple[str, str]]:
    """(storage key, stored JSON) of each document of ``keys`` that exists in the engine's
    ``documents`` table, read by primary key :data:`_LOOKUP_CHUNK` keys a statement: the
    whole document, or only ``fields`` (plain top-level names) as one document the engine's
    decoder reads."""
    columns = (
        "document"
        if fields is None
        else ", ".join(f"document -> '$.\"{field}\"'" for field in fields)
    )
    for start in range(0, len(keys), _LOOKUP_CHUNK):
        part = keys[start : start + _LOOKUP_CHUNK]
        rows = connection.execute(
            f"SELECT storage_key, {columns} FROM documents WHERE db_name = ? AND "
            f"coll_name = ? AND storage_key IN ({', '.join('?' * len(part))})",
            (db_name, coll_name, *part),
        ).fetchall()
        for storage_key, *values in rows:
            yield storage_key, values[0] if fields is None else _partial(fields, values)


def _new_values(document: Mapping[str, Any], update: CounterUpdate) -> dict[str, Any] | None:
    """The fields ``update`` changes in ``document`` and their new values; ``None`` when a
    current value is not one this path computes exactly."""
    new: dict[str, Any] = {}
    for field, amount in update.inc:
        current = document.get(field, _MISSING)
        if current is _MISSING:
            new[field] = amount
            continue
        if type(current) not in (int, float):
            return None
        value = current + amount
        if type(value) is int and not -_INT64 <= value < _INT64:
            return None
        if value != value or value in (float("inf"), float("-inf")):
            return None
        new[field] = value
    for operator, field, bound in update.bounds:
        current = document.get(field, _MISSING)
        if current is _MISSING:
            new[field] = bound
            continue
        if type(current) is not datetime.datetime:
            return None
        if (current.tzinfo is None) != (bound.tzinfo is None):
            return None
        if bound > current if operator == "$max" else bound < current:
            new[field] = bound
    return new


def _matches(document: Mapping[str, Any], update: CounterUpdate) -> bool | None:
    for field, value in update.equal:
        current = document.get(field, _MISSING)
        if isinstance(current, list):
            return None  # an array matches by its elements: the general path decides
        if type(current) is not str or current != value:
            return False
    return True


def update_counters(
    engine: Any, db_name: str, update: CounterUpdate, write_scope: Any
) -> tuple[int, int] | None:
    """Apply ``update`` in ``db_name`` on mongoeco's SQLite ``engine``: (matched, modified),
    or ``None`` when this path declines it (nothing written). ``write_scope`` is mongoeco's
    ``sqlite_write_scope``. Raises the engine's own error when another session's transaction
    holds the engine (the server waits and runs the command again)."""
    coll_name = update.collection
    with engine._lock:
        conn = engine._require_connection(None)
        with engine._bind_connection(conn):
            if conn.in_transaction:
                return None
            options = engine._collection_options_or_empty_sync(conn, db_name, coll_name)
            if options.get("validator") or options.get("collation"):
                return None  # validated writes; string equality by another collation
            fields = update.fields
            indexes = engine._load_indexes(db_name, coll_name)
            # SQLite keeps its own indexes of the documents table; entries the engine keeps
            # in tables of their own (one-field, multikey and TTL indexes) are rebuilt as the
            # general path rebuilds them when such an index reads a changed field. An index
            # whose key a write must check first is left to the general path.
            rebuild = False
            for index in indexes:
                read = _reads(index)
                checked_first = getattr(index, "unique", True) or getattr(index, "weights", None)
                if "$" in read or (read & fields and checked_first):
                    return None
                rebuild = rebuild or bool(read & fields and _has_entries(index))
            if engine._load_search_index_rows(db_name, coll_name):
                return None
            engine._purge_expired_documents_sync(
                conn,
                db_name,
                coll_name,
                context=None,
                now=datetime.datetime.now(datetime.UTC),
            )
            ids = {engine._storage_key(document_id): document_id for document_id in update.ids}
            keys = list(ids)
            changes: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
            matched = 0
            # Only the fields this update reads are taken from each document (a memory's
            # text and vector are most of it), unless index entries are to be rebuilt.
            taken = ["_id", *(field for field, _ in update.equal), *sorted(fields)]
            found = stored_documents(conn, db_name, coll_name, keys, None if rebuild else taken)
            for storage_key, payload in found:
                document = engine._deserialize_document(payload)
                if document.get("_id") != ids.get(storage_key):
                    return None
                matches = _matches(document, update)
                if matches is None:
                    return None
                if not matches:
                    continue
                new = _new_values(document, update)
                if new is None:
                    return None
                matched += 1
                if new:
                    changes.append((storage_key, new, document))
            if changes:
                with write_scope(
                    conn,
                    begin_write=lambda current: engine._begin_write(current, None),
                    commit_write=lambda current: engine._commit_write(current, None),
                    rollback_write=lambda current: engine._rollback_write(current, None),
                ):
                    for storage_key, new, document in changes:
                        encoded = engine._serialize_document(new)
                        paths = ", ".join(f"'$.\"{field}\"', ? -> '$.\"{field}\"'" for field in new)
                        with fields_written(new, encoded):
                            conn.execute(
                                f"UPDATE documents SET document = json_set(document, {paths}) "
                                "WHERE db_name = ? AND coll_name = ? AND storage_key = ?",
                                (*[encoded] * len(new), db_name, coll_name, storage_key),
                            )
                        if rebuild:
                            after = {**document, **new}
                            for rebuild_entries in (
                                engine._rebuild_multikey_entries_for_document,
                                engine._rebuild_scalar_entries_for_document,
                            ):
                                rebuild_entries(
                                    conn, db_name, coll_name, storage_key, after, indexes
                                )
                    engine._invalidate_collection_features_cache(db_name, coll_name)
    return matched, len(changes)

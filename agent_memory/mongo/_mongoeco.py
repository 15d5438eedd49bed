"""What the embedded server changes in mongoeco: its engine adjusted, server-side code refused.

The adjustments for load (one connection for reads, collection facts kept across writes,
reads through indexes, change delivery off the event loop, ...) are in
:mod:`agent_memory.mongo._engine_tuning`; :func:`engine_class` applies them with the one below.

**The engine.**
mongoeco 4.11 checks a newly inserted document's ``_id`` twice: by the primary key of its
storage row, then (``scan_payload_id=True`` on the single-document path, which its wire server
uses for every insert) by decoding every document of the collection and comparing ``_id``\\ s by
BSON equality. The scan only matters when two different storage keys can hold equal ``_id``\\ s,
which is the case for numbers (``1`` and ``1.0``) and values that contain them; mongoeco's own
bulk path already skips it. Every ``_id`` the framework writes is a string, and pymongo's
default is an ObjectId: for those the primary-key lookup is the whole check, so here the scan
is skipped for them and kept for everything else. An insert then costs the same at any
collection size (5 ms instead of 37 ms at 1,000 documents;
``docs/upstream/mongoeco-insert-scan.md``).

If a mongoeco release changes a method an adjustment relies on, that method is left as it is.

**Another program's transaction.** The engine runs one transaction at a time, and while it is
open it refuses every other session's command at once ("active transaction bound to another
session") instead of waiting. The embedded server makes such a command wait and run again, for
up to :data:`BUSY_WAIT` seconds, so that one program's transaction is a short wait for the
others, not a failure. The refusal comes before the command touches anything; the one
exception is an insert of several documents, which the wire server writes one by one, so that
is not run again (a retry could insert the first ones twice).

**A damaged database file.** SQLite reports a damaged page when a command reads it, and
Python's ``sqlite3`` module quotes the stored text it could not decode in its message, which
the wire server sends to the client as it is: a memory's text and tenant ids in an error
reply. The embedded server answers such a failure with one line instead, saying which file is
damaged and how to recover it (:func:`agent_memory.mongo.embedded_files.damaged_message`),
and logs it once (``embedded_database_damaged``), without the engine's text.

**Replies encoded faster.** The wire server converts every document of a reply to pymongo's
types before it encodes it, by a function that tries some twenty ``isinstance`` checks on each
value, nested ones too: 44 us for a memory's document of 30 values, most of a cold corpus's
read. Strings, numbers, booleans, ``None`` and datetimes are the same in both type systems
(the function returns them unchanged), so here those are passed through at once, and dicts and
lists walked, before anything else goes to the engine's function: 10 us for the same document,
the same bytes (:func:`_fast_wire_encoding`).

**Counters and times by id.** An update of many documents named by id that only adds to
counters and moves times forward (the access statistics of every retrieve) is served in one
engine step and one transaction instead of one general update per document
(:mod:`agent_memory.mongo._engine_counters`, which says exactly what it takes and declines).

**Server-side code.** mongoeco evaluates ``$where`` as a Python expression in the serving
process, which holds the application's environment (API keys among it). The embedded server
refuses every command that carries ``$where``, ``$function`` or ``$accumulator`` anywhere in
it, before it reaches the engine; the framework uses none of them. If a mongoeco release no
longer lets the check be installed, the server does not start.
"""

from __future__ import annotations

import asyncio
import datetime
import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bson import ObjectId

from agent_memory._log import get_logger
from agent_memory.mongo import _engine_tuning
from agent_memory.mongo._engine_counters import CounterUpdate, counter_update, update_counters
from agent_memory.mongo.embedded_files import damage_reason, damaged_message

__all__ = ["BUSY_WAIT", "SERVER_SIDE_CODE", "engine_class", "guard_server"]

logger = get_logger(__name__)

_UNAMBIGUOUS_IDS = (str, ObjectId)
#: Seconds a command waits for another session's transaction before the refusal is returned.
BUSY_WAIT = 10.0
_BUSY = "active transaction bound to another session"
#: Documents in a first batch and in a later one when the client asks for no particular size
#: (a first batch of 101 is MongoDB's default too; later ones it bounds by 16 MiB instead).
FIRST_BATCH = 101
NEXT_BATCH = 1000
#: Operators that run code inside the server.
SERVER_SIDE_CODE = frozenset({"$where", "$function", "$accumulator"})
#: A command whose engine steps take longer is logged (``embedded_slow_command``): each such
#: step holds every other client's command behind it.
SLOW_COMMAND_SECONDS = 0.1


def engine_class() -> type[Any]:
    """mongoeco's ``SQLiteEngine`` with the adjustments described in this module's docstring.

    Each adjustment is made only when this mongoeco has the method it relies on, with the
    signature it expects; otherwise that method is left as it is."""
    from mongoeco.engines import SQLiteEngine

    overrides: dict[str, Any] = {}
    for name, make in _ADJUSTMENTS.items():
        original = getattr(SQLiteEngine, name, None)
        method = make(original) if original is not None else None
        if method is None:
            logger.debug("mongoeco_engine_unadjusted", method=name)
            continue
        overrides[name] = method
    if not overrides:
        return SQLiteEngine
    engine = type("SQLiteEngine", (SQLiteEngine,), overrides)
    engine.__qualname__ = "SQLiteEngine"
    return engine


def _unique_check(original: Any) -> Any:
    if "scan_payload_id" not in inspect.signature(original).parameters:
        return None

    def _validate_document_against_unique_indexes(
        self: Any,
        db_name: str,
        coll_name: str,
        document: Any,
        *args: Any,
        scan_payload_id: bool = False,
        **kwargs: Any,
    ) -> None:
        if scan_payload_id and isinstance(document.get("_id"), _UNAMBIGUOUS_IDS):
            scan_payload_id = False
        return original(
            self, db_name, coll_name, document, *args, scan_payload_id=scan_payload_id, **kwargs
        )

    return _validate_document_against_unique_indexes


_ADJUSTMENTS: dict[str, Callable[[Any], Any]] = {
    "_validate_document_against_unique_indexes": _unique_check,
    **_engine_tuning.ADJUSTMENTS,
}


def _carries_code(value: Any, depth: int = 0) -> str | None:
    """The first server-side code operator used as a key anywhere in ``value``."""
    if depth > 200:  # deeper than any command the server accepts; refuse rather than recurse
        return "nesting"
    if isinstance(value, dict):
        for key, item in value.items():
            if key in SERVER_SIDE_CODE:
                return str(key)
            found = _carries_code(item, depth + 1)
            if found:
                return found
    elif isinstance(value, list | tuple):
        for item in value:
            if isinstance(item, dict | list | tuple):
                found = _carries_code(item, depth + 1)
                if found:
                    return found
    return None


def _bound_batches(context: Any) -> None:
    """Give a cursor command without a batch size the one a MongoDB server would use.

    mongoeco's wire server answers ``find`` and ``aggregate`` without ``batchSize`` with every
    document in the first batch, and ``getMore`` without one with every remaining document:
    past 48 MB the client refuses the reply ("Message length ... is larger than server max
    message size"), which a one-hour soak hit reading back its 160,000 messages."""
    body = getattr(context, "command_document", None)
    name = getattr(context, "command_name", None)
    if not isinstance(body, dict):
        return
    if name == "find" and "batchSize" not in body:
        body["batchSize"] = FIRST_BATCH
    elif name == "aggregate" and isinstance(body.get("cursor"), dict):
        body["cursor"].setdefault("batchSize", FIRST_BATCH)
    elif name == "getMore" and "batchSize" not in body:
        body["batchSize"] = NEXT_BATCH


def _counter_update(context: Any) -> CounterUpdate | None:
    """The command of ``context`` when it is an update of counters and times by id that
    :mod:`agent_memory.mongo._engine_counters` serves, outside any transaction."""
    if getattr(context, "command_name", None) != "update":
        return None
    raw = getattr(context, "raw_body", None) or {}
    if any(key in raw for key in ("txnNumber", "autocommit", "startTransaction")):
        return None
    session = getattr(context, "session", None)
    if session is not None and getattr(session, "in_transaction", False):
        return None
    return counter_update(getattr(context, "command_document", None))


def _counter_server(server: Any) -> Callable[[Any, CounterUpdate], Any] | None:
    """How ``server`` serves a counter update in one engine step (its reply, or ``None``
    to serve the command the general way); ``None`` when this mongoeco lacks a part."""
    try:
        from mongoeco.engines._sqlite_write_scope import sqlite_write_scope
    except ImportError:
        return None
    engine = getattr(getattr(server, "_client", None), "_engine", None)
    auth = getattr(server, "_auth", None)
    if engine is None or not hasattr(auth, "require_authenticated"):
        return None
    # The engine's methods as the counters path calls them (a release that changes or drops
    # one of them leaves every update to the general path instead of failing it).
    calls = {
        "_require_connection": ((None,), {}),
        "_bind_connection": ((None,), {}),
        "_begin_write": ((None, None), {}),
        "_commit_write": ((None, None), {}),
        "_rollback_write": ((None, None), {}),
        "_collection_options_or_empty_sync": ((None, "", ""), {}),
        "_load_indexes": (("", ""), {}),
        "_load_search_index_rows": (("", ""), {}),
        "_purge_expired_documents_sync": ((None, "", ""), {"context": None, "now": None}),
        "_storage_key": (("",), {}),
        "_deserialize_document": (("",), {}),
        "_serialize_document": (({},), {}),
        "_invalidate_collection_features_cache": (("", ""), {}),
        "_rebuild_multikey_entries_for_document": ((None, "", "", "", {}, []), {}),
        "_rebuild_scalar_entries_for_document": ((None, "", "", "", {}, []), {}),
        "_run_blocking": ((len,), {}),
    }
    try:
        if not hasattr(engine, "_lock"):
            raise AttributeError("_lock")
        for name, (args, kwargs) in calls.items():
            inspect.signature(getattr(engine, name)).bind(*args, **kwargs)
    except (AttributeError, TypeError, ValueError):
        logger.debug("embedded_counters_path_unavailable")
        return None

    def _update_counters_sync(db_name: str, update: CounterUpdate) -> tuple[int, int] | None:
        return update_counters(engine, db_name, update, sqlite_write_scope)

    async def serve(context: Any, update: CounterUpdate) -> dict[str, Any] | None:
        auth.require_authenticated(context.connection, context.command_name)
        counted = await engine._run_blocking(_update_counters_sync, context.db_name, update)
        if counted is None:
            return None
        matched, modified = counted
        return {"n": matched, "nModified": modified, "ok": 1.0}

    return serve


def _retryable(context: Any) -> bool:
    body = getattr(context, "command_document", None) or {}
    documents = body.get("documents") if isinstance(body, dict) else None
    return not (
        getattr(context, "command_name", None) == "insert"
        and isinstance(documents, list)
        and len(documents) > 1
    )


def command_shape(value: Any, depth: int = 0) -> Any:
    """``value`` with its field names kept and every value replaced by its type's name, for
    logs: a command's shape says which query it was without what the user said."""
    if depth > 4:
        return "..."
    if isinstance(value, dict):
        return {str(k)[:64]: command_shape(v, depth + 1) for k, v in list(value.items())[:16]}
    if isinstance(value, list | tuple):
        return [command_shape(v, depth + 1) for v in value[:3]]
    return type(value).__name__


def _log_slow(context: Any, steps: _engine_tuning.CommandSteps) -> None:
    document = (
        getattr(context, "raw_body", None) or getattr(context, "command_document", None) or {}
    )
    name = getattr(context, "command_name", None) or next(iter(document), "?")
    target = document.get(name) if isinstance(document, dict) else None
    shape = {
        key: command_shape(value)
        for key, value in document.items()
        if key in ("filter", "sort", "query", "update", "pipeline", "q", "u", "updates", "deletes")
    }
    logger.info(
        "embedded_slow_command",
        command=str(name),
        collection=target if isinstance(target, str) else None,
        engine_ms=round(steps.seconds * 1000, 1),
        steps=steps.count,
        shape=shape,
    )


#: Types the wire server's reply conversion returns unchanged (see :func:`_fast_wire_encoding`).
_WIRE_PLAIN = frozenset({str, int, float, bool, type(None), datetime.datetime})
#: The modules that imported the wire server's reply conversion by name.
_WIRE_MODULES = ("mongoeco.wire.protocol", "mongoeco.api._async.raw_batch_cursor")


def _fast_wire_encoding() -> bool:
    """Put a conversion that passes plain values through in front of the wire server's
    (``mongoeco.wire.bson_bridge.encode_wire_value``) wherever it was imported; ``False`` when
    this mongoeco has no such function, or the plain types are not returned unchanged."""
    try:
        bridge = importlib.import_module("mongoeco.wire.bson_bridge")
        modules = [importlib.import_module(name) for name in _WIRE_MODULES]
    except ImportError:
        return False
    original = getattr(bridge, "encode_wire_value", None)
    if original is None or getattr(original, "_agent_memory_fast", False):
        return original is not None
    samples = ("s", 1, 2**40, 1.5, True, None, datetime.datetime(2026, 1, 1))
    if any(original(sample) is not sample for sample in samples):
        return False

    def encode_wire_value(value: Any) -> Any:
        kind = type(value)
        if kind in _WIRE_PLAIN:
            return value
        if kind is dict:
            return {key: encode_wire_value(item) for key, item in value.items()}
        if kind is list:
            return [encode_wire_value(item) for item in value]
        return original(value)

    encode_wire_value._agent_memory_fast = True  # type: ignore[attr-defined]
    encode_wire_value._agent_memory_original = original  # type: ignore[attr-defined]
    for module in (bridge, *modules):
        if getattr(module, "encode_wire_value", None) is original:
            module.encode_wire_value = encode_wire_value  # type: ignore[attr-defined]
    return True


def guard_server(server: Any, *, database: Path) -> None:
    """Make ``server`` (mongoeco's ``AsyncMongoEcoProxyServer``, not yet started) refuse every
    command that carries server-side code, let a command refused for another session's
    transaction wait for it, and answer a command that finds the ``database`` file damaged
    with one line that quotes nothing stored. Raises ``RuntimeError`` when this mongoeco has
    no command executor to wrap, so that an unguarded server never starts."""
    from mongoeco.errors import OperationFailure

    executor = getattr(server, "_executor", None)
    execute = getattr(executor, "execute_prepared", None)
    if execute is None:
        raise RuntimeError("this mongoeco's wire server has no command executor to guard")
    if not _fast_wire_encoding():
        logger.debug("embedded_wire_encoding_unchanged")
    reported: list[str] = []
    serve_counters = _counter_server(server)

    def damaged(exc: Exception) -> OperationFailure | None:
        reason = damage_reason(exc)
        if reason is None:
            return None
        if reason not in reported:  # once per kind: every later read of the page fails too
            reported.append(reason)
            logger.error("embedded_database_damaged", file=str(database), reason=reason)
        return OperationFailure(damaged_message(database, reason))

    async def guarded(context: Any) -> Any:
        try:
            return await checked(context)
        except Exception as exc:
            replacement = damaged(exc)
            if replacement is None:
                raise
            raise replacement from None

    async def checked(context: Any) -> Any:
        # The body as received: the command the engine runs is derived from it (the same
        # document objects), so one walk covers both.
        body = getattr(context, "raw_body", None)
        found = _carries_code(body if body is not None else context.command_document)
        if found:
            logger.warning("server_side_code_refused", operator=found)
            raise OperationFailure(
                f"{found} is not allowed: the agent_memory embedded server runs no "
                "server-side code",
                code=2,
            )
        _bound_batches(context)
        counters = _counter_update(context)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + BUSY_WAIT
        pause = 0.002
        while True:
            try:
                with _engine_tuning.counting_steps() as steps:
                    try:
                        if counters is not None and serve_counters is not None:
                            reply = await serve_counters(context, counters)
                            if reply is not None:
                                return reply
                        return await execute(context)
                    finally:
                        if steps.seconds >= SLOW_COMMAND_SECONDS:
                            _log_slow(context, steps)
            except Exception as exc:
                if _BUSY not in str(exc) or loop.time() >= deadline or not _retryable(context):
                    raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)

    executor.execute_prepared = guarded

"""How the embedded server drives mongoeco's SQLite engine under load.

Each entry of :data:`ADJUSTMENTS` makes one replacement method of ``SQLiteEngine`` from the
original (or ``None`` when the original is not the one this was written for);
:func:`agent_memory.mongo._mongoeco.engine_class` puts them on a subclass. Measured reasons
are in ``docs/reliability.md`` ("The embedded server under load") and the engine defects
behind them in ``docs/upstream/``.

**One connection for reads and writes.** mongoeco opens a new SQLite connection with its own
read transaction for every read that may return more than one document, and keeps it across
the read's batches. With many clients there is never a moment without such a reader, so the
write-ahead log is never checkpointed and grows without bound (1.07 GB for a 12 MB database in
five minutes), and the engine's collection facts (below) are probed by readers that hold no
lock while writers change them (a race that failed writes with "dictionary changed size
during iteration"). Here every read runs on the engine's own connection under its lock, in
the short batches the engine already uses, and every connection keeps the log's file at
:data:`JOURNAL_SIZE_LIMIT` once it has been checkpointed.

**Collection facts kept across writes.** The engine plans reads from facts about a
collection that it finds by scanning it ("does any document hold an array at this field?"),
and forgot them all at every write to the collection, so reads after a write scanned the whole
collection up to a dozen times. Here a temporary trigger on the engine's connections shows
every document written to the callback that updates the facts the document bears on
(:mod:`agent_memory.mongo._engine_features`), so only writes that could change a fact cost a
probe. A change the callback did not see (an index or namespace change, a failure in the
callback) forgets the collection's facts as before. A rollback (a write refused for a
duplicate key, an aborted transaction) made the engine forget every fact of every
collection, and the next reads scanned each large collection a dozen times, for seconds, with
every client waiting; here it forgets only the facts probed inside the transaction, the only
ones it can have made wrong.

**Indexes that narrow reads.** The engine indexes a field by two expressions (its tagged type
and its value) but filters a string equality with others, so SQLite never chose the index and
every filter other than ``_id`` read its whole collection; the check whether a sort needs
Python did the same once more. Here a string equality also states the index's own
expressions, which say the same thing, and the sort check filters with the engine's own
translation, so SQLite finds the documents through the index; a range of strings on a field
without arrays also compares the index's value expression, so an index whose first fields the
query fixes serves the range (the newest messages of a session from a ``seq`` on read 250
index entries, not the session's 10,000). A compound unique index was
checked by decoding every document of the collection at each write; here the documents that
could hold the same key of plain strings are found through the index.

**Indexes that hold one collection.** The engine keeps every collection in one table and
built each index over all of it, so every write to any collection computed and stored an
entry in each of the ~30 indexes of the framework's collections, in trees that grew with all
the data (measured in ``docs/reliability.md``). Each index is made
partial on its own collection when it is created (and, for a file written before, once at
the start); SQLite still serves the engine's reads with it, matching their bound namespace
against the index's. A hint no longer forces the index by name (SQLite refuses a partial
index there), it is checked and SQLite picks the index itself. SQLite plans a statement again
for new bound values only if it was prepared while some partial index existed; one prepared
on a new file before its first index was made partial kept the first collection's index for
every collection bound afterwards and found nothing in them, so a partial index that holds no
document is made before the engine's first read (:func:`plans_guarded`).

**Short steps on the event loop.** The engine sent every blocking step to a pool of
threads and waited for it through a future and a wake-up of the event loop, also a step of a
fraction of a millisecond, while the steps queue on the engine's one lock anyway: a quarter of
the server's time went into the hand-over. A step that touches one document, one batch of a
read or the catalog now runs on the loop when the lock comes free within
:data:`INLINE_WAIT_SECONDS`; long steps (index builds, bulk inserts, counts, drops) still go to
the pool, so the loop goes on answering while one runs. So do the steps of a served command
past its first :data:`INLINE_STEPS_PER_COMMAND` (an update of many documents writes them one
step each): on the loop, a read beside it would get one turn per document written, and it
needs several.

**No change outbox.** The engine wrote every change into an outbox table in the write's own
transaction (the whole document serialised again), then delivered the outbox to its
change-stream hubs under a lease, with a heartbeat thread started and joined for each
delivery. The wire server serves no change streams and the framework opens none, so all of it
was work nobody read: under the soak, 18% of the server's time (a sixth of it on the
event loop, the rest on a delivery thread holding the engine's lock). Here the engine declares
no change delivery (``change_delivery="none"``, one of the modes mongoeco supports: the
client then tells in-process change-stream watchers itself, after each write) and its writes
publish nothing to the outbox. Should a mongoeco release not allow that, delivery at least
runs on one thread of its own, several writes at a time, off the event loop, and finishes
before the engine closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import inspect
import json
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from agent_memory._log import get_logger
from agent_memory.mongo._engine_features import (
    SORT_SHAPE,
    SORT_SHAPE_TAGS,
    TEXT_AT,
    about_fields,
    partial_write,
    still_holds,
)

__all__ = ["ADJUSTMENTS", "JOURNAL_SIZE_LIMIT"]

logger = get_logger(__name__)

#: Bytes the write-ahead log's file is cut back to after a checkpoint.
JOURNAL_SIZE_LIMIT = 16 * 1024 * 1024
_FUNCTION = "agent_memory_written"
_TRIGGERS = (
    ("agent_memory_inserted", "AFTER INSERT", "NEW.db_name, NEW.coll_name, NEW.document"),
    ("agent_memory_updated", "AFTER UPDATE", "NEW.db_name, NEW.coll_name, NEW.document"),
    ("agent_memory_deleted", "AFTER DELETE", "OLD.db_name, OLD.coll_name, NULL"),
)
_STATE_LOCK = threading.Lock()
#: How long the event loop waits for the engine's lock before a short step goes to the pool.
INLINE_WAIT_SECONDS = 0.05
#: Steps of one command that may run on the event loop; the rest of a longer command (a
#: write of many documents, one step each) go to the pool.
INLINE_STEPS_PER_COMMAND = 4


@dataclasses.dataclass
class CommandSteps:
    """The engine steps of the command being served: how many, and the seconds spent in them
    (on the loop, or in the pool counting its wait for the engine's lock)."""

    count: int = 0
    seconds: float = 0.0


#: The steps taken so far by the command being served (see :func:`counting_steps`).
_COMMAND_STEPS: contextvars.ContextVar[CommandSteps | None] = contextvars.ContextVar(
    "agent_memory_command_steps", default=None
)
#: Pause before delivering again while a transaction is open on the engine's connection.
_RETRY_SECONDS = 0.005
#: The sort check's values that are not plain scalars, as an SQL list.
_SORT_SHAPE_SQL = ", ".join(f"'{tag}'" for tag in sorted(SORT_SHAPE_TAGS))


class _Facts:
    """Per engine: the collections whose writes the trigger reported since their facts were
    last reconciled, and what a rollback may undo."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.seen: set[tuple[str, str]] = set()
        #: Set while the engine clears its caches after a rollback (:func:`_rollbacks_keep_facts`).
        self.rolling_back = threading.local()


class _ProbedFacts(dict):  # type: ignore[type-arg]
    """The engine's cache of collection facts (it fills it as it probes), noting each fact
    probed while a transaction was open on its connection: such a probe saw writes that a
    rollback may undo, so a rollback forgets those facts and keeps the others (see
    :func:`_rollbacks_keep_facts`)."""

    def __init__(self, engine: Any, facts: dict[Any, Any]) -> None:
        super().__init__(facts)
        self._engine = weakref.ref(engine)
        self.unsettled: set[Any] = set()

    def __setitem__(self, key: Any, value: Any) -> None:
        engine = self._engine()
        connection = getattr(engine, "_connection", None) if engine is not None else None
        if connection is None or connection.in_transaction:
            self.unsettled.add(key)
        super().__setitem__(key, value)

    def reconciled(self, key: Any, value: Any) -> None:
        """Store a fact the trigger brought up to date: it holds for every version of the
        document the collection had, the one a rollback restores among them."""
        super().__setitem__(key, value)

    def clear(self) -> None:
        self.unsettled.clear()
        super().clear()

    def settle(self, connection: Any) -> None:
        """A commit: unless a transaction is still open around it, what was probed inside
        describes committed data now."""
        if connection is not None and not connection.in_transaction:
            self.unsettled.clear()

    def forget_unsettled(self) -> int:
        forgotten = 0
        for key in list(self.unsettled):  # a copy: never iterate what a probe may add to
            forgotten += self.pop(key, _ABSENT) is not _ABSENT
        self.unsettled.clear()
        return forgotten


_ABSENT = object()


def _probed_facts(engine: Any) -> None:
    """Put a :class:`_ProbedFacts` in place of the engine's cache of collection facts."""
    state = getattr(engine, "_cache_state", None)
    cache = getattr(state, "collection_features_cache", None)
    if type(cache) is dict:
        state.collection_features_cache = _ProbedFacts(engine, cache)  # type: ignore[union-attr]


def _facts(engine: Any) -> _Facts:
    state = engine.__dict__.get("_agent_memory_facts")
    if state is None:
        with _STATE_LOCK:
            state = engine.__dict__.setdefault("_agent_memory_facts", _Facts())
    return state


def _written(engine_ref: weakref.ref[Any]) -> Callable[[str, str, str | None], None]:
    """The SQL function the triggers call with each written (or, ``None``, deleted)
    document. It must never raise: an error here would fail the write."""

    def written(db_name: str, coll_name: str, document: str | None) -> None:
        engine = engine_ref()
        if engine is None:
            return
        facts = _facts(engine)
        with facts.lock:
            try:
                cache = engine._collection_features_cache
                namespace = (db_name, coll_name)
                keys = [key for key in list(cache) if key[:2] == namespace]
                # A removal leaves every fact safe: "some document has P" may turn false, which
                # keeps the engine on its general path, and "every document has one type" holds
                # for the ones left (for none, an ordered read of nothing is still right).
                partial = partial_write() if document is not None else None
                if partial is not None:  # only these fields changed (the counters path)
                    fields, stored = partial
                    keys = [key for key in keys if about_fields(key[2], fields)]
                    if keys:
                        _reconcile(cache, keys, json.loads(stored))
                elif document is not None and keys:
                    _reconcile(cache, keys, json.loads(document))
                facts.seen.add(namespace)
            except Exception:  # the facts are forgotten instead: always safe
                logger.debug("engine_facts_forgotten", exc_info=True)
                facts.seen.discard((db_name, coll_name))
                try:
                    engine._collection_features_cache.clear()
                except Exception:  # pragma: no cover - the engine's cache is a dict
                    pass

    return written


def _reconcile(cache: dict[Any, Any], keys: list[Any], document: Any) -> None:
    for key in keys:
        cached = cache.get(key)
        if cached is None:
            continue
        value = still_holds(key[2], cached, document)
        if value is None:
            cache.pop(key, None)
        elif isinstance(cache, _ProbedFacts):
            cache.reconciled(key, value)
        else:
            cache[key] = value


def _watch(connection: sqlite3.Connection, engine: Any) -> None:
    """Install the triggers on ``connection`` once the engine's table exists."""
    exists = connection.execute(
        "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'documents'"
    ).fetchone()
    if exists is None:
        return
    connection.create_function(_FUNCTION, 3, _written(weakref.ref(engine)))
    for name, when, arguments in _TRIGGERS:
        connection.execute(
            f"CREATE TEMP TRIGGER IF NOT EXISTS {name} {when} ON main.documents "
            f"BEGIN SELECT {_FUNCTION}({arguments}); END"
        )


def _create_connection(original: Any) -> Any:
    def _create_sqlite_connection(self: Any) -> sqlite3.Connection:
        connection = original(self)
        try:
            connection.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
            _watch(connection, self)
        except sqlite3.Error:
            logger.debug("engine_connection_untuned", exc_info=True)
        _guard(connection)  # a file written before: before the connection prepares anything
        return connection

    return _create_sqlite_connection


def _rollbacks_keep_facts(engine: Any) -> None:
    """A rolled-back write (a duplicate key, say) or transaction made the engine forget every
    fact of every collection, and the next reads probed them all again: a dozen scans of each
    collection read, seconds on a large one, with every other client waiting. What the
    trigger recorded during the write holds for the state restored as well (see
    :class:`_ProbedFacts`), so here only the facts probed inside the transaction are
    forgotten. The engine's session runtime clears the caches after a rollback in one step,
    which a failed write and an aborted transaction both take (marked here), and commits in
    two (after which the facts probed inside the transaction are settled)."""
    runtime = getattr(engine, "_session_runtime", None)
    clear = getattr(runtime, "_clear_rollback_sensitive_caches", None)
    commits = [getattr(runtime, name, None) for name in _COMMITS]
    if clear is None or None in commits or getattr(clear, "_agent_memory_marked", False):
        return
    facts = _facts(engine)

    @functools.wraps(clear)
    def cleared_after_rollback() -> None:
        facts.rolling_back.active = True
        try:
            clear()
        finally:
            facts.rolling_back.active = False

    def settling(commit: Any) -> Any:
        @functools.wraps(commit)
        def committed(*args: Any, **kwargs: Any) -> Any:
            result = commit(*args, **kwargs)
            cache = engine._collection_features_cache
            if isinstance(cache, _ProbedFacts) and cache.unsettled:
                with facts.lock:
                    cache.settle(getattr(engine, "_connection", None))
            return result

        return committed

    cleared_after_rollback._agent_memory_marked = True  # type: ignore[attr-defined]
    runtime._clear_rollback_sensitive_caches = cleared_after_rollback
    for name, commit in zip(_COMMITS, commits, strict=True):
        setattr(runtime, name, settling(commit))


#: The session runtime's commits: of one write, and of a session's transaction.
_COMMITS = ("commit_write", "commit_session_transaction")


def _connect(original: Any) -> Any:
    def _connect_sync(self: Any) -> None:
        _probed_facts(self)
        _rollbacks_keep_facts(self)
        original(self)
        connection = getattr(self, "_connection", None)
        if connection is not None:
            try:
                _watch(connection, self)  # a new file has its tables only now
            except sqlite3.Error:
                logger.debug("engine_connection_untuned", exc_info=True)
            with self._lock:
                _guard(connection)  # a new file: before its first read
                _multikey_entries_by_document(connection)
            try:
                with self._lock:  # a file written before: its indexes once, at the start
                    started = time.perf_counter()
                    if count := narrow_indexes(self, connection):
                        logger.info(
                            "engine_indexes_narrowed",
                            indexes=count,
                            seconds=round(time.perf_counter() - started, 1),
                        )
            except sqlite3.Error:
                logger.warning("engine_indexes_not_narrowed", exc_info=True)

    return _connect_sync


#: The namespace condition an index made partial ends with (see :func:`narrow_indexes`).
_NARROWED = re.compile(r" WHERE db_name = '(?:[^']|'')*' AND coll_name = '(?:[^']|'')*'\Z")
#: A partial index on the engine's table that holds no document (see :func:`plans_guarded`).
PLAN_GUARD = "agent_memory_plan_guard"


def plans_guarded(connection: sqlite3.Connection) -> bool:
    """Whether the file has :data:`PLAN_GUARD`, a partial index no document is in, without
    which an index made partial on its collection may answer for another collection.

    SQLite plans a statement with a partial index when its bound values match the index's
    condition, and marks the values it compared so that binding others plans it again. A
    statement prepared while no partial index existed has none marked, and keeps none when
    a schema change re-plans it: re-planned with one collection's values bound after that
    collection's index was made partial, it read that index for every collection bound
    later, and found nothing in the others (``docs/upstream/sqlite-partial-index-replan.md``).
    With a partial index on ``db_name`` from the start, every statement of the engine is
    prepared with its ``db_name`` compared, and each execution, binding it again, is planned
    for its own values. Created here when it is missing and the table exists, outside a
    transaction; ``False`` when it is not there."""
    exists = "SELECT 1 FROM sqlite_schema WHERE type = ? AND name = ?"
    if connection.execute(exists, ("index", PLAN_GUARD)).fetchone() is not None:
        return True
    if (
        connection.in_transaction
        or not connection.execute(exists, ("table", "documents")).fetchone()
    ):
        return False
    connection.execute(f"CREATE INDEX {PLAN_GUARD} ON documents (db_name) WHERE db_name = ''")
    return True


#: An index on the engine's multikey entries by document (see below).
MULTIKEY_BY_DOCUMENT = "agent_memory_multikey_entries_storage"


def _multikey_entries_by_document(connection: sqlite3.Connection) -> None:
    """Each write of a document replaces its entries in every multikey index, deleting them
    by collection, storage key and index; the engine's only index on those entries starts
    with the collection and index and goes on with the element, so the delete read every
    entry of the index: a write cost grew with the collection (logging an action with its
    ``memory_ids`` went from 145 a second at 10,000 actions to 36 at 100,000). The engine
    keeps such an index for its scalar entries; here the multikey entries get the same,
    once, when the file has the table (outside a transaction)."""
    try:
        exists = connection.execute(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'multikey_entries'"
        ).fetchone()
        if exists is None or connection.in_transaction:
            return
        connection.execute(
            f"CREATE INDEX IF NOT EXISTS {MULTIKEY_BY_DOCUMENT} "
            "ON multikey_entries (collection_id, storage_key, index_name)"
        )
    except sqlite3.Error:
        logger.warning("engine_multikey_index_missing", exc_info=True)


def _guard(connection: sqlite3.Connection) -> None:
    try:
        plans_guarded(connection)
    except sqlite3.Error:
        logger.warning("engine_plan_guard_missing", exc_info=True)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def narrow_indexes(
    engine: Any, connection: sqlite3.Connection, namespace: tuple[str, str] | None = None
) -> int:
    """Make each of the engine's indexes on its shared ``documents`` table partial on the
    collection it belongs to (those of ``namespace``, or all); the number rebuilt.

    The engine indexes every collection's documents in every index: each write to any
    collection computed and stored an entry in each of the ~30 indexes of the framework's
    collections, and the index trees grew with all the data. A partial index holds only
    its collection's documents, and SQLite still uses it for the engine's reads, whose
    ``db_name = ? AND coll_name = ?`` it matches against the bound values. Nothing is
    rebuilt inside an open transaction (it is done at the next start), nor in a file without
    :data:`PLAN_GUARD`."""
    query = (
        "SELECT i.db_name, i.coll_name, s.name, s.sql FROM indexes AS i JOIN sqlite_schema AS s "
        "ON s.type = 'index' AND s.name = i.physical_name AND s.tbl_name = 'documents'"
    )
    rows = connection.execute(
        query + (" WHERE i.db_name = ? AND i.coll_name = ?" if namespace else ""), namespace or ()
    ).fetchall()
    rebuilt = []
    for db_name, coll_name, name, sql in rows:
        where = f" WHERE db_name = {_literal(db_name)} AND coll_name = {_literal(coll_name)}"
        if not sql or sql.endswith(where):
            continue
        whole = _NARROWED.sub("", sql)  # a renamed collection's old condition goes
        if whole.endswith(")"):  # the engine's own shape: CREATE INDEX ... ON documents (...)
            rebuilt.append((name, whole + where))
    # Without the guard a partial index could answer for another collection: left whole.
    if not rebuilt or connection.in_transaction or not plans_guarded(connection):
        return 0
    for name, sql in rebuilt:  # one at a time: a stop half-way keeps what was done
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(f"DROP INDEX {engine._quote_identifier(name)}")
            connection.execute(sql)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    return len(rebuilt)


def _narrowed_on_create(original: Any) -> Any:
    def _create_index_sync(
        self: Any, db_name: str, coll_name: str, *args: Any, **kwargs: Any
    ) -> Any:
        name = original(self, db_name, coll_name, *args, **kwargs)
        with self._lock:
            narrow_indexes(self, self._require_connection(), (db_name, coll_name))
        return name

    return _create_index_sync


def _narrowed_on_rename(original: Any) -> Any:
    def _rename_collection_sync(
        self: Any, db_name: str, coll_name: str, new_name: str, *args: Any, **kwargs: Any
    ) -> Any:
        result = original(self, db_name, coll_name, new_name, *args, **kwargs)
        with self._lock:
            narrow_indexes(self, self._require_connection(), (db_name, new_name))
        return result

    return _rename_collection_sync


def _hint_without_forcing(original: Any) -> Any:
    """A hint named the index's physical name in ``INDEXED BY``, which SQLite refuses for a
    partial index ("no query solution", it cannot prove the bound namespace matches). The
    hint is still checked; SQLite then chooses the index itself (the same one)."""

    def _resolve_hint_index(self: Any, *args: Any, **kwargs: Any) -> Any:
        index = original(self, *args, **kwargs)
        if getattr(index, "physical_name", None) is not None and dataclasses.is_dataclass(index):
            return dataclasses.replace(index, physical_name=None)  # type: ignore[type-var]
        return index

    return _resolve_hint_index


def _one_connection(original: Any) -> Any:
    def _can_use_dedicated_reader(self: Any, context: Any) -> bool:
        original(self, context)  # its session check
        return False

    return _can_use_dedicated_reader


def _forget_facts(original: Any) -> Any:
    def _invalidate_collection_features_cache(
        self: Any, db_name: str | None = None, coll_name: str | None = None
    ) -> None:
        facts = _facts(self)
        with facts.lock:
            cache = self._collection_features_cache
            if db_name is None or coll_name is None:
                facts.seen.clear()
                if getattr(facts.rolling_back, "active", False) and isinstance(cache, _ProbedFacts):
                    forgotten = cache.forget_unsettled()
                    logger.debug("engine_facts_rolled_back", forgotten=forgotten, kept=len(cache))
                else:
                    cache.clear()
                return
            namespace = (db_name, coll_name)
            if namespace in facts.seen:
                facts.seen.discard(namespace)  # the trigger kept its facts up to date
                return
            for key in [key for key in list(cache) if key[:2] == namespace]:
                cache.pop(key, None)

    return _invalidate_collection_features_cache


def _indexed_equality(original: Any) -> Any:
    """String equalities and memberships stated so that an index serves them:

    - ``field == "s"``: the index's own expressions beside the engine's (which say the same
      of a plain string);
    - ``field $in ["s", ...]`` on a top-level field at which no document of the collection
      holds an array (a fact the engine keeps): the same, with ``IN``. The engine's own
      translation allows for arrays, with a subquery per document, which no index serves;
    - ``_id == "s"`` and ``_id $in ["s", ...]``: also the document's storage key, which the
      table's primary key serves (an ``_id`` is never an array). The engine read every
      document of the collection for them (a tenant's generation tokens, a batch of
      memories by id);
    - ``field > "s"`` (``>=``, ``<``, ``<=``) on a top-level field without arrays: the same
      comparison of the index's value expression, so that an index whose earlier fields the
      query fixes serves the range (a session's messages from a ``seq`` on: the engine read
      every message of the session for them);
    - ``field == "s"`` on a top-level field with a (single-field, so multikey) index, when no
      document of the collection holds a string there (:func:`text_anywhere`: the field holds
      arrays): the storage keys the index's entries list for ``"s"``. The engine asked, for
      each document, whether an entry of the index names it, by the index's first two
      columns only (its condition names the element's type, not the type's score the index
      is ordered by), so every document scanned every entry: 4 s for the actions citing one
      memory among 5,000 actions (``memory_ids``), 3 ms here;
    - a conjunction with such an ``_id`` condition (a tenant's documents by id), or with such
      an indexed array element: its other conditions are kept from the indexes (SQLite's
      unary ``+``), so that the primary key serves it. Without statistics SQLite preferred
      the tenant's index, which names every document of the tenant: ten actions by id and
      tenant took 12 to 34 ms among 30,000 of one user (by the key order of the filter),
      1.5 ms by id alone."""
    try:
        from mongoeco.core.query_plan import (
            AndCondition,
            EqualsCondition,
            GreaterThanCondition,
            GreaterThanOrEqualCondition,
            InCondition,
            LessThanCondition,
            LessThanOrEqualCondition,
        )
        from mongoeco.engines.sqlite_query import index_expressions_sql, json_path_for_field
    except ImportError:
        return None
    ranges = {
        GreaterThanCondition: ">",
        GreaterThanOrEqualCondition: ">=",
        LessThanCondition: "<",
        LessThanOrEqualCondition: "<=",
    }

    def _by_key(plan: Any) -> bool:
        """Whether the primary key serves ``plan`` (see below)."""
        if getattr(plan, "field", None) != "_id":
            return False
        if isinstance(plan, EqualsCondition):
            return type(plan.value) is str
        return (
            isinstance(plan, InCondition)
            and bool(plan.values)
            and all(type(value) is str for value in plan.values)
        )

    def _listed(self: Any, db_name: str, coll_name: str, plan: Any) -> Any:
        """The multikey index that alone answers ``plan`` (see above), or ``None``."""
        if not (
            isinstance(plan, EqualsCondition)
            and type(plan.value) is str
            and isinstance(plan.field, str)
            and "." not in plan.field
            and plan.field != "_id"
            and all(hasattr(self, name) for name in _MULTIKEY_METHODS)
        ):
            return None
        index = self._find_multikey_index(db_name, coll_name, plan.field)
        if not index or not index.get("multikey_physical_name"):
            return None
        if text_anywhere(self, db_name, coll_name, plan.field):
            return None
        return index

    def _by_listing(self: Any, db_name: str, coll_name: str, plan: Any, index: Any) -> Any:
        collection_id = self._lookup_collection_id(self._require_connection(), db_name, coll_name)
        signature = self._multikey_value_signature(plan.value)
        if collection_id is None or signature is None:
            return None
        element_type, element_key = signature
        physical = self._quote_identifier(str(index["multikey_physical_name"]))
        return (
            "documents.storage_key IN (SELECT storage_key FROM multikey_entries "
            f"INDEXED BY {physical} WHERE collection_id = ? AND index_name = ? "
            "AND type_score = ? AND element_key = ? AND element_type = ?)",
            [
                collection_id,
                index["name"],
                self._multikey_type_score(element_type),
                element_key,
                element_type,
            ],
        )

    def _translate_query_plan_with_multikey(
        self: Any, db_name: str, coll_name: str, plan: Any
    ) -> tuple[str, list[object]]:
        if isinstance(plan, EqualsCondition):
            index = _listed(self, db_name, coll_name, plan)
            listing = index and _by_listing(self, db_name, coll_name, plan, index)
            if listing:
                return listing
        if isinstance(plan, AndCondition) and hasattr(self, "_storage_key"):
            keyed = next((clause for clause in plan.clauses if _by_key(clause)), None)
            if keyed is None:
                keyed = next(
                    (c for c in plan.clauses if _listed(self, db_name, coll_name, c)), None
                )
            if keyed is not None:
                parts: list[str] = []
                values: list[object] = []
                for clause in plan.clauses:
                    part, part_params = _translate_query_plan_with_multikey(
                        self, db_name, coll_name, clause
                    )
                    parts.append(f"({part})" if clause is keyed else f"+({part})")
                    values.extend(part_params)
                return " AND ".join(parts), values
        sql, params = original(self, db_name, coll_name, plan)
        field = getattr(plan, "field", None)
        if isinstance(plan, EqualsCondition) and type(plan.value) is str:
            path = _literal(json_path_for_field(plan.field))
            plain = f"(json_type(document, {path}) = 'text' AND json_extract(document, {path}) = ?)"
            if sql == plain and params == [plan.value]:
                if field == "_id" and hasattr(self, "_storage_key"):
                    return f"({plain} AND documents.storage_key = ?)", [
                        *params,
                        self._storage_key(plan.value),
                    ]
                type_sql, value_sql = index_expressions_sql(plan.field)
                if _index_alone(plan.value):
                    return f"({type_sql} = '' AND {value_sql} = ?)", [plan.value]
                return (
                    f"({plain[1:-1]} AND {type_sql} = '' AND {value_sql} = ?)",
                    [plan.value, plan.value],
                )
        elif (
            isinstance(plan, InCondition)
            and plan.values
            and all(type(value) is str for value in plan.values)
            and isinstance(field, str)
            and "." not in field
        ):
            marks = ", ".join("?" * len(plan.values))
            values = list(plan.values)
            if field == "_id" and hasattr(self, "_storage_key"):
                keys = [self._storage_key(value) for value in values]
                return f"(({sql}) AND documents.storage_key IN ({marks}))", [*params, *keys]
            arrays = getattr(self, "_field_is_top_level_array_in_collection", None)
            if arrays is not None and not arrays(db_name, coll_name, field):
                path = _literal(json_path_for_field(field))
                type_sql, value_sql = index_expressions_sql(field)
                if all(_index_alone(value) for value in values):
                    return f"({type_sql} = '' AND {value_sql} IN ({marks}))", values
                return (
                    f"(json_type(document, {path}) = 'text' AND json_extract(document, {path}) "
                    f"IN ({marks}) AND {type_sql} = '' AND {value_sql} IN ({marks}))",
                    [*values, *values],
                )
        elif (
            type(plan) in ranges
            and type(plan.value) is str
            and isinstance(field, str)
            and "." not in field
        ):
            path = _literal(json_path_for_field(field))
            operator = ranges[type(plan)]
            plain = (
                f"(json_type(document, {path}) = 'text' AND json_extract(document, {path}) "
                f"{operator} ?)"
            )
            arrays = getattr(self, "_field_is_top_level_array_in_collection", None)
            if (
                sql == plain
                and params == [plan.value]
                and arrays is not None
                and not arrays(db_name, coll_name, field)
            ):
                type_sql, value_sql = index_expressions_sql(field)
                return (
                    f"({plain[1:-1]} AND {type_sql} = '' AND {value_sql} {operator} ?)",
                    [plan.value, plan.value],
                )
        return sql, params

    return _translate_query_plan_with_multikey


def _index_alone(value: str) -> bool:
    """Whether the index's two expressions alone say "the field is the string ``value``".

    With no type tag, the value expression is SQLite's ``json_extract`` of the field: the
    string itself, a number or boolean (never equal to a string), NULL, or for an array or
    an object its JSON text, which starts with ``[`` or ``{``. So for any other string the
    engine's own condition (``json_type`` is text and ``json_extract`` equals it) adds
    nothing, and without it SQLite answers from the index without reading the documents: a
    count of one tenant's 50,000 actions took 97 ms, 3 ms without it."""
    return not value.startswith(("[", "{"))


#: What :func:`_indexed_equality` needs of the engine to read a multikey index itself.
_MULTIKEY_METHODS = (
    "_find_multikey_index",
    "_lookup_collection_id",
    "_multikey_value_signature",
    "_multikey_type_score",
    "_quote_identifier",
    "_require_connection",
    "_collection_features_cache",
)


def _anywhere(engine: Any, db_name: str, coll_name: str, fact: str, condition: str) -> bool:
    """A fact of this package "some document of the collection meets ``condition``" (SQL on
    ``document``), cached under ``fact`` beside the engine's own: probed once, then kept by
    each write through the trigger. Call it holding the engine's lock."""
    key = (db_name, coll_name, fact)
    cache = engine._collection_features_cache
    if key not in cache:
        row = (
            engine._require_connection()
            .execute(
                "SELECT 1 FROM documents WHERE db_name = ? AND coll_name = ? AND "
                f"({condition}) LIMIT 1",
                (db_name, coll_name),
            )
            .fetchone()
        )
        cache[key] = row is not None
    return bool(cache[key])


def text_anywhere(engine: Any, db_name: str, coll_name: str, field: str) -> bool:
    """Whether any document of the collection holds a string at the top-level ``field``
    (:data:`~agent_memory.mongo._engine_features.TEXT_AT`). Call it holding the engine's
    lock."""
    from mongoeco.engines.sqlite_query import json_path_for_field

    path = _literal(json_path_for_field(field))
    return _anywhere(
        engine, db_name, coll_name, f"{TEXT_AT}:{field}", f"json_type(document, {path}) = 'text'"
    )


def sort_shape_anywhere(engine: Any, db_name: str, coll_name: str, field: str) -> bool:
    """Whether any document of the collection holds at ``field`` a value the engine's sort
    check looks for (see :data:`~agent_memory.mongo._engine_features.SORT_SHAPE`). Call it
    holding the engine's lock."""
    from mongoeco.engines.sqlite_query import json_path_for_field, type_expression_sql

    path = _literal(json_path_for_field(field))
    condition = (
        f"json_type(document, {path}) = 'array' OR (json_type(document, {path}) "
        f"= 'object' AND {type_expression_sql(field)} IN ({_SORT_SHAPE_SQL}))"
    )
    return _anywhere(engine, db_name, coll_name, f"{SORT_SHAPE}:{field}", condition)


def _indexed_sort_check(original: Any) -> Any:
    """The check whether a sort needs Python looks for an array or an object among the
    matching documents; it filtered them with the array-aware translation, which no index
    serves, instead of the engine's own (the one the read itself then runs). Even so it
    reads every matching document, so its cost grew with the data (a user's actions, a
    user's sessions); it now runs only when some document of the collection holds such a
    value at a sort field (:func:`sort_shape_anywhere`), which in the framework none does."""
    try:
        from mongoeco.engines import _sqlite_plan_heuristics as heuristics
        from mongoeco.engines.sqlite_query import json_path_for_field, type_expression_sql
    except ImportError:
        return None
    check = getattr(heuristics, "sort_requires_python", None)
    expected = {
        "db_name", "coll_name", "plan", "sort", "plan_has_array_traversing_paths",
        "translate_query_plan", "field_traverses_array_in_collection",
        "field_contains_tagged_bytes_in_collection",
        "field_contains_tagged_undefined_in_collection", "fetchone", "type_expression_sql",
        "json_path_for_field",
    }  # fmt: skip
    if check is None or set(inspect.signature(check).parameters) != expected:
        return None

    def _sort_requires_python(
        self: Any, db_name: str, coll_name: str, plan: Any, sort: Any
    ) -> bool:
        def fetchone(sql: str, params: Any) -> Any:
            # The check's last probe scans every document the filter matches (all of a
            # user's actions, say: a cost that grows with the data); when no document of the
            # collection has such a value at any sort field, none of the matching ones has.
            if not any(sort_shape_anywhere(self, db_name, coll_name, f) for f, _ in sort or ()):
                return None
            return self._require_connection().execute(sql, params).fetchone()

        return bool(
            check(
                db_name=db_name,
                coll_name=coll_name,
                plan=plan,
                sort=sort,
                plan_has_array_traversing_paths=self._plan_has_array_traversing_paths,
                translate_query_plan=lambda node: self._translate_query_plan_with_multikey(
                    db_name, coll_name, node
                ),
                field_traverses_array_in_collection=self._field_traverses_array_in_collection,
                field_contains_tagged_bytes_in_collection=(
                    self._field_contains_tagged_bytes_in_collection
                ),
                field_contains_tagged_undefined_in_collection=(
                    self._field_contains_tagged_undefined_in_collection
                ),
                fetchone=fetchone,
                type_expression_sql=type_expression_sql,
                json_path_for_field=json_path_for_field,
            )
        )

    return _sort_requires_python


def _plain(document: Any, field: str) -> Any:
    """The value at ``field`` through nested documents only (``None`` past anything else)."""
    value = document
    for part in field.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _indexed_unique(original: Any) -> Any:
    """A compound unique index was checked by decoding every document of the collection
    at each insert or update (only single-field ones had an indexed check): 10 ms per write
    at 500 sessions, 40 ms at 2,000. Here, when every value of the key is a plain string,
    the documents that could hold the same key are found through the index's own
    expressions, and the engine's own comparison decides among them."""
    try:
        from mongoeco.engines.sqlite_query import index_expressions_sql
        from mongoeco.engines.virtual_indexes import document_in_virtual_index
    except ImportError:
        return None
    parameters = list(inspect.signature(original).parameters)
    if parameters[:5] != ["self", "conn", "collection_id", "index", "document"]:
        return None

    def _unique_index_conflict_via_scalar_entries(
        self: Any,
        conn: sqlite3.Connection,
        collection_id: int | None,
        index: Any,
        document: Any,
        *,
        exclude_storage_key: str | None,
    ) -> bool | None:
        found = original(
            self, conn, collection_id, index, document, exclude_storage_key=exclude_storage_key
        )
        fields = list(index.get("fields") or ())
        if found is not None or len(fields) < 2 or index.get("collation") is not None:
            return found
        if any(part.isdigit() for field in fields for part in field.split(".")):
            return None
        values = [_plain(document, field) for field in fields]
        namespace = next(
            (name for name, cid in list(self._collection_id_cache.items()) if cid == collection_id),
            None,
        )
        if namespace is None or not all(type(value) is str for value in values):
            return None
        key = tuple(self._index_value(document, field) for field in fields)
        where = " AND ".join(
            f"{type_sql} = '' AND {value_sql} = ?"
            for type_sql, value_sql in map(index_expressions_sql, fields)
        )
        rows = conn.execute(
            "SELECT storage_key, document FROM documents "
            f"WHERE db_name = ? AND coll_name = ? AND {where}",
            (*namespace, *values),
        )
        for storage_key, payload in rows:
            if storage_key == exclude_storage_key:
                continue
            existing = self._deserialize_document(payload)
            if not document_in_virtual_index(existing, index):
                continue
            if tuple(self._index_value(existing, field) for field in fields) == key:
                return True
        return False

    return _unique_index_conflict_via_scalar_entries


class _Dispatcher:
    """Delivers committed changes to the engine's change-stream hubs from one thread of its
    own, several writes' worth at a time, instead of on the server's event loop at every
    write (a lease, a heartbeat thread and a dozen statements each time: half the cost of
    an insert)."""

    def __init__(self, engine: Any, dispatch: Any) -> None:
        self._engine = weakref.ref(engine)
        self._dispatch = dispatch
        self._pending: dict[str, Any] = {}
        self._busy = False
        self._stopped = False
        self._condition = threading.Condition()
        self._thread = threading.Thread(
            target=self._run, name="agent-memory-change-dispatch", daemon=True
        )
        self._thread.start()

    def submit(self, consumer_id: str, consumer: Any) -> None:
        with self._condition:
            self._pending[consumer_id] = consumer  # one delivery reads all that is new
            self._condition.notify_all()

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until every change submitted so far has been delivered."""
        with self._condition:
            self._condition.wait_for(lambda: not self._pending and not self._busy, timeout)

    def stop(self) -> None:
        self.flush()
        with self._condition:
            self._stopped = True
            self._condition.notify_all()
        self._thread.join(timeout=30.0)

    def _run(self) -> None:
        while True:
            with self._condition:
                self._condition.wait_for(lambda: self._pending or self._stopped)
                if self._stopped and not self._pending:
                    return
                batch, self._pending, self._busy = self._pending, {}, True
            engine = self._engine()
            later: dict[str, Any] = {}
            try:
                for consumer_id, consumer in batch.items():
                    if engine is None:
                        break
                    try:
                        if not self._deliver(engine, consumer_id, consumer):
                            later[consumer_id] = consumer
                    except Exception:  # the engine records a gap; watchers see it
                        logger.warning("engine_change_dispatch_failed", exc_info=True)
            finally:
                del engine
                with self._condition:
                    for consumer_id, consumer in later.items():
                        self._pending.setdefault(consumer_id, consumer)
                    self._busy = False
                    self._condition.notify_all()
            if later:
                time.sleep(_RETRY_SECONDS)

    def _deliver(self, engine: Any, consumer_id: str, consumer: Any) -> bool:
        """Deliver under the engine's lock, when no transaction is open on its connection
        (a commit on the delivery connection meanwhile would make that transaction's next
        write fail with "database is locked"); ``False``: try again shortly."""
        with engine._lock:
            connection = getattr(engine, "_connection", None)
            if connection is not None and connection.in_transaction:
                return False
            self._dispatch(engine, consumer_id, consumer)
            return True


def _dispatcher(engine: Any, dispatch: Any) -> _Dispatcher:
    found = engine.__dict__.get("_agent_memory_dispatcher")
    if found is None:
        with _STATE_LOCK:
            found = engine.__dict__.get("_agent_memory_dispatcher")
            if found is None:
                found = engine.__dict__["_agent_memory_dispatcher"] = _Dispatcher(engine, dispatch)
    return found


def _dispatch_later(original: Any) -> Any:
    def dispatch_committed_changes(self: Any, consumer_id: str, consumer: Any) -> None:
        _dispatcher(self, original).submit(consumer_id, consumer)

    return dispatch_committed_changes


def _disconnect(original: Any) -> Any:
    def _disconnect_sync(self: Any) -> None:
        dispatcher = self.__dict__.get("_agent_memory_dispatcher")
        last = getattr(self, "_connection_count", 0) <= 1
        if dispatcher is not None:
            if last:  # deliver what is committed while the storage is still open
                self.__dict__.pop("_agent_memory_dispatcher", None)
                dispatcher.stop()
            else:
                dispatcher.flush()
        original(self)

    return _disconnect_sync


@functools.lru_cache(maxsize=32)
def _takes_wrappers(decode: Any) -> bool:
    try:
        return "preserve_bson_wrappers" in inspect.signature(decode).parameters
    except (TypeError, ValueError):
        return False


def _decoder(original: Any) -> Any:
    """Decoding a stored document with a tagged value asked ``inspect.signature`` of the
    codec every time whether it takes ``preserve_bson_wrappers`` (3% of the server's busy
    time under the soak); the answer is kept per decode function."""
    if list(inspect.signature(original).parameters) != [
        "self",
        "payload",
        "preserve_bson_wrappers",
    ]:
        return None

    def _decode_codec_payload(self: Any, payload: Any, *, preserve_bson_wrappers: bool) -> Any:
        decode = self._codec.decode
        if _takes_wrappers(getattr(decode, "__func__", decode)):
            return decode(payload, preserve_bson_wrappers=preserve_bson_wrappers)
        return decode(payload)

    return _decode_codec_payload


#: The engine's blocking steps that touch one document, one short batch of a read, or the
#: catalog: run on the server's event loop when the engine is free (see ``_inline``).
SHORT_STEPS = frozenset(
    {
        "fetch",  # one batch of a read (at most 64 documents or 1 MB)
        "_get_document_sync",
        "_insert_document_sync",
        "_update_with_operation_sync",
        "_delete_document_sync",
        "_delete_matching_document_sync",
        "_plan_find_semantics_sync",
        "_index_information_sync",
        "_list_indexes_sync",
        "_list_collections_sync",
        "_collection_options_sync",
    }
)


def _inline(original: Any) -> Any:
    """Every blocking step went to a pool of threads and back: a future, a thread woken, the
    event loop woken through its socket, for a step that takes a fraction of a millisecond;
    and the steps queue on the engine's one lock anyway. A short step (:data:`SHORT_STEPS`)
    runs on the event loop once it holds the lock; a long one (index builds, bulk inserts,
    counts, drops), or a short one that did not get the lock within
    :data:`INLINE_WAIT_SECONDS` (another thread holds it: the change delivery, or a long
    step), goes to the pool as before. The loop is thus held at most that long behind
    another thread, and still answers ``hello`` while a long step runs."""
    if not inspect.iscoroutinefunction(original) or list(
        inspect.signature(original).parameters
    ) != ["self", "func", "args", "kwargs"]:
        return None

    async def _run_blocking(self: Any, func: Any, /, *args: Any, **kwargs: Any) -> Any:
        steps = _COMMAND_STEPS.get()
        # A command of many steps (an update_many writes document by document): on the loop,
        # every step of it would run between two of each other command's (a read needs
        # several turns of the loop), and a one-document read beside it would wait about as
        # long as the whole write. Past its first steps it goes to the pool: the loop stays free.
        if steps is not None:
            steps.count += 1
        to_pool = steps is not None and steps.count > INLINE_STEPS_PER_COMMAND
        if not to_pool:
            # Let the loop serve its other clients first: an operation made of many steps (a
            # delete_many deletes document by document) must not hold it from start to end,
            # or a client's heartbeat goes unanswered and it drops its connections.
            await asyncio.sleep(0)
        lock = getattr(self, "_lock", None)
        inline = (
            not to_pool
            and lock is not None
            and getattr(func, "__name__", None) in SHORT_STEPS
            and lock.acquire(timeout=INLINE_WAIT_SECONDS)
        )
        started = time.perf_counter()
        try:
            if inline:
                try:
                    # As the pool runs it: in a copy of the command's context.
                    return contextvars.copy_context().run(func, *args, **kwargs)
                finally:
                    lock.release()
            return await original(self, func, *args, **kwargs)
        finally:
            if steps is not None:
                steps.seconds += time.perf_counter() - started

    return _run_blocking


@contextlib.contextmanager
def counting_steps() -> Iterator[CommandSteps]:
    """Count the engine steps of one command served (the wire server's guard wraps each
    command in it): past :data:`INLINE_STEPS_PER_COMMAND` its steps run in the pool."""
    steps = CommandSteps()
    token = _COMMAND_STEPS.set(steps)
    try:
        yield steps
    finally:
        _COMMAND_STEPS.reset(token)


def _no_change_delivery(original: Any) -> Any:
    """The engine's capabilities with no change delivery (see the module's docstring)."""
    if not dataclasses.is_dataclass(original) or getattr(original, "change_delivery", None) != (
        "transactional-outbox"
    ):
        return None
    return dataclasses.replace(original, change_delivery="none")


#: Set while a write of the adjusted engine runs: the outbox append does nothing.
_UNPUBLISHED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "agent_memory_unpublished", default=False
)


def _outbox_skippable() -> bool:
    """Make mongoeco's outbox append (a function of its SQLite engine's module, called by
    name from each write) do nothing while :data:`_UNPUBLISHED` is set; other engines in the
    process (the stock one) append as before. ``False`` when this mongoeco has no such
    function."""
    try:
        from mongoeco.engines import sqlite as module
    except ImportError:
        return False
    with _STATE_LOCK:
        append = getattr(module, "_sqlite_append_change", None)
        if append is None or not callable(append):
            return False
        if getattr(append, "agent_memory_skippable", False):
            return True

        @functools.wraps(append)
        def append_change(*args: Any, **kwargs: Any) -> Any:
            return None if _UNPUBLISHED.get() else append(*args, **kwargs)

        append_change.agent_memory_skippable = True  # type: ignore[attr-defined]
        module._sqlite_append_change = append_change
        return True


def _unpublished(original: Any) -> Any:
    """A write that records nothing in the change outbox, when the engine declares no change
    delivery (otherwise mongoeco expects the outbox's sequence number of each write)."""
    if not _outbox_skippable():
        return None

    @functools.wraps(original)
    def write(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.capabilities.monotonic_commit_sequence:
            return original(self, *args, **kwargs)
        token = _UNPUBLISHED.set(True)
        try:
            return original(self, *args, **kwargs)
        finally:
            _UNPUBLISHED.reset(token)

    return write


#: The engine's writes that append to the change outbox.
_PUBLISHING_WRITES = (
    "_insert_document_sync",
    "_insert_documents_sync",
    "_merge_document_sync",
    "_update_with_operation_sync",
    "_delete_matching_document_sync",
)

#: Method name -> factory of its replacement from the original (``None``: leave it).
ADJUSTMENTS: dict[str, Callable[[Any], Any]] = {
    "capabilities": _no_change_delivery,
    **dict.fromkeys(_PUBLISHING_WRITES, _unpublished),
    "_create_sqlite_connection": _create_connection,
    "_connect_sync": _connect,
    "_can_use_dedicated_reader": _one_connection,
    "_invalidate_collection_features_cache": _forget_facts,
    "_translate_query_plan_with_multikey": _indexed_equality,
    "_sort_requires_python": _indexed_sort_check,
    "_unique_index_conflict_via_scalar_entries": _indexed_unique,
    "dispatch_committed_changes": _dispatch_later,
    "_disconnect_sync": _disconnect,
    "_decode_codec_payload": _decoder,
    "_run_blocking": _inline,
    "_create_index_sync": _narrowed_on_create,
    "_rename_collection_sync": _narrowed_on_rename,
    "_resolve_hint_index": _hint_without_forcing,
}

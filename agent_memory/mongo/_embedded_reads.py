"""Small documents read by ``_id`` straight from the embedded database, in the process serving it.

Every search of a kept corpus first reads its tenant's generation token (one small document
by ``_id``, :class:`~agent_memory.mongo.search.snapshots.TokenReads`), so that a write by any
process reaches the next search. Through the wire server that read is a round trip: the
command encoded, handed to the server's thread, queued behind whatever command the engine is
applying (the engine applies one at a time: the access statistics of the previous retrieve,
another user's ingest), answered and decoded. At 10,000 memories on a 2-core machine it was
half of a retrieve's time (2.8 of 5.8 ms), and with the access statistics of back-to-back
retrieves more (docs/benchmarks.md, "Fifth pass").

The process that serves the database holds its file, so it reads those documents with a
SQLite connection of its own on that file instead: a lookup by primary key, a few tens of
microseconds. SQLite's write-ahead log lets that connection read while the engine writes,
and it sees the last committed state, which holds every write the server has acknowledged to
any client (the engine commits before it replies); a write still inside an open transaction
is not seen, as a read outside that transaction must not see it.

Only what reads the same as the engine's own ``find`` comes here: documents whose ``_id``
is a string, in a collection without a TTL index (the engine removes expired documents before
it reads) and without a default collation. Anything else, and any SQLite error (a file being
repaired, a schema this module does not know), answers ``None`` and the caller reads through
the server as before. Values are decoded by the engine's own codec.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent_memory._log import get_logger
from agent_memory.mongo._engine_counters import plain_field, stored_documents

__all__ = ["FileReads"]

logger = get_logger(__name__)


class FileReads:
    """Reads of ``collection`` in ``db_name`` from the file ``database`` that ``engine``
    (mongoeco's SQLite engine, served by this process) keeps; ``serving()`` says whether
    that engine still serves the file (a stopped server's file is another program's)."""

    def __init__(
        self,
        engine: Any,
        database: Path,
        db_name: str,
        collection: str,
        serving: Callable[[], bool],
    ) -> None:
        self._engine = engine
        self._database = database
        self._db_name = db_name
        self._collection = collection
        self._serving = serving
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._closed = False
        # A child of fork() has no server thread, and SQLite forbids using a connection
        # opened before the fork: the child declines every read.
        self._pid = os.getpid()
        #: Reads answered from the file, and reads declined (for tests and diagnostics).
        self.answered = 0
        self.declined = 0

    def find(self, ids: Sequence[str], fields: Sequence[str]) -> list[dict[str, Any]] | None:
        """The documents of ``ids`` that exist, each with ``_id`` and those of ``fields``
        (plain top-level names) it has; ``None`` when this read is not answered here."""
        with self._lock:
            found = self._find(ids, fields)
        if found is None:
            self.declined += 1
        else:
            self.answered += 1
        return found

    def _find(self, ids: Sequence[str], fields: Sequence[str]) -> list[dict[str, Any]] | None:
        if self._closed or os.getpid() != self._pid or not self._serving():
            return None
        if not all(isinstance(i, str) for i in ids) or not all(plain_field(f) for f in fields):
            return None
        try:
            connection = self._open()
            if not self._plain_collection(connection):
                return None
            keys = {self._engine._storage_key(document_id): document_id for document_id in ids}
            found: list[dict[str, Any]] = []
            for storage_key, payload in stored_documents(
                connection, self._db_name, self._collection, list(keys), ["_id", *fields]
            ):
                document = self._engine._deserialize_document(payload, preserve_bson_wrappers=False)
                if document.get("_id") != keys.get(storage_key):
                    return None  # stored otherwise than this module knows
                found.append(document)
            return found
        except sqlite3.Error as exc:  # busy, or the file changing: the server reads this one
            logger.debug("embedded_file_read_declined", error=type(exc).__name__)
            self._drop()
            return None
        except Exception as exc:  # an engine these reads do not know: the server reads all
            logger.debug("embedded_file_reads_stopped", error=type(exc).__name__)
            self._closed = True
            self._drop()
            return None

    def _open(self) -> sqlite3.Connection:
        if self._connection is None:
            uri = self._database.resolve().as_uri() + "?mode=ro"
            connection = sqlite3.connect(
                uri, uri=True, isolation_level=None, check_same_thread=False, timeout=0.05
            )
            try:
                connection.execute("PRAGMA query_only = 1")
            except BaseException:
                connection.close()
                raise
            self._connection = connection
        return self._connection

    def _plain_collection(self, connection: sqlite3.Connection) -> bool:
        """No TTL index and no default collation: the engine's ``find`` reads what is stored."""
        row = connection.execute(
            "SELECT (SELECT count(*) FROM indexes WHERE db_name = ?1 AND coll_name = ?2 AND "
            "expire_after_seconds IS NOT NULL), (SELECT json_extract(options_json, "
            "'$.collation') FROM collections WHERE db_name = ?1 AND coll_name = ?2)",
            (self._db_name, self._collection),
        ).fetchone()
        return row is not None and row[0] == 0 and row[1] is None

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.close()
            except sqlite3.Error:  # pragma: no cover - closing a read connection
                pass

    def close(self) -> None:
        """Close the file's connection; every later read is declined."""
        with self._lock:
            self._closed = True
            self._drop()

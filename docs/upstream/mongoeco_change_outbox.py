"""Reproduction: mongoeco's SQLite engine records every write in its change outbox and
delivers it, even when no change stream is open (mongoeco 4.11).

    python docs/upstream/mongoeco_change_outbox.py

A client writes to a file-backed engine with no change stream open: N inserts, each followed
by an update of the same document. Prints the SQL statements a write runs (traced on the
engine's connections), those of them on the ``change_outbox*`` tables, the threads started,
and the mean time of a write; then the same with the engine declaring no change delivery
(``change_delivery="none"``, a mode mongoeco supports) and the outbox append made a no-op.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import tempfile
import threading
import time
from pathlib import Path

import mongoeco.engines.sqlite as sqlite_engine
from mongoeco import MongoClient
from mongoeco.engines import SQLiteEngine

WRITES = 300


class Traced(SQLiteEngine):
    """The stock engine, with every SQL statement it runs counted."""

    statements: list[str]

    def _create_sqlite_connection(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        connection: sqlite3.Connection = super()._create_sqlite_connection(*args, **kwargs)
        connection.set_trace_callback(self.statements.append)
        return connection


class NoDelivery(Traced):
    capabilities = dataclasses.replace(SQLiteEngine.capabilities, change_delivery="none")


def run(engine_class: type[Traced], folder: str) -> None:
    engine_class.statements = []
    engine = engine_class(str(Path(folder) / f"{engine_class.__name__}.sqlite3"))
    client = MongoClient(engine=engine)
    docs = client["db"]["docs"]
    docs.insert_one({"_id": "warm-up"})
    threads_before = threading.active_count()
    started_threads = [0]
    start = threading.Thread.start

    def counted_start(self):  # type: ignore[no-untyped-def]
        started_threads[0] += 1
        return start(self)

    threading.Thread.start = counted_start  # type: ignore[method-assign]
    engine_class.statements.clear()
    began = time.perf_counter()
    for i in range(WRITES):
        docs.insert_one({"_id": f"d{i}", "text": "x" * 200, "n": i})
        docs.update_one({"_id": f"d{i}"}, {"$set": {"n": -i}})
    elapsed = (time.perf_counter() - began) / (2 * WRITES) * 1000
    threading.Thread.start = start  # type: ignore[method-assign]
    statements = engine_class.statements
    outbox = [s for s in statements if "change_outbox" in s]
    print(
        f"{engine_class.__name__:9} {len(statements) / (2 * WRITES):5.1f} statements a write, "
        f"{len(outbox) / (2 * WRITES):4.1f} on the outbox; {started_threads[0]:4d} threads "
        f"started; {elapsed:5.2f} ms a write (threads alive before: {threads_before})"
    )
    client.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        run(Traced, folder)
        append = sqlite_engine._sqlite_append_change
        sqlite_engine._sqlite_append_change = lambda *args, **kwargs: None
        try:
            run(NoDelivery, folder)
        finally:
            sqlite_engine._sqlite_append_change = append


if __name__ == "__main__":
    main()

"""Reproduction: a write the engine refuses (a duplicate key) makes the next read of every
collection probe it again, a dozen scans each (mongoeco 4.11, SQLite engine).

    python docs/upstream/mongoeco_rollback_facts.py

At 5,000 and 20,000 documents in each of two collections, prints the time and the statements
over the collection of a find with a sort, repeated with no write between, and right after an
insert into the *other* collection that fails on its unique index.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path

from mongoeco import MongoClient
from mongoeco.engines import SQLiteEngine
from mongoeco.errors import DuplicateKeyError

SIZES = (5_000, 20_000)
ROUNDS = 5
TRACE: list[str] = []
TRACING = [False]


class TracedEngine(SQLiteEngine):
    def _create_sqlite_connection(self) -> sqlite3.Connection:
        connection = super()._create_sqlite_connection()
        connection.set_trace_callback(lambda sql: TRACING[0] and TRACE.append(sql))
        return connection


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    db = MongoClient(engine=TracedEngine(str(folder / "rollback.sqlite")))["repro"]
    messages, jobs = db["messages"], db["jobs"]
    messages.create_index([("tenant", 1), ("session", 1), ("seq", 1)], name="tenant_session_seq")
    jobs.create_index([("key", 1)], name="key", unique=True)
    jobs.insert_one({"key": "taken"})

    def find() -> list:
        return messages.find({"tenant": "t1", "session": "s3"}).sort("seq", 1).to_list()

    have = 0
    for size in SIZES:
        messages.insert_many(
            [
                {"tenant": "t1", "session": f"s{i % 500}", "seq": f"{i:08d}", "text": "x" * 200}
                for i in range(have, size)
            ]
        )
        have = size
        find()
        for label, refused in (("repeated, no write", False), ("after a refused insert", True)):
            TRACE.clear()
            elapsed = 0.0
            for _ in range(ROUNDS):
                if refused:
                    try:
                        jobs.insert_one({"key": "taken"})  # another collection
                    except DuplicateKeyError:
                        pass
                TRACING[0] = True
                started = time.perf_counter()
                find()
                elapsed += time.perf_counter() - started
                TRACING[0] = False
            scans = sum("FROM documents" in s for s in TRACE) / ROUNDS
            print(
                f"{size:>6} documents  find {label:<24} {elapsed / ROUNDS * 1000:7.1f} ms"
                f"  {scans:4.1f} statements on the collection"
            )


if __name__ == "__main__":
    main()

"""Reproduction: mongoeco's SQLite engine answers ``$in`` of strings, on ``_id`` too, by
reading every document of the collection in SQL (mongoeco 4.11).

    python docs/upstream/mongoeco_in_strings.py

A collection with an index on ``a`` and no arrays anywhere. Prints, at growing sizes, the
mean time of a ``find`` by ``_id`` ``$in`` three ids, by ``a`` ``$in`` two values, and by
``a`` equal to one value, with SQLite's plan for each (``EXPLAIN QUERY PLAN`` of the SQL the
engine runs, caught by a trace on its connections).
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path

from mongoeco import MongoClient
from mongoeco.engines import SQLiteEngine

SIZES = (1_000, 10_000, 40_000)
PROBES = 20


class Traced(SQLiteEngine):
    last_select: str = ""

    def _create_sqlite_connection(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        connection: sqlite3.Connection = super()._create_sqlite_connection(*args, **kwargs)

        def keep(sql: str) -> None:
            if sql.lstrip().startswith("SELECT document") and "'docs'" in sql:
                Traced.last_select = sql

        connection.set_trace_callback(keep)
        return connection


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "in.sqlite3"
        client = MongoClient(engine=Traced(str(path)))
        docs = client["db"]["docs"]
        docs.create_index([("a", 1)], name="a")
        stored = 0
        for size in SIZES:
            docs.insert_many([{"_id": f"d{i}", "a": f"v{i % 100}"} for i in range(stored, size)])
            stored = size
            print(f"{size} documents:")
            reads = {
                "_id $in [3 ids]": {"_id": {"$in": ["d1", "d2", "d3"]}},
                "a $in [2 values]": {"a": {"$in": ["v1", "v2"]}},
                "a == value": {"a": "v1"},
            }
            for label, query in reads.items():
                started = time.perf_counter()
                for _ in range(PROBES):
                    found = list(docs.find(query))
                elapsed = (time.perf_counter() - started) / PROBES * 1000
                inspect = sqlite3.connect(path)
                plan = " | ".join(
                    row[3] for row in inspect.execute("EXPLAIN QUERY PLAN " + Traced.last_select)
                )
                inspect.close()
                print(f"  {label:18} {len(found):4d} found {elapsed:8.1f} ms   {plan[:110]}")
        client.close()


if __name__ == "__main__":
    main()

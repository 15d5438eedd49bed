"""Reproduction: a find with string equality on indexed fields reads every document of its
collection; the index is never used to narrow it (mongoeco 4.11, SQLite engine).

    python docs/upstream/mongoeco_string_equality_index.py

Fills a collection to 1,000, 5,000 and 20,000 documents (always the same 20 matching ones),
prints the mean time of a few finds at each size, then the SQL the engine ran for them and
SQLite's query plan for it (EXPLAIN QUERY PLAN on a separate connection), and the plan of the
same statement once the index's own expressions are added to the filter.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path

from mongoeco import MongoClient
from mongoeco.engines import SQLiteEngine
from mongoeco.engines.sqlite_query import index_expressions_sql

SIZES = (1_000, 5_000, 20_000)
REPEAT = 10
TRACE: list[str] = []
TRACING = [False]


class TracedEngine(SQLiteEngine):
    """The stock engine; every connection it opens reports its statements to TRACE."""

    def _create_sqlite_connection(self) -> sqlite3.Connection:
        connection = super()._create_sqlite_connection()
        connection.set_trace_callback(
            lambda sql: TRACING[0] and TRACE.append(" ".join(sql.split()))
        )
        return connection


def finds(c):
    return {
        "compound equality": lambda: c.find({"tenant": "t1", "session": "target"}).to_list(),
        "compound equality, sort, limit 20": lambda: (
            c.find({"tenant": "t1", "session": "target"}).sort("seq", -1).limit(20).to_list()
        ),
        "single-field equality, sort, limit 20": lambda: (
            c.find({"key": "target"}).sort("seq", -1).limit(20).to_list()
        ),
        "_id equality, find": lambda: c.find({"_id": "m0-target"}).to_list(),
        "_id equality, find_one (for comparison)": lambda: [c.find_one({"_id": "m0-target"})],
    }


def message(i: int, name: str) -> dict:
    return {
        "_id": f"m{i}-{name}",
        "tenant": "t1",
        "session": name,
        "key": name,
        "seq": i,
        "text": "x" * 200,
    }


if __name__ == "__main__":
    path = Path(tempfile.mkdtemp()) / "repro.sqlite"
    c = MongoClient(engine=TracedEngine(str(path)))["repro"]["messages"]
    c.create_index([("tenant", 1), ("session", 1), ("seq", 1)], name="tenant_session_seq")
    c.create_index([("key", 1)], name="key")
    c.insert_many([message(i, "target") for i in range(20)])
    have = 20
    for size in SIZES:
        c.insert_many([message(i, f"s{i % 500}") for i in range(have, size)])
        have = size
        for label, find in finds(c).items():
            assert len(find()) in (1, 20)
            started = time.perf_counter()
            for _ in range(REPEAT):
                find()
            ms = (time.perf_counter() - started) / REPEAT * 1000
            print(f"{size:>6} documents  {label:<40} {ms:7.1f} ms per find")

    TRACE.clear()
    TRACING[0] = True
    finds(c)["compound equality, sort, limit 20"]()
    TRACING[0] = False
    explain = sqlite3.connect(path)

    def show(title: str, sql: str) -> None:
        started = time.perf_counter()
        explain.execute(sql).fetchall()
        print(f"\n{title} ({(time.perf_counter() - started) * 1000:.1f} ms run alone):")
        for row in explain.execute("EXPLAIN QUERY PLAN " + sql):
            print("  PLAN:", row[3])

    names = explain.execute("SELECT physical_name, name FROM indexes WHERE coll_name = 'messages'")
    print("\nPhysical indexes: " + ", ".join(f"{p} is {n!r}" for p, n in names if p))
    # The statements of "compound equality, sort, limit 20" that name the value looked for.
    selects = [s for s in TRACE if s.startswith("SELECT") and "'target'" in s]
    for sql in selects:
        show("SQL: " + (sql if len(sql) < 200 else sql[:150] + " ... " + sql[-45:]), sql)
    # The last one (the read itself) with the index's two expressions per field stated as well.
    extra = " AND ".join(
        f"{t} = '' AND {v} = '{val}'"
        for (t, v), val in (
            (index_expressions_sql("tenant"), "t1"),
            (index_expressions_sql("session"), "target"),
        )
    )
    where = "coll_name = 'messages' AND "
    show(
        "The same read with the index's expressions added",
        selects[-1].replace(where, where + extra + " AND ", 1),
    )

"""Reproduction: every write makes the next read re-probe its whole collection up to a dozen
times, and the cache of probe results is changed without a lock, which can fail a write with
"dictionary changed size during iteration" (mongoeco 4.11, SQLite engine).

    python docs/upstream/mongoeco_facts_per_write.py [seconds, default 30] [switch interval, default 1e-5]

Part 1 prints, at 1,000, 5,000 and 20,000 documents, the time and statements of a find run
right after an insert_one into the same collection, and of the same find repeated with no write
in between. Part 2 runs 24 reading and 8 writing tasks of one in-process async client (the
engine runs their jobs on its worker threads, as for its wire server) for a bounded time and
counts the failures by error. The short GIL switch interval only makes the race likelier.
"""

from __future__ import annotations

import asyncio
import collections
import sqlite3
import sys
import tempfile
import time
import traceback
from pathlib import Path

from mongoeco import AsyncMongoClient, MongoClient
from mongoeco.engines import SQLiteEngine

SIZES = (1_000, 5_000, 20_000)
ROUNDS = 8
TRACE: list[str] = []
TRACING = [False]


class TracedEngine(SQLiteEngine):
    def _create_sqlite_connection(self) -> sqlite3.Connection:
        connection = super()._create_sqlite_connection()
        connection.set_trace_callback(lambda sql: TRACING[0] and TRACE.append(sql))
        return connection


def message(seq: int, session: str) -> dict:
    return {"tenant": "t1", "session": session, "seq": seq, "text": "x" * 200}


def probe_costs(folder: Path) -> None:
    c = MongoClient(engine=TracedEngine(str(folder / "probes.sqlite")))["repro"]["messages"]
    c.create_index([("tenant", 1), ("session", 1), ("seq", 1)], name="tenant_session_seq")
    find = lambda: c.find({"tenant": "t1", "session": "s3"}).sort("seq", -1).limit(20).to_list()  # noqa: E731
    have = 0
    for size in SIZES:
        c.insert_many([message(i, f"s{i % 500}") for i in range(have, size)])
        have = size
        find()
        for label, write in (("after an insert_one", True), ("repeated, no write", False)):
            TRACE.clear()
            elapsed = 0.0
            for i in range(ROUNDS):
                if write:
                    c.insert_one(message(-i, "s9"))
                    have += 1
                TRACING[0] = True
                started = time.perf_counter()
                find()
                elapsed += time.perf_counter() - started
                TRACING[0] = False
            scans = sum("FROM documents" in s for s in TRACE) / ROUNDS
            print(
                f"{size:>6} documents  find {label:<20} {elapsed / ROUNDS * 1000:6.1f} ms"
                f"  {len(TRACE) / ROUNDS:4.0f} statements, {scans:4.1f} of them on the collection"
            )


async def race(folder: Path, seconds: float) -> None:
    interval = float(sys.argv[2]) if len(sys.argv) > 2 else 1e-5
    sys.setswitchinterval(interval)
    async with AsyncMongoClient(engine=SQLiteEngine(str(folder / "race.sqlite"))) as client:
        db = client["repro"]
        colls, fields = 8, 12
        for k in range(colls):
            await db[f"c{k}"].insert_many(
                [{f"f{j}": j + 1 for j in range(fields)} for _ in range(20)]
            )
        errors, counts, where = collections.Counter(), collections.Counter(), []
        end = time.monotonic() + seconds

        async def reader(k: int) -> None:
            c, i = db[f"c{k % colls}"], 0
            while time.monotonic() < end:
                f, i = f"f{i % fields}", i + 1
                try:  # ranges with a sort: several facts of each of the 12 fields are probed
                    await c.find({f"f{j}": {"$gt": 0} for j in range(fields)}).sort(f, 1).to_list()
                    counts["reads"] += 1
                except Exception as exc:
                    errors[f"read failed: {type(exc).__name__}: {str(exc)[:60]}"] += 1

        async def writer(k: int) -> None:
            c, i = db[f"c{k % colls}"], 0
            while time.monotonic() < end:
                i += 1
                try:
                    await c.insert_one({f"f{j}": i + j for j in range(fields)})
                    counts["writes"] += 1
                except Exception as exc:
                    errors[f"write failed: {type(exc).__name__}: {str(exc)[:60]}"] += 1
                    if not where and "changed size" in str(exc):
                        frames = traceback.extract_tb(exc.__traceback__)[-3:]
                        where.extend(f"{Path(f.filename).name}:{f.name}" for f in frames)

        await asyncio.gather(*(reader(k) for k in range(24)), *(writer(k) for k in range(8)))
        sys.setswitchinterval(0.005)
        print(
            f"\n24 readers, 8 writers, {seconds:.0f} s, switch interval {interval:g} s: "
            f"{counts['reads']} reads and {counts['writes']} writes succeeded"
        )
        for message, n in errors.most_common() or [("no errors", 0)]:
            print(f"  {n:>4} x {message}")
        stored = sum([await db[f"c{k}"].count_documents({}) - 20 for k in range(colls)])
        print(f"  documents the writers left: {stored} (writes that succeeded: {counts['writes']})")
        if where:
            print("  raised in: " + " -> ".join(where))


if __name__ == "__main__":
    folder = Path(tempfile.mkdtemp())
    probe_costs(folder)
    asyncio.run(race(folder, float(sys.argv[1]) if len(sys.argv) > 1 else 30.0))

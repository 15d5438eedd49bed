"""Reproduction: mongoeco's ``find_one_and_update`` with a ``sort`` decodes every document of
the collection, whatever the filter and the indexes (mongoeco 4.11, SQLite engine).

    python docs/upstream/mongoeco_update_with_sort.py

A queue of jobs: a growing number of finished ones and 50 waiting, with an index on
``(status, run_after)``. Prints the mean time of taking the oldest waiting job with one
``find_one_and_update(..., sort=...)``, and of the same done as a sorted ``find`` with a limit
followed by ``find_one_and_update`` by ``_id``; and the documents decoded by each.
"""

from __future__ import annotations

import datetime
import tempfile
import time
from pathlib import Path

from mongoeco import MongoClient
from mongoeco.engines import SQLiteEngine

SIZES = (0, 1_000, 4_000)
PROBES = 5
NOW = datetime.datetime(2026, 1, 1, 12, 0)


def counting(engine: SQLiteEngine) -> list[int]:
    counted = [0]
    decode = type(engine)._deserialize_document

    def deserialize(self, payload):  # type: ignore[no-untyped-def]
        counted[0] += 1
        return decode(self, payload)

    type(engine)._deserialize_document = deserialize  # type: ignore[method-assign]
    return counted


def measure(jobs, counted: list[int], label: str, take) -> None:  # type: ignore[no-untyped-def]
    counted[0] = 0
    started = time.perf_counter()
    for _ in range(PROBES):
        take(jobs)
    elapsed = (time.perf_counter() - started) / PROBES * 1000
    print(f"  {label:44s} {elapsed:7.1f} ms  {counted[0] / PROBES:7.0f} decoded")


def sorted_update(jobs) -> None:  # type: ignore[no-untyped-def]
    jobs.find_one_and_update(
        {"status": "waiting", "run_after": {"$lte": NOW}},
        {"$inc": {"seen": 1}},
        sort=[("run_after", 1)],
    )


def find_then_update(jobs) -> None:  # type: ignore[no-untyped-def]
    (oldest,) = (
        jobs.find({"status": "waiting", "run_after": {"$lte": NOW}}, {"_id": 1})
        .sort("run_after", 1)
        .limit(1)
    )
    jobs.find_one_and_update({"_id": oldest["_id"], "status": "waiting"}, {"$inc": {"seen": 1}})


if __name__ == "__main__":
    engine = SQLiteEngine(str(Path(tempfile.mkdtemp()) / "jobs.sqlite"))
    jobs = MongoClient(engine=engine)["repro"]["jobs"]
    jobs.create_index([("status", 1), ("run_after", 1)], name="due")
    jobs.insert_many(
        [{"status": "waiting", "run_after": NOW - datetime.timedelta(minutes=i)} for i in range(50)]
    )
    counted = counting(engine)
    finished = 0
    for size in SIZES:
        if size > finished:
            jobs.insert_many([{"status": "done", "run_after": NOW} for _ in range(size - finished)])
            finished = size
        print(f"{size} finished jobs, 50 waiting:")
        measure(jobs, counted, "find_one_and_update(filter, sort=run_after)", sorted_update)
        measure(jobs, counted, "find(filter).sort().limit(1), then by _id", find_then_update)

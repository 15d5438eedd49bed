"""Reproduction: a $lookup with a pipeline reads and copies the whole foreign collection for
every aggregate, and runs its pipeline in Python over all of it for every input document
(mongoeco 4.11, SQLite engine).

    python docs/upstream/mongoeco_lookup_scan.py

One document in "sessions" gets its last 20 "messages" through a $lookup whose pipeline is
$match, $sort and $limit. At 1,000, 5,000 and 20,000 messages (always the same 20 matching
ones) the script prints the mean time of that aggregate, of the same $match, $sort and $limit
run as an aggregate of its own on "messages", and how many stored documents the engine decoded
for each (calls of SQLiteEngine._deserialize_document). Last, the same $lookup from 5 input
documents instead of one. (A $lookup with let and a $match on $expr behaves the same way.)
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from mongoeco import MongoClient
from mongoeco.engines import SQLiteEngine

SIZES = (1_000, 5_000, 20_000)
REPEAT = 5
DECODED = [0]


class CountingEngine(SQLiteEngine):
    def _deserialize_document(self, *args, **kwargs):
        DECODED[0] += 1
        return super()._deserialize_document(*args, **kwargs)


def last_messages(session: str) -> list[dict]:
    return [{"$match": {"session": session}}, {"$sort": {"seq": -1}}, {"$limit": 20}]


def measure(label: str, run) -> None:
    rows = run()
    DECODED[0] = 0
    started = time.perf_counter()
    for _ in range(REPEAT):
        run()
    ms = (time.perf_counter() - started) / REPEAT * 1000
    print(f"  {label:<44} {ms:8.1f} ms {DECODED[0] / REPEAT:7.0f} decoded  ({len(rows)} rows)")


if __name__ == "__main__":
    db = MongoClient(engine=CountingEngine(str(Path(tempfile.mkdtemp()) / "repro.sqlite")))["repro"]
    sessions, messages = db["sessions"], db["messages"]
    messages.create_index([("session", 1), ("seq", 1)], name="session_seq")
    sessions.insert_many([{"_id": f"s{k}", "user": "u1"} for k in range(5)])
    messages.insert_many([{"session": "s0", "seq": i, "text": "x" * 200} for i in range(20)])
    have = 20
    join = {"$lookup": {"from": "messages", "pipeline": last_messages("s0"), "as": "last"}}
    for size in SIZES:
        messages.insert_many(
            [{"session": f"other{i % 500}", "seq": i, "text": "x" * 200} for i in range(have, size)]
        )
        have = size
        print(f"{size} messages:")
        joined = sessions.aggregate([{"$match": {"_id": "s0"}}, join]).to_list()
        assert [m["seq"] for m in joined[0]["last"]] == list(range(19, -1, -1))
        measure(
            "aggregate on sessions with the $lookup",
            lambda: sessions.aggregate([{"$match": {"_id": "s0"}}, join]).to_list(),
        )
        measure(
            "the same $match/$sort/$limit on messages",
            lambda: messages.aggregate(last_messages("s0")).to_list(),
        )
    measure(
        "the $lookup from 5 sessions",
        lambda: sessions.aggregate([{"$match": {"user": "u1"}}, join]).to_list(),
    )

"""Reproduction: with a compound unique index, every insert and update decodes every document
of the collection (mongoeco 4.11, SQLite engine).

    python docs/upstream/mongoeco_compound_unique.py

Three collections get the same documents: one with no unique index, one with a unique index on
one field, one with a unique index on three fields. At 500, 1,000 and 2,000 documents the
script prints how long the insert_many that filled each one took, then per operation the mean
time and how many stored documents the engine decoded (calls of
SQLiteEngine._deserialize_document). insert_one also pays a separate scan for the _id
(docs/upstream/mongoeco-insert-scan.md); insert_many of one document does not. Last, the time
to build each kind of index over a collection that already holds documents.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from mongoeco import MongoClient
from mongoeco.engines import SQLiteEngine

SIZES = (500, 1_000, 2_000)
REPEAT = 5
DECODED = [0]
KEYS = {
    "no unique index": ([("session", 1)], False),
    "unique (key)": ([("key", 1)], True),
    "unique (tenant, user, session)": ([("tenant", 1), ("user", 1), ("session", 1)], True),
}


class CountingEngine(SQLiteEngine):
    """The stock engine, counting the stored documents it decodes."""

    def _deserialize_document(self, *args, **kwargs):
        DECODED[0] += 1
        return super()._deserialize_document(*args, **kwargs)


def document(name: str, i: int) -> dict:
    return {
        "_id": name,
        "tenant": "t1",
        "user": f"u{i % 50}",
        "session": name,
        "key": name,
        "n": 0,
        "text": "x" * 200,
    }


def operations(c, size: int) -> dict:
    return {
        "insert_one": lambda k: c.insert_one(document(f"one-{size}-{k}", k)),
        "insert_many([1 doc])": lambda k: c.insert_many([document(f"many-{size}-{k}", k)]),
        "update_one($inc n)": lambda k: c.update_one({"_id": f"d{k + 100}"}, {"$inc": {"n": 1}}),
    }


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


if __name__ == "__main__":
    db = MongoClient(engine=CountingEngine(str(Path(tempfile.mkdtemp()) / "repro.sqlite")))["repro"]
    colls = {label: db[f"c{n}"] for n, label in enumerate(KEYS)}
    for label, (keys, unique) in KEYS.items():
        colls[label].create_index(keys, name="by_key", unique=unique)
    have = 0
    for size in SIZES:
        batch = [document(f"d{i}", i) for i in range(have, size)]
        fills = [
            timed(lambda c=c, batch=batch: c.insert_many([dict(d) for d in batch]))
            for c in colls.values()
        ]
        print(
            f"insert_many of documents {have}..{size}: "
            + ", ".join(f"{label} {s:.1f} s" for label, s in zip(KEYS, fills, strict=True))
        )
        have = size
        for label, c in colls.items():
            cells = []
            for name, op in operations(c, size).items():
                DECODED[0] = 0
                elapsed = timed(lambda op=op: [op(k) for k in range(REPEAT)])
                cells.append(
                    f"{name} {elapsed / REPEAT * 1000:5.1f} ms {DECODED[0] / REPEAT:5.0f} decoded"
                )
            print(f"{size:>5} documents  {label:<31}" + "  |  ".join(cells))

    for n in (250, 500):
        c = db[f"build{n}"]
        c.insert_many([document(f"d{i}", i) for i in range(n)])
        built = [
            timed(
                lambda c=c, keys=keys, unique=unique, label=label: c.create_index(
                    keys, name=label.replace(" ", ""), unique=unique
                )
            )
            for label, (keys, unique) in KEYS.items()
        ]
        print(
            f"create_index over {n} documents: "
            + ", ".join(f"{label} {s:.2f} s" for label, s in zip(KEYS, built, strict=True))
        )

"""Reproduction: mongoeco cannot translate an equality or ``$in`` whose values are embedded
documents to SQL, so such a ``find`` decodes every document of the collection in Python, even
on ``_id`` (mongoeco 4.11, SQLite engine).

    python docs/upstream/mongoeco_document_equality.py

One small document per tenant, its ``_id`` an embedded document (``{"collection": ...,
"user_id": ...}``), as a per-tenant bookkeeping collection keeps them. Prints the mean time
of reading three of them with one ``find({"_id": {"$in": [...]}})``, with ``$or`` of
equalities, and with the same ids as strings; and the documents each read decoded.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from mongoeco import MongoClient
from mongoeco.engines import SQLiteEngine

SIZES = (100, 1_000, 3_000)
PROBES = 5


def counting(engine: SQLiteEngine) -> list[int]:
    counted = [0]
    decode = type(engine)._deserialize_document

    def deserialize(self, payload):  # type: ignore[no-untyped-def]
        counted[0] += 1
        return decode(self, payload)

    type(engine)._deserialize_document = deserialize  # type: ignore[method-assign]
    return counted


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        engine = SQLiteEngine(str(Path(folder) / "tenants.sqlite3"))
        counted = counting(engine)
        client = MongoClient(engine=engine)
        as_documents, as_strings = client["db"]["documents"], client["db"]["strings"]
        stored = 0
        for size in SIZES:
            for i in range(stored, size):
                as_documents.insert_one({"_id": {"collection": "memories", "user_id": f"u{i}"}})
                as_strings.insert_one({"_id": f"memories/u{i}"})
            stored = size
            print(f"{size} documents:")
            wanted = [{"collection": "memories", "user_id": f"u{i}"} for i in (1, 2, 3)]
            reads = {
                "find(_id $in [3 documents])": (as_documents, {"_id": {"$in": wanted}}),
                "find($or of 3 _id equalities)": (
                    as_documents,
                    {"$or": [{"_id": w} for w in wanted]},
                ),
                "find(_id $in [3 strings])": (
                    as_strings,
                    {"_id": {"$in": [f"memories/u{i}" for i in (1, 2, 3)]}},
                ),
            }
            for label, (collection, query) in reads.items():
                counted[0] = 0
                started = time.perf_counter()
                for _ in range(PROBES):
                    found = list(collection.find(query))
                elapsed = (time.perf_counter() - started) / PROBES * 1000
                assert len(found) == 3
                print(f"  {label:34} {elapsed:7.1f} ms {counted[0] // PROBES:7d} decoded")
        client.close()


if __name__ == "__main__":
    main()

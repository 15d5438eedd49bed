"""Reproduction: every index of mongoeco's SQLite engine holds every collection's documents,
so a write to one collection pays for the indexes of all the others (mongoeco 4.11).

    python docs/upstream/mongoeco_shared_indexes.py

One collection ``target`` with three indexes, and a growing number of other collections with
three indexes each (empty but for one document). Prints the mean time of inserting into
and updating in ``target`` and the number of entries in one of ``target``'s indexes, with the engine's indexes
as it builds them and after they were made partial on their own collection by hand.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path

from mongoeco import MongoClient
from mongoeco.engines import SQLiteEngine

OTHERS = (0, 3, 9)
INSERTS = 300
FIELDS = ("a", "b", "c")


def build(path: Path, others: int) -> None:
    client = MongoClient(engine=SQLiteEngine(str(path)))
    db = client["repro"]
    for name in ["target", *(f"other{i}" for i in range(others))]:
        for field in FIELDS:
            db[name].create_index([("tenant", 1), (field, 1)], name=f"tenant_{field}")
        db[name].insert_many([{"tenant": "t", "a": i, "b": str(i), "c": i} for i in range(2_000)])
    client.close()


def narrow(path: Path) -> None:
    """Each index made partial on the collection it belongs to, as it could be built."""
    connection = sqlite3.connect(path, isolation_level=None)
    rows = connection.execute(
        "SELECT i.db_name, i.coll_name, s.name, s.sql FROM indexes AS i JOIN sqlite_schema AS s "
        "ON s.name = i.physical_name AND s.tbl_name = 'documents'"
    ).fetchall()
    for db_name, coll_name, name, sql in rows:
        connection.execute(f'DROP INDEX "{name}"')
        connection.execute(f"{sql} WHERE db_name = '{db_name}' AND coll_name = '{coll_name}'")
    connection.close()


def entries(path: Path) -> int:
    """Rows of ``documents`` one of ``target``'s indexes holds an entry for."""
    connection = sqlite3.connect(path)
    (_name, where) = connection.execute(
        "SELECT s.name, instr(s.sql, ' WHERE ') FROM indexes AS i JOIN sqlite_schema AS s "
        "ON s.name = i.physical_name WHERE i.coll_name = 'target' AND i.name = 'tenant_a'"
    ).fetchone()
    partial = "WHERE db_name = 'repro' AND coll_name = 'target'" if where else ""
    (count,) = connection.execute(f"SELECT count(*) FROM documents {partial}").fetchone()
    connection.close()
    return count


def writes(path: Path) -> tuple[float, float]:
    """Mean ms per document inserted (in batches of 50, the engine's path without its
    per-document scan) and per update of one document by ``_id``."""
    client = MongoClient(engine=SQLiteEngine(str(path)))
    target = client["repro"]["target"]
    started = time.perf_counter()
    for batch in range(INSERTS // 50):
        target.insert_many(
            [
                {"tenant": "t", "a": i, "b": str(i), "c": i}
                for i in range(batch * 50, batch * 50 + 50)
            ]
        )
    inserted = (time.perf_counter() - started) / INSERTS * 1000
    ids = [d["_id"] for d in target.find({}, {"_id": 1}).limit(INSERTS)]
    started = time.perf_counter()
    for n, _id in enumerate(ids):
        target.update_one({"_id": _id}, {"$set": {"a": -n, "b": "updated"}})
    updated = (time.perf_counter() - started) / len(ids) * 1000
    client.close()
    return inserted, updated


if __name__ == "__main__":
    for others in OTHERS:
        folder = Path(tempfile.mkdtemp())
        shared, partial = folder / "shared.sqlite", folder / "partial.sqlite"
        build(shared, others)
        build(partial, others)
        narrow(partial)
        print(f"{others} other collections of 2,000 documents with 3 indexes each:")
        for label, path in (("as built", shared), ("partial", partial)):
            size = entries(path)
            inserted, updated = writes(path)
            print(
                f"  {label:9s} insert {inserted:5.2f} ms, update {updated:5.2f} ms per document; "
                f"entries in one of target's indexes {size:6d}"
            )

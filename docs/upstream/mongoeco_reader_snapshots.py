"""Reproduction: with concurrent reads, mongoeco's write-ahead log is never checkpointed back
to its start and grows for as long as the load lasts (mongoeco 4.11, SQLite engine).

    python docs/upstream/mongoeco_reader_snapshots.py [seconds per run, default 15]

Eight reading tasks and one writing task share one in-process async client (the engine runs
their jobs on its worker threads, as it does for its wire server). Every 5 s the script prints
the size of the -wal file, what a checkpoint could copy back at that moment, and how many SQLite
connections the engine opened: for the stock engine, for a subclass whose connections set
PRAGMA journal_size_limit, and for one whose reads also stay on the engine's own connection.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from mongoeco import AsyncMongoClient
from mongoeco.engines import SQLiteEngine

READERS = 8
LIMIT = 4 * 1024 * 1024
OPENED = [0]


class StockEngine(SQLiteEngine):
    """The stock engine, counting the connections it opens."""

    def _create_sqlite_connection(self) -> sqlite3.Connection:
        OPENED[0] += 1
        return super()._create_sqlite_connection()


class LimitedEngine(StockEngine):
    """Every connection asks SQLite to cut the log's file back to LIMIT after a checkpoint."""

    def _create_sqlite_connection(self) -> sqlite3.Connection:
        connection = super()._create_sqlite_connection()
        connection.execute(f"PRAGMA journal_size_limit={LIMIT}")
        return connection


class SharedReadEngine(LimitedEngine):
    """As LimitedEngine, and reads run on the engine's own connection, under its lock."""

    def _can_use_dedicated_reader(self, context) -> bool:
        super()._can_use_dedicated_reader(context)
        return False


def event(i: int, size: int) -> dict:
    return {
        "user": f"u{i % 20}",
        "session": f"s{i % 100}",
        "kind": "note",
        "seq": i,
        "text": "x" * size,
    }


def log_state(path: Path) -> tuple[int, int, int]:
    """The -wal file's size, the frames in the log and those a checkpoint can copy back now."""
    wal = Path(str(path) + "-wal")
    probe = sqlite3.connect(path)
    try:
        _, frames, copied = probe.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        probe.close()
    return (wal.stat().st_size if wal.exists() else 0), frames, copied


async def run(engine_class: type[SQLiteEngine], label: str, seconds: float) -> None:
    path = Path(tempfile.mkdtemp()) / "repro.sqlite"
    OPENED[0] = 0
    async with AsyncMongoClient(engine=engine_class(str(path))) as client:
        c = client["repro"]["events"]
        for n, keys in enumerate((["user", "seq"], ["session", "seq"], ["kind", "user"])):
            await c.create_index([(k, 1) for k in keys], name=f"ix{n}")
        await c.insert_many([event(i, 1_000) for i in range(2_000)])
        opened_before = OPENED[0]
        end = time.monotonic() + seconds
        counts = {"reads": 0, "writes": 0}

        async def reader(k: int) -> None:
            i = 0
            while time.monotonic() < end:
                i += 1
                await c.find({"user": f"u{(k + i) % 20}"}).to_list()
                counts["reads"] += 1

        async def writer() -> None:
            i = 0
            while time.monotonic() < end:
                i += 1
                await c.insert_many([event(10_000 + j, 4_000) for j in range(i * 20, i * 20 + 20)])
                counts["writes"] += 20

        async def report() -> None:
            started = time.monotonic()
            while time.monotonic() < end:
                await asyncio.sleep(5)
                size, frames, copied = await asyncio.to_thread(log_state, path)
                print(
                    f"{label}: {time.monotonic() - started:4.0f} s  -wal {size / 2**20:7.1f} MiB  "
                    f"(checkpoint: {copied:5d} of {frames:5d} frames)  "
                    f"connections opened {OPENED[0] - opened_before:4d}  "
                    f"finds {counts['reads']:4d}  documents written {counts['writes']:5d}"
                )

        await asyncio.gather(*(reader(k) for k in range(READERS)), writer(), report())


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 15.0
    asyncio.run(run(StockEngine, "stock engine                  ", seconds))
    asyncio.run(run(LimitedEngine, "stock + journal_size_limit    ", seconds))
    asyncio.run(run(SharedReadEngine, "+ reads on the main connection", seconds))

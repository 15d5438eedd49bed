"""Reproduction: over mongoeco's wire server, each inserted document costs time proportional to
the size of its collection (mongoeco 4.11, SQLite engine).

    python docs/upstream/mongoeco_insert_scan.py

Prints the mean time of one ``insert_one`` after the collection holds 0, 500, 1,000 and 2,000
documents, and of the same inserts through mongoeco's in-process client for comparison.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from pathlib import Path

from mongoeco import MongoClient as InProcessClient
from mongoeco.engines import SQLiteEngine
from mongoeco.wire import AsyncMongoEcoProxyServer
from pymongo import MongoClient

SIZES = (0, 500, 1_000, 2_000)
PROBES = 20


def serve(path: Path) -> tuple[str, asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    ready: dict[str, object] = {}
    started = threading.Event()

    async def main() -> None:
        server = AsyncMongoEcoProxyServer(engine=SQLiteEngine(str(path)), host="127.0.0.1", port=0)
        ready["address"] = await server.start()
        started.set()

    def run() -> None:
        loop.run_until_complete(main())
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    started.wait(30)
    address = ready["address"]
    return f"mongodb://{address.host}:{address.port}/?directConnection=true", loop  # type: ignore[attr-defined]


def measure(collection, label: str) -> None:
    document = {"content": "x" * 200, "payload": b"\0" * 1_536}
    have = 0
    for size in SIZES:
        if size > have:
            collection.insert_many([dict(document, n=i) for i in range(size - have)])
            have = size
        started = time.perf_counter()
        for i in range(PROBES):
            collection.insert_one(dict(document, probe=i))
        have += PROBES
        elapsed = (time.perf_counter() - started) / PROBES * 1000
        print(f"{label}: {size:>5} documents -> {elapsed:6.1f} ms per insert_one")


if __name__ == "__main__":
    folder = Path(tempfile.mkdtemp())
    uri, _ = serve(folder / "wire.sqlite")
    measure(MongoClient(uri)["repro"]["docs"], "wire server")
    measure(
        InProcessClient(engine=SQLiteEngine(str(folder / "direct.sqlite")))["repro"]["docs"],
        "in-process",
    )

"""The embedded server's engine: an insert costs the same at any collection size, and
duplicate ``_id``\\ s are refused as before."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mongoeco", reason="the embedded engine (mongoeco) needs Python 3.13+")

from bson import ObjectId
from mongoeco import MongoClient
from mongoeco.engines import SQLiteEngine
from pymongo import AsyncMongoClient
from pymongo.errors import DuplicateKeyError

from agent_memory.mongo._mongoeco import engine_class
from agent_memory.mongo.embedded import EmbeddedServer

pytestmark = pytest.mark.mongoeco


def _count_scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    scans: list[str] = []
    load = SQLiteEngine._load_documents

    def counted(self, db_name, coll_name, *args, **kwargs):  # type: ignore[no-untyped-def]
        scans.append(coll_name)
        return load(self, db_name, coll_name, *args, **kwargs)

    monkeypatch.setattr(SQLiteEngine, "_load_documents", counted)
    return scans


@pytest.fixture
def engine(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A collection served by the adjusted engine through mongoeco's in-process client."""
    client = MongoClient(engine=engine_class()(str(tmp_path / "engine.sqlite3")))
    yield client["db"]["docs"]
    client.close()


def _insert(collection, document):  # type: ignore[no-untyped-def]
    collection.insert_one(document)


def test_the_server_runs_the_adjusted_engine() -> None:
    cls = engine_class()
    assert cls is not SQLiteEngine and issubclass(cls, SQLiteEngine)


@pytest.mark.parametrize("make_id", [lambda i: f"mem_{i}", lambda i: ObjectId()])
def test_string_and_objectid_inserts_do_not_scan_the_collection(
    engine, monkeypatch: pytest.MonkeyPatch, make_id
) -> None:  # type: ignore[no-untyped-def]
    for i in range(20):
        _insert(engine, {"_id": make_id(i), "n": i})
    scans = _count_scans(monkeypatch)
    _insert(engine, {"_id": make_id(99), "n": 99})
    assert scans == []


def test_numeric_ids_are_still_compared_across_types(
    engine, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    _insert(engine, {"_id": 1, "n": 1})
    scans = _count_scans(monkeypatch)
    with pytest.raises(Exception, match=r"(?i)duplicate"):
        _insert(engine, {"_id": 1.0, "n": 2})
    assert scans  # the scan that tells 1 and 1.0 apart still runs


async def test_duplicate_ids_are_refused_over_the_wire(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path / "data")
    uri = server.start()
    client: AsyncMongoClient = AsyncMongoClient(uri)
    try:
        docs = client["db"]["docs"]
        oid = ObjectId()
        await docs.insert_many([{"_id": "mem_1"}, {"_id": oid}, {"_id": 2}])
        for duplicate in ({"_id": "mem_1"}, {"_id": oid}, {"_id": 2.0}):
            with pytest.raises(DuplicateKeyError):
                await docs.insert_one(duplicate)
        assert await docs.count_documents({}) == 3
    finally:
        await client.close()
        server.stop()


async def test_cursors_come_in_bounded_batches(tmp_path: Path) -> None:
    """Without a batch size the wire server sent a whole result in one reply, which the
    client refuses past 48 MB; it now answers in batches as a MongoDB server does."""
    from pymongo import monitoring

    replies: list[tuple[str, int]] = []

    class Batches(monitoring.CommandListener):
        def started(self, event: monitoring.CommandStartedEvent) -> None:
            pass

        def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
            cursor = event.reply.get("cursor") or {}
            batch = cursor.get("firstBatch", cursor.get("nextBatch"))
            if batch is not None:
                replies.append((event.command_name, len(batch)))

        def failed(self, event: monitoring.CommandFailedEvent) -> None:
            pass

    server = EmbeddedServer(tmp_path / "data")
    uri = server.start()
    client: AsyncMongoClient = AsyncMongoClient(uri, event_listeners=[Batches()])
    try:
        docs = client["db"]["docs"]
        await docs.insert_many([{"n": i} for i in range(2_500)])
        replies.clear()
        assert len(await docs.find({}).to_list()) == 2_500
        assert replies == [("find", 101), ("getMore", 1000), ("getMore", 1000), ("getMore", 399)]
        replies.clear()
        assert len(await (await docs.aggregate([{"$match": {}}])).to_list()) == 2_500
        assert replies[0] == ("aggregate", 101) and max(n for _, n in replies) == 1000
        replies.clear()
        assert len(await docs.find({}, batch_size=2_000).to_list()) == 2_500
        assert replies == [("find", 2_000), ("getMore", 500)]  # a size asked for is kept
    finally:
        await client.close()
        server.stop()

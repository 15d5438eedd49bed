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

from agent_memory.agent.config import AgentConfig
from agent_memory.agent.rag_agent import RAGAgent
from agent_memory.formation.worker import FormationWorker
from agent_memory.mongo._mongoeco import engine_class
from agent_memory.mongo.embedded import EmbeddedServer
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.chat.fake import FakeChatModel

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


async def test_turns_and_their_formation_read_no_collection_whole(
    connection, embedder, embedded_server, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Every read of an agent turn and of a formation job is answered through SQL (an index
    or the primary key), never by the engine decoding a whole collection in Python: such a
    read costs more with every user the server holds. The generation tokens, read by an
    ``$in`` of embedded documents, once were (mongoeco cannot translate a document equality)."""
    if not isinstance(embedded_server, EmbeddedServer):
        pytest.skip("the engine's reads are counted in this process; the server is elsewhere")
    await IndexManager(connection, embedder.signature).setup()
    chat = FakeChatModel(default="noted", delay=0)
    config = AgentConfig("scans", run_formation_worker=False, formation_debounce_s=0)
    users = ("u1", "u2", "u3")
    async with RAGAgent(connection, embedder, chat, config=config) as agent:
        worker = FormationWorker(agent.memories, None, queue=agent.queue, concurrency=1)
        for user in users:  # every collection of a turn and a job holds several users
            for query in ("My name is Ann.", "I live in Lisbon.", "Please book me a window seat."):
                await agent.process_query(user, f"{user}-s1", query)
            await agent.start_new_session(user, f"{user}-s2")
        await agent.drain()
        while await worker.run_once():
            pass
        scans = _count_scans(monkeypatch)
        for user in users:
            await agent.process_query(user, f"{user}-s2", "Which seat do I like?")
            await agent.process_query(user, f"{user}-s2", "I live in Porto now.")
            await agent.start_new_session(user, f"{user}-s3")
        await agent.drain()
        formed = 0
        while await worker.run_once():
            formed += 1
    assert formed >= len(users)
    assert scans == []


def test_replies_are_encoded_to_the_same_bytes_faster() -> None:
    """The wire server's reply conversion passes plain values through at once and leaves
    every other value to the engine's own: the same BSON for documents of every type."""
    import datetime
    import math
    import uuid

    from bson import BSON
    from mongoeco.core.bson_scalars import BsonInt32, BsonInt64
    from mongoeco.types import SON, Binary, Decimal128, Regex, Timestamp
    from mongoeco.types import ObjectId as EngineObjectId
    from mongoeco.wire import bson_bridge, protocol

    from agent_memory.mongo._mongoeco import _fast_wire_encoding

    assert _fast_wire_encoding() and _fast_wire_encoding()  # a second call changes nothing
    fast = protocol.encode_wire_value
    assert getattr(fast, "_agent_memory_fast", False) and bson_bridge.encode_wire_value is fast
    original = fast._agent_memory_original
    when = datetime.datetime(2026, 11, 28, 12, 30, 1, 123000)
    documents = [
        {},
        {"_id": "mem_1", "text": "héllo 東京", "n": 3, "big": 2**62, "x": 1.5, "ok": True},
        {"none": None, "nan": math.nan, "when": when, "neg": -(2**40), "f": False},
        {"nested": {"a": [1, "b", {"c": [when, None, 2.5]}], "empty": [], "d": {}}},
        {
            "oid": EngineObjectId(),
            "dec": Decimal128("1.5"),
            "bin": Binary(b"\x27\x00" + bytes(16), subtype=9),
            "uuid": uuid.UUID(int=7),
            "re": Regex("^a", "i"),
            "ts": Timestamp(5, 1),
            "i64": BsonInt64(5),
            "i32": BsonInt32(4),
            "raw": b"\x00\x01",
            "son": SON([("b", 1), ("a", [EngineObjectId(), {"z": BsonInt64(1)}])]),
        },
    ]
    for document in documents:
        assert BSON.encode(fast(document)) == BSON.encode(original(document)), document

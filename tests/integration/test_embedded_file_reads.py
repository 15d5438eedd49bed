"""Reads by ``_id`` from the embedded database's file in the process serving it
(``agent_memory/mongo/_embedded_reads.py``): they answer what the server's own ``find``
answers, see every acknowledged write from any client at once, never see a transaction's
writes before its commit, decline what they cannot read exactly, and stop with the server;
on the embedded default a retrieve reads its generation token that way."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mongoeco", reason="the embedded engine (mongoeco) needs Python 3.13+")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import MongoClient

from agent_memory.config import load_settings
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import NewMemory
from agent_memory.mongo.connection import connect
from agent_memory.mongo.embedded import EmbeddedServer
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.search.snapshots import TokenReads
from agent_memory.tenancy import Tenant

pytestmark = pytest.mark.mongoeco

# Ids whose storage keys and JSON need care, and tokens of every type a document may hold.
_IDS = ["a", "b", "t'quote", 'd"quote', "back\\slash", "ünï", "汉字", " ", "x" * 300]
#: What BSON can hold: 8-byte integers.
_INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_TOKENS = st.one_of(
    st.text(max_size=20),
    _INT64,
    st.floats(allow_nan=False, allow_infinity=False),  # the engine stores no infinity
    st.none(),
    st.booleans(),
    st.just(datetime.datetime(2026, 3, 1, 12, 0, 0, 123000)),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.sampled_from(["token", "v"]), _INT64, max_size=2),
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedServer, Any]]:
    server = EmbeddedServer(tmp_path_factory.mktemp("file-reads") / "data")
    server.start()
    client: MongoClient[Any] = MongoClient(server.uri, tz_aware=True)
    try:
        yield server, client
    finally:
        client.close()
        server.stop()


@contextlib.contextmanager
def _reading(served: Any, *, token: bool = True, **options: Any) -> Iterator[tuple[Any, Any]]:
    """A collection of a database of its own (made with ``options``; holding ``{"_id": "a",
    "token": "x"}`` when ``token``) and the serving process's reads of it; both gone after."""
    server, client = served
    db = client[f"t_{uuid.uuid4().hex[:10]}"]
    collection = db.create_collection("generations", **options)
    try:
        if token:
            collection.insert_one({"_id": "a", "token": "x"})
        reads = server._file_reads(db.name, collection.name)
        assert reads is not None
        try:
            yield collection, reads
        finally:
            reads.close()
    finally:
        client.drop_database(db.name)


@pytest.fixture
def reading(served: Any) -> Iterator[tuple[Any, Any]]:
    """:func:`_reading` of a collection holding one token."""
    with _reading(served) as pair:
        yield pair


def _wire(collection: Any, ids: list[str]) -> dict[str, Any]:
    found = collection.find({"_id": {"$in": ids}}, {"token": 1})
    return {row["_id"]: row.get("token", "<none>") for row in found}


def _local(found: list[dict[str, Any]] | None) -> dict[str, Any]:
    assert found is not None, "the read was declined"
    return {row["_id"]: row.get("token", "<none>") for row in found}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    stored=st.dictionaries(st.sampled_from(_IDS), st.one_of(st.just("<none>"), _TOKENS)),
    asked=st.lists(st.sampled_from([*_IDS, "absent"]), min_size=1, max_size=12),
)
def test_a_read_answers_what_the_servers_find_answers(served, stored, asked) -> None:
    with _reading(served, token=False) as (collection, reads):
        for document_id, token in stored.items():
            document = {"_id": document_id, "other": [1, {"x": "y"}]}
            if token != "<none>":
                document["token"] = token
            collection.insert_one(document)
        local = _local(reads.find(asked, ("token",)))
        wire = _wire(collection, asked)
        assert local.keys() == wire.keys()
        # What a reader of generation tokens takes from each: the token when it is text.
        for document_id in wire:
            expected = wire[document_id] if isinstance(wire[document_id], str) else None
            got = local[document_id] if isinstance(local[document_id], str) else None
            assert got == expected
            if isinstance(wire[document_id], str | int | float | bool) or wire[document_id] in (
                None,
                "<none>",
            ):
                assert local[document_id] == wire[document_id]


def test_every_acknowledged_write_is_read_at_once_and_a_transaction_only_after_commit(
    served,
) -> None:
    server, _ = served
    other: MongoClient[Any]  # another client: another program
    with MongoClient(server.uri) as other, _reading(served, token=False) as (collection, reads):
        theirs = other[collection.database.name][collection.name]
        for round_ in range(30):
            theirs.update_one({"_id": "g"}, {"$set": {"token": f"t{round_}"}}, upsert=True)
            assert _local(reads.find(["g"], ("token",))) == {"g": f"t{round_}"}
        with other.start_session() as session, session.start_transaction():
            theirs.update_one({"_id": "g"}, {"$set": {"token": "inside"}}, session=session)
            theirs.insert_one({"_id": "h", "token": "new"}, session=session)
            # (The engine's own find waits for the transaction; the file holds the state
            # committed before it.)
            assert _local(reads.find(["g", "h"], ("token",))) == {"g": "t29"}
        assert _local(reads.find(["g", "h"], ("token",))) == {"g": "inside", "h": "new"}
        assert reads.declined == 0


def test_what_is_not_read_exactly_here_is_declined(served) -> None:
    with _reading(served) as (plain, reads):
        assert _local(reads.find(["a"], ("token",))) == {"a": "x"}
        assert reads.find([7], ("token",)) is None  # type: ignore[list-item]  # not a string id
        for field in ("a.b", "$x", "_id", "", "x" * 65, "é"):
            assert reads.find(["a"], (field,)) is None, field
        # The engine removes expired documents before it reads: not this module's to mimic.
        plain.create_index("at", expireAfterSeconds=60)
        assert reads.find(["a"], ("token",)) is None
        plain.drop_indexes()
        assert _local(reads.find(["a"], ("token",))) == {"a": "x"}
        reads.close()
        assert reads.find(["a"], ("token",)) is None
    with _reading(served, collation={"locale": "en", "strength": 2}) as (_, collated_reads):
        assert collated_reads.find(["a"], ("token",)) is None


def test_a_stopped_server_file_is_no_longer_read(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path / "data")
    server.start()
    with MongoClient(server.uri) as client:
        client.db.generations.insert_one({"_id": "a", "token": "x"})
    reads = server._file_reads("db", "generations")
    assert reads is not None and _local(reads.find(["a"], ("token",))) == {"a": "x"}
    server.stop()
    assert reads.find(["a"], ("token",)) is None
    assert server._file_reads("db", "generations") is None
    server.start()  # served again: a new read, not the old one, reads it
    try:
        assert reads.find(["a"], ("token",)) is None
        again = server._file_reads("db", "generations")
        assert again is not None and _local(again.find(["a"], ("token",))) == {"a": "x"}
    finally:
        server.stop()


async def test_a_token_read_declined_goes_to_the_server(served) -> None:
    from pymongo import AsyncMongoClient

    server, _ = served
    with _reading(served) as (collection, reads):
        reads.close()  # every read declined from now on
        async_client: AsyncMongoClient[Any] = AsyncMongoClient(server.uri)
        try:
            theirs = async_client[collection.database.name][collection.name]
            tokens = TokenReads(theirs, local=reads)
            assert await tokens.read("a") == "x"
            assert (tokens.reads, reads.declined) == (1, 1)
        finally:
            await async_client.close()


async def test_on_the_embedded_default_a_retrieve_reads_its_token_from_the_file(
    tmp_path: Path,
) -> None:
    """The process serving the directory reads tokens from the file; a memory another
    program stores through the server is still found by its next retrieve, and the access
    statistics written meanwhile do not stop the reads."""
    config = load_settings(data_dir=tmp_path / "data", embedder="fake")
    connection = await connect(config)
    from agent_memory.providers.embedders.fake import FakeEmbedder

    embedder = FakeEmbedder()
    tenant = Tenant("agent", "user")
    try:
        local = connection.token_reads.local
        assert local is not None
        await IndexManager(connection, embedder.signature).setup()
        mine = LongTermMemory(connection, embedder)
        await mine.store_many(tenant, [NewMemory(f"note {i} about gardening") for i in range(40)])
        for _ in range(5):
            await mine.retrieve(tenant, "gardening", k=5)
        assert local.answered >= 5 and local.declined == 0
        assert connection.token_reads.reads == 0  # no token went through the server

        other_connection = await connect(
            load_settings(mongodb_uri=_uri(tmp_path), database=config.database, embedder="fake")
        )
        try:
            assert other_connection.token_reads.local is None  # not the serving process
            theirs = LongTermMemory(other_connection, embedder)
            await theirs.store(tenant, "zebra saxophone quartet rehearsal")
            found = await mine.retrieve(tenant, "zebra saxophone quartet rehearsal", k=1)
            assert [hit.memory.content for hit in found] == ["zebra saxophone quartet rehearsal"]
            await theirs.aclose()
        finally:
            await other_connection.close()
        await mine.drain()
        await mine.aclose()
    finally:
        await connection.close()
    assert local.find(["x"], ("token",)) is None  # closed with the server


def _uri(tmp_path: Path) -> str:
    from agent_memory.mongo.embedded import find_running_server

    info = find_running_server(tmp_path / "data", wait=1.0)
    assert info is not None
    return info.uri


async def test_reads_are_answered_while_the_engine_writes(served) -> None:
    with _reading(served) as (collection, reads):
        writes = collection.database["bulk"]

        def write() -> None:
            for start in range(0, 4000, 500):
                writes.insert_many([{"n": i, "text": "y" * 200} for i in range(start, start + 500)])

        writing = asyncio.get_running_loop().run_in_executor(None, write)
        answered = 0
        while not writing.done():
            assert _local(reads.find(["a"], ("token",))) == {"a": "x"}
            answered += 1
            await asyncio.sleep(0.001)
        await writing
        assert answered > 0 and reads.declined == 0


def test_a_forked_child_declines_every_read(reading) -> None:
    import os

    _, reads = reading
    assert _local(reads.find(["a"], ("token",))) == {"a": "x"}
    read, write = os.pipe()
    with warnings.catch_warnings():
        # Python warns that a child of a process with threads may deadlock; this child only
        # asks for one read (which takes no lock another thread holds) and exits.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: no server thread, and the parent's SQLite connection is not its
        try:
            os.write(write, b"declined" if reads.find(["a"], ("token",)) is None else b"read")
        finally:
            os._exit(0)
    os.close(write)
    try:
        assert os.read(read, 16) == b"declined"
        os.waitpid(pid, 0)
        assert _local(reads.find(["a"], ("token",))) == {"a": "x"}  # the parent still reads
    finally:
        os.close(read)


def test_a_busy_file_declines_one_read_and_an_unknown_engine_stops_them(reading) -> None:
    import sqlite3

    _, reads = reading
    opened = reads._open

    def busy() -> Any:
        raise sqlite3.OperationalError("database is locked")

    reads._open = busy  # type: ignore[method-assign]
    assert reads.find(["a"], ("token",)) is None
    reads._open = opened  # type: ignore[method-assign]
    assert _local(reads.find(["a"], ("token",))) == {"a": "x"}  # the next one reads again

    engine = reads._engine

    class Changed:  # a release whose decoder takes other arguments
        def __getattr__(self, name: str) -> Any:
            return getattr(engine, name)

        def _deserialize_document(self, payload: str) -> Any:
            return engine._deserialize_document(payload)

    reads._engine = Changed()
    assert reads.find(["a"], ("token",)) is None
    reads._engine = engine
    assert reads.find(["a"], ("token",)) is None  # stopped for good: the server reads
    assert reads.declined == 3

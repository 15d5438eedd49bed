"""The embedded server on a shared machine: private files, a password, no server-side code,
and a data directory that is not trusted blindly (issue 14's attacks, each as a test)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest
from pymongo import MongoClient
from pymongo.errors import OperationFailure

from agent_memory.errors import EmbeddedServerError
from agent_memory.mongo.embedded import (
    INFO_FILE,
    LOCK_FILE,
    SECRET_FILE,
    EmbeddedServer,
    find_running_server,
)

ROOT = hasattr(os, "getuid") and os.getuid() == 0
OTHER_UID = 65534  # nobody

pytestmark = pytest.mark.mongoeco  # every test starts an embedded server (or tries to)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def served(own_embedded_server):  # type: ignore[no-untyped-def]
    return own_embedded_server


def _bare(uri: str) -> str:
    """The server's address without credentials."""
    return "mongodb://" + uri.split("@", 1)[1].split("?", 1)[0] + "?directConnection=true"


def test_a_new_directory_and_every_file_in_it_are_private(served) -> None:  # type: ignore[no-untyped-def]
    with MongoClient(served.uri) as client:
        client["db"]["notes"].insert_many([{"text": f"secret {i}"} for i in range(50)])
    data_dir = Path(served.data_dir)
    assert _mode(data_dir) == 0o700
    names = {path.name for path in data_dir.iterdir()}
    assert {"agent_memory.sqlite3", LOCK_FILE, INFO_FILE, SECRET_FILE} <= names
    assert {path.name: _mode(path) for path in data_dir.iterdir()} == dict.fromkeys(names, 0o600)


def test_a_client_without_the_password_is_refused(served) -> None:  # type: ignore[no-untyped-def]
    with MongoClient(_bare(served.uri), serverSelectionTimeoutMS=5_000) as client:
        with pytest.raises(OperationFailure, match=r"(?i)authentication required"):
            client["db"]["notes"].find_one()
        with pytest.raises(OperationFailure):
            client["db"]["notes"].insert_one({"text": "planted"})
    wrong = served.uri.replace(served.info.secret, "not-the-secret")
    with MongoClient(wrong, serverSelectionTimeoutMS=5_000) as client:
        with pytest.raises(OperationFailure, match=r"(?i)authentication failed"):
            client["db"]["notes"].find_one()
    with MongoClient(served.uri) as client:
        assert client["db"]["notes"].count_documents({}) == 0


@pytest.mark.parametrize(
    "attack",
    [
        lambda c: list(c.find({"$where": "doc.__class__"})),
        lambda c: list(c.find({"n": 1, "$or": [{"$where": "True"}]})),
        lambda c: c.count_documents({"$where": "True"}),
        lambda c: list(
            c.aggregate(
                [{"$match": {"$expr": {"$function": {"body": "x", "args": [], "lang": "js"}}}}]
            )
        ),
        lambda c: list(
            c.aggregate(
                [
                    {
                        "$group": {
                            "_id": None,
                            "x": {
                                "$accumulator": {
                                    "init": "x",
                                    "accumulate": "x",
                                    "accumulateArgs": [],
                                    "merge": "x",
                                    "lang": "js",
                                }
                            },
                        }
                    }
                ]
            )
        ),
        lambda c: c.update_many({"$where": "True"}, {"$set": {"n": 2}}),
        lambda c: c.delete_many({"$where": "True"}),
    ],
)
def test_server_side_code_is_refused(served, attack) -> None:  # type: ignore[no-untyped-def]
    with MongoClient(served.uri) as client:
        notes = client["db"]["notes"]
        notes.insert_one({"n": 1})
        with pytest.raises(OperationFailure, match="not allowed"):
            attack(notes)
        assert notes.find_one({}, {"_id": 0}) == {"n": 1}


def test_an_older_directory_readable_by_others_is_narrowed(tmp_path: Path) -> None:
    data_dir = tmp_path / "old"
    data_dir.mkdir(mode=0o755)
    os.chmod(data_dir, 0o755)
    database = data_dir / "agent_memory.sqlite3"
    sqlite3.connect(database).execute("PRAGMA journal_mode=WAL").connection.close()
    os.chmod(database, 0o644)
    with EmbeddedServer(data_dir):
        assert _mode(data_dir) == 0o700
        assert _mode(database) == 0o600


def test_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    data_dir = tmp_path / "open"
    data_dir.mkdir()
    os.chmod(data_dir, 0o777)
    with pytest.raises(EmbeddedServerError, match="can be written by other users"):
        EmbeddedServer(data_dir).start()
    assert list(data_dir.iterdir()) == []


@pytest.mark.skipif(not ROOT, reason="giving a directory to another user needs root")
def test_a_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    data_dir = tmp_path / "theirs"
    data_dir.mkdir(mode=0o700)
    os.chown(data_dir, OTHER_UID, OTHER_UID)
    with pytest.raises(EmbeddedServerError, match="belongs to another user"):
        EmbeddedServer(data_dir).start()
    assert list(data_dir.iterdir()) == []


@pytest.mark.parametrize("planted", [LOCK_FILE, SECRET_FILE, "agent_memory.sqlite3"])
def test_no_file_is_opened_through_a_planted_link(tmp_path: Path, planted: str) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    target = tmp_path / "elsewhere"
    (data_dir / planted).symlink_to(target)
    with pytest.raises(EmbeddedServerError):
        EmbeddedServer(data_dir).start()
    assert not target.exists()


def test_server_json_is_believed_only_when_private_and_on_loopback(served) -> None:  # type: ignore[no-untyped-def]
    data_dir = Path(served.data_dir)
    info = data_dir / INFO_FILE
    assert find_running_server(data_dir).uri == served.uri
    original = info.read_text()

    def plant(content: dict, mode: int) -> None:
        info.unlink()
        info.write_text(json.dumps(content))
        os.chmod(info, mode)

    try:
        plant({**json.loads(original), "host": "10.1.2.3"}, 0o600)
        with pytest.raises(EmbeddedServerError, match="does not answer"):
            find_running_server(data_dir, wait=0.2)
        plant(json.loads(original), 0o644)
        with pytest.raises(EmbeddedServerError, match="does not answer"):
            find_running_server(data_dir, wait=0.2)
    finally:
        plant(json.loads(original), 0o600)
    assert find_running_server(data_dir).uri == served.uri


def test_the_password_stays_out_of_repr_and_errors(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    secret = served.info.secret
    assert secret and secret not in repr(served.info)
    with pytest.raises(EmbeddedServerError) as caught:
        EmbeddedServer(served.data_dir).start()
    assert secret not in str(caught.value) and "***" in str(caught.value)


async def test_connecting_through_the_data_directory_logs_no_password(tmp_path: Path) -> None:
    import structlog

    from agent_memory.config import load_settings
    from agent_memory.mongo.connection import connect

    settings = load_settings(data_dir=tmp_path / "data", database="t_private", embedder="fake")
    with structlog.testing.capture_logs() as logs:
        connection = await connect(settings)
        try:
            await connection.collection("notes").insert_one({"n": 1})
        finally:
            await connection.close()
    secret = (tmp_path / "data" / SECRET_FILE).read_text().strip()
    assert logs and secret not in repr(logs)

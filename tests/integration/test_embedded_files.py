"""The embedded server's database file when it is empty, not SQLite's, cut or damaged: one
line that says which file and what to do, nothing stored quoted, nothing created over it
(issue 35, items 8 and 9)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from pymongo import MongoClient
from structlog.testing import capture_logs
from typer.testing import CliRunner

from agent_memory.cli import app
from agent_memory.config import load_settings
from agent_memory.errors import EmbeddedServerError, StorageError
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.connection import connect
from agent_memory.mongo.embedded import EmbeddedServer

pytestmark = pytest.mark.mongoeco

DATABASE = "agent_memory.sqlite3"
PAGE = 4096
#: What the stored memories say, and whose they are: never in an error or a log.
SECRET_TEXT = "allergic to hazelnuts"
TENANT = "tenant-7f3a"


def _remember(data_dir: Path, count: int = 300) -> None:
    """``count`` memories of one user, on disk once the server stops."""
    with EmbeddedServer(data_dir) as server, MongoClient(server.uri) as client:
        client["agent_memory"]["memories"].insert_many(
            {"agent_id": "agent", "user_id": TENANT, "content": f"{SECRET_TEXT} #{i:04d}"}
            for i in range(count)
        )


async def _read_all(data_dir: Path) -> None:
    """Start on ``data_dir`` and read every memory, as the framework does."""
    connection = await connect(load_settings(data_dir=data_dir))
    try:
        with translate_errors("reading memories"):
            await connection.collection("memories").find({}).to_list()
    finally:
        await connection.close()


def _one_line_about(message: str, database: Path) -> None:
    assert "\n" not in message
    assert f"the database file {database} is damaged" in message, message
    assert f"sqlite3 {database} .recover | sqlite3 " in message, message
    assert SECRET_TEXT not in message and TENANT not in message


# --- item 8: an empty file, a file that is not a database ---------------------------------


@pytest.mark.parametrize("beside", [None, "wal"])
async def test_an_empty_database_file_is_refused_and_left_as_it_is(
    tmp_path: Path, beside: str | None
) -> None:
    data_dir = tmp_path / "data"
    _remember(data_dir, count=20)
    database = data_dir / DATABASE
    wal = data_dir / f"{DATABASE}-wal"
    if beside == "wal":  # the log of a server that was killed, beside a file cut to nothing
        wal.write_bytes(b"\x37\x7f\x06\x82" + bytes(28) + b"frames" * 1000)
    os.truncate(database, 0)
    log = wal.read_bytes() if beside else None
    with pytest.raises(EmbeddedServerError) as caught:
        await connect(load_settings(data_dir=data_dir))
    message = str(caught.value)
    assert "\n" not in message and f"the database file {database} is empty (0 bytes)" in message
    assert "last good copy" in message
    assert ("-wal" in message) == (beside == "wal")
    assert database.stat().st_size == 0  # nothing created over it
    assert (wal.read_bytes() if beside else None) == log  # the log kept, byte for byte
    assert not (data_dir / "server.json").exists()


async def test_a_file_that_is_not_an_sqlite_database_is_refused(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    database = data_dir / DATABASE
    database.write_text("notes I keep next to the database\n" * 10)
    os.chmod(database, 0o600)
    with pytest.raises(EmbeddedServerError, match="is not an SQLite database; move it out"):
        EmbeddedServer(data_dir).start()
    assert database.read_text() == "notes I keep next to the database\n" * 10


async def test_a_start_that_fails_half_way_leaves_no_empty_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is created whole: a start that dies after creating it does not leave a
    0-byte file that the next start would refuse."""
    import agent_memory.mongo._mongoeco as engine

    def broken() -> type:
        raise RuntimeError("killed while starting")

    data_dir = tmp_path / "data"
    monkeypatch.setattr(engine, "engine_class", broken)
    with pytest.raises(EmbeddedServerError, match="could not start"):
        EmbeddedServer(data_dir).start()
    database = data_dir / DATABASE
    assert not database.exists() or database.read_bytes()[:16] == b"SQLite format 3\x00"
    assert [p.name for p in data_dir.iterdir() if p.name.startswith(".")] == []  # no leftovers
    monkeypatch.undo()
    with EmbeddedServer(data_dir) as server, MongoClient(server.uri) as client:
        assert client["agent_memory"]["memories"].count_documents({}) == 0


# --- item 9: a damaged page, a cut file ---------------------------------------------------


def _overwrite_middle_page(database: Path) -> None:
    pages = database.stat().st_size // PAGE
    with open(database, "r+b") as handle:
        handle.seek(pages // 2 * PAGE)
        handle.write(b"\xa5" * PAGE)


def _break_a_stored_text(database: Path) -> None:
    """A byte of one memory's text turned into one that is not UTF-8 (bit rot in a page)."""
    data = bytearray(database.read_bytes())
    at = data.index(f"{SECRET_TEXT} #0150".encode())
    data[at + 3] = 0xFF
    database.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage", ["a page overwritten", "a stored text not UTF-8", "cut mid-page", "last page cut"]
)
async def test_a_damaged_file_is_named_with_how_to_recover_and_quotes_nothing(
    tmp_path: Path, damage: str
) -> None:
    data_dir = tmp_path / "data"
    _remember(data_dir)
    database = data_dir / DATABASE
    size = database.stat().st_size
    if damage == "a page overwritten":
        _overwrite_middle_page(database)
    elif damage == "a stored text not UTF-8":
        _break_a_stored_text(database)
    elif damage == "cut mid-page":
        os.truncate(database, size - PAGE // 2)
    else:
        os.truncate(database, size - PAGE)
    with capture_logs() as logs:
        # A cut file is refused at the start, a damaged page when a read reaches it.
        with pytest.raises((EmbeddedServerError, StorageError)) as caught:
            await _read_all(data_dir)
    _one_line_about(str(caught.value), database)
    assert SECRET_TEXT not in repr(logs) and TENANT not in repr(logs)
    assert [e["event"] for e in logs].count("embedded_database_damaged") == 1


async def test_a_damaged_file_beside_a_write_ahead_log_is_named_too(tmp_path: Path) -> None:
    """The files a killed server leaves: recent writes in the -wal, older pages in the file."""
    data_dir = tmp_path / "data"
    _remember(data_dir)
    crashed = tmp_path / "crashed"
    with EmbeddedServer(data_dir) as server, MongoClient(server.uri) as client:
        client["agent_memory"]["memories"].insert_one({"user_id": TENANT, "content": "new"})
        crashed.mkdir(mode=0o700)
        for name in (DATABASE, f"{DATABASE}-wal", "server.secret"):
            shutil.copy2(data_dir / name, crashed / name)
    assert (crashed / f"{DATABASE}-wal").stat().st_size > PAGE
    _overwrite_middle_page(crashed / DATABASE)
    with capture_logs() as logs:
        with pytest.raises(StorageError) as caught:
            await _read_all(crashed)
    _one_line_about(str(caught.value), crashed / DATABASE)
    assert SECRET_TEXT not in repr(logs) and TENANT not in repr(logs)


def test_a_command_on_a_damaged_file_exits_1_with_one_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _remember(data_dir)
    _break_a_stored_text(data_dir / DATABASE)
    env = {"AGENT_MEMORY_DATA_DIR": str(data_dir), "AGENT_MEMORY_EMBEDDER": "fake"}
    result = CliRunner().invoke(app, ["stats"], env=env, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "is damaged" in errors[0], result.output
    assert SECRET_TEXT not in result.output and TENANT not in result.output

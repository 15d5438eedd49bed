"""The embedded server's files: a private data directory, files opened only as this user's
own, and a database file checked before SQLite opens it, created whole, and described in one
line when it is damaged.

Why the directory and its files are private is said in :mod:`agent_memory.mongo.embedded`.

SQLite takes an empty file for a new, empty database, and deletes a write-ahead log it finds
beside one; it reads a file cut short as far as it goes, and reports a damaged page only
when a read reaches it. So before the server opens the file, :func:`prepare_database`
refuses what it can tell cheaply from the file's size and its 100-byte header:

- an empty (0-byte) file, or a missing one beside a write-ahead log that holds data: the
  database was cut or replaced, and opening it would silently start an empty one (and
  throw the log away);
- a file that does not begin as an SQLite database does (a text file of the same name);
- a file that ends in the middle of a page, or that is shorter than its header says (its
  last pages cut off) while no write-ahead log holds pages that could make up for it.

It never creates a database over an existing file: a new one is made in a private temporary
file, initialised by SQLite, and linked into place (a link fails if the name exists), so a
start that dies half-way leaves no empty file behind for the next start to refuse.

A damaged page in the middle of the file can only be found by reading it
(``PRAGMA quick_check`` reads every page: 4.4 s cold for a 330 MB file on the project's
machine, against 0.1 ms for the header), so the server reports it when a command reaches it:
:func:`damage_reason` recognises SQLite's errors for it, and :func:`damaged_message` says which
file, and how to recover, without SQLite's own text, which can quote a stored document.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import sqlite3
import stat
from contextlib import suppress
from pathlib import Path

from agent_memory._log import get_logger
from agent_memory.errors import EmbeddedServerError

__all__ = [
    "DAMAGED",
    "DATABASE_FILE",
    "check_private",
    "damage_reason",
    "damaged_error",
    "damaged_message",
    "open_private",
    "prepare_data_dir",
    "prepare_database",
    "read_private",
    "unusable",
    "write_private",
]

logger = get_logger(__name__)

DATABASE_FILE = "agent_memory.sqlite3"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_MAGIC = b"SQLite format 3\x00"
_HEADER = 100
#: A write-ahead log's own header; a log no longer than this holds no page.
_WAL_HEADER = 32
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26
#: The words every damaged-file message carries (the client recognises the server's reply).
DAMAGED = "is damaged ("


def unusable(data_dir: Path, why: str) -> EmbeddedServerError:
    return EmbeddedServerError(
        f"the data directory {str(data_dir)!r} {why}; set AGENT_MEMORY_DATA_DIR to a "
        "directory of your own"
    )


def check_private(data_dir: Path, info: os.stat_result) -> None:
    if not stat.S_ISDIR(info.st_mode):
        raise unusable(data_dir, "is not a directory")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise unusable(data_dir, f"belongs to another user (uid {info.st_uid})")
    if info.st_mode & 0o022:
        raise unusable(
            data_dir, f"can be written by other users (mode {stat.S_IMODE(info.st_mode):o})"
        )


def prepare_data_dir(data_dir: Path) -> Path:
    """The data directory, created private (0700) or checked to be: owned by this user and
    writable by nobody else. One that others can still read (an older version made it 0755)
    is narrowed to 0700, as it is this user's."""
    data_dir = data_dir.expanduser()
    try:
        if data_dir.parent != data_dir:
            data_dir.parent.mkdir(parents=True, exist_ok=True)
        with suppress(FileExistsError):
            os.mkdir(data_dir, 0o700)
        data_dir = data_dir.resolve()
        info = os.stat(data_dir)
        check_private(data_dir, info)
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(data_dir, 0o700)
            logger.info("embedded_data_dir_narrowed", data_dir=str(data_dir))
        if not os.access(data_dir, os.W_OK | os.X_OK):
            raise unusable(data_dir, "is not writable")
        for name in (DATABASE_FILE, f"{DATABASE_FILE}-wal", f"{DATABASE_FILE}-shm"):
            check_own_file(data_dir / name, missing_ok=True)
    except EmbeddedServerError:
        raise
    except OSError as exc:
        raise unusable(data_dir, f"is not usable ({exc.strerror or exc})") from exc
    return data_dir


def mine(info: os.stat_result) -> bool:
    """A regular file (not a link, directory or device) of the current user."""
    return stat.S_ISREG(info.st_mode) and (not hasattr(os, "getuid") or info.st_uid == os.getuid())


def check_own_file(path: Path, *, missing_ok: bool) -> None:
    """``path`` is a regular file (not a link) of this user that nobody else can read."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if missing_ok:
            return
        raise
    if not mine(info):
        what = "a regular file" if not stat.S_ISREG(info.st_mode) else "this user's file"
        raise unusable(path.parent, f"holds {path.name} that is not {what}")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o600, follow_symlinks=False)


def open_private(path: Path, flags: int) -> int:
    """Open ``path`` without following a link, creating it 0600; a file that is not this
    user's own regular file is refused."""
    fd = os.open(path, flags | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)
    try:
        info = os.fstat(fd)
        if not mine(info):
            raise unusable(path.parent, f"holds {path.name} that is not this user's file")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_private(path: Path) -> str | None:
    """The text of ``path`` if it is this user's regular file that only they can read (not
    through a link); else ``None``."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not mine(info) or stat.S_IMODE(info.st_mode) & 0o077:
            logger.warning("embedded_file_not_trusted", file=str(path))
            return None
        try:
            return handle.read(64 * 1024).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in a new 0600 file (never through a link)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        os.replace(temporary, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise


def damaged_message(path: Path, why: str) -> str:
    """One line: ``path`` is damaged (``why``, which never quotes its content), and how to
    get the data back."""
    recovered = path.with_name(f"{path.stem}.recovered{path.suffix}")
    return (
        f"the database file {path} {DAMAGED}{why}); stop every program using it, then put "
        "back its last good copy, or save what can still be read with "
        f"`sqlite3 {shlex.quote(str(path))} .recover | sqlite3 {shlex.quote(str(recovered))}` "
        f"and put that file in its place (the damaged one, its -wal and -shm set aside)"
    )


def damaged_error(path: Path, why: str) -> EmbeddedServerError:
    """The error for a damaged ``path``, logged (``embedded_database_damaged``)."""
    logger.error("embedded_database_damaged", file=str(path), reason=why)
    return EmbeddedServerError(damaged_message(path, why))


def damage_reason(exc: BaseException) -> str | None:
    """Why ``exc`` (raised by the engine) means the database file is damaged, in words that
    quote nothing stored; ``None`` when it does not."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sqlite3.Error):
            code = (getattr(current, "sqlite_errorcode", None) or 0) & 0xFF
            if code == _SQLITE_CORRUPT:
                return "SQLite found a malformed page"
            if code == _SQLITE_NOTADB:
                return "SQLite does not recognise it as a database"
            # Python's sqlite3 module: the message goes on to quote the stored text.
            if str(current).startswith("Could not decode to UTF-8"):
                return "a stored document is not valid UTF-8"
        if isinstance(current, json.JSONDecodeError):
            return "a stored document is not valid JSON"
        current = current.__cause__ or current.__context__
    return None


def _wal_size(path: Path) -> int:
    try:
        return os.lstat(path.with_name(path.name + "-wal")).st_size
    except OSError:
        return 0


def _refused(path: Path, what: str, todo: str) -> EmbeddedServerError:
    return EmbeddedServerError(f"the database file {path} {what}; {todo}")


def prepare_database(path: Path) -> None:
    """Refuse a database file that is empty, not SQLite's or visibly cut (see the module's
    docstring), or create a new one, initialised, when there is none."""
    wal = _wal_size(path)
    try:
        size = os.lstat(path).st_size
    except FileNotFoundError:
        if wal > _WAL_HEADER:
            raise _refused(
                path,
                f"is missing but its write-ahead log {path.name}-wal holds {wal} bytes",
                "put back the database file's last good copy, or move the -wal and -shm "
                "files away to start a new database",
            ) from None
        _create(path)
        return
    if size == 0:
        if wal > _WAL_HEADER:
            raise _refused(
                path,
                f"is empty (0 bytes) but its write-ahead log {path.name}-wal holds {wal} "
                "bytes: the file was cut or replaced",
                "put back its last good copy and keep the -wal file beside it (SQLite would "
                "discard the log on opening an empty file)",
            )
        raise _refused(
            path,
            "is empty (0 bytes), so it holds no database (it was cut, or never written)",
            "put back its last good copy, or delete it to start a new, empty database",
        )
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        header = handle.read(_HEADER)
    if len(header) < _HEADER or not header.startswith(_MAGIC):
        raise _refused(
            path,
            "is not an SQLite database",
            "move it out of the data directory, or put back the database's last good copy",
        )
    page = int.from_bytes(header[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        raise damaged_error(path, "its header names no valid page size")
    if size % page:
        raise damaged_error(path, "it ends in the middle of a page")
    pages = int.from_bytes(header[28:32], "big")
    counted = header[24:28] == header[92:96] and pages > 0
    # With pages in the write-ahead log, the file may lag its header (a checkpoint cut short
    # is finished from the log on opening).
    if counted and wal <= _WAL_HEADER and size < pages * page:
        raise damaged_error(path, f"it holds {size // page} of the {pages} pages it should")


def _create(path: Path) -> None:
    """A new database file at ``path``, initialised by SQLite, never over an existing one.

    It is 0600 from the start: SQLite would create it 0644, and it gives the ``-wal`` and
    ``-shm`` files the database's mode."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.new")
    os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600))
    try:
        connection = sqlite3.connect(temporary)
        try:
            # Writes the header page: the journal mode the engine sets anyway.
            connection.execute("PRAGMA journal_mode=WAL")
        finally:
            connection.close()
        fd = os.open(temporary, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        with suppress(FileExistsError):  # made meanwhile: that one is checked at its opening
            os.link(temporary, path)
    finally:
        for leftover in (temporary, Path(f"{temporary}-wal"), Path(f"{temporary}-shm")):
            with suppress(FileNotFoundError):
                os.unlink(leftover)
    with suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY | _CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

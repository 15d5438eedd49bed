"""Export an agent's (or one user's) memories of every kind to JSON Lines (:mod:`.records`).

>>> report = await export_memories(connection, "backup.jsonl.gz", agent_id="support")  # doctest: +SKIP
>>> report.counts["memories"]                                                         # doctest: +SKIP

The documents are read with one cursor per kind and written a line at a time, so memory use
does not grow with the tenant: a cursor holds one batch, the writer one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from agent_memory._log import get_logger
from agent_memory._version import __version__
from agent_memory.checks import check_id, check_moment
from agent_memory.errors import InvalidInputError
from agent_memory.mongo import _driver
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.connection import META_COLLECTION, Connection
from agent_memory.mongo.embedding_record import EMBEDDING_META_ID, recorded_signature
from agent_memory.ops.transfer.files import open_output
from agent_memory.ops.transfer.records import (
    FORMAT,
    KINDS,
    VERSION,
    Kind,
    encode_line,
)

__all__ = ["ExportReport", "ExportScope", "export_lines", "export_memories"]

logger = get_logger(__name__)

#: Documents a cursor fetches per round trip.
BATCH = 500


@dataclass(frozen=True, slots=True)
class ExportScope:
    """What an export takes: one agent's or every agent's, one user's or every user's, and
    only what was written from ``since`` on."""

    agent_id: str | None = None
    user_id: str | None = None
    since: datetime | None = None

    def checked(self) -> ExportScope:
        return ExportScope(
            None if self.agent_id is None else check_id(self.agent_id, "agent_id"),
            None if self.user_id is None else check_id(self.user_id, "user_id"),
            None if self.since is None else check_moment(self.since, "since"),
        )

    def kinds(self) -> tuple[Kind, ...]:
        """The kinds this scope reads: per-agent counts are nobody's data but the agent's."""
        return tuple(kind for kind in KINDS if not (kind.agent_wide and self.user_id))

    def filter(self, kind: Kind) -> dict[str, Any]:
        where: dict[str, Any] = {}
        if self.agent_id is not None:
            where["agent_id"] = {"$eq": self.agent_id}
        if self.user_id is not None and not kind.agent_wide:
            where["user_id"] = {"$eq": self.user_id}
        if self.since is not None:
            where[kind.written] = {"$gte": self.since}
        return where

    def as_json(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "user_id": self.user_id,
            "since": None if self.since is None else self.since.isoformat(),
        }


@dataclass(slots=True)
class ExportReport:
    """What an export wrote: records per kind, vectors included or not, seconds taken."""

    counts: dict[str, int] = field(default_factory=dict)
    vectors: bool = True
    seconds: float = 0.0
    path: str | None = None

    @property
    def total(self) -> int:
        return sum(self.counts.values())


async def _embedder_record(connection: Connection) -> dict[str, Any] | None:
    stored = await connection.collection(META_COLLECTION).find_one({"_id": EMBEDDING_META_ID})
    if stored is None:
        return None
    return asdict(recorded_signature(stored))


async def _prefetched(cursor: Any) -> AsyncIterator[dict[str, Any]]:
    """The cursor's documents, the next batch read while this one is written: the server
    (another process, on the embedded default too) works while this one encodes. Closing
    the iterator early stops the reading and closes the cursor."""
    batches: asyncio.Queue[list[dict[str, Any]] | Exception | None] = asyncio.Queue(2)

    async def read() -> None:
        try:
            while batch := await cursor.to_list(BATCH):
                await batches.put(batch)
        except Exception as exc:  # handed to the reader of the queue
            await batches.put(exc)
            return
        await batches.put(None)

    reader = asyncio.create_task(read())
    try:
        while (batch := await batches.get()) is not None:
            if isinstance(batch, Exception):
                raise batch
            for doc in batch:
                yield doc
    finally:
        # A cancelled reader ends wherever it waits (a read, or a full queue); only its own
        # cancellation is absorbed here.
        reader.cancel()
        await asyncio.wait([reader])
        await cursor.close()


async def export_lines(
    connection: Connection,
    scope: ExportScope = ExportScope(),
    *,
    vectors: bool = True,
    report: ExportReport | None = None,
    counted: Callable[[dict[str, int]], None] | None = None,
    step: Callable[[int], None] | None = None,
) -> AsyncGenerator[str, None]:
    """The lines of an export (each without its newline): the header, one per document,
    the end line. ``report`` is filled in as they go; ``counted`` gets the header's counts
    (what a progress bar needs), ``step`` each record's arrival."""
    scope = scope.checked()
    if not isinstance(vectors, bool):
        raise InvalidInputError(f"vectors must be a bool, got {type(vectors).__name__}")
    report = report if report is not None else ExportReport()
    report.vectors = vectors
    kinds = scope.kinds()
    with translate_errors("counting what to export"):
        expected = {
            kind.name: await _driver.count(connection.collection(kind.name), scope.filter(kind))
            for kind in kinds
        }
        embedder = await _embedder_record(connection)
    if counted is not None:
        counted(expected)
    yield json.dumps(
        {
            "format": FORMAT,
            "version": VERSION,
            "exported_at": datetime.now(UTC).isoformat(),
            "agent_memory": __version__,
            "scope": scope.as_json(),
            "vectors": vectors,
            "embedder": embedder,
            "counts": expected,
        },
        ensure_ascii=False,
    )
    for kind in kinds:
        written = 0
        with translate_errors(f"exporting {kind.name}"):
            cursor = connection.collection(kind.name).find(scope.filter(kind)).batch_size(BATCH)
            async with contextlib.aclosing(_prefetched(cursor)) as docs:
                async for doc in docs:
                    record: dict[str, Any] = {"kind": kind.name}
                    if not vectors and doc.pop("embedding", None) is not None:
                        record["vector"] = False
                    record["doc"] = doc
                    written += 1
                    report.counts[kind.name] = written
                    if step is not None:
                        step(1)
                    yield encode_line(record)
        report.counts[kind.name] = written
    yield json.dumps({"end": {"counts": report.counts}}, ensure_ascii=False)


async def _write(stream: IO[str], lines: AsyncGenerator[str, None]) -> None:
    """Write ``lines`` to ``stream`` a batch at a time, off the event loop (compressing and
    writing a batch takes milliseconds the loop's other tasks should not wait for); the
    lines are closed whatever happens (their cursor with them)."""
    batch: list[str] = []
    async with contextlib.aclosing(lines):
        async for line in lines:
            batch.append(line)
            if len(batch) >= BATCH:
                await asyncio.to_thread(stream.write, "\n".join(batch) + "\n")
                batch = []
        if batch:
            await asyncio.to_thread(stream.write, "\n".join(batch) + "\n")


async def export_memories(
    connection: Connection,
    out: str | Path | IO[str],
    scope: ExportScope = ExportScope(),
    *,
    vectors: bool = True,
    compress: bool | None = None,
    counted: Callable[[dict[str, int]], None] | None = None,
    step: Callable[[int], None] | None = None,
) -> ExportReport:
    """Write an export to ``out`` (a path, refused if it exists, or an open text stream) and
    return what was written. A path gets owner-only permissions and, with ``compress`` or a
    ``.gz`` name, gzip."""
    started = time.perf_counter()
    report = ExportReport(path=None if not isinstance(out, str | Path) else str(out))
    lines = export_lines(
        connection, scope, vectors=vectors, report=report, counted=counted, step=step
    )
    if not isinstance(out, str | Path):
        await _write(out, lines)
    else:
        final = Path(out)
        if await asyncio.to_thread(final.exists):
            raise InvalidInputError(f"{final} exists; export to a new file")
        if compress is None:
            compress = final.suffix == ".gz"
        # Written beside it and given its name once whole: a file at the name is complete.
        partial = final.with_name(final.name + ".partial")
        try:
            stream = await asyncio.to_thread(open_output, partial, compress=compress)
        except FileExistsError:
            raise InvalidInputError(
                f"{partial} exists: another export to {final} is running or was interrupted; "
                "remove it first"
            ) from None
        except OSError as exc:
            raise InvalidInputError(f"cannot write {final}: {exc.strerror}") from None
        try:
            try:
                await _write(stream, lines)
            finally:
                await asyncio.to_thread(stream.close)
            try:
                # A link is refused if the name exists (a rename would replace it).
                await asyncio.to_thread(os.link, partial, final)
            except FileExistsError:
                raise InvalidInputError(
                    f"{final} was created meanwhile; export to a new file"
                ) from None
            partial.unlink()
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    report.seconds = time.perf_counter() - started
    logger.info(
        "memories_exported",
        records=report.total,
        vectors=vectors,
        seconds=round(report.seconds, 3),
        **{key: value for key, value in scope.as_json().items() if value is not None},
    )
    return report

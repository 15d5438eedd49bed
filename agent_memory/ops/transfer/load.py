"""Import an export (:mod:`.records`) into any target: the embedded server, MongoDB, Atlas.

>>> report = await import_memories(connection, embedder, "backup.jsonl.gz")  # doctest: +SKIP
>>> report.inserted, report.present, report.verified                        # doctest: +SKIP

- **Nothing is written from a damaged file.** The file is read twice: once to check every
  line (the header's format and version, each record's kind, ids and document, the end line
  and its counts), then to write. A bad line is an error naming the line, and never repeats
  what the line holds.
- **Idempotent.** A document is inserted only if its id is not stored yet (the ids of each
  batch are looked up first, and an insert never replaces), so a second run, or a run resumed
  after a crash, creates nothing twice, embeds nothing twice and overwrites nothing. An id,
  or a unique key (a session id, a profile's schema), held by another document is counted as
  a conflict and left alone.
- **Vectors follow the target's embedder.** A file made with the target's embedder keeps its
  vectors; one made with another (or exported without vectors) is embedded again with the
  target's, in batches (the provider retries and paces its own calls). Field vectors (items
  of the LangGraph store searched by their fields) cannot be made again without their field
  texts: such a memory is then searched by its whole text, and the report counts them.
- **Ids, times, importance, feedback and history are kept**: the documents are stored as
  they were exported, supersession links and all.
- **Verified**: each batch is read back once written; every document of it that is not a
  conflict must be stored, for its own tenant.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import time
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import bson
from bson.binary import Binary
from pymongo.errors import BulkWriteError

from agent_memory._log import get_logger
from agent_memory.checks import check_id
from agent_memory.errors import InvalidInputError
from agent_memory.memory.long_term.fields import FIELD, FIELDS_TAG
from agent_memory.memory.long_term.records import LongTermConfig
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.batches import find_in
from agent_memory.mongo.connection import Connection
from agent_memory.mongo.embedding_record import EmbedderGuard
from agent_memory.mongo.search.snapshots import GENERATIONS, announce_writes
from agent_memory.mongo.vectors import to_bson_vector
from agent_memory.ops.transfer.files import open_input
from agent_memory.ops.transfer.records import (
    FORMAT,
    VERSION,
    Kind,
    checked_document,
    kind_named,
    read_line,
)
from agent_memory.providers.embedders.base import Embedder

__all__ = ["BATCH", "ImportReport", "Loader", "import_memories", "read_export"]

logger = get_logger(__name__)

#: Documents written per bulk write (and texts embedded per call to the embedder).
BATCH = 500
#: The longest line read: a stored document is at most 16 MiB of BSON, a few times that
#: as JSON with its vector in base64.
MAX_LINE_CHARS = 64 * 1024 * 1024
_MAX_BSON = 16 * 1024 * 1024
#: Kinds whose searches keep documents in memory between writes (they are told of the import).
_SEARCHED = ("memories", "action_logs", "knowledge_chunks")
_DUPLICATE_KEY = 11000


@dataclass(slots=True)
class ImportReport:
    """What an import found and did, per kind."""

    #: Records in the file.
    counts: dict[str, int] = field(default_factory=dict)
    #: Documents stored by this run.
    inserted: dict[str, int] = field(default_factory=dict)
    #: Documents already stored with the same id for the same tenant (an earlier run).
    present: dict[str, int] = field(default_factory=dict)
    #: Documents whose id or unique key another stored document holds: left alone.
    conflicts: dict[str, int] = field(default_factory=dict)
    #: Vectors made again with the target's embedder.
    embedded: int = 0
    #: Field vectors not carried (their memories are searched by their whole text).
    fields_dropped: int = 0
    #: Why vectors were made again ("" when the file's were kept).
    reembed_reason: str = ""
    #: Whether every document of the file that is not a conflict was found stored, for its
    #: own tenant, once written.
    verified: bool = False
    #: What the verification found missing ("memories: 3 written but not found after").
    shortfalls: list[str] = field(default_factory=list)
    dry_run: bool = False
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True, slots=True)
class _Header:
    vectors: bool
    embedder: dict[str, Any] | None
    counts: dict[str, int]


# --- reading --------------------------------------------------------------------------------


def _lines(stream: IO[str]) -> Iterator[tuple[int, str]]:
    """The stream's lines, numbered from 1, each at most :data:`MAX_LINE_CHARS`."""
    number = 0
    while True:
        number += 1
        try:
            line = stream.readline(MAX_LINE_CHARS + 1)
        except (UnicodeDecodeError, EOFError, OSError, gzip.BadGzipFile, zlib.error) as exc:
            raise InvalidInputError(
                f"line {number}: cannot be read ({type(exc).__name__}); the file is damaged"
            ) from None
        if not line:
            return
        if len(line) > MAX_LINE_CHARS:
            raise InvalidInputError(f"line {number}: longer than {MAX_LINE_CHARS} characters")
        yield number, line


def _json(line: str, number: int) -> dict[str, Any]:
    try:
        value = read_line(line)
    except Exception as exc:  # json and Extended JSON raise several kinds for bad input
        raise InvalidInputError(
            f"line {number}: not JSON, or not valid Extended JSON ({type(exc).__name__}); "
            "the file is damaged"
        ) from None
    if not isinstance(value, dict):
        raise InvalidInputError(f"line {number}: not a JSON object")
    return value


def parse_header(value: dict[str, Any]) -> _Header:
    if value.get("format") != FORMAT:
        raise InvalidInputError(f"line 1: not an {FORMAT} file (its header has no such format)")
    version = value.get("version")
    if version != VERSION:
        shown = version if isinstance(version, int) and not isinstance(version, bool) else "?"
        raise InvalidInputError(
            f"line 1: format version {shown}; this release reads version {VERSION}"
        )
    vectors = value.get("vectors")
    if not isinstance(vectors, bool):
        raise InvalidInputError("line 1: the header's vectors must be true or false")
    embedder = value.get("embedder")
    if embedder is not None and not (
        isinstance(embedder, dict)
        and all(isinstance(embedder.get(k), str) for k in ("provider", "model", "similarity"))
        and isinstance(embedder.get("dimensions"), int)
    ):
        raise InvalidInputError("line 1: the header's embedder is not an embedder record")
    counts = value.get("counts")
    if not isinstance(counts, dict):
        raise InvalidInputError("line 1: the header has no counts")
    return _Header(vectors, embedder, counts)


@dataclass(frozen=True, slots=True)
class _Record:
    line: int
    kind: Kind
    doc: dict[str, Any]
    #: Whether the document had a vector in its source (included or left out).
    had_vector: bool


def _bad_key(value: Any, depth: int) -> bool:
    """Whether ``value`` holds, at any depth, a field name that no document the framework
    writes has and a server would refuse or read as an operator or a path."""
    if depth > 100:
        return True
    if isinstance(value, dict):
        return any(
            not isinstance(key, str)
            or key.startswith("$")
            or "." in key
            or "\x00" in key
            or _bad_key(item, depth + 1)
            for key, item in value.items()
        )
    if isinstance(value, list):
        return any(_bad_key(item, depth + 1) for item in value)
    return False


def parse_record(value: dict[str, Any], number: int, header: _Header) -> _Record:
    kind = kind_named(value.get("kind"))
    if kind is None:
        raise InvalidInputError(f"line {number}: no kind of memory this release stores")
    doc = checked_document(value.get("doc"), number)
    if "_id" not in doc or not isinstance(doc["_id"], str | bson.ObjectId | int):
        raise InvalidInputError(f"line {number}: the document has no id")
    try:
        check_id(doc.get("agent_id"), "agent_id")
        if not kind.agent_wide:
            check_id(doc.get("user_id"), "user_id")
    except InvalidInputError as exc:
        raise InvalidInputError(f"line {number}: {exc}") from None
    if _bad_key(doc, 0):
        raise InvalidInputError(
            f"line {number}: the document has a field name MongoDB does not store as it is "
            "(starting with '$', or with '.' or a NUL character in it)"
        )
    vector = doc.get("embedding")
    if vector is not None:
        if not (isinstance(vector, Binary) and vector.subtype == 9):
            raise InvalidInputError(f"line {number}: the document's vector is not a BSON vector")
        dimensions = (header.embedder or {}).get("dimensions")
        if dimensions is not None and (len(vector) - 2) // 4 != dimensions:
            raise InvalidInputError(
                f"line {number}: the document's vector does not have the header's "
                f"{dimensions} dimensions"
            )
    try:
        size = len(bson.encode(doc))
    except (bson.errors.InvalidDocument, OverflowError, ValueError) as exc:
        raise InvalidInputError(
            f"line {number}: the document cannot be stored ({type(exc).__name__})"
        ) from None
    if size > _MAX_BSON:
        raise InvalidInputError(f"line {number}: the document is larger than 16 MiB")
    return _Record(number, kind, doc, vector is not None or value.get("vector") is False)


def read_export(stream: IO[str]) -> tuple[_Header, Iterator[_Record]]:
    """The header of an export and an iterator over its records, each checked; the
    iterator raises at the first bad line, at a line after the end line, and at the end of
    a file cut short (no end line, or counts that differ from the records read)."""
    lines = _lines(stream)
    first = next(lines, None)
    if first is None:
        raise InvalidInputError(f"the file is empty; it is not an {FORMAT} file")
    header = parse_header(_json(first[1], 1))

    def records() -> Iterator[_Record]:
        seen: Counter[str] = Counter()
        ended = False
        for number, line in lines:
            if ended:
                raise InvalidInputError(f"line {number}: a line after the end line")
            value = _json(line, number)
            if "end" in value:
                end = value["end"]
                counts = end.get("counts") if isinstance(end, dict) else None
                if not isinstance(counts, dict):
                    raise InvalidInputError(f"line {number}: the end line has no counts")
                written = {k: v for k, v in counts.items() if v}
                if written != {k: v for k, v in seen.items() if v}:
                    raise InvalidInputError(
                        f"line {number}: the end line's counts differ from the records read"
                    )
                ended = True
                continue
            record = parse_record(value, number, header)
            seen[record.kind.name] += 1
            yield record
        if not ended:
            raise InvalidInputError(
                "the file ends before its end line: the export was cut short or the file "
                "is incomplete"
            )

    return header, records()


# --- writing --------------------------------------------------------------------------------


def is_field_vector(record: _Record) -> bool:
    """A field document (a vector of one field of a LangGraph store item): its text is not
    stored, so when vectors are made again it cannot be, and is left out."""
    return record.kind.name == "memories" and record.doc.get("status") == FIELD


def text_to_embed(record: _Record, embed_context: bool) -> str | None:
    """What the record's vector is made again from (``None``: it had none, or has no text)."""
    if record.kind.text is None or not record.had_vector:
        return None
    return record.kind.text(record.doc, embed_context)


def reembed_reason(header: _Header, embedder: Embedder) -> str:
    if not header.vectors:
        return "the file was exported without vectors"
    signature = embedder.signature
    if header.embedder is None:
        return "no record says which embedder made its vectors"
    if header.embedder != asdict(signature):
        made = header.embedder
        return (
            f"its vectors were made with {made['provider']}/{made['model']} "
            f"({made['dimensions']} dims), the target's embedder is {signature.describe()}"
        )
    return ""


class Loader:
    """Writes checked records to a target in batches (shared by import and migrate)."""

    def __init__(
        self,
        connection: Connection,
        embedder: Embedder,
        *,
        reembed: bool,
        config: LongTermConfig | None = None,
        report: ImportReport | None = None,
        step: Callable[[int], None] | None = None,
    ) -> None:
        self.connection = connection
        self.embedder = embedder
        self.reembed = reembed
        self.config = config or LongTermConfig()
        self.report = report if report is not None else ImportReport()
        self._step = step
        self._buffers: dict[str, list[_Record]] = {}
        self._touched: dict[str, set[tuple[str, str]]] = {name: set() for name in _SEARCHED}
        self._log_agents: set[str] = set()

    async def add(self, record: _Record) -> None:
        name = record.kind.name
        self.report.counts[name] = self.report.counts.get(name, 0) + 1
        doc = record.doc
        if self.reembed and name == "memories":
            if is_field_vector(record):
                self.report.fields_dropped += 1
                if self._step is not None:
                    self._step(1)
                return
            tags = doc.get("tags")
            if isinstance(tags, list) and FIELDS_TAG in tags:
                doc["tags"] = [tag for tag in tags if tag != FIELDS_TAG]
        buffer = self._buffers.setdefault(name, [])
        buffer.append(record)
        if len(buffer) >= BATCH:
            await self._flush(name)

    async def finish(self) -> ImportReport:
        for name in list(self._buffers):
            await self._flush(name)
        with translate_errors("announcing the import"):
            generations = self.connection.collection(GENERATIONS)
            for name, tenants in self._touched.items():
                ordered = sorted(tenants)
                for start in range(0, len(ordered), BATCH):
                    await announce_writes(
                        generations,
                        self.connection.collection_name(name),
                        [{"agent_id": a, "user_id": u} for a, u in ordered[start : start + BATCH]],
                    )
            if self._log_agents:
                # The hourly counts of actions are counted again from the logs.
                every = {f"hours.h{hh:02d}.version": 1 for hh in range(24)}
                hours = self.connection.collection("action_hours")
                for agent in sorted(self._log_agents):
                    await hours.update_many({"agent_id": {"$eq": agent}}, {"$inc": every})
        self.report.verified = not self.report.shortfalls
        return self.report

    async def _held(self, collection: Any, docs: list[dict[str, Any]]) -> dict[Any, dict]:
        """The stored documents among ``docs``' ids, with their tenant keys (read
        :data:`~agent_memory.mongo.batches.BOUND` ids at a time: the embedded engine refuses
        longer lists)."""
        rows = await find_in(
            collection,
            [doc["_id"] for doc in docs],
            lambda part: {"_id": {"$in": part}},
            {"agent_id": 1, "user_id": 1},
        )
        return {row["_id"]: row for row in rows}

    @staticmethod
    def _same_tenant(kind: Kind, row: Mapping[str, Any] | None, doc: Mapping[str, Any]) -> bool:
        return (
            row is not None
            and row.get("agent_id") == doc["agent_id"]
            and (kind.agent_wide or row.get("user_id") == doc["user_id"])
        )

    async def _flush(self, name: str) -> None:
        records = self._buffers.pop(name, [])
        if not records:
            return
        kind = records[0].kind
        collection = self.connection.collection(name)
        present = conflicts = inserted = 0
        with translate_errors(f"importing {name}"):
            # What an earlier run (or another holder) stored already is found first: it is
            # neither embedded again nor written.
            held = await self._held(collection, [record.doc for record in records])
            new = []
            for record in records:
                doc = record.doc
                if doc["_id"] not in held:
                    new.append(record)
                elif self._same_tenant(kind, held[doc["_id"]], doc):
                    present += 1
                else:
                    conflicts += 1
            if self.reembed and kind.text is not None and new:
                await self._embed(new)
            docs = [record.doc for record in new]
            for doc in docs:
                if name in self._touched:
                    self._touched[name].add((doc["agent_id"], doc["user_id"]))
                if name == "action_logs":
                    self._log_agents.add(doc["agent_id"])
            # An insert, never an overwrite: a document stored meanwhile, or a unique key
            # (a session id, a profile's schema) another document holds, fails alone.
            failed: list[dict[str, Any]] = []
            if docs:
                try:
                    result = await collection.insert_many(docs, ordered=False)
                    inserted = len(result.inserted_ids)
                except BulkWriteError as exc:
                    details = exc.details or {}
                    errors = details.get("writeErrors") or []
                    if details.get("writeConcernErrors") or any(
                        error.get("code") != _DUPLICATE_KEY for error in errors
                    ):
                        raise
                    inserted = int(details.get("nInserted", 0))
                    failed = [docs[int(error["index"])] for error in errors]
            # Read back: every document of the batch that is not a conflict must now be
            # stored, for its own tenant.
            after = await self._held(collection, docs)
            for doc in failed:
                if self._same_tenant(kind, after.get(doc["_id"]), doc):
                    present += 1
                else:
                    conflicts += 1
            failed_ids = {doc["_id"] for doc in failed}
            missing = sum(
                1
                for doc in docs
                if doc["_id"] not in failed_ids
                and not self._same_tenant(kind, after.get(doc["_id"]), doc)
            )
        if missing:
            self.report.shortfalls.append(f"{name}: {missing} written but not found after")
        for bucket, count in (
            (self.report.inserted, inserted),
            (self.report.present, present),
            (self.report.conflicts, conflicts),
        ):
            if count:
                bucket[name] = bucket.get(name, 0) + count
        if self._step is not None:
            self._step(len(records))

    async def _embed(self, records: list[_Record]) -> None:
        wanted = []
        for record in records:
            record.doc.pop("embedding", None)
            text = text_to_embed(record, self.config.embed_context)
            if text is not None:
                wanted.append((record, text))
        if not wanted:
            return
        vectors = await self.embedder.embed_documents([text for _, text in wanted])
        for (record, _), vector in zip(wanted, vectors, strict=True):
            record.doc["embedding"] = to_bson_vector(vector)
        self.report.embedded += len(wanted)


def _check_file(source: str | Path) -> tuple[_Header, Counter[str]]:
    """The header of the export at ``source`` and its records per kind, every line checked."""
    with open_input(source) as stream:
        header, records = read_export(stream)
        return header, Counter(record.kind.name for record in records)


def _take(records: Iterator[_Record], count: int) -> list[_Record]:
    return list(itertools.islice(records, count))


async def import_memories(
    connection: Connection,
    embedder: Embedder,
    source: str | Path,
    *,
    config: LongTermConfig | None = None,
    dry_run: bool = False,
    counted: Callable[[int], None] | None = None,
    step: Callable[[int], None] | None = None,
    before_writing: Callable[[], Awaitable[Any]] | None = None,
) -> ImportReport:
    """Import the export at ``source`` into ``connection``'s database (see the module notes).

    ``config`` says how memories are embedded (``embed_context``), as the target's
    ``LongTermMemory`` would. ``dry_run`` checks the whole file and reports what it holds
    and whether vectors would be made again, and writes nothing. ``counted`` gets the
    number of records once the file is checked, ``step`` each record written (for a
    progress bar). ``before_writing`` runs once the file is checked and before anything is
    written (the command line sets the target's indexes up there, so a damaged file changes
    nothing). The target's recorded embedder must be ``embedder`` (``agent-memory indexes
    setup`` on a new target records it)."""
    started = time.perf_counter()
    report = ImportReport(dry_run=dry_run)
    # First pass: the whole file checked, nothing written (off the event loop).
    header, total = await asyncio.to_thread(_check_file, source)
    report.reembed_reason = reembed_reason(header, embedder)
    if counted is not None:
        counted(sum(total.values()))
    if dry_run:
        report.counts = dict(total)
        report.seconds = time.perf_counter() - started
        return report
    if before_writing is not None:
        await before_writing()
    with translate_errors("checking the target's embedder"):
        await EmbedderGuard(connection, embedder.signature).check()
    loader = Loader(
        connection,
        embedder,
        reembed=bool(report.reembed_reason),
        config=config,
        report=report,
        step=step,
    )
    stream = await asyncio.to_thread(open_input, source)
    try:
        _, records = await asyncio.to_thread(read_export, stream)
        while batch := await asyncio.to_thread(_take, records, BATCH):
            for record in batch:
                await loader.add(record)
    finally:
        await asyncio.to_thread(stream.close)
    await loader.finish()
    report.seconds = time.perf_counter() - started
    logger.info(
        "memories_imported",
        records=report.total,
        inserted=sum(report.inserted.values()),
        present=sum(report.present.values()),
        conflicts=sum(report.conflicts.values()),
        embedded=report.embedded,
        verified=report.verified,
        seconds=round(report.seconds, 3),
    )
    return report

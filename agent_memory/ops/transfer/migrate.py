"""Move memories from one database to another: an export read straight into an import.

>>> plan = await migrate_memories(source, target, target_embedder, dry_run=True)  # doctest: +SKIP
>>> plan.counts, plan.to_embed, plan.embedding_seconds                            # doctest: +SKIP

The path users take (the embedded default to Atlas, one embedding model to another) with no
file in between: the source's documents are read and checked as an import checks a file,
then read again a batch at a time and written to the target as :mod:`.load` writes an import,
idempotent and verified. Vectors are carried when the two
embedders are the same and made again with the target's when they differ. A dry run writes
nothing and says what would move and how long embedding would take, timed on a sample.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agent_memory._log import get_logger
from agent_memory.errors import InvalidInputError
from agent_memory.memory.long_term.fields import FIELD
from agent_memory.memory.long_term.records import LongTermConfig
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.connection import Connection
from agent_memory.mongo.embedding_record import EmbedderGuard
from agent_memory.ops.transfer.export import ExportScope, export_lines
from agent_memory.ops.transfer.load import (
    ImportReport,
    Loader,
    _Header,
    _Record,
    is_field_vector,
    parse_header,
    parse_record,
    reembed_reason,
    text_to_embed,
)
from agent_memory.ops.transfer.records import read_line
from agent_memory.providers.embedders.base import Embedder

__all__ = ["MigrationPlan", "migrate_memories"]

logger = get_logger(__name__)

#: Texts embedded to time the target's embedder in a dry run.
SAMPLE = 32


@dataclass(slots=True)
class MigrationPlan:
    """What a migration would move (a dry run) or moved (``report``)."""

    counts: dict[str, int] = field(default_factory=dict)
    #: Why vectors are made again ("" when the source's are carried).
    reembed_reason: str = ""
    #: Vectors the target's embedder would make.
    to_embed: int = 0
    #: Field vectors that cannot be carried (their texts are not stored).
    fields_dropped: int = 0
    #: Seconds embedding would take at the rate measured on a sample (None: nothing to embed).
    embedding_seconds: float | None = None
    report: ImportReport | None = None
    dry_run: bool = False


async def _time_embedding(
    source: Connection, embedder: Embedder, scope: ExportScope, plan: MigrationPlan
) -> None:
    """How long the target's embedder would take for ``plan.to_embed`` vectors, at the rate
    it embeds a sample of the source's memories."""
    if not plan.to_embed:
        return
    with translate_errors("planning the migration"):
        sample = await (
            source.collection("memories")
            .find({**scope.filter(scope.kinds()[0]), "status": {"$ne": FIELD}}, {"content": 1})
            .limit(SAMPLE)
            .to_list(None)
        )
    texts = [doc["content"] for doc in sample if isinstance(doc.get("content"), str)]
    texts = [text for text in texts if text.strip()] or ["a sample memory to time the embedder"]
    started = time.perf_counter()
    await embedder.embed_documents(texts)
    rate = len(texts) / max(time.perf_counter() - started, 1e-6)
    plan.embedding_seconds = plan.to_embed / rate


async def _records(
    source: Connection, scope: ExportScope
) -> AsyncGenerator[tuple[_Header, _Record | None], None]:
    """The source's export as checked records, after its header (``None`` for the header
    itself): the same checks as an import's, on the same lines."""
    lines = export_lines(source, scope, vectors=True)
    async with contextlib.aclosing(lines):
        header: _Header | None = None
        number = 0
        async for line in lines:
            number += 1
            value = read_line(line)
            if header is None:
                header = parse_header(value)
                yield header, None
            elif "end" not in value:
                yield header, parse_record(value, number, header)


async def migrate_memories(
    source: Connection,
    target: Connection,
    embedder: Embedder,
    scope: ExportScope = ExportScope(),
    *,
    config: LongTermConfig | None = None,
    dry_run: bool = False,
    step: Callable[[int], None] | None = None,
    before_writing: Callable[[], Awaitable[Any]] | None = None,
) -> MigrationPlan:
    """Copy the memories ``scope`` takes from ``source`` to ``target`` (whose embedder is
    ``embedder``; see the module notes). Every document is read and checked as an import
    checks a file before anything is written (a second read then writes), so a document the
    target could not take stops the migration before it starts; ``before_writing`` runs
    between the two (the command line sets the target's indexes up there). ``dry_run``:
    the check and the plan, nothing written."""
    if source is target:
        raise InvalidInputError("the source and the target are the same database")
    scope = scope.checked()
    plan = MigrationPlan(dry_run=dry_run)
    plan.counts = {kind.name: 0 for kind in scope.kinds()}
    embed_context = (config or LongTermConfig()).embed_context
    source_signature: dict[str, Any] | None = None
    async with contextlib.aclosing(_records(source, scope)) as records:
        async for header, record in records:
            if record is None:
                source_signature = header.embedder
                plan.reembed_reason = reembed_reason(header, embedder)
                continue
            # What the import would do with it, counted as it goes by.
            plan.counts[record.kind.name] += 1
            if plan.reembed_reason:
                if is_field_vector(record):
                    plan.fields_dropped += 1
                elif text_to_embed(record, embed_context) is not None:
                    plan.to_embed += 1
    if dry_run:
        await _time_embedding(source, embedder, scope, plan)
        return plan
    if before_writing is not None:
        await before_writing()
    with translate_errors("checking the target's embedder"):
        await EmbedderGuard(target, embedder.signature).check()
    started = time.perf_counter()
    report = ImportReport(reembed_reason=plan.reembed_reason)
    loader = Loader(
        target,
        embedder,
        reembed=bool(plan.reembed_reason),
        config=config,
        report=report,
        step=step,
    )
    async with contextlib.aclosing(_records(source, scope)) as records:
        async for _, record in records:
            if record is not None:
                await loader.add(record)
    plan.report = await loader.finish()
    plan.report.seconds = time.perf_counter() - started
    plan.counts = dict(plan.report.counts)
    plan.fields_dropped = plan.report.fields_dropped
    plan.to_embed = plan.report.embedded
    logger.info(
        "memories_migrated",
        records=plan.report.total,
        inserted=sum(plan.report.inserted.values()),
        embedded=plan.report.embedded,
        verified=plan.report.verified,
        source_embedder=None if source_signature is None else source_signature.get("model"),
    )
    return plan

"""``agent-memory export | import | migrate``: move memories between databases and files."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from agent_memory.cli._app import checked_id, console, err_console, plural, reflowed, run
from agent_memory.cli._runtime import open_runtime


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise typer.BadParameter(
            "an ISO 8601 date or time, such as 2026-01-31 or 2026-01-31T09:00:00+00:00",
            param_hint="--since",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # a date alone: midnight UTC
    return moment


@contextlib.contextmanager
def _progress(
    what: str, shown: bool
) -> Iterator[tuple[Callable[[int], None], Callable[[int], None]]]:
    """A progress bar on stderr when it is a terminal: (set the total, advance)."""
    if not shown or not sys.stderr.isatty():
        yield (lambda _: None), (lambda _: None)
        return
    with Progress(
        TextColumn(what),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    ) as bar:
        task = bar.add_task(what, total=None)
        yield (lambda total: bar.update(task, total=total)), (lambda n: bar.advance(task, n))


def _counts_table(title: str, columns: dict[str, dict[str, int]]) -> Table:
    table = Table("kind", *columns, title=Text(title), title_justify="left")
    kinds = sorted({kind for counts in columns.values() for kind in counts})
    for kind in kinds:
        table.add_row(kind, *(str(counts.get(kind, 0)) for counts in columns.values()))
    return table


#: The scope options of export and migrate.
_AGENT: Any = typer.Option(
    None, "--agent", help="Only this agent (default: every agent).", callback=checked_id("agent id")
)
_USER: Any = typer.Option(
    None, "--user", help="Only this user (default: every user).", callback=checked_id("user id")
)


def export(
    out: Path = typer.Argument(..., help="The file to write (refused if it exists); .gz: gzip."),
    agent: str | None = _AGENT,
    user: str | None = _USER,
    since: str | None = typer.Option(
        None, "--since", help="Only what was written from this date or time on (ISO 8601)."
    ),
    vectors: bool = typer.Option(
        True, "--vectors/--no-vectors", help="Include the vectors (an import re-embeds without)."
    ),
    gzip: bool | None = typer.Option(
        None, "--gzip/--no-gzip", help="Compress (default: when the name ends in .gz)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON."),
) -> None:
    """Export memories of every kind to a JSON Lines file: long-term memories with their
    history, profiles, conversations, tasks with checkpoints, action logs with feedback and
    knowledge.

    The file has a header (format version, the embedder of the vectors, counts), a line per
    document and an end line; docs/operations.md describes it. Memory use stays flat however
    much is exported. The file is created readable by its owner only: it holds users' data
    (with --user, a copy of one user's data for a request of access or portability).
    """
    from agent_memory.ops.transfer import ExportScope, export_memories

    scope = ExportScope(agent, user, _since(since))

    async def main():  # type: ignore[no-untyped-def]
        async with open_runtime() as rt:
            with _progress("exporting", not as_json) as (counted, step):
                return await export_memories(
                    rt.connection,
                    out,
                    scope,
                    vectors=vectors,
                    compress=gzip,
                    counted=lambda counts: counted(sum(counts.values())),
                    step=step,
                )

    report = run(main)
    if as_json:
        typer.echo(json.dumps({"path": str(out), "counts": report.counts, "vectors": vectors}))
        return
    console.print(_counts_table(f"exported to {out}", {"records": report.counts}))
    rate = report.total / report.seconds if report.seconds else 0.0
    console.print(
        f"{plural(report.total, 'record')} in {report.seconds:.2f} s ({rate:,.0f}/s)"
        + ("" if vectors else ", without vectors"),
        highlight=False,
        markup=False,
    )


def import_(
    source: Path = typer.Argument(..., help="An export file (gzip or not)."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Check the whole file and say what it holds; write nothing."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Import an export file into the configured database, with its embedder.

    The whole file is checked before anything is written (a damaged line is named). Running it
    again, or after an interruption, creates nothing twice and overwrites nothing. Vectors made
    with another embedder, or left out, are made again with this one. Every document keeps its
    id, times, importance, feedback and history. Exits 1 when the counts at the end do not
    verify.
    """
    from agent_memory.mongo.indexes import IndexManager
    from agent_memory.ops.transfer import import_memories

    async def main():  # type: ignore[no-untyped-def]
        async with open_runtime() as rt:
            with _progress("importing", not as_json) as (counted, step):
                return await import_memories(
                    rt.connection,
                    rt.embedder,
                    source,
                    dry_run=dry_run,
                    counted=counted,
                    step=step,
                    # Once the file is checked: a damaged one creates nothing.
                    before_writing=IndexManager(rt.connection, rt.embedder.signature).setup,
                )

    report = run(main)
    if as_json:
        typer.echo(json.dumps(_import_json(report)))
    else:
        _print_import(report, source)
    if not report.dry_run and not report.verified:
        raise typer.Exit(1)


def _import_json(report: Any) -> dict[str, Any]:
    return {
        "counts": report.counts,
        "inserted": report.inserted,
        "present": report.present,
        "conflicts": report.conflicts,
        "embedded": report.embedded,
        "fields_dropped": report.fields_dropped,
        "reembed_reason": report.reembed_reason,
        "verified": report.verified,
        "shortfalls": report.shortfalls,
        "dry_run": report.dry_run,
    }


def _print_import(report: Any, source: Path | str) -> None:
    if report.dry_run:
        console.print(_counts_table(f"{source} holds", {"records": report.counts}))
        console.print("dry run: nothing written", highlight=False)
    else:
        console.print(
            _counts_table(
                f"imported from {source}",
                {
                    "records": report.counts,
                    "inserted": report.inserted,
                    "already there": report.present,
                    "conflicts": report.conflicts,
                },
            )
        )
    if report.reembed_reason:
        made = "would be made" if report.dry_run else f"{report.embedded} made"
        console.print(
            f"vectors {made} again with the target's embedder: {report.reembed_reason}",
            highlight=False,
            markup=False,
        )
    if report.fields_dropped:
        console.print(
            f"{plural(report.fields_dropped, 'field vector')} not carried (their texts are not "
            "stored): those items are searched by their whole text; put them again to restore",
            highlight=False,
            markup=False,
        )
    if sum(report.conflicts.values()):
        console.print(
            "conflicts: ids or unique keys another stored document holds; those were left alone",
            highlight=False,
        )
    if not report.dry_run:
        if report.verified:
            console.print(f"verified in {report.seconds:.2f} s", highlight=False)
        else:
            for line in report.shortfalls:
                err_console.print(f"missing: {line}", highlight=False, markup=False)


def migrate(
    to: str | None = typer.Option(
        None, "--to", help="The target's connection string (mongodb:// or mongodb+srv://)."
    ),
    to_data_dir: Path | None = typer.Option(
        None, "--to-data-dir", help="Or: the data directory of another embedded server."
    ),
    to_database: str | None = typer.Option(
        None, "--to-database", help="The target's database (default: the same name)."
    ),
    to_embedder: str | None = typer.Option(
        None, "--to-embedder", help="The target's embedder (default: the configured one)."
    ),
    to_embedding_model: str | None = typer.Option(
        None,
        "--to-embedding-model",
        help="The target embedder's model (default: that embedder's default).",
    ),
    agent: str | None = _AGENT,
    user: str | None = _USER,
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Say what would move and how long embedding would take."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Copy memories from the configured database (the embedded default unless MONGODB_URI
    is set) to another: Atlas, a self-hosted MongoDB, another embedded server.

    Export piped into import, with no file in between: idempotent (run it again after an
    interruption), vectors carried when the embedders match and made again with the
    target's when they differ, counts verified at the end. The target's indexes are set up
    first. --dry-run writes nothing.
    """
    from agent_memory.config import load_settings
    from agent_memory.mongo.connection import connect
    from agent_memory.mongo.indexes import IndexManager
    from agent_memory.ops.transfer import ExportScope, migrate_memories
    from agent_memory.providers.registry import make_embedder

    if (to is None) == (to_data_dir is None):
        raise typer.BadParameter(
            "give the target: --to URI or --to-data-dir PATH", param_hint="--to"
        )
    scope = ExportScope(agent, user)

    async def main():  # type: ignore[no-untyped-def]
        async with open_runtime() as rt:
            overrides: dict[str, Any] = {
                "mongodb_uri": to,
                "data_dir": to_data_dir,
                "database": to_database or rt.settings.database,
                "embedder": to_embedder,
            }
            target_settings = load_settings(**{k: v for k, v in overrides.items() if v is not None})
            reset: dict[str, Any] = {}
            if to_data_dir is not None:
                reset["mongodb_uri"] = None
            if to_embedder is not None and to_embedder != rt.settings.embedder:
                # The configured model and size are the source embedder's, not this one's.
                reset["embedding_model"] = to_embedding_model
                reset["embedding_dimensions"] = None
            elif to_embedding_model is not None:
                reset["embedding_model"] = to_embedding_model
            if reset:
                target_settings = target_settings.model_copy(update=reset)
            embedder = make_embedder(target_settings)
            try:
                target = await connect(target_settings)
                try:
                    with _progress("migrating", not (as_json or dry_run)) as (_, step):
                        return await migrate_memories(
                            rt.connection,
                            target,
                            embedder,
                            scope,
                            dry_run=dry_run,
                            step=step,
                            before_writing=IndexManager(target, embedder.signature).setup,
                        )
                finally:
                    await target.close()
            finally:
                await embedder.aclose()

    plan = run(main)
    if as_json:
        data: dict[str, Any] = {
            "counts": plan.counts,
            "to_embed": plan.to_embed,
            "embedding_seconds": plan.embedding_seconds,
            "fields_dropped": plan.fields_dropped,
            "reembed_reason": plan.reembed_reason,
            "dry_run": plan.dry_run,
        }
        if plan.report is not None:
            data["report"] = _import_json(plan.report)
        typer.echo(json.dumps(data))
    elif plan.dry_run:
        console.print(_counts_table("would move", {"documents": plan.counts}))
        if plan.reembed_reason:
            eta = plan.embedding_seconds or 0.0
            console.print(
                f"{plural(plan.to_embed, 'vector')} would be made again ({plan.reembed_reason}); "
                f"about {eta:,.0f} s at the rate measured on a sample",
                highlight=False,
                markup=False,
            )
        else:
            console.print("vectors carried as they are (same embedder)", highlight=False)
        console.print("dry run: nothing written", highlight=False)
    else:
        assert plan.report is not None
        _print_import(plan.report, "the source")
    if plan.report is not None and not plan.report.verified:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("export", help=reflowed(export.__doc__))(export)
    app.command("import", help=reflowed(import_.__doc__))(import_)
    app.command("migrate", help=reflowed(migrate.__doc__))(migrate)

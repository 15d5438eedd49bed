"""``agent-memory indexes setup | status | validate | drop``."""

from __future__ import annotations

import typer
from rich.table import Table

from agent_memory.cli._app import EXIT, console, is_terminal, run
from agent_memory.cli._runtime import open_runtime
from agent_memory.mongo.indexes import IndexManager, IndexState

app = typer.Typer(
    help="Create and check the indexes agent_memory needs (run setup before first use)."
)

_STYLE = {
    "ok": "green",
    "created": "green",
    "updated": "green",
    "dropped": "yellow",
    "not used": "dim",
    "building": "yellow",
    "missing": "red",
    "drift": "red",
    "failed": "red",
}


def _table(states: list[IndexState], title: str) -> Table:
    table = Table(title=title, show_lines=False)
    for column in ("collection", "index", "kind", "state", "detail"):
        table.add_column(column, overflow="fold")
    for item in states:
        style = _STYLE.get(item.state, "")
        table.add_row(
            item.collection, item.name, item.kind, f"[{style}]{item.state}[/]", item.detail
        )
    return table


@app.command("setup")
def setup(
    wait: bool = typer.Option(True, help="Wait until Atlas search indexes are queryable."),
    timeout: float = typer.Option(300.0, min=0, help="Seconds to wait for search indexes."),
    update: bool = typer.Option(
        False, help="Update Atlas search indexes whose definition drifted."
    ),
) -> None:
    """Create every missing index (idempotent); on Atlas also the search indexes."""

    async def main() -> None:
        async with open_runtime() as rt:
            manager = IndexManager(rt.connection, rt.embedder.signature)
            console.print(
                f"{rt.connection.capabilities.describe()}; search tier: {rt.connection.tier}"
            )
            seen: set[tuple[str, str, str]] = set()

            def progress(item: IndexState) -> None:
                key = (item.collection, item.name, item.state)
                if (
                    is_terminal()
                    and key not in seen
                    and item.state in ("created", "updated", "building")
                ):
                    seen.add(key)
                    console.print(f"  {item.collection}.{item.name}: {item.state}", highlight=False)

            states = await manager.setup(
                wait=wait, timeout=timeout, update=update, on_progress=progress
            )
            console.print(_table(states, "indexes"))
            if rt.connection.tier == "plain":
                console.print(
                    "This server has no Atlas Search: search ranks by exact similarity and BM25 "
                    "in the framework (plain tier); Atlas search indexes are not needed here."
                )
            problems = [item for item in states if item.problem]
            if problems:
                raise typer.Exit(EXIT["not_ready"])

    run(main)


@app.command("status")
def status() -> None:
    """Show every index and the recorded embedder."""

    async def main() -> None:
        async with open_runtime() as rt:
            manager = IndexManager(rt.connection, rt.embedder.signature)
            console.print(
                f"{rt.connection.capabilities.describe()}; search tier: {rt.connection.tier}"
            )
            console.print(_table(await manager.status(), "index status"))

    run(main)


@app.command("validate")
def validate() -> None:
    """Exit 0 when everything is in place, 4 when something is missing or drifted."""

    async def main() -> None:
        async with open_runtime() as rt:
            problems = await IndexManager(rt.connection, rt.embedder.signature).validate()
            if problems:
                console.print(_table(problems, "problems"))
                raise typer.Exit(EXIT["not_ready"])
            console.print("all indexes are in place")

    run(main)


@app.command("drop")
def drop(
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
    forget_embedder: bool = typer.Option(
        False, help="Also forget which embedder the data was built with."
    ),
) -> None:
    """Drop agent_memory's indexes (never data). Search is slow or fails until setup runs again."""
    if not yes and not typer.confirm("Drop every agent_memory index?"):
        raise typer.Exit(EXIT["error"])

    async def main() -> None:
        async with open_runtime() as rt:
            manager = IndexManager(rt.connection, rt.embedder.signature)
            dropped = await manager.drop(include_embedding_record=forget_embedder)
            console.print(_table(dropped, "dropped") if dropped else "nothing to drop")

    run(main)

"""``agent-memory indexes setup | status | validate | drop``."""

from __future__ import annotations

import typer
from rich.table import Table
from rich.text import Text

from agent_memory.cli._app import EXIT, console, fail, is_terminal, plural, run, subcommands
from agent_memory.cli._runtime import open_runtime
from agent_memory.mongo.connection import Connection
from agent_memory.mongo.indexes import IndexManager, IndexState

app = subcommands("Create and check the indexes agent_memory needs (run setup before first use).")

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
    "unknown": "yellow",
}


#: Kinds of index that are replaced only once dropped (setup creates, never rebuilds, them).
_REGULAR = ("regular", "text")


def what_to_run(problems: list[IndexState]) -> str:
    """What is not in place and the command that puts it right, in one line, such as
    "2 indexes missing; run `agent-memory indexes setup`"."""
    recorded = next((p for p in problems if p.kind == "embedding"), None)
    if recorded is not None and recorded.state == "drift":
        # Setup refuses as well: the data needs the embedder it was built with.
        return f"the embedder changed: {recorded.detail}"
    # Search indexes the server would not list (M0 and Flex clusters, a missing privilege).
    unknown = [p for p in problems if p.kind != "embedding" and p.state == "unknown"]
    indexes = [p for p in problems if p.kind != "embedding" and p.state != "unknown"]
    counts = [
        (n, word)
        for state, word in (("missing", "missing"), ("drift", "drifted"), ("failed", "failed"))
        if (n := sum(1 for p in indexes if p.state == state))
    ]
    found = []
    if len(counts) == 1:
        found.append(f"{plural(len(indexes), 'index', 'indexes')} {counts[0][1]}")
    elif counts:
        each = ", ".join(f"{n} {word}" for n, word in counts)
        found.append(f"{plural(len(indexes), 'index', 'indexes')} not in place ({each})")
    if recorded is not None:
        found.append("no embedder recorded yet")
    if unknown:
        found.append(
            f"{plural(len(unknown), 'search index', 'search indexes')} could not be checked"
        )
        if not indexes and recorded is None:
            return f"{found[0]}: {unknown[0].detail}"
    if any(p.state == "failed" or (p.state == "drift" and p.kind in _REGULAR) for p in indexes):
        # An index of another definition under the same name is only replaced once dropped.
        command = "`agent-memory indexes drop --yes`, then `agent-memory indexes setup`"
    elif any(p.state == "drift" for p in indexes):
        command = "`agent-memory indexes setup --update`"
    else:
        command = "`agent-memory indexes setup`"
    return f"{' and '.join(found)}; run {command}"


def describe_tier(connection: Connection) -> str:
    """The search tier in use and why, in one line for people. The plain tier on a server
    without Atlas Search is the healthy embedded default: said so, not with the probe's
    refusal (an error naming an index that does not exist)."""
    if connection.tier != "plain":
        return connection.tier_reason
    requested = connection.settings.search_tier
    setting = "" if requested == "auto" else f" (AGENT_MEMORY_SEARCH_TIER={requested})"
    if connection.capabilities.atlas_search:
        server = "this server has Atlas Search, not used"
    elif " refused: " in (connection.capabilities.search_reason or ""):
        server = "this server has no Atlas Search"
    else:  # not known: the setting chose the tier, the probe could not tell (said as it is)
        return connection.tier_reason
    return (
        f"plain tier{setting}: {server}; search ranks by exact similarity and BM25 in the framework"
    )


def _server_lines(connection: Connection) -> None:
    # Server text can hold brackets ("... not found with name [x]"): never read as markup.
    console.print(connection.capabilities.describe(), markup=False, highlight=False)
    console.print(describe_tier(connection), markup=False, highlight=False)


def _table(states: list[IndexState], title: str) -> Table:
    table = Table(title=title, show_lines=False)
    for column in ("collection", "index", "kind", "state", "detail"):
        table.add_column(column, overflow="fold")
    for item in states:
        # Text cells: names and details (server errors among them) are shown as they are.
        table.add_row(
            Text(item.collection),
            Text(item.name),
            Text(item.kind),
            Text(item.state, style=_STYLE.get(item.state, "")),
            Text(item.detail),
        )
    return table


@app.command("setup")
def setup(
    wait: bool = typer.Option(
        True, help="Wait until Atlas search indexes serve their current definition."
    ),
    timeout: float = typer.Option(300.0, min=0, help="Seconds to wait for search indexes."),
    update: bool = typer.Option(
        False, help="Update Atlas search indexes whose definition drifted."
    ),
) -> None:
    """Create every missing index (idempotent); on Atlas also the search indexes."""

    async def main() -> None:
        async with open_runtime() as rt:
            manager = IndexManager(rt.connection, rt.embedder.signature)
            _server_lines(rt.connection)
            seen: set[tuple[str, str, str]] = set()

            def progress(item: IndexState) -> None:
                key = (item.collection, item.name, item.state)
                if (
                    is_terminal()
                    and key not in seen
                    and item.state in ("created", "updated", "building")
                ):
                    seen.add(key)
                    console.print(
                        f"  {item.collection}.{item.name}: {item.state}",
                        highlight=False,
                        markup=False,
                    )

            states = await manager.setup(
                wait=wait, timeout=timeout, update=update, on_progress=progress
            )
            console.print(_table(states, "indexes"))
            if rt.connection.tier == "atlas":
                console.print(
                    f"Search layout {rt.connection.search_layout}: {rt.connection.layout_reason}.",
                    highlight=False,
                    markup=False,
                )
            if rt.connection.tier == "plain":
                console.print(
                    "This server has no Atlas Search: search ranks by exact similarity and BM25 "
                    "in the framework (plain tier); Atlas search indexes are not needed here."
                )
            problems = [item for item in states if item.problem]
            if problems:
                fail(what_to_run(problems), EXIT["not_ready"])

    run(main)


@app.command("status")
def status() -> None:
    """Show every index and the recorded embedder."""

    async def main() -> None:
        async with open_runtime() as rt:
            manager = IndexManager(rt.connection, rt.embedder.signature)
            _server_lines(rt.connection)
            console.print(_table(await manager.status(), "index status"))

    run(main)


@app.command("validate")
def validate() -> None:
    """Exit 0 when everything is in place, 4 when something is missing or drifted.

    On 4 the problems are listed, then one line on stderr says what to run.
    """

    async def main() -> None:
        async with open_runtime() as rt:
            problems = await IndexManager(rt.connection, rt.embedder.signature).validate()
            if problems:
                console.print(_table(problems, "problems"))
                fail(what_to_run(problems), EXIT["not_ready"])
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

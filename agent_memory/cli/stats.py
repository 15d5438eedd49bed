"""``agent-memory stats``: what is stored, per memory type and per tenant."""

from __future__ import annotations

import json

import typer
from rich.table import Table
from rich.text import Text

from agent_memory.cli._app import checked_id, console, plural, reflowed, run
from agent_memory.cli._runtime import open_runtime

#: Columns of the per-user table (the kinds that belong to a user).
_USER_COLUMNS = (
    "sessions",
    "messages",
    "memories",
    "profiles",
    "tasks",
    "actions",
    "knowledge docs",
    "formation jobs",
    "threads",
)


def stats(
    agent: str | None = typer.Option(
        None,
        "--agent",
        help="Only this agent (default: every agent).",
        callback=checked_id("agent id"),
    ),
    top: int = typer.Option(
        20, "--top", min=0, help="Show the N agent-user rows with the most data (0: all)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as one JSON object."),
) -> None:
    """Count what is stored: sessions, messages, long-term memories, profiles, tasks,
    actions, knowledge documents, formation jobs, LangGraph threads; per type and per agent
    and user.

    A user of two agents has a row under each; knowledge shared by all users of an agent is
    shown as user "*", LangGraph threads run without agent and user ids as "-". "users"
    counts the distinct real users.

    The database does the counting (one grouped aggregation per collection), so it stays
    quick with many users.
    """
    from agent_memory.ops.stats import collect_stats

    async def main():  # type: ignore[no-untyped-def]
        async with open_runtime() as rt:
            return await collect_stats(rt.connection, agent_id=agent)

    result = run(main)
    shown = result.tenants if top == 0 else result.tenants[:top]
    if as_json:
        typer.echo(json.dumps(result.as_dict(top=None if top == 0 else top)))
        return

    scope = f"agent {agent}" if agent else plural(len(result.agents), "agent")
    scope += f", {plural(result.users, 'user')}"
    kinds = Table("type", "count", "collection", "by", title=Text(f"stored data, {scope}"))
    for total in result.totals.values():
        by = ", ".join(f"{k} {n}" for k, n in sorted(total.by.items()))
        if total.count != total.documents:
            by = plural(total.documents, "document")
        kinds.add_row(total.label, str(total.count), total.collection, Text(by))
    console.print(kinds)

    rows = f"per agent and user ({plural(len(result.tenants), 'row')})"
    users = Table("agent", "user", *_USER_COLUMNS, title=Text(rows))
    for tenant in shown:
        users.add_row(
            Text("-" if tenant.agent_id is None else tenant.agent_id),
            Text(_user_label(tenant.user_id)),
            *(str(tenant.counts.get(column, 0)) for column in _USER_COLUMNS),
        )
    console.print(users)
    if len(shown) < len(result.tenants):
        more = plural(len(result.tenants) - len(shown), "more row")
        console.print(f"... and {more} (--top 0 for all)")
    console.print(f"counted in {result.seconds:.2f} s", highlight=False)


def _user_label(user_id: str | None) -> str:
    if user_id is None:
        return "- (no tenant keys)"
    return "* (shared knowledge)" if user_id == "*" else user_id


def register(app: typer.Typer) -> None:
    app.command("stats", help=reflowed(stats.__doc__))(stats)

"""``agent-memory forget``: erase everything of one user (a data-erasure request)."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from agent_memory.cli._app import checked_id, console, reflowed, run
from agent_memory.cli._runtime import open_runtime


def _interactive() -> bool:
    """Someone can answer a question: stdin and stdout are terminals."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def forget(
    user: str = typer.Option(
        ..., "--user", help="The user to erase.", callback=checked_id("user id")
    ),
    agent: str | None = typer.Option(
        None,
        "--agent",
        help="Only this agent's data of the user (default: every agent's).",
        callback=checked_id("agent id"),
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    as_json: bool = typer.Option(False, "--json", help="Print the erased counts as JSON."),
) -> None:
    """Erase everything stored of a user: memories, profile, conversations, tasks, action
    logs, knowledge, queued memory-formation jobs and LangGraph threads.

    Asks for confirmation on a terminal; elsewhere (scripts, CI) it refuses unless --yes is
    given. Prints what was erased per collection. Counts per agent and day of past actions
    (success rates) hold no user data and stay. Rerunning after an interruption finishes the
    job.
    """
    from agent_memory.ops.forget import check_user

    try:
        check_user(user)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--user") from None
    if not yes and not _interactive():
        raise typer.BadParameter(
            "not on a terminal: pass --yes to erase without confirmation", param_hint="--yes"
        )

    found = run(lambda: _held(user, agent))
    if not found["total"]:
        where = f" with agent {agent}" if agent else ""
        console.print(f"nothing stored for user {user}{where}", highlight=False, markup=False)
        return
    if not yes:
        described = ", ".join(f"{n} {name}" for name, n in found["counts"].items() if n)
        console.print(
            f"user {user} of agent(s) {', '.join(found['agents'])}: {described}",
            highlight=False,
            markup=False,
        )
        if not typer.confirm("Erase all of it? This cannot be undone", default=False):
            console.print("nothing erased")
            raise typer.Exit(1)

    erased = run(lambda: _erase(user, found["agents"]))
    if as_json:
        typer.echo(json.dumps({"user_id": user, "agents": found["agents"], "erased": erased}))
        return
    table = Table("collection", "erased", title=Text(f"user {user} erased"), title_justify="left")
    for name, count in sorted(erased.items()):
        table.add_row(name, str(count))
    console.print(table)
    console.print(
        f"erased {sum(erased.values())} documents of user {user} "
        f"(agents: {', '.join(found['agents'])})",
        highlight=False,
        markup=False,
    )


async def _held(user: str, agent: str | None) -> dict[str, Any]:
    """The agents holding something of ``user`` and the documents per collection."""
    from agent_memory.memory.system import MemorySystem
    from agent_memory.mongo._errors import translate_errors
    from agent_memory.ops.forget import USER_COLLECTIONS, agents_of

    async with open_runtime() as rt:
        memories = MemorySystem(rt.connection, rt.embedder)
        agents = [agent] if agent else await agents_of(memories, user)
        counts: dict[str, int] = {}
        with translate_errors("counting a user's data"):
            for name in USER_COLLECTIONS:
                counts[name] = await rt.connection.collection(name).count_documents(
                    {"user_id": {"$eq": user}, "agent_id": {"$in": agents}}
                )
        return {"agents": agents, "counts": counts, "total": sum(counts.values())}


async def _erase(user: str, agents: list[str]) -> dict[str, int]:
    from agent_memory.memory._common import Tenant
    from agent_memory.memory.system import MemorySystem
    from agent_memory.ops.forget import forget_user

    async with open_runtime() as rt:
        memories = MemorySystem(rt.connection, rt.embedder)
        erased: dict[str, int] = {}
        try:
            for agent_id in agents:
                for name, count in (await forget_user(memories, Tenant(agent_id, user))).items():
                    erased[name] = erased.get(name, 0) + count
        finally:
            await memories.aclose()
        return erased


def register(app: typer.Typer) -> None:
    app.command("forget", help=reflowed(forget.__doc__))(forget)

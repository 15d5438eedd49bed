"""``agent-memory forget``: erase everything of one user (a data-erasure request)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading

import typer
from rich.table import Table
from rich.text import Text

from agent_memory.cli._app import (
    checked_id,
    console,
    noun,
    plural,
    reflowed,
    run,
    sigint_ends,
)
from agent_memory.cli._runtime import open_runtime


def _agents(agents: list[str]) -> str:
    """``agent support`` or ``agents support, sales``."""
    return f"{noun(len(agents), 'agent')} {', '.join(agents)}"


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

    Stop the user's running sessions first: after erasing, the command looks again and erases
    what was stored meanwhile once more; data still coming back after that means an app is
    writing for the user, and the command says so (exit 1).
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

    result = run(lambda: _forget(user, agent, ask=not yes))
    if result is None:
        where = f" with agent {agent}" if agent else ""
        console.print(f"nothing stored for user {user}{where}", highlight=False, markup=False)
        return
    if result is False:
        console.print("nothing erased")
        raise typer.Exit(1)
    agents, erased = result
    if as_json:
        typer.echo(json.dumps({"user_id": user, "agents": agents, "erased": erased}))
        return
    table = Table("collection", "erased", title=Text(f"user {user} erased"), title_justify="left")
    for name, count in sorted(erased.items()):
        table.add_row(name, str(count))
    console.print(table)
    console.print(
        f"erased {plural(sum(erased.values()), 'document')} of user {user} "
        f"({noun(len(agents), 'agent')}: {', '.join(agents)})",
        highlight=False,
        markup=False,
    )


#: Erasures of the agents still holding something of the user before giving up: the first,
#: and one more for data stored meanwhile (a turn that was running, an agent new since the
#: count). Data that is back after that is being written by an app still running.
_PASSES = 2


async def _confirm(question: str) -> bool:
    """Ask on the terminal without holding the event loop. The question is read by a daemon
    thread, not the loop's executor: Ctrl+C then ends the command at once (exit 130, nothing
    erased) instead of waiting for Enter, as closing the executor would (it joins its
    threads, and one is blocked reading the terminal), and :func:`sigint_ends` makes sure
    the signal wakes the loop."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[bool] = loop.create_future()

    def ask() -> None:
        try:
            result: bool | BaseException = bool(typer.confirm(question, default=False))
        except BaseException as exc:  # handed to the loop, raised there
            result = exc

        def deliver() -> None:
            if answer.done():  # cancelled: the command was interrupted meanwhile
                return
            if isinstance(result, BaseException):
                answer.set_exception(result)
            else:
                answer.set_result(result)

        with contextlib.suppress(RuntimeError):  # the loop is gone: the command ended
            loop.call_soon_threadsafe(deliver)

    with sigint_ends(answer):
        threading.Thread(target=ask, name="agent-memory-confirm", daemon=True).start()
        return await answer


async def _forget(
    user: str, agent: str | None, *, ask: bool
) -> tuple[list[str], dict[str, int]] | bool | None:
    """Count, ask, erase and check again over one connection. ``None``: nothing stored;
    ``False``: the user declined; else the agents erased and the counts per collection."""
    from agent_memory.errors import ConflictError
    from agent_memory.ops.forget import COLLECTION_NOUNS, forget_user, held
    from agent_memory.tenancy import Tenant

    async with open_runtime() as rt:
        memories = rt.memories()
        try:
            found = await held(memories, user, agent)
            if not found.total:
                return None
            if ask:
                described = ", ".join(
                    plural(n, *COLLECTION_NOUNS.get(name, (name, name)))
                    for name, n in found.counts.items()
                    if n
                )
                console.print(
                    f"user {user} of {_agents(found.agents)}: {described}",
                    highlight=False,
                    markup=False,
                )
                question = "Erase all of it? This cannot be undone"
                if not await _confirm(question):
                    return False
            agents: list[str] = []
            erased: dict[str, int] = {}
            pending = found.agents
            for _ in range(_PASSES):
                for agent_id in pending:
                    for name, count in (
                        await forget_user(memories, Tenant(agent_id, user))
                    ).items():
                        erased[name] = erased.get(name, 0) + count
                agents += [a for a in pending if a not in agents]
                pending = (await held(memories, user, agent)).agents
                if not pending:
                    return sorted(agents), erased
            raise ConflictError(
                f"erased {plural(sum(erased.values()), 'document')} of user {user}, but "
                f"{_agents(pending)} stored more meanwhile: an app is still writing for "
                "this user; stop its sessions and run forget again"
            )
        finally:
            await memories.aclose()


def register(app: typer.Typer) -> None:
    app.command("forget", help=reflowed(forget.__doc__))(forget)

"""``agent-memory decay``: the scheduled maintenance run, for cron and Kubernetes CronJobs."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer

from agent_memory.cli._app import EXIT, checked_id, console, fail, is_terminal, reflowed, run
from agent_memory.cli._runtime import open_runtime


def decay(
    agent: str | None = typer.Option(
        None,
        "--agent",
        help="Only this agent's data (default: every agent).",
        callback=checked_id("agent id"),
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Count what would change; write nothing, take no lock."
    ),
    skip_retention: bool = typer.Option(
        False, "--skip-retention", help="Decay only; leave sessions and action logs."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object."),
    lease_seconds: float = typer.Option(
        300.0,
        "--lease-seconds",
        min=1.0,
        max=86_400.0,
        help="How long a crashed run blocks the next one (a live run renews its lock).",
    ),
) -> None:
    """Decay unused long-term memories, then apply retention to sessions and action logs.

    Safe to schedule often: decay counts once per period (30 days by default), retention is
    idempotent, and a lock lets one run work at a time. A run that finds the lock held exits
    with code 6, as does one that stalled so long that another run took its lock over; the
    lock of a run that died is taken over once it expires. Prints one
    summary line (or JSON with --json). The factor, periods and retention come from the
    settings: AGENT_MEMORY_DECAY_FACTOR, _DECAY_INACTIVE_DAYS, _DECAY_FLOOR, _DECAY_PERIOD_DAYS,
    _SESSION_RETENTION_DAYS, _SESSION_RETENTION_MODE, _ACTION_RETENTION_DAYS.

    Without MONGODB_URI it works on the embedded server's data directory, relative to where
    it starts unless AGENT_MEMORY_DATA_DIR is absolute; the summary names that directory.

    Example crontab line:

        17 3 * * *  agent-memory --log-format json decay
    """
    from agent_memory.ops.lease import LeaseHeldError
    from agent_memory.ops.maintenance import STEPS, Maintenance

    # The embedded default's data directory is relative (.agent-memory): a cron job started
    # elsewhere than the app finds another, empty one. The output names the one it used.
    data_dir: str | None = None

    async def main() -> Any:
        nonlocal data_dir
        async with open_runtime() as rt:
            if rt.settings.uses_embedded:
                data_dir = str(rt.settings.data_dir.expanduser().resolve())
            memories = rt.memories()
            try:
                maintenance = Maintenance(memories, lease_seconds=lease_seconds)
                steps = STEPS if not skip_retention else STEPS[:1]
                with _progress(len(steps), show=is_terminal() and not as_json) as advance:
                    try:
                        return await maintenance.run(
                            agent_id=agent,
                            dry_run=dry_run,
                            retention=not skip_retention,
                            on_step=advance,
                        )
                    except LeaseHeldError as exc:
                        return exc
            finally:
                await memories.aclose()

    result = run(main)
    if isinstance(result, LeaseHeldError):
        fail(str(result), EXIT["locked"])
    if as_json:
        typer.echo(json.dumps({**result.as_dict(), "data_dir": data_dir}))
    else:
        line = result.summary()
        if data_dir is not None:
            line += f"; embedded data directory {data_dir}"
        console.print(line, highlight=False, soft_wrap=True, markup=False)


@contextmanager
def _progress(total: int, *, show: bool) -> Iterator[Callable[[str], None]]:
    """A progress bar on a terminal; nothing in cron logs, pipes or JSON output."""
    if not show:
        yield lambda step: None
        return
    from rich.progress import Progress

    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("maintenance", total=total)
        yield lambda step: progress.update(task, advance=1, description=f"{step} done")


def register(app: typer.Typer) -> None:
    app.command("decay", help=reflowed(decay.__doc__))(decay)

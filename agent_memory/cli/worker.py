"""``agent-memory worker``: form memories from conversations, outside the app."""

from __future__ import annotations

import asyncio
import signal

import typer

from agent_memory.cli._app import console, plural, run, state
from agent_memory.cli._logging import configure_logging
from agent_memory.cli._runtime import open_runtime
from agent_memory.formation.queue import FormationQueue
from agent_memory.formation.worker import FormationWorker
from agent_memory.providers.registry import make_chat_model


def worker(
    once: bool = typer.Option(False, "--once", help="Work the jobs due now, then exit."),
    poll_interval: float = typer.Option(1.0, min=0.01, help="Seconds between polls when idle."),
    concurrency: int = typer.Option(
        4, min=1, max=64, help="Jobs worked at once (each a model call and a dozen round trips)."
    ),
) -> None:
    """Claim due memory-formation jobs and form memories until interrupted.

    Several workers (and agents running their own) can share one queue: jobs are claimed
    atomically with a lease, and a crashed worker's jobs are taken over after it expires.
    Each job worked logs one line on stderr at the default level: memories_formed with its
    counts, or formation_job_failed.
    """

    # One line per job at the default level: memories_formed (a failure is a warning anyway).
    configure_logging(state.log_level, state.log_format, shown=("memories_formed",))  # type: ignore[arg-type]

    async def main() -> None:
        async with open_runtime() as rt:
            chat = make_chat_model(rt.settings)
            memories = rt.memories(chat)
            formation = FormationWorker(
                memories,
                chat,
                queue=FormationQueue(rt.connection),
                poll_interval=poll_interval,
                concurrency=concurrency,
            )
            try:
                if once:
                    count = 0
                    while await formation.run_once():
                        count += 1
                    console.print(f"formed memories for {plural(count, 'job')}")
                    return
                stop = asyncio.Event()
                loop = asyncio.get_running_loop()
                for signum in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(signum, stop.set)
                console.print(f"worker {formation.worker_id} started (Ctrl+C to stop)")
                await formation.run_forever(stop)
            finally:
                await memories.aclose()
                await chat.aclose()

    run(main)


def register(app: typer.Typer) -> None:
    app.command("worker")(worker)

"""``agent-memory embedded serve``: run the embedded server on its own, to share it."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import typer
from rich.markup import escape

from agent_memory.cli._app import EXIT, err_console, state, subcommands
from agent_memory.config import load_settings, redact_uri
from agent_memory.errors import AgentMemoryError
from agent_memory.mongo.embedded import EmbeddedServer

app = subcommands("The embedded MongoDB-compatible server (mongoeco on SQLite).")


@app.command("serve")
def serve(
    data_dir: Path | None = typer.Option(None, help="Data directory [AGENT_MEMORY_DATA_DIR]."),
    port: int | None = typer.Option(
        None, help="Port; 0 picks a free one [AGENT_MEMORY_EMBEDDED_PORT]."
    ),
    host: str = typer.Option("127.0.0.1", help="Loopback address to listen on."),
    exit_with: int | None = typer.Option(
        None,
        "--exit-with",
        min=1,
        help="Stop when the process with this id is gone (for a server a program starts for "
        "itself, which may be killed without a chance to stop it).",
    ),
) -> None:
    """Serve the embedded database until interrupted, printing its URI (password included).

    Other processes of the same user find it through the data directory, or by MONGODB_URI
    set to the URI. The server asks every client for the directory's password.
    """
    overrides: dict[str, object] = {}
    if data_dir is not None:
        overrides["data_dir"] = data_dir
    if port is not None:
        overrides["embedded_port"] = port
    try:
        settings = load_settings(**overrides)
        server = EmbeddedServer(settings.data_dir, host=host, port=settings.embedded_port)
        uri = server.start()
    except AgentMemoryError as exc:
        if state.debug:
            raise
        err_console.print(
            f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True
        )
        raise typer.Exit(EXIT["config"]) from None

    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(uri, flush=True)  # with the password: for the programs that read it, not for logs
    err_console.print(
        f"serving {settings.data_dir.resolve()} at {redact_uri(uri)} (Ctrl+C to stop); "
        "programs of the same user find it through the data directory",
        highlight=False,
        markup=False,
    )
    try:
        while not stop.wait(timeout=1.0 if exit_with is not None else None):
            if exit_with is not None and not _alive(exit_with):
                err_console.print(f"process {exit_with} is gone; stopping", highlight=False)
                break
    finally:
        server.stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's process
        return True
    return True

"""``agent-memory api``: serve the feedback API with uvicorn."""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

from agent_memory.cli._app import err_console, fail, run
from agent_memory.cli._runtime import open_runtime


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """Stopped by the command's own signal handlers: Ctrl+C or a SIGTERM from an
        orchestrator is a clean stop (exit 0) once open requests finish, not a re-raised
        signal after shutdown."""

        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

        def stop(self) -> None:
            # A second signal stops at once, without waiting for open requests.
            if self.should_exit:
                self.force_exit = True
            self.should_exit = True

    return Server


def api(
    host: str | None = typer.Option(
        None, "--host", help="Address to listen on (AGENT_MEMORY_API_HOST)."
    ),
    port: int | None = typer.Option(
        None, "--port", min=1, max=65535, help="Port (AGENT_MEMORY_API_PORT)."
    ),
) -> None:
    """Serve the feedback API (ratings, actions, success rates); OpenAPI at /docs.

    Keys come from AGENT_MEMORY_API_KEYS, e.g. '{"support": "a-key-of-24-characters-or-more"}'.
    """
    from agent_memory.config import load_settings
    from agent_memory.errors import AgentMemoryError

    try:
        import uvicorn  # noqa: F401  (checked here: serve() needs it)

        from agent_memory.api import create_app
    except ImportError as exc:
        fail(
            f"the feedback API needs its extra: pip install 'agent-memory[api]' ({exc.name} missing)"
        )
    try:
        settings = load_settings()
    except AgentMemoryError as exc:
        fail(str(exc), 2)
    if not settings.api_keys:
        fail("no API keys configured: set AGENT_MEMORY_API_KEYS (see `agent-memory api --help`)", 2)

    # Listen first and connect next, so a port in use or a database that is down is one clear
    # line with its own exit code rather than the server's startup log and traceback.
    listener = _listen(host or settings.api_host, port or settings.api_port)

    async def main() -> None:
        async with open_runtime() as rt:
            app = create_app(rt.settings, connection=rt.connection, embedder=rt.embedder)
            # Like `agent-memory embedded serve`: where it listens, on stderr.
            await serve(app, listener, listening_line(listener))

    try:
        run(main)
    finally:
        listener.close()


async def serve(app: Any, listener: socket.socket, *lines: str) -> None:
    """Serve ``app`` with uvicorn on ``listener`` until Ctrl+C or SIGTERM, after printing
    ``lines`` on stderr (where it listens, and what else the user needs to know)."""
    import uvicorn

    server = _server_class()(uvicorn.Config(app, log_level="warning"))
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, server.stop)
    for line in lines:
        err_console.print(line, highlight=False, markup=False)
    await server.serve(sockets=[listener])


def url_of(listener: socket.socket) -> str:
    """The ``http://`` URL of a listening socket (IPv6 addresses in brackets)."""
    host, port = listener.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def listening_line(listener: socket.socket) -> str:
    """The line printed once the database is connected and the API about to serve: its URL
    and where its OpenAPI docs are."""
    url = url_of(listener)
    return f"serving the feedback API at {url} (OpenAPI docs at {url}/docs; Ctrl+C to stop)"


def _listen(host: str, port: int) -> socket.socket:
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        return fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


def register(app: typer.Typer) -> None:
    app.command("api")(api)

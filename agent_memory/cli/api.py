"""``agent-memory api``: serve the feedback API with uvicorn."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from agent_memory.cli._app import fail, run
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
        import uvicorn

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

    async def main() -> None:
        # Connect before serving, so a database that is down is one line and exit 3 here
        # rather than a traceback from the server's startup.
        async with open_runtime() as rt:
            server = _server_class()(
                uvicorn.Config(
                    create_app(rt.settings, connection=rt.connection, embedder=rt.embedder),
                    host=host or rt.settings.api_host,
                    port=port or rt.settings.api_port,
                    log_level="warning",
                )
            )
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, server.stop)
            await server.serve()

    run(main)


def register(app: typer.Typer) -> None:
    app.command("api")(api)

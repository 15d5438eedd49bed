"""``agent-memory console``: serve the memory console on loopback."""

from __future__ import annotations

import ipaddress
import secrets

import typer

from agent_memory.cli._app import fail, run
from agent_memory.cli._runtime import open_runtime
from agent_memory.cli.api import _listen, serve, url_of


def console(
    host: str = typer.Option("127.0.0.1", "--host", help="A loopback address to listen on."),
    port: int = typer.Option(8766, "--port", min=0, max=65535, help="Port (0: any free one)."),
) -> None:
    """Serve the memory console in the browser: what the agent remembers, per agent and user.

    With AGENT_MEMORY_API_KEYS set, each key signs in to its own agent; without keys, a
    token made at each start and printed here signs in to every agent. It listens on loopback
    only.
    """
    from agent_memory.config import load_settings
    from agent_memory.errors import AgentMemoryError
    from agent_memory.memory.system import MemorySystem

    try:
        import uvicorn  # noqa: F401  (checked here: serve() needs it)

        from agent_memory.console import create_console_app
    except ImportError as exc:
        fail(
            f"the console needs its extra: pip install 'agent-memory[console]' ({exc.name} missing)"
        )
    try:
        if not ipaddress.ip_address(host).is_loopback:
            fail(f"--host must be a loopback address (127.0.0.1 or ::1), got {host}", 2)
    except ValueError:
        fail(f"--host must be a loopback address (127.0.0.1 or ::1), got {host!r}", 2)
    try:
        settings = load_settings()
    except AgentMemoryError as exc:
        fail(str(exc), 2)
    token = None if settings.api_keys else secrets.token_urlsafe(24)
    listener = _listen(host, port)

    async def main() -> None:
        from agent_memory.providers.registry import make_reranker

        async with open_runtime() as rt:
            # The agent's own reranker, so a search ranks as the agent's recall does.
            reranker = make_reranker(rt.settings)
            memories = MemorySystem.from_settings(
                rt.connection, rt.embedder, rt.settings, reranker=reranker
            )
            app = create_console_app(memories, settings=rt.settings, token=token)
            lines = [f"serving the memory console at {url_of(listener)} (Ctrl+C to stop)"]
            if token is not None:
                lines.append(f"sign in with this run's token (no API keys are configured): {token}")
            try:
                await serve(app, listener, *lines)
            finally:
                await memories.aclose()
                if reranker is not None:
                    await reranker.aclose()

    try:
        run(main)
    finally:
        listener.close()


def register(app: typer.Typer) -> None:
    app.command("console")(console)

"""``agent-memory console``: serve the memory console on loopback."""

from __future__ import annotations

import asyncio
import ipaddress
import secrets
import signal

import typer

from agent_memory.cli._app import err_console, fail, run
from agent_memory.cli._runtime import open_runtime
from agent_memory.cli.api import _listen, _server_class


def console(
    host: str = typer.Option("127.0.0.1", "--host", help="A loopback address to listen on."),
    port: int = typer.Option(8766, "--port", min=0, max=65535, help="Port (0: any free one)."),
) -> None:
    """Serve the memory console in the browser: what the agent remembers, per agent and user.

    With AGENT_MEMORY_API_KEYS set, each key signs in to its own agent; without keys, a
    one-time token printed here signs in to every agent. It listens on loopback only.
    """
    from agent_memory.config import load_settings
    from agent_memory.errors import AgentMemoryError

    try:
        import uvicorn

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
        async with open_runtime() as rt:
            app = create_console_app(rt.connection, settings=rt.settings, token=token)
            server = _server_class()(uvicorn.Config(app, log_level="warning"))
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, server.stop)
            bound, bound_port = listener.getsockname()[:2]
            url = (
                f"http://[{bound}]:{bound_port}" if ":" in bound else f"http://{bound}:{bound_port}"
            )
            err_console.print(
                f"serving the memory console at {url} (Ctrl+C to stop)",
                highlight=False,
                markup=False,
            )
            if token is not None:
                err_console.print(
                    f"sign in with this one-time token (no API keys are configured): {token}",
                    highlight=False,
                    markup=False,
                )
            await server.serve(sockets=[listener])

    try:
        run(main)
    finally:
        listener.close()


def register(app: typer.Typer) -> None:
    app.command("console")(console)

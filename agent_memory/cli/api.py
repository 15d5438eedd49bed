"""``agent-memory api``: serve the feedback API with uvicorn."""

from __future__ import annotations

import typer

from agent_memory.cli._app import fail


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
    uvicorn.run(
        create_app(settings),
        host=host or settings.api_host,
        port=port or settings.api_port,
        log_level="warning",
    )


def register(app: typer.Typer) -> None:
    app.command("api")(api)

"""The ``agent-memory`` command line."""

from __future__ import annotations

from agent_memory.cli import api, bench, demo, embedded, indexes, worker
from agent_memory.cli._app import app

__all__ = ["app", "main"]

app.add_typer(indexes.app, name="indexes")
app.add_typer(embedded.app, name="embedded")
demo.register(app)
worker.register(app)
bench.register(app)
api.register(app)


def main() -> None:
    app()

"""The ``agent-memory`` command line."""

from __future__ import annotations

from agent_memory.cli import (
    api,
    bench,
    chat,
    console,
    decay,
    demo,
    embedded,
    feedback,
    forget,
    indexes,
    stats,
    transfer,
    worker,
)
from agent_memory.cli._app import app

__all__ = ["app", "main"]

app.add_typer(indexes.app, name="indexes")
app.add_typer(embedded.app, name="embedded")
demo.register(app)
chat.register(app)
worker.register(app)
bench.register(app)
api.register(app)
console.register(app)
decay.register(app)
feedback.register(app)
forget.register(app)
stats.register(app)
transfer.register(app)


def main() -> None:
    app()

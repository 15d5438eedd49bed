"""The ``agent-memory`` application object, shared options and error handling."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import typer
from rich.console import Console

from agent_memory.cli._logging import configure_logging
from agent_memory.errors import (
    AgentMemoryError,
    AuthenticationError,
    ConfigurationError,
    EmbeddingMismatchError,
    NotInitialisedError,
    ProviderError,
    StorageUnavailableError,
)

__all__ = ["EXIT", "State", "app", "console", "err_console", "run"]

T = TypeVar("T")

# Piped output (logs, CI, scripts) gets wide lines instead of rich's 80-column default, so
# names are not folded mid-word.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)

#: Exit codes, documented in ``agent-memory --help``.
EXIT = {
    "ok": 0,
    "error": 1,
    "config": 2,
    "unavailable": 3,
    "not_ready": 4,
    "provider": 5,
    "interrupted": 130,
}


@dataclass
class State:
    debug: bool = False


state = State()

app = typer.Typer(
    name="agent-memory",
    help=(
        "Memory for AI agents on MongoDB.\n\n"
        "Exit codes: 0 ok, 1 error, 2 configuration, 3 database unreachable or refused, "
        "4 indexes missing or drifted, 5 provider failure, 130 interrupted."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _main(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and debug logs."),
    log_level: str = typer.Option("warning", "--log-level", help="debug, info, warning, error."),
    log_format: str = typer.Option("auto", "--log-format", help="auto, json or console."),
) -> None:
    state.debug = debug
    fmt = log_format if log_format in ("auto", "json", "console") else "auto"
    configure_logging("debug" if debug else log_level, fmt)  # type: ignore[arg-type]


def _exit_code(exc: AgentMemoryError) -> int:
    if isinstance(exc, StorageUnavailableError | AuthenticationError):
        return EXIT["unavailable"]
    if isinstance(exc, NotInitialisedError | EmbeddingMismatchError):
        return EXIT["not_ready"]
    if isinstance(exc, ConfigurationError):
        return EXIT["config"]
    if isinstance(exc, ProviderError):
        return EXIT["provider"]
    return EXIT["error"]


def run(main: Callable[[], Awaitable[T]]) -> T:
    """Run an async command body; errors become one line on stderr and an exit code."""
    try:
        return asyncio.run(main())  # type: ignore[arg-type]
    except KeyboardInterrupt:
        err_console.print("interrupted")
        raise typer.Exit(EXIT["interrupted"]) from None
    except AgentMemoryError as exc:
        if state.debug:
            raise
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(_exit_code(exc)) from None


def fail(message: str, code: int = EXIT["error"]) -> Any:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def is_terminal() -> bool:
    return sys.stdout.isatty()

"""The ``agent-memory`` application object, shared options and error handling."""

from __future__ import annotations

import asyncio
import inspect
import sys
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape  # ids in messages may look like markup: [/x]
from typer.core import TyperGroup

from agent_memory.cli._logging import configure_logging
from agent_memory.errors import (
    AgentMemoryError,
    AuthenticationError,
    ConfigurationError,
    EmbeddingMismatchError,
    InvalidInputError,
    NotInitialisedError,
    ProviderError,
    SearchUnavailableError,
    StorageUnavailableError,
)
from agent_memory.memory._common import check_id

__all__ = ["EXIT", "State", "app", "checked_id", "console", "err_console", "reflowed", "run"]

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
    "locked": 6,
    "interrupted": 130,
}


@dataclass
class State:
    debug: bool = False


state = State()

# Typer 0.29 carries its own copy of click; its exception classes are found from the public
# BadParameter rather than imported from a private module.
_UsageError: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError"
)
_ClickException: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)
_NoArgsIsHelp: type[Exception] = next(
    (c for c in _UsageError.__subclasses__() if c.__name__ == "NoArgsIsHelpError"), _UsageError
)


class _OneLineErrors(TyperGroup):
    """The root command: a usage error (a bad option or value, a missing argument) is one
    line on stderr, ``error: ... (see 'agent-memory ... --help')``, with click's exit code 2,
    like every other error of the CLI; not a framed box of four or five lines."""

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            result = super().main(args, prog_name, complete_var, False, **extra)
        except _NoArgsIsHelp as exc:  # the help itself, as typer shows it
            typer.echo(exc.format_message(), err=True)
            sys.exit(exc.exit_code)
        except _UsageError as exc:
            where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            message = " ".join(exc.format_message().split())
            typer.echo(f"error: {message}{where}", err=True)
            sys.exit(exc.exit_code)
        except _ClickException as exc:
            typer.echo(f"error: {' '.join(exc.format_message().split())}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("aborted", err=True)
            sys.exit(EXIT["error"])
        # Without standalone mode a command's typer.Exit(code) comes back as its code.
        sys.exit(result if isinstance(result, int) and not isinstance(result, bool) else 0)


app = typer.Typer(
    name="agent-memory",
    cls=_OneLineErrors,
    help=(
        "Memory for AI agents on MongoDB.\n\n"
        "Exit codes: 0 ok, 1 error, 2 configuration, 3 database unreachable or refused, "
        "4 indexes missing or drifted, 5 provider failure, 6 another maintenance run holds the "
        "lock or took it over, 130 interrupted."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if value not in choices:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(choices)}")
        return value

    return parse


@app.callback()
def _main(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and debug logs."),
    log_level: str = typer.Option(
        "warning",
        "--log-level",
        parser=_choice("debug", "info", "warning", "error"),
        help="Least severe log events shown.",
    ),
    log_format: str = typer.Option(
        "auto",
        "--log-format",
        parser=_choice("auto", "json", "console"),
        help="Log lines as JSON, for people, or JSON unless on a terminal.",
    ),
) -> None:
    state.debug = debug
    configure_logging("debug" if debug else log_level, log_format)  # type: ignore[arg-type]


def _exit_code(exc: AgentMemoryError) -> int:
    from agent_memory.ops.lease import LeaseLostError  # lazily: agent_memory.ops is heavy

    if isinstance(exc, LeaseLostError):
        return EXIT["locked"]
    if isinstance(exc, StorageUnavailableError | AuthenticationError):
        return EXIT["unavailable"]
    if isinstance(exc, NotInitialisedError | EmbeddingMismatchError):
        return EXIT["not_ready"]
    if isinstance(exc, ConfigurationError | SearchUnavailableError):
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
        if state.debug:  # the traceback too, but the same exit code: scripts see no difference
            traceback.print_exc(file=sys.stderr)
        err_console.print(
            f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True
        )
        raise typer.Exit(_exit_code(exc)) from None


def checked_id(name: str) -> Any:
    """A typer callback: ids as the memories accept them, else a usage error (exit 2)."""

    def check(value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return check_id(value, name)
        except InvalidInputError as exc:
            raise typer.BadParameter(str(exc)) from None

    return check


def reflowed(doc: str | None) -> str:
    """A docstring as command help: paragraphs on one line each, so the terminal wraps them."""
    paragraphs = inspect.cleandoc(doc or "").split("\n\n")
    return "\n\n".join(" ".join(p.split()) if p[:1] != " " else p for p in paragraphs)


def fail(message: str, code: int = EXIT["error"]) -> Any:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def is_terminal() -> bool:
    return sys.stdout.isatty()

"""The ``agent-memory`` application object, shared options and error handling."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape  # ids in messages may look like markup: [/x]
from typer.core import TyperGroup

from agent_memory._redact import redact
from agent_memory._words import noun, plural
from agent_memory.checks import check_id, is_int
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

__all__ = [
    "EXIT",
    "HelpGroup",
    "State",
    "app",
    "checked_id",
    "console",
    "err_console",
    "noun",
    "plural",
    "reflowed",
    "run",
    "subcommands",
    "unexpected",
]

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
    log_level: str = "warning"
    log_format: str = "auto"


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


class HelpGroup(TyperGroup):
    """A group whose help lists each command with its first sentence whole, wrapped to the
    width, instead of cut to one line with "..." as click does."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=sys.maxsize)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


#: Help as click formats it, not in typer's rich panels: those squeeze up to seven columns
#: into the width (80 in a pipe) and cut what does not fit (``--idempotency-k…``), whereas
#: click moves a long option's help to the next line and wraps every paragraph between
#: words, on a terminal or in a pipe.
_PLAIN_HELP: dict[str, Any] = {"rich_markup_mode": None}


def subcommands(help: str, **options: Any) -> typer.Typer:
    """A group of commands under ``agent-memory`` (``indexes``, ``bench``), with its help
    formatted like the rest of the command line."""
    return typer.Typer(help=help, cls=HelpGroup, **_PLAIN_HELP, **options)


class _OneLineErrors(HelpGroup):
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
            message = redact(" ".join(exc.format_message().split()))
            typer.echo(f"error: {message}{where}", err=True)
            sys.exit(exc.exit_code)
        except _ClickException as exc:
            typer.echo(f"error: {redact(' '.join(exc.format_message().split()))}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("aborted", err=True)
            sys.exit(EXIT["error"])
        # Without standalone mode a command's typer.Exit(code) comes back as its code.
        sys.exit(result if is_int(result) else 0)


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
    **_PLAIN_HELP,
)


def choice_option(default: str, flag: str, *choices: str, help: str) -> Any:
    """An option taking one of ``choices``, listed in the help (``--log-level
    <debug|info|warning|error>``); anything else is a usage error."""

    def parse(value: str) -> str:
        if value not in choices:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(choices)}")
        return value

    return typer.Option(default, flag, parser=parse, metavar=f"<{'|'.join(choices)}>", help=help)


@app.callback()
def _main(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and debug logs."),
    log_level: str = choice_option(
        "warning",
        "--log-level",
        "debug",
        "info",
        "warning",
        "error",
        help="Least severe log events shown.",
    ),
    log_format: str = choice_option(
        "auto",
        "--log-format",
        "auto",
        "json",
        "console",
        help="Log lines as JSON, for people, or JSON unless on a terminal.",
    ),
) -> None:
    state.debug = debug
    state.log_level, state.log_format = "debug" if debug else log_level, log_format
    configure_logging(state.log_level, log_format)  # type: ignore[arg-type]


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


@contextlib.contextmanager
def on_sigint(callback: Callable[[], None]) -> Iterator[bool]:
    """Inside the block, Ctrl+C (SIGINT) calls ``callback`` in the event loop instead of
    interrupting the program; the handler before is put back afterwards. Yields whether it
    was installed: not where SIGINT is ignored (a background job), nor outside the main
    thread or on Windows, where SIGINT keeps its usual effect.

    ``asyncio.run``'s own SIGINT handler only runs when the main thread wakes: a SIGINT the
    kernel hands to another thread (one reading the terminal) left the loop asleep with
    nothing scheduled. The loop's signal handler wakes it through its wakeup descriptor
    whichever thread the signal reaches."""
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)
    if previous == signal.SIG_IGN:  # started ignoring it (a background job): left so
        yield False
        return
    try:
        loop.add_signal_handler(signal.SIGINT, callback)
    except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
        yield False
        return
    try:
        yield True
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def sigint_ends(answer: asyncio.Future[Any]) -> Iterator[None]:
    """Inside the block, Ctrl+C ends the wait for ``answer`` (which a thread reading the
    terminal will set) at once: KeyboardInterrupt, then exit 130 through :func:`run` unless
    the caller catches it. Start the reading thread inside the block, so a Ctrl+C right
    after the prompt appears is taken (see :func:`on_sigint`)."""

    def interrupted() -> None:
        if not answer.done():
            answer.set_exception(KeyboardInterrupt())

    with on_sigint(interrupted):
        yield


def run(main: Callable[[], Awaitable[T]]) -> T:
    """Run an async command body; errors become one line on stderr and an exit code."""
    try:
        return asyncio.run(main())  # type: ignore[arg-type]
    except KeyboardInterrupt:
        err_console.print("interrupted")
        raise typer.Exit(EXIT["interrupted"]) from None
    except AgentMemoryError as exc:
        if state.debug:  # the traceback too, but the same exit code: scripts see no difference
            # Its causes are foreign exceptions, whose text may hold a credential.
            sys.stderr.write(redact(traceback.format_exc()))
        err_console.print(
            f"[bold red]error:[/] {escape(redact(str(exc)))}", highlight=False, soft_wrap=True
        )
        raise typer.Exit(_exit_code(exc)) from None


def unexpected(exc: Exception) -> str:
    """What to say of an error no handler expected (a defect), for a command that goes on
    after it: its kind only, since its text may quote stored values; with ``--debug`` the
    traceback too, on stderr."""
    if state.debug:
        sys.stderr.write(redact("".join(traceback.format_exception(exc))))
    return f"an unexpected error ({type(exc).__name__}; --debug shows its traceback)"


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
    """A docstring as command help: paragraphs on one line each, wrapped to the width by the
    help; an indented paragraph is kept as it is (click's ``\\b`` marker)."""
    paragraphs = inspect.cleandoc(doc or "").split("\n\n")
    return "\n\n".join(" ".join(p.split()) if p[:1] != " " else f"\b\n{p}" for p in paragraphs)


def fail(message: str, code: int = EXIT["error"]) -> Any:
    err_console.print(
        f"[bold red]error:[/] {escape(redact(message))}", highlight=False, soft_wrap=True
    )
    raise typer.Exit(code)


def is_terminal() -> bool:
    return sys.stdout.isatty()

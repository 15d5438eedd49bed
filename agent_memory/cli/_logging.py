"""Logging for the command line. The library never configures logging; the CLI does."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from typing import Any, Literal

import structlog

from agent_memory._redact import redact

__all__ = ["configure_logging"]

LogFormat = Literal["auto", "json", "console"]


def configure_logging(
    level: str = "warning", log_format: LogFormat = "auto", *, shown: Iterable[str] = ()
) -> None:
    """Send structlog events to stderr: readable on a terminal, JSON lines otherwise.

    ``shown`` names events a command shows at the default level (``warning``) although they
    are logged at info: the one line per unit of work a user of that command watches (the
    worker's ``memories_formed``). A level chosen with ``--log-level error`` hides them."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.WARNING
    shown = frozenset(shown) if numeric == logging.WARNING else frozenset()

    def gate(_: Any, method: str, event: structlog.typing.EventDict) -> Any:
        if logging.getLevelName(method.upper()) < numeric and event.get("event") not in shown:
            raise structlog.DropEvent
        return event

    as_json = log_format == "json" or (log_format == "auto" and not sys.stderr.isatty())
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if as_json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            gate,
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _redacted,
            renderer,
        ],
        # The gate above lets the shown events through; below their level nothing is built.
        wrapper_class=structlog.make_filtering_bound_logger(
            min(numeric, logging.INFO) if shown else numeric
        ),
        # Look stderr up per logger, so a replaced sys.stderr (tests, wrappers) is honoured.
        logger_factory=lambda *args: structlog.PrintLogger(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=max(numeric, logging.WARNING), stream=sys.stderr)


def _redacted(_logger: object, _method: str, event: dict[str, object]) -> dict[str, object]:
    """Every string of an event, its formatted traceback included, without credentials
    (:func:`agent_memory._redact.redact`): a foreign exception's text may hold one."""
    return {key: redact(value) if isinstance(value, str) else value for key, value in event.items()}

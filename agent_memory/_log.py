"""The library's loggers: silent until the application configures logging.

Every event is a structlog-style event: a name and key-value pairs
(``logger.info("memories_stored", count=3)``). Where it goes is decided at each call:

- The application configured structlog (``structlog.configure``; the ``agent-memory`` command
  does, and so does ``structlog.testing.capture_logs``): through structlog, with the
  application's processors, level filter and context variables.
- Otherwise: to the standard library's ``logging``, logger ``agent_memory.<module>``, level for
  level, with the event's name and fields in the message (``memories_stored count=3``) and as
  ``record.event`` and ``record.event_fields``. By Python's rules for libraries, nothing is
  printed until the application configures logging: the ``agent_memory`` logger has a
  ``NullHandler``, so even warnings do not reach the last-resort handler.
  ``logging.basicConfig(level=logging.INFO)`` shows them.

Either way, no credential reaches a handler: string fields, strings inside mappings and lists,
and the traceback of ``exc_info=True`` (formatted here, as the field ``exception``) pass
through :func:`agent_memory._redact.redact` first (a URI's password, a key, a token, and any
secret the settings registered), whatever shape the text around them has.

The library never configures either.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

import structlog

from agent_memory._redact import redact

__all__ = ["Logger", "get_logger"]

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}

logging.getLogger("agent_memory").addHandler(logging.NullHandler())


class Logger:
    """A module's logger (see the module docstring for where its events go)."""

    __slots__ = ("_name", "_standard")

    def __init__(self, name: str) -> None:
        self._name = name
        self._standard = logging.getLogger(name)

    def _log(self, level: str, event: str, fields: dict[str, Any]) -> None:
        if fields.get("exc_info") is True:
            # The traceback is formatted here, so that it is redacted like every field: a
            # foreign exception's text may hold a credential.
            fields = {k: v for k, v in fields.items() if k != "exc_info"}
            fields["exception"] = traceback.format_exc()
        if structlog.is_configured():
            getattr(structlog.get_logger(self._name), level)(event, **_redacted(fields))
            return
        number = _LEVELS[level]
        if not self._standard.isEnabledFor(number):
            return
        fields = _redacted(fields)
        merged = {**structlog.contextvars.get_contextvars(), **fields}
        text = event + "".join(f" {key}={value!r}" for key, value in merged.items())
        self._standard.log(number, text, extra={"event": event, "event_fields": merged})

    def debug(self, event: str, **fields: Any) -> None:
        self._log("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log("warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._log("error", event, fields)


def _redacted(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: _redacted_value(value) for key, value in fields.items()}


def _redacted_value(value: Any, depth: int = 0) -> Any:
    """``value`` with every string in it redacted, into mappings, lists and tuples a few
    levels deep (deeper ones are shown by their type only)."""
    if isinstance(value, str):
        return redact(value)
    if not isinstance(value, dict | list | tuple):
        return value
    if depth >= 4:
        return f"<{type(value).__name__}>"
    if isinstance(value, dict):
        return {key: _redacted_value(item, depth + 1) for key, item in value.items()}
    items = [_redacted_value(item, depth + 1) for item in value]
    return items if isinstance(value, list) else tuple(items)


def get_logger(name: str) -> Logger:
    """The logger of module ``name`` (pass ``__name__``)."""
    return Logger(name)

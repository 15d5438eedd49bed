"""Secrets out of every message and log line, whatever shape the text around them has.

:func:`redact` masks, with ``***``:

- the password of anything that looks like credentials in a URL, ``user:password@host``,
  with a scheme or without, well formed or not (``mongodb//admin:pw@db``, ``mongodb:/admin:pw@db``,
  ``admin:pw@db``): everything between the first ``:`` and the last ``@`` of the word;
- the value of an option or field whose name says it holds a credential (``password=...``,
  ``authMechanismProperties=...``, ``"api_key": "..."``, ``token: ...``, ``Authorization:
  Bearer ...``);
- API keys by their providers' shapes (Anthropic ``sk-ant-...``, ``sk-...``, Voyage ``pa-...``);
- every value registered with :func:`register_secret`: the settings register the secrets they
  were given (the URI's password, provider and API keys), so a key of any shape that reaches a
  message is masked too.

It is applied where text leaves the library: every :class:`~agent_memory.errors.AgentMemoryError`
message, every log event's string fields, and the command line's error lines and tracebacks.
A masked text still says where it points (``mongodb://admin:***@db.example.com/``).
"""

from __future__ import annotations

import re
import threading

__all__ = ["MASK", "redact", "register_secret"]

MASK = "***"

#: Secrets shorter than this are not registered: masking a short password everywhere it
#: occurs in a message would mangle ordinary words and still hide nothing.
_MIN_REGISTERED = 8
_registered: set[str] = set()
_registered_pattern: re.Pattern[str] | None = None
_lock = threading.Lock()

# A word that holds ``:`` then later ``@``: the user part is kept, the rest up to the last
# ``@`` masked. Quotes, spaces and angle brackets end a word.
_USERINFO = re.compile(
    r"""(?P<head>(?:[A-Za-z][A-Za-z0-9+.\-]*:/*)?[^\s:/@'"<>()\[\]{},;]*):(?P<secret>(?!/)[^\s'"<>]*)@(?=[^\s@'"<>]*(?:[\s'"<>]|$))"""
)
# ``name=value`` / ``name: value`` / ``"name": "value"`` where the name ends in a word that says
# credential (``password``, ``AWS_SESSION_TOKEN``, ``x-api-key``; not ``tokens`` or
# ``token_budget``, which are counts).
_NAMED = re.compile(
    r"""(?ix)
    (?P<lead>
        (?:password|passwd|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key
          |credentials?|authmechanismproperties|authorization)
        ["']?\s*[=:]\s*
    )
    (?P<value>"[^"]*"|'[^']*'|(?:bearer|basic)\s+[^\s&;,'"]+|[^\s&;,'"]+)
    """
)
# Provider key shapes, and bearer tokens wherever they stand.
_SHAPES = re.compile(
    r"""(?x)
    \bsk-ant-[A-Za-z0-9_\-]{6,}
    | \bsk-[A-Za-z0-9_\-]{16,}
    | \bpa-[A-Za-z0-9_\-]{16,}
    | (?i:\bbearer\s+)[A-Za-z0-9._~+/=\-]{8,}
    """
)


def register_secret(value: str | None) -> None:
    """Mask ``value`` wherever it appears in what :func:`redact` sees from now on."""
    global _registered_pattern
    if not value or len(value) < _MIN_REGISTERED:
        return
    with _lock:
        if value in _registered:
            return
        _registered.add(value)
        # Longest first, so a secret that contains another is masked whole.
        ordered = sorted(_registered, key=len, reverse=True)
        _registered_pattern = re.compile("|".join(re.escape(item) for item in ordered))


def _named(match: re.Match[str]) -> str:
    value = match["value"]
    if value[:1] in "\"'":
        return f"{match['lead']}{value[0]}{MASK}{value[0]}"
    if value[:6].lower() in ("bearer", "basic "):
        return f"{match['lead']}{value.split(None, 1)[0]} {MASK}"
    return f"{match['lead']}{MASK}"


def _userinfo(match: re.Match[str]) -> str:
    return f"{match['head']}:{MASK}@" if match["secret"] != MASK else match[0]


def redact(text: str) -> str:
    """``text`` with every credential it holds replaced by ``***`` (see the module's
    docstring); text without one comes back unchanged."""
    if not text:
        return text
    pattern = _registered_pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    if "@" in text:
        text = _USERINFO.sub(_userinfo, text)
    text = _NAMED.sub(_named, text)
    return _SHAPES.sub(_mask_shape, text)


def _mask_shape(match: re.Match[str]) -> str:
    found = match[0]
    if found[:6].lower() == "bearer":
        return f"{found.split(None, 1)[0]} {MASK}"
    return MASK

"""Secrets out of every message and log line, whatever shape the text around them has.

:func:`redact` masks, with ``***``:

- the password of anything that looks like credentials in a URL, ``user:password@host``,
  with a scheme or without, well formed or not (``mongodb//admin:pw@db``, ``mongodb:/admin:pw@db``,
  ``admin:pw@db``): in each word that holds an ``@``, everything between the ``:`` after the
  user and the last ``@``;
- the value of an option or field whose name says it holds a credential (``password=...``,
  ``authMechanismProperties=...``, ``"api_key": "..."``, ``SECRET_KEY=...``, ``Authorization:
  Bearer ...``, ``Authorization: token ...``);
- API keys by their providers' shapes (Anthropic ``sk-ant-...``, ``sk-...``, Voyage ``pa-...``);
- every value registered with :func:`register_secret`: the settings register the secrets they
  were given (the URI's password, provider and API keys), and :func:`redact_uri` the password
  of every URI it sees, so a secret of any shape that reaches a message later is masked too.

:func:`redact_uri` is for a text known to be one connection string: there the password is
everything between the user's ``:`` and the last ``@``, spaces, quotes and a leading ``/``
included.

It is applied where text leaves the library: every :class:`~agent_memory.errors.AgentMemoryError`
message, every log event (string fields, nested ones and tracebacks), and the command line's
error lines and tracebacks. A masked text still says where it points
(``mongodb://admin:***@db.example.com/``). Its cost is linear in the text's length, whatever
the text: hostile input cannot make it slow.
"""

from __future__ import annotations

import re
import threading
from urllib.parse import unquote_plus

__all__ = ["MASK", "redact", "redact_uri", "register_secret"]

MASK = "***"

#: Secrets shorter than this are not registered: masking a short password everywhere it
#: occurs in a message would mangle ordinary words and still hide nothing.
_MIN_REGISTERED = 8
#: Nor are longer ones (no password is), and no more than this many are kept: the pattern of
#: registered secrets stays small whatever a process is given.
_MAX_REGISTERED_LENGTH = 1024
_MAX_REGISTERED = 1024
_registered: set[str] = set()
_registered_pattern: re.Pattern[str] | None = None
_lock = threading.Lock()

#: A scheme at the start of a URI, written right or in the usual typos: ``mongodb://``,
#: ``mongodb:/``, ``mongodb//``. A colon followed by no slash is a user's, not a scheme's.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,30}(?::/+|//)")
#: What may stand around a word that holds credentials, in a message: quotes, brackets,
#: punctuation.
_WRAPPING = "'\"()<>[]{},;`"
# ``name=value`` / ``name: value`` / ``"name": "value"`` where the name ends in a word that says
# credential (``password``, ``AWS_SESSION_TOKEN``, ``SECRET_KEY``, ``x-api-key``; not
# ``tokens`` or ``token_budget``, which are counts). Every part is linear: no nested
# repetition, and the quoted value is the unrolled form of a JSON string.
_NAMED = re.compile(
    r"""(?ix)
    (?P<lead>
        (?:password|passwd|passphrase|pwd|secret(?:[_\-\ ]?key)?|token|api[_\-\ ]?key|apikey
          |access[_\-]?key|account[_\-]?key|private[_\-]?key|credentials?
          |authmechanismproperties|authorization)
        ["']?\s{0,8}[=:]\s{0,8}
    )
    (?P<value>
        "[^"\\\n]{0,4096}(?:\\.[^"\\\n]{0,4096}){0,64}"?
      | '[^'\\\n]{0,4096}(?:\\.[^'\\\n]{0,4096}){0,64}'?
      | (?:bearer|basic|token|digest|negotiate)\s{1,8}[^\s&;,'"]{1,4096}
      | [^\s&;,'"]{1,4096}
    )
    """
)
# Provider key shapes, and bearer tokens wherever they stand.
_SHAPES = re.compile(
    r"""(?x)
    \bsk-ant-[A-Za-z0-9_\-]{6,}
    | \bsk-[A-Za-z0-9_\-]{16,}
    | \bpa-[A-Za-z0-9_\-]{16,}
    | (?i:\bbearer\s{1,8})[A-Za-z0-9._~+/=\-]{8,}
    """
)


def register_secret(value: str | None) -> None:
    """Mask ``value`` wherever it appears in what :func:`redact` sees from now on."""
    global _registered_pattern
    if not value or not _MIN_REGISTERED <= len(value) <= _MAX_REGISTERED_LENGTH:
        return
    with _lock:
        if value in _registered or len(_registered) >= _MAX_REGISTERED:
            return
        _registered.add(value)
        # Longest first, so a secret that contains another is masked whole.
        ordered = sorted(_registered, key=len, reverse=True)
        _registered_pattern = re.compile("|".join(re.escape(item) for item in ordered))


def _split_userinfo(text: str) -> tuple[str, str, str] | None:
    """``(before, password, after)`` when ``text`` (one connection string, or one word of a
    message) holds ``user:password@``: the password runs from the ``:`` after the user (the
    first after the scheme, if any) to the last ``@``. ``None`` when it holds none."""
    at = text.rfind("@")
    if at <= 0:
        return None
    scheme = _SCHEME.match(text)
    start = scheme.end() if scheme else 0
    colon = text.find(":", start, at)
    if colon < 0 or "/" in text[start:colon]:  # no password, or a host:port/path before it
        return None
    return text[: colon + 1], text[colon + 1 : at], text[at:]


def redact_uri(uri: str) -> str:
    """``uri``, one connection string, with its password and the values of options that
    carry credentials replaced by ``***``, whatever the scheme or its typos; the password is
    registered (:func:`register_secret`), so a message that repeats it later is masked too."""
    parts = _split_userinfo(uri)
    if parts is not None:
        before, password, after = parts
        if password != MASK:
            register_secret(password)
            register_secret(unquote_plus(password))
        uri = f"{before}{MASK}{after}"
    return redact(uri)


def _named(match: re.Match[str]) -> str:
    value = match["value"]
    if value[:1] in "\"'":
        return f"{match['lead']}{value[0]}{MASK}{value[0]}"
    word = value.split(None, 1)
    if len(word) == 2:  # a scheme word (Bearer, Basic, token) and the credential
        return f"{match['lead']}{word[0]} {MASK}"
    return f"{match['lead']}{MASK}"


def _mask_shape(match: re.Match[str]) -> str:
    found = match[0]
    if found[:6].lower() == "bearer":
        return f"{found.split(None, 1)[0]} {MASK}"
    return MASK


def _mask_userinfo(text: str) -> str:
    """Every word of ``text`` that holds ``user:password@``, its password masked: string
    methods over each word once, so linear in the text's length."""
    words = text.split(" ")
    for index, word in enumerate(words):
        if "@" not in word or ":" not in word:
            continue
        start, end = 0, len(word)
        while start < end and (word[start] in _WRAPPING or word[start].isspace()):
            start += 1
        while end > start and (word[end - 1] in _WRAPPING or word[end - 1].isspace()):
            end -= 1
        parts = _split_userinfo(word[start:end])
        if parts is not None and parts[1] and parts[1] != MASK:
            words[index] = f"{word[:start]}{parts[0]}{MASK}{parts[2]}{word[end:]}"
    return " ".join(words)


def redact(text: str) -> str:
    """``text`` with every credential it holds replaced by ``***`` (see the module's
    docstring); text without one comes back unchanged."""
    if not text:
        return text
    pattern = _registered_pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    if "@" in text:
        text = "\n".join(_mask_userinfo(line) for line in text.split("\n"))
    text = _NAMED.sub(_named, text)
    return _SHAPES.sub(_mask_shape, text)

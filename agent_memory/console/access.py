"""Who may see what in the console: sign-in sessions and the checks every request passes.

With ``AGENT_MEMORY_API_KEYS`` configured, a key signs in to its agent only, as with the
feedback API; without keys, a token made at each start and printed signs in to
every agent (a developer's own machine). A sign-in makes a session kept in this process: an
``HttpOnly``, ``SameSite=Strict`` cookie names it, and it holds a token every form posts back.

Signing in is bounded so that nobody can sign another person out: each key (or the local
token) keeps at most :data:`SESSIONS_PER_KEY` sessions, a new one ending that key's own oldest,
never another key's; sign-ins with one key are throttled (:data:`SIGN_INS_PER_KEY`), and so
are failed sign-ins all together (:data:`FAILED_SIGN_INS`), with a 429 that says when to try
again. A right key or token signs in even while failures are throttled, so that nobody without
one can lock out those who have one; guessing is held off by the keys' length (24 characters
or more) and the token's 192 random bits.

Requests that change anything are refused unless they come from the console's own pages (the
browser's ``Origin`` and ``Sec-Fetch-Site`` say so) and carry the session's token.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_memory.checks import check_id
from agent_memory.errors import InvalidInputError

__all__ = [
    "FAILED_SIGN_INS",
    "LOCAL_TOKEN",
    "NO_SUCH_AGENT",
    "MAX_BODY_BYTES",
    "SESSIONS_PER_KEY",
    "SESSION_COOKIE",
    "SESSION_SECONDS",
    "SIGN_INS_PER_KEY",
    "BodyLimit",
    "Rate",
    "Refused",
    "Session",
    "Sessions",
    "SignIns",
    "key_id",
    "posted_here",
    "too_many",
]

SESSION_COOKIE = "agent_memory_console"
#: A session ends this long after sign-in.
SESSION_SECONDS = 8 * 3600
#: The sessions one key (or the local token) keeps: a browser or two per person who holds it.
SESSIONS_PER_KEY = 20
#: The one line for an agent that does not exist and for one the session may not see: the
#: same, so that a key cannot find out which agents exist.
NO_SUCH_AGENT = "no such agent"
#: What the local token's sessions are counted under (:attr:`Session.key`).
LOCAL_TOKEN = "local token"
#: The largest form the console takes: an edit of a memory's longest content (20,000
#: characters), each character URL-encoded at its longest, and the other fields.
MAX_BODY_BYTES = 256 * 1024


class Refused(Exception):
    """A request the console turns down: ``status`` and one line for the person (and the
    response's extra ``headers``, such as a 429's ``Retry-After``)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def key_id(secret: str) -> str:
    """What a key's sessions and sign-ins are counted under: a digest, so that the key itself
    is not kept in memory beside them."""
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(slots=True)
class Session:
    """Who signed in: the agents they may see (``None``: every agent, the local token), and
    the key they signed in with (:func:`key_id`, or :data:`LOCAL_TOKEN`)."""

    agents: frozenset[str] | None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    #: On the clock of the :class:`Sessions` that opened it (:meth:`Sessions.open` sets it).
    expires: float = field(default_factory=lambda: time.monotonic() + SESSION_SECONDS)
    key: str = ""

    def sees(self, agent_id: str) -> bool:
        return self.agents is None or agent_id in self.agents

    def agent(self, agent_id: object) -> str:
        """``agent_id`` when this session may see it; a 404 for another agent's (nothing of
        it is shown, not even that it exists), a 400 for a malformed one."""
        try:
            agent_id = check_id(agent_id, "agent")
        except InvalidInputError as exc:
            raise Refused(400, str(exc)) from None
        if not self.sees(agent_id):
            raise Refused(404, NO_SUCH_AGENT)
        return agent_id


class Sessions:
    """The sessions of this process: at most ``per_key`` for each key, the oldest of that key
    dropped first. Time is ``clock``'s (seconds, monotonic; a test passes its own)."""

    def __init__(
        self, *, clock: Callable[[], float] = time.monotonic, per_key: int = SESSIONS_PER_KEY
    ) -> None:
        self._by_id: dict[str, Session] = {}
        self._clock = clock
        self._per_key = per_key

    def open(self, session: Session) -> str:
        now = self._clock()
        self._by_id = {k: s for k, s in self._by_id.items() if s.expires > now}
        same_key = [k for k, s in self._by_id.items() if s.key == session.key]  # oldest first
        for session_id in same_key[: max(0, len(same_key) - self._per_key + 1)]:
            del self._by_id[session_id]
        session.expires = now + SESSION_SECONDS
        session_id = secrets.token_urlsafe(32)
        self._by_id[session_id] = session
        return session_id

    def get(self, session_id: str | None) -> Session | None:
        session = self._by_id.get(session_id or "")
        if session is None or session.expires <= self._clock():
            return None
        return session

    def of(self, request: Request) -> Session | None:
        return self.get(request.cookies.get(SESSION_COOKIE))

    def signed_in(self, request: Request) -> Session:
        session = self.of(request)
        if session is None:
            raise Refused(401, "sign in first")
        return session

    def close(self, session_id: str | None) -> None:
        self._by_id.pop(session_id or "", None)


@dataclass(frozen=True, slots=True)
class Rate:
    """At most ``burst`` at once, then one more every ``every`` seconds (a token bucket)."""

    burst: int
    every: float


#: Sign-ins with one key (or the local token): a person signs in a few times a day.
SIGN_INS_PER_KEY = Rate(burst=10, every=30.0)
#: Failed sign-ins, all keys and addresses together (the console serves loopback only, so an
#: address tells nobody apart): a mistyped key a few times, not a guessing run.
FAILED_SIGN_INS = Rate(burst=10, every=10.0)


class SignIns:
    """How often sign-ins may come, per name (a key's :func:`key_id`, or one name for every
    failure), on ``clock`` (seconds, monotonic). The names are the configured keys, the
    local token and the failures: a handful, so nothing needs evicting."""

    def __init__(self, rate: Rate, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # name -> (allowance, at)

    def _allowance(self, name: str) -> float:
        allowance, at = self._buckets.get(name, (float(self.rate.burst), self._clock()))
        return min(float(self.rate.burst), allowance + (self._clock() - at) / self.rate.every)

    def wait(self, name: str) -> int:
        """Whole seconds until ``name`` may come again; 0 when it may now."""
        missing = 1.0 - self._allowance(name)
        return 0 if missing <= 0 else max(1, math.ceil(missing * self.rate.every))

    def take(self, name: str) -> int:
        """Count one for ``name`` when it may come now (0); else the seconds to wait, and
        nothing counted."""
        waiting = self.wait(name)
        if not waiting:
            self._buckets[name] = (self._allowance(name) - 1.0, self._clock())
        return waiting


def too_many(what: str, seconds: int) -> Refused:
    """A 429 for ``what`` that says when to try again, in words and in ``Retry-After``."""
    return Refused(429, f"{what}: try again in {seconds} s", headers={"Retry-After": str(seconds)})


def posted_here(request: Request, session: Session | None, csrf: str | None) -> None:
    """A state-changing request must come from these pages, with the session's token."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        raise Refused(403, "requests from other sites are refused")
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
        raise Refused(403, "requests from other origins are refused")
    if session is not None and not hmac.compare_digest(
        (csrf or "").encode(), session.csrf.encode()
    ):
        raise Refused(403, "the form's token is missing or stale: reload the page")


class BodyLimit:
    """Refuse a request body over ``limit`` bytes with a 413 before it is all read: at once
    when its Content-Length says so, else as soon as the bytes received pass the limit."""

    def __init__(self, app: ASGIApp, *, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = HTTPException(413, f"the request is larger than {self.limit} bytes")
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                scope["console_refused"] = too_large
        received = 0

        async def within_limit() -> Message:
            # Raised inside the app: its handler answers with the console's error page.
            nonlocal received
            if "console_refused" in scope or received > self.limit:
                raise too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise too_large
            return message

        await self.app(scope, within_limit, send)

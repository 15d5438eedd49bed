"""Who may see what in the console: sign-in sessions and the checks every request passes.

With ``AGENT_MEMORY_API_KEYS`` configured, a key signs in to its agent only, as with the
feedback API; without keys, a token made at each start and printed signs in to
every agent (a developer's own machine). A sign-in makes a session kept in this process: an
``HttpOnly``, ``SameSite=Strict`` cookie names it, and it holds a token every form posts back.

Requests that change anything are refused unless they come from the console's own pages (the
browser's ``Origin`` and ``Sec-Fetch-Site`` say so) and carry the session's token.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_memory.checks import check_id
from agent_memory.errors import InvalidInputError

__all__ = [
    "MAX_BODY_BYTES",
    "SESSION_COOKIE",
    "SESSION_SECONDS",
    "BodyLimit",
    "Refused",
    "Session",
    "Sessions",
    "posted_here",
]

SESSION_COOKIE = "agent_memory_console"
#: A session ends this long after sign-in.
SESSION_SECONDS = 8 * 3600
_MAX_SESSIONS = 1_000
#: The largest form the console takes: an edit of a memory's longest content (20,000
#: characters), each character URL-encoded at its longest, and the other fields.
MAX_BODY_BYTES = 256 * 1024


class Refused(Exception):
    """A request the console turns down: ``status`` and one line for the person."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(slots=True)
class Session:
    """Who signed in: the agents they may see (``None``: every agent, the local token)."""

    agents: frozenset[str] | None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    expires: float = field(default_factory=lambda: time.monotonic() + SESSION_SECONDS)

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
            raise Refused(404, "no such agent")
        return agent_id


class Sessions:
    """The sessions of this process, the oldest dropped beyond a thousand."""

    def __init__(self) -> None:
        self._by_id: dict[str, Session] = {}

    def open(self, session: Session) -> str:
        now = time.monotonic()
        self._by_id = {k: s for k, s in self._by_id.items() if s.expires > now}
        while len(self._by_id) >= _MAX_SESSIONS:  # the oldest goes first
            self._by_id.pop(next(iter(self._by_id)))
        session_id = secrets.token_urlsafe(32)
        self._by_id[session_id] = session
        return session_id

    def get(self, session_id: str | None) -> Session | None:
        session = self._by_id.get(session_id or "")
        if session is None or session.expires <= time.monotonic():
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

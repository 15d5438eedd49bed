"""The console's web application (FastAPI, Jinja2 templates, no JavaScript).

Access: with ``AGENT_MEMORY_API_KEYS`` configured, a key signs in to its agent only, as with
the feedback API; without keys, a one-time token printed when the console starts signs in to
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
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Form, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape

from agent_memory._log import get_logger
from agent_memory.api.keys import ApiKeys
from agent_memory.checks import check_id
from agent_memory.config import Settings
from agent_memory.errors import InvalidInputError
from agent_memory.memory.knowledge.base import SHARED_USER
from agent_memory.mongo.connection import Connection
from agent_memory.ops.stats import KINDS, collect_stats

__all__ = ["SESSION_COOKIE", "create_console_app"]

logger = get_logger(__name__)

SESSION_COOKIE = "agent_memory_console"
#: A session ends this long after sign-in.
_SESSION_SECONDS = 8 * 3600
_MAX_SESSIONS = 1_000


@dataclass(slots=True)
class _Session:
    """Who signed in: the agents they may see (``None``: every agent, the local token)."""

    agents: frozenset[str] | None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    expires: float = field(default_factory=lambda: time.monotonic() + _SESSION_SECONDS)

    def sees(self, agent_id: str) -> bool:
        return self.agents is None or agent_id in self.agents


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _Sessions:
    def __init__(self) -> None:
        self._by_id: dict[str, _Session] = {}

    def open(self, session: _Session) -> str:
        now = time.monotonic()
        self._by_id = {k: s for k, s in self._by_id.items() if s.expires > now}
        while len(self._by_id) >= _MAX_SESSIONS:  # the oldest goes first
            self._by_id.pop(next(iter(self._by_id)))
        session_id = secrets.token_urlsafe(32)
        self._by_id[session_id] = session
        return session_id

    def get(self, session_id: str | None) -> _Session | None:
        session = self._by_id.get(session_id or "")
        if session is None or session.expires <= time.monotonic():
            return None
        return session

    def close(self, session_id: str | None) -> None:
        self._by_id.pop(session_id or "", None)


def create_console_app(
    connection: Connection, *, settings: Settings, token: str | None = None
) -> FastAPI:
    """The console on an open ``connection``. ``token`` signs in to every agent when no API
    keys are configured (``agent-memory console`` makes and prints one); with keys it is
    ignored and each key signs in to its own agent."""
    keys = ApiKeys(settings.api_keys)
    local_token = None if keys else token
    if not keys and not local_token:
        raise InvalidInputError("without API keys the console needs a sign-in token")
    sessions = _Sessions()
    templates = Environment(
        loader=PackageLoader("agent_memory.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    app = FastAPI(title="agent_memory console", docs_url=None, redoc_url=None, openapi_url=None)

    def page(request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        session = sessions.get(request.cookies.get(SESSION_COOKIE))
        html = templates.get_template(name).render(session=session, **values)
        return HTMLResponse(html, status_code=status, headers=_HEADERS)

    def signed_in(request: Request) -> _Session:
        session = sessions.get(request.cookies.get(SESSION_COOKIE))
        if session is None:
            raise _Refused(401, "sign in first")
        return session

    def posted_here(request: Request, session: _Session | None, csrf: str | None) -> None:
        """A state-changing request must come from these pages, with the session's token."""
        if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            raise _Refused(403, "requests from other sites are refused")
        origin = request.headers.get("origin")
        if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
            raise _Refused(403, "requests from other origins are refused")
        if session is not None and not hmac.compare_digest(
            (csrf or "").encode(), session.csrf.encode()
        ):
            raise _Refused(403, "the form's token is missing or stale: reload the page")

    def agent_in_scope(session: _Session, agent_id: str) -> str:
        try:
            agent_id = check_id(agent_id, "agent_id")
        except InvalidInputError as exc:
            raise _Refused(400, str(exc)) from None
        if not session.sees(agent_id):
            raise _Refused(404, "no such agent")  # another agent's: nothing to see
        return agent_id

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ())[1:]) or "the request"
        message = f"{where}: {first.get('msg', 'invalid')}"
        return page(request, "error.html", 422, message=message[:300])

    @app.exception_handler(_Refused)
    async def refused(request: Request, exc: _Refused) -> Response:
        if exc.status == 401 and request.method == "GET":
            return RedirectResponse("/login", status_code=303, headers=_HEADERS)
        return page(request, "error.html", exc.status, message=exc.message)

    @app.get("/login", response_class=HTMLResponse)
    async def login_form(request: Request) -> HTMLResponse:
        return page(request, "login.html", with_keys=bool(keys))

    @app.post("/login")
    async def login(request: Request, secret: str = Form("", max_length=1_000)) -> Response:
        posted_here(request, None, None)
        agent = keys.agent(secret) if keys else None
        if agent is not None:
            session = _Session(frozenset({agent}))
        elif local_token is not None and hmac.compare_digest(
            secret.encode("utf-8", "surrogateescape"), local_token.encode()
        ):
            session = _Session(None)
        else:
            logger.info("console_sign_in_refused")
            return page(request, "login.html", 401, with_keys=bool(keys), failed=True)
        response = RedirectResponse("/", status_code=303, headers=_HEADERS)
        response.set_cookie(
            SESSION_COOKIE,
            sessions.open(session),
            httponly=True,
            samesite="strict",
            max_age=_SESSION_SECONDS,
            path="/",
        )
        return response

    @app.post("/logout")
    async def logout(request: Request, csrf: str = Form("", max_length=200)) -> Response:
        session = signed_in(request)
        posted_here(request, session, csrf)
        sessions.close(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse("/login", status_code=303, headers=_HEADERS)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    @app.get("/", response_class=HTMLResponse)
    async def agents(request: Request) -> HTMLResponse:
        session = signed_in(request)
        if session.agents is None:
            stats = await collect_stats(connection)
            seen = sorted(a for a in stats.agents if isinstance(a, str))
        else:
            seen = sorted(session.agents)
        return page(request, "agents.html", agents=seen)

    @app.get("/agents/{agent_id}", response_class=HTMLResponse)
    async def users(request: Request, agent_id: str) -> HTMLResponse:
        session = signed_in(request)
        agent_id = agent_in_scope(session, agent_id)
        stats = await collect_stats(connection, agent_id=agent_id)
        rows = [t for t in stats.tenants if isinstance(t.user_id, str) and t.user_id != SHARED_USER]
        rows.sort(key=lambda t: t.user_id or "")
        kinds = [kind.label for kind in KINDS if kind.per_user]
        return page(request, "users.html", agent_id=agent_id, rows=rows, kinds=kinds)

    return app


#: On every page: no framing by other sites, no inline scripts, no sniffing, no caching, no
#: referrer to other sites. Not ``no-referrer``: under it a browser posts the console's own
#: forms with ``Origin: null``, which posted_here() refuses as another origin.
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self' 'unsafe-inline'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

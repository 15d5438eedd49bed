"""The console's web application: FastAPI routes rendering Jinja2 templates, no JavaScript.

Every page is scoped to the agents the session may see (:mod:`agent_memory.console.access`)
and reads through the memories' public methods: the search is ``LongTermMemory.retrieve``
itself (told not to count as a use of what it finds and not to teach the keyword trust), so
the score breakdown shown is the one the agent's recall computes. Ids travel as query
parameters, so any id the library accepts (slashes included) has a page.

Stored text is data: templates escape everything (autoescaping on for every template), the
page's policy allows no script at all, and links are built from escaped, URL-encoded ids.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from fastapi import Depends, FastAPI, Form, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from agent_memory._log import get_logger
from agent_memory.api.keys import ApiKeys
from agent_memory.checks import check_id
from agent_memory.config import Settings
from agent_memory.console.access import (
    FAILED_SIGN_INS,
    LOCAL_TOKEN,
    NO_SUCH_AGENT,
    SESSION_COOKIE,
    SESSION_SECONDS,
    SIGN_INS_PER_KEY,
    BodyLimit,
    Refused,
    Session,
    Sessions,
    SignIns,
    key_id,
    posted_here,
    too_many,
)
from agent_memory.console.chart import Chart, Point, plot
from agent_memory.errors import (
    AgentMemoryError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
)
from agent_memory.memory.episodic.records import Action
from agent_memory.memory.knowledge.base import SHARED_USER
from agent_memory.memory.long_term.ranking import feedback_utility
from agent_memory.memory.long_term.records import MEMORY_TYPES, Memory
from agent_memory.memory.system import MemorySystem
from agent_memory.ops.forget import COLLECTION_NOUNS, check_user, forget_user, held, holds
from agent_memory.ops.stats import KINDS, collect_stats
from agent_memory.tenancy import Tenant

__all__ = ["SESSION_COOKIE", "create_console_app"]

logger = get_logger(__name__)

#: What the console calls each search source.
SOURCE_NAMES = {"vector": "vector", "text": "keyword", "rerank": "reranker"}
_MAX_ID = 300
_MAX_QUERY = 2_000
_MAX_CONTENT = 20_000
#: Erasures of a user before the console says an app is still writing for them (as the
#: command does).
_FORGET_PASSES = 2
#: The names the console answers to: loopback only, so a page of another site whose name was
#: pointed at 127.0.0.1 (DNS rebinding) is refused before any page or form.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def create_console_app(
    memories: MemorySystem,
    *,
    settings: Settings,
    token: str | None = None,
    hosts: Sequence[str] = LOOPBACK_HOSTS,
    clock: Callable[[], float] = time.monotonic,
) -> FastAPI:
    """The console over ``memories`` (their connection, embedder and reranker are the ones
    searched with). ``token`` signs in to every agent when no API keys are configured
    (``agent-memory console`` makes and prints one); with keys it is ignored and each key
    signs in to its own agent. Requests naming another host than ``hosts`` are refused.
    ``clock`` (monotonic seconds) times sessions and the sign-in limits."""
    keys = ApiKeys(settings.api_keys)
    local_token = None if keys else token
    if not keys and not local_token:
        raise InvalidInputError("without API keys the console needs a sign-in token")
    sessions = Sessions(clock=clock)
    sign_ins = SignIns(SIGN_INS_PER_KEY, clock=clock)
    failures = SignIns(FAILED_SIGN_INS, clock=clock)
    templates = Environment(
        loader=PackageLoader("agent_memory.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    templates.globals["url"] = _url
    templates.globals["fingerprint"] = _fingerprint
    templates.globals["tag_text"] = _tag_text
    templates.filters["pretty"] = _pretty
    templates.filters["when"] = _when
    connection = memories.connection
    long_term = memories.long_term
    weights = long_term.config.ranking
    app = FastAPI(title="agent_memory console", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(BodyLimit)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))

    def page(
        request: Request,
        name: str,
        status: int = 200,
        headers: dict[str, str] | None = None,
        **values: Any,
    ) -> HTMLResponse:
        html = templates.get_template(name).render(session=sessions.of(request), **values)
        return HTMLResponse(html, status_code=status, headers={**_HEADERS, **(headers or {})})

    def tenant_of(request: Request, agent: str, user: str) -> tuple[Session, Tenant]:
        session = sessions.signed_in(request)
        agent = session.agent(agent)
        try:
            user = check_id(user, "user")
        except InvalidInputError as exc:
            raise Refused(400, str(exc)) from None
        return session, Tenant(agent, user)

    async def viewed(
        request: Request,
        agent: str = Query(max_length=_MAX_ID),
        user: str = Query(max_length=_MAX_ID),
    ) -> Tenant:
        """The tenant a page shows (its query's agent and user), when anything of it is
        stored: a 404 that says so otherwise, never an empty page. An agent the session may
        not see was refused before anything was looked up, so it answers as one that does
        not exist."""
        session, tenant = tenant_of(request, agent, user)
        if not await holds(memories, tenant.agent_id, tenant.user_id):
            if session.agents is None and not await holds(memories, tenant.agent_id):
                raise Refused(404, NO_SUCH_AGENT)
            raise Refused(404, "no such user")
        return tenant

    def changed(
        request: Request,
        agent: str = Form(max_length=_MAX_ID),
        user: str = Form(max_length=_MAX_ID),
        csrf: str = Form("", max_length=200),
    ) -> Tenant:
        """The tenant a form changes, once the form is known to come from these pages."""
        session, tenant = tenant_of(request, agent, user)
        posted_here(request, session, csrf)
        return tenant

    def back(path: str, **params: str) -> RedirectResponse:
        return RedirectResponse(_url(path, **params), status_code=303, headers=_HEADERS)

    # --- errors -----------------------------------------------------------------------------

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ())[1:]) or "the request"
        message = f"{where}: {first.get('msg', 'invalid')}"
        return page(request, "error.html", 422, message=message[:300])

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused) -> Response:
        if exc.status == 401 and request.method == "GET":
            return RedirectResponse("/login", status_code=303, headers=_HEADERS)
        return page(request, "error.html", exc.status, exc.headers, message=exc.message)

    @app.exception_handler(AgentMemoryError)
    async def failed(request: Request, exc: AgentMemoryError) -> Response:
        status = (
            404
            if isinstance(exc, NotFoundError)
            else 400
            if isinstance(exc, InvalidInputError)
            else 409
            if isinstance(exc, ConflictError)
            else 503
        )
        if status == 503:
            logger.warning("console_request_failed", error=type(exc).__name__)
        message = (str(exc).splitlines() or [type(exc).__name__])[0]
        return page(request, "error.html", status, message=message[:300])

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        """An unknown page or a wrong method: the console's error page and headers, not the
        framework's JSON."""
        message = "no such page" if exc.status_code == 404 else str(exc.detail)
        return page(request, "error.html", exc.status_code, message=message[:300])

    # --- signing in -------------------------------------------------------------------------

    @app.get("/login", response_class=HTMLResponse)
    async def login_form(request: Request) -> HTMLResponse:
        return page(request, "login.html", with_keys=bool(keys))

    @app.post("/login")
    async def login(request: Request, secret: str = Form("", max_length=1_000)) -> Response:
        posted_here(request, None, None)
        agent = keys.agent(secret) if keys else None
        if agent is not None:
            session = Session(frozenset({agent}), key=key_id(secret))
        elif local_token is not None and hmac.compare_digest(
            secret.encode("utf-8", "surrogateescape"), local_token.encode()
        ):
            session = Session(None, key=LOCAL_TOKEN)
        else:
            # Failures that come too fast are answered 429. A right key still signs in: a
            # throttle that refused it would let anyone without a key sign everyone out of
            # signing in. Guessing is held off by the keys' length (24 characters or more)
            # and the local token's 192 random bits, not by this.
            if waiting := failures.take("failed"):
                logger.warning("console_sign_in_throttled", why="failures")
                raise too_many("too many failed sign-ins", waiting)
            logger.info("console_sign_in_refused")
            return page(request, "login.html", 401, with_keys=bool(keys), failed=True)
        if waiting := sign_ins.take(session.key):
            logger.warning("console_sign_in_throttled", why="key")
            what = "too many sign-ins with this " + ("key" if keys else "token")
            raise too_many(what, waiting)
        response = RedirectResponse("/", status_code=303, headers=_HEADERS)
        response.set_cookie(
            SESSION_COOKIE,
            sessions.open(session),
            httponly=True,
            samesite="strict",
            max_age=SESSION_SECONDS,
            path="/",
        )
        return response

    @app.post("/logout")
    async def logout(request: Request, csrf: str = Form("", max_length=200)) -> Response:
        session = sessions.signed_in(request)
        posted_here(request, session, csrf)
        sessions.close(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse("/login", status_code=303, headers=_HEADERS)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    # --- agents and users -------------------------------------------------------------------

    @app.get("/", response_class=HTMLResponse)
    async def agents(request: Request) -> HTMLResponse:
        session = sessions.signed_in(request)
        if session.agents is None:
            stats = await collect_stats(connection, by=False)
            seen = sorted(a for a in stats.agents if isinstance(a, str))
        else:
            seen = sorted(session.agents)
        return page(request, "agents.html", agents=seen)

    @app.get("/agent", response_class=HTMLResponse)
    async def users(request: Request, agent: str = Query(max_length=_MAX_ID)) -> HTMLResponse:
        session = sessions.signed_in(request)
        agent = session.agent(agent)
        # Counts per tenant only (no page here shows them per status or outcome).
        stats = await collect_stats(connection, agent_id=agent, by=False)
        # A key's own agent is there however little is stored; with the local token, an
        # agent with nothing stored is none.
        if session.agents is None and not any(t.documents for t in stats.totals.values()):
            raise Refused(404, NO_SUCH_AGENT)
        rows = [t for t in stats.tenants if isinstance(t.user_id, str) and t.user_id != SHARED_USER]
        rows.sort(key=lambda t: t.user_id or "")
        kinds = [kind.label for kind in KINDS if kind.per_user]
        rates = await memories.episodic.success_rates(agent)
        return page(request, "users.html", agent=agent, rows=rows, kinds=kinds, rates=rates)

    @app.get("/user", response_class=HTMLResponse)
    async def user(
        request: Request,
        tenant: Tenant = Depends(viewed),
        q: str = Query("", max_length=_MAX_QUERY),
        k: int = Query(10, ge=1, le=50),
        kind: str = Query("", max_length=40),
        history: bool = Query(False),
    ) -> HTMLResponse:
        if kind and kind not in MEMORY_TYPES:
            raise Refused(400, f"kind must be one of {', '.join(MEMORY_TYPES)}")
        results = None
        if q.strip():
            results = await long_term.retrieve(
                tenant,
                q,
                k=k,
                memory_types=kind or None,
                include_history=history,
                learn=False,
                record_access=False,
            )
        listed = (
            await long_term.list_memories(
                tenant, memory_types=kind or None, include_inactive=history, limit=100
            )
            if results is None
            else []
        )
        profiles = memories.profiles
        return page(
            request,
            "user.html",
            tenant=tenant,
            profile=await profiles.render(tenant),
            profile_versions=[
                await profiles.get(tenant, name)
                for name, schema in profiles.schemas.items()
                if schema.update_mode == "patch"
            ],
            q=q,
            k=k,
            kind=kind,
            kinds=MEMORY_TYPES,
            history=history,
            results=results,
            listed=listed,
            weights=weights,
            shown_sources={
                key: label
                for key, label in SOURCE_NAMES.items()
                if key != "rerank" or long_term.reranker is not None
            },
            tab="memories",
        )

    # --- one memory -------------------------------------------------------------------------

    @app.get("/memory", response_class=HTMLResponse)
    async def memory(
        request: Request,
        tenant: Tenant = Depends(viewed),
        id: str = Query(max_length=_MAX_ID),
    ) -> HTMLResponse:
        found = await long_term.get(tenant, id)
        versions = await long_term.history(tenant, key=found.key) if found.key else []
        linked = {found.superseded_by, *found.supersedes} - {None}
        neighbours = {m.id: m for m in versions}
        for other in sorted(i for i in linked if i not in neighbours):
            try:
                neighbours[other] = await long_term.get(tenant, other)
            except NotFoundError:  # forgotten since
                continue
        cited = await memories.episodic.list_actions(tenant, memory_id=found.id, limit=50)
        rated = await memories.episodic.list_actions(
            tenant, memory_id=found.id, rated=True, limit=1_000
        )
        return page(
            request,
            "memory.html",
            tenant=tenant,
            memory=found,
            versions=versions,
            neighbours=neighbours,
            cited=cited,
            chart=_chart(found, rated, weights.feedback_prior),
            utility=_utility(found.feedback_count, found.feedback_sum, weights.feedback_prior),
            tab="memories",
        )

    @app.post("/memory/edit", response_class=HTMLResponse)
    async def edit_memory(
        request: Request,
        tenant: Tenant = Depends(changed),
        id: str = Form(max_length=_MAX_ID),
        content: str = Form(max_length=_MAX_CONTENT),
        importance: float = Form(ge=0.0, le=1.0, allow_inf_nan=False),
        tags: str = Form("", max_length=10_000),
        seen: str = Form(max_length=100),
        confirm: str = Form("", max_length=10),
    ) -> Response:
        current = await long_term.get(tenant, id)
        if not hmac.compare_digest(seen.encode(), _fingerprint(current).encode()):
            # Decay, a reinforcement or another edit since the page was shown: the form's
            # values would silently undo it.
            raise Refused(409, "this memory changed since the page was shown: reload it")
        # Compared with the form as it was shown: a field left alone is no change, whatever
        # the browser does to it (CRLF lines, three decimals, tags joined with commas).
        changes: dict[str, Any] = {}
        if _lines(content).strip() != _lines(current.content).strip():
            changes["content"] = _lines(content)
        if f"{importance:.3f}" != f"{current.importance:.3f}":
            changes["importance"] = importance
        if tags.strip() != _tag_text(current.tags):
            changes["tags"] = [tag.strip() for tag in tags.split(",") if tag.strip()]
        if not changes:
            return back("/memory", agent=tenant.agent_id, user=tenant.user_id, id=id)
        if confirm != "yes":
            return page(
                request,
                "confirm_edit.html",
                tenant=tenant,
                memory=current,
                content=content,
                importance=importance,
                tags=tags,
                seen=seen,
                changes=changes,
            )
        await long_term.edit(tenant, id, **changes)
        logger.info("console_memory_edited", agent_id=tenant.agent_id, fields=sorted(changes))
        return back("/memory", agent=tenant.agent_id, user=tenant.user_id, id=id)

    @app.post("/memory/forget", response_class=HTMLResponse)
    async def forget_memory(
        request: Request,
        tenant: Tenant = Depends(changed),
        id: str = Form(max_length=_MAX_ID),
        confirm: str = Form("", max_length=10),
    ) -> Response:
        current = await long_term.get(tenant, id)
        if confirm != "yes":
            return page(request, "confirm_forget_memory.html", tenant=tenant, memory=current)
        await long_term.forget(tenant, id)
        logger.info("console_memory_forgotten", agent_id=tenant.agent_id)
        return page(request, "forgotten.html", tenant=tenant, what="memory", memory=current)

    # --- forgetting a user ------------------------------------------------------------------

    @app.post("/user/forget", response_class=HTMLResponse)
    async def forget_a_user(
        request: Request,
        tenant: Tenant = Depends(changed),
        confirm: str = Form("", max_length=10),
    ) -> Response:
        try:
            check_user(tenant.user_id)
        except InvalidInputError as exc:
            raise Refused(400, str(exc)) from None
        found = await held(memories, tenant.user_id, tenant.agent_id)
        if confirm != "yes":
            return page(
                request,
                "confirm_forget_user.html",
                tenant=tenant,
                held=found,
                nouns=COLLECTION_NOUNS,
            )
        # As agent-memory forget does: erase, look again, and erase once more what a turn that
        # was still running stored meanwhile; what is back after that is an app writing now.
        erased: dict[str, int] = {}
        for _ in range(_FORGET_PASSES):
            for name, count in (await forget_user(memories, tenant)).items():
                erased[name] = erased.get(name, 0) + count
            left = await held(memories, tenant.user_id, tenant.agent_id)
            if not left.total:
                break
        logger.info("console_user_erased", agent_id=tenant.agent_id, erased=sum(erased.values()))
        return page(
            request,
            "forgotten.html",
            tenant=tenant,
            what="user",
            erased=dict(sorted(erased.items())),
            left=left,
        )

    # --- sessions, tasks, actions -----------------------------------------------------------

    @app.get("/sessions", response_class=HTMLResponse)
    async def sessions_of(
        request: Request,
        tenant: Tenant = Depends(viewed),
    ) -> HTMLResponse:
        listed = await memories.conversation.list_sessions(tenant, include_archived=True, limit=200)
        return page(request, "sessions.html", tenant=tenant, listed=listed, tab="sessions")

    @app.get("/session", response_class=HTMLResponse)
    async def session_page(
        request: Request,
        tenant: Tenant = Depends(viewed),
        id: str = Query(max_length=_MAX_ID),
    ) -> HTMLResponse:
        found = await memories.conversation.get_session(tenant, id)
        messages = await memories.conversation.messages_after(tenant, id, None, limit=500)
        return page(
            request,
            "session.html",
            tenant=tenant,
            found=found,
            messages=messages,
            more=found.message_count > len(messages),
            tab="sessions",
        )

    @app.get("/tasks", response_class=HTMLResponse)
    async def tasks_of(
        request: Request,
        tenant: Tenant = Depends(viewed),
    ) -> HTMLResponse:
        listed = await memories.working.list_tasks(tenant, limit=200)
        return page(request, "tasks.html", tenant=tenant, listed=listed, tab="tasks")

    @app.get("/task", response_class=HTMLResponse)
    async def task_page(
        request: Request,
        tenant: Tenant = Depends(viewed),
        id: str = Query(max_length=_MAX_ID),
    ) -> HTMLResponse:
        task = await memories.working.get_task(tenant, id)
        checkpoints = await memories.working.list_checkpoints(tenant, id)
        return page(
            request, "task.html", tenant=tenant, task=task, checkpoints=checkpoints, tab="tasks"
        )

    @app.get("/actions", response_class=HTMLResponse)
    async def actions_of(
        request: Request,
        tenant: Tenant = Depends(viewed),
        session: str = Query("", max_length=_MAX_ID),
    ) -> HTMLResponse:
        listed = await memories.episodic.list_actions(tenant, session_id=session or None, limit=200)
        used = await long_term.get_many(tenant, [i for action in listed for i in action.memory_ids])
        types = sorted({action.action_type for action in listed})
        # Every type's rates in one read of the agent's kept hourly counts.
        by_type = (
            await memories.episodic.success_rates_by_type(tenant.agent_id, types) if types else {}
        )
        rates = [by_type[t] for t in types]
        return page(
            request,
            "actions.html",
            tenant=tenant,
            listed=listed,
            used=used,
            rates=rates,
            session_id=session,
            tab="actions",
        )

    return app


def _url(path: str, **params: object) -> str:
    """A console link: ``path`` with its query, every value URL-encoded."""
    query = urlencode({k: v for k, v in params.items() if v not in (None, "", False)})
    return f"{path}?{query}" if query else path


def _pretty(value: Any) -> str:
    """A task's context or a step's result for reading: JSON where it is JSON, any other
    stored value (a date, an id) as its text."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _when(at: datetime, seconds: bool = False) -> Markup:
    """A moment as the pages show it: a ``<time>`` element, which the style keeps on one line
    (a date and its time wrapped apart in a narrow column)."""
    shown = at.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    return Markup('<time datetime="{}">{}</time>').format(at.isoformat(), shown)


def _lines(text: str) -> str:
    """Text with every line break as ``\n`` (browsers send a textarea's lines as CRLF)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _tag_text(tags: Sequence[str]) -> str:
    """Tags as the edit form shows them."""
    return ", ".join(tags)


def _fingerprint(memory: Any) -> str:
    """What the edit form showed of ``memory``: its content, importance (as shown) and tags."""
    shown = "\x1f".join(
        (_lines(memory.content), f"{memory.importance:.3f}", "\x1e".join(memory.tags))
    )
    return hashlib.sha256(shown.encode("utf-8", "surrogatepass")).hexdigest()


def _utility(count: int, total: float, prior: float) -> float:
    """The feedback utility ranking gives ``count`` ratings summing ``total``."""
    return feedback_utility({"count": count, "sum": total}, prior)


def _chart(memory: Memory, rated: list[Action], prior: float) -> Chart:
    """The memory's importance trail and its feedback utility after each rating of a turn
    whose prompt held it, on one time axis up to now.

    The feedback line ends at the utility ranking uses (the memory's stored totals): ratings
    whose logs are no longer listed (summarised by retention, or beyond the newest shown)
    are its starting value."""
    now = datetime.now(UTC)
    trail = sorted(memory.importance_trail, key=lambda p: p.at)
    importance = [Point(p.at, p.importance, f"{p.why} {p.importance:.2f}") for p in trail]
    if not importance:  # stored before trails were kept: its value now
        importance = [Point(memory.created_at, memory.importance, "stored (value now)")]
    credits = sorted(
        (a.feedback["updated_at"], float(a.feedback["credited"]))
        for a in rated
        if isinstance(a.feedback.get("credited"), int | float)
        and isinstance(a.feedback.get("updated_at"), datetime)
    )
    earlier_count = max(0, memory.feedback_count - len(credits))
    earlier_sum = memory.feedback_sum - sum(value for _, value in credits)
    start_value = _utility(earlier_count, earlier_sum, prior)
    start_label = (
        f"{earlier_count} earlier rating{'s' if earlier_count != 1 else ''}: "
        f"utility {start_value:+.2f}"
        if earlier_count
        else "no ratings yet"
    )
    feedback = [Point(memory.created_at, start_value, start_label)]
    for count, (at, credited) in enumerate(credits, start=1):
        earlier_sum += credited
        value = _utility(earlier_count + count, earlier_sum, prior)
        n = earlier_count + count
        feedback.append(
            Point(at, value, f"{n} rating{'s' if n != 1 else ''}: utility {value:+.2f}")
        )
    moments = [p.at for p in (*importance, *feedback)]
    return plot(importance, feedback, min(moments), max(now, *moments))


#: On every page: no framing by other sites, no scripts, no sniffing, no caching, no referrer
#: to other sites. Not ``no-referrer``: under it a browser posts the console's own forms with
#: ``Origin: null``, which posted_here() refuses as another origin.
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self' 'unsafe-inline'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

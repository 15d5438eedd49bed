"""The feedback API: an ASGI app (FastAPI) over episodic memory, served by ``agent-memory api``.

Routes (the OpenAPI document is at ``/openapi.json``, interactive docs at ``/docs``):

- ``GET /health``: no key needed; 200 when the database answers, 503 otherwise.
- ``POST /v1/actions/{action_id}/feedback``: rate an action (``user_id`` and at least one of
  ``rating`` 1-5, ``helpful``, ``correction``). The rating lands on the action and is credited
  to the memories that were in that turn's prompt. Each request sets the action's whole
  feedback, replacing the earlier one: a field left out is cleared (a ``correction`` alone
  after a rating removes the rating and its credit). The 200 body is the feedback now stored,
  ``null`` for what is not set. A retry with the same ``Idempotency-Key`` header changes
  nothing and gets the first answer again; the same key with another body is 409. Feedback
  that asks for the state already stored is 200 and writes nothing.
- ``GET /v1/actions/{action_id}?user_id=...``: the action with its feedback.
- ``GET /v1/success-rates?action_type=&days=``: counts and rates of the agent's actions.

Every ``/v1`` route needs an ``X-API-Key`` header. Each configured key belongs to one agent
(``AGENT_MEMORY_API_KEYS``, see :class:`~agent_memory.config.Settings`); the agent comes from
the key, never from the request, so a key cannot read or rate another agent's actions, and an
action of another agent or user is 404, exactly like one that does not exist. Keys are compared
in constant time, against every configured key. The key is checked from the headers before
any of the body is read, and a body is read only up to ``AGENT_MEMORY_API_MAX_BODY_BYTES``
(see :class:`_Gate`).

Errors have one shape, ``{"detail": ...}``: 400 for a body that cannot be read (not UTF-8,
or JSON no other program sends: ``NaN``, ``Infinity``, an unpaired surrogate; see
:mod:`agent_memory.api.body`), 401 without a valid key, 404 for unknown ids, 409 for a reused
idempotency key, 413 for a body over the limit, 422 for invalid input (FastAPI's list of
problems for malformed requests, one problem per field; one message for values the memories
refuse), 503 when the database is unreachable.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import asdict
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, HTTPException, Path, Query, Request
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_memory._log import get_logger
from agent_memory.api.body import StrictJsonRoute
from agent_memory.api.keys import ApiKeys
from agent_memory.config import Settings
from agent_memory.errors import (
    AgentMemoryError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    StorageUnavailableError,
)
from agent_memory.memory.episodic.feedback import Feedback
from agent_memory.memory.episodic.memory import EpisodicMemory
from agent_memory.memory.episodic.records import check_rating
from agent_memory.memory.episodic.retention import SuccessRates
from agent_memory.mongo.connection import Connection, connect
from agent_memory.providers.embedders.base import Embedder
from agent_memory.providers.registry import make_embedder
from agent_memory.tenancy import Tenant

__all__ = ["create_app"]

logger = get_logger(__name__)

#: Ids as the memories accept them (check_id): 1-256 characters, not only whitespace, no
#: control characters.
_ID_RULES: dict[str, Any] = {
    "min_length": 1,
    "max_length": 256,
    "pattern": r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$",
}
_ID = Annotated[str, Field(**_ID_RULES)]
_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="The agent's API key")


def _unsaid_null(schema: dict[str, Any]) -> None:
    """The JSON schema of an optional field, without its ``null``: leaving the field out is how
    to say "not given". The type stays ``X | None`` (not a union with a ``None`` kept out of
    the schema), so a bad value is one problem, not a second "Input should be None"."""
    (given,) = [branch for branch in schema.pop("anyOf") if branch != {"type": "null"}]
    schema.pop("default", None)
    schema.update(given)


class FeedbackIn(BaseModel):
    """Feedback on one action. At least one of rating, helpful and correction; it replaces the
    action's earlier feedback, and a field left out is cleared."""

    # Strict: "5" is not a rating and "yes" is not a bool. Null is not a value here: leave a
    # field out instead (the schema says so, and that at least one must be given).
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "anyOf": [
                {"required": ["rating"]},
                {"required": ["helpful"]},
                {"required": ["correction"]},
            ]
        },
    )

    user_id: _ID
    rating: Annotated[int, Field(ge=1, le=5)] | None = Field(
        default=None, description="1 (bad) to 5 (good)", json_schema_extra=_unsaid_null
    )
    helpful: bool | None = Field(default=None, json_schema_extra=_unsaid_null)
    # No NUL, and not blank: the memories refuse both (as for every text they store), so the
    # schema says so too. Blank is Python's: its whitespace also counts \x1c-\x1f.
    correction: (
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=4000,
                pattern=r"^[^\x00]*[^\x00\s\x1c-\x1f\x85][^\x00]*$",
            ),
        ]
        | None
    ) = Field(default=None, json_schema_extra=_unsaid_null)

    @field_validator("rating", mode="before")
    @classmethod
    def _one_to_five(cls, value: Any) -> Any:
        # The library's check and its message ("rating must be an int from 1 to 5, got 7");
        # the schema's bounds say the same. JSON Schema counts 3.0 as an integer; 3.5, "3"
        # and true are not ratings.
        if value is None:
            return value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        try:
            return check_rating(value)
        except InvalidInputError as exc:
            raise PydanticCustomError("rating", str(exc)) from None

    @model_validator(mode="after")
    def _something_given(self) -> FeedbackIn:
        if self.rating is None and self.helpful is None and self.correction is None:
            raise ValueError("give a rating, helpful or a correction")
        return self


class ActionOut(BaseModel):
    id: str
    user_id: str
    session_id: str
    task_id: str | None
    action_type: str
    outcome: str
    tool: str | None
    input: Any
    output: Any
    duration_ms: float | None
    model: str | None
    tokens: int | None
    memory_ids: list[str]
    feedback: dict[str, Any]
    timestamp: datetime


class Problem(BaseModel):
    detail: str


class InvalidProblem(BaseModel):
    """422: FastAPI's list of problems for a malformed request, or one message for a value
    the memories refuse."""

    detail: str | list[dict[str, Any]]


class _Unauthorised(Exception):
    pass


def _agent_of(request: Request, key: Annotated[str | None, Depends(_api_key)]) -> str:
    # The gate checked the key before the body was read and left the agent here; ``key`` is a
    # parameter so that the OpenAPI document describes the header.
    agent_id = request.scope.get(_AGENT_SCOPE_KEY)
    if agent_id is None:
        raise _Unauthorised()
    return agent_id


Agent = Annotated[str, Depends(_agent_of)]
ActionId = Annotated[str, Path(**_ID_RULES)]


class ActionQuery(BaseModel):
    # A misspelt parameter is refused, not silently ignored.
    model_config = ConfigDict(extra="forbid")

    user_id: _ID


class RatesQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action_type: _ID | None = Field(default=None, json_schema_extra=_unsaid_null)
    days: Annotated[int, Field(ge=1, le=3660)] = 30


IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=256,
        pattern=r"^[\x21-\x7e]+$",
        description="Retrying with the same key does not count twice",
    ),
]


#: Where the gate leaves the agent of a request's key, for :func:`_agent_of`.
_AGENT_SCOPE_KEY = "agent_memory.agent_id"
_KEY_REQUIRED = "a valid X-API-Key header is required"


class _BodyTooLarge(HTTPException):
    """Raised by the gate's ``receive`` once a body passes the limit. FastAPI lets an
    HTTPException out of its body reading unchanged, so it is answered like any other:
    ``{"detail": ...}`` with its status and headers."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            f"the request body is larger than {limit} bytes",
            headers={"Connection": "close"},
        )


class _Gate:
    """What every request meets first: plain ASGI, so it runs before FastAPI reads a body.

    - A ``/v1`` request without a valid ``X-API-Key`` is 401 from its headers alone; none of
      its body is read.
    - A body over ``limit`` bytes is 413: at once when its Content-Length says so, otherwise
      as soon as the bytes received pass the limit (a chunked body, or a Content-Length that
      lies), and the rest is never asked for.

    Both answers close the connection when a body was on its way, so the client stops sending
    it rather than the server reading it to keep the connection alive.
    """

    def __init__(self, app: ASGIApp, *, keys: ApiKeys, limit: int) -> None:
        self.app = app
        self.keys = keys
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        declared = _content_length(headers)
        body_coming = b"transfer-encoding" in headers or bool(declared)
        closing = {"Connection": "close"} if body_coming else {}
        if _needs_key(scope):
            agent_id = self.keys.agent(headers.get(b"x-api-key"))
            if agent_id is None:
                refused = {"WWW-Authenticate": "ApiKey", **closing}
                await JSONResponse({"detail": _KEY_REQUIRED}, 401, refused)(scope, receive, send)
                return
            scope[_AGENT_SCOPE_KEY] = agent_id
        if declared is not None and declared > self.limit:
            too_large = _BodyTooLarge(self.limit)
            await JSONResponse({"detail": too_large.detail}, 413, too_large.headers)(
                scope, receive, send
            )
            return

        received = 0

        async def receive_within_limit() -> Message:
            # Raised inside the app, whose exception handling answers it: the same 413.
            nonlocal received
            if received > self.limit:
                raise _BodyTooLarge(self.limit)
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _BodyTooLarge(self.limit)
            return message

        await self.app(scope, receive_within_limit, send)


def _headers(scope: Scope) -> dict[bytes, bytes]:
    """The request's headers by (lower-case) name; the first of a repeated one, as Starlette
    reads them."""
    found: dict[bytes, bytes] = {}
    for name, value in scope["headers"]:
        found.setdefault(name.lower(), value)
    return found


def _content_length(headers: Mapping[bytes, bytes]) -> int | None:
    value = headers.get(b"content-length")
    if value is None or not value.strip().isdigit():
        return None  # absent, or not a number (a server refuses that before the app)
    return int(value)


def _needs_key(scope: Scope) -> bool:
    """Whether the request is for a ``/v1`` route, with the path as the router sees it (under
    ``root_path`` when the app is mounted)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] in ("", "/"):
        path = path[len(root) :]
    return path == "/v1" or path.startswith("/v1/")


def create_app(
    settings: Settings,
    *,
    connection: Connection | None = None,
    embedder: Embedder | None = None,
) -> FastAPI:
    """The feedback API. Without ``connection`` the app connects on startup (and closes on
    shutdown) with ``settings``; with one (and its ``embedder``), it uses them and leaves them
    open. The API never embeds; the embedder only names the vector index the actions use."""
    keys = ApiKeys(settings.api_keys)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if connection is not None:
            yield
            return
        vectors = make_embedder(settings)  # local models load on first use: never here
        try:
            opened = await connect(settings)
            try:
                app.state.connection = opened
                app.state.episodic = EpisodicMemory(opened, vectors)
                yield
            finally:
                await opened.close()
        finally:
            await vectors.aclose()

    app = FastAPI(
        title="agent_memory feedback API",
        version="1",
        description=(__doc__ or "").split("\n\n", 1)[0],
        lifespan=lifespan,
        responses={
            401: {"model": Problem},
            422: {"model": InvalidProblem},
            503: {"model": Problem},
        },
    )
    app.router.route_class = StrictJsonRoute  # before any route: each reads JSON strictly
    app.state.keys = keys
    app.add_middleware(_Gate, keys=keys, limit=settings.api_max_body_bytes)
    if connection is not None:
        if embedder is None:
            raise InvalidInputError("create_app(connection=...) needs the embedder too")
        app.state.connection = connection
        app.state.episodic = EpisodicMemory(connection, embedder)

    @app.exception_handler(_Unauthorised)
    async def unauthorised(request: Request, exc: _Unauthorised) -> JSONResponse:
        return JSONResponse(
            {"detail": _KEY_REQUIRED},
            status_code=401,
            headers={"WWW-Authenticate": "ApiKey"},
        )

    @app.exception_handler(AgentMemoryError)
    async def memory_error(request: Request, exc: AgentMemoryError) -> JSONResponse:
        status = 500
        if isinstance(exc, InvalidInputError):
            status = 422
        elif isinstance(exc, NotFoundError):
            status = 404
        elif isinstance(exc, ConflictError):
            status = 409
        elif isinstance(exc, StorageUnavailableError):
            status = 503
        if status == 500:
            logger.error("api_error", error=type(exc).__name__, path=request.url.path)
            return JSONResponse({"detail": "internal error"}, status_code=500)
        return JSONResponse({"detail": str(exc)}, status_code=status)

    @app.get("/health", tags=["operations"], responses={503: {"model": Problem}})
    async def health(request: Request) -> dict[str, str]:
        """200 when the database answers a ping."""
        await request.app.state.connection.ping()
        return {"status": "ok"}

    @app.post(
        "/v1/actions/{action_id}/feedback",
        tags=["feedback"],
        responses={
            400: {
                "model": Problem,
                "description": "A body that cannot be read: not UTF-8, or JSON with NaN, "
                "Infinity, a number beyond a float's range or an unpaired surrogate",
            },
            404: {"model": Problem},
            409: {"model": Problem},
            413: {"model": Problem, "description": "A body over AGENT_MEMORY_API_MAX_BODY_BYTES"},
        },
    )
    async def add_feedback(
        request: Request,
        agent_id: Agent,
        action_id: ActionId,
        body: FeedbackIn,
        idempotency_key: IdempotencyKey = None,
    ) -> Feedback:
        """Set the feedback on an action and credit it to the memories of its prompt.

        The body replaces the action's earlier feedback entirely: a field left out is cleared
        (a correction alone after a rating removes the rating and its credit). The answer is
        the feedback now stored, with ``null`` for the fields not set, and ``credited``, the
        value each memory of ``memory_ids`` now holds for this action (``null`` when neither
        a rating nor ``helpful`` is given)."""
        episodic: EpisodicMemory = request.app.state.episodic
        feedback = await episodic.add_feedback(
            Tenant(agent_id, body.user_id),
            action_id,
            rating=body.rating,
            helpful=body.helpful,
            correction=body.correction,
            idempotency_key=idempotency_key,
        )
        return feedback

    @app.get("/v1/actions/{action_id}", tags=["feedback"], responses={404: {"model": Problem}})
    async def get_action(
        request: Request,
        agent_id: Agent,
        action_id: ActionId,
        query: Annotated[ActionQuery, Query()],
    ) -> ActionOut:
        """The action with its feedback."""
        episodic: EpisodicMemory = request.app.state.episodic
        action = await episodic.get_action(Tenant(agent_id, query.user_id), action_id)
        data = asdict(action)
        data["memory_ids"] = list(action.memory_ids)
        return ActionOut(**{k: v for k, v in data.items() if k in ActionOut.model_fields})

    @app.get("/v1/success-rates", tags=["feedback"])
    async def success_rates(
        request: Request,
        agent_id: Agent,
        query: Annotated[RatesQuery, Query()],
    ) -> SuccessRates:
        """Counts and rates of the agent's actions over the last ``days`` days."""
        episodic: EpisodicMemory = request.app.state.episodic
        return await episodic.success_rates(agent_id, query.action_type, days=query.days)

    return app

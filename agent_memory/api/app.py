"""The feedback API: an ASGI app (FastAPI) over episodic memory, served by ``agent-memory api``.

Routes (the OpenAPI document is at ``/openapi.json``, interactive docs at ``/docs``):

- ``GET /health``: no key needed; 200 when the database answers, 503 otherwise.
- ``POST /v1/actions/{action_id}/feedback``: rate an action (``user_id`` and at least one of
  ``rating`` 1-5, ``helpful``, ``correction``). The rating lands on the action and is credited
  to the memories that were in that turn's prompt. A retry with the same ``Idempotency-Key``
  header changes nothing and returns the same result; the same key with another body is 409.
- ``GET /v1/actions/{action_id}?user_id=...``: the action with its feedback.
- ``GET /v1/success-rates?action_type=&days=``: counts and rates of the agent's actions.

Every ``/v1`` route needs an ``X-API-Key`` header. Each configured key belongs to one agent
(``AGENT_MEMORY_API_KEYS``, see :class:`~agent_memory.config.Settings`); the agent comes from
the key, never from the request, so a key cannot read or rate another agent's actions, and an
action of another agent or user is 404, exactly like one that does not exist. Keys are compared
in constant time, against every configured key.

Errors have one shape, ``{"detail": ...}``: 401 without a valid key, 404 for unknown ids, 409
for a reused idempotency key, 422 for invalid input (FastAPI's list of problems for malformed
requests, one message for values the memories refuse), 503 when the database is unreachable.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import asdict
from datetime import datetime
from typing import Annotated, Any

import structlog
from fastapi import Depends, FastAPI, Header, Path, Query, Request
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from agent_memory.config import Settings
from agent_memory.errors import (
    AgentMemoryError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    StorageUnavailableError,
)
from agent_memory.memory._common import Tenant
from agent_memory.memory.episodic import EpisodicMemory
from agent_memory.memory.episodic_feedback import Feedback
from agent_memory.memory.episodic_retention import SuccessRates
from agent_memory.mongo.connection import Connection, connect
from agent_memory.providers.embedders.base import Embedder
from agent_memory.providers.registry import make_embedder

__all__ = ["create_app"]

logger = structlog.get_logger(__name__)

#: Ids as the memories accept them (check_id): 1-256 characters, not only whitespace, no
#: control characters.
_ID_RULES: dict[str, Any] = {
    "min_length": 1,
    "max_length": 256,
    "pattern": r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$",
}
_ID = Annotated[str, Field(**_ID_RULES)]
_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="The agent's API key")


class FeedbackIn(BaseModel):
    """Feedback on one action. At least one of rating, helpful and correction."""

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
    rating: Annotated[int, Field(ge=1, le=5)] | SkipJsonSchema[None] = Field(
        default=None, description="1 (bad) to 5 (good)"
    )
    helpful: bool | SkipJsonSchema[None] = None
    # No NUL: the memories refuse it (as every text they store), so the schema says so too.
    correction: (
        Annotated[str, Field(min_length=1, max_length=4000, pattern=r"^[^\x00]*$")]
        | SkipJsonSchema[None]
    ) = None

    @field_validator("rating", mode="before")
    @classmethod
    def _whole_number(cls, value: Any) -> Any:
        # JSON Schema counts 3.0 as an integer; 3.5, "3" and true are not ratings.
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

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
    agent_id = request.app.state.keys.agent(key)
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

    action_type: _ID | SkipJsonSchema[None] = None
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


class _Keys:
    """Configured keys by agent; :meth:`agent` finds a key's agent in constant time."""

    def __init__(self, keys: Mapping[str, list[SecretStr]]) -> None:
        self._keys = [
            (agent_id, key.get_secret_value().encode())
            for agent_id, values in keys.items()
            for key in values
        ]

    def agent(self, given: str | None) -> str | None:
        if not given:
            return None
        candidate = given.encode("utf-8", "surrogateescape")
        found = None
        for agent_id, key in self._keys:  # every key is compared, match or not
            if hmac.compare_digest(candidate, key):
                found = agent_id
        return found


def create_app(
    settings: Settings,
    *,
    connection: Connection | None = None,
    embedder: Embedder | None = None,
) -> FastAPI:
    """The feedback API. Without ``connection`` the app connects on startup (and closes on
    shutdown) with ``settings``; with one (and its ``embedder``), it uses them and leaves them
    open. The API never embeds; the embedder only names the vector index the actions use."""
    keys = _Keys(settings.api_keys)

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
    app.state.keys = keys
    if connection is not None:
        if embedder is None:
            raise InvalidInputError("create_app(connection=...) needs the embedder too")
        app.state.connection = connection
        app.state.episodic = EpisodicMemory(connection, embedder)

    @app.exception_handler(_Unauthorised)
    async def unauthorised(request: Request, exc: _Unauthorised) -> JSONResponse:
        return JSONResponse(
            {"detail": "a valid X-API-Key header is required"},
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
            400: {"model": Problem, "description": "A body that cannot be read (not UTF-8)"},
            404: {"model": Problem},
            409: {"model": Problem},
        },
    )
    async def add_feedback(
        request: Request,
        agent_id: Agent,
        action_id: ActionId,
        body: FeedbackIn,
        idempotency_key: IdempotencyKey = None,
    ) -> Feedback:
        """Record feedback on an action and credit it to the memories of its prompt."""
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

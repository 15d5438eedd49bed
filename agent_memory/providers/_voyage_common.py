"""What the Voyage AI providers (the embedder and the reranker) share: the API key, the
translation of SDK failures into :mod:`agent_memory.errors`, and connections.

Connections: left alone, ``voyageai.AsyncClient`` opens and closes a new
``aiohttp.ClientSession`` for every request, i.e. a fresh TCP and TLS handshake per call.
The SDK reads a caller-supplied session from the ``voyageai.aiosession`` context variable
instead, so each provider object keeps one session per event loop (:class:`SessionPerLoop`),
sets the variable only around its own calls, and closes the session in ``aclose()`` (or,
failing that, when the loop shuts down).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from agent_memory.errors import (
    BadResponseError,
    ConfigurationError,
    DependencyMissingError,
    InvalidInputError,
    MissingCredentialsError,
    ProviderError,
    ProviderUnavailableError,
    RateLimitedError,
)
from agent_memory.providers._retry import parse_retry_after

try:
    import aiohttp
    from voyageai import error as voyage_error
except ImportError as exc:  # pragma: no cover - only without the optional extra
    raise DependencyMissingError("voyageai", "voyage") from exc

__all__ = [
    "API_KEY_ENV",
    "PROVIDER",
    "SDK_ERRORS",
    "TOKEN_SAFETY_FACTOR",
    "LoopState",
    "SessionPerLoop",
    "TokenLimitError",
    "map_error",
    "resolve_api_key",
]

PROVIDER = "voyage"
API_KEY_ENV = "VOYAGE_API_KEY"
#: ``estimate_tokens`` is a character heuristic; Voyage's tokenizers (not available offline)
#: can count up to about twice as many tokens for digits, code and non-Latin alphabets.
TOKEN_SAFETY_FACTOR = 2.0

#: What an SDK call can raise: its own errors, transport errors, and what the SDK's unpacking
#: of an odd body raises (missing keys, bad base64, ...). :func:`map_error` translates each.
SDK_ERRORS: tuple[type[Exception], ...] = (
    voyage_error.VoyageError,
    aiohttp.ClientError,
    TimeoutError,
    AttributeError,
    KeyError,
    TypeError,
    ValueError,
)


def resolve_api_key(api_key: str | None, *, who: str) -> str:
    """``api_key``, else ``VOYAGE_API_KEY``; ``who`` ("the voyage embedder") names the
    provider object in the error when neither is set."""
    key = (api_key or os.environ.get(API_KEY_ENV) or "").strip()
    if not key:
        raise MissingCredentialsError(
            f"{who} needs an API key: set {API_KEY_ENV} or pass api_key=..."
        )
    return key


# --- error mapping ---------------------------------------------------------------------------


class TokenLimitError(InvalidInputError):
    """The API counted more tokens in a batch than it accepts (our estimate fell short)."""


def _detail(exc: Exception) -> str:
    message = getattr(exc, "user_message", None) or str(exc) or type(exc).__name__
    # Unknown 4xx errors carry the whole body and headers in the message.
    return message if len(message) <= 300 else message[:300] + "..."


_UNAVAILABLE = (
    voyage_error.ServiceUnavailableError,
    voyage_error.ServerError,
    voyage_error.Timeout,
    voyage_error.APIConnectionError,
    voyage_error.TryAgain,
)
_REJECTED = (voyage_error.InvalidRequestError, voyage_error.MalformedRequestError)


def map_error(exc: Exception) -> Exception:
    """The agent_memory error for an SDK failure (the caller raises it ``from exc``)."""
    if isinstance(exc, TimeoutError | aiohttp.ClientError):
        # The SDK wraps these, except on a second read of a broken body.
        return ProviderUnavailableError(
            f"cannot reach voyage: {type(exc).__name__}", provider=PROVIDER
        )
    if not isinstance(exc, voyage_error.VoyageError):
        # KeyError, AttributeError, ValueError ... from the SDK unpacking an odd body.
        return BadResponseError(
            f"voyage returned a response that cannot be parsed: {type(exc).__name__}: {exc}",
            provider=PROVIDER,
        )
    status = exc.http_status
    detail = _detail(exc)
    # Status first: a non-JSON error body makes the SDK raise a plain APIError for any code.
    if isinstance(exc, voyage_error.RateLimitError) or status == 429:
        return RateLimitedError(
            f"voyage rate limit: {detail}",
            provider=PROVIDER,
            retry_after=parse_retry_after(exc.headers),
        )
    if isinstance(exc, _UNAVAILABLE) or (status is not None and (status >= 500 or status == 408)):
        return ProviderUnavailableError(
            f"voyage is unavailable{f' (HTTP {status})' if status else ''}: {detail}",
            provider=PROVIDER,
            status_code=status,
        )
    if isinstance(exc, voyage_error.AuthenticationError) or status in (401, 403):
        return ProviderError(
            f"voyage refused the credentials (HTTP {status}): {detail}; check {API_KEY_ENV}",
            provider=PROVIDER,
            status_code=status,
        )
    if isinstance(exc, _REJECTED) or status in (400, 413, 422):
        lowered = detail.lower()
        if "token" in lowered and "batch" in lowered:
            return TokenLimitError(f"voyage rejected the batch as too large: {detail}")
        if "token" in lowered or "too long" in lowered or "context length" in lowered:
            return InvalidInputError(f"voyage rejected a text as too long: {detail}")
        return BadResponseError(
            f"voyage rejected the request (HTTP {status}): {detail}",
            provider=PROVIDER,
            status_code=status,
        )
    if status is not None and 200 <= status < 300:
        return BadResponseError(
            f"voyage returned a body that is not JSON: {detail}", provider=PROVIDER
        )
    return ProviderError(
        f"voyage request failed (HTTP {status}): {detail}", provider=PROVIDER, status_code=status
    )


# --- connections -----------------------------------------------------------------------------


async def _session_keeper(session: aiohttp.ClientSession) -> AsyncIterator[None]:
    """Stays suspended while ``session`` lives; closing the generator closes the session.

    asyncio closes suspended async generators when their loop shuts down (``asyncio.run``,
    pytest-asyncio) and when they are garbage-collected, so the session is closed inside its
    own loop even if ``aclose()`` is never awaited, and no "Unclosed client session" warning
    is left for the garbage collector.
    """
    try:
        yield
    finally:
        await session.close()


@dataclass(slots=True)
class LoopState:
    """What belongs to one event loop: aiohttp sessions and semaphores cannot cross loops."""

    loop: asyncio.AbstractEventLoop
    session: aiohttp.ClientSession
    keeper: AsyncGenerator[None, None]
    slots: asyncio.Semaphore

    @classmethod
    async def open(cls, max_concurrency: int) -> LoopState:
        session = aiohttp.ClientSession()
        keeper = _session_keeper(session)
        await anext(keeper)
        return cls(asyncio.get_running_loop(), session, keeper, asyncio.Semaphore(max_concurrency))

    async def close(self) -> None:
        if self.loop is asyncio.get_running_loop():
            await self.keeper.aclose()
        # From another loop the session cannot be closed here; dropping the last reference
        # lets asyncio finalise the keeper in the loop it belongs to.


class SessionPerLoop:
    """Mixin of the Voyage provider classes: the running loop's :class:`LoopState`.

    ``__init__`` calls :meth:`_init_sessions`; each call takes :meth:`_loop_state` and sets
    ``voyageai.aiosession`` to its session around the SDK call, holding one of its ``slots``
    to bound the requests in flight; ``aclose()`` awaits :meth:`_close_sessions`.
    """

    _state: LoopState | None
    _closed: bool
    _max_concurrency: int

    def _init_sessions(self, max_concurrency: int) -> None:
        if max_concurrency < 1:
            raise ConfigurationError("max_concurrency must be at least 1")
        self._max_concurrency = max_concurrency
        self._state = None
        self._closed = False

    async def _loop_state(self) -> LoopState:
        if self._closed:
            raise RuntimeError(f"this {type(self).__name__} has been closed")
        loop = asyncio.get_running_loop()
        state = self._state
        if state is not None and state.loop is loop:
            return state
        # First use, or use from a new event loop (e.g. a second asyncio.run). Opening does
        # not suspend, so concurrent first calls on one loop cannot open two sessions.
        self._state = fresh = await LoopState.open(self._max_concurrency)
        if state is not None:
            await state.close()
        return fresh

    async def _close_sessions(self) -> None:
        self._closed = True
        state, self._state = self._state, None
        if state is not None:
            await state.close()

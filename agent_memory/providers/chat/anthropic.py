"""Claude through the official ``anthropic`` SDK (installed with ``agent-memory[anthropic]``).

The SDK's own retries are switched off (``max_retries=0``): every attempt goes through
:func:`~agent_memory.providers._retry.call_with_retries`, so one policy governs all providers
and every attempt passes the live-call guard first.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, ClassVar

from agent_memory._log import get_logger
from agent_memory.checks import check_number
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
from agent_memory.providers._live import check_live_call
from agent_memory.providers._retry import RetryPolicy, call_with_retries, parse_retry_after
from agent_memory.providers.chat.base import (
    Block,
    ChatModel,
    ChatRequest,
    ChatResponse,
    Message,
    ResponseComplete,
    StreamEvent,
    TextBlock,
    TextDelta,
    ToolCall,
    Usage,
)

try:
    import anthropic
    import httpx2
    from anthropic.types import Message as SDKMessage
except ImportError as exc:  # pragma: no cover - exercised by a test that hides the SDK
    raise DependencyMissingError("anthropic", "anthropic") from exc

__all__ = ["AnthropicChatModel", "strict_output_schema"]

logger = get_logger(__name__)

_PROVIDER = "anthropic"
_API_KEY_ENV = "ANTHROPIC_API_KEY"
_DEFAULT_RETRY = RetryPolicy()
# The API rejects requests with more cache breakpoints than this.
_MAX_CACHE_BREAKPOINTS = 4
# 429s that no amount of waiting within our retry budget will clear.
_SPEND_LIMIT_CODES = frozenset({"contract_spend_limit_reached", "enforced_spend_limit_reached"})
# Error types the API reports inside an already-open (HTTP 200) event stream.
_STREAM_UNAVAILABLE_TYPES = frozenset({"overloaded_error", "api_error", "timeout_error"})


def strict_output_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Make a pydantic ``model_json_schema()`` acceptable to Anthropic structured outputs.

    Delegates to the SDK's ``transform_schema``: it closes every object
    (``additionalProperties: false``), keeps ``$defs``/``$ref`` and moves unsupported keywords
    (``default``, ``minimum`` ...) into descriptions. Free-form values (``Any``) cannot be
    expressed and are rejected here rather than by the API.
    """
    try:
        return anthropic.transform_schema(schema)
    except ValueError as exc:
        raise InvalidInputError(
            f"this output schema cannot be used for Anthropic structured output: {exc}"
        ) from exc


def _map_error(exc: Exception) -> ProviderError:
    """The agent_memory error for an SDK failure (the caller raises it ``from exc``)."""
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        detail = getattr(exc, "api_message", None) or exc.message
        if status == 429 and getattr(exc, "error_code", None) in _SPEND_LIMIT_CODES:
            return ProviderError(
                f"Anthropic spend limit reached: {detail}", provider=_PROVIDER, status_code=status
            )
        if status == 429:
            return RateLimitedError(
                f"Anthropic rate limit: {detail}",
                provider=_PROVIDER,
                retry_after=parse_retry_after(exc.response.headers),
            )
        if status in (401, 403):
            return ProviderError(
                f"Anthropic refused the credentials (HTTP {status}): {detail}; "
                f"check {_API_KEY_ENV}",
                provider=_PROVIDER,
                status_code=status,
            )
        if status >= 500 or status == 408:
            return ProviderUnavailableError(
                f"Anthropic is unavailable (HTTP {status}): {detail}",
                provider=_PROVIDER,
                status_code=status,
            )
        if 400 <= status < 500:
            return BadResponseError(
                f"Anthropic rejected the request (HTTP {status}): {detail}",
                provider=_PROVIDER,
                status_code=status,
            )
        # An ``event: error`` inside a stream arrives with the stream's 200 status.
        error_type = getattr(exc, "type", None)
        if error_type == "rate_limit_error":
            return RateLimitedError(f"Anthropic rate limit: {detail}", provider=_PROVIDER)
        if error_type in _STREAM_UNAVAILABLE_TYPES:
            return ProviderUnavailableError(
                f"Anthropic failed mid-stream ({error_type}): {detail}", provider=_PROVIDER
            )
        return BadResponseError(f"Anthropic stream error: {detail}", provider=_PROVIDER)
    if isinstance(exc, anthropic.APITimeoutError):
        return ProviderUnavailableError("Anthropic request timed out", provider=_PROVIDER)
    if isinstance(exc, anthropic.APIConnectionError):
        return ProviderUnavailableError(
            f"cannot connect to Anthropic: {exc.message}", provider=_PROVIDER
        )
    if isinstance(exc, anthropic.APIResponseValidationError | ValueError):
        # ValueError covers a body that is not JSON at all (json.JSONDecodeError).
        return BadResponseError(
            f"Anthropic returned a response that cannot be parsed: {exc}", provider=_PROVIDER
        )
    return ProviderError(f"Anthropic request failed: {exc}", provider=_PROVIDER)


def _block_param(block: Block) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolCall):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}
    return {
        "type": "tool_result",
        "tool_use_id": block.tool_call_id,
        "content": block.content,
        "is_error": block.is_error,
    }


def _message_param(message: Message) -> dict[str, Any]:
    # The API rejects empty text blocks; they only appear as padding next to tool blocks.
    blocks = [b for b in message.content if not (isinstance(b, TextBlock) and not b.text)] or list(
        message.content
    )
    return {"role": message.role, "content": [_block_param(b) for b in blocks]}


def _count(value: object) -> int:
    return value if isinstance(value, int) else 0


def _to_response(message: object, fallback_model: str) -> ChatResponse:
    """Translate an SDK message, refusing shapes the lenient SDK parser lets through."""
    content = getattr(message, "content", None)
    usage = getattr(message, "usage", None)
    if not isinstance(message, SDKMessage) or not isinstance(content, list) or usage is None:
        raise BadResponseError(
            "Anthropic returned something that is not a message", provider=_PROVIDER
        )
    blocks: list[Block] = []
    for block in content:
        # Unknown block types are parsed leniently into the wrong class, so go by ``type``.
        kind = getattr(block, "type", None)
        if kind == "text":
            text = getattr(block, "text", None)
            if not isinstance(text, str):
                raise BadResponseError("a text block without text", provider=_PROVIDER)
            blocks.append(TextBlock(text))
        elif kind == "tool_use":
            call_id, name = getattr(block, "id", None), getattr(block, "name", None)
            arguments = getattr(block, "input", None)
            if not (isinstance(call_id, str) and isinstance(name, str)):
                raise BadResponseError("a tool_use block without id or name", provider=_PROVIDER)
            if not isinstance(arguments, dict):
                raise BadResponseError(
                    "a tool_use block whose input is not an object", provider=_PROVIDER
                )
            blocks.append(ToolCall(call_id, name, dict(arguments)))
        # Thinking and server-tool blocks have no place in the provider-neutral reply.
    return ChatResponse(
        content=tuple(blocks),
        stop_reason=message.stop_reason or "unknown",
        model=message.model or fallback_model,
        usage=Usage(
            input_tokens=_count(usage.input_tokens),
            output_tokens=_count(usage.output_tokens),
            cache_read_tokens=_count(usage.cache_read_input_tokens),
            cache_write_tokens=_count(usage.cache_creation_input_tokens),
        ),
    )


def _ends_quiet_part(event: Any) -> bool:
    """Whether ``event`` is the first one a retry could not take back: text, or the end."""
    return (event.type == "text" and bool(event.text)) or event.type == "message_stop"


def _ended_early() -> ProviderUnavailableError:
    return ProviderUnavailableError(
        "the Anthropic stream ended before message_stop", provider=_PROVIDER
    )


class AnthropicChatModel(ChatModel):
    """Claude via ``anthropic.AsyncAnthropic``.

    Cacheable system parts get ``cache_control`` so the stable prefix of the prompt is reused
    across turns; structured output uses ``output_config.format``. Errors come out as
    :mod:`agent_memory.errors` classes after bounded retries.

    Example::

        async with AnthropicChatModel("claude-sonnet-5-5") as chat:
            reply = await chat.generate(ChatRequest((Message.user("Hello"),)))
            print(reply.text)

    ``http_client`` (an ``httpx2.AsyncClient``) is the seam for tests and custom transports;
    when given, the caller owns and closes it. ``sleep`` is what retries wait with.

    ``timeout`` bounds each attempt by the clock: a reply (or, when streaming, the opening of
    the stream) that has not arrived within it counts as a timeout and is retried. The SDK's
    own timeout applies to each read only, so a server that trickles bytes would otherwise
    hold an attempt for as long as it likes. Once a stream is open, each event must arrive
    within ``timeout`` but the stream as a whole is not cut: a long answer may take longer.
    """

    provider: ClassVar[str] = _PROVIDER

    def __init__(
        self,
        model: str = "claude-sonnet-5-5",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60,
        retry: RetryPolicy = _DEFAULT_RETRY,
        http_client: httpx2.AsyncClient | None = None,
        max_tokens_cap: int | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        key = api_key or os.environ.get(_API_KEY_ENV)
        if not key:
            raise MissingCredentialsError(
                f"the anthropic chat provider needs an API key: set {_API_KEY_ENV} "
                "or pass api_key=..."
            )
        if max_tokens_cap is not None and max_tokens_cap < 1:
            raise InvalidInputError("max_tokens_cap must be at least 1")
        self.timeout = float(
            check_number(timeout, "timeout", above=0, finite=False, error=ConfigurationError)
        )
        self.model = model
        self.max_tokens_cap = max_tokens_cap
        self._retry = retry
        self._sleep = sleep
        self._owns_client = http_client is None
        self._closed = False
        self._client = anthropic.AsyncAnthropic(
            api_key=key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=http_client,
        )

    @property
    def base_url(self) -> str:
        """The endpoint requests go to (the SDK may take it from ``ANTHROPIC_BASE_URL``)."""
        return str(self._client.base_url)

    # --- request translation ------------------------------------------------------------

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        max_tokens = request.max_tokens
        if self.max_tokens_cap is not None:
            max_tokens = min(max_tokens, self.max_tokens_cap)
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "max_tokens": max_tokens,
            "messages": [_message_param(m) for m in request.messages],
        }
        parts = [part for part in request.system if part.text]
        if parts:
            # The last breakpoints cover the longest stable prefix.
            cached = [i for i, part in enumerate(parts) if part.cache][-_MAX_CACHE_BREAKPOINTS:]
            system: list[dict[str, Any]] = []
            for i, part in enumerate(parts):
                block: dict[str, Any] = {"type": "text", "text": part.text}
                if i in cached:
                    block["cache_control"] = {"type": "ephemeral"}
                system.append(block)
            params["system"] = system
        if request.tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        if request.output_schema is not None:
            params["output_config"] = {
                "format": {
                    "type": "json_schema",
                    "schema": strict_output_schema(request.output_schema),
                }
            }
        return params

    # --- calls --------------------------------------------------------------------------

    async def generate(self, request: ChatRequest) -> ChatResponse:
        params = self._params(request)
        started = time.perf_counter()

        async def attempt() -> ChatResponse:
            check_live_call(self.provider, self.base_url)
            try:
                async with asyncio.timeout(self.timeout):
                    message = await self._client.messages.create(**params)
            except TimeoutError as exc:
                raise self._timed_out() from exc
            except (anthropic.AnthropicError, ValueError) as exc:
                raise _map_error(exc) from exc
            return _to_response(message, params["model"])

        try:
            response = await call_with_retries(
                attempt, policy=self._retry, provider=self.provider, sleep=self._sleep
            )
        except ProviderError as exc:
            self._log_failed(exc, started, streamed=False)
            raise
        self._log_completed(response, started, streamed=False)
        return response

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Yield text deltas as Claude writes them, then the complete reply.

        Everything up to the first text (opening the stream, an ``overloaded_error`` event
        or a stall before any text) is retried like :meth:`generate`; a failure after text
        has been yielded is raised as is, since repeating the call would repeat that text.
        """
        params = self._params(request)
        started = time.perf_counter()

        async def open_stream() -> tuple[Any, AsyncIterator[Any], Any]:
            check_live_call(self.provider, self.base_url)
            # Created only after the guard: an unawaited request coroutine would warn.
            manager = self._client.messages.stream(**params)
            try:
                async with asyncio.timeout(self.timeout):
                    sdk_stream = await manager.__aenter__()
            except TimeoutError as exc:
                raise self._timed_out() from exc
            except (anthropic.AnthropicError, ValueError) as exc:
                raise _map_error(exc) from exc
            iterator = sdk_stream.__aiter__()
            try:
                event = await self._next_event(iterator)
                while event is not None and not _ends_quiet_part(event):
                    event = await self._next_event(iterator)
                if event is None:
                    raise _ended_early()
            except BaseException:
                await sdk_stream.close()
                raise
            return sdk_stream, iterator, event

        try:
            sdk_stream, iterator, event = await call_with_retries(
                open_stream, policy=self._retry, provider=self.provider, sleep=self._sleep
            )
        except ProviderError as exc:
            self._log_failed(exc, started, streamed=True)
            raise
        try:
            stopped, final = False, None
            while event is not None:
                if event.type == "text" and event.text:
                    yield TextDelta(event.text)
                elif event.type == "message_stop":
                    stopped, final = True, getattr(event, "message", None)
                    break
                event = await self._next_event(iterator)
            if not stopped:
                raise _ended_early()
            response = _to_response(final, params["model"])
        except ProviderError as exc:
            self._log_failed(exc, started, streamed=True)
            raise
        finally:
            await sdk_stream.close()
        self._log_completed(response, started, streamed=True)
        yield ResponseComplete(response)

    async def _next_event(self, iterator: AsyncIterator[Any]) -> Any | None:
        """The stream's next event (``None`` at its end), within ``timeout``. Only the SDK's
        parsing is guarded here, never the consumer's code at ``yield``."""
        try:
            async with asyncio.timeout(self.timeout):
                return await iterator.__anext__()
        except StopAsyncIteration:
            return None
        except TimeoutError as exc:
            raise self._timed_out() from exc
        except (anthropic.AnthropicError, ValueError) as exc:
            raise _map_error(exc) from exc

    # --- housekeeping -------------------------------------------------------------------

    def _timed_out(self) -> ProviderUnavailableError:
        return ProviderUnavailableError(
            f"Anthropic did not answer within {self.timeout:g} s", provider=self.provider
        )

    def _log_completed(self, response: ChatResponse, started: float, *, streamed: bool) -> None:
        logger.info(
            "chat_completed",
            provider=self.provider,
            model=self.model,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            cache_read_tokens=response.usage.cache_read_tokens,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
            streamed=streamed,
        )

    def _log_failed(self, exc: ProviderError, started: float, *, streamed: bool) -> None:
        logger.warning(
            "chat_failed",
            provider=self.provider,
            model=self.model,
            error=type(exc).__name__,
            status_code=exc.status_code,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
            streamed=streamed,
        )

    async def aclose(self) -> None:
        if self._owns_client and not self._closed:
            self._closed = True
            await self._client.close()

"""A scriptable chat model for tests: replies come from a list, every request is recorded."""

from __future__ import annotations

import asyncio
import inspect
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import ClassVar, TypeAlias

from agent_memory.providers.chat.base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    ResponseComplete,
    StreamEvent,
    TextDelta,
    text_response,
)

__all__ = ["FakeChatModel", "ScriptedReply"]

#: One scripted reply: text, a full response (e.g. with tool calls), a function of the
#: request (sync or async) returning either, or an exception to raise.
ScriptedReply: TypeAlias = (
    str
    | ChatResponse
    | Callable[[ChatRequest], "str | ChatResponse | Awaitable[str | ChatResponse]"]
    | BaseException
)

_CHUNK_BOUNDARY = re.compile(r"(?<= )")


class FakeChatModel(ChatModel):
    """Answers from a script, in order, and remembers what it was asked.

    Example::

        chat = FakeChatModel(["Hi!", ValueError("boom"), lambda req: req.messages[-1].text])
        await chat.generate(request)   # "Hi!"
        await chat.generate(request)   # raises ValueError("boom")
        await chat.generate(request)   # echoes the last message
        chat.requests                  # the three requests

    ``default`` answers once the script is used up (otherwise that is an error). ``delay``
    is the time a reply takes; when streaming, ``first_token_delay`` passes before the first
    chunk and the rest of ``delay`` is spread over the remaining chunks.
    """

    provider: ClassVar[str] = "fake"

    def __init__(
        self,
        responses: Iterable[ScriptedReply] = (),
        *,
        default: ScriptedReply | None = None,
        model: str = "fake-chat-v1",
        delay: float = 0.0,
        first_token_delay: float = 0.0,
    ) -> None:
        if delay < 0 or first_token_delay < 0:
            raise ValueError("delays cannot be negative")
        self.model = model
        self.default = default
        self.delay = delay
        self.first_token_delay = first_token_delay
        self._script: deque[ScriptedReply] = deque(responses)
        self._used = 0
        self.requests: list[ChatRequest] = []

    @property
    def remaining(self) -> int:
        """Scripted replies not yet used (the default is not counted)."""
        return len(self._script)

    async def _reply(self, request: ChatRequest) -> ChatResponse:
        if self._script:
            reply = self._script.popleft()
        elif self.default is not None:
            reply = self.default
        else:
            raise RuntimeError(
                f"FakeChatModel has no scripted response left ({self._used} used); "
                "script more responses or pass default=..."
            )
        self._used += 1
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(request)
            if inspect.isawaitable(reply):
                reply = await reply
        if isinstance(reply, ChatResponse):
            return reply
        if isinstance(reply, str):
            return text_response(request, reply, model=request.model or self.model)
        raise TypeError(f"a scripted reply must give str or ChatResponse, not {type(reply)!r}")

    async def generate(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)  # when it arrives, before the reply's delay
        if self.delay:
            await asyncio.sleep(self.delay)
        return await self._reply(request)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        response = await self._reply(request)
        chunks = [chunk for chunk in _CHUNK_BOUNDARY.split(response.text) if chunk]
        if self.first_token_delay:
            await asyncio.sleep(self.first_token_delay)
        rest = max(self.delay - self.first_token_delay, 0.0)
        for index, chunk in enumerate(chunks):
            if index and rest:
                await asyncio.sleep(rest / (len(chunks) - 1))
            yield TextDelta(chunk)
        if len(chunks) < 2 and rest:
            await asyncio.sleep(rest)
        yield ResponseComplete(response)

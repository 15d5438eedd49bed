"""The chat model interface, independent of any provider's SDK.

A request is a system prompt (parts, the stable ones marked cacheable), messages made of
blocks (text, tool calls, tool results), tool specifications and optionally a JSON schema the
answer must follow. Providers translate these to their API and back.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from agent_memory._tokens import estimate_tokens
from agent_memory.errors import BadResponseError, InvalidInputError

__all__ = [
    "Block",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "Message",
    "ResponseComplete",
    "StreamEvent",
    "SystemPart",
    "TextBlock",
    "TextDelta",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "text_response",
]

ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asks for a tool to be run with ``arguments``."""

    id: str
    name: str
    arguments: dict[str, Any]
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned, sent back to the model in a user message."""

    tool_call_id: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"


Block = TextBlock | ToolCall | ToolResult


@dataclass(frozen=True, slots=True)
class Message:
    role: Literal["user", "assistant"]
    content: tuple[Block, ...]

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", (TextBlock(text),))

    @classmethod
    def assistant(cls, text: str) -> Message:
        return cls("assistant", (TextBlock(text),))

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))


@dataclass(frozen=True, slots=True)
class SystemPart:
    """A piece of the system prompt. ``cache=True`` marks the end of a stable prefix that
    providers with prompt caching may reuse across turns. ``instructions=True`` says the part
    tells the model how to behave rather than giving it context to answer from (the offline
    model, which answers by quoting context, never quotes such a part)."""

    text: str
    cache: bool = False
    instructions: bool = False


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True, slots=True)
class ChatRequest:
    messages: tuple[Message, ...]
    system: tuple[SystemPart, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 1024
    #: JSON schema the reply must follow (structured output); the reply is then one JSON text.
    output_schema: dict[str, Any] | None = None
    #: The provider's model for this request; None uses the chat model's own.
    model: str | None = None

    def __post_init__(self) -> None:
        if not self.messages:
            raise InvalidInputError("a chat request needs at least one message")
        if self.model is not None and (
            not isinstance(self.model, str) or not self.model.strip() or len(self.model) > 200
        ):
            raise InvalidInputError("model must be a non-empty name of at most 200 characters")
        if self.messages[0].role != "user":
            raise InvalidInputError("the first message of a chat request must be from the user")
        if self.max_tokens < 1:
            raise InvalidInputError("max_tokens must be at least 1")

    @property
    def system_text(self) -> str:
        return "\n\n".join(part.text for part in self.system if part.text)


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ChatResponse:
    content: tuple[Block, ...]
    stop_reason: str
    model: str
    usage: Usage = Usage()
    #: The model found nothing to answer from in what it was given, so ``text`` is a stand-in
    #: ("nothing matches", a greeting), not an answer. Only a model that can tell (the
    #: extractive offline model) sets it; a generative model's reply leaves it ``False``.
    found_nothing: bool = False

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [block for block in self.content if isinstance(block, ToolCall)]

    def as_message(self) -> Message:
        return Message("assistant", self.content)


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ResponseComplete:
    response: ChatResponse


StreamEvent = TextDelta | ResponseComplete


def text_response(request: ChatRequest, text: str, *, model: str) -> ChatResponse:
    """A plain-text reply to ``request`` with estimated token usage (for local models)."""
    prompt = [request.system_text, *(message.text for message in request.messages)]
    return ChatResponse(
        content=(TextBlock(text),),
        stop_reason="end_turn",
        model=model,
        usage=Usage(
            input_tokens=sum(estimate_tokens(part) for part in prompt),
            output_tokens=estimate_tokens(text),
        ),
    )


def parse_structured(response: ChatResponse, schema: type[ModelT], *, provider: str) -> ModelT:
    """Validate a structured-output reply against ``schema``; a broken reply is an error."""
    text = response.text.strip()
    if not text:
        raise BadResponseError("the model returned an empty structured output", provider=provider)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadResponseError(
            f"the model's structured output is not valid JSON: {exc.msg} at {exc.pos}",
            provider=provider,
        ) from exc
    try:
        return schema.model_validate(data)
    except PydanticValidationError as exc:
        raise BadResponseError(
            f"the model's structured output does not match {schema.__name__}: "
            f"{exc.error_count()} error(s)",
            provider=provider,
        ) from exc


class ChatModel(ABC):
    """Generates replies. Subclasses implement :meth:`generate` and may override :meth:`stream`.

    ``offline`` is ``True`` for models that do not call a language model at all; the agent
    labels their answers so nobody mistakes them for a real model's.
    """

    provider: ClassVar[str]
    offline: ClassVar[bool] = False
    model: str

    @abstractmethod
    async def generate(self, request: ChatRequest) -> ChatResponse:
        """Return the model's complete reply to ``request``."""

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Yield the reply's text as it is produced, then one :class:`ResponseComplete`.

        The default produces the whole reply at once; providers that can stream override it.
        """
        response = await self.generate(request)
        if response.text:
            yield TextDelta(response.text)
        yield ResponseComplete(response)

    async def generate_structured(self, request: ChatRequest, schema: type[ModelT]) -> ModelT:
        """Ask for a reply that follows ``schema`` and return it validated."""
        structured = replace(request, output_schema=schema.model_json_schema(), tools=())
        response = await self.generate(structured)
        return parse_structured(response, schema, provider=self.provider)

    def count_tokens(self, texts: Sequence[str]) -> int:
        """Estimated prompt tokens of ``texts`` (used for budgets, never for billing)."""
        return sum(estimate_tokens(text) for text in texts)

    async def aclose(self) -> None:
        """Release clients the model opened. Safe to call more than once."""

    async def __aenter__(self) -> ChatModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"

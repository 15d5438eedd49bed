"""Chat models: the provider-neutral interface and its implementations.

``AnthropicChatModel`` is imported on first use, so this package imports without the optional
``anthropic`` SDK; using it without the SDK raises
:class:`~agent_memory.errors.DependencyMissingError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory._lazy import lazy_names
from agent_memory.providers.chat.base import (
    Block,
    ChatModel,
    ChatRequest,
    ChatResponse,
    Message,
    ResponseComplete,
    StreamEvent,
    SystemPart,
    TextBlock,
    TextDelta,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    parse_structured,
)
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.providers.chat.offline import OfflineChatModel

if TYPE_CHECKING:
    from agent_memory.providers.chat.anthropic import AnthropicChatModel

__all__ = [
    "AnthropicChatModel",
    "Block",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "FakeChatModel",
    "Message",
    "OfflineChatModel",
    "ResponseComplete",
    "StreamEvent",
    "SystemPart",
    "TextBlock",
    "TextDelta",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "parse_structured",
]

__getattr__, __dir__ = lazy_names(__name__, __all__)

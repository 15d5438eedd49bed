"""agent_memory: memory for AI agents, stored in MongoDB.

>>> import agent_memory
>>> sorted(agent_memory.__all__)[:3]
['AgentMemoryError', 'AnthropicChatModel', 'AuthenticationError']
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from agent_memory._version import __version__
from agent_memory.config import Settings, load_settings
from agent_memory.errors import (
    AgentMemoryError,
    AuthenticationError,
    BadResponseError,
    ConfigurationError,
    ConflictError,
    DependencyMissingError,
    EmbeddedServerError,
    EmbeddingMismatchError,
    InvalidInputError,
    InvalidTransitionError,
    LiveCallBlockedError,
    MissingCredentialsError,
    NotFoundError,
    NotInitialisedError,
    ProviderError,
    ProviderUnavailableError,
    RateLimitedError,
    SearchUnavailableError,
    StorageError,
    StorageUnavailableError,
    UnknownProviderError,
)

if TYPE_CHECKING:
    from agent_memory.agent.config import AgentConfig
    from agent_memory.agent.mcp import McpServer
    from agent_memory.agent.rag_agent import AnswerDelta, RAGAgent, TurnResult
    from agent_memory.langgraph.checkpointer import MongoCheckpointer
    from agent_memory.langgraph.store import MemoryStore
    from agent_memory.memory.knowledge.base import SharedKnowledge
    from agent_memory.memory.system import MemorySystem
    from agent_memory.mongo.capabilities import Capabilities
    from agent_memory.mongo.connection import Connection, connect
    from agent_memory.mongo.embedded import EmbeddedServer
    from agent_memory.mongo.indexes import IndexManager, IndexState
    from agent_memory.mongo.search import SearchHit, SearchQuery, SourceScore
    from agent_memory.providers.chat.anthropic import AnthropicChatModel
    from agent_memory.providers.chat.base import ChatModel, ChatRequest, ChatResponse, Message
    from agent_memory.providers.chat.fake import FakeChatModel
    from agent_memory.providers.chat.offline import OfflineChatModel
    from agent_memory.providers.embedders.base import Embedder, EmbeddingSignature
    from agent_memory.providers.embedders.fake import FakeEmbedder
    from agent_memory.providers.embedders.local import LocalEmbedder
    from agent_memory.providers.embedders.voyage import VoyageEmbedder
    from agent_memory.providers.registry import make_chat_model, make_embedder, make_reranker
    from agent_memory.providers.rerankers.base import Reranker, RerankScore
    from agent_memory.providers.rerankers.fake import FakeReranker
    from agent_memory.providers.rerankers.voyage import VoyageReranker
    from agent_memory.tenancy import Tenant

# Imported on first use, so `import agent_memory` stays light and optional SDKs stay optional.
_LAZY = {
    "AgentConfig": "agent_memory.agent.config",
    "AnswerDelta": "agent_memory.agent.rag_agent",
    "McpServer": "agent_memory.agent.mcp",
    "MemoryStore": "agent_memory.langgraph.store",
    "MemorySystem": "agent_memory.memory.system",
    "MongoCheckpointer": "agent_memory.langgraph.checkpointer",
    "RAGAgent": "agent_memory.agent.rag_agent",
    "SharedKnowledge": "agent_memory.memory.knowledge.base",
    "Tenant": "agent_memory.tenancy",
    "TurnResult": "agent_memory.agent.rag_agent",
    "Capabilities": "agent_memory.mongo.capabilities",
    "Connection": "agent_memory.mongo.connection",
    "connect": "agent_memory.mongo.connection",
    "EmbeddedServer": "agent_memory.mongo.embedded",
    "IndexManager": "agent_memory.mongo.indexes",
    "IndexState": "agent_memory.mongo.indexes",
    "SearchHit": "agent_memory.mongo.search",
    "SearchQuery": "agent_memory.mongo.search",
    "SourceScore": "agent_memory.mongo.search",
    "AnthropicChatModel": "agent_memory.providers.chat.anthropic",
    "ChatModel": "agent_memory.providers.chat.base",
    "ChatRequest": "agent_memory.providers.chat.base",
    "ChatResponse": "agent_memory.providers.chat.base",
    "Message": "agent_memory.providers.chat.base",
    "FakeChatModel": "agent_memory.providers.chat.fake",
    "OfflineChatModel": "agent_memory.providers.chat.offline",
    "Embedder": "agent_memory.providers.embedders.base",
    "EmbeddingSignature": "agent_memory.providers.embedders.base",
    "FakeEmbedder": "agent_memory.providers.embedders.fake",
    "LocalEmbedder": "agent_memory.providers.embedders.local",
    "VoyageEmbedder": "agent_memory.providers.embedders.voyage",
    "Reranker": "agent_memory.providers.rerankers.base",
    "RerankScore": "agent_memory.providers.rerankers.base",
    "FakeReranker": "agent_memory.providers.rerankers.fake",
    "VoyageReranker": "agent_memory.providers.rerankers.voyage",
    "make_chat_model": "agent_memory.providers.registry",
    "make_embedder": "agent_memory.providers.registry",
    "make_reranker": "agent_memory.providers.registry",
}

__all__ = [
    "AgentConfig",
    "AgentMemoryError",
    "AnswerDelta",
    "AnthropicChatModel",
    "AuthenticationError",
    "BadResponseError",
    "Capabilities",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "ConfigurationError",
    "ConflictError",
    "Connection",
    "DependencyMissingError",
    "EmbeddedServer",
    "EmbeddedServerError",
    "Embedder",
    "EmbeddingMismatchError",
    "EmbeddingSignature",
    "FakeChatModel",
    "FakeEmbedder",
    "FakeReranker",
    "IndexManager",
    "IndexState",
    "InvalidInputError",
    "InvalidTransitionError",
    "LiveCallBlockedError",
    "LocalEmbedder",
    "McpServer",
    "MemoryStore",
    "MemorySystem",
    "Message",
    "MissingCredentialsError",
    "MongoCheckpointer",
    "NotFoundError",
    "NotInitialisedError",
    "OfflineChatModel",
    "ProviderError",
    "ProviderUnavailableError",
    "RAGAgent",
    "RateLimitedError",
    "RerankScore",
    "Reranker",
    "SearchHit",
    "SearchQuery",
    "SearchUnavailableError",
    "Settings",
    "SharedKnowledge",
    "SourceScore",
    "StorageError",
    "StorageUnavailableError",
    "Tenant",
    "TurnResult",
    "UnknownProviderError",
    "VoyageEmbedder",
    "VoyageReranker",
    "__version__",
    "connect",
    "load_settings",
    "make_chat_model",
    "make_embedder",
    "make_reranker",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_memory' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

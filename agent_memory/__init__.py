"""agent_memory: memory for AI agents, stored in MongoDB.

>>> import agent_memory
>>> sorted(agent_memory.__all__)[:3]
['AgentMemoryError', 'AnthropicChatModel', 'AuthenticationError']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory._lazy import lazy_names
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

# Loaded on first use (agent_memory._lazy), so `import agent_memory` stays light and optional
# SDKs stay optional; these imports are also the table of where each name lives.
if TYPE_CHECKING:
    from agent_memory.agent.config import AgentConfig
    from agent_memory.agent.mcp import McpServer
    from agent_memory.agent.rag_agent import AnswerDelta, RAGAgent, TurnResult
    from agent_memory.langgraph.checkpointer import MongoCheckpointer
    from agent_memory.langgraph.namespaces import NamespaceMap
    from agent_memory.langgraph.store import MemoryStore
    from agent_memory.memory.conversation import ConversationMemory, NewMessage
    from agent_memory.memory.episodic import EpisodicMemory
    from agent_memory.memory.knowledge import KnowledgeBase, SharedKnowledge
    from agent_memory.memory.long_term import LongTermMemory, NewMemory, ProfileMemory
    from agent_memory.memory.system import MemorySystem
    from agent_memory.memory.working import WorkingMemory
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
    from agent_memory.providers.embedders.langchain import LangChainEmbedder
    from agent_memory.providers.embedders.local import LocalEmbedder
    from agent_memory.providers.embedders.voyage import VoyageEmbedder
    from agent_memory.providers.registry import make_chat_model, make_embedder, make_reranker
    from agent_memory.providers.rerankers.base import Reranker, RerankScore
    from agent_memory.providers.rerankers.fake import FakeReranker
    from agent_memory.providers.rerankers.voyage import VoyageReranker
    from agent_memory.tenancy import Tenant

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
    "ConversationMemory",
    "DependencyMissingError",
    "EmbeddedServer",
    "EmbeddedServerError",
    "Embedder",
    "EmbeddingMismatchError",
    "EmbeddingSignature",
    "EpisodicMemory",
    "FakeChatModel",
    "FakeEmbedder",
    "FakeReranker",
    "IndexManager",
    "IndexState",
    "InvalidInputError",
    "InvalidTransitionError",
    "KnowledgeBase",
    "LangChainEmbedder",
    "LiveCallBlockedError",
    "LocalEmbedder",
    "LongTermMemory",
    "McpServer",
    "MemoryStore",
    "MemorySystem",
    "Message",
    "MissingCredentialsError",
    "MongoCheckpointer",
    "NamespaceMap",
    "NewMemory",
    "NewMessage",
    "NotFoundError",
    "NotInitialisedError",
    "OfflineChatModel",
    "ProfileMemory",
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
    "WorkingMemory",
    "__version__",
    "connect",
    "load_settings",
    "make_chat_model",
    "make_embedder",
    "make_reranker",
]

__getattr__, __dir__ = lazy_names(__name__, __all__)

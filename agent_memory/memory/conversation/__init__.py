"""Conversation memory (short-term): sessions, their messages, and rolling summaries.

- ``memory.py``: :class:`ConversationMemory`, the store's API.
- ``records.py``: the stored shapes (messages, sessions) and the checks on their values.
- ``queries.py``: the filters and updates the store sends, as plain functions.
- ``render.py``: the context window a prompt gets, fitted to a token budget.
- ``store.py``: the two collections and the writes that keep them consistent.
"""

from agent_memory.memory.conversation.memory import ConversationMemory
from agent_memory.memory.conversation.records import (
    ConversationConfig,
    ConversationMessage,
    NewMessage,
    Session,
    SummaryResult,
)
from agent_memory.memory.conversation.render import ConversationContext

__all__ = [
    "ConversationConfig",
    "ConversationContext",
    "ConversationMemory",
    "ConversationMessage",
    "NewMessage",
    "Session",
    "SummaryResult",
]

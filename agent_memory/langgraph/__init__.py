"""LangGraph integration: thread state and long-term memory persisted in MongoDB.

- :class:`MongoCheckpointer`: an async checkpointer on ``AsyncMongoClient`` (passes the
  ``langgraph-checkpoint-conformance`` base capabilities).
- :class:`MemoryStore`: this framework's long-term memory as a LangGraph ``BaseStore``, so any
  LangGraph agent can put, get, search and list memories (seed 001).

>>> from agent_memory.langgraph import MemoryStore, MongoCheckpointer   # doctest: +SKIP
"""

from __future__ import annotations

from agent_memory.langgraph.checkpointer import MongoCheckpointer, ThreadOwnedError
from agent_memory.langgraph.store import MemoryStore

__all__ = ["MemoryStore", "MongoCheckpointer", "ThreadOwnedError"]

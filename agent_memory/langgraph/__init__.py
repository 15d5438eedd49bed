"""LangGraph integration: thread state and long-term memory persisted in MongoDB.

- :class:`MongoCheckpointer`: an async checkpointer on ``AsyncMongoClient`` (passes the
  ``langgraph-checkpoint-conformance`` suite with every capability).
- :class:`MemoryStore`: this framework's long-term memory as a LangGraph ``BaseStore``, so any
  LangGraph agent can put, get, search and list items (seed 001); :class:`NamespaceMap` says
  which namespace label holds the user. See docs/langgraph.md.

>>> from agent_memory.langgraph import MemoryStore, MongoCheckpointer   # doctest: +SKIP
"""

from __future__ import annotations

from agent_memory.langgraph.checkpointer import MongoCheckpointer, ThreadOwnedError
from agent_memory.langgraph.namespaces import NamespaceMap
from agent_memory.langgraph.store import MemoryStore

__all__ = ["MemoryStore", "MongoCheckpointer", "NamespaceMap", "ThreadOwnedError"]

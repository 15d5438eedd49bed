"""LangGraph integration: thread state and long-term memory persisted in MongoDB.

- :class:`MongoCheckpointer`: a checkpointer on ``AsyncMongoClient`` (passes the
  ``langgraph-checkpoint-conformance`` suite with every capability); threads are per user.
- :func:`sync_connection`: a connection served by a private event loop, for sync apps
  (``graph.invoke`` and sync store calls with no loop of their own).
- :class:`MemoryStore`: this framework's long-term memory as a LangGraph ``BaseStore``, so any
  LangGraph agent can put, get, search and list items (seed 001); :class:`NamespaceMap` says
  which namespace label holds the user. See docs/langgraph.md.

>>> from agent_memory.langgraph import MemoryStore, MongoCheckpointer   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from agent_memory.langgraph import checkpointer as _checkpointer
from agent_memory.langgraph.checkpointer import MongoCheckpointer
from agent_memory.langgraph.namespaces import NamespaceMap
from agent_memory.langgraph.store import MemoryStore
from agent_memory.langgraph.sync import sync_connection

__all__ = [
    "MemoryStore",
    "MongoCheckpointer",
    "NamespaceMap",
    "ThreadOwnedError",
    "sync_connection",
]


def __getattr__(name: str) -> Any:
    # ThreadOwnedError: deprecated, read with a warning at the reader's line.
    return _checkpointer.deprecated_name(name, stacklevel=2)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

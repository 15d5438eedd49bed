"""Rerankers: an optional second ranking stage after retrieval. The interface, a deterministic
fake (token overlap) and Voyage AI.

``VoyageReranker`` is imported on first access, so this package imports without the optional
``voyageai`` SDK; touching it without the SDK raises
:class:`~agent_memory.errors.DependencyMissingError`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_memory.providers.rerankers.base import Reranker, RerankScore
from agent_memory.providers.rerankers.fake import FakeReranker

if TYPE_CHECKING:
    from agent_memory.providers.rerankers.voyage import VoyageReranker

__all__ = ["FakeReranker", "RerankScore", "Reranker", "VoyageReranker"]

_LAZY = {"VoyageReranker": "agent_memory.providers.rerankers.voyage"}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

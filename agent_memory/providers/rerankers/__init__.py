"""Rerankers: an optional second ranking stage after retrieval. The interface, a deterministic
fake (token overlap) and Voyage AI.

``VoyageReranker`` is imported on first access, so this package imports without the optional
``voyageai`` SDK; touching it without the SDK raises
:class:`~agent_memory.errors.DependencyMissingError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory._lazy import lazy_names
from agent_memory.providers.rerankers.base import Reranker, RerankScore
from agent_memory.providers.rerankers.fake import FakeReranker

if TYPE_CHECKING:
    from agent_memory.providers.rerankers.voyage import VoyageReranker

__all__ = ["FakeReranker", "RerankScore", "Reranker", "VoyageReranker"]

__getattr__, __dir__ = lazy_names(__name__, __all__)

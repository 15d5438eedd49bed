"""Build the configured embedder, chat model and reranker from
:class:`~agent_memory.config.Settings`."""

from __future__ import annotations

import typing

from agent_memory._log import get_logger
from agent_memory.config import CHAT_MODELS, EMBEDDERS, RERANKERS, Settings
from agent_memory.errors import DependencyMissingError, UnknownProviderError
from agent_memory.providers.chat.base import ChatModel
from agent_memory.providers.embedders.base import Embedder
from agent_memory.providers.rerankers.base import Reranker

__all__ = ["anthropic_models", "make_chat_model", "make_embedder", "make_reranker"]

logger = get_logger(__name__)

LOCAL_MODELS = ("multilingual-e5-small-q4",)


def make_embedder(settings: Settings) -> Embedder:
    """The embedder ``settings.embedder`` names, configured from the settings."""
    name = settings.embedder
    if name == "fake":
        from agent_memory.providers.embedders.fake import FakeEmbedder

        return FakeEmbedder(dimensions=settings.embedding_dimensions or 256)
    if name == "local":
        model = settings.embedding_model or LOCAL_MODELS[0]
        if model not in LOCAL_MODELS:
            raise UnknownProviderError("local embedding model", model, LOCAL_MODELS)
        if settings.embedding_dimensions not in (None, 384):
            raise UnknownProviderError(
                "local embedding dimension", str(settings.embedding_dimensions), ("384",)
            )
        from agent_memory.providers.embedders.local import LocalEmbedder

        return LocalEmbedder()
    if name == "voyage":
        from agent_memory.providers.embedders.voyage import VoyageEmbedder

        key = settings.voyage_api_key.get_secret_value() if settings.voyage_api_key else None
        return VoyageEmbedder(
            settings.embedding_model or "voyage-3.5",
            dimensions=settings.embedding_dimensions,
            api_key=key,
            timeout=settings.provider_timeout_s,
        )
    raise UnknownProviderError("embedder", name, EMBEDDERS)


def anthropic_models() -> tuple[str, ...]:
    """Model names the installed Anthropic SDK knows."""
    try:
        from anthropic.types.model_param import ModelParam
    except ImportError:
        return ()
    names: list[str] = []
    for arg in typing.get_args(ModelParam):
        names.extend(value for value in typing.get_args(arg) if isinstance(value, str))
    return tuple(names)


def make_chat_model(settings: Settings) -> ChatModel:
    """The chat model ``settings.chat_model`` names, configured from the settings."""
    name = settings.chat_model
    if name == "offline":
        from agent_memory.providers.chat.offline import OfflineChatModel

        return OfflineChatModel()
    if name == "fake":
        from agent_memory.providers.chat.fake import FakeChatModel

        return FakeChatModel(default="(fake model reply)")
    if name == "anthropic":
        from agent_memory.providers.chat.anthropic import AnthropicChatModel

        model = settings.chat_model_name or "claude-sonnet-5-5"
        known = anthropic_models()
        if known and model not in known:
            if not model.startswith("claude-"):
                raise UnknownProviderError("Anthropic model", model, known)
            # A model newer than the installed SDK: let the API decide, but say so.
            logger.warning("chat_model_unknown_to_sdk", model=model)
        key = settings.anthropic_api_key.get_secret_value() if settings.anthropic_api_key else None
        return AnthropicChatModel(model, api_key=key, timeout=settings.provider_timeout_s)
    raise UnknownProviderError("chat model", name, CHAT_MODELS)


def make_reranker(settings: Settings) -> Reranker | None:
    """The reranker ``settings.reranker`` names, or ``None`` when reranking is off.

    ``auto`` (the default) is Voyage when a Voyage API key is configured and the ``voyageai``
    package is installed, and off otherwise. An explicit ``voyage`` without a key raises
    :class:`~agent_memory.errors.MissingCredentialsError`, as the other providers do.
    """
    name = settings.reranker
    key = settings.voyage_api_key.get_secret_value().strip() if settings.voyage_api_key else ""
    if name == "none" or (name == "auto" and not key):
        return None
    if name == "fake":
        from agent_memory.providers.rerankers.fake import FakeReranker

        return FakeReranker()
    if name in ("auto", "voyage"):
        try:
            from agent_memory.providers.rerankers.voyage import VoyageReranker
        except DependencyMissingError as exc:
            if name == "voyage":
                raise
            logger.warning("reranker_disabled", reason=str(exc))
            return None
        return VoyageReranker(
            settings.rerank_model, api_key=key or None, timeout=settings.provider_timeout_s
        )
    raise UnknownProviderError("reranker", name, RERANKERS)

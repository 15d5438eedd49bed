"""Building providers from settings, token estimates, and what logs may contain."""

from __future__ import annotations

import pytest
import structlog

from agent_memory._tokens import estimate_tokens
from agent_memory.config import load_settings
from agent_memory.errors import MissingCredentialsError, UnknownProviderError
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.providers.chat.offline import OfflineChatModel
from agent_memory.providers.embedders.fake import FakeEmbedder
from agent_memory.providers.registry import anthropic_models, make_chat_model, make_embedder


def test_defaults_build_offline_providers():
    assert isinstance(make_chat_model(load_settings()), OfflineChatModel)
    assert isinstance(make_chat_model(load_settings(chat_model="fake")), FakeChatModel)
    fake = make_embedder(load_settings(embedder="fake", embedding_dimensions=64))
    assert isinstance(fake, FakeEmbedder) and fake.dimensions == 64
    local = make_embedder(load_settings())
    assert (local.provider, local.dimensions) == ("local", 384)


def test_unknown_local_model_lists_the_choices():
    with pytest.raises(UnknownProviderError, match="multilingual-e5-small-q4"):
        make_embedder(load_settings(embedding_model="all-MiniLM-L6-v2"))
    with pytest.raises(UnknownProviderError, match="384"):
        make_embedder(load_settings(embedding_dimensions=1024))


def test_voyage_without_a_key_says_which_variable():
    with pytest.raises(MissingCredentialsError, match="VOYAGE_API_KEY"):
        make_embedder(load_settings(embedder="voyage"))


def test_unknown_voyage_model_lists_the_choices():
    with pytest.raises(UnknownProviderError, match=r"voyage-3\.5"):
        make_embedder(
            load_settings(embedder="voyage", embedding_model="voyage-9000", voyage_api_key="k")
        )


def test_anthropic_without_a_key_says_which_variable():
    with pytest.raises(MissingCredentialsError, match="ANTHROPIC_API_KEY"):
        make_chat_model(load_settings(chat_model="anthropic"))


def test_anthropic_model_names_are_checked():
    assert "claude-sonnet-5-5" in anthropic_models()
    with pytest.raises(UnknownProviderError, match="claude-sonnet-5-5"):
        make_chat_model(
            load_settings(chat_model="anthropic", chat_model_name="gpt-4o", anthropic_api_key="k")
        )


async def test_a_claude_model_newer_than_the_sdk_is_allowed_with_a_warning():
    with structlog.testing.capture_logs() as logs:
        model = make_chat_model(
            load_settings(
                chat_model="anthropic",
                chat_model_name="claude-future-9",
                anthropic_api_key="sk-ant-secret",
            )
        )
    await model.aclose()
    assert [entry["event"] for entry in logs] == ["chat_model_unknown_to_sdk"]
    assert "sk-ant-secret" not in repr(logs)


def test_token_estimate_counts_cjk_per_character():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("我叫小明") == 4

"""Settings: defaults, environment, and a clear error for every bad value."""

from __future__ import annotations

import pytest

from agent_memory.config import load_settings, redact_uri
from agent_memory.errors import ConfigurationError


def test_defaults_use_the_embedded_server_and_offline_providers():
    settings = load_settings()
    assert settings.uses_embedded and settings.uri() is None
    assert (settings.embedder, settings.chat_model, settings.search_tier) == (
        "local",
        "offline",
        "auto",
    )


def test_conventional_environment_names_are_read(monkeypatch):
    monkeypatch.setenv("MONGODB_URI", "mongodb://db.example:27017/")
    monkeypatch.setenv("AGENT_MEMORY_SEARCH_TIER", "plain")
    monkeypatch.setenv("VOYAGE_API_KEY", "vk-secret")
    settings = load_settings()
    assert settings.uri() == "mongodb://db.example:27017/"
    assert settings.search_tier == "plain"
    assert settings.voyage_api_key.get_secret_value() == "vk-secret"
    assert "vk-secret" not in repr(settings)


def test_dotenv_file_is_read(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text(
        "AGENT_MEMORY_EMBEDDER=fake\nAGENT_MEMORY_DATABASE=from_env_file\n"
    )
    monkeypatch.chdir(tmp_path)
    settings = load_settings()
    assert (settings.embedder, settings.database) == ("fake", "from_env_file")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"mongodb_uri": "http://user:hunter2@db.example"}, "must start with mongodb://"),
        ({"mongodb_uri": "mongodb://db.example:notaport/"}, "not a valid connection string"),
        ({"mongodb_uri": "mongodb://"}, "no host"),
        ({"embedder": "openai"}, "choose one of: local, voyage, fake"),
        ({"chat_model": "gpt"}, "choose one of: offline, anthropic, fake"),
        ({"search_tier": "fast"}, "search_tier"),
        ({"database": "my.db"}, "forbids"),
        ({"embedded_port": 70000}, "embedded_port"),
        ({"connect_timeout_ms": 0}, "connect_timeout_ms"),
        ({"embedding_dimensions": "many"}, "embedding_dimensions"),
    ],
)
def test_bad_values_are_configuration_errors(overrides, message):
    with pytest.raises(ConfigurationError, match=message) as caught:
        load_settings(**overrides)
    assert "hunter2" not in str(caught.value)
    assert caught.value.__cause__ is None  # pydantic's error would repeat the raw input


def test_redact_uri_hides_only_the_password():
    assert redact_uri("mongodb+srv://app:s3cr3t@cluster0.example.net/db") == (
        "mongodb+srv://app:***@cluster0.example.net/db"
    )
    assert redact_uri("mongodb://localhost:27017") == "mongodb://localhost:27017"

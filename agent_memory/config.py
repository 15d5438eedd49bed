"""Settings, read from the environment and a ``.env`` file, validated with pydantic.

Every setting has an ``AGENT_MEMORY_`` environment variable; the conventional names
``MONGODB_URI``, ``ANTHROPIC_API_KEY`` and ``VOYAGE_API_KEY`` are read as they are.

>>> from agent_memory.config import Settings
>>> Settings(embedder="fake").search_tier
'auto'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from agent_memory._redact import redact_uri, register_secret
from agent_memory.checks import check_id
from agent_memory.errors import ConfigurationError, InvalidInputError

__all__ = ["EMBEDDERS", "CHAT_MODELS", "RERANKERS", "Settings", "load_settings"]

EMBEDDERS = ("local", "voyage", "fake")
CHAT_MODELS = ("offline", "anthropic", "fake")
RERANKERS = ("auto", "none", "voyage", "fake")


class Settings(BaseSettings):
    """Everything agent_memory can be configured with. Values are validated on creation."""

    model_config = SettingsConfigDict(
        env_prefix="AGENT_MEMORY_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
        validate_default=True,
        # Values may be secrets (keys, connection strings): errors name the setting only.
        hide_input_in_errors=True,
    )

    # --- database ------------------------------------------------------------------------
    mongodb_uri: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("MONGODB_URI", "AGENT_MEMORY_MONGODB_URI", "mongodb_uri"),
        description="Connection string; when unset the embedded server is started.",
    )
    database: str = Field(
        default="agent_memory",
        min_length=1,
        max_length=63,
        description="Database that holds every collection.",
    )
    collection_prefix: str = Field(
        default="",
        max_length=32,
        pattern=r"^[A-Za-z0-9_]*$",
        description="Put before every collection name, so several deployments can share "
        "one database.",
    )
    connect_timeout_ms: int = Field(
        default=5_000,
        ge=100,
        le=120_000,
        description="Milliseconds an unreachable server may take to fail (server selection "
        "and connect timeouts).",
    )
    search_tier: Literal["auto", "atlas", "plain"] = Field(
        default="auto",
        description="auto: Atlas Search when the server has it (probed at connection), else "
        "plain; atlas: fail when the server has no Atlas Search; plain: exact vector "
        "similarity and BM25 in the framework on any server.",
    )
    search_cache_mb: int = Field(
        default=1024,
        ge=8,
        le=1_048_576,
        description="MiB of memory the plain tier may use to keep users' searchable documents "
        "(vectors, text, fields) between searches, shared by every store of a connection; "
        "beyond it the users searched least recently are dropped, and their next search "
        "reads their documents again. About 5.5 KB per memory of thirty words at 256 "
        "dimensions, 8.5 KB at 1024.",
    )
    atlas_layout: Literal["auto", "full", "vector"] = Field(
        default="auto",
        description="Atlas search indexes: full (a vector and a text index per searched "
        "collection, six in all); vector (the three vector indexes, keywords ranked in the "
        "framework: fits a free M0 cluster's three); auto: what `agent-memory indexes setup` "
        "recorded, which is vector when the cluster refused the text indexes for its limit.",
    )

    # --- embedded server -------------------------------------------------------------------
    data_dir: Path = Field(
        default=Path(".agent-memory"),
        description="Data directory of the embedded server (used when MONGODB_URI is unset).",
    )
    embedded_host: str = Field(
        default="127.0.0.1",
        description="Address of the embedded server; loopback only (it has no authentication).",
    )
    embedded_port: int = Field(
        default=0,
        ge=0,
        le=65_535,
        description="Port of the embedded server; 0 picks a free one (the data directory's "
        "last port when it is free).",
    )

    # --- providers -------------------------------------------------------------------------
    embedder: str = Field(
        default="local",
        description=f"Embedding provider, one of {', '.join(EMBEDDERS)}: local (offline "
        "multilingual-e5-small, 384 dimensions), voyage (Voyage AI, needs VOYAGE_API_KEY), "
        "fake (deterministic hashing, for tests).",
    )
    embedding_model: str | None = Field(
        default=None,
        description="Embedding model; unset: multilingual-e5-small-q4 (local), voyage-3.5 "
        "(voyage).",
    )
    embedding_dimensions: int | None = Field(
        default=None,
        ge=8,
        le=8_192,
        description="Vector size; unset: the model's own (384 local, 1024 voyage-3.5, 256 "
        "fake). Flexible Voyage models take 256, 512, 1024 or 2048.",
    )
    chat_model: str = Field(
        default="offline",
        description=f"Chat provider, one of {', '.join(CHAT_MODELS)}: offline (quotes the "
        "retrieved context, labelled as offline), anthropic (Claude, needs ANTHROPIC_API_KEY), "
        "fake (for tests).",
    )
    chat_model_name: str | None = Field(
        default=None, description="Anthropic model; unset: claude-sonnet-5-5."
    )
    reranker: str = Field(
        default="auto",
        description=f"Reranking stage after retrieval, one of {', '.join(RERANKERS)}: auto "
        "(voyage when VOYAGE_API_KEY is set and the voyageai package is installed, otherwise "
        "none), none (off), voyage (Voyage AI, needs VOYAGE_API_KEY), fake (token overlap, "
        "for tests).",
    )
    rerank_model: str = Field(
        default="rerank-2.5-lite",
        min_length=1,
        description="Voyage reranking model: rerank-2.5, rerank-2.5-lite, rerank-2 or "
        "rerank-2-lite.",
    )
    anthropic_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "ANTHROPIC_API_KEY", "AGENT_MEMORY_ANTHROPIC_API_KEY", "anthropic_api_key"
        ),
        description="Anthropic API key; needed only with AGENT_MEMORY_CHAT_MODEL=anthropic.",
    )
    voyage_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "VOYAGE_API_KEY", "AGENT_MEMORY_VOYAGE_API_KEY", "voyage_api_key"
        ),
        description="Voyage AI API key; needed with AGENT_MEMORY_EMBEDDER=voyage or "
        "AGENT_MEMORY_RERANKER=voyage, and turns reranking on with AGENT_MEMORY_RERANKER=auto.",
    )
    provider_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=600,
        description="Seconds one provider request (embedding, reranking or chat) may take.",
    )

    # --- feedback API ----------------------------------------------------------------------
    api_keys: dict[str, list[SecretStr]] = Field(
        default_factory=dict,
        description="API keys of the feedback API by agent id, as JSON: "
        '{"support": ["key-1", "key-2"]} (a single key may be given as a string). A key '
        "reads and rates only its agent's actions. Keys are at least 24 characters of "
        "printable ASCII (what an HTTP header carries), with no spaces around them.",
    )
    api_host: str = Field(default="127.0.0.1", description="Address `agent-memory api` listens on.")
    api_port: int = Field(
        default=8080, ge=1, le=65_535, description="Port `agent-memory api` listens on."
    )
    api_max_body_bytes: int = Field(
        default=65_536,
        ge=1_024,
        le=16_777_216,
        description="Largest request body the feedback API accepts, in bytes; a larger one is "
        "413, and no more of it is read. The largest valid feedback (a 4,000-character "
        "correction, every character a JSON escape) is under 52 KB.",
    )

    # --- maintenance (agent-memory decay) ----------------------------------------------------
    decay_factor: float = Field(
        default=0.95,
        gt=0,
        le=1,
        description="Importance of an unused long-term memory is multiplied by this once per "
        "decay period.",
    )
    decay_inactive_days: float = Field(
        default=30.0, ge=0, le=36_500, description="Days without use before a memory decays."
    )
    decay_floor: float = Field(
        default=0.1, ge=0, le=1, description="Decay never takes importance below this."
    )
    decay_period_days: float = Field(
        default=30.0,
        gt=0,
        le=36_500,
        description="A memory decays at most once per period, however often the job runs.",
    )
    session_retention_days: int = Field(
        default=90,
        ge=1,
        le=36_500,
        description="Sessions inactive this long are archived or deleted by the decay job.",
    )
    session_retention_mode: Literal["archive", "delete"] = Field(
        default="archive",
        description="archive (messages kept, a new turn reactivates the session) or delete "
        "(the session and its messages).",
    )
    action_retention_days: int = Field(
        default=30,
        ge=2,
        le=36_500,
        description="Action logs older than this are summarised into daily counts and deleted "
        "by the decay job.",
    )

    @field_validator("mongodb_uri")
    @classmethod
    def _check_uri(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        raw = value.get_secret_value().strip()
        if not raw:
            return None
        # Its password is registered first (redact_uri), so that no message repeats it, even
        # one about a mistyped scheme (mongodb//, mongodb:/) or a password with a quote.
        shown = redact_uri(raw)
        scheme = raw.split("://", 1)[0] if "://" in raw else ""
        if scheme not in ("mongodb", "mongodb+srv"):
            raise ValueError(f"must start with mongodb:// or mongodb+srv:// (got {shown!r})")
        try:
            parts = urlsplit(raw)
            _ = parts.port  # raises on a non-numeric port
        except ValueError as exc:
            raise ValueError(f"is not a valid connection string: {exc}") from None
        if not parts.hostname:
            raise ValueError("has no host")
        return SecretStr(raw)

    @field_validator("api_keys", mode="before")
    @classmethod
    def _one_key_or_many(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: [v] if isinstance(v, str | SecretStr) else v for k, v in value.items()}
        return value

    @field_validator("api_keys")
    @classmethod
    def _check_api_keys(cls, value: dict[str, list[SecretStr]]) -> dict[str, list[SecretStr]]:
        seen: set[str] = set()
        for agent_id, keys in value.items():
            try:
                check_id(agent_id, "agent id")
            except InvalidInputError as exc:
                raise ValueError(str(exc)) from None
            if not keys:
                raise ValueError(f"agent {agent_id!r} has no API key")
            for number, key in enumerate(keys, start=1):
                raw = key.get_secret_value()
                problem = _api_key_problem(raw)
                if problem:
                    # The key itself is never echoed back, only which one it is.
                    which = f"API key #{number}" if len(keys) > 1 else "the API key"
                    raise ValueError(f"{which} of agent {agent_id!r} {problem}")
                if raw in seen:
                    raise ValueError("the same API key is given for two agents")
                seen.add(raw)
        return value

    @field_validator("embedder")
    @classmethod
    def _check_embedder(cls, value: str) -> str:
        if value not in EMBEDDERS:
            raise ValueError(f"unknown embedder {value!r}; choose one of: {', '.join(EMBEDDERS)}")
        return value

    @field_validator("chat_model")
    @classmethod
    def _check_chat_model(cls, value: str) -> str:
        if value not in CHAT_MODELS:
            raise ValueError(
                f"unknown chat model {value!r}; choose one of: {', '.join(CHAT_MODELS)}"
            )
        return value

    @field_validator("reranker")
    @classmethod
    def _check_reranker(cls, value: str) -> str:
        if value not in RERANKERS:
            raise ValueError(f"unknown reranker {value!r}; choose one of: {', '.join(RERANKERS)}")
        return value

    @field_validator("database")
    @classmethod
    def _check_database(cls, value: str) -> str:
        bad = set('/\\. "$*<>:|?') & set(value)
        if bad:
            raise ValueError(f"database name contains characters MongoDB forbids: {sorted(bad)}")
        return value

    @model_validator(mode="after")
    def _register_secrets(self) -> Settings:
        """Every secret these settings hold is masked wherever it would appear in a message
        or a log line of this process (:func:`agent_memory._redact.redact`), whatever its
        shape."""
        for secret in (self.anthropic_api_key, self.voyage_api_key):
            if secret is not None:
                register_secret(secret.get_secret_value())
        for keys in self.api_keys.values():
            for key in keys:
                register_secret(key.get_secret_value())
        return self

    @property
    def uses_embedded(self) -> bool:
        return self.mongodb_uri is None

    def uri(self) -> str | None:
        return self.mongodb_uri.get_secret_value() if self.mongodb_uri else None


_CONTROL_NAMES = {"\n": ", a line break", "\r": ", a carriage return", "\t": ", a tab"}


def _api_key_problem(raw: str) -> str | None:
    """Why ``raw`` cannot be an API key, without quoting it; ``None`` when it can. A key
    arrives in an HTTP header, which carries printable ASCII only: a key with a line break,
    another control character or a non-ASCII character could never match a request."""
    if not raw:
        return "is empty"
    for position, char in enumerate(raw, start=1):
        if char < " " or char == "\x7f":
            name = _CONTROL_NAMES.get(char, "")
            return (
                f"has a control character at character {position} (U+{ord(char):04X}{name}), "
                "which an HTTP header cannot carry"
            )
        if not char.isascii():
            return (
                f"has a non-ASCII character at character {position}; an HTTP header carries "
                "ASCII only"
            )
    if raw != raw.strip():
        return "has spaces around it"
    if len(raw) < 24:
        return "is shorter than 24 characters"
    return None


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment (and ``.env``), applying ``overrides`` on top.

    Invalid values raise :class:`~agent_memory.errors.ConfigurationError` naming each bad
    setting, instead of pydantic's own exception.
    """
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            location = ".".join(str(part) for part in error["loc"]) or "settings"
            message = error["msg"].removeprefix("Value error, ")
            problems.append(f"{location}: {message}")
        raise ConfigurationError("invalid configuration: " + "; ".join(problems)) from None
    except SettingsError as exc:
        # A structured setting (api_keys) whose environment value is not JSON; the value
        # itself may hold secrets and is not repeated.
        raise ConfigurationError(
            f"invalid configuration: {exc} (expected JSON, e.g. "
            '\'{"support": "a-key-of-24-characters-or-more"}\')'
        ) from None

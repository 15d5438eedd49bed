"""Every error agent_memory raises, in one tree.

::

    AgentMemoryError
    ├── ConfigurationError              settings that cannot work; fix the configuration
    │   ├── UnknownProviderError        a provider or model name that is not one of the choices
    │   ├── MissingCredentialsError     a chosen provider without its API key
    │   ├── EmbeddingMismatchError      the embedder differs from what the stored data was built with
    │   └── DependencyMissingError      an optional package is not installed (message says which extra)
    ├── StorageError                    the database did not do what was asked
    │   ├── NotInitialisedError         collections or indexes are missing: run `agent-memory indexes setup`
    │   ├── NotFoundError               no document with that id for this tenant
    │   ├── ConflictError               a duplicate key or a lost race (version guard)
    │   ├── StorageUnavailableError     the server cannot be reached or went away
    │   ├── AuthenticationError         the server refused the credentials
    │   ├── EmbeddedServerError         the embedded server could not start (port, data directory)
    │   └── SearchUnavailableError      a search feature this server does not have was required
    ├── ProviderError                   an embedding or chat provider failed
    │   ├── RateLimitedError            the provider said slow down (after our bounded retries)
    │   ├── ProviderUnavailableError    timeouts, connection errors and 5xx (after retries)
    │   ├── BadResponseError            a response we cannot use (malformed, empty structured output)
    │   └── LiveCallBlockedError        a network call attempted while live calls are switched off
    └── InvalidInputError (ValueError)  a value from a caller that cannot be accepted as given
        └── InvalidTransitionError      a task or step moved along an edge its table lacks

Foreign exceptions (pymongo, anthropic, voyageai) are mapped to the most specific class here
with ``raise ... from exc``, so the original stays available as ``__cause__``.
"""

from __future__ import annotations

from agent_memory._redact import redact

__all__ = [
    "AgentMemoryError",
    "AuthenticationError",
    "BadResponseError",
    "ConfigurationError",
    "ConflictError",
    "DependencyMissingError",
    "EmbeddedServerError",
    "EmbeddingMismatchError",
    "InvalidInputError",
    "InvalidTransitionError",
    "LiveCallBlockedError",
    "MissingCredentialsError",
    "NotFoundError",
    "NotInitialisedError",
    "ProviderError",
    "ProviderUnavailableError",
    "RateLimitedError",
    "SearchUnavailableError",
    "StorageError",
    "StorageUnavailableError",
    "UnknownProviderError",
]


class AgentMemoryError(Exception):
    """Base class of every error raised by agent_memory.

    Its message never holds a credential: whatever a subclass or a caller puts in it passes
    through :func:`agent_memory._redact.redact` (a URI's password, a key, a token)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(arg) if isinstance(arg, str) else arg for arg in args))


# --- configuration ---------------------------------------------------------------------------


class ConfigurationError(AgentMemoryError):
    """The configuration cannot work as given."""


class UnknownProviderError(ConfigurationError):
    """A provider or model name is not one of the known choices."""

    def __init__(self, kind: str, name: str, choices: list[str] | tuple[str, ...]) -> None:
        self.kind = kind
        self.name = name
        self.choices = tuple(choices)
        super().__init__(f"unknown {kind} {name!r}; choose one of: {', '.join(self.choices)}")


class MissingCredentialsError(ConfigurationError):
    """A provider was chosen but its credentials are not configured."""


class EmbeddingMismatchError(ConfigurationError):
    """The configured embedder does not match the one the stored vectors were made with."""


class DependencyMissingError(ConfigurationError):
    """An optional dependency is not installed."""

    def __init__(self, package: str, extra: str, *, detail: str = "") -> None:
        self.package = package
        self.extra = extra
        message = (
            f"{package} is not installed; install it with: pip install 'agent-memory[{extra}]'"
        )
        if detail:
            message = f"{message} ({detail})"
        super().__init__(message)


# --- storage ---------------------------------------------------------------------------------


class StorageError(AgentMemoryError):
    """The database did not do what was asked."""


class NotInitialisedError(StorageError):
    """Collections or indexes the operation needs are missing."""


class NotFoundError(StorageError):
    """No document with that id exists for this tenant."""


class ConflictError(StorageError):
    """A duplicate key, or a concurrent change won the race."""


class StorageUnavailableError(StorageError):
    """The database server cannot be reached, or went away mid-operation."""


class AuthenticationError(StorageError):
    """The database server refused the credentials, or an operation the user has no
    privilege for."""


class EmbeddedServerError(StorageError):
    """The embedded server could not be started or reached."""


class SearchUnavailableError(StorageError):
    """The operation needs a search feature this server does not provide."""


# --- providers -------------------------------------------------------------------------------


class ProviderError(AgentMemoryError):
    """An embedding or chat provider failed."""

    def __init__(self, message: str, *, provider: str = "", status_code: int | None = None) -> None:
        self.provider = provider
        self.status_code = status_code
        super().__init__(message)


class RateLimitedError(ProviderError):
    """The provider kept asking us to slow down after the retries allowed."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status_code: int | None = 429,
        retry_after: float | None = None,
    ) -> None:
        self.retry_after = retry_after
        super().__init__(message, provider=provider, status_code=status_code)


class ProviderUnavailableError(ProviderError):
    """Timeouts, connection failures or server errors persisted after the retries allowed."""


class BadResponseError(ProviderError):
    """The provider answered with something that cannot be used."""


class LiveCallBlockedError(ProviderError):
    """A call to a real provider endpoint was attempted while live calls are switched off."""


# --- input -----------------------------------------------------------------------------------


class InvalidInputError(AgentMemoryError, ValueError):
    """A caller passed a value that cannot be accepted as given."""


class InvalidTransitionError(InvalidInputError):
    """A task or step was asked to move along an edge its transition table does not have.

    ``subject`` names what was moved ("task task_...", "step 2 of task task_..."), ``current``
    its status, ``target`` the status (or operation) asked for.
    """

    def __init__(self, subject: str, current: str, target: str, *, detail: str = "") -> None:
        self.subject = subject
        self.current = current
        self.target = target
        message = f"{subject} cannot go from {current} to {target}"
        super().__init__(f"{message}: {detail}" if detail else message)

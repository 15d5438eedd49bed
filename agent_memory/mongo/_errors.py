"""Map pymongo exceptions to agent_memory's error tree, keeping the original as the cause."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from pymongo import errors as pm

from agent_memory.errors import (
    AgentMemoryError,
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    NotInitialisedError,
    StorageError,
    StorageUnavailableError,
)
from agent_memory.mongo.embedded_files import DAMAGED

__all__ = [
    "Refusal",
    "classify_refusal",
    "explain_unreachable",
    "first_line",
    "map_error",
    "translate_errors",
]

Refusal = Literal["forbidden", "transient", "unsupported"]

_AUTH_CODES = {11, 13, 18}  # UserNotFound, Unauthorized, AuthenticationFailed
_MISSING_INDEX_CODES = {27}  # IndexNotFound (e.g. $text without a text index)
_UNAUTHORIZED = 13
_ATLAS_ERROR = 8000
#: Codes a server answers while it (or its search process) is briefly unavailable: the
#: server's RetriableError codes, HostUnreachable/HostNotFound (mongot not reachable) and
#: MaxTimeMSExpired.
_TRANSIENT_CODES = frozenset(
    {6, 7, 50, 89, 91, 134, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436}
)
#: Atlas's wording for a privilege the user lacks (code 8000, AtlasError).
_FORBIDDEN_WORDS = ("not allowed to do action", "not authorized", "unauthorized")
#: Servers known to be gone for good ("host:port"), with what happened and what to do: an
#: embedded server this process could not take over on its port
#: (:mod:`agent_memory.mongo.embedded_takeover`).
_GONE: dict[str, str] = {}


def explain_unreachable(address: str, why: str | None) -> None:
    """Have every failure to reach ``address`` ("host:port") say ``why``; ``None`` forgets."""
    if why is None:
        _GONE.pop(address, None)
    else:
        _GONE[address] = why


def _gone(exc: Exception) -> str | None:
    text = str(exc)
    return next((why for address, why in list(_GONE.items()) if address in text), None)


def classify_refusal(exc: Exception) -> Refusal:
    """What an error from a probe or a search stage means: ``forbidden`` (the user lacks a
    privilege), ``transient`` (ask again) or ``unsupported`` (the server does not have it)."""
    if isinstance(exc, pm.ConnectionFailure):  # includes AutoReconnect and NetworkTimeout
        return "transient"
    if isinstance(exc, pm.OperationFailure):
        message = str(exc).lower()
        if exc.code == _UNAUTHORIZED:
            return "forbidden"
        if exc.code == _ATLAS_ERROR and any(word in message for word in _FORBIDDEN_WORDS):
            return "forbidden"
        if exc.code in _TRANSIENT_CODES or exc.has_error_label("RetryableError"):
            return "transient"
    return "unsupported"


def map_error(exc: Exception, action: str) -> AgentMemoryError:
    """The agent_memory error for a pymongo exception raised while doing ``action``."""
    if isinstance(exc, AgentMemoryError):
        return exc
    if isinstance(exc, pm.DuplicateKeyError):
        return ConflictError(f"{action}: a document with the same key already exists")
    if _GONE and isinstance(exc, pm.PyMongoError) and (why := _gone(exc)):
        return StorageUnavailableError(f"{action}: {why}")
    if isinstance(exc, pm.OperationFailure) and DAMAGED in str(exc):
        # The embedded server's one line for a damaged file: whole, it says how to recover.
        details = exc.details or {}
        message = details.get("errmsg") if isinstance(details.get("errmsg"), str) else None
        return StorageError(f"{action}: {message or first_line(exc)}")
    if isinstance(exc, pm.ServerSelectionTimeoutError | pm.AutoReconnect | pm.NetworkTimeout):
        return StorageUnavailableError(
            f"{action}: the database cannot be reached ({first_line(exc)})"
        )
    if isinstance(exc, pm.ConnectionFailure):
        return StorageUnavailableError(f"{action}: the connection failed ({first_line(exc)})")
    if isinstance(exc, pm.OperationFailure):
        # Some servers omit the code on a failed handshake; the message is stable.
        if (
            exc.code in _AUTH_CODES
            or "authentication failed" in str(exc).lower()
            or classify_refusal(exc) == "forbidden"  # Atlas: code 8000 "not allowed to do action"
        ):
            return AuthenticationError(
                f"{action}: the server refused the credentials or the user lacks privileges "
                f"({first_line(exc)}); check the user and password in MONGODB_URI"
            )
        if classify_refusal(exc) == "transient":
            return StorageUnavailableError(
                f"{action}: the server is briefly unavailable ({first_line(exc)}); try again"
            )
        if exc.code in _MISSING_INDEX_CODES or "text index" in str(exc).lower():
            return NotInitialisedError(
                f"{action}: a required index is missing ({first_line(exc)}); "
                "run `agent-memory indexes setup`"
            )
        return StorageError(f"{action}: the server rejected the operation ({first_line(exc)})")
    if isinstance(exc, pm.ConfigurationError | pm.InvalidURI):
        return ConfigurationError(f"{action}: {first_line(exc)}")
    if isinstance(exc, pm.PyMongoError):
        return StorageError(f"{action}: {first_line(exc)}")
    return StorageError(f"{action}: {type(exc).__name__}: {first_line(exc)}")


def first_line(exc: Exception) -> str:
    """What a driver error says, without the full server reply pymongo appends."""
    # pymongo appends the full server reply or topology description; the first part says it.
    text = str(exc).split(", full error:", 1)[0].split(" (configured timeouts", 1)[0]
    line = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return line[:300]


@contextmanager
def translate_errors(action: str) -> Iterator[None]:
    """Re-raise pymongo exceptions inside the block as agent_memory errors."""
    try:
        yield
    except AgentMemoryError:
        raise
    except pm.PyMongoError as exc:
        raise map_error(exc, action) from exc

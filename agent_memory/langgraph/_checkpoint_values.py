"""What the checkpointer checks before a value reaches a query or a document: configs, ids,
namespaces, metadata made queryable, values made bytes by LangGraph's serde.

Anything that cannot be stored or matched safely is refused as
:class:`~agent_memory.errors.InvalidInputError` here, or kept out of the server's view and
compared in Python (see :mod:`agent_memory.langgraph.checkpointer`).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import get_checkpoint_id
from langgraph.checkpoint.serde.base import SerializerProtocol

from agent_memory.checks import check_id, is_int
from agent_memory.errors import InvalidInputError
from agent_memory.tenancy import Tenant

INT64 = 2**63
_MAX_DEPTH = 32
_OMIT = object()


def _encodable(text: str) -> bool:
    """Whether BSON can hold ``text`` (a lone surrogate cannot be encoded as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _safe_key(key: Any) -> bool:
    return (
        isinstance(key, str)
        and bool(key)
        and key[0] != "$"
        and "." not in key
        and "\x00" not in key
        and _encodable(key)
    )


def _plain(value: Any, depth: int = 0) -> Any:
    """``value`` as plain BSON-safe JSON data, or ``_OMIT`` if it has no such form."""
    if depth > _MAX_DEPTH:
        return _OMIT
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value if _encodable(value) else _OMIT
    if isinstance(value, int):
        return value if -INT64 <= value < INT64 else _OMIT
    if isinstance(value, float):
        return value if math.isfinite(value) else _OMIT
    if isinstance(value, list | tuple):
        items = [_plain(item, depth + 1) for item in value]
        return _OMIT if any(item is _OMIT for item in items) else items
    if isinstance(value, Mapping):
        if not all(_safe_key(key) for key in value):
            return _OMIT
        pairs = {key: _plain(item, depth + 1) for key, item in value.items()}
        return _OMIT if any(item is _OMIT for item in pairs.values()) else pairs
    return _OMIT


def queryable(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata keys a filter can match on the server (safe keys, JSON-safe values)."""
    plain = {}
    for key, value in metadata.items():
        if _safe_key(key) and (copy := _plain(value)) is not _OMIT:
            plain[key] = copy
    return plain


def pushable(key: Any, value: Any) -> bool:
    # Only scalars whose server comparison agrees with Python's ==; everything else is
    # checked in Python (bools: True == 1 in Python but not in BSON).
    if not _safe_key(key) or isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -INT64 <= value < INT64
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str) and _encodable(value)


def dumps(serde: SerializerProtocol, value: Any, what: str) -> tuple[str, bytes]:
    """``serde.dumps_typed(value)``, with a value it cannot serialise (an arbitrary object,
    an integer beyond 64 bits, a lone surrogate) refused as invalid input."""
    try:
        return serde.dumps_typed(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInputError(
            f"{what} cannot be serialised: {type(exc).__name__}: {str(exc)[:200]}"
        ) from None


def id_text(value: Any, name: str) -> str:
    # LangGraph allows ints and UUIDs as thread ids; they are stored as their text.
    if is_int(value) or isinstance(value, uuid.UUID):
        value = str(value)
    return check_id(value, name)


def _namespace(value: Any) -> str:
    if not isinstance(value, str) or "\x00" in value or len(value) > 1024 or not _encodable(value):
        raise InvalidInputError(
            "checkpoint_ns must be a str of at most 1024 characters (valid Unicode, no NUL)"
        )
    return value


def configurable_of(config: Any, name: str = "config") -> Mapping[str, Any]:
    """``config["configurable"]`` (empty when absent); anything not shaped like a
    RunnableConfig is refused, so a stray value never reaches a query."""
    if not isinstance(config, Mapping):
        raise InvalidInputError(f"{name} must be a mapping, got {type(config).__name__}")
    configurable = config.get("configurable") or {}
    if not isinstance(configurable, Mapping):
        raise InvalidInputError(
            f'{name}["configurable"] must be a mapping, got {type(configurable).__name__}'
        )
    return configurable


def target_of(config: RunnableConfig) -> tuple[str, str, str | None]:
    """``(thread_id, checkpoint_ns, checkpoint_id or None)`` of a config, validated."""
    configurable = configurable_of(config)
    if "thread_id" not in configurable:
        raise InvalidInputError('the config has no configurable["thread_id"]')
    thread_id = id_text(configurable["thread_id"], "thread_id")
    namespace = _namespace(configurable.get("checkpoint_ns", ""))
    checkpoint_id = get_checkpoint_id(config)
    if checkpoint_id is not None:
        checkpoint_id = check_id(checkpoint_id, "checkpoint_id")
    return thread_id, namespace, checkpoint_id


def tenant_in(config: RunnableConfig) -> Tenant | None:
    """The tenant ``config["configurable"]`` names (its ``agent_id`` and ``user_id``), or
    ``None`` when it names neither. One without the other is refused: a run that meant to
    name its user would otherwise share a thread with every run that names nobody."""
    configurable = configurable_of(config)
    named = [key for key in ("agent_id", "user_id") if key in configurable]
    if not named:
        return None
    if len(named) == 1:
        raise InvalidInputError(
            f'config["configurable"] has {named[0]} without '
            f"{'user_id' if named[0] == 'agent_id' else 'agent_id'}; give both"
        )
    # Refused rather than skipped: state that cannot be attributed could not be forgotten.
    return Tenant(configurable["agent_id"], configurable["user_id"])


def config_of(
    thread_id: str, namespace: str, checkpoint_id: str, owner: Mapping[str, Any]
) -> RunnableConfig:
    """The config of a stored checkpoint; it names the checkpoint's tenant (``owner``, a
    document or a scope), so a config LangGraph hands back (``StateSnapshot.config``,
    ``parent_config``) reads the same thread again."""
    configurable: dict[str, Any] = {
        "thread_id": thread_id,
        "checkpoint_ns": namespace,
        "checkpoint_id": checkpoint_id,
    }
    if owner.get("agent_id") is not None:
        configurable["agent_id"] = owner["agent_id"]
        configurable["user_id"] = owner["user_id"]
    return {"configurable": configurable}

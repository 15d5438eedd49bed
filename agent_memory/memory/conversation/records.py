"""The shapes of conversation memory: what a caller appends (:class:`NewMessage`), what comes
back (:class:`ConversationMessage`, :class:`Session`, :class:`SummaryResult`), the tunables
(:class:`ConversationConfig`), the ordering key (:class:`TurnClock`), and the validation that
turns a caller's turn into documents before anything is written. No database here.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from agent_memory._tokens import estimate_tokens
from agent_memory.checks import (
    check_document_size,
    check_id,
    check_int,
    check_mapping,
    check_text,
    shown,
)
from agent_memory.errors import ConfigurationError, InvalidInputError
from agent_memory.stamps import new_id
from agent_memory.tenancy import Tenant, check_tenant

__all__ = [
    "ROLES",
    "TURN_CLOCK",
    "ConversationConfig",
    "ConversationMessage",
    "NewMessage",
    "Session",
    "SummaryResult",
    "ToolRecord",
    "TurnClock",
    "build_message_documents",
    "check_metadata",
    "check_tenant",
]

Role = Literal["user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("user", "assistant", "tool")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_COUNTER = 999_999
_MESSAGE_KEYS = frozenset({"role", "content", "tool"})
_TOOL_KEYS = frozenset({"name", "input", "result"})


@dataclass(frozen=True, slots=True)
class ConversationConfig:
    """Tunables of conversation memory.

    ``window_messages`` is seed 000's ``short_term_limit``; ``summary_trigger`` is how many
    messages must have fallen out of the window, unsummarised, before a summary refresh calls
    the chat model. Tool ``input``/``result`` larger than ``max_tool_payload_chars`` (as JSON)
    are stored cut, as a string ending in a ``[truncated: ...]`` marker, and listed in
    ``tool.truncated``: tool output is machine-made and should not fail a whole turn.
    """

    window_messages: int = 10
    window_tokens: int = 2000
    summary_trigger: int = 6
    summary_max_tokens: int = 400
    #: At most this many overflow messages, and this many of their tokens, per chat call.
    summary_batch_messages: int = 200
    summary_input_tokens: int = 8000
    retention_days: int = 90
    retention_mode: Literal["archive", "delete"] = "archive"
    retention_batch: int = 500
    max_message_chars: int = 32_000
    max_tool_payload_chars: int = 8_000
    max_turn_messages: int = 50

    def __post_init__(self) -> None:
        for name in (
            "window_messages",
            "window_tokens",
            "summary_trigger",
            "summary_max_tokens",
            "summary_batch_messages",
            "summary_input_tokens",
            "retention_days",
            "retention_batch",
            "max_message_chars",
            "max_tool_payload_chars",
            "max_turn_messages",
        ):
            check_int(getattr(self, name), name, minimum=1, error=ConfigurationError)
        if self.retention_mode not in ("archive", "delete"):
            raise ConfigurationError(
                f"retention_mode must be 'archive' or 'delete', got {shown(self.retention_mode)}"
            )
        if self.max_turn_messages > 9999:  # the per-turn index has four digits
            raise ConfigurationError("max_turn_messages must be at most 9999")


class TurnClock:
    """Ordering keys (``seq``) for turns: strictly increasing within this process.

    A turn's key is ``"<epoch ms, 13 digits>.<counter, 6 digits>.<process token, 8 hex>"`` and
    its n-th message appends ``".<n, 4 digits>"``; keys compare as strings. The millisecond
    never goes backwards here (a clock stepped back is held at the last value) and the counter
    orders turns inside one millisecond, so a turn appended after another in this process
    always sorts after it. Turns from different processes in the same millisecond sort by
    counter, then process token: an arbitrary but stable order, and a turn's messages always
    stay together. Across machines the order follows their clocks.
    """

    def __init__(
        self, *, now_ms: Callable[[], int] | None = None, token: str | None = None
    ) -> None:
        self.now_ms = now_ms or (lambda: time.time_ns() // 1_000_000)
        self.token = token or secrets.token_hex(4)
        self._lock = threading.Lock()  # turns may be appended from several threads' loops
        self._last_ms = 0
        self._counter = 0

    def next_turn(self) -> tuple[datetime, str]:
        """The time and the key prefix of a new turn."""
        with self._lock:
            now = self.now_ms()
            if now > self._last_ms:
                self._last_ms, self._counter = now, 0
            elif self._counter < _MAX_COUNTER:
                self._counter += 1
            else:  # a million turns in one millisecond: borrow the next one
                self._last_ms, self._counter = self._last_ms + 1, 0
            ms, counter = self._last_ms, self._counter
        return _EPOCH + timedelta(milliseconds=ms), f"{ms:013d}.{counter:06d}.{self.token}"


TURN_CLOCK = TurnClock()


@dataclass(frozen=True, slots=True)
class NewMessage:
    """One message of a turn to append. Tool messages name the tool; their ``content``
    defaults to the result as text."""

    role: str
    content: str | None = None
    tool_name: str | None = None
    tool_input: Any = None
    tool_result: Any = None

    @classmethod
    def user(cls, content: str) -> NewMessage:
        return cls("user", content)

    @classmethod
    def assistant(cls, content: str) -> NewMessage:
        return cls("assistant", content)

    @classmethod
    def tool(
        cls, name: str, *, input: Any = None, result: Any = None, content: str | None = None
    ) -> NewMessage:
        return cls("tool", content, tool_name=name, tool_input=input, tool_result=result)


@dataclass(frozen=True, slots=True)
class ToolRecord:
    name: str
    input: Any = None
    result: Any = None
    #: Which of ``input``/``result`` were cut to the payload cap.
    truncated: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ConversationMessage:
    """A stored message. ``truncated`` marks a view cut to fit a token budget."""

    id: str
    session_id: str
    role: Role
    content: str
    seq: str
    tokens: int
    created_at: datetime
    tool: ToolRecord | None = None
    truncated: bool = False
    #: When it was said (``append_turn(..., occurred_at=)``); its ``created_at`` when it was
    #: appended as it was said.
    occurred_at: datetime | None = None

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> ConversationMessage:
        tool = doc.get("tool")
        return cls(
            id=doc["_id"],
            # Sessions stored before ids were per tenant have the id in _id only, until
            # `indexes setup` copies it.
            session_id=doc.get("session_id", doc["_id"]),
            role=doc["role"],
            content=doc["content"],
            seq=doc["seq"],
            tokens=int(doc.get("tokens", 0)),
            created_at=doc["created_at"],
            occurred_at=doc.get("occurred_at") or doc["created_at"],
            tool=None
            if tool is None
            else ToolRecord(
                tool["name"],
                tool.get("input"),
                tool.get("result"),
                tuple(tool.get("truncated", ())),
            ),
        )


@dataclass(frozen=True, slots=True)
class Session:
    """A conversation session. ``summary_through`` is the ``seq`` of the last message the
    summary covers (``None``: nothing summarised). ``message_count`` is kept by writes that
    are not awaited, so it may lag a moment behind."""

    session_id: str
    agent_id: str
    user_id: str
    status: Literal["active", "archived"]
    metadata: dict[str, Any]
    summary: str
    summary_through: str | None
    summary_version: int
    message_count: int
    created_at: datetime
    updated_at: datetime
    last_active_at: datetime

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Session:
        return cls(
            # Sessions stored before ids were per tenant have the id in _id only, until
            # `indexes setup` copies it.
            session_id=doc.get("session_id", doc["_id"]),
            agent_id=doc["agent_id"],
            user_id=doc["user_id"],
            status=doc.get("status", "active"),
            metadata=dict(doc.get("metadata") or {}),
            summary=doc.get("summary") or "",
            summary_through=doc.get("summary_through"),
            summary_version=int(doc.get("summary_version", 0)),
            message_count=int(doc.get("message_count", 0)),
            created_at=doc["created_at"],
            updated_at=doc.get("updated_at", doc["created_at"]),
            last_active_at=doc.get("last_active_at", doc["created_at"]),
        )


@dataclass(frozen=True, slots=True)
class SummaryResult:
    """What :meth:`ConversationMemory.refresh_summary` did."""

    refreshed: bool
    reason: Literal["refreshed", "nothing_new", "below_trigger", "lost_race"]
    folded: int = 0
    summary_through: str | None = None


def check_metadata(metadata: Any) -> dict[str, Any]:
    """Session metadata: ``context`` and ``priority`` short labels, plus free safe keys."""
    if metadata is None:
        return {}
    data = check_mapping(metadata, "metadata")
    for key in ("context", "priority"):
        if data.get(key) is not None:
            check_id(data[key], f"metadata.{key}")
    return data


def _as_new_message(item: Any, where: str) -> NewMessage:
    if isinstance(item, NewMessage):
        return item
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"{where} must be a NewMessage or a mapping")
    unknown = set(item) - _MESSAGE_KEYS
    if unknown:
        raise InvalidInputError(f"{where} has unknown keys {shown(sorted(map(str, unknown)))}")
    tool = item.get("tool")
    if tool is None:
        return NewMessage(item.get("role"), item.get("content"))  # type: ignore[arg-type]
    if not isinstance(tool, Mapping) or set(tool) - _TOOL_KEYS:
        raise InvalidInputError(f"{where}.tool must be a mapping of name, input and result")
    return NewMessage(
        item.get("role"),  # type: ignore[arg-type]
        item.get("content"),
        tool_name=tool.get("name"),
        tool_input=tool.get("input"),
        tool_result=tool.get("result"),
    )


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def _cut(text: str, cap: int) -> str:
    return f"{text[:cap]} …[truncated: {cap} of {len(text)} characters kept]"


def _tool_document(message: NewMessage, where: str, cap: int) -> tuple[dict[str, Any], str]:
    """The stored ``tool`` field and the text a tool message shows when it has no content."""
    name = check_id(message.tool_name, f"{where}.tool.name")
    # Hostile keys and unstorable values are refused even where the value will be cut.
    check_mapping({"input": message.tool_input, "result": message.tool_result}, f"{where}.tool")
    tool: dict[str, Any] = {"name": name}
    cut: list[str] = []
    for field in ("input", "result"):
        value = getattr(message, f"tool_{field}")
        if value is not None and len(_as_text(value)) > cap:
            value = _cut(_as_text(value), cap)
            cut.append(field)
        tool[field] = value
    if cut:
        tool["truncated"] = cut
    if message.tool_result is not None and _as_text(message.tool_result).strip():
        text = _as_text(message.tool_result)
    elif message.tool_input is not None:
        text = "called with " + _as_text(message.tool_input)
    else:
        text = "(no output)"
    return tool, text if len(text) <= cap else _cut(text, cap)


def build_message_documents(
    tenant: Tenant,
    session_id: str,
    messages: Any,
    config: ConversationConfig,
    clock: TurnClock = TURN_CLOCK,
    occurred_at: datetime | None = None,
) -> list[dict[str, Any]]:
    """Validate a whole turn, then make its documents: all or nothing, before any write.
    ``occurred_at`` (checked by the caller): when the turn was said, if not now."""
    if isinstance(messages, str | bytes | Mapping | NewMessage) or not isinstance(
        messages, Sequence
    ):
        raise InvalidInputError("messages must be a list of the turn's messages")
    if not messages:
        raise InvalidInputError("a turn needs at least one message")
    if len(messages) > config.max_turn_messages:
        raise InvalidInputError(f"a turn has at most {config.max_turn_messages} messages")
    checked: list[tuple[str, str, dict[str, Any] | None]] = []
    for index, item in enumerate(messages):
        where = f"messages[{index}]"
        message = _as_new_message(item, where)
        if message.role not in ROLES:
            raise InvalidInputError(
                f"{where}.role must be one of {', '.join(ROLES)}, got {shown(message.role)}"
            )
        tool = None
        if message.role == "tool":
            if message.tool_name is None:
                raise InvalidInputError(f"{where} is a tool message without a tool name")
            tool, text = _tool_document(message, where, config.max_tool_payload_chars)
            content = text if message.content is None else message.content
        else:
            if (message.tool_name, message.tool_input, message.tool_result) != (None,) * 3:
                raise InvalidInputError(f"{where}: only tool messages carry a tool")
            content = message.content
        content = check_text(content, f"{where}.content", max_chars=config.max_message_chars)
        checked.append((message.role, content, tool))
    created_at, prefix = clock.next_turn()
    documents = []
    for index, (role, content, tool) in enumerate(checked):
        document: dict[str, Any] = {
            "_id": new_id("msg"),
            **tenant.filter(),
            "session_id": session_id,
            "seq": f"{prefix}.{index:04d}",
            "role": role,
            "content": content,
            "tokens": estimate_tokens(content),
            "created_at": created_at,
        }
        if occurred_at is not None:
            document["occurred_at"] = occurred_at
        if tool is not None:
            document["tool"] = tool
        check_document_size(document, f"messages[{index}]")
        documents.append(document)
    return documents

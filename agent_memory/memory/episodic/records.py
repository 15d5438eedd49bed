"""The shapes of episodic memory: its settings, a logged action, a found one, and the checks
every value from a caller passes before anything is written."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from agent_memory.checks import check_id, check_int, check_mapping, check_number, shown
from agent_memory.errors import InvalidInputError
from agent_memory.tenancy import check_tenant

__all__ = [
    "OUTCOMES",
    "Action",
    "EpisodicConfig",
    "Outcome",
    "SimilarAction",
    "bounded_payload",
    "check_memory_ids",
    "check_now",
    "check_outcome",
    "check_rating",
    "check_tally",
    "check_tenant",
    "day_start",
    "render_content",
]

OUTCOMES = ("success", "failure", "partial")
Outcome = Literal["success", "failure", "partial"]


@dataclass(frozen=True, slots=True)
class EpisodicConfig:
    """Tunables of episodic memory; the defaults follow the blueprint ("keep 30 days,
    summarise older")."""

    #: ``input`` and ``output`` longer than this (as text or JSON) are stored cut, with a marker.
    max_payload_chars: int = 8_000
    #: Longest ``content`` (the text an action is found by) and ``correction`` accepted.
    max_content_chars: int = 8_000
    max_correction_chars: int = 4_000
    #: Most memory ids one action may credit (a prompt manifest, not a database dump).
    max_memory_ids: int = 200
    #: Logs older than this many days (whole UTC days) are summarised and deleted.
    retention_days: int = 30
    #: Logs summarised per batch, and batches per ``apply_retention`` call.
    retention_batch_size: int = 1_000
    retention_max_batches: int = 100
    #: ``similar_actions``: default number of results, and how many times that many candidates
    #: are fetched when ``min_rating`` has to be applied after the search.
    similar_limit: int = 5
    similar_overfetch: int = 4
    #: Idempotency keys remembered per action, and credit operations remembered per memory.
    idempotency_keys_kept: int = 20
    credit_ops_kept: int = 50

    def __post_init__(self) -> None:
        for name in (
            "max_payload_chars",
            "max_content_chars",
            "max_correction_chars",
            "max_memory_ids",
            "retention_days",
            "retention_batch_size",
            "retention_max_batches",
            "similar_limit",
            "similar_overfetch",
            "idempotency_keys_kept",
            "credit_ops_kept",
        ):
            check_int(getattr(self, name), name, minimum=1)
        if self.retention_days < 2:
            # Back-filled timestamps may be up to retention_days - 1 days old (see log_action).
            raise InvalidInputError("retention_days must be at least 2")


@dataclass(frozen=True, slots=True)
class Action:
    """One logged action as stored (without its embedding)."""

    id: str
    agent_id: str
    user_id: str
    session_id: str
    task_id: str | None
    action_type: str
    outcome: str
    tool: str | None
    input: Any
    output: Any
    duration_ms: float | None
    truncated: bool
    model: str | None
    tokens: int | None
    metadata: dict[str, Any]
    memory_ids: tuple[str, ...]
    content: str
    feedback: dict[str, Any]
    timestamp: datetime

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Action:
        action = doc.get("action") or {}
        metadata = dict(doc.get("metadata") or {})
        model = metadata.pop("model", None)
        tokens = metadata.pop("tokens", None)
        feedback = {
            key: value
            for key, value in (doc.get("feedback") or {}).items()
            # Bookkeeping of the credit protocol, not feedback a caller gave.
            if key not in ("version", "pending", "requests")
        }
        return cls(
            id=doc["_id"],
            agent_id=doc["agent_id"],
            user_id=doc["user_id"],
            session_id=doc["session_id"],
            task_id=doc.get("task_id"),
            action_type=doc["action_type"],
            outcome=doc["outcome"],
            tool=action.get("tool"),
            input=action.get("input"),
            output=action.get("output"),
            duration_ms=action.get("duration_ms"),
            truncated=bool(action.get("truncated", False)),
            model=model,
            tokens=tokens,
            metadata=metadata,
            memory_ids=tuple(doc.get("memory_ids") or ()),
            content=doc.get("content", ""),
            feedback=feedback,
            timestamp=doc["timestamp"],
        )


@dataclass(frozen=True, slots=True)
class SimilarAction:
    """A past action found by meaning, with its relevance and how it was reached.

    ``score`` is the relevance from 0 to 1 the search tier gave the action
    (:attr:`~agent_memory.mongo.search.SearchHit.relevance`): one scale on every tier, the
    one long-term memories and knowledge report. Up to 0.2.0 it was the search's fused score
    on the tier's own scale (weighted z-scores on the plain tier, reciprocal ranks on
    Atlas); that value is ``fused_score`` now."""

    action: Action
    score: float
    explanation: str
    #: The search's fused score on its tier's own scale (what ``score`` was up to 0.2.0); it
    #: orders like ``score`` but compares only within one tier.
    fused_score: float = 0.0


# --- checks ------------------------------------------------------------------------------


def check_outcome(value: Any) -> str:
    if not isinstance(value, str) or value not in OUTCOMES:
        raise InvalidInputError(f"outcome must be one of {', '.join(OUTCOMES)}, got {shown(value)}")
    return value


def check_rating(value: Any, name: str = "rating") -> int:
    """A rating from 1 to 5 as an ``int`` (not a bool, float or string: no silent coercion)."""
    return int(check_int(value, name, minimum=1, maximum=5))


#: The largest tally stored: BSON's 64-bit int holds it.
_MAX_TALLY = 2**63 - 1


def check_tally(value: Any, name: str, *, integer: bool) -> float:
    """A tally of an action (its duration, its tokens): a finite number from 0 to 2**63 - 1,
    an ``int`` when ``integer``; bools are not numbers. Returned as given."""
    if integer:
        return check_int(value, name, minimum=0, maximum=_MAX_TALLY)
    return check_number(value, name, minimum=0, maximum=_MAX_TALLY)


def check_memory_ids(value: Any, *, limit: int) -> list[str]:
    """The prompt manifest: distinct memory ids in the order given."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | set | frozenset):
        raise InvalidInputError("memory_ids must be a list of str ids")
    ids = list(dict.fromkeys(check_id(item, "memory_ids[]") for item in value))
    if len(ids) > limit:
        raise InvalidInputError(f"memory_ids has {len(ids)} ids; the limit is {limit}")
    return ids


def check_now(value: Any, name: str = "now") -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidInputError(f"{name} must be a timezone-aware datetime")
    return value.astimezone(UTC)


def day_start(moment: datetime) -> datetime:
    """Midnight UTC of the day ``moment`` falls on."""
    moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return datetime(moment.year, moment.month, moment.day, tzinfo=UTC)


def day_end(moment: datetime) -> datetime:
    return day_start(moment) + timedelta(days=1)


# --- payloads ----------------------------------------------------------------------------


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))


def bounded_payload(value: Any, name: str, *, max_chars: int) -> tuple[Any, bool]:
    """``value`` checked as storable, and cut to ``max_chars`` when longer (as text or JSON).

    A cut value is stored as text ending in a visible marker, so nobody mistakes it for the
    whole payload; the second item says whether it was cut.
    """
    if value is None:
        return None, False
    # Wrapping validates keys (no '$', no '.') and values at any depth, naming the path.
    check_mapping({name: value}, "action")
    text = _as_text(value)
    if len(text) <= max_chars:
        return value, False
    marker = f"… [truncated: {max_chars} of {len(text)} characters kept]"
    return text[:max_chars] + marker, True


def _flatten(value: Any, budget: int) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value[:budget]
    if isinstance(value, Mapping):
        parts: list[str] = []
        for key, item in value.items():
            parts.append(f"{key}: {_flatten(item, budget)}")
            budget -= len(parts[-1]) + 1
            if budget <= 0:
                break
        return " ".join(parts)
    if isinstance(value, list | tuple):
        return " ".join(_flatten(item, budget) for item in value[:100])
    return str(value)


def render_content(action_type: str, tool: str | None, input: Any, *, max_chars: int) -> str:
    """The default text an action is found by: its type, tool and input, as words."""
    parts = [action_type, tool or "", _flatten(input, max_chars)]
    return " ".join(part for part in parts if part)[:max_chars]

"""What the framework stamps on what it stores: a new id, and the time."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

__all__ = ["new_id", "utcnow"]


def utcnow() -> datetime:
    """Now, in UTC, at the millisecond precision BSON stores (so round trips compare equal)."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def new_id(prefix: str) -> str:
    """A new unique string id such as ``mem_3f2a...`` (the prefix says what it names)."""
    return f"{prefix}_{uuid.uuid4().hex}"

"""Whose data an operation touches: the :class:`Tenant` every store filters on.

On the ground floor with the checks: it imports nothing of the framework above them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_memory.checks import check_id
from agent_memory.errors import InvalidInputError

__all__ = ["Tenant", "check_tenant"]


@dataclass(frozen=True, slots=True)
class Tenant:
    """Whose data an operation touches. Every read and write filters on both fields."""

    agent_id: str
    user_id: str

    def __post_init__(self) -> None:
        check_id(self.agent_id, "agent_id")
        check_id(self.user_id, "user_id")

    def filter(self) -> dict[str, str]:
        return {"agent_id": self.agent_id, "user_id": self.user_id}


def check_tenant(value: Any) -> Tenant:
    """``value`` itself when it is a :class:`Tenant` (a dict or a str posing as one is not)."""
    if not isinstance(value, Tenant):
        raise InvalidInputError(f"tenant must be a Tenant, got {type(value).__name__}")
    return value

"""Working memory's records: what a task, a step and a checkpoint look like to callers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["DONE_STEP_STATUSES", "Checkpoint", "Resumed", "Snapshot", "Step", "Task"]

#: Steps that need no more work.
DONE_STEP_STATUSES = ("completed", "skipped")


@dataclass(frozen=True, slots=True)
class Step:
    """One plan step. ``attempts`` counts how often it was started (resume retries it)."""

    index: int
    action: str
    params: dict[str, Any]
    status: str
    result: Any
    started_at: datetime | None
    finished_at: datetime | None
    attempts: int

    @property
    def done(self) -> bool:
        return self.status in DONE_STEP_STATUSES

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Step:
        return cls(
            index=int(doc["index"]),
            action=doc["action"],
            params=dict(doc.get("params") or {}),
            status=doc["status"],
            result=doc.get("result"),
            started_at=doc.get("started_at"),
            finished_at=doc.get("finished_at"),
            attempts=int(doc.get("attempts", 0)),
        )


def _plan(docs: Sequence[Mapping[str, Any]] | None) -> tuple[Step, ...]:
    return tuple(Step.from_document(doc) for doc in docs or ())


@dataclass(frozen=True, slots=True)
class Task:
    """A task as stored. ``version`` grows by one with every change; pass it back as
    ``expected_version`` to change the task only if nobody changed it since."""

    id: str
    agent_id: str
    user_id: str
    session_id: str
    goal: str
    status: str
    plan: tuple[Step, ...]
    context: dict[str, Any]
    version: int
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    error: str | None
    restored_from: str | None

    @property
    def next_step(self) -> Step | None:
        """The first step that is neither completed nor skipped (``None``: all done)."""
        return next((step for step in self.plan if not step.done), None)

    @property
    def steps_completed(self) -> int:
        return sum(step.status == "completed" for step in self.plan)

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Task:
        return cls(
            id=doc["_id"],
            agent_id=doc["agent_id"],
            user_id=doc["user_id"],
            session_id=doc["session_id"],
            goal=doc["goal"],
            status=doc["status"],
            plan=_plan(doc.get("plan")),
            context=dict(doc.get("context") or {}),
            version=int(doc["version"]),
            created_at=doc["created_at"],
            updated_at=doc["updated_at"],
            completed_at=doc.get("completed_at"),
            error=doc.get("error"),
            restored_from=doc.get("restored_from"),
        )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The part of a task a checkpoint keeps and a restore puts back."""

    status: str
    plan: tuple[Step, ...]
    context: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A saved state of a task. ``version`` is the task's version when it was taken, ``step``
    the number of steps completed by then. ``snapshot`` is ``None`` when not asked for."""

    id: str
    task_id: str
    agent_id: str
    user_id: str
    session_id: str
    version: int
    step: int
    reason: str
    created_at: datetime
    snapshot: Snapshot | None

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Checkpoint:
        raw = doc.get("snapshot")
        snapshot = (
            None
            if raw is None
            else Snapshot(raw["status"], _plan(raw.get("plan")), dict(raw.get("context") or {}))
        )
        return cls(
            id=doc["_id"],
            task_id=doc["task_id"],
            agent_id=doc["agent_id"],
            user_id=doc["user_id"],
            session_id=doc["session_id"],
            version=int(doc["version"]),
            step=int(doc["step"]),
            reason=doc["reason"],
            created_at=doc["created_at"],
            snapshot=snapshot,
        )


@dataclass(frozen=True, slots=True)
class Resumed:
    """What :meth:`WorkingMemory.resume` returns: the task, the step to run next (``None``
    when every step is done) and the indexes of steps put back to ``pending``."""

    task: Task
    next_step: Step | None
    requeued: tuple[int, ...]

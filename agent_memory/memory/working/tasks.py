"""Working memory's rules and shapes: configuration, transition tables, task records.

Pure (no I/O), so the rules are testable without a server. :mod:`.working` applies them.

Task status (``start_task``, ``complete_task``, ``fail_task`` move along these edges only)::

    pending ──start──▶ in_progress ──complete──▶ completed      (final)
       │                    │
       └──────fail──────────┴──────fail──────▶ failed

``restore`` and ``resume`` are the only ways back: from ``pending``, ``in_progress`` or ``failed``
(never from ``completed``, which is final) to the snapshot's status (``restore``) or to
``in_progress`` (``resume``). Plan steps::

    pending ──▶ in_progress ──▶ completed | failed | skipped     (all three final)
       └───────────────────────────────────▶ skipped

Steps move only while their task is ``in_progress``; ``resume`` puts steps left ``in_progress``
by a crash, and ``failed`` steps (to retry them), back to ``pending``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any

import bson

from agent_memory.checks import (
    MAX_DOCUMENT_BYTES,
    MAX_ID_CHARS,
    check_id,
    check_int,
    check_mapping,
    shown,
)
from agent_memory.errors import (
    ConfigurationError,
    ConflictError,
    InvalidInputError,
    InvalidTransitionError,
)
from agent_memory.memory.working.records import DONE_STEP_STATUSES
from agent_memory.tenancy import check_tenant

__all__ = [
    "ACTIVE_STATUSES",
    "EDITABLE_STATUSES",
    "OPEN_STEP_STATUSES",
    "RECOVERABLE_STATUSES",
    "STEP_STATUSES",
    "STEP_TRANSITIONS",
    "TASK_STATUSES",
    "TASK_TRANSITIONS",
    "Change",
    "InvalidTransitionError",
    "WorkingConfig",
    "check_context_updates",
    "check_editable",
    "check_expected_version",
    "check_recoverable",
    "check_step_result",
    "check_step_status",
    "check_step_transition",
    "check_task_transition",
    "check_tenant",
    "check_version",
    "parse_plan",
    "restore_change",
    "resume_change",
    "step_change",
    "step_sources",
    "task_change",
]

TASK_STATUSES = ("pending", "in_progress", "completed", "failed")
STEP_STATUSES = ("pending", "in_progress", "completed", "failed", "skipped")

TASK_TRANSITIONS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "pending": frozenset({"in_progress", "failed"}),
        "in_progress": frozenset({"completed", "failed"}),
        "completed": frozenset(),
        "failed": frozenset(),  # left only through restore or resume
    }
)
STEP_TRANSITIONS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "pending": frozenset({"in_progress", "skipped"}),
        "in_progress": frozenset({"completed", "failed", "skipped"}),
        "completed": frozenset(),
        "failed": frozenset(),  # retried only through resume (back to pending)
        "skipped": frozenset(),
    }
)
#: Tasks an agent still works on (``list_active_tasks``).
ACTIVE_STATUSES = ("pending", "in_progress")
#: Statuses in which context and plan may change and checkpoints may be taken.
EDITABLE_STATUSES = ("pending", "in_progress")
#: Statuses ``restore`` and ``resume`` accept: everything but the final ``completed``.
RECOVERABLE_STATUSES = ("pending", "in_progress", "failed")
#: Steps that block ``complete_task``: not done yet, or failed (retried through resume).
OPEN_STEP_STATUSES = tuple(s for s in STEP_STATUSES if s not in DONE_STEP_STATUSES)

_STEP_OVERHEAD_BYTES = 1_024  # index, action (<= 256 chars), status, timestamps, attempts
_TASK_OVERHEAD_BYTES = 64 * 1_024  # ids, goal, error, timestamps


def _allowed(table: Mapping[str, frozenset[str]], current: str) -> str:
    targets = sorted(table.get(current, ()))
    return f"from {current} only to {', '.join(targets)}" if targets else f"{current} is final"


def check_task_transition(current: str, target: str, *, subject: str = "task") -> None:
    """Raise :class:`InvalidTransitionError` unless ``current -> target`` is in the task table."""
    if target not in TASK_TRANSITIONS.get(current, ()):
        raise InvalidTransitionError(
            subject, current, target, detail=_allowed(TASK_TRANSITIONS, current)
        )


def check_step_transition(current: str, target: str, *, subject: str = "step") -> None:
    """Raise :class:`InvalidTransitionError` unless ``current -> target`` is in the step table."""
    if target not in STEP_TRANSITIONS.get(current, ()):
        raise InvalidTransitionError(
            subject, current, target, detail=_allowed(STEP_TRANSITIONS, current)
        )


def step_sources(target: str) -> tuple[str, ...]:
    """The step statuses from which a step may move to ``target`` (empty: none)."""
    return tuple(s for s in STEP_STATUSES if target in STEP_TRANSITIONS[s])


def check_step_status(value: Any) -> str:
    if not isinstance(value, str) or value not in STEP_STATUSES:
        raise InvalidInputError(
            f"status must be one of {', '.join(STEP_STATUSES)}, got {shown(value)}"
        )
    return value


def check_version(value: Any) -> None:
    """``expected_version``: ``None`` or an int >= 1 (a bool is not a version)."""
    if value is None:
        return
    check_int(value, "expected_version", minimum=1)


def check_expected_version(doc: Mapping[str, Any], expected_version: int | None) -> None:
    """For operations that read first: a stale ``expected_version`` is a conflict, no write."""
    check_version(expected_version)
    if expected_version is not None and doc["version"] != expected_version:
        raise ConflictError(
            f"task {doc['_id']} is at version {doc['version']}, not {expected_version}: a "
            "concurrent change won; read the task again and decide"
        )


def check_editable(doc: Mapping[str, Any], operation: str) -> None:
    """Context and plan change, and checkpoints are taken, only before a task finishes."""
    if doc["status"] not in EDITABLE_STATUSES:
        raise InvalidTransitionError(
            f"task {doc['_id']}",
            doc["status"],
            operation,
            detail=f"{operation} needs a task that is pending or in_progress",
        )


def check_recoverable(doc: Mapping[str, Any], target: str) -> None:
    """restore and resume bring back anything but a completed task."""
    if doc["status"] not in RECOVERABLE_STATUSES:
        raise InvalidTransitionError(
            f"task {doc['_id']}",
            doc["status"],
            target,
            detail="a completed task is final; create a new task to do it again",
        )


def _bson_size(value: Any) -> int:
    return len(bson.encode({"v": value}))


@dataclass(frozen=True, slots=True)
class WorkingConfig:
    """Tunables of working memory. The limits bound every task document by construction:
    ``max_context_bytes + max_steps * 2 * max_step_bytes`` plus overheads must stay under
    MongoDB's 16 MiB, so a step change never needs a read to know the document still fits.
    """

    #: Take a checkpoint after every this many completed steps (blueprint: every 5-10); 0: never.
    checkpoint_every_steps: int = 5
    #: Newest checkpoints kept per task; older ones are deleted when a new one is taken.
    checkpoints_kept: int = 10
    #: BSON size limit of a task's ``context``.
    max_context_bytes: int = 1_048_576
    #: Steps a plan may hold (a plan is a bounded list, not a log).
    max_steps: int = 100
    #: BSON size limit of one step's ``params``, and separately of its ``result``.
    max_step_bytes: int = 32_768
    max_goal_chars: int = 8_000
    max_error_chars: int = 4_000
    #: Attempts for changes that are safe to re-apply after a conflict (see ``WorkingMemory``).
    conflict_retries: int = 3

    def __post_init__(self) -> None:
        for name in ("checkpoints_kept", "max_context_bytes", "max_steps", "max_step_bytes"):
            check_int(getattr(self, name), name, minimum=1, error=ConfigurationError)
        for name in ("max_goal_chars", "max_error_chars", "conflict_retries"):
            check_int(getattr(self, name), name, minimum=1, error=ConfigurationError)
        check_int(
            self.checkpoint_every_steps,
            "checkpoint_every_steps",
            minimum=0,
            error=ConfigurationError,
        )
        worst = (
            self.max_context_bytes
            + self.max_steps * (2 * self.max_step_bytes + _STEP_OVERHEAD_BYTES)
            + 4 * (self.max_goal_chars + self.max_error_chars)  # UTF-8: up to 4 bytes a char
            + _TASK_OVERHEAD_BYTES
        )
        if worst > MAX_DOCUMENT_BYTES:
            raise ConfigurationError(
                f"a task could reach {worst / 1_048_576:.1f} MiB with these limits; MongoDB "
                "stores at most 16 MiB per document: lower max_context_bytes, max_steps or "
                "max_step_bytes"
            )


def parse_plan(plan: Any, config: WorkingConfig, *, first_index: int = 0) -> list[dict[str, Any]]:
    """Step documents for ``plan``: a list of action names or ``{"action", "params"}`` mappings.

    ``first_index`` is the position of the first new step (``add_steps`` appends).
    """
    if plan is None:
        return []
    if isinstance(plan, str | bytes | Mapping) or not isinstance(plan, Sequence):
        raise InvalidInputError(
            f"plan must be a list of steps, got {type(plan).__name__}; "
            'write [{"action": "search", "params": {...}}, ...]'
        )
    if first_index + len(plan) > config.max_steps:
        raise InvalidInputError(
            f"a plan holds at most {config.max_steps} steps; this one would have "
            f"{first_index + len(plan)}"
        )
    steps = []
    for offset, item in enumerate(plan):
        where = f"plan[{first_index + offset}]"
        if isinstance(item, str):
            action, params = item, {}
        elif isinstance(item, Mapping):
            unknown = sorted(map(str, set(item) - {"action", "params"}))
            if unknown:
                raise InvalidInputError(
                    f"{where} has unknown keys {unknown}; a step has action and params"
                )
            action, params = item.get("action"), item.get("params")
            params = {} if params is None else check_mapping(params, f"{where}.params")
        else:
            raise InvalidInputError(
                f"{where} must be an action name or a mapping, got {type(item).__name__}"
            )
        action = check_id(action, f"{where}.action")
        if _bson_size(params) > config.max_step_bytes:
            raise InvalidInputError(
                f"{where}.params exceed {config.max_step_bytes} bytes; keep large data "
                "elsewhere and pass a reference"
            )
        steps.append(
            {
                "index": first_index + offset,
                "action": action,
                "params": params,
                "status": "pending",
                "result": None,
                "started_at": None,
                "finished_at": None,
                "attempts": 0,
            }
        )
    return steps


def check_step_result(result: Any, config: WorkingConfig) -> Any:
    """A step result: ``None``, a scalar, a list or a mapping that MongoDB can store as data."""
    if isinstance(result, Mapping):
        check_mapping(result, "result")
    else:
        check_mapping({"result": result}, "step")  # same rules for a scalar or a list
    if _bson_size(result) > config.max_step_bytes:
        raise InvalidInputError(
            f"result exceeds {config.max_step_bytes} bytes; store large outputs elsewhere "
            "and keep a reference in the result"
        )
    return dict(result) if isinstance(result, Mapping) else result


def check_context_updates(updates: Any) -> dict[str, Any]:
    """Context updates: keys become ``context.<key>`` paths, so each must be a plain field name
    (no leading ``$``, no ``.``); values are data (mappings nested as deep as
    :func:`check_mapping` allows, ``$`` keys refused at every depth). ``None`` removes a key."""
    if isinstance(updates, Mapping) and not updates:
        raise InvalidInputError("updates is empty; pass at least one key")
    checked = check_mapping(updates, "context")
    for key in checked:
        if len(key) > MAX_ID_CHARS:
            raise InvalidInputError(f"context key {shown(key)} is longer than {MAX_ID_CHARS}")
    return checked


# --- changes -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Change:
    """One guarded write of a task: ``guard`` is the filter the server checks (the statuses
    the change starts from), ``update`` the update document, and ``check`` raises the specific
    error for a task document that does not admit the change."""

    guard: dict[str, Any]
    update: dict[str, Any]
    check: Callable[[Mapping[str, Any]], None]


def task_change(task_id: str, target: str, *, now: datetime, error: str | None = None) -> Change:
    """Move a task to ``target`` along the task table."""
    guard: dict[str, Any] = {
        "status": {"$in": [s for s, targets in TASK_TRANSITIONS.items() if target in targets]}
    }
    fields: dict[str, Any] = {"status": target}
    if target == "completed":
        guard["plan.status"] = {"$nin": list(OPEN_STEP_STATUSES)}  # no element is open
        fields["completed_at"] = now
    if error is not None:
        fields["error"] = error

    def check(doc: Mapping[str, Any]) -> None:
        check_task_transition(doc["status"], target, subject=f"task {task_id}")
        open_steps = [s["index"] for s in doc["plan"] if s["status"] in OPEN_STEP_STATUSES]
        if target == "completed" and open_steps:
            raise InvalidTransitionError(
                f"task {task_id}",
                doc["status"],
                target,
                detail=f"steps {open_steps} are not completed or skipped",
            )

    return Change(guard, {"$set": fields}, check)


def step_change(
    task_id: str,
    step_index: Any,
    status: Any,
    result: Any,
    config: WorkingConfig,
    *,
    now: datetime,
) -> Change:
    """Move one plan step to ``status``; every argument is checked before anything is sent."""
    check_int(step_index, "step_index", minimum=0, maximum=config.max_steps - 1)
    target = check_step_status(status)
    subject = f"step {step_index} of task {task_id}"
    sources = step_sources(target)
    if not sources:
        raise InvalidTransitionError(
            subject, "any status", target, detail="only resume puts a step back to pending"
        )
    finishing = target != "in_progress"
    if not finishing and result is not None:
        raise InvalidInputError("a result is given when a step finishes, not when it starts")

    path = f"plan.{step_index}"  # built from a checked int only
    update: dict[str, Any] = {"$set": {f"{path}.status": target}}
    if finishing:
        update["$set"][f"{path}.result"] = check_step_result(result, config)
        update["$set"][f"{path}.finished_at"] = now
    else:
        update["$set"][f"{path}.started_at"] = now
        update["$inc"] = {f"{path}.attempts": 1}

    def check(doc: Mapping[str, Any]) -> None:
        if doc["status"] != "in_progress":
            raise InvalidTransitionError(
                subject,
                f"(task {doc['status']})",
                target,
                detail="steps move only while the task is in_progress (start_task, resume)",
            )
        if step_index >= len(doc["plan"]):
            raise InvalidInputError(
                f"step_index {step_index} is out of range: the plan has {len(doc['plan'])} steps"
            )
        check_step_transition(doc["plan"][step_index]["status"], target, subject=subject)

    # The step's status is in the filter, so the write itself refuses an edge the table does
    # not have, even when no read came before it.
    guard = {"status": "in_progress", f"{path}.status": {"$in": list(sources)}}
    return Change(guard, update, check)


def resume_change(doc: Mapping[str, Any]) -> tuple[tuple[int, ...], Change | None]:
    """The steps ``resume`` puts back to pending, and the change (``None``: nothing to do)."""
    check_recoverable(doc, "in_progress")
    requeue = tuple(s["index"] for s in doc["plan"] if s["status"] in ("in_progress", "failed"))
    if doc["status"] == "in_progress" and not requeue:
        return requeue, None
    fields: dict[str, Any] = {"status": "in_progress", "error": None}
    for index in requeue:
        fields[f"plan.{index}.status"] = "pending"
        for name in ("result", "started_at", "finished_at"):
            fields[f"plan.{index}.{name}"] = None
    return requeue, Change(
        {"status": {"$in": list(RECOVERABLE_STATUSES)}},
        {"$set": fields},
        lambda current: check_recoverable(current, "in_progress"),
    )


def restore_change(saved: Mapping[str, Any]) -> Change:
    """Replace status, plan and context with checkpoint ``saved``'s snapshot, in one update."""
    snapshot = saved["snapshot"]
    fields = {
        "status": snapshot["status"],
        "plan": snapshot["plan"],
        "context": snapshot["context"],
        "completed_at": None,
        "error": None,
        "restored_from": saved["_id"],
    }
    return Change(
        {"status": {"$in": list(RECOVERABLE_STATUSES)}},
        {"$set": fields},
        lambda current: check_recoverable(current, snapshot["status"]),
    )

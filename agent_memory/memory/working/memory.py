"""Working memory: a task's goal, plan, context and checkpoints, changed atomically.

Tasks live in ``tasks`` (one document each, its plan bounded by ``max_steps``); checkpoints in
``checkpoints`` (one document each, the newest ``checkpoints_kept`` per task kept), so no
document grows without bound.

Every change to a task is one ``find_one_and_update`` filtered by the task id, the tenant, the
version the change was computed from and the statuses the transition starts from, with
``$inc: {version: 1}``. When it matches nothing, one read tells the reason:
:class:`~agent_memory.errors.NotFoundError` (no such task for this tenant),
:class:`~agent_memory.errors.ConflictError` (the version moved: a concurrent change won) or
:class:`InvalidTransitionError` (the transition is not allowed from the current status).

Two styles. Pass ``expected_version`` (the ``version`` of the :class:`Task` you hold) to change
the task only if nobody changed it since. Leave it ``None`` and the method reads the current
version first. Conflicts are then retried only for changes whose meaning does not depend on the
state that changed: ``update_context`` (re-read; refused if a concurrent change touched one of
the same keys) and ``fail_task``. Step and task transitions are never retried blindly: their
validity depends on state, so a lost race is a ``ConflictError`` for the caller to handle.

Transitions (the tables are ``TASK_TRANSITIONS`` and ``STEP_TRANSITIONS``):

==============================  ===========================================  =================
operation                       from                                         to
==============================  ===========================================  =================
start_task                      pending                                      in_progress
complete_task                   in_progress, every step completed/skipped    completed (final)
fail_task                       pending, in_progress                         failed
restore                         pending, in_progress, failed                 the snapshot's
resume                          pending, in_progress, failed                 in_progress
update_context, add_steps,      pending, in_progress                         (unchanged)
checkpoint
advance_step (task)             in_progress                                  (unchanged)
advance_step (step)             pending                                      in_progress, skipped
advance_step (step)             in_progress                                  completed, failed,
                                                                             skipped
resume (steps)                  in_progress (left by a crash), failed        pending
==============================  ===========================================  =================

Anything else raises :class:`InvalidTransitionError` (an ``InvalidInputError``) naming the
subject and the edge; nothing is written. ``WorkingConfig``'s limits keep every task document
under 16 MiB by construction, so a step change needs no read to know the result still fits.

``restore`` is unconditional but atomic by default: one update replaces status, plan and
context with the snapshot, so the result is exactly the snapshot, whatever ran concurrently
(changes that land after it are version-guarded against the restored state). Pass
``expected_version`` to make it fail with ``ConflictError`` instead if the task moved.

Round trips (commands the caller waits for, in sequence):

===========================================  ==================================================  =====
operation                                    commands                                            trips
===========================================  ==================================================  =====
create_task                                  insert + update (announced)                         2
get_task                                     find                                                1
list_active_tasks                            find (the token) [+ find, unless kept]              1-2
start_task, complete_task, fail_task,        find_one_and_update + update (announced)            2
advance_step -- with ``expected_version``
the same without ``expected_version``        find + find_one_and_update + update                 3
advance_step that takes an auto-checkpoint   + insert + find (retention) [+ delete]              +2-3
update_context, add_steps                    find + find_one_and_update + update (the read       3
                                             checks the size of the resulting document)
resume                                       find [+ find_one_and_update + update if anything    1-3
                                             changes]
checkpoint                                   find + insert + find (retention) [+ delete]         3-4
list_checkpoints                             find                                                1
restore (latest or chosen)                   find (checkpoint) + find_one_and_update + update    3
forget_user                                  delete (tasks) + delete (checkpoints) + delete      3
                                             (the token)
a write that matches nothing                 + find, to tell NotFound / Conflict / invalid       +1
===========================================  ==================================================  =====

"announced": every write of a task is followed by a new generation token for the user's tasks,
so that the active tasks an agent turn lists are kept between turns while no task changed, in
every process (:mod:`agent_memory.mongo.kept`).

A retried conflict (``update_context``, ``fail_task`` without ``expected_version``) repeats its
trips, at most ``conflict_retries`` times.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import bson

from agent_memory._log import get_logger
from agent_memory.checks import (
    check_count,
    check_document_size,
    check_id,
    check_mapping,
    check_text,
    shown,
)
from agent_memory.errors import ConflictError, InvalidInputError, NotFoundError
from agent_memory.memory.working.records import Checkpoint, Resumed, Snapshot, Step, Task
from agent_memory.memory.working.store import CheckpointStore, TaskStore
from agent_memory.memory.working.tasks import (
    ACTIVE_STATUSES,
    EDITABLE_STATUSES,
    STEP_TRANSITIONS,
    TASK_TRANSITIONS,
    Change,
    InvalidTransitionError,
    WorkingConfig,
    check_context_updates,
    check_editable,
    check_expected_version,
    check_tenant,
    check_version,
    parse_plan,
    restore_change,
    resume_change,
    step_change,
    task_change,
)
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.connection import Connection
from agent_memory.mongo.kept import KeptReads
from agent_memory.stamps import new_id, utcnow
from agent_memory.tenancy import Tenant

__all__ = [
    "STEP_TRANSITIONS",
    "TASK_TRANSITIONS",
    "Checkpoint",
    "InvalidTransitionError",
    "Resumed",
    "Snapshot",
    "Step",
    "Task",
    "WorkingConfig",
    "WorkingMemory",
]

logger = get_logger(__name__)

TASKS = "tasks"
CHECKPOINTS = "checkpoints"
_TASK_EVENTS = {
    "in_progress": "task_started",
    "completed": "task_completed",
    "failed": "task_failed",
}
_MISSING = object()


class WorkingMemory:
    """The state of the tasks an agent is working on: goal, plan steps, context, checkpoints.

    Uses the caller's :class:`~agent_memory.mongo.connection.Connection`; never opens one.

    Example (inside a coroutine; ``connection`` from :func:`agent_memory.connect`)::

        memory = WorkingMemory(connection, config=WorkingConfig(checkpoint_every_steps=5))
        tenant = Tenant("travel-agent", "user-456")
        task = await memory.create_task(tenant, "s-1", "Plan a trip", plan=["flights", "hotel"])
        task = await memory.start_task(tenant, task.id)
        task = await memory.update_context(tenant, task.id, {"city": "Lisbon"})
        # Pass the version you hold: the change applies only if nobody moved the task since.
        task = await memory.advance_step(
            tenant, task.id, 0, status="in_progress", expected_version=task.version
        )
        task = await memory.advance_step(
            tenant, task.id, 0, status="completed", result={"flight": "TP 123"}
        )
        resumed = await memory.resume(tenant, task.id)  # after a crash
        assert resumed.next_step.action == "hotel"
    """

    def __init__(self, connection: Connection, *, config: WorkingConfig | None = None) -> None:
        self.connection = connection
        self.config = config or WorkingConfig()
        self.tasks = connection.collection(TASKS)
        self.checkpoints = connection.collection(CHECKPOINTS)
        #: Active tasks as last listed, kept while the user's token says no task changed (an
        #: agent turn lists them every time; they change when the model plans).
        self.kept = KeptReads(connection, TASKS)
        self._store = TaskStore(
            self.tasks, conflict_retries=self.config.conflict_retries, announce=self._announce
        )
        self._saved = CheckpointStore(self.checkpoints, kept=self.config.checkpoints_kept)

    # --- creating and reading -----------------------------------------------------------------

    async def create_task(
        self,
        tenant: Tenant,
        session_id: str,
        goal: str,
        *,
        plan: Sequence[str | Mapping[str, Any]] | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> Task:
        """A new ``pending`` task at version 1. ``plan`` lists action names or
        ``{"action": ..., "params": {...}}`` mappings; ``context`` follows the rules of
        :meth:`update_context`."""
        check_tenant(tenant)
        now = utcnow()
        empty = context is None or (isinstance(context, Mapping) and not context)
        initial = {} if empty else check_context_updates(context)
        doc = {
            "_id": new_id("task"),
            **tenant.filter(),
            "session_id": check_id(session_id, "session_id"),
            "goal": check_text(goal, "goal", max_chars=self.config.max_goal_chars),
            "status": "pending",
            "plan": parse_plan(plan, self.config),
            "context": self._sized({k: v for k, v in initial.items() if v is not None}),
            "version": 1,
            "created_at": now,
            "updated_at": now,
            "completed_at": None,
            "error": None,
            "restored_from": None,
        }
        with translate_errors("creating a task"):
            try:
                await self.tasks.insert_one(doc)
            finally:
                await self._announce(tenant)
        logger.info(
            "task_created", task_id=doc["_id"], agent_id=tenant.agent_id, steps=len(doc["plan"])
        )
        return Task.from_document(doc)

    async def get_task(self, tenant: Tenant, task_id: str) -> Task:
        """The task, or :class:`~agent_memory.errors.NotFoundError` (also for another tenant's)."""
        check_tenant(tenant)
        return Task.from_document(await self._store.read(check_id(task_id, "task_id"), tenant))

    async def list_active_tasks(
        self, tenant: Tenant, session_id: str | None = None, *, limit: int = 50
    ) -> list[Task]:
        """Pending and in-progress tasks, most recently updated first."""
        check_tenant(tenant)
        query: dict[str, Any] = {**tenant.filter(), "status": {"$in": list(ACTIVE_STATUSES)}}
        if session_id is not None:
            query["session_id"] = check_id(session_id, "session_id")
        check_count(limit, "limit", maximum=1_000)

        async def listed() -> list[dict[str, Any]]:
            # Sorted on updated_at alone, so the tenant_*_status_updated index serves it.
            return await self.tasks.find(query).sort("updated_at", -1).limit(limit).to_list(None)

        with translate_errors("listing active tasks"):
            docs = await self.kept.read(tenant.filter(), ("active", session_id, limit), listed)
        return [Task.from_document(doc) for doc in docs]

    async def list_tasks(
        self, tenant: Tenant, session_id: str | None = None, *, limit: int = 50
    ) -> list[Task]:
        """Every task of the tenant, finished ones too (completed, failed, cancelled), most
        recently updated first; :meth:`list_active_tasks` is the one an agent resumes from."""
        check_tenant(tenant)
        query: dict[str, Any] = dict(tenant.filter())
        if session_id is not None:
            query["session_id"] = check_id(session_id, "session_id")
        check_count(limit, "limit", maximum=1_000)
        with translate_errors("listing tasks"):
            docs = (
                await self.tasks.find(query)
                .sort([("updated_at", -1), ("_id", -1)])
                .limit(limit)
                .to_list(None)
            )
        return [Task.from_document(doc) for doc in docs]

    async def _announce(self, tenant: Tenant) -> None:
        """After a write of the tenant's tasks (landed or not): every process lists them anew."""
        with translate_errors("announcing a task change"):
            await self.kept.announce(tenant.filter())

    # --- task transitions ---------------------------------------------------------------------

    async def start_task(
        self, tenant: Tenant, task_id: str, *, expected_version: int | None = None
    ) -> Task:
        """``pending`` -> ``in_progress``."""
        return await self._move_task(tenant, task_id, expected_version, "in_progress")

    async def complete_task(
        self, tenant: Tenant, task_id: str, *, expected_version: int | None = None
    ) -> Task:
        """``in_progress`` -> ``completed``; every step must be completed or skipped (a failed
        step is retried through :meth:`resume`, or the task failed with :meth:`fail_task`)."""
        return await self._move_task(tenant, task_id, expected_version, "completed")

    async def fail_task(
        self, tenant: Tenant, task_id: str, *, error: str, expected_version: int | None = None
    ) -> Task:
        """``pending`` or ``in_progress`` -> ``failed`` with ``error`` saying why. Without
        ``expected_version`` a conflict is retried: failing is valid whatever changed."""
        check_tenant(tenant)
        error = check_text(error, "error", max_chars=self.config.max_error_chars)
        return await self._move_task(tenant, task_id, expected_version, "failed", error=error)

    async def _move_task(
        self,
        tenant: Tenant,
        task_id: str,
        expected_version: int | None,
        target: str,
        *,
        error: str | None = None,
    ) -> Task:
        check_tenant(tenant)
        task_id = check_id(task_id, "task_id")
        now = utcnow()
        doc = await self._store.change(
            "moving a task",
            task_id,
            tenant,
            expected_version,
            task_change(task_id, target, now=now, error=error),
            now=now,
            retry=target == "failed",
        )
        logger.info(
            _TASK_EVENTS[target], task_id=task_id, agent_id=tenant.agent_id, version=doc["version"]
        )
        return Task.from_document(doc)

    # --- steps and context --------------------------------------------------------------------

    async def advance_step(
        self,
        tenant: Tenant,
        task_id: str,
        step_index: int,
        *,
        status: str,
        result: Any = None,
        expected_version: int | None = None,
    ) -> Task:
        """Move step ``step_index`` to ``status`` (``in_progress``, ``completed``, ``failed`` or
        ``skipped``), with an optional ``result`` (a scalar, list or mapping of data) when it
        finishes. Steps move only while the task is ``in_progress``. Every
        ``checkpoint_every_steps`` completed steps a checkpoint is taken from the updated task
        (no extra read); if that fails the step stays moved and ``auto_checkpoint_failed`` is
        logged."""
        check_tenant(tenant)
        task_id = check_id(task_id, "task_id")
        now = utcnow()
        change = step_change(task_id, step_index, status, result, self.config, now=now)
        doc = await self._store.change(
            "advancing a step", task_id, tenant, expected_version, change, now=now
        )
        logger.info(
            "step_advanced",
            task_id=task_id,
            agent_id=tenant.agent_id,
            step=step_index,
            status=status,
            version=doc["version"],
        )
        every = self.config.checkpoint_every_steps
        completed = sum(step["status"] == "completed" for step in doc["plan"])
        if status == "completed" and every and completed % every == 0:
            try:
                await self._saved.save(doc, reason="auto")
            except Exception as exc:  # the step is committed; a failed snapshot must not undo it
                logger.warning(
                    "auto_checkpoint_failed",
                    task_id=task_id,
                    error=type(exc).__name__,
                    detail=str(exc)[:200],
                )
        return Task.from_document(doc)

    async def add_steps(
        self,
        tenant: Tenant,
        task_id: str,
        steps: Sequence[str | Mapping[str, Any]],
        *,
        expected_version: int | None = None,
    ) -> Task:
        """Append steps to the plan (up to ``max_steps`` in all) of a pending or running task."""
        check_tenant(tenant)
        task_id = check_id(task_id, "task_id")
        if not steps:
            raise InvalidInputError("steps is empty; pass at least one step")
        parse_plan(steps, self.config)  # refuse bad steps before any read
        doc = await self._store.read(task_id, tenant)
        check_expected_version(doc, expected_version)
        check_editable(doc, "add_steps")
        new = parse_plan(steps, self.config, first_index=len(doc["plan"]))
        check_document_size({**doc, "plan": [*doc["plan"], *new]}, f"task {task_id}")
        change = Change(
            {"status": {"$in": list(EDITABLE_STATUSES)}},
            {"$push": {"plan": {"$each": new}}},
            lambda current: check_editable(current, "add_steps"),
        )
        updated = await self._store.change(
            "adding steps", task_id, tenant, doc["version"], change, now=utcnow()
        )
        logger.info("steps_added", task_id=task_id, agent_id=tenant.agent_id, count=len(new))
        return Task.from_document(updated)

    async def update_context(
        self,
        tenant: Tenant,
        task_id: str,
        updates: Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> Task:
        """Set context keys; a key whose value is ``None`` is removed. Keys are plain field
        names (no leading ``$``, no ``.``); values are data, with ``$`` keys refused at every
        depth. Only the named keys change (``$set``/``$unset`` of ``context.<key>``), so
        without ``expected_version`` a conflict is retried, unless the concurrent change
        touched one of these keys. The resulting task is size-checked before writing."""
        check_tenant(tenant)
        task_id = check_id(task_id, "task_id")
        updates = check_context_updates(updates)
        check_version(expected_version)
        sets = {f"context.{k}": v for k, v in updates.items() if v is not None}
        unsets = {f"context.{k}": "" for k, v in updates.items() if v is None}
        change = Change(
            {"status": {"$in": list(EDITABLE_STATUSES)}},
            {"$set": sets} | ({"$unset": unsets} if unsets else {}),
            lambda current: check_editable(current, "update_context"),
        )
        seen: dict[str, Any] | None = None
        attempts = self.config.conflict_retries if expected_version is None else 1
        for attempt in range(1, attempts + 1):
            doc = await self._store.read(task_id, tenant)
            check_expected_version(doc, expected_version)
            check_editable(doc, "update_context")
            current = {key: doc["context"].get(key, _MISSING) for key in updates}
            if seen is not None and current != seen:
                raise ConflictError(
                    f"task {task_id}: a concurrent change updated the same context keys; "
                    "read the task again and decide"
                )
            seen = current
            context = {k: v for k, v in doc["context"].items() if k not in updates}
            context = self._sized(context | {k: v for k, v in updates.items() if v is not None})
            check_document_size({**doc, "context": context}, f"task {task_id}")
            try:
                updated = await self._store.change(
                    "updating task context", task_id, tenant, doc["version"], change, now=utcnow()
                )
            except ConflictError:
                if attempt == attempts:
                    raise
                continue
            logger.info(
                "task_context_updated",
                task_id=task_id,
                agent_id=tenant.agent_id,
                keys=len(updates),
                version=updated["version"],
                attempts=attempt,
            )
            return Task.from_document(updated)
        raise AssertionError("unreachable")  # pragma: no cover

    # --- checkpoints, restore, resume ---------------------------------------------------------

    async def checkpoint(
        self, tenant: Tenant, task_id: str, *, reason: str = "manual"
    ) -> Checkpoint:
        """Save the task's status, plan and context with the version it has now. Keeps the
        newest ``checkpoints_kept`` checkpoints of the task and deletes older ones."""
        check_tenant(tenant)
        task_id = check_id(task_id, "task_id")
        if reason not in ("manual", "auto"):
            raise InvalidInputError(f"reason must be 'manual' or 'auto', got {shown(reason)}")
        doc = await self._store.read(task_id, tenant)
        check_editable(doc, "checkpoint")
        return Checkpoint.from_document(await self._saved.save(doc, reason=reason))

    async def list_checkpoints(
        self, tenant: Tenant, task_id: str, *, include_snapshot: bool = False
    ) -> list[Checkpoint]:
        """The task's checkpoints, newest first (empty for an unknown or another tenant's
        task). Snapshots are left out unless asked for: each can be as large as the task."""
        check_tenant(tenant)
        task_id = check_id(task_id, "task_id")
        docs = await self._saved.list(task_id, tenant, include_snapshot=include_snapshot)
        return [Checkpoint.from_document(doc) for doc in docs]

    async def restore(
        self,
        tenant: Tenant,
        task_id: str,
        *,
        checkpoint_id: str | None = None,
        expected_version: int | None = None,
    ) -> Task:
        """Put the task back to a checkpoint (the latest, or ``checkpoint_id``) in one atomic
        update of status, plan and context; the version still grows. Only this task's own
        checkpoints, for this tenant, are considered. A completed task is final and is not
        restored. Without ``expected_version`` the restore applies whatever changed since
        (atomically: the task is exactly the snapshot afterwards); with it, a task that moved
        is a :class:`~agent_memory.errors.ConflictError` and nothing is written."""
        check_tenant(tenant)
        task_id = check_id(task_id, "task_id")
        check_version(expected_version)
        if checkpoint_id is not None:
            checkpoint_id = check_id(checkpoint_id, "checkpoint_id")
        saved = await self._saved.find(task_id, tenant, checkpoint_id)
        if saved is None:
            which = f"checkpoint {checkpoint_id}" if checkpoint_id else "no checkpoint"
            raise NotFoundError(f"{which} for task {task_id} of this tenant; nothing restored")
        doc = await self._store.change(
            "restoring a checkpoint",
            task_id,
            tenant,
            expected_version,
            restore_change(saved),
            now=utcnow(),
            read_first=False,
        )
        logger.info(
            "task_restored",
            task_id=task_id,
            agent_id=tenant.agent_id,
            checkpoint_id=saved["_id"],
            version=doc["version"],
        )
        return Task.from_document(doc)

    async def resume(
        self, tenant: Tenant, task_id: str, *, expected_version: int | None = None
    ) -> Resumed:
        """Pick a task up again (after a crash, or to retry a failure): the task becomes
        ``in_progress``, steps left ``in_progress`` and ``failed`` steps go back to ``pending``
        in one atomic update, and the first step not completed or skipped is returned as the
        one to run. Call it only when no other worker is still running the task."""
        check_tenant(tenant)
        task_id = check_id(task_id, "task_id")
        doc = await self._store.read(task_id, tenant)
        check_expected_version(doc, expected_version)
        requeue, change = resume_change(doc)
        if change is not None:
            doc = await self._store.change(
                "resuming a task", task_id, tenant, doc["version"], change, now=utcnow()
            )
        task = Task.from_document(doc)
        logger.info(
            "task_resumed",
            task_id=task_id,
            agent_id=tenant.agent_id,
            requeued=len(requeue),
            version=task.version,
        )
        return Resumed(task=task, next_step=task.next_step, requeued=requeue)

    # --- forgetting ---------------------------------------------------------------------------

    async def forget_user(self, tenant: Tenant) -> dict[str, int]:
        """Delete every task and checkpoint of the tenant; returns the count per collection.
        Stop the user's running workers first: a checkpoint they take afterwards survives."""
        check_tenant(tenant)
        with translate_errors("forgetting a user's tasks"):
            tasks = await self.tasks.delete_many(tenant.filter())
            checkpoints = await self.checkpoints.delete_many(tenant.filter())
            await self.kept.erase(tenant.filter())
        counts = {TASKS: tasks.deleted_count, CHECKPOINTS: checkpoints.deleted_count}
        logger.info("tasks_forgotten", agent_id=tenant.agent_id, **counts)
        return counts

    def _sized(self, context: Mapping[str, Any]) -> dict[str, Any]:
        """``context`` if it is storable data within ``max_context_bytes``."""
        context = check_mapping(context, "context")
        size = len(bson.encode(context))
        if size > self.config.max_context_bytes:
            raise InvalidInputError(
                f"the task context would be {size} bytes; the limit is "
                f"{self.config.max_context_bytes} (WorkingConfig.max_context_bytes)"
            )
        return context

"""The two collections behind working memory, and the one guarded write every change uses.

:class:`TaskStore` owns ``tasks``: every change is a single ``find_one_and_update`` filtered by
id, tenant, version and the statuses the change starts from. :class:`CheckpointStore` owns
``checkpoints``: snapshots with bounded retention. :mod:`.working` composes them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from pymongo import ReturnDocument

from agent_memory._log import get_logger
from agent_memory.errors import ConflictError, NotFoundError
from agent_memory.memory.working.tasks import Change, check_tenant, check_version
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.batches import delete_in
from agent_memory.stamps import new_id, utcnow
from agent_memory.tenancy import Tenant

__all__ = ["CheckpointStore", "TaskStore"]

logger = get_logger(__name__)

#: Raises the specific error for a task document a change does not apply to.
Check = Callable[[Mapping[str, Any]], None]

#: Newest first. The task version grows with every change (restores too), so it orders
#: checkpoints even when two share a millisecond; equal versions hold equal snapshots.
CHECKPOINT_ORDER = [("version", -1), ("created_at", -1)]


class TaskStore:
    """Reads and guarded writes of task documents."""

    def __init__(
        self,
        collection: Any,
        *,
        conflict_retries: int,
        announce: Callable[[Tenant], Awaitable[None]] | None = None,
    ) -> None:
        self.collection = collection
        self.conflict_retries = conflict_retries
        #: Called after every write (landed or not), so that kept task lists are read again.
        self.announce = announce

    async def read(self, task_id: str, tenant: Tenant) -> dict[str, Any]:
        with translate_errors("reading a task"):
            doc = await self.collection.find_one({"_id": task_id, **tenant.filter()})
        if doc is None:
            raise NotFoundError(f"no task {task_id} for this tenant")
        return doc

    async def change(
        self,
        action: str,
        task_id: str,
        tenant: Tenant,
        expected_version: int | None,
        change: Change,
        *,
        now: datetime,
        retry: bool = False,
        read_first: bool = True,
    ) -> dict[str, Any]:
        """Apply ``change`` in one atomic ``find_one_and_update`` guarded by tenant, version and
        the change's guard; return the task after it.

        Without ``expected_version`` the current version is read first and checked, so an
        invalid change is refused without a write; with ``read_first=False`` the update applies
        whatever the version (restore). ``retry`` re-reads and re-applies after a conflict, for
        changes whose meaning does not depend on the state that changed."""
        check_tenant(tenant)
        check_version(expected_version)
        check, guard = change.check, change.guard
        update = {
            **change.update,
            "$set": {**change.update.get("$set", {}), "updated_at": now},
            "$inc": {**change.update.get("$inc", {}), "version": 1},
        }
        attempts = self.conflict_retries if retry and expected_version is None else 1
        for attempt in range(1, attempts + 1):
            version = expected_version
            if version is None and read_first:
                current = await self.read(task_id, tenant)
                check(current)
                version = current["version"]
            query = {"_id": task_id, **tenant.filter(), **guard}
            if version is not None:
                query["version"] = version
            with translate_errors(action):
                try:
                    doc = await self.collection.find_one_and_update(
                        query, update, return_document=ReturnDocument.AFTER
                    )
                except BaseException:  # it may have landed
                    await self._announce(tenant)
                    raise
            if doc is not None:
                await self._announce(tenant)
                return doc
            try:
                await self._explain_miss(task_id, tenant, version, check)
            except ConflictError:
                if attempt == attempts:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _announce(self, tenant: Tenant) -> None:
        if self.announce is not None:
            await self.announce(tenant)

    async def _explain_miss(
        self, task_id: str, tenant: Tenant, version: int | None, check: Check
    ) -> None:
        """Raise why a guarded write matched nothing: one read tells the cases apart."""
        current = await self.read(task_id, tenant)  # NotFoundError, another tenant's id too
        if version is not None and current["version"] != version:
            logger.info(
                "task_conflict_detected",
                task_id=task_id,
                expected=version,
                found=current["version"],
            )
            raise ConflictError(
                f"task {task_id} is at version {current['version']}, not {version}: a "
                "concurrent change won; read the task again and decide"
            )
        check(current)
        raise ConflictError(f"task {task_id} changed while it was being updated; read it again")


class CheckpointStore:
    """Checkpoint documents: one per snapshot, the newest ``kept`` per task."""

    def __init__(self, collection: Any, *, kept: int) -> None:
        self.collection = collection
        self.kept = kept

    async def save(self, task: dict[str, Any], *, reason: str) -> dict[str, Any]:
        """Snapshot ``task`` as it is (with its version), then prune older checkpoints."""
        doc = {
            "_id": new_id("ckpt"),
            "task_id": task["_id"],
            "agent_id": task["agent_id"],
            "user_id": task["user_id"],
            "session_id": task["session_id"],
            "version": task["version"],
            "step": sum(step["status"] == "completed" for step in task["plan"]),
            "snapshot": {
                "status": task["status"],
                "plan": task["plan"],
                "context": task["context"],
            },
            "reason": reason,
            "created_at": utcnow(),
        }
        owner = {"task_id": task["_id"], "agent_id": task["agent_id"], "user_id": task["user_id"]}
        with translate_errors("saving a checkpoint"):
            await self.collection.insert_one(doc)
            # Retention after the insert: a crash in between leaves one extra checkpoint,
            # which the next checkpoint's pruning removes.
            cursor = self.collection.find(owner, {"_id": 1}).sort(CHECKPOINT_ORDER)
            stale = await cursor.skip(self.kept).limit(1_000).to_list(None)
            ids = [item["_id"] for item in stale]
            await delete_in(self.collection, ids, lambda part: {"_id": {"$in": part}, **owner})
        logger.info(
            "checkpoint_taken",
            task_id=task["_id"],
            agent_id=task["agent_id"],
            version=task["version"],
            reason=reason,
            pruned=len(stale),
        )
        return doc

    async def list(
        self, task_id: str, tenant: Tenant, *, include_snapshot: bool
    ) -> list[dict[str, Any]]:
        projection = None if include_snapshot else {"snapshot": 0}
        with translate_errors("listing checkpoints"):
            cursor = self.collection.find({"task_id": task_id, **tenant.filter()}, projection)
            return await cursor.sort(CHECKPOINT_ORDER).limit(1_000).to_list(None)

    async def find(
        self, task_id: str, tenant: Tenant, checkpoint_id: str | None
    ) -> dict[str, Any] | None:
        """The chosen checkpoint, or the latest: only ever one of this task and tenant."""
        query: dict[str, Any] = {"task_id": task_id, **tenant.filter()}
        if checkpoint_id is not None:
            query["_id"] = checkpoint_id
        with translate_errors("reading a checkpoint"):
            return await self.collection.find_one(query, sort=CHECKPOINT_ORDER)

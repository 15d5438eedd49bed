"""Stored data an earlier version wrote in a form a newer one keys differently, and indexes
a newer version replaced.

Run by ``agent-memory indexes setup`` (:class:`~agent_memory.mongo.indexes.IndexManager`)
and by ``MongoCheckpointer.setup``: a collection's migration before its indexes are created,
its retired indexes dropped after their replacements exist (so a unique key is never left
unenforced). Each step is idempotent and touches only what is still in the old form.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId

from agent_memory._log import get_logger
from agent_memory.mongo import _driver
from agent_memory.mongo.catalog import CollectionSpec
from agent_memory.mongo.connection import META_COLLECTION
from agent_memory.mongo.search.snapshots import GENERATIONS
from agent_memory.stamps import utcnow

__all__ = [
    "MIGRATIONS",
    "action_hours",
    "memory_event_times",
    "THREAD_COLLECTIONS",
    "retire_indexes",
    "retired_present",
    "session_ids_per_tenant",
    "threads_per_tenant",
]

logger = get_logger(__name__)

#: The LangGraph checkpointer's collections (unprefixed): checkpoints, then their writes.
THREAD_COLLECTIONS = ("lg_checkpoints", "lg_checkpoint_writes")
_BATCH = 100
#: How far before the previous run a run of :func:`threads_per_tenant` looks again: documents
#: get their ``_id`` (and its time) from the clock of the process that wrote them.
_CLOCK_MARGIN = timedelta(hours=1)


def _sibling(collection: Any, name: str) -> Any:
    """The collection ``name`` beside ``collection``, with the same prefix."""
    for own in THREAD_COLLECTIONS:
        if collection.name.endswith(own):
            return collection.database[collection.name[: -len(own)] + name]
    raise ValueError(f"{collection.name} is not a LangGraph collection")  # pragma: no cover


async def threads_per_tenant(collection: Any) -> int:
    """LangGraph state stored before thread ids were per tenant.

    The earlier checkpointer stored ``agent_id`` and ``user_id`` only for runs that named
    them, and let a run naming neither write into a thread a user owned (for example
    ``update_state`` with only ``thread_id``); that state was part of the owner's thread (its
    ``forget_user`` erased it). Such documents, in a thread that holds one user's
    checkpoints, are given that user's ``agent_id`` and ``user_id``; documents of threads
    nobody owns get both as ``null``, the form of a thread run without a tenant now. A
    thread with checkpoints of two users (a race the earlier check could lose, or a user's
    new thread of an id another used before) keeps its unattributed documents as they were:
    no config reads them and no user's erasure deletes them. One warning counts those
    threads and says how to find them (no thread ids: they may hold user data). Returns the
    documents changed.

    The first run reads every document without the keys (an index on ``agent_id`` holds a
    missing key as null, so it reads every anonymous one too); it records in the ``meta``
    collection when it ran, and later runs read only documents inserted since then, less
    an hour (by ``_id``, indexed and in time order). A document an earlier version's process
    writes after that (a rolling upgrade) is read by no config meanwhile (anonymous reads
    match stored nulls only), is erased with the thread's owner, and is attributed by the
    next run, by the same rules. One an old process *replaces* in place keeps its old
    ``_id`` and is not looked at again: run setup after the last old process has stopped.
    """
    checkpoints = _sibling(collection, THREAD_COLLECTIONS[0])
    meta = _sibling(collection, META_COLLECTION)
    marker = f"migration.threads_per_tenant.{collection.name}"
    started = utcnow()
    legacy: dict[str, Any] = {"agent_id": {"$exists": False}}
    done = await meta.find_one({"_id": marker})
    checked_to = (done or {}).get("checked_to")
    if isinstance(checked_to, datetime):
        legacy["_id"] = {"$gt": ObjectId.from_datetime(checked_to - _CLOCK_MARGIN)}
    rows = await _driver.aggregate(
        collection, [{"$match": legacy}, {"$group": {"_id": "$thread_id"}}]
    )
    threads = sorted(row["_id"] for row in rows if isinstance(row["_id"], str))
    changed = shared = 0
    for start in range(0, len(threads), _BATCH):
        batch = threads[start : start + _BATCH]
        owners: dict[str, set[tuple[str, str]]] = {}
        async for row in checkpoints.find(
            {"thread_id": {"$in": batch}, "agent_id": {"$ne": None}},
            {"thread_id": 1, "agent_id": 1, "user_id": 1, "_id": 0},
        ):
            owners.setdefault(row["thread_id"], set()).add((row["agent_id"], row["user_id"]))
        for thread in batch:
            found = owners.get(thread, set())
            if len(found) > 1:
                shared += 1
                continue
            agent_id, user_id = next(iter(found)) if found else (None, None)
            result = await collection.update_many(
                {"thread_id": thread, **legacy},
                {"$set": {"agent_id": agent_id, "user_id": user_id}},
            )
            changed += result.modified_count
    if shared:
        logger.warning(
            "langgraph_threads_not_migrated",
            collection=collection.name,
            threads=shared,
            reason="each holds checkpoints of more than one user, so its documents without "
            "agent_id cannot be given to one; no config reads them and no erasure deletes them",
            remedy=f'find them with db.{collection.name}.find({{"agent_id": {{"$exists": false}}}}) '
            "and delete them, or set their agent_id and user_id to their owner's, by hand",
        )
    if changed:
        logger.info("langgraph_threads_migrated", collection=collection.name, count=changed)
    await meta.update_one({"_id": marker}, {"$set": {"checked_to": started}}, upsert=True)
    return changed


async def session_ids_per_tenant(sessions: Any) -> int:
    """Sessions stored when a session id was global kept it in ``_id`` only: copy it to
    ``session_id``, which every query and the unique ``tenant_session`` index use."""
    result = await sessions.update_many(
        {"session_id": {"$exists": False}}, [{"$set": {"session_id": "$_id"}}]
    )
    if result.modified_count:
        logger.info("sessions_migrated", field="session_id", count=result.modified_count)
    return result.modified_count


async def action_hours(logs: Any) -> int:
    """Action logs stored before they carried their UTC ``hour`` (``"YYYY-MM-DDTHH"``), which
    success rates count by and lists of the newest actions sort by: given it, from their
    ``timestamp``."""
    result = await logs.update_many(
        {"hour": {"$exists": False}, "timestamp": {"$type": "date"}},
        [{"$set": {"hour": {"$dateToString": {"format": "%Y-%m-%dT%H", "date": "$timestamp"}}}}],
    )
    if result.modified_count:
        logger.info("action_logs_migrated", field="hour", count=result.modified_count)
    return result.modified_count


async def memory_event_times(memories: Any) -> int:
    """Memories stored before they carried their event time (``occurred_at``, when what
    they say was said) are given their ``created_at``, the moment they were stored, which is
    what ranking read as their event time: a search kept to a span of time
    (``LongTermMemory.retrieve``'s ``since``/``until``) then finds them too.

    A process that keeps a user's memories for its searches would not see this write, which
    announces itself to no one: when anything changed, every user's generation token of
    the collection is deleted, so each such process reads the memories again at its next
    search (as after a user's erasure)."""
    result = await memories.update_many(
        {"occurred_at": {"$exists": False}, "created_at": {"$type": "date"}},
        [{"$set": {"occurred_at": "$created_at"}}],
    )
    if result.modified_count:
        named = re.escape(f'"collection":{json.dumps(memories.name, ensure_ascii=False)}')
        prefix = memories.name[: -len("memories")] if memories.name.endswith("memories") else ""
        await memories.database[prefix + GENERATIONS].delete_many({"_id": {"$regex": named}})
        logger.info("memories_migrated", field="occurred_at", count=result.modified_count)
    return result.modified_count


#: Data changes a collection needs before its indexes can be created, by collection name.
MIGRATIONS: dict[str, Callable[[Any], Awaitable[int]]] = {
    "action_logs": action_hours,
    "memories": memory_event_times,
    "sessions": session_ids_per_tenant,
    **dict.fromkeys(THREAD_COLLECTIONS, threads_per_tenant),
}


def retired_present(spec: CollectionSpec, existing: dict[str, dict[str, Any]]) -> list[Any]:
    """The retired indexes of ``spec`` among ``existing`` (by name, with the old key)."""
    return [old for old in spec.retired if old.matches(existing.get(old.name))]


async def retire_indexes(collection: Any, spec: CollectionSpec) -> list[Any]:
    """Drop the retired indexes of ``spec`` whose replacement exists; returns those dropped."""
    existing = {index["name"]: index for index in await _driver.list_indexes(collection)}
    dropped = []
    for old in retired_present(spec, existing):
        if old.replaced_by not in existing:
            continue
        await collection.drop_index(old.name)
        logger.info("index_retired", collection=collection.name, index=old.name, by=old.replaced_by)
        dropped.append(old)
    return dropped

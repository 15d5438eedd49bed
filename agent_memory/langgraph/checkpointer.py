"""A LangGraph checkpointer on MongoDB, built on pymongo's async API (none exists upstream).

One document per checkpoint in ``lg_checkpoints`` and one per pending write in
``lg_checkpoint_writes`` (the configured prefix applies), so no document grows with a thread.
The checkpoint, its metadata and every write value are stored as the saver's serde makes them
(``serde.dumps_typed`` -> ``(type, bytes)``, the bytes as BSON binary), so anything LangGraph
can serialise round-trips. Metadata is kept twice: serialised (the truth, returned to
LangGraph) and as a plain copy of its JSON-safe keys, which ``list(filter=...)`` queries.

Filters never become operators: only string, integer and float values under safe keys are
sent to the server, each as ``{"$eq": value}``; every other item (``None``, booleans, lists,
mappings such as ``{"$ne": None}``, keys with ``$`` or ``.``) is compared literally, in
Python, against the deserialised metadata, as LangGraph's in-memory saver does.

Tenant scope: when a run's ``config["configurable"]`` carries ``agent_id`` and ``user_id``,
both are stored on its checkpoints and writes, every read and list of that config is narrowed
to them (another user's checkpoints of the same ``thread_id`` are not found), and a write to a
thread that holds another user's checkpoints is refused with :class:`ThreadOwnedError`. So a
thread id another user guessed or reused neither reads nor continues the thread.
:meth:`forget_user` erases the user's threads. Threads run without both keys cannot be
attributed to anyone: they are shared by every config that names them, as in LangGraph's own
savers, and are left by ``forget_user``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from bson.binary import Binary
from pymongo import IndexModel, ReplaceOne, UpdateOne
from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.checks import check_document_size, check_id, check_int, shown
from agent_memory.config import Settings
from agent_memory.errors import ConflictError, DependencyMissingError, InvalidInputError
from agent_memory.mongo._errors import map_error, translate_errors
from agent_memory.mongo.connection import Connection, connect
from agent_memory.stamps import utcnow
from agent_memory.tenancy import Tenant

try:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        get_serializable_checkpoint_metadata,
        writes_sort_key,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
except ImportError as exc:  # pragma: no cover - depends on the install
    raise DependencyMissingError(
        "langgraph", "all", detail="langgraph is a dependency of agent-memory; reinstall it"
    ) from exc

from agent_memory.langgraph._checkpoint_values import (
    INT64,
    attribution_of,
    config_of,
    configurable_of,
    dumps,
    id_text,
    pushable,
    queryable,
    target_of,
)

__all__ = ["CHECKPOINTS", "WRITES", "MongoCheckpointer", "ThreadOwnedError"]

logger = get_logger(__name__)

CHECKPOINTS = "lg_checkpoints"
WRITES = "lg_checkpoint_writes"
_BATCH = 100
_CHECKPOINT_KEY = ("thread_id", "checkpoint_ns", "checkpoint_id")
_WRITE_KEY = (*_CHECKPOINT_KEY, "task_id", "idx")
#: Threads this saver has seen to be free for a tenant (bounded; oldest forgotten first).
_KNOWN_OWNERS = 10_000


class ThreadOwnedError(ConflictError):
    """The thread holds checkpoints of another agent or user; it cannot be written by this one."""


def _id_list(values: Any, name: str) -> list[str]:
    """A list of ids (each checked), in order, without repeats; a lone str is refused, so a
    thread id is never read as a list of one-letter ids."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | set | frozenset):
        raise InvalidInputError(f"{name} must be a list of ids, got {type(values).__name__}")
    return list(dict.fromkeys(id_text(value, f"{name}[]") for value in values))


def _async_only(name: str) -> Any:
    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "MongoCheckpointer is async-only: use the graph's async API (ainvoke, astream, "
            f"aget_state) or call {name} instead"
        )

    refuse.__name__ = name[1:]
    refuse.__doc__ = f"Not offered: the checkpointer is async-only; use ``{name}``."
    return refuse


class MongoCheckpointer(BaseCheckpointSaver[int]):
    """LangGraph thread state in MongoDB, through an agent_memory :class:`Connection`.

    The connection passed in stays the caller's; :meth:`from_settings` and :meth:`from_uri`
    open their own and close it on exit. Call :meth:`setup` once (it is idempotent) to
    create the indexes, or run ``agent-memory indexes setup``. Async only.

    >>> from langgraph.graph import StateGraph                          # doctest: +SKIP
    >>> async with MongoCheckpointer.from_settings() as saver:          # doctest: +SKIP
    ...     await saver.setup()
    ...     graph = builder.compile(checkpointer=saver)
    ...     config = {"configurable": {"thread_id": "t1", "agent_id": "a", "user_id": "u"}}
    ...     await graph.ainvoke({"messages": ["hi"]}, config)
    ...     await saver.forget_user(Tenant("a", "u"))                   # erases thread t1
    """

    def __init__(self, connection: Connection, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self.connection = connection
        self._checkpoints = connection.collection(CHECKPOINTS)
        self._writes = connection.collection(WRITES)
        self._owners: OrderedDict[tuple[str, str, str], None] = OrderedDict()

    @classmethod
    @asynccontextmanager
    async def from_settings(
        cls, settings: Settings | None = None, *, serde: SerializerProtocol | None = None
    ) -> AsyncIterator[MongoCheckpointer]:
        """A checkpointer on a connection of its own, closed on exit."""
        connection = await connect(settings)
        try:
            yield cls(connection, serde=serde)
        finally:
            await connection.close()

    @classmethod
    @asynccontextmanager
    async def from_uri(
        cls,
        uri: str,
        *,
        settings: Settings | None = None,
        serde: SerializerProtocol | None = None,
    ) -> AsyncIterator[MongoCheckpointer]:
        """A checkpointer on its own connection to ``uri``, closed on exit."""
        connection = await connect(settings, uri=uri)
        try:
            yield cls(connection, serde=serde)
        finally:
            await connection.close()

    async def setup(self) -> None:
        """Create the indexes in ``atlas_indexes/lg_*.json``. Idempotent; drops nothing."""
        # These collections have no vector fields, so the dimensions do not matter here.
        catalog = self.connection.index_catalog(dimensions=1)
        with translate_errors("creating the LangGraph checkpoint indexes"):
            for name, collection in ((CHECKPOINTS, self._checkpoints), (WRITES, self._writes)):
                models = [
                    IndexModel([*spec.key], name=spec.name, **spec.options)
                    for spec in catalog[name].indexes
                ]
                await collection.create_indexes(models)

    # --- reading ------------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the thread's newest in its namespace."""
        thread_id, namespace, checkpoint_id = target_of(config)
        query: dict[str, Any] = {
            "thread_id": thread_id,
            "checkpoint_ns": namespace,
            **attribution_of(config),
        }
        if checkpoint_id is not None:
            query["checkpoint_id"] = checkpoint_id
        with translate_errors("reading a LangGraph checkpoint"):
            cursor = self._checkpoints.find(query).sort("checkpoint_id", -1).limit(1)
            found = await cursor.to_list(1)
            if not found:
                return None
            writes = await self._writes_of(found)
        return self._tuple(found[0], writes)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints newest first: of ``config``'s thread (and namespace and id, when it
        names them; every thread when ``config`` is ``None``), whose metadata equals every
        item of ``filter``, older than ``before``'s checkpoint, at most ``limit``."""
        query: dict[str, Any] = {}
        if config is not None:
            thread_id, namespace, checkpoint_id = target_of(config)
            query["thread_id"] = thread_id
            query.update(attribution_of(config))
            if "checkpoint_ns" in configurable_of(config):
                query["checkpoint_ns"] = namespace
            if checkpoint_id is not None:
                query["checkpoint_id"] = checkpoint_id
        before_id = (
            None if before is None else configurable_of(before, "before").get("checkpoint_id")
        )
        if before_id is not None:
            bound = {"$lt": check_id(before_id, "before checkpoint_id")}
            if "checkpoint_id" in query:
                bound["$eq"] = query["checkpoint_id"]
            query["checkpoint_id"] = bound
        if filter is not None and not isinstance(filter, Mapping):
            raise InvalidInputError("filter must be a mapping of metadata keys to values")
        checked_in_python = False
        for key, value in (filter or {}).items():
            if pushable(key, value):
                query[f"metadata.{key}"] = {"$eq": value}
            else:
                checked_in_python = True
        if limit is not None:
            check_int(limit, "limit")
        if limit is not None and limit <= 0:
            return

        cursor = self._checkpoints.find(query).sort("checkpoint_id", -1)
        # A limit beyond what the server takes (64-bit) is no limit there; counted here.
        if limit is not None and not checked_in_python and limit < INT64:
            cursor = cursor.limit(limit)
        yielded = 0
        try:
            while True:
                # A batch at a time, so the writes of a batch come in one query.
                with translate_errors("listing LangGraph checkpoints"):
                    batch = await cursor.to_list(_BATCH)
                    if not batch:
                        return
                    writes = await self._writes_of(batch)
                for document in batch:
                    result = self._tuple(document, writes)
                    # The server narrowed by the pushable items; equality is decided here.
                    if filter and any(result.metadata.get(k) != v for k, v in filter.items()):
                        continue
                    yield result
                    yielded += 1
                    if limit is not None and yielded >= limit:
                        return
        finally:
            await cursor.close()

    async def _writes_of(
        self, documents: list[dict[str, Any]]
    ) -> dict[tuple[str, str, str], list[tuple[str, str, Any]]]:
        """The pending writes of ``documents``, per checkpoint, in ``writes_sort_key`` order."""
        threads = sorted({d["thread_id"] for d in documents})
        ids = sorted({d["checkpoint_id"] for d in documents})
        query = {"thread_id": {"$in": threads}, "checkpoint_id": {"$in": ids}}
        owners = {(d["thread_id"], d.get("agent_id"), d.get("user_id")) for d in documents}
        rows: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        async for row in self._writes.find(query):
            if row.get("agent_id") is not None and (
                (row["thread_id"], row.get("agent_id"), row.get("user_id")) not in owners
            ):
                continue  # another user's write to a thread id both used
            rows.setdefault(
                (row["thread_id"], row["checkpoint_ns"], row["checkpoint_id"]), []
            ).append(row)
        ordered = {}
        for key, found in rows.items():
            found.sort(
                key=lambda r: writes_sort_key(r.get("task_path", ""), r["task_id"], r["idx"])
            )
            ordered[key] = [
                (r["task_id"], r["channel"], self.serde.loads_typed((r["type"], r["value"])))
                for r in found
            ]
        return ordered

    def _tuple(
        self, document: dict[str, Any], writes: dict[tuple[str, str, str], list[Any]]
    ) -> CheckpointTuple:
        thread_id, namespace = document["thread_id"], document["checkpoint_ns"]
        checkpoint_id, parent = document["checkpoint_id"], document.get("parent_checkpoint_id")
        serialized, metadata = document["checkpoint"], document["metadata_serialized"]
        return CheckpointTuple(
            config=config_of(thread_id, namespace, checkpoint_id),
            checkpoint=self.serde.loads_typed((serialized["type"], serialized["data"])),
            metadata=self.serde.loads_typed((metadata["type"], metadata["data"])),
            parent_config=config_of(thread_id, namespace, parent) if parent else None,
            pending_writes=writes.get((thread_id, namespace, checkpoint_id), []),
        )

    # --- writing ------------------------------------------------------------------------------

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint`` (replacing one with the same id) and return its config."""
        thread_id, namespace, parent_id = target_of(config)
        attribution = attribution_of(config)
        checkpoint_id = check_id(checkpoint["id"], "checkpoint id")
        metadata = get_serializable_checkpoint_metadata(config, metadata)
        checkpoint_type, checkpoint_data = dumps(self.serde, checkpoint, "the checkpoint")
        metadata_type, metadata_data = dumps(self.serde, metadata, "the checkpoint's metadata")
        key = {"thread_id": thread_id, "checkpoint_ns": namespace, "checkpoint_id": checkpoint_id}
        document = {
            **key,
            **attribution,
            "parent_checkpoint_id": parent_id,
            "checkpoint": {"type": checkpoint_type, "data": Binary(checkpoint_data)},
            "metadata_serialized": {"type": metadata_type, "data": Binary(metadata_data)},
            "metadata": queryable(metadata),
            "created_at": utcnow(),
        }
        check_document_size(document, "the LangGraph checkpoint")
        with translate_errors("storing a LangGraph checkpoint"):
            await self._check_owner(thread_id, attribution)
            try:
                await self._checkpoints.replace_one(key, document, upsert=True)
            except pm.DuplicateKeyError:
                # Two upserts of the same new checkpoint raced; the second now replaces.
                await self._checkpoints.replace_one(key, document, upsert=True)
        return config_of(thread_id, namespace, checkpoint_id)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes against ``config``'s checkpoint.

        Regular writes are inserted once per ``(task_id, idx)``: a retried task does not
        duplicate or change them. Special channels (errors, interrupts, resume values,
        scheduled) have fixed negative indexes from ``WRITES_IDX_MAP`` and are replaced, so the
        latest one wins - the rule of LangGraph's own savers.
        """
        thread_id, namespace, checkpoint_id = target_of(config)
        if checkpoint_id is None:
            raise InvalidInputError('writes need a config with configurable["checkpoint_id"]')
        task_id = check_id(task_id, "task_id")
        attribution = attribution_of(config)
        operations: list[Any] = []
        for position, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, position)
            key = {
                "thread_id": thread_id,
                "checkpoint_ns": namespace,
                "checkpoint_id": checkpoint_id,
                "task_id": task_id,
                "idx": idx,
            }
            value_type, value_data = dumps(self.serde, value, f"the write to {channel!r}")
            document = {
                **key,
                **attribution,
                "channel": channel,
                "type": value_type,
                "value": Binary(value_data),
                "task_path": task_path,
                "created_at": utcnow(),
            }
            check_document_size(document, f"the LangGraph write to {channel!r}")
            if idx < 0:
                operations.append(ReplaceOne(key, document, upsert=True))
            else:
                operations.append(UpdateOne(key, {"$setOnInsert": document}, upsert=True))
        if not operations:
            return
        with translate_errors("storing LangGraph writes"):
            await self._check_owner(thread_id, attribution)
        try:
            await self._writes.bulk_write(operations, ordered=False)
        except pm.BulkWriteError as exc:
            # A concurrent insert of the same (task_id, idx) is the insert-once rule at work.
            errors = exc.details.get("writeErrors", [])
            if not errors or any(error.get("code") != 11000 for error in errors):
                raise map_error(exc, "storing LangGraph writes") from exc
        except pm.PyMongoError as exc:
            raise map_error(exc, "storing LangGraph writes") from exc

    async def _check_owner(self, thread_id: str, attribution: dict[str, str]) -> None:
        """Refuse a write of ``attribution``'s run to a thread holding another user's
        checkpoints. Checked once per thread and tenant by this saver (a thread's owner does
        not change while it has checkpoints)."""
        if not attribution:
            return
        key = (thread_id, attribution["agent_id"], attribution["user_id"])
        if key in self._owners:
            self._owners.move_to_end(key)
            return
        other = await self._checkpoints.find_one(
            {
                "thread_id": thread_id,
                "agent_id": {"$exists": True},
                "$or": [
                    {"agent_id": {"$ne": attribution["agent_id"]}},
                    {"user_id": {"$ne": attribution["user_id"]}},
                ],
            },
            {"_id": 1},
        )
        if other is not None:
            logger.warning("langgraph_thread_owned", thread_id=thread_id)
            raise ThreadOwnedError(
                f"the thread {thread_id!r} belongs to another agent or user; use another thread_id"
            )
        self._owners[key] = None
        if len(self._owners) > _KNOWN_OWNERS:
            self._owners.popitem(last=False)

    # --- deleting -----------------------------------------------------------------------------

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of ``thread_id``, in every namespace."""
        thread_id = id_text(thread_id, "thread_id")
        with translate_errors("deleting a LangGraph thread"):
            await self._checkpoints.delete_many({"thread_id": thread_id})
            await self._writes.delete_many({"thread_id": thread_id})

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the runs ``run_ids`` wrote (their metadata's ``run_id``),
        in every thread and namespace, with their writes. Unknown ids delete nothing."""
        ids = _id_list(run_ids, "run_ids")
        if not ids:
            return
        with translate_errors("deleting LangGraph runs"):
            for start in range(0, len(ids), _BATCH):
                query = {"metadata.run_id": {"$in": ids[start : start + _BATCH]}}
                await self._delete_with_writes(query)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of ``source_thread_id`` (all namespaces, the whole
        parent chain) to ``target_thread_id``, keeping ids, metadata and the owner. A target
        holding another user's checkpoints is refused (:class:`ThreadOwnedError`); copying a
        thread that does not exist copies nothing."""
        source = id_text(source_thread_id, "source_thread_id")
        target = id_text(target_thread_id, "target_thread_id")
        if source == target:
            return
        with translate_errors("copying a LangGraph thread"):
            owners = {
                (row.get("agent_id"), row.get("user_id"))
                async for row in self._checkpoints.find(
                    {"thread_id": source, "agent_id": {"$exists": True}},
                    {"agent_id": 1, "user_id": 1, "_id": 0},
                )
            }
            for agent_id, user_id in owners:
                await self._check_owner(target, {"agent_id": agent_id, "user_id": user_id})
            for collection, key in (
                (self._checkpoints, _CHECKPOINT_KEY),
                (self._writes, _WRITE_KEY),
            ):
                batch: list[Any] = []
                async for row in collection.find({"thread_id": source}).sort("_id", 1):
                    row.pop("_id")
                    row["thread_id"] = target
                    row["created_at"] = utcnow()
                    batch.append(ReplaceOne({k: row[k] for k in key}, row, upsert=True))
                    if len(batch) >= _BATCH:
                        await collection.bulk_write(batch, ordered=True)
                        batch = []
                if batch:
                    await collection.bulk_write(batch, ordered=True)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune the threads ``thread_ids``: ``"keep_latest"`` keeps the newest checkpoint of
        each namespace (with its writes) and deletes the rest; ``"delete"`` deletes them all."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInputError(
                f"strategy must be 'keep_latest' or 'delete', got {shown(strategy)}"
            )
        threads = _id_list(thread_ids, "thread_ids")
        with translate_errors("pruning LangGraph threads"):
            for thread in threads:
                if strategy == "delete":
                    await self.adelete_thread(thread)
                    continue
                newest: dict[str, str] = {}
                async for row in self._checkpoints.find(
                    {"thread_id": thread}, {"checkpoint_ns": 1, "checkpoint_id": 1, "_id": 0}
                ):
                    namespace = row["checkpoint_ns"]
                    newest[namespace] = max(newest.get(namespace, ""), row["checkpoint_id"])
                for namespace, keep in newest.items():
                    await self._delete_with_writes(
                        {
                            "thread_id": thread,
                            "checkpoint_ns": namespace,
                            "checkpoint_id": {"$ne": keep},
                        }
                    )

    async def _delete_with_writes(self, query: dict[str, Any]) -> None:
        """Delete the checkpoints ``query`` finds and the writes made against them: the
        writes first, so a failure half-way leaves no write without its checkpoint."""
        cursor = self._checkpoints.find(
            query, {"thread_id": 1, "checkpoint_ns": 1, "checkpoint_id": 1, "_id": 0}
        )
        keys = [{k: row[k] for k in _CHECKPOINT_KEY} async for row in cursor]
        for start in range(0, len(keys), _BATCH):
            await self._writes.delete_many({"$or": keys[start : start + _BATCH]})
        for start in range(0, len(keys), _BATCH):
            await self._checkpoints.delete_many({"$or": keys[start : start + _BATCH]})

    async def forget_user(self, tenant: Tenant) -> dict[str, int]:
        """Erase the threads whose runs carried ``tenant``'s ``agent_id`` and ``user_id`` in
        ``config["configurable"]``; returns the count per collection.

        Erased: everything attributed to the tenant, and the unattributed checkpoints and
        writes of those threads (for example from ``update_state`` without the keys). State
        attributed to another tenant is left. Threads never run with both keys cannot be
        attributed and are not found; delete them with :meth:`adelete_thread`. Stop the
        user's runs first: a checkpoint written meanwhile survives. Register with
        ``MemorySystem.register_forgetter(saver.forget_user)``.
        """
        if not isinstance(tenant, Tenant):
            raise InvalidInputError(f"tenant must be a Tenant, got {type(tenant).__name__}")
        with translate_errors("forgetting a user's LangGraph threads"):
            threads: set[str] = set()
            for collection in (self._checkpoints, self._writes):
                async for row in collection.find(tenant.filter(), {"thread_id": 1, "_id": 0}):
                    threads.add(row["thread_id"])
            query = {
                "$or": [
                    tenant.filter(),
                    {"thread_id": {"$in": sorted(threads)}, "agent_id": {"$exists": False}},
                ]
            }
            checkpoints = await self._checkpoints.delete_many(query)
            writes = await self._writes.delete_many(query)
        for key in [k for k in self._owners if k[1:] == (tenant.agent_id, tenant.user_id)]:
            del self._owners[key]
        counts = {CHECKPOINTS: checkpoints.deleted_count, WRITES: writes.deleted_count}
        logger.info(
            "langgraph_threads_forgotten", agent_id=tenant.agent_id, threads=len(threads), **counts
        )
        return counts

    # --- the synchronous API is not offered ---------------------------------------------------
    # The framework is async-only; a sync call would block the event loop on the network.

    get_tuple = _async_only("aget_tuple")
    list = _async_only("alist")
    put = _async_only("aput")
    put_writes = _async_only("aput_writes")
    delete_thread = _async_only("adelete_thread")
    delete_for_runs = _async_only("adelete_for_runs")
    copy_thread = _async_only("acopy_thread")
    prune = _async_only("aprune")

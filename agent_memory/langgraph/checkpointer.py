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

Tenant scope: a thread is keyed by its tenant and its ``thread_id``, as conversation
sessions are. A run's ``config["configurable"]`` names the tenant with ``agent_id`` and
``user_id``; both are stored on its checkpoints and writes and every read, list, write,
copy, prune and delete is confined to them, so two users' ``"main"`` threads never meet
and nobody can take a thread id first. In strict mode (the default) a config that names no
tenant is refused (LangGraph passes ``context=`` to a run's writes but not to
``get_state``, so the tenant must be in ``configurable``); ``strict=False`` lets such
configs share anonymous threads, which never include a tenant's. ``tenant=`` binds a
checkpointer to one tenant, for configs that name none (LangGraph's reads of a subgraph's
state carry only the ``thread_id``). :meth:`forget_user` erases a user's threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping, Sequence
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
from agent_memory.mongo.batches import BOUND, delete_in, slices
from agent_memory.mongo.connection import Connection, connect
from agent_memory.mongo.migrations import retire_indexes, threads_per_tenant
from agent_memory.stamps import utcnow
from agent_memory.tenancy import Tenant, check_tenant

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
    config_of,
    configurable_of,
    dumps,
    id_text,
    pushable,
    queryable,
    target_of,
    tenant_in,
)
from agent_memory.langgraph.sync import call_sync, loop_of

__all__ = ["CHECKPOINTS", "WRITES", "MongoCheckpointer", "deprecated_name"]

logger = get_logger(__name__)

CHECKPOINTS = "lg_checkpoints"
WRITES = "lg_checkpoint_writes"
#: Documents per page read and per bulk write, and values per ``$in`` or ``$or`` built from a
#: list (an erasure's threads, a deletion's run ids and keys): within ``mongo.batches.BOUND``.
_BATCH = min(100, BOUND)
_CHECKPOINT_KEY = ("agent_id", "user_id", "thread_id", "checkpoint_ns", "checkpoint_id")
_WRITE_KEY = (*_CHECKPOINT_KEY, "task_id", "idx")
#: The scope of threads run without a tenant (``strict=False``): both keys stored as null.
#: Queries match them with :func:`_match`, never by null equality, which would also match a
#: document an earlier version stored without the keys (its thread owner's until setup()).
_ANONYMOUS: dict[str, Any] = {"agent_id": None, "user_id": None}
_NULL: dict[str, Any] = {"$type": "null"}
#: Documents an earlier version stored without the keys (see ``setup``).
_UNATTRIBUTED: dict[str, Any] = {"agent_id": {"$exists": False}}
_NO_TENANT = (
    'the config names no tenant: put "agent_id" and "user_id" in config["configurable"] '
    "(MongoCheckpointer(..., strict=False) shares threads among configs that name none)"
)


class _ThreadOwnedError(ConflictError):
    """Deprecated, no longer raised: thread ids are per tenant, so another user's thread
    of the same id is a different thread and a write never meets it. Kept so that existing
    ``except ThreadOwnedError`` clauses still import; it will be removed in a later release."""


_ThreadOwnedError.__name__ = _ThreadOwnedError.__qualname__ = "ThreadOwnedError"


def deprecated_name(name: str, *, stacklevel: int = 2) -> Any:
    """A deprecated name of this module, read with a DeprecationWarning at the reader's line."""
    if name != "ThreadOwnedError":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        "ThreadOwnedError is deprecated and never raised: threads are per user, so another "
        "user's thread of the same id is a different thread; remove the except clause "
        "(the name goes in a later release)",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )
    return _ThreadOwnedError


def __getattr__(name: str) -> Any:
    return deprecated_name(name, stacklevel=2)


def _match(scope: Mapping[str, Any]) -> dict[str, Any]:
    """The filter of documents stored with ``scope`` (a tenant's keys, or the anonymous
    nulls): a null matches only a stored null, not a missing key."""
    return {key: _NULL if value is None else value for key, value in scope.items()}


def _id_list(values: Any, name: str) -> list[str]:
    """A list of ids (each checked), in order, without repeats; a lone str is refused, so a
    thread id is never read as a list of one-letter ids."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | set | frozenset):
        raise InvalidInputError(f"{name} must be a list of ids, got {type(values).__name__}")
    return list(dict.fromkeys(id_text(value, f"{name}[]") for value in values))


class MongoCheckpointer(BaseCheckpointSaver[int]):
    """LangGraph thread state in MongoDB, through an agent_memory :class:`Connection`.

    The connection passed in stays the caller's; :meth:`from_settings` and :meth:`from_uri`
    open their own and close it on exit. Call :meth:`setup` once (it is idempotent) to
    create the indexes, or run ``agent-memory indexes setup``. The sync methods
    (``graph.invoke``, ``get_state``) run on the loop that serves the connection: the app's,
    or, in a sync app, :func:`~agent_memory.langgraph.sync.sync_connection`'s.

    Threads are per tenant: give every config ``agent_id`` and ``user_id`` in
    ``configurable``. ``strict=False`` accepts configs that name no tenant (their threads are
    shared by every such config, as in LangGraph's own savers, and never include a
    tenant's); ``tenant=`` is the tenant of configs that name none (a config naming another
    is refused). The thread-id methods (:meth:`adelete_thread`, :meth:`acopy_thread`,
    :meth:`aprune`, :meth:`adelete_for_runs`) take the tenant as ``tenant=``.

    >>> from langgraph.graph import StateGraph                          # doctest: +SKIP
    >>> async with MongoCheckpointer.from_settings() as saver:          # doctest: +SKIP
    ...     await saver.setup()
    ...     graph = builder.compile(checkpointer=saver)
    ...     config = {"configurable": {"thread_id": "t1", "agent_id": "a", "user_id": "u"}}
    ...     await graph.ainvoke({"messages": ["hi"]}, config)
    ...     await saver.forget_user(Tenant("a", "u"))                   # erases thread t1
    """

    def __init__(
        self,
        connection: Connection,
        *,
        serde: SerializerProtocol | None = None,
        strict: bool = True,
        tenant: Tenant | None = None,
    ) -> None:
        super().__init__(serde=serde)
        if not isinstance(strict, bool):
            raise InvalidInputError(f"strict must be True or False, got {type(strict).__name__}")
        self.connection = connection
        #: Whether configs naming no tenant are refused (the default).
        self.strict = strict
        #: The tenant of configs that name none, or ``None``.
        self.tenant = None if tenant is None else check_tenant(tenant)
        self._checkpoints = connection.collection(CHECKPOINTS)
        self._writes = connection.collection(WRITES)
        #: The loop serving the connection, where sync calls run (agent_memory.langgraph.sync).
        self._loop: asyncio.AbstractEventLoop | None = loop_of(connection)
        if self._loop is None:
            with contextlib.suppress(RuntimeError):
                self._loop = asyncio.get_running_loop()

    @classmethod
    @asynccontextmanager
    async def from_settings(
        cls,
        settings: Settings | None = None,
        *,
        serde: SerializerProtocol | None = None,
        strict: bool = True,
        tenant: Tenant | None = None,
    ) -> AsyncIterator[MongoCheckpointer]:
        """A checkpointer on a connection of its own, closed on exit."""
        connection = await connect(settings)
        try:
            yield cls(connection, serde=serde, strict=strict, tenant=tenant)
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
        strict: bool = True,
        tenant: Tenant | None = None,
    ) -> AsyncIterator[MongoCheckpointer]:
        """A checkpointer on its own connection to ``uri``, closed on exit."""
        connection = await connect(settings, uri=uri)
        try:
            yield cls(connection, serde=serde, strict=strict, tenant=tenant)
        finally:
            await connection.close()

    async def setup(self) -> None:
        """Create the indexes in ``atlas_indexes/lg_*.json``. Idempotent. State an earlier
        version stored is brought to the per-tenant key first
        (:func:`~agent_memory.mongo.migrations.threads_per_tenant`), and the unique indexes
        it created are dropped once their per-tenant replacements exist; nothing else is
        dropped."""
        # These collections have no vector fields, so the dimensions do not matter here.
        catalog = self.connection.index_catalog(dimensions=1)
        with translate_errors("creating the LangGraph checkpoint indexes"):
            for name, collection in ((CHECKPOINTS, self._checkpoints), (WRITES, self._writes)):
                await threads_per_tenant(collection)
                models = [
                    IndexModel([*spec.key], name=spec.name, **spec.options)
                    for spec in catalog[name].indexes
                ]
                await collection.create_indexes(models)
                await retire_indexes(collection, catalog[name])

    def _note_loop(self) -> None:
        """Serve sync calls on the loop the async API runs on, when none serves them yet."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop and (self._loop is None or not self._loop.is_running()):
            self._loop = loop

    # --- whose threads ------------------------------------------------------------------------

    def _scope(self, config: RunnableConfig | None) -> dict[str, Any]:
        """The tenant fields every query of ``config`` carries (``None`` for both when it
        names no tenant and the checkpointer is not strict)."""
        return self._scope_of(None if config is None else tenant_in(config))

    def _scope_of(self, named: Any) -> dict[str, Any]:
        if named is not None:
            named = check_tenant(named)
            if self.tenant is not None and named != self.tenant:
                raise InvalidInputError(
                    "the config names another agent or user than this checkpointer's tenant"
                )
            return named.filter()
        if self.tenant is not None:
            return self.tenant.filter()
        if self.strict:
            raise InvalidInputError(_NO_TENANT)
        return dict(_ANONYMOUS)

    # --- reading ------------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the thread's newest in its namespace."""
        self._note_loop()
        thread_id, namespace, checkpoint_id = target_of(config)
        query: dict[str, Any] = {
            **_match(self._scope(config)),
            "thread_id": thread_id,
            "checkpoint_ns": namespace,
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
        names them; every thread of its tenant when it names no ``thread_id`` or is
        ``None``), whose metadata equals every item of ``filter``, older than ``before``'s
        checkpoint, at most ``limit``. Only the caller's threads are listed: those of the
        tenant ``config`` (or ``tenant=``) names, else the anonymous ones."""
        self._note_loop()
        query: dict[str, Any] = _match(self._scope(config))
        if config is not None and "thread_id" in configurable_of(config):
            thread_id, namespace, checkpoint_id = target_of(config)
            query["thread_id"] = thread_id
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
        """The pending writes of ``documents`` (checkpoints of one scope), per checkpoint,
        in ``writes_sort_key`` order."""
        first = documents[0]
        scope = _match({"agent_id": first.get("agent_id"), "user_id": first.get("user_id")})
        threads = sorted({d["thread_id"] for d in documents})
        ids = sorted({d["checkpoint_id"] for d in documents})
        query = {**scope, "thread_id": {"$in": threads}, "checkpoint_id": {"$in": ids}}
        rows: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        async for row in self._writes.find(query):
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
            config=config_of(thread_id, namespace, checkpoint_id, document),
            checkpoint=self.serde.loads_typed((serialized["type"], serialized["data"])),
            metadata=self.serde.loads_typed((metadata["type"], metadata["data"])),
            parent_config=config_of(thread_id, namespace, parent, document) if parent else None,
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
        self._note_loop()
        thread_id, namespace, parent_id = target_of(config)
        scope = self._scope(config)
        checkpoint_id = check_id(checkpoint["id"], "checkpoint id")
        metadata = get_serializable_checkpoint_metadata(config, metadata)
        checkpoint_type, checkpoint_data = dumps(self.serde, checkpoint, "the checkpoint")
        metadata_type, metadata_data = dumps(self.serde, metadata, "the checkpoint's metadata")
        key = {
            **scope,
            "thread_id": thread_id,
            "checkpoint_ns": namespace,
            "checkpoint_id": checkpoint_id,
        }
        document = {
            **key,
            "parent_checkpoint_id": parent_id,
            "checkpoint": {"type": checkpoint_type, "data": Binary(checkpoint_data)},
            "metadata_serialized": {"type": metadata_type, "data": Binary(metadata_data)},
            "metadata": queryable(metadata),
            "created_at": utcnow(),
        }
        check_document_size(document, "the LangGraph checkpoint")
        with translate_errors("storing a LangGraph checkpoint"):
            try:
                await self._checkpoints.replace_one(_match(key), document, upsert=True)
            except pm.DuplicateKeyError:
                # Two upserts of the same new checkpoint raced; the second now replaces.
                await self._checkpoints.replace_one(_match(key), document, upsert=True)
        return config_of(thread_id, namespace, checkpoint_id, scope)

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
        self._note_loop()
        thread_id, namespace, checkpoint_id = target_of(config)
        if checkpoint_id is None:
            raise InvalidInputError('writes need a config with configurable["checkpoint_id"]')
        task_id = check_id(task_id, "task_id")
        scope = self._scope(config)
        operations: list[Any] = []
        for position, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, position)
            key = {
                **scope,
                "thread_id": thread_id,
                "checkpoint_ns": namespace,
                "checkpoint_id": checkpoint_id,
                "task_id": task_id,
                "idx": idx,
            }
            value_type, value_data = dumps(self.serde, value, f"the write to {channel!r}")
            document = {
                **key,
                "channel": channel,
                "type": value_type,
                "value": Binary(value_data),
                "task_path": task_path,
                "created_at": utcnow(),
            }
            check_document_size(document, f"the LangGraph write to {channel!r}")
            if idx < 0:
                operations.append(ReplaceOne(_match(key), document, upsert=True))
            else:
                operations.append(UpdateOne(_match(key), {"$setOnInsert": document}, upsert=True))
        if not operations:
            return
        try:
            await self._writes.bulk_write(operations, ordered=False)
        except pm.BulkWriteError as exc:
            # A concurrent insert of the same (task_id, idx) is the insert-once rule at work.
            errors = exc.details.get("writeErrors", [])
            if not errors or any(error.get("code") != 11000 for error in errors):
                raise map_error(exc, "storing LangGraph writes") from exc
        except pm.PyMongoError as exc:
            raise map_error(exc, "storing LangGraph writes") from exc

    # --- deleting -----------------------------------------------------------------------------

    async def adelete_thread(self, thread_id: str, *, tenant: Tenant | None = None) -> None:
        """Delete every checkpoint and write of the thread ``thread_id`` of ``tenant`` (or of
        this checkpointer's ``tenant=``; the anonymous one when neither and not strict), in
        every namespace. Another tenant's thread of that id is left."""
        thread_id = id_text(thread_id, "thread_id")
        scope = _match(self._scope_of(tenant))
        with translate_errors("deleting a LangGraph thread"):
            await self._checkpoints.delete_many({**scope, "thread_id": thread_id})
            await self._writes.delete_many({**scope, "thread_id": thread_id})

    async def adelete_for_runs(
        self, run_ids: Sequence[str], *, tenant: Tenant | None = None
    ) -> None:
        """Delete the checkpoints the runs ``run_ids`` wrote (their metadata's ``run_id``)
        in every thread and namespace of the tenant (as :meth:`adelete_thread` finds it),
        with their writes. Unknown ids delete nothing."""
        ids = _id_list(run_ids, "run_ids")
        scope = _match(self._scope_of(tenant))
        if not ids:
            return
        with translate_errors("deleting LangGraph runs"):
            for part in slices(ids, _BATCH):
                await self._delete_with_writes({**scope, "metadata.run_id": {"$in": part}})

    async def acopy_thread(
        self, source_thread_id: str, target_thread_id: str, *, tenant: Tenant | None = None
    ) -> None:
        """Copy every checkpoint and write of the tenant's thread ``source_thread_id`` (all
        namespaces, the whole parent chain) to its thread ``target_thread_id``, keeping ids
        and metadata; the tenant as :meth:`adelete_thread` finds it. Copying a thread that
        does not exist copies nothing; another tenant's threads are neither read nor
        written."""
        source = id_text(source_thread_id, "source_thread_id")
        target = id_text(target_thread_id, "target_thread_id")
        scope = self._scope_of(tenant)
        if source == target:
            return
        with translate_errors("copying a LangGraph thread"):
            for collection, key in (
                (self._checkpoints, _CHECKPOINT_KEY),
                (self._writes, _WRITE_KEY),
            ):
                batch: list[Any] = []
                rows = collection.find({**_match(scope), "thread_id": source}).sort("_id", 1)
                async for row in rows:
                    row.pop("_id")
                    row["thread_id"] = target
                    row["created_at"] = utcnow()
                    batch.append(ReplaceOne(_match({k: row[k] for k in key}), row, upsert=True))
                    if len(batch) >= _BATCH:
                        await collection.bulk_write(batch, ordered=True)
                        batch = []
                if batch:
                    await collection.bulk_write(batch, ordered=True)

    async def aprune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        tenant: Tenant | None = None,
    ) -> None:
        """Prune the tenant's threads ``thread_ids`` (the tenant as :meth:`adelete_thread`
        finds it): ``"keep_latest"`` keeps the newest checkpoint of each namespace (with its
        writes) and deletes the rest; ``"delete"`` deletes them all."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInputError(
                f"strategy must be 'keep_latest' or 'delete', got {shown(strategy)}"
            )
        threads = _id_list(thread_ids, "thread_ids")
        scope = _match(self._scope_of(tenant))
        with translate_errors("pruning LangGraph threads"):
            for thread in threads:
                if strategy == "delete":
                    await self._checkpoints.delete_many({**scope, "thread_id": thread})
                    await self._writes.delete_many({**scope, "thread_id": thread})
                    continue
                newest: dict[str, str] = {}
                async for row in self._checkpoints.find(
                    {**scope, "thread_id": thread},
                    {"checkpoint_ns": 1, "checkpoint_id": 1, "_id": 0},
                ):
                    namespace = row["checkpoint_ns"]
                    newest[namespace] = max(newest.get(namespace, ""), row["checkpoint_id"])
                for namespace, keep in newest.items():
                    await self._delete_with_writes(
                        {
                            **scope,
                            "thread_id": thread,
                            "checkpoint_ns": namespace,
                            "checkpoint_id": {"$ne": keep},
                        }
                    )

    async def _delete_with_writes(self, query: dict[str, Any]) -> None:
        """Delete the checkpoints ``query`` finds and the writes made against them: the
        writes first, so a failure half-way leaves no write without its checkpoint."""
        cursor = self._checkpoints.find(query, {**dict.fromkeys(_CHECKPOINT_KEY, 1), "_id": 0})
        keys = [_match({k: row.get(k) for k in _CHECKPOINT_KEY}) async for row in cursor]
        await delete_in(self._writes, keys, lambda part: {"$or": part})
        await delete_in(self._checkpoints, keys, lambda part: {"$or": part})

    async def forget_user(self, tenant: Tenant) -> dict[str, int]:
        """Erase every thread of ``tenant`` (runs whose ``configurable`` named its
        ``agent_id`` and ``user_id``, or run by a checkpointer bound to it); returns the
        count per collection.

        Also erased: state an earlier version stored without the keys in a thread whose
        keyed checkpoints are all this tenant's, if :meth:`setup` has not attributed it yet
        (what setup would give the tenant). Another tenant's thread of the same id, and a
        thread with keyed checkpoints of several tenants, keep theirs; anonymous threads
        are left. Stop the user's runs first: a checkpoint written meanwhile survives.
        Register with ``MemorySystem.register_forgetter(saver.forget_user)``.
        """
        tenant = check_tenant(tenant)
        counts = {CHECKPOINTS: 0, WRITES: 0}
        with translate_errors("forgetting a user's LangGraph threads"):
            threads: set[str] = set()
            for collection in (self._checkpoints, self._writes):
                async for row in collection.find(tenant.filter(), {"thread_id": 1, "_id": 0}):
                    threads.add(row["thread_id"])
            for part in slices(sorted(threads), _BATCH):
                sole = await self._held_only_by(tenant, part)
                if not sole:
                    continue
                legacy = {"thread_id": {"$in": sole}, **_UNATTRIBUTED}
                counts[CHECKPOINTS] += (await self._checkpoints.delete_many(legacy)).deleted_count
                counts[WRITES] += (await self._writes.delete_many(legacy)).deleted_count
            counts[CHECKPOINTS] += (
                await self._checkpoints.delete_many(tenant.filter())
            ).deleted_count
            counts[WRITES] += (await self._writes.delete_many(tenant.filter())).deleted_count
        logger.info(
            "langgraph_threads_forgotten", agent_id=tenant.agent_id, threads=len(threads), **counts
        )
        return counts

    async def _held_only_by(self, tenant: Tenant, threads: Sequence[str]) -> list[str]:
        """Those of ``threads`` whose keyed checkpoints are all ``tenant``'s: where state
        stored without the keys is the tenant's (the rule of ``threads_per_tenant``)."""
        others: set[str] = set()
        query = {"thread_id": {"$in": list(threads)}, "agent_id": {"$ne": None}}
        projection = {"thread_id": 1, "agent_id": 1, "user_id": 1, "_id": 0}
        async for row in self._checkpoints.find(query, projection):
            if (row.get("agent_id"), row.get("user_id")) != (tenant.agent_id, tenant.user_id):
                others.add(row["thread_id"])
        return [thread for thread in threads if thread not in others]

    # --- the sync API ---------------------------------------------------------------------------
    # Each sync method runs its async form on the loop that serves the connection (the app's,
    # or sync_connection's private one) and waits: from any thread but that loop's own.

    def _sync(self, coroutine: Coroutine[Any, Any, Any], name: str) -> Any:
        return call_sync(self._loop, coroutine, f"MongoCheckpointer.{name}")

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """:meth:`aget_tuple`, from sync code (see :mod:`agent_memory.langgraph.sync`)."""
        return self._sync(self.aget_tuple(config), "get_tuple")

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """:meth:`alist`, from sync code: the checkpoints are read a batch at a time."""
        listed = self.alist(config, filter=filter, before=before, limit=limit)
        done = object()

        async def step() -> Any:
            try:
                return await anext(listed)
            except StopAsyncIteration:
                return done

        started = False
        try:
            while (found := self._sync(step(), "list")) is not done:
                started = True
                yield found
        finally:
            if started:
                with contextlib.suppress(Exception):
                    self._sync(listed.aclose(), "list")

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """:meth:`aput`, from sync code."""
        return self._sync(self.aput(config, checkpoint, metadata, new_versions), "put")

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """:meth:`aput_writes`, from sync code."""
        self._sync(self.aput_writes(config, writes, task_id, task_path), "put_writes")

    def delete_thread(self, thread_id: str, *, tenant: Tenant | None = None) -> None:
        """:meth:`adelete_thread`, from sync code."""
        self._sync(self.adelete_thread(thread_id, tenant=tenant), "delete_thread")

    def delete_for_runs(self, run_ids: Sequence[str], *, tenant: Tenant | None = None) -> None:
        """:meth:`adelete_for_runs`, from sync code."""
        self._sync(self.adelete_for_runs(run_ids, tenant=tenant), "delete_for_runs")

    def copy_thread(
        self, source_thread_id: str, target_thread_id: str, *, tenant: Tenant | None = None
    ) -> None:
        """:meth:`acopy_thread`, from sync code."""
        coroutine = self.acopy_thread(source_thread_id, target_thread_id, tenant=tenant)
        self._sync(coroutine, "copy_thread")

    def prune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        tenant: Tenant | None = None,
    ) -> None:
        """:meth:`aprune`, from sync code."""
        self._sync(self.aprune(thread_ids, strategy=strategy, tenant=tenant), "prune")

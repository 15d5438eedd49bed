"""Long-term memory as a LangGraph ``BaseStore``: any LangGraph agent can keep its items here.

>>> store = MemoryStore(LongTermMemory(connection, embedder), agent_id="support-agent")  # doctest: +SKIP
>>> graph = builder.compile(store=store)                                                 # doctest: +SKIP
>>> await store.aput(("memories", "user-456", "notes"), "diet", {"content": "vegetarian"})
>>> hits = await store.asearch(("memories", "user-456"), query="what does she eat?")      # doctest: +SKIP

Mapping (one memory document per item version, in the ``memories`` collection):

- namespace -> tenant by the store's :class:`NamespaceMap`: ``("memories", user_id, ...)`` is
  that user's, any other namespace is app-wide (user id ``"*"``), except one with a root label
  out of place (``(user_id, "memories")``), which is refused (:meth:`NamespaceMap.check`). The whole namespace is kept
  in ``source.namespace`` and as one tag per prefix of it (``lg/ns:[]``,
  ``lg/ns:["memories"]``, ...), which prefix searches filter on.
- item key -> memory ``key`` ``lg/key:["memories","user-456","notes","diet"]`` (namespace and
  key, JSON-encoded: no label can fake a separator); ``schema`` is the label after the user.
- item value -> ``source.value`` (no ``$``-keys or dotted keys); the searchable text is the
  fields of ``index["fields"]`` (or ``put(index=[...])``) joined, else ``value["content"]``
  when it is a string, else the value as JSON. ``index=False``: stored without a vector, so
  no search with a query returns it.
- ``value["occurred_at"]`` (a timezone-aware ``datetime`` or an ISO 8601 string with a UTC
  offset: when what the item says was said or happened) -> the memory's event time
  (``NewMemory.occurred_at``), which recency and a key's history read; ``event_time=None``
  leaves the field an ordinary part of the value, another name reads that field instead.
- ``ttl`` (minutes) -> ``expires_at``, on MongoDB's TTL index; reads skip expired items
  whatever the TTL monitor has done, and :meth:`MemoryStore.sweep_ttl` deletes them.
- a user's other memories (formed from conversations, stored by the agent) are readable at
  ``("memories", user_id, "learned", memory_type)``, keyed by memory id.

Putting a key again goes through consolidation: the same text reinforces the current memory
(its value is refreshed), a different text supersedes it and the old version stays queryable
through :meth:`MemoryStore.ahistory`. Deleting a key deletes every version of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import heapq
import json
import warnings
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
)
from langgraph.store.base.batch import AsyncBatchedBaseStore

from agent_memory._log import get_logger
from agent_memory.checks import (
    check_event_time,
    check_id,
    check_int,
    check_mapping,
    check_number,
    is_number,
)
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.langgraph._filters import (
    check_filter,
    check_window,
    matches_filter,
    namespace_matches,
)
from agent_memory.langgraph.erasure import DEFAULT_ROOTS, forget_named_items
from agent_memory.langgraph.namespaces import (
    APP_WIDE,
    NamespaceError,
    NamespaceMap,
    check_namespace,
)
from agent_memory.langgraph.sync import call_sync, loop_of
from agent_memory.memory.long_term.fields import MAX_FIELD_TEXTS
from agent_memory.memory.long_term.memory import COLLECTION as MEMORIES
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.profile import ProfileMemory
from agent_memory.memory.long_term.records import MEMORY_TYPES, Memory, NewMemory
from agent_memory.mongo.connection import Connection
from agent_memory.providers.embedders.base import Embedder
from agent_memory.providers.embedders.langchain import LangChainEmbedder
from agent_memory.providers.registry import make_embedder
from agent_memory.stamps import utcnow
from agent_memory.tenancy import Tenant, check_tenant

__all__ = ["MemoryStore", "NamespaceMap"]

logger = get_logger(__name__)

_KEY_PREFIX = "lg/key:"
_TAG_PREFIX = "lg/ns:"
#: The marker in the source of every memory this store writes.
_OURS = {"store": "langgraph", "layout": "2"}
#: The tag prefix, and the tag on every item, of the store's first layout (see setup()).
_LEGACY_TAG = "lgns:"
_LEGACY_ALL = _LEGACY_TAG + "[]"
#: Tagged on every item: what a user's learned memories are not.
_ANY_ITEM = _TAG_PREFIX + "[]"
#: On app-wide items whose namespace the store's map refuses (an earlier version stored
#: ``(user_id, "memories")`` app-wide under the default map): setup() tags them, so that
#: reads leave them out in the server's search window too; every read leaves them out anyway.
_REFUSED = "lg/refused"
#: The most items a search with a query ranks (offset + limit, times the overfetch for a
#: filter).
_MAX_QUERY_WINDOW = 1_000
_FILTER_OVERFETCH = 5
#: ``scores="ranked"``: the most items a search ranks per user (LongTermMemory.retrieve's k).
_MAX_RANKED = 100
#: The label, under a user's learned one, of their profiles.
_PROFILE = "profile"
#: A year in minutes: the longest time to live.
_MAX_TTL_MINUTES = 525_600.0


def _encode(parts: Sequence[str]) -> str:
    # JSON keeps the encoding unambiguous: no label or key can fake a separator.
    return json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))


def _event_time(value: Any, name: str) -> datetime:
    """An item's event time: a timezone-aware ``datetime``, or an ISO 8601 string with a UTC
    offset (``"2024-03-01T09:30:00+01:00"``, ``"2024-03-01T08:30:00Z"``), as JSON values
    carry times; not in the future. The error never repeats the value."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInputError(
                f"{name} must be an ISO 8601 time with a UTC offset or a datetime"
            ) from None
    elif not isinstance(value, datetime):
        raise InvalidInputError(
            f"{name} must be an ISO 8601 time with a UTC offset or a datetime, "
            f"got {type(value).__name__}"
        )
    return check_event_time(value, name)


def _tag(namespace: Sequence[str]) -> str:
    tag = _TAG_PREFIX + _encode(namespace)
    if len(tag) > 256:
        raise NamespaceError("the namespace labels are too long together (250 characters)")
    return tag


def _key(namespace: Sequence[str], key: Any) -> str:
    if not isinstance(key, str):
        raise InvalidInputError(f"key must be a str, got {type(key).__name__}")
    encoded = _KEY_PREFIX + _encode([*namespace, check_id(key, "key")])
    if len(encoded) > 256:
        raise InvalidInputError("the namespace and key are too long together (250 characters)")
    return encoded


def _ours(source: Mapping[str, Any] | None) -> bool:
    return bool(source) and all(source.get(k) == v for k, v in _OURS.items())


def _labels(namespace: Any, what: str) -> tuple[str, ...]:
    """``namespace`` itself when it is a tuple or list (its labels are checked later)."""
    if not isinstance(namespace, tuple | list):
        raise NamespaceError(f"{what} must be a tuple of labels, got {type(namespace).__name__}")
    return tuple(namespace)


def _legacy(source: Mapping[str, Any] | None) -> bool:
    """Written by the store's first layout (no ``layout`` field)."""
    return bool(source) and source.get("store") == _OURS["store"] and "layout" not in source


@dataclass(frozen=True, slots=True)
class _Where:
    """Where a read looks within one tenant: the store's items under ``prefix`` (when
    ``items``) and the user's learned memories (when ``learned``, of ``memory_type`` only when
    given)."""

    tenant: Tenant
    prefix: tuple[str, ...]
    items: bool
    learned: bool
    memory_type: str | None = None
    #: The user's profiles (ProfileMemory's patch schemas), when the store was given them.
    profile: bool = False


@dataclass(frozen=True, slots=True)
class _Found:
    """A search result, the memory it was read from (``None`` for a profile), its place in
    its source's ranking and the time it is listed by."""

    item: SearchItem
    memory: Memory | None
    order: int
    listed_at: datetime | None = None


def _newest_first(found: _Found) -> tuple[float, tuple[str, ...], str]:
    stamp = found.listed_at.timestamp() if found.listed_at is not None else 0.0
    return (-stamp, tuple(found.item.namespace), found.item.key)


@dataclass(frozen=True, slots=True)
class _Put:
    tenant: Tenant
    memory: NewMemory
    source: dict[str, Any]


class MemoryStore(AsyncBatchedBaseStore):
    """A LangGraph store whose items are this framework's long-term memories.

    Any namespace is accepted; ``namespaces`` (a :class:`NamespaceMap`) says which label holds
    the user, so erasing a user erases their items. Searches with ``query`` return items by
    vector similarity, ``SearchItem.score`` the cosine similarity, as LangGraph's own stores
    do; ``scores="ranked"`` ranks by this framework's full score instead (relevance from
    vector and keyword search, recency, importance and feedback: :meth:`LongTermMemory.retrieve`)
    and returns that score. Concurrent calls are served together: puts made in the same tick
    are embedded in one call per user.

    The async API is the real one; the sync one runs on the loop that serves the connection
    (:mod:`agent_memory.langgraph.sync`): the app's, from a worker thread (LangGraph runs sync
    nodes that way), or ``sync_connection()``'s in a sync app. ``ttl``
    (LangGraph's ``TTLConfig``) sets a default time to live, whether reads refresh it
    (``refresh_on_read``, default true) and the interval of :meth:`start_ttl_sweeper`.
    ``event_time`` names the field of a value that says when what it records happened (the
    memory's event time; None: no field is read so).

    >>> store = MemoryStore(long_term, agent_id="support-agent")       # doctest: +SKIP
    >>> await store.aput(("memories", "u1", "profile"), "name", {"content": "Ada"})
    >>> (await store.aget(("memories", "u1", "profile"), "name")).value    # doctest: +SKIP
    {'content': 'Ada'}
    """

    supports_ttl = True

    def __init__(
        self,
        long_term: LongTermMemory,
        *,
        agent_id: str,
        namespaces: NamespaceMap | None = None,
        index: IndexConfig | None = None,
        scores: Literal["similarity", "ranked"] = "similarity",
        ttl: TTLConfig | None = None,
        memory_type: str = "fact",
        profiles: ProfileMemory | None = None,
        root: str | None = None,
        event_time: str | None = "occurred_at",
    ) -> None:
        # No running loop is needed to build the store: the loop is bound at first use.
        self._loop: asyncio.AbstractEventLoop | None = None
        #: The loop that serves the connection, where sync calls run (as the checkpointer's).
        self._serving: asyncio.AbstractEventLoop | None = None
        self._aqueue: asyncio.Queue[tuple[asyncio.Future[Any], Op]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._sweeper: asyncio.Task[None] | None = None
        if not isinstance(long_term, LongTermMemory):
            raise InvalidInputError("long_term must be a LongTermMemory")
        if memory_type not in MEMORY_TYPES:
            raise InvalidInputError(f"memory_type must be one of {', '.join(MEMORY_TYPES)}")
        if namespaces is not None and not isinstance(namespaces, NamespaceMap):
            raise InvalidInputError("namespaces must be a NamespaceMap")
        if root is not None:
            namespaces = _from_root(root, namespaces)
        if profiles is not None and not isinstance(profiles, ProfileMemory):
            raise InvalidInputError("profiles must be a ProfileMemory")
        if scores not in ("similarity", "ranked"):
            raise InvalidInputError("scores must be 'similarity' or 'ranked'")
        self.long_term = long_term
        self.profiles = profiles
        self.agent_id = check_id(agent_id, "agent_id")
        self.namespaces = namespaces or NamespaceMap()
        self.memory_type = memory_type
        self.scores = scores
        self.fields = self._check_index(index)
        self.ttl_config = _check_ttl_config(ttl)
        if event_time is not None and (
            not isinstance(event_time, str)
            or not event_time.strip()
            or event_time.startswith("$")
            or "." in event_time
        ):
            # A value's keys are never empty, dotted or $-prefixed: such a field is never read.
            raise InvalidInputError("event_time must be None or the name of a field of the value")
        #: The field of an item's value that says when what it says happened (None: none).
        self.event_time = event_time
        # sync_connection's loop serves the connection wherever the store is built: a store
        # built inside a running loop (a notebook, async code) that is not the connection's
        # would send its sync calls to a loop the client does not belong to, which a sync
        # graph run on that loop's thread blocks.
        self._serving = loop_of(long_term.connection)
        if self._serving is None:
            with contextlib.suppress(RuntimeError):
                self._serving = asyncio.get_running_loop()
        if self._serving is not None:
            self._bind(self._serving)

    @classmethod
    def from_connection(
        cls,
        connection: Connection,
        *,
        agent_id: str,
        index: IndexConfig | None = None,
        **options: Any,
    ) -> MemoryStore:
        """A store built as LangGraph's own are, from an ``index`` config: ``embed`` is a
        LangChain ``Embeddings`` object or an embedding function (wrapped in
        :class:`~agent_memory.providers.embedders.LangChainEmbedder`) or one of this
        framework's embedders; ``dims`` is required with a LangChain one. Without ``embed``,
        the embedder the connection's settings name. ``options`` go to the constructor."""
        if options.get("root") is not None:
            # Handled here so that the warning names the caller's line, not this one.
            root = options.pop("root")
            options["namespaces"] = _from_root(root, options.pop("namespaces", None))
        index = dict(index or {})
        embed = index.pop("embed", None)
        embedder: Embedder
        if embed is None:
            embedder = make_embedder(connection.settings)
        elif isinstance(embed, Embedder):
            embedder = embed
        else:
            if "dims" not in index:
                raise InvalidInputError("index needs 'dims' with a LangChain embed")
            embedder = LangChainEmbedder(embed, dimensions=index["dims"])
        return cls(
            LongTermMemory(connection, embedder),
            agent_id=agent_id,
            index=index,  # type: ignore[arg-type]
            **options,
        )

    @property
    def index_config(self) -> dict[str, Any]:
        """The vector index as LangGraph's stores describe theirs: ``dims``, ``fields`` and
        ``embed`` (what embeds: a wrapped LangChain object, else the long-term memory's
        embedder)."""
        embedder = self.long_term.embedder
        return {
            "dims": embedder.dimensions,
            "fields": list(self.fields) if self.fields else ["content"],
            "embed": embedder.wrapped if isinstance(embedder, LangChainEmbedder) else embedder,
        }

    def _check_index(self, index: IndexConfig | None) -> list[str] | None:
        if index is None:
            return None
        if not isinstance(index, Mapping) or set(index) - {"fields", "dims", "embed"}:
            raise InvalidInputError("index takes 'fields', 'dims' and 'embed'")
        embed = index.get("embed")
        embedder = self.long_term.embedder
        wrapped = embedder.wrapped if isinstance(embedder, LangChainEmbedder) else None
        if embed is not None and embed is not embedder and embed is not wrapped:
            raise InvalidInputError(
                "index embed must be left out (or be what the LongTermMemory embeds with): "
                "items are embedded by the LongTermMemory's embedder; "
                "MemoryStore.from_connection builds one from a LangChain embed"
            )
        dims = index.get("dims")
        if dims is not None and dims != self.long_term.embedder.dimensions:
            raise InvalidInputError(
                f"index dims {dims!r} differ from the embedder's {self.long_term.embedder.dimensions}"
            )
        fields = index.get("fields")
        if fields is None:
            return None
        if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
            raise InvalidInputError("index fields must be a list of field paths")
        return list(fields)

    # --- the event loop -----------------------------------------------------------------------

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._loop is not loop:
            self._loop, self._aqueue, self._task = loop, asyncio.Queue(), None
        # Sync calls keep going to the loop that serves the connection while it runs.
        if self._serving is not loop and (self._serving is None or not self._serving.is_running()):
            self._serving = loop

    def _ensure_task(self) -> None:
        """Start serving the queue of concurrent calls on the running loop (bound at first use;
        a store used from a new loop, as tests do, follows it)."""
        self._bind(asyncio.get_running_loop())
        if self._task is None or self._task.done():
            assert self._loop is not None and self._aqueue is not None
            self._task = self._loop.create_task(self._serve(self._aqueue, weakref.ref(self)))

    @staticmethod
    async def _serve(
        queue: asyncio.Queue[tuple[asyncio.Future[Any], Op]], store: weakref.ref[MemoryStore]
    ) -> None:
        """Answer the calls waiting in ``queue``, all of one moment together. The store is
        held weakly between batches, so a store nobody closed can still be collected."""
        while True:
            waiting = [await queue.get()]
            while not queue.empty():
                waiting.append(queue.get_nowait())
            try:
                live = [(future, op) for future, op in waiting if not future.done()]
                served = store()
                if not live or served is None:
                    continue
                try:
                    outcomes = await served._run([op for _, op in live], concurrent=True)
                except Exception as exc:  # not one op's failure (those are outcomes): all fail
                    outcomes = [exc] * len(live)
                finally:
                    del served
                for (future, _), outcome in zip(live, outcomes, strict=True):
                    if future.done():
                        continue
                    if isinstance(outcome, BaseException):
                        future.set_exception(outcome)
                    else:
                        future.set_result(outcome)
            except asyncio.CancelledError:  # closed mid-batch: its callers are cancelled too
                for future, _ in waiting:
                    future.cancel()
                raise
            finally:
                for _ in waiting:
                    queue.task_done()  # answered: aclose() waits for this

    # The async entry points check the shape of a namespace before LangGraph's own label
    # checks, which fail on a float or bytes with a TypeError or a misleading message.

    async def aget(self, namespace: tuple[str, ...], key: str, **kwargs: Any) -> Item | None:
        return await super().aget(_labels(namespace, "namespace"), key, **kwargs)

    async def asearch(
        self, namespace_prefix: tuple[str, ...], /, **kwargs: Any
    ) -> list[SearchItem]:
        return await super().asearch(_labels(namespace_prefix, "namespace_prefix"), **kwargs)

    async def aput(
        self, namespace: tuple[str, ...], key: str, value: dict[str, Any], *args: Any, **kwargs: Any
    ) -> None:
        await super().aput(_labels(namespace, "namespace"), key, value, *args, **kwargs)

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        await super().adelete(_labels(namespace, "namespace"), key)

    async def alist_namespaces(
        self,
        *,
        prefix: tuple[str, ...] | None = None,
        suffix: tuple[str, ...] | None = None,
        **kwargs: Any,
    ) -> list[tuple[str, ...]]:
        return await super().alist_namespaces(
            prefix=None if prefix is None else _labels(prefix, "prefix"),
            suffix=None if suffix is None else _labels(suffix, "suffix"),
            **kwargs,
        )

    # The sync API goes through batch() below (BaseStore's forms), which refuses a call that
    # cannot be served instead of blocking on a loop that is not running.
    def get(self, namespace: tuple[str, ...], key: str, **kwargs: Any) -> Item | None:
        return BaseStore.get(self, _labels(namespace, "namespace"), key, **kwargs)

    def search(self, namespace_prefix: tuple[str, ...], /, **kwargs: Any) -> list[SearchItem]:
        return BaseStore.search(self, _labels(namespace_prefix, "namespace_prefix"), **kwargs)

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        *args: Any,
        **kwargs: Any,
    ) -> None:
        BaseStore.put(self, _labels(namespace, "namespace"), key, value, *args, **kwargs)

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        BaseStore.delete(self, _labels(namespace, "namespace"), key)

    def list_namespaces(
        self,
        *,
        prefix: tuple[str, ...] | None = None,
        suffix: tuple[str, ...] | None = None,
        **kwargs: Any,
    ) -> list[tuple[str, ...]]:
        return BaseStore.list_namespaces(
            self,
            prefix=None if prefix is None else _labels(prefix, "prefix"),
            suffix=None if suffix is None else _labels(suffix, "suffix"),
            **kwargs,
        )

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """The sync API: the ops run on the loop that serves the connection and are waited
        for (:mod:`agent_memory.langgraph.sync`): the app's loop, from a worker thread (how
        LangGraph runs sync nodes), or the private loop of ``sync_connection()`` in a sync
        app. On that loop's own thread it raises ``asyncio.InvalidStateError``, as
        LangGraph's async stores do."""
        return call_sync(self._serving, self.abatch(ops), "MemoryStore")

    def close(self) -> None:
        """:meth:`aclose`, from sync code."""
        call_sync(self._serving, self.aclose(), "MemoryStore.close")

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order. All are validated before any runs (one invalid op fails the
        call and runs none); consecutive puts are embedded in one call per user."""
        self._bind(asyncio.get_running_loop())
        ops = list(ops)
        checked = [self._check(op) for op in ops]
        outcomes = await self._run(ops, checked)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return outcomes

    async def aclose(self) -> None:
        """Stop the TTL sweeper and the serving of concurrent calls, after the calls already
        made are answered. Call it before closing the connection."""
        await self.stop_ttl_sweeper()
        if self._aqueue is not None and self._task is not None and not self._task.done():
            await self._aqueue.join()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    # --- checking operations ------------------------------------------------------------------

    def _tenant(self, user_id: str | None) -> Tenant:
        return Tenant(self.agent_id, APP_WIDE if user_id is None else user_id)

    def _learned_at(self, namespace: tuple[str, ...]) -> tuple[Tenant, str | None] | None:
        """The user and memory type when ``namespace`` is under a user's learned label."""
        user = self.namespaces.user_of(namespace)
        home = None if user is None else self.namespaces.home(user)
        if home is None or namespace[: len(home) + 1] != (*home, self.namespaces.learned):
            return None
        rest = namespace[len(home) + 1 :]
        assert user is not None
        return self._tenant(user), rest[0] if rest else None

    def _check(self, op: Op) -> Any:
        """Validate one operation; what it needs to run (a put's memory is built here)."""
        if isinstance(op, GetOp | PutOp):
            namespace = check_namespace(op.namespace)
            if isinstance(op, PutOp) and op.value is None and self.namespaces.refuses(namespace):
                # A delete under a refused namespace: the items an earlier version stored
                # app-wide there (see setup()), every version.
                _key(namespace, op.key)
                return namespace, self._tenant(None)
            self.namespaces.check(namespace)
            user = self.namespaces.user_of(namespace)
            if user == APP_WIDE:
                raise NamespaceError(
                    f"user id {APP_WIDE!r} is reserved for app-wide items: {namespace!r}"
                )
            tenant = self._tenant(user)
            if isinstance(op, PutOp) and op.value is not None:
                if self._learned_at(namespace) is not None:
                    raise NamespaceError(
                        f"{namespace!r} is where the user's learned memories are read; put "
                        "items elsewhere (deleting a learned memory is allowed)"
                    )
                return self._prepare(op, namespace, tenant)
            learned = self._learned_at(namespace)
            if learned is None:
                _key(namespace, op.key)
            else:
                check_id(op.key, "key")
                if learned[1] == _PROFILE and isinstance(op, PutOp):
                    raise NamespaceError(
                        "a profile is read-only through the store: ProfileMemory.patch changes "
                        "it, agent-memory forget erases it"
                    )
            if isinstance(op, GetOp) and not isinstance(op.refresh_ttl, bool):
                raise InvalidInputError("refresh_ttl must be a bool")
            return namespace, tenant
        if isinstance(op, SearchOp):
            prefix = check_namespace(op.namespace_prefix, "namespace_prefix", empty=True)
            self.namespaces.check(prefix, "namespace_prefix")
            check_filter(op.filter)
            check_window(op.limit, op.offset)
            if op.query is not None and not isinstance(op.query, str):
                raise InvalidInputError("query must be a str or None")
            window = (op.offset + op.limit) * (_FILTER_OVERFETCH if op.filter else 1)
            if op.query and op.query.strip() and self.scores == "ranked" and window > _MAX_RANKED:
                raise InvalidInputError(
                    f"with scores='ranked' a search with a query ranks at most {_MAX_RANKED} "
                    "items: offset + limit must not exceed that (a fifth of it with a filter)"
                )
            if op.query and op.query.strip() and window > _MAX_QUERY_WINDOW:
                raise InvalidInputError(
                    f"a search with a query ranks at most {_MAX_QUERY_WINDOW} items: "
                    f"offset + limit must not exceed {_MAX_QUERY_WINDOW // _FILTER_OVERFETCH} "
                    "with a filter, 1000 without"
                )
            return prefix
        if isinstance(op, ListNamespacesOp):
            check_window(op.limit, op.offset)
            if op.max_depth is not None:
                check_number(op.max_depth, "max_depth", minimum=1, finite=True)
                if not isinstance(op.max_depth, int):
                    raise InvalidInputError("max_depth must be an int")
            for condition in op.match_conditions or ():
                if condition.match_type not in ("prefix", "suffix"):
                    raise InvalidInputError(f"unknown match type {condition.match_type!r}")
                path = check_namespace(condition.path, condition.match_type, empty=True)
                if condition.match_type == "prefix":
                    self.namespaces.check(path, "prefix")
            return None
        raise InvalidInputError(f"unknown store operation {type(op).__name__}")

    def _prepare(self, op: PutOp, namespace: tuple[str, ...], tenant: Tenant) -> _Put:
        if op.index is not None and op.index is not False and not isinstance(op.index, list):
            raise InvalidInputError("index must be False, None or a list of field paths")
        value = check_mapping(op.value, "value")
        now = utcnow()
        expires_at = None
        if op.ttl is not None:
            minutes = check_number(
                op.ttl, "ttl (minutes)", above=0, maximum=_MAX_TTL_MINUTES, finite=True
            )
            expires_at = now + timedelta(minutes=float(minutes))
        source = {
            **_OURS,
            "namespace": list(namespace),
            "key": op.key,
            "value": value,
            "ttl": None if op.ttl is None else float(op.ttl),
        }
        context = value.get("context")
        after_user = self.namespaces.schema_at
        schema = (
            namespace[after_user]
            if tenant.user_id != APP_WIDE and len(namespace) > after_user
            else None
        )
        text, field_texts = self._texts(value, op.index)
        occurred_at = None
        if self.event_time is not None and value.get(self.event_time) is not None:
            occurred_at = _event_time(value[self.event_time], f"value[{self.event_time!r}]")
        memory = NewMemory(
            text,
            memory_type=self.memory_type,
            tags=[_tag(namespace[:depth]) for depth in range(len(namespace) + 1)],
            key=_key(namespace, op.key),
            source=source,
            expires_at=expires_at,
            context=context if isinstance(context, str) and context.strip() else None,
            schema=schema,
            indexed=op.index is not False,
            # Unindexed: no field vectors either (those of an earlier put are removed).
            field_texts=field_texts if op.index is not False or field_texts is None else (),
            occurred_at=occurred_at,
        )
        return _Put(tenant, memory.checked(self.long_term.config), source)

    def _texts(self, value: Mapping[str, Any], index: Any) -> tuple[str, tuple[str, ...] | None]:
        """The item's text (what the framework's own search and keywords read) and, when
        index fields are named, the text of each field (``None`` when none are): embedded
        one by one, the item scores by its best field, as in LangGraph's stores."""
        limit = self.long_term.config.max_content_chars
        fields = list(index) if isinstance(index, list) else self.fields
        field_texts: tuple[str, ...] | None = None
        if fields:
            texts = [text for field in fields for text in get_text_at_path(value, field)]
            kept = [t[:limit] for t in texts if isinstance(t, str) and t.strip()]
            field_texts = tuple(kept[:MAX_FIELD_TEXTS]) if len(kept) > 1 else ()
            text = "\n".join(kept)
        else:
            content = value.get("content")
            text = content if isinstance(content, str) else ""
        if not text.strip():
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        # The full value lives in source; the text only has to be good enough to find it.
        return text[:limit], field_texts

    # --- running operations -------------------------------------------------------------------

    async def _run(
        self, ops: list[Op], checked: list[Any] | None = None, *, concurrent: bool = False
    ) -> list[Any]:
        """Each op's result, or the exception it raised: an invalid or failing op fails alone
        (its caller gets the error), the others run. ``concurrent``: the ops are calls made at
        the same time (no order between them), so they are run in waves (:meth:`_waves`)."""
        outcomes: list[Any] = [None] * len(ops)
        ready: list[Any] = []
        for position, op in enumerate(ops):
            if checked is not None:
                ready.append(checked[position])
                continue
            try:
                ready.append(self._check(op))
            except Exception as exc:
                outcomes[position] = exc
                ready.append(exc)
        if concurrent:
            await self._run_waves(ops, ready, outcomes)
            return outcomes
        position = 0
        while position < len(ops):
            if isinstance(ready[position], _Put):
                end = position
                while end < len(ops) and isinstance(ready[end], _Put):
                    end += 1
                for at, outcome in zip(
                    range(position, end), await self._put(ready[position:end]), strict=True
                ):
                    outcomes[at] = outcome
                position = end
                continue
            op, prepared = ops[position], ready[position]
            if not isinstance(prepared, Exception):
                try:
                    outcomes[position] = await self._one(op, prepared)
                except Exception as exc:
                    outcomes[position] = exc
            position += 1
        return outcomes

    @staticmethod
    def _waves(ops: Sequence[Op], ready: Sequence[Any]) -> list[list[int]]:
        """Concurrent calls in an order that batches them: the n-th call on each item (a
        namespace and key) in wave n, so the calls on one item keep the order they were made
        in; searches and listings, which name no item, last, each distinct one once."""
        waves: list[list[int]] = []
        calls: dict[tuple[tuple[str, ...], str], int] = {}
        reads: list[int] = []
        for position, op in enumerate(ops):
            if isinstance(ready[position], Exception):
                continue
            if isinstance(op, GetOp | PutOp):
                item = (tuple(op.namespace), op.key)
                wave = calls.get(item, 0)
                calls[item] = wave + 1
                if wave == len(waves):
                    waves.append([])
                waves[wave].append(position)
            else:
                reads.append(position)
        return [*waves, reads]

    async def _run_waves(self, ops: list[Op], ready: list[Any], outcomes: list[Any]) -> None:
        for wave in self._waves(ops, ready):
            puts = [p for p in wave if isinstance(ready[p], _Put)]
            if puts:
                for at, outcome in zip(
                    puts, await self._put([ready[p] for p in puts]), strict=True
                ):
                    outcomes[at] = outcome
            gets = [p for p in wave if isinstance(ops[p], GetOp)]
            deletes = [p for p in wave if isinstance(ops[p], PutOp) and p not in puts]
            for positions, many in ((gets, self._get_many), (deletes, self._delete_many)):
                if positions:
                    for at, outcome in zip(
                        positions, await many(ops, ready, positions), strict=True
                    ):
                        outcomes[at] = outcome
            done: dict[str, int] = {}
            for position in wave:
                op = ops[position]
                if not isinstance(op, SearchOp | ListNamespacesOp):
                    continue
                same = done.get(repr(op))
                if same is not None and not isinstance(outcomes[same], Exception):
                    # The same read, answered once; each caller gets items of its own.
                    outcomes[position] = copy.deepcopy(outcomes[same])
                    continue
                done[repr(op)] = position
                try:
                    outcomes[position] = await self._one(op, ready[position])
                except Exception as exc:
                    outcomes[position] = exc

    async def _get_many(self, ops: list[Op], ready: list[Any], positions: list[int]) -> list[Any]:
        """Gets of distinct items: one read per user (learned memories one by one)."""
        outcomes: list[Any] = [None] * len(positions)
        by_tenant: dict[Tenant, list[int]] = {}
        for index, position in enumerate(positions):
            namespace, tenant = ready[position]
            if self._learned_at(namespace) is not None:
                op = ops[position]
                assert isinstance(op, GetOp)
                try:
                    outcomes[index] = await self._get(namespace, tenant, op.key, op.refresh_ttl)
                except Exception as exc:
                    outcomes[index] = exc
                continue
            by_tenant.setdefault(tenant, []).append(index)
        for tenant, indexes in by_tenant.items():
            keys = {}
            for index in indexes:
                op = ops[positions[index]]
                assert isinstance(op, GetOp)
                keys[index] = _key(tuple(op.namespace), op.key)
            try:
                current = await self.long_term.current_many(tenant, list(keys.values()))
                found = {i: current.get(k) for i, k in keys.items()}
                refresh = [
                    m
                    for i, m in found.items()
                    if m is not None and _ours(m.source) and ops[positions[i]].refresh_ttl  # type: ignore[union-attr]
                ]
                await self._refresh(tenant, refresh)
                for index, memory in found.items():
                    ours = memory is not None and _ours(memory.source)
                    outcomes[index] = self._item(memory) if ours and memory else None
            except Exception as exc:
                for index in indexes:
                    outcomes[index] = exc
        return outcomes

    async def _delete_many(
        self, ops: list[Op], ready: list[Any], positions: list[int]
    ) -> list[Any]:
        """Deletes of distinct items: one delete per user (learned memories one by one)."""
        outcomes: list[Any] = [None] * len(positions)
        by_tenant: dict[Tenant, list[tuple[int, str]]] = {}
        for index, position in enumerate(positions):
            namespace, tenant = ready[position]
            op = ops[position]
            assert isinstance(op, PutOp)
            if self._learned_at(namespace) is not None:
                try:
                    await self._delete(namespace, tenant, op.key)
                except Exception as exc:
                    outcomes[index] = exc
                continue
            by_tenant.setdefault(tenant, []).append((index, _key(namespace, op.key)))
        for tenant, entries in by_tenant.items():
            try:
                await self.long_term.forget_keys(tenant, [key for _, key in entries])
            except Exception as exc:
                for index, _ in entries:
                    outcomes[index] = exc
        return outcomes

    async def _one(self, op: Op, prepared: Any) -> Result:
        if isinstance(op, GetOp):
            namespace, tenant = prepared
            return await self._get(namespace, tenant, op.key, op.refresh_ttl)
        if isinstance(op, PutOp):
            namespace, tenant = prepared
            await self._delete(namespace, tenant, op.key)
            return None
        if isinstance(op, SearchOp):
            return await self._search(prepared, op)
        assert isinstance(op, ListNamespacesOp)
        return await self._list(op)

    async def _put(self, puts: Sequence[_Put]) -> list[Exception | None]:
        """Store a run of puts: one ``store_many`` (one embedding call) per user."""
        by_tenant: dict[Tenant, list[int]] = {}
        for position, put in enumerate(puts):
            by_tenant.setdefault(put.tenant, []).append(position)
        outcomes: list[Exception | None] = [None] * len(puts)
        for tenant, positions in by_tenant.items():
            mine = [puts[p] for p in positions]
            try:
                # An item keeps the creation time of its first version.
                first = await self.long_term.current_many(tenant, [p.memory.key for p in mine])
                memories = []
                for put in mine:
                    earlier = first.get(put.memory.key or "")
                    if earlier is not None and _ours(earlier.source):
                        created = (earlier.source or {}).get("created_at", earlier.created_at)
                        put.source["created_at"] = created
                    memories.append(replace(put.memory, source=put.source))
                results = await self.long_term.store_many(tenant, memories)
            except Exception as exc:
                for p in positions:
                    outcomes[p] = exc
                continue
            # Same text as the current memory: consolidation kept that document, but the value
            # may differ (other fields) and the expiry too: the put wins (one bulk write).
            kept = [
                (position, result.id, put)
                for position, result, put in zip(positions, results, mine, strict=True)
                if result.action == "reinforced"
            ]
            try:
                now = utcnow()
                await self.long_term.set_sources(
                    tenant,
                    [
                        (memory_id, {**put.source, "updated_at": now}, put.memory.expires_at)
                        for _, memory_id, put in kept
                    ],
                )
            except Exception as exc:
                for position, _, _ in kept:
                    outcomes[position] = exc
        logger.debug("store_items_put", agent_id=self.agent_id, count=len(puts))
        return outcomes

    async def _get(
        self, namespace: tuple[str, ...], tenant: Tenant, key: str, refresh: bool
    ) -> Item | None:
        learned = self._learned_at(namespace)
        if learned is not None and learned[1] == _PROFILE:
            return await self._profile(tenant, key)
        if learned is not None:
            memory = await self._learned_memory(tenant, key)
            if memory is None or namespace != self._learned_namespace(memory)[: len(namespace)]:
                return None
            return (
                self._item(memory)
                if len(namespace) == len(self._learned_namespace(memory))
                else None
            )
        memory = await self.long_term.current(tenant, key=_key(namespace, key))
        if memory is None or not _ours(memory.source):
            return None
        if refresh:
            await self._refresh(tenant, [memory])
        return self._item(memory)

    def _patch_schemas(self) -> list[str]:
        if self.profiles is None:
            return []
        return [n for n, s in self.profiles.schemas.items() if s.update_mode == "patch"]

    async def _profile(self, tenant: Tenant, schema: str) -> SearchItem | None:
        """The user's profile ``schema`` as an item (``None`` when never written)."""
        if self.profiles is None or schema not in self._patch_schemas():
            return None
        profile = await self.profiles.get(tenant, schema)
        if profile.version == 0 or profile.updated_at is None:
            return None
        home = self.namespaces.home(tenant.user_id)
        assert home is not None and self.namespaces.learned is not None
        return SearchItem(
            namespace=(*home, self.namespaces.learned, _PROFILE),
            key=schema,
            value=dict(profile.data),
            created_at=profile.updated_at,
            updated_at=profile.updated_at,
        )

    async def _learned_memory(self, tenant: Tenant, memory_id: str) -> Memory | None:
        try:
            memory = await self.long_term.get(tenant, memory_id)
        except (NotFoundError, InvalidInputError):
            return None
        if memory.status != "active" or _ANY_ITEM in memory.tags or not memory.indexed:
            return None
        if (memory.source or {}).get("store") == _OURS["store"]:
            return None  # written by an earlier layout of this store
        if memory.expires_at is not None and memory.expires_at <= utcnow():
            return None
        return memory

    async def _delete(self, namespace: tuple[str, ...], tenant: Tenant, key: str) -> None:
        if self._learned_at(namespace) is not None:
            memory = await self._learned_memory(tenant, key)
            if memory is not None and self._learned_namespace(memory) == namespace:
                with contextlib.suppress(NotFoundError):
                    await self.long_term.forget(tenant, memory.id)
            return
        versions = await self.long_term.history(tenant, key=_key(namespace, key))
        for memory in versions:
            try:
                await self.long_term.forget(tenant, memory.id)
            except NotFoundError:
                continue  # deleted concurrently: the outcome is the same

    async def _refresh(self, tenant: Tenant, memories: Sequence[Memory]) -> None:
        """Move the expiry of items read with a time to live to ttl from now."""
        by_ttl: dict[float, list[str]] = {}
        for memory in memories:
            ttl = (memory.source or {}).get("ttl")
            if is_number(ttl) and ttl > 0 and memory.expires_at is not None:
                by_ttl.setdefault(float(ttl), []).append(memory.id)
        now = utcnow()
        for ttl, ids in by_ttl.items():
            await self.long_term.set_expiry(tenant, ids, now + timedelta(minutes=ttl))

    # --- reading ------------------------------------------------------------------------------

    def _learned_namespace(self, memory: Memory) -> tuple[str, ...]:
        home = self.namespaces.home(memory.user_id)
        assert home is not None and self.namespaces.learned is not None
        return (*home, self.namespaces.learned, memory.memory_type)

    def _item(self, memory: Memory, score: float | None = None, *, hit: bool = False) -> Item:
        source = memory.source or {}
        if _ours(source):
            namespace = tuple(source.get("namespace") or ())
            key = source.get("key", "")
            value = dict(source.get("value") or {})
            created = source.get("created_at") or memory.created_at
            updated = source.get("updated_at") or memory.valid_from
        else:  # a learned memory
            namespace = self._learned_namespace(memory)
            key = memory.id
            value = {
                "content": memory.content,
                "memory_type": memory.memory_type,
                "importance": memory.importance,
            }
            if memory.context:
                value["context"] = memory.context
            # Formed memories hold from when they were said (valid_from), which may be
            # before they were stored; the item was not updated before it was created.
            created, updated = memory.created_at, max(memory.created_at, memory.valid_from)
        fields = {
            "namespace": namespace,
            "key": key,
            "value": value,
            "created_at": created,
            "updated_at": updated,
        }
        return SearchItem(**fields, score=score) if hit else Item(**fields)

    async def _wheres(self, prefix: tuple[str, ...]) -> list[_Where]:
        """The tenants a read under ``prefix`` looks at, and what it reads in each."""
        reach, user = self.namespaces.reach(prefix)
        if reach == "user":
            assert user is not None
            return [self._where(self._tenant(user), prefix)]
        wheres = [_Where(self._tenant(None), prefix, items=True, learned=False)]
        if reach == "both" and user != APP_WIDE:
            assert user is not None
            wheres.append(self._where(self._tenant(user), prefix))
        if reach == "span":
            if not self.namespaces.span_users:
                raise NamespaceError(
                    f"{prefix!r} names no user and this store reads one user at a time "
                    "(NamespaceMap(span_users=False)): include the user id"
                )
            users = await self.long_term.user_ids(self.agent_id)
            wheres += [self._where(self._tenant(u), prefix) for u in users if u != APP_WIDE]
        return wheres

    def _where(self, tenant: Tenant, prefix: tuple[str, ...]) -> _Where:
        home = self.namespaces.home(tenant.user_id)
        if home is None:
            return _Where(tenant, prefix, items=True, learned=False)
        learned = (*home, self.namespaces.learned)
        if prefix[: len(learned)] == learned:  # under the learned label: learned memories only
            rest = prefix[len(learned) :]
            profile = self.profiles is not None and rest in ((), (_PROFILE,))
            if len(rest) > 1 or (rest and rest[0] not in MEMORY_TYPES):
                return _Where(tenant, prefix, items=False, learned=False, profile=profile)
            return _Where(
                tenant,
                prefix,
                items=False,
                learned=True,
                memory_type=rest[0] if rest else None,
                profile=profile,
            )
        covers = learned[: len(prefix)] == prefix
        return _Where(
            tenant, prefix, items=True, learned=covers, profile=covers and self.profiles is not None
        )

    async def _search(self, prefix: tuple[str, ...], op: SearchOp) -> list[SearchItem]:
        if op.limit == 0:
            return []
        want = op.offset + op.limit
        wheres = await self._wheres(prefix)
        found: list[_Found]
        if op.query and op.query.strip():
            # One embedding of the query, whatever the number of users and sources.
            vector = await self.long_term.embedder.embed_query(op.query)
            found = []
            for where in wheres:
                found.extend(await self._ranked(where, op, want, vector))
            found.sort(key=lambda entry: (-(entry.item.score or 0.0), entry.order))
        else:
            found = await self._listed(wheres, op.filter, want)
        found = found[op.offset : want]
        if op.refresh_ttl:
            by_tenant: dict[Tenant, list[Memory]] = {}
            for entry in found:
                if entry.memory is not None and _ours(entry.memory.source):
                    tenant = Tenant(entry.memory.agent_id, entry.memory.user_id)
                    by_tenant.setdefault(tenant, []).append(entry.memory)
            for tenant, memories in by_tenant.items():
                await self._refresh(tenant, memories)
        return [entry.item for entry in found]

    async def _ranked(self, where: _Where, op: SearchOp, want: int, vector: Any) -> list[_Found]:
        """The best ``want`` matches in one tenant, with their scores, by query."""
        assert op.query is not None
        k = min(_MAX_QUERY_WINDOW, want * (_FILTER_OVERFETCH if op.filter else 1))
        pairs: list[tuple[Memory, float]] = []
        if self.scores == "ranked":
            if where.items or where.learned:
                retrieved = await self.long_term.retrieve(
                    where.tenant,
                    op.query,
                    k=min(k, _MAX_RANKED),
                    query_vector=vector,
                    tags=None if where.learned else [_tag(where.prefix)],
                    memory_types=where.memory_type,
                )
                pairs = [(found.memory, found.score) for found in retrieved]
        else:
            if where.items:
                pairs += await self.long_term.similar(
                    where.tenant,
                    op.query,
                    k=k,
                    tag=_tag(where.prefix),
                    without_tag=_REFUSED,
                    query_vector=vector,
                    fields=True,  # an item with several index fields scores by its best
                )
            if where.learned:
                pairs += await self.long_term.similar(
                    where.tenant,
                    op.query,
                    k=k,
                    without_tag=_ANY_ITEM,
                    memory_type=where.memory_type,
                    query_vector=vector,
                )
        results: list[_Found] = []
        seen: set[tuple[tuple[str, ...], str]] = set()
        for order, (memory, score) in sorted(enumerate(pairs), key=lambda p: -p[1][1]):
            if not self._visible(memory, where):
                continue
            item = self._item(memory, score, hit=True)
            # Two active versions of one key exist only after a crash between insert and
            # supersede (servers without transactions); the best ranked stands for the item.
            if (item.namespace, item.key) in seen or not matches_filter(item.value, op.filter):
                continue
            seen.add((item.namespace, item.key))
            results.append(_Found(item, memory, order))
        return results

    def _refused(self, memory: Memory) -> bool:
        """An app-wide item whose namespace this store's map refuses: a user's item an earlier
        version stored app-wide, which no read returns (see :meth:`setup`)."""
        if memory.user_id != APP_WIDE:
            return False
        namespace = (memory.source or {}).get("namespace") or ()
        return _REFUSED in memory.tags or self.namespaces.refuses(namespace)

    def _visible(self, memory: Memory, where: _Where) -> bool:
        if _ours(memory.source):
            return where.items and _tag(where.prefix) in memory.tags and not self._refused(memory)
        if (memory.source or {}).get("store") == _OURS["store"]:
            return False  # written by an earlier layout of this store: not a learned memory
        if not where.learned or _ANY_ITEM in memory.tags or not memory.indexed:
            return False
        return where.memory_type is None or memory.memory_type == where.memory_type

    async def _listed(
        self, wheres: Sequence[_Where], filter_: Mapping[str, Any] | None, want: int
    ) -> list[_Found]:
        """The newest ``want`` items matching ``filter_`` across ``wheres``: newest version
        first (a put that changes the text makes a new version; one that repeats it does not),
        then by namespace and key, so pages join up."""
        streams: list[list[_Found]] = []
        for where in wheres:
            if where.items:
                streams.append(
                    await self._take(
                        self.long_term.browse(
                            where.tenant, tag=_tag(where.prefix), without_tag=_REFUSED, source=_OURS
                        ),
                        where,
                        filter_,
                        want,
                    )
                )
            if where.learned:
                streams.append(
                    await self._take(
                        self.long_term.browse(where.tenant, without_tag=_ANY_ITEM),
                        where,
                        filter_,
                        want,
                    )
                )
            if where.profile:
                profiles = [await self._profile(where.tenant, s) for s in self._patch_schemas()]
                streams.append(
                    sorted(
                        (
                            _Found(p, None, 0, p.updated_at)
                            for p in profiles
                            if p and matches_filter(p.value, filter_)
                        ),
                        key=_newest_first,
                    )
                )
        return list(heapq.merge(*streams, key=_newest_first))[:want]

    async def _take(
        self, memories: Any, where: _Where, filter_: Mapping[str, Any] | None, want: int
    ) -> list[_Found]:
        found: list[_Found] = []
        seen: set[tuple[tuple[str, ...], str]] = set()
        async for memory in memories:
            if not self._visible(memory, where):
                continue
            item = self._item(memory, hit=True)
            if (item.namespace, item.key) in seen or not matches_filter(item.value, filter_):
                continue
            seen.add((item.namespace, item.key))
            found.append(_Found(item, memory, 0, memory.valid_from))
            if len(found) >= want:
                break
        found.sort(key=_newest_first)
        return found

    async def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = list(op.match_conditions or ())
        prefixes = [tuple(c.path) for c in conditions if c.match_type == "prefix"]
        # The labels every match starts with, up to the first wildcard: the tag to filter on.
        fixed: tuple[str, ...] = ()
        if prefixes:
            for label in prefixes[0]:
                if label == "*":
                    break
                fixed = (*fixed, label)
        reach_prefix = prefixes[0] if prefixes else ()
        namespaces: set[tuple[str, ...]] = set()
        for where in await self._wheres(reach_prefix):
            if where.items:
                values = await self.long_term.grouped(
                    where.tenant,
                    "source.namespace",
                    tag=_tag(fixed),
                    without_tag=_REFUSED,
                    source=_OURS,
                )
                namespaces.update(
                    tuple(v)
                    for v in values
                    if isinstance(v, list)
                    and not (where.tenant.user_id == APP_WIDE and self.namespaces.refuses(v))
                )
            home = self.namespaces.home(where.tenant.user_id)
            if home is not None and where.tenant.user_id != APP_WIDE:
                # A user's learned namespaces, whatever the prefix (the conditions filter them).
                assert self.namespaces.learned is not None
                types = await self.long_term.grouped(
                    where.tenant, "memory_type", without_tag=_ANY_ITEM
                )
                if any([await self._profile(where.tenant, s) for s in self._patch_schemas()]):
                    types.append(_PROFILE)
                namespaces.update(
                    (*home, self.namespaces.learned, t) for t in types if isinstance(t, str)
                )
        matched = [ns for ns in namespaces if all(namespace_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            matched = list({ns[: op.max_depth] for ns in matched})
        return sorted(matched)[op.offset : op.offset + op.limit]

    # --- time to live -------------------------------------------------------------------------

    async def sweep_ttl(self) -> int:
        """Delete the expired items (and memories) of every user of the agent now; how many.
        Reads never return an expired item whether or not this has run: MongoDB's TTL index
        deletes them too, within a minute or so, on a real server."""
        count = 0
        for user in {APP_WIDE, *await self.long_term.user_ids(self.agent_id)}:
            count += await self.long_term.forget_expired(Tenant(self.agent_id, user))
        if count:
            logger.info("store_items_expired", agent_id=self.agent_id, count=count)
        return count

    async def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """Run :meth:`sweep_ttl` every ``sweep_interval_minutes`` (default: the TTL config's
        ``sweep_interval_minutes``, else 5) until :meth:`stop_ttl_sweeper` or :meth:`aclose`."""
        minutes = sweep_interval_minutes
        if minutes is None:
            minutes = (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        minutes = check_number(
            minutes, "sweep_interval_minutes", above=0, maximum=_MAX_TTL_MINUTES, finite=True
        )
        if self._sweeper is not None and not self._sweeper.done():
            return self._sweeper

        async def sweep_forever() -> None:
            while True:
                await asyncio.sleep(float(minutes) * 60)
                try:
                    await self.sweep_ttl()
                except Exception as exc:  # the next sweep tries again
                    logger.warning("store_ttl_sweep_failed", error=type(exc).__name__)

        self._sweeper = asyncio.get_running_loop().create_task(sweep_forever())
        return self._sweeper

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper; whether it stopped within ``timeout`` seconds."""
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is None or sweeper.done():
            return True
        sweeper.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(sweeper), timeout)
        except asyncio.CancelledError:
            return True
        except TimeoutError:
            return False
        return True

    # --- upgrading ------------------------------------------------------------------------------

    async def setup(self) -> int:
        """Bring items written by an earlier version of this store into the current layout,
        every version of each; how many memories were relabelled or moved. Idempotent, and
        safe to run while the store serves: call it once after upgrading (and after changing
        the store's map), as LangGraph's SQL stores' ``setup``.

        - Layout 1 (namespaces ``("memories", user_id, *path)`` stored as ``path``) is
          relabelled.
        - App-wide items whose namespace this store's map gives a user (``(user_id,
          "memories")`` stored app-wide by the previous version, now read with
          ``NamespaceMap(user_segment=0)``) are moved to that user; when the user already
          holds the key, they become its history.
        - App-wide items whose namespace the map refuses stay where they are, left out of
          every read; they are counted in a ``store_items_refused`` warning (no values) and
          tagged so that searches skip them on the server too. :meth:`refused_items` lists
          them, ``adelete(namespace, key)`` or :meth:`forget_refused` deletes them, and
          erasing the user named in them erases them.
        """
        root = self.namespaces.user_roots[0] if self.namespaces.user_roots else "memories"
        count = 0
        for user in await self.long_term.user_ids(self.agent_id):
            tenant = Tenant(self.agent_id, user)
            legacy = [
                memory
                async for memory in self.long_term.browse(tenant, tag=_LEGACY_ALL)
                if _legacy(memory.source)
            ]
            for current in legacy:
                source = current.source or {}
                path = [label for label in source.get("namespace") or () if isinstance(label, str)]
                namespace = (root, user, *path)
                item_key = source.get("key")
                if not isinstance(item_key, str) or self.namespaces.user_of(namespace) != user:
                    continue  # not expressible in this store's map: left as it is
                versions = (
                    await self.long_term.history(tenant, key=current.key) if current.key else []
                )
                for memory in versions or [current]:
                    if not _legacy(memory.source):
                        continue
                    upgraded = {**(memory.source or {}), **_OURS, "namespace": list(namespace)}
                    kept = [t for t in memory.tags if not t.startswith(_LEGACY_TAG)]
                    tags = [*(_tag(namespace[:d]) for d in range(len(namespace) + 1)), *kept]
                    count += await self.long_term.relabel(
                        tenant,
                        memory.id,
                        key=_key(namespace, item_key),
                        tags=tags,
                        source=upgraded,
                    )
        count += await self._settle_app_wide()
        if count:
            logger.info("store_items_upgraded", agent_id=self.agent_id, count=count)
        return count

    async def _app_wide_namespaces(self) -> list[tuple[str, ...]]:
        values = await self.long_term.grouped(self._tenant(None), "source.namespace", source=_OURS)
        return sorted(
            tuple(v) for v in values if isinstance(v, list) and all(isinstance(x, str) for x in v)
        )

    async def _app_wide_keys(self, namespace: tuple[str, ...]) -> list[str]:
        """The keys (memory keys) of the app-wide items stored exactly under ``namespace``."""
        keys = {
            memory.key
            async for memory in self.long_term.browse(
                self._tenant(None), tag=_tag(namespace), source=_OURS
            )
            if memory.key and tuple((memory.source or {}).get("namespace") or ()) == namespace
        }
        return sorted(keys)

    async def _settle_app_wide(self) -> int:
        """Move app-wide items the map gives a user to that user, tag those it refuses and
        warn of them; how many memories were moved."""
        shared = self._tenant(None)
        moved = refused = 0
        for namespace in await self._app_wide_namespaces():
            user = self.namespaces.user_of(namespace)
            if user is not None and user != APP_WIDE:
                owner = self._tenant(user)
                after_user = self.namespaces.schema_at
                schema = namespace[after_user] if len(namespace) > after_user else None
                for key in await self._app_wide_keys(namespace):
                    versions = await self.long_term.history(shared, key=key)
                    held = await self.long_term.current(owner, key=key)
                    moved += await self.long_term.move_to_user(
                        shared,
                        [memory.id for memory in versions if _ours(memory.source)],
                        user,
                        schema=schema,
                        supersede=held is not None,
                        untag=_REFUSED,
                    )
            elif self.namespaces.refuses(namespace):
                for key in await self._app_wide_keys(namespace):
                    versions = await self.long_term.history(shared, key=key)
                    refused += len(versions)
                    untagged = [m.id for m in versions if _REFUSED not in m.tags]
                    await self.long_term.tag_memories(shared, untagged, _REFUSED)
        if refused:
            logger.warning(
                "store_items_refused",
                agent_id=self.agent_id,
                count=refused,
                reason="stored app-wide by an earlier version under a namespace this store's "
                "map refuses; no read returns them",
                remedy="pass the NamespaceMap that fits them and run setup() again to move "
                "them to their users, or list them with refused_items() and delete them with "
                "adelete() or forget_refused()",
            )
        return moved

    async def refused_items(self, *, limit: int = 100) -> list[Item]:
        """The app-wide items (current versions) an earlier version of this store kept under
        a namespace this store's map refuses, which no read returns: at most ``limit``, by
        namespace and key. Delete one with ``adelete(item.namespace, item.key)``, all with
        :meth:`forget_refused`."""
        limit = check_int(limit, "limit", minimum=0, maximum=10_000)
        items: list[Item] = []
        for namespace in await self._app_wide_namespaces():
            if not self.namespaces.refuses(namespace) or len(items) >= limit:
                continue
            current = await self.long_term.current_many(
                self._tenant(None), await self._app_wide_keys(namespace)
            )
            items += sorted(
                (self._item(memory) for memory in current.values() if _ours(memory.source)),
                key=lambda item: item.key,
            )
        return items[:limit]

    async def forget_refused(self) -> int:
        """Delete every app-wide item (every version) an earlier version of this store kept
        under a namespace this store's map refuses; how many memories were deleted."""
        count = 0
        for namespace in await self._app_wide_namespaces():
            if self.namespaces.refuses(namespace):
                keys = await self._app_wide_keys(namespace)
                count += await self.long_term.forget_keys(self._tenant(None), keys)
        if count:
            logger.info("store_refused_items_forgotten", agent_id=self.agent_id, count=count)
        return count

    # --- beyond BaseStore ---------------------------------------------------------------------

    async def forget_user(self, tenant: Tenant) -> dict[str, int]:
        """Erase the agent's app-wide items whose namespace is shaped like ``tenant``'s
        user's: the user id next to one of this store's root labels or ``"memories"`` (see
        :mod:`agent_memory.langgraph.erasure`); the user's own items are their memories,
        erased with them. Register with ``MemorySystem.register_forgetter(store.forget_user)``
        (``agent-memory forget`` does this erasure itself)."""
        tenant = check_tenant(tenant)
        if tenant.agent_id != self.agent_id or tenant.user_id == APP_WIDE:
            return {}
        # The map's roots, and the default map's, under which the previous version wrote
        # (user_id, "memories") app-wide.
        roots = tuple(dict.fromkeys((*(self.namespaces.user_roots or ()), *DEFAULT_ROOTS)))
        count = await forget_named_items(self.long_term, tenant, roots)
        return {self.long_term.connection.collection_name(MEMORIES): count}

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        """Every version ever put under ``key``, the current one first (consolidation keeps
        superseded versions queryable)."""
        namespace = check_namespace(namespace)
        self.namespaces.check(namespace)
        tenant = self._tenant(self.namespaces.user_of(namespace))
        versions = await self.long_term.history(tenant, key=_key(namespace, key))
        return [self._item(memory) for memory in versions if _ours(memory.source)]


def _from_root(root: Any, namespaces: NamespaceMap | None) -> NamespaceMap:
    """The map the deprecated ``root=`` stands for: ``(root, user_id, ...)`` is a user's, and
    a read must name the user, as the store that took ``root`` required."""
    if namespaces is not None:
        raise InvalidInputError(
            "pass namespaces= or the deprecated root=, not both (root=x is "
            "namespaces=NamespaceMap(user_roots=(x,), span_users=False))"
        )
    users = NamespaceMap(user_roots=(root,), span_users=False)
    # Called by __init__ and by from_connection: either way the caller of those is 3 up.
    warnings.warn(
        f"MemoryStore(root={root!r}) is deprecated and will be removed: use "
        f"MemoryStore(namespaces=NamespaceMap(user_roots=({root!r},), span_users=False))",
        DeprecationWarning,
        stacklevel=3,
    )
    return users


def _check_ttl_config(ttl: Any) -> TTLConfig | None:
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping) or set(ttl) - {
        "refresh_on_read",
        "default_ttl",
        "sweep_interval_minutes",
    }:
        raise InvalidInputError(
            "ttl takes 'refresh_on_read', 'default_ttl' and 'sweep_interval_minutes'"
        )
    if "refresh_on_read" in ttl and not isinstance(ttl["refresh_on_read"], bool):
        raise InvalidInputError("ttl refresh_on_read must be a bool")
    for name in ("default_ttl", "sweep_interval_minutes"):
        if ttl.get(name) is not None:
            check_number(ttl[name], f"ttl {name}", above=0, maximum=_MAX_TTL_MINUTES, finite=True)
    return TTLConfig(**ttl)  # type: ignore[typeddict-item]

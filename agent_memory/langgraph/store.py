"""Long-term memory as a LangGraph ``BaseStore``: any LangGraph agent can keep user memories here.

>>> store = MemoryStore(LongTermMemory(connection, embedder), agent_id="support-agent")  # doctest: +SKIP
>>> graph = builder.compile(store=store)                                                 # doctest: +SKIP
>>> await store.aput(("memories", "user-456", "Note"), "diet", {"content": "vegetarian"})
>>> hits = await store.asearch(("memories", "user-456"), query="what does she eat?")      # doctest: +SKIP

Mapping (one memory document per item version, in the ``memories`` collection):

- namespace ``("memories", user_id, *path)`` -> ``Tenant(agent_id, user_id)``; anything else is
  refused, so one user's calls never reach another's memories. ``path`` (for example
  ``("Note",)``) is kept in ``source.namespace`` and as one tag per prefix of it
  (``lgns:[]``, ``lgns:["Note"]``, ...), which is what prefix searches filter on.
- item key -> memory ``key`` ``lg:["Note","diet"]`` (the path and the key, JSON-encoded, so
  equal keys in two namespaces stay two slots), ``schema`` = ``path[0]``.
- item value -> ``source.value`` (checked: no ``$``-keys or dotted keys); the searchable text
  (``content``) is the fields named by ``put(index=[...])`` or ``index={"fields": [...]}``,
  else ``value["content"]``, else the value as JSON. ``index=False`` is accepted, but every
  memory is embedded (long-term memory has no unindexed kind).

Putting a key again goes through consolidation: the same text reinforces the current memory
(its value is refreshed), a different text supersedes it and the old version stays queryable
through :meth:`MemoryStore.ahistory`. Deleting a key deletes every version of it.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
)

from agent_memory._log import get_logger
from agent_memory.checks import check_id, check_int, check_mapping, is_number
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import MEMORY_TYPES, Memory, NewMemory
from agent_memory.stamps import utcnow
from agent_memory.tenancy import Tenant

__all__ = ["MemoryStore"]

logger = get_logger(__name__)

_KEY_PREFIX = "lg:"
_TAG_PREFIX = "lgns:"
#: The marker in the source of every memory this store writes.
_OURS = {"store": "langgraph"}
_MAX_PATH = 8  # one tag per prefix of the path; LongTermConfig allows 32 tags
_MAX_QUERY_WINDOW = 100  # LongTermMemory.retrieve ranks at most 100 memories
_MAX_LIST = 1_000
_ORDERING = frozenset({"$gt", "$gte", "$lt", "$lte"})
_OPERATORS = _ORDERING | {"$eq", "$ne"}


#: What validating an operation yields: the user, the path below it, a put's prepared memory.
_Scope: TypeAlias = "tuple[Tenant, tuple[str, ...], tuple[NewMemory, dict[str, Any]] | None]"


def _encode(parts: Sequence[str]) -> str:
    # JSON keeps the encoding unambiguous: no label or key can fake a separator.
    return json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _check_label(label: Any) -> str:
    label = check_id(label, "namespace label")
    if "." in label:
        raise InvalidInputError(f"namespace label {label!r} contains '.'")
    return label


class MemoryStore(BaseStore):
    """A LangGraph store whose items are this framework's long-term memories.

    Namespaces are ``("memories", user_id, *path)``; every call touches one user only.
    Searches with ``query`` use :meth:`LongTermMemory.retrieve` (vector + keyword, ranked by
    relevance, recency, importance and feedback); ``SearchItem.score`` is that ranking score.
    The async API is the real one; the sync one works only from a worker thread while the
    event loop that owns the connection runs (LangGraph runs sync nodes that way).

    >>> store = MemoryStore(long_term, agent_id="support-agent")       # doctest: +SKIP
    >>> await store.aput(("memories", "u1", "User"), "name", {"content": "Ada"})
    >>> (await store.aget(("memories", "u1", "User"), "name")).value    # doctest: +SKIP
    {'content': 'Ada'}
    """

    supports_ttl = False

    def __init__(
        self,
        long_term: LongTermMemory,
        *,
        agent_id: str,
        index: IndexConfig | None = None,
        memory_type: str = "fact",
        root: str = "memories",
    ) -> None:
        if not isinstance(long_term, LongTermMemory):
            raise InvalidInputError("long_term must be a LongTermMemory")
        if memory_type not in MEMORY_TYPES:
            raise InvalidInputError(f"memory_type must be one of {', '.join(MEMORY_TYPES)}")
        self.long_term = long_term
        self.agent_id = check_id(agent_id, "agent_id")
        self.memory_type = memory_type
        self.root = _check_label(root)
        self.fields = self._check_index(index)
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

    def _check_index(self, index: IndexConfig | None) -> list[str] | None:
        if index is None:
            return None
        if not isinstance(index, Mapping) or set(index) - {"fields", "dims"}:
            raise InvalidInputError(
                "index takes only 'fields' (and 'dims'): the long-term memory's embedder "
                "embeds every item"
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

    # --- namespaces -------------------------------------------------------------------------

    def _scope(self, namespace: Any, what: str) -> tuple[Tenant, tuple[str, ...]]:
        """The tenant and path of ``(root, user_id, *path)``; any other shape is refused."""
        if not isinstance(namespace, tuple | list) or len(namespace) < 2:
            raise InvalidInputError(
                f"{what} must start with ({self.root!r}, user_id), got {_short(namespace)}"
            )
        if namespace[0] != self.root:
            raise InvalidInputError(
                f"{what} must start with {self.root!r} then the user id, got {_short(namespace)}"
            )
        tenant = Tenant(self.agent_id, namespace[1])
        path = tuple(_check_label(label) for label in namespace[2:])
        if len(path) > _MAX_PATH:
            raise InvalidInputError(f"{what} is deeper than {_MAX_PATH} labels after the user id")
        return tenant, path

    @staticmethod
    def _tag(path: Sequence[str]) -> str:
        tag = _TAG_PREFIX + _encode(path)
        if len(tag) > 256:
            raise InvalidInputError("the namespace labels are too long together (256 characters)")
        return tag

    @staticmethod
    def _key(path: Sequence[str], key: Any) -> str:
        encoded = _KEY_PREFIX + _encode([*path, check_id(key, "key")])
        if len(encoded) > 256:
            raise InvalidInputError("the namespace and key are too long together (256 characters)")
        return encoded

    # --- items ------------------------------------------------------------------------------

    def _text(self, value: Mapping[str, Any], index: Any) -> str:
        fields = list(index) if isinstance(index, list) else self.fields
        if fields:
            texts = [text for field in fields for text in get_text_at_path(value, field)]
            text = "\n".join(t for t in texts if t and t.strip())
        else:
            content = value.get("content")
            text = content if isinstance(content, str) else ""
        if not text.strip():
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        # The full value lives in source; the text only has to be good enough to find it.
        return text[: self.long_term.config.max_content_chars]

    def _new_memory(self, op: PutOp, path: tuple[str, ...]) -> tuple[NewMemory, dict[str, Any]]:
        if op.ttl is not None:
            raise NotImplementedError("MemoryStore does not support TTL; put with ttl=None")
        if op.index is not None and op.index is not False and not isinstance(op.index, list):
            raise InvalidInputError("index must be False, None or a list of field paths")
        value = check_mapping(op.value, "value")
        source = {**_OURS, "namespace": list(path), "key": op.key, "value": value}
        context = value.get("context")
        memory = NewMemory(
            self._text(value, op.index),
            memory_type=self.memory_type,
            tags=[self._tag(path[:depth]) for depth in range(len(path) + 1)],
            key=self._key(path, op.key),
            source=source,
            context=context if isinstance(context, str) and context.strip() else None,
            schema=path[0] if path else None,
        )
        return memory, source

    def _item(self, memory: Memory, score: float | None = None, *, hit: bool = False) -> Item:
        source = memory.source or {}
        namespace = (self.root, memory.user_id, *source.get("namespace", ()))
        updated = source.get("updated_at") or memory.valid_from
        fields = {
            "namespace": namespace,
            "key": source.get("key", ""),
            "value": dict(source.get("value") or {}),
            "created_at": memory.created_at,
            "updated_at": updated,
        }
        return SearchItem(**fields, score=score) if hit else Item(**fields)

    # --- operations -------------------------------------------------------------------------

    def _check(self, op: Op) -> _Scope:
        """Validate one operation; a put's memory is built here, before anything runs."""
        if isinstance(op, GetOp | PutOp):
            tenant, path = self._scope(op.namespace, "namespace")
            self._key(path, op.key)
            if isinstance(op, PutOp) and op.value is not None:
                return tenant, path, self._new_memory(op, path)
            return tenant, path, None
        if isinstance(op, SearchOp):
            _check_filter(op.filter)
            _check_window(op.limit, op.offset)
            if op.query is not None and not isinstance(op.query, str):
                raise InvalidInputError("query must be a str")
            if op.query and op.offset + op.limit > _MAX_QUERY_WINDOW:
                raise InvalidInputError(
                    f"a search with a query ranks at most {_MAX_QUERY_WINDOW} items: "
                    "offset + limit must not exceed that"
                )
            return (*self._scope(op.namespace_prefix, "namespace_prefix"), None)
        if isinstance(op, ListNamespacesOp):
            return (*self._list_scope(op), None)
        raise InvalidInputError(f"unknown store operation {type(op).__name__}")

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order. All are validated before any runs; consecutive puts are
        stored with one embedding call per user."""
        self._loop = asyncio.get_running_loop()
        ops = list(ops)
        scopes = [self._check(op) for op in ops]
        results: list[Result] = [None] * len(ops)
        index = 0
        while index < len(ops):
            end = index
            while end < len(ops) and isinstance(ops[end], PutOp) and ops[end].value is not None:
                end += 1
            if end > index:
                await self._put(scopes[index:end])
                index = end
                continue
            op, (tenant, path, _) = ops[index], scopes[index]
            if isinstance(op, GetOp):
                results[index] = await self._get(tenant, path, op.key)
            elif isinstance(op, PutOp):
                await self._delete(tenant, path, op.key)
            elif isinstance(op, SearchOp):
                results[index] = await self._search(tenant, path, op)
            else:
                results[index] = await self._list(tenant, path, op)
            index += 1
        return results

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """The sync API, for sync LangGraph nodes: they run in worker threads while the loop
        that owns the MongoDB client runs, so the work is handed to that loop."""
        loop = self._loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or loop.is_closed() or running is loop or not loop.is_running():
            # The exception LangGraph's own async stores raise for a sync call on their loop.
            raise asyncio.InvalidStateError(
                "MemoryStore is async: use aget/aput/asearch/adelete/alist_namespaces (or "
                "ainvoke the graph); sync calls work only from a worker thread while the "
                "event loop that created the store runs"
            )
        return asyncio.run_coroutine_threadsafe(self.abatch(ops), loop).result()

    async def _put(self, scopes: Sequence[_Scope]) -> None:
        by_tenant: dict[Tenant, list[tuple[NewMemory, dict[str, Any]]]] = {}
        for tenant, _, prepared in scopes:
            assert prepared is not None
            by_tenant.setdefault(tenant, []).append(prepared)
        for tenant, items in by_tenant.items():
            results = await self.long_term.store_many(tenant, [memory for memory, _ in items])
            for result, (_, source) in zip(results, items, strict=True):
                if result.action == "reinforced":
                    # Same text as the current memory: consolidation kept that document, but
                    # the item's value may differ (other fields), and a put must win.
                    await self.long_term.set_source(
                        tenant, result.id, {**source, "updated_at": utcnow()}
                    )
        logger.debug("store_items_put", agent_id=self.agent_id, count=len(scopes))

    async def _get(self, tenant: Tenant, path: tuple[str, ...], key: str) -> Item | None:
        memory = await self.long_term.current(tenant, key=self._key(path, key))
        return None if memory is None else self._item(memory)

    async def _delete(self, tenant: Tenant, path: tuple[str, ...], key: str) -> None:
        versions = await self.long_term.history(tenant, key=self._key(path, key))
        for memory in versions:
            try:
                await self.long_term.forget(tenant, memory.id)
            except NotFoundError:
                continue  # deleted concurrently: the outcome is the same

    def _items_under(
        self, tenant: Tenant, path: tuple[str, ...], **window: int
    ) -> AsyncIterator[Memory]:
        """The current items under ``path``; other memories of the user may carry any tags,
        so the marker this store writes is required too."""
        return self.long_term.browse(tenant, tag=self._tag(path), source=_OURS, **window)

    async def _search(self, tenant: Tenant, path: tuple[str, ...], op: SearchOp) -> list[Item]:
        want = op.offset + op.limit
        if op.limit == 0:
            return []
        if op.query:
            overfetch = self.long_term.config.overfetch if op.filter else 1
            hits = await self.long_term.retrieve(
                tenant, op.query, k=min(_MAX_QUERY_WINDOW, want * overfetch), tags=[self._tag(path)]
            )
            items = [
                self._item(found.memory, found.score, hit=True)
                for found in hits
                if _ours(found.memory.source)
            ]
            matched = [item for item in _unique(items) if _matches_filter(item.value, op.filter)]
            return matched[op.offset : want]
        window = {} if op.filter else {"skip": op.offset, "limit": op.limit}
        found: list[Item] = []
        seen: set[tuple[tuple[str, ...], str]] = set()
        skipped = 0
        async for memory in self._items_under(tenant, path, **window):
            item = self._item(memory, hit=True)
            if (item.namespace, item.key) in seen or not _matches_filter(item.value, op.filter):
                continue
            seen.add((item.namespace, item.key))
            if op.filter and skipped < op.offset:
                skipped += 1
                continue
            found.append(item)
            if len(found) >= op.limit:
                break
        return found

    def _list_scope(self, op: ListNamespacesOp) -> tuple[Tenant, tuple[str, ...]]:
        _check_window(op.limit, op.offset)
        if op.max_depth is not None:
            check_int(op.max_depth, "max_depth", minimum=1)
        prefixes = [c for c in op.match_conditions or () if c.match_type == "prefix"]
        for condition in op.match_conditions or ():
            if condition.match_type not in ("prefix", "suffix"):
                raise InvalidInputError(f"unknown match type {condition.match_type!r}")
            for label in condition.path:
                if label != "*":
                    _check_label(label)
        scoped = [c for c in prefixes if len(c.path) >= 2 and "*" not in c.path[:2]]
        if not scoped:
            raise InvalidInputError(
                f"list_namespaces needs prefix=({self.root!r}, user_id, ...): namespaces are "
                "listed for one user at a time"
            )
        tenant, _ = self._scope(tuple(scoped[0].path[:2]), "prefix")
        fixed: list[str] = []
        for label in scoped[0].path[2:]:
            if label == "*":
                break
            fixed.append(label)
        return tenant, tuple(fixed)

    async def _list(
        self, tenant: Tenant, path: tuple[str, ...], op: ListNamespacesOp
    ) -> list[tuple[str, ...]]:
        namespaces = {
            (self.root, tenant.user_id, *((memory.source or {}).get("namespace") or ()))
            async for memory in self._items_under(tenant, path)
        }
        matched = [
            ns
            for ns in namespaces
            if all(_namespace_matches(c, ns) for c in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            matched = list({ns[: op.max_depth] for ns in matched})
        return sorted(matched)[op.offset : op.offset + op.limit]

    # --- beyond BaseStore ---------------------------------------------------------------------

    async def alist_namespaces(
        self,
        *,
        prefix: tuple[str, ...] | None = None,
        suffix: tuple[str, ...] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """As :meth:`BaseStore.alist_namespaces`; a prefix or suffix that is not a tuple of
        labels is refused here (upstream would fail on it with a TypeError or KeyError)."""
        for name, path in (("prefix", prefix), ("suffix", suffix)):
            if path is not None and not isinstance(path, tuple | list):
                raise InvalidInputError(f"{name} must be a tuple of labels, got {_short(path)}")
        return await super().alist_namespaces(
            prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
        )

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        """Every version ever put under ``key``, the current one first (consolidation keeps
        superseded versions queryable)."""
        tenant, path = self._scope(namespace, "namespace")
        versions = await self.long_term.history(tenant, key=self._key(path, key))
        return [self._item(memory) for memory in versions]


def _ours(source: Mapping[str, Any] | None) -> bool:
    return bool(source) and source.get("store") == _OURS["store"]


def _unique(items: list[Item]) -> list[Item]:
    # Two active versions of one key exist only after a crash between insert and supersede
    # (servers without transactions); the first (newest or best ranked) stands for the item.
    seen: set[tuple[tuple[str, ...], str]] = set()
    kept = []
    for item in items:
        if (item.namespace, item.key) not in seen:
            seen.add((item.namespace, item.key))
            kept.append(item)
    return kept


# --- filters ------------------------------------------------------------------------------------


def _check_window(limit: Any, offset: Any) -> None:
    for name, number in (("limit", limit), ("offset", offset)):
        check_int(number, name, minimum=0, maximum=_MAX_LIST)


def _check_filter(value: Any, where: str = "filter", depth: int = 0) -> None:
    """Filter keys name value fields, never operators or paths; the only operators are
    LangGraph's comparisons, evaluated here in Python (a filter never reaches MongoDB)."""
    if value is None and depth == 0:
        return
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{where} must be a mapping, got {type(value).__name__}")
    if depth > 8:
        raise InvalidInputError(f"{where} is nested too deeply")
    for key, expected in value.items():
        if not isinstance(key, str) or not key or key.startswith("$") or "." in key:
            raise InvalidInputError(
                f"{where} has the key {_short(key)}; keys are value field names "
                "(no '$' at the start, no '.')"
            )
        _check_expected(expected, f"{where}.{key}", depth + 1)


def _check_expected(expected: Any, where: str, depth: int) -> None:
    if isinstance(expected, Mapping) and any(str(k).startswith("$") for k in expected):
        for operator, operand in expected.items():
            if operator not in _OPERATORS:
                raise InvalidInputError(
                    f"{where} uses {_short(operator)}; supported: {', '.join(sorted(_OPERATORS))}"
                )
            if operator in _ORDERING and not (is_number(operand) or isinstance(operand, str)):
                raise InvalidInputError(f"{where} {operator} needs a number or a string")
            if operator in ("$eq", "$ne"):
                _check_expected(operand, where, depth + 1)
    elif isinstance(expected, Mapping):
        _check_filter(expected, where, depth)
    elif isinstance(expected, list | tuple):
        for item in expected:
            if isinstance(item, Mapping):
                check_mapping(item, where)
            else:
                _check_expected(item, where, depth + 1)
    elif expected is not None and not isinstance(expected, bool | int | float | str):
        raise InvalidInputError(f"{where} has a value of type {type(expected).__name__}")
    elif isinstance(expected, float) and not math.isfinite(expected):
        raise InvalidInputError(f"{where} is NaN or infinite")


def _equal(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(str(k).startswith("$") for k in expected):
            return all(_compare(actual, op, operand) for op, operand in expected.items())
        return isinstance(actual, Mapping) and all(
            _equal(actual.get(k), v) for k, v in expected.items()
        )
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(expected)
            and all(_equal(a, e) for a, e in zip(actual, expected, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual is expected  # True is not 1 here
    return actual == expected


def _compare(actual: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return _equal(actual, operand)
    if operator == "$ne":
        return not _equal(actual, operand)
    comparable = (is_number(actual) and is_number(operand)) or (
        isinstance(actual, str) and isinstance(operand, str)
    )
    if not comparable:
        return False
    return {
        "$gt": actual > operand,
        "$gte": actual >= operand,
        "$lt": actual < operand,
        "$lte": actual <= operand,
    }[operator]


def _matches_filter(value: Mapping[str, Any], filter_: Mapping[str, Any] | None) -> bool:
    return not filter_ or all(_equal(value.get(k), v) for k, v in filter_.items())


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    pattern = tuple(condition.path)
    if len(namespace) < len(pattern):
        return False
    if not pattern:
        return True
    if condition.match_type == "prefix":
        window = namespace[: len(pattern)]
    else:
        window = namespace[-len(pattern) :]
    return all(p == "*" or p == n for p, n in zip(pattern, window, strict=True))

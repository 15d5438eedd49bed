"""Counts of what is stored: per memory type and per tenant, for operators.

One ``aggregate`` per collection groups its documents by agent, user and one field (a status,
a type, a source): the database does the counting, whatever the number of users, and only
the groups cross the network. Every read is scoped to one agent when one is given.

Knowledge documents and LangGraph threads are counted as distinct sources and threads (their
collections hold chunks and checkpoints). Documents without tenant keys (LangGraph state from
runs without ``agent_id`` and ``user_id``) are counted under agent and user ``None``.

A *tenant* row is one (agent, user) pair; it is not a person: a user of two agents has two
rows, knowledge an agent shares with all its users has a row with user ``"*"``, and the
unattributed LangGraph state one with ``None``. ``Stats.users`` counts the people: the
distinct real user ids.

>>> stats = await collect_stats(connection, agent_id="support-agent")   # doctest: +SKIP
>>> stats.totals["memories"].count, stats.tenants[0].counts["memories"]   # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from dataclasses import field as dataclass_field  # Kind has a field named "field"
from types import MappingProxyType
from typing import Any

from agent_memory._log import get_logger
from agent_memory.checks import check_id
from agent_memory.memory.knowledge.base import SHARED_USER
from agent_memory.memory.long_term.fields import NOT_FIELD
from agent_memory.mongo import _driver
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.batches import slices
from agent_memory.mongo.connection import Connection

__all__ = ["KINDS", "Kind", "Stats", "TenantCounts", "Total", "collect_stats"]

logger = get_logger(__name__)

#: Documents one aggregate counts at most. The embedded engine refuses a ``$group`` fed more
#: than 50,000 documents ("exceeds the configured materialization budget"); MongoDB keeps a
#: ``$group``'s groups within 100 MB unless ``allowDiskUse`` (given, for many tenants).
CHUNK = 20_000
#: A kind of at most this many documents (in the scope) is counted by ``$group``: the
#: embedded engine decodes each document for it (about 50 us a document).
SMALL = 1_000
#: Larger kinds are counted per key (tenant and grouping value) through the index, unless
#: their keys hold fewer documents than this each: then one pass over them costs less than
#: the round trips of so many keys.
PER_KEY = 100


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of stored thing: ``label`` (a table column), the ``collection`` it lives in,
    the ``field`` its documents are grouped by, and whether a tenant's count is the number of
    documents or of distinct ``field`` values (``distinct``)."""

    label: str
    collection: str
    field: str | None = None
    distinct: bool = False
    per_user: bool = True
    #: The condition the collection's documents of this kind meet (every one when empty).
    #: (A factory: Python 3.11's dataclasses refuse a mappingproxy as a default.)
    only: Mapping[str, Any] = dataclass_field(default_factory=lambda: MappingProxyType({}))


KINDS = (
    Kind("sessions", "sessions", "status"),
    Kind("messages", "messages"),
    # A memory's field documents (its vectors per index field) are part of it, not memories.
    Kind("memories", "memories", "memory_type", only=MappingProxyType({"status": NOT_FIELD})),
    Kind("profiles", "profiles"),
    Kind("tasks", "tasks", "status"),
    Kind("task checkpoints", "checkpoints"),
    Kind("actions", "action_logs", "outcome"),
    Kind("knowledge docs", "knowledge_chunks", "source", distinct=True),
    Kind("formation jobs", "formation_jobs", "status"),
    Kind("threads", "lg_checkpoints", "thread_id", distinct=True),
    Kind("action summaries", "action_aggregates", per_user=False),
    Kind("decay runs", "decay_runs", per_user=False),
)


@dataclass(slots=True)
class Total:
    """One kind over the scope: ``count`` (documents, or distinct values when the kind is
    distinct), the ``documents`` behind it, and ``by`` its grouping field (not for distinct
    kinds)."""

    label: str
    collection: str
    count: int = 0
    documents: int = 0
    by: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class TenantCounts:
    agent_id: str | None
    user_id: str | None
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(slots=True)
class Stats:
    """``totals`` by kind label; ``tenants`` (agent, user) rows sorted by their total,
    largest first; ``agents`` the distinct agents seen; ``users`` the distinct real user
    ids (not the shared-knowledge ``"*"``, not ``None``)."""

    agent_id: str | None
    totals: dict[str, Total]
    tenants: list[TenantCounts]
    agents: list[str]
    seconds: float

    @property
    def users(self) -> int:
        return len({t.user_id for t in self.tenants if isinstance(t.user_id, str)} - {SHARED_USER})

    def as_dict(self, *, top: int | None = None) -> dict[str, Any]:
        tenants = self.tenants if top is None else self.tenants[:top]
        return {
            "agent_id": self.agent_id,
            "agents": self.agents,
            "totals": {label: asdict(total) for label, total in self.totals.items()},
            "users": self.users,
            "tenant_count": len(self.tenants),
            "tenants": [
                {"agent_id": t.agent_id, "user_id": t.user_id, "counts": t.counts} for t in tenants
            ],
            "seconds": self.seconds,
        }


def _key(value: Any) -> str:
    return "-" if value is None else str(value)


async def _grouped(collection: Any, match: dict[str, Any], group: dict[str, Any]) -> list[dict]:
    """The documents of ``collection`` matching ``match`` counted per ``group``, at most
    :data:`CHUNK` documents an aggregate, in ``_id`` order (a collection's ids are of one
    type); a group may come back once per chunk, and the caller adds them up."""
    rows: list[dict] = []
    last: Any = None
    while True:
        where = match if last is None else {**match, "_id": {"$gt": last}}
        pipeline = [
            {"$match": where},
            {"$sort": {"_id": 1}},
            {"$limit": CHUNK},
            # Only what is grouped by: the embedded engine decodes less of each document.
            {"$project": dict.fromkeys(["_id", *(v[1:] for v in group.values())], 1)},
            {"$group": {"_id": group, "n": {"$sum": 1}, "last": {"$max": "$_id"}}},
        ]
        part = await _driver.aggregate(collection, pipeline, allowDiskUse=True)
        rows.extend(part)
        if sum(int(row["n"]) for row in part) < CHUNK:
            return rows
        last = max(row["last"] for row in part)


async def _values(
    collection: Any,
    match: dict[str, Any],
    name: str,
    limit: int,
    *,
    counted: bool = True,
    ordered: bool = False,
) -> dict[Any, int] | None:
    """The distinct strings at ``name`` among the documents matching ``match``, sorted,
    each with how many documents hold it (0 each unless ``counted``), after ``None`` for
    the documents holding no string there (null, missing or another type) if there are
    any, with their number (0 unless ``counted``); ``None`` once more than ``limit``
    strings are found.

    ``ordered``: an index holds the matched documents in the order of ``name`` (it follows
    the fields ``match`` fixes). Then each string is the first after the one before: ``n +
    1`` finds for ``n`` strings. Otherwise each is found by a ``find`` of any document in a
    range not yet searched, which splits the range in two: ``2 n + 1`` finds, none sorted
    (a sort no index keeps would order every match first). Each find is ``limit 1``.

    The documents of no string are what the strings leave of the total, counted through
    the index: a find of null reads every document of the tenant on the embedded engine
    (264 ms for one tenant's 100,000 actions), since its translation of null looks into
    each document."""
    found: list[str] = []
    # Every string is at least "": a range of strings, which the index answers.
    ranges: list[tuple[str | None, str | None]] = [(None, None)]
    while ranges:
        low, high = ranges.pop()
        bound: dict[str, Any] = {"$gte": ""} if low is None else {"$gt": low}
        if high is not None:
            bound["$lt"] = high
        doc = await collection.find_one(
            {**match, name: bound}, {name: 1}, sort=[(name, 1)] if ordered else None
        )
        value = None if doc is None else doc.get(name)
        if not isinstance(value, str):
            continue
        found.append(value)
        if len(found) > limit:
            return None
        ranges += [(value, high)] if ordered else [(low, value), (value, high)]
    found.sort()
    total = await _driver.count(collection, match)
    if counted:
        counts = {
            value: await _driver.count(collection, {**match, name: {"$eq": value}})
            for value in found
        }
        listed = sum(counts.values())
    else:
        counts = dict.fromkeys(found, 0)
        listed = 0
        for part in slices(found):
            listed += await _driver.count(collection, {**match, name: {"$in": part}})
    rest = total - listed
    return {None: rest if counted else 0, **counts} if rest > 0 else counts


def _is(value: str | None) -> dict[str, Any]:
    """The condition of a key :func:`_values` found: the string, or for ``None`` no string."""
    return {"$not": {"$type": "string"}} if value is None else {"$eq": value}


async def _walk(
    collection: Any,
    match: dict[str, Any],
    fields: list[str],
    limit: int,
    ordered: Callable[[str], bool],
) -> dict[tuple[Any, ...], int] | None:
    """The distinct values of ``fields`` together among the documents matching ``match``
    (:func:`_values` of each field within the values of those before it, ``ordered`` as
    that says of the field), each with how many documents hold it; ``None`` once more
    than ``limit`` keys are found."""
    keys: dict[tuple[Any, ...], int] = {(): 0}
    for depth, name in enumerate(fields):
        last = depth == len(fields) - 1
        longer: dict[tuple[Any, ...], int] = {}
        for key in keys:
            fixed = {known: _is(value) for known, value in zip(fields[:depth], key, strict=True)}
            values = await _values(
                collection,
                {**match, **fixed},
                name,
                limit - len(longer),
                counted=last,
                ordered=ordered(name),
            )
            if values is None:
                return None
            longer.update({(*key, value): n for value, n in values.items()})
        keys = longer
    return keys


async def _counted(
    collection: Any,
    match: dict[str, Any],
    group: dict[str, str],
    *,
    distinct: bool,
    by: bool,
) -> tuple[list[dict], int]:
    """The documents matching ``match`` counted per ``group`` key, as ``$group`` rows (``n``
    is 0 for the keys of a ``distinct`` kind), and how many documents there are.

    A collection of at most :data:`SMALL` documents is counted by :func:`_grouped`. A larger
    one tenant by tenant through the tenant index (:func:`_walk`: finds and counts that the
    index answers), and for each grouping value when ``by`` or ``distinct``, a cost that
    follows the keys, not the documents: unless its tenants are many for its size (fewer
    than :data:`PER_KEY` documents each), when one pass over them costs less."""
    size = await collection.estimated_document_count()
    if size <= SMALL:
        rows = await _grouped(collection, match, group)
        return rows, sum(int(row["n"]) for row in rows)
    tenant_fields = [path[1:] for name, path in group.items() if name in ("a", "u")]
    value_field = group["k"][1:] if "k" in group and (by or distinct) else None
    fixed = {
        name: match[name]["$eq"]
        for name in tenant_fields
        if isinstance(match.get(name), dict) and list(match[name]) == ["$eq"]
    }
    walked = [name for name in tenant_fields if name not in fixed]
    indexes = [  # a partial or sparse index does not hold every document
        [key for key, _ in spec["key"]]
        for spec in (await collection.index_information()).values()
        if "partialFilterExpression" not in spec and not spec.get("sparse")
    ]
    # The tenant's fields are fixed first, then the grouping value, in this order.
    order = [*fixed, *walked, *([value_field] if value_field else [])]

    def ordered(name: str) -> bool:
        """Whether an index keeps the documents in ``name``'s order once the fields
        before it in ``order`` are fixed."""
        before = order[: order.index(name) + 1]
        return any(keys[: len(before)] == before for keys in indexes)

    tenants = (
        await _walk(collection, match, walked, size // PER_KEY, ordered)
        if walked
        else {(): await _driver.count(collection, match)}
    )
    if tenants is None:
        rows = await _grouped(collection, match, group)
        return rows, sum(int(row["n"]) for row in rows)
    rows = []
    for key, size_of_tenant in tenants.items():
        values = {**fixed, **dict(zip(walked, key, strict=True))}
        ids = {name: values[path[1:]] for name, path in group.items() if name in ("a", "u")}
        if value_field is None:
            rows.append({"_id": ids, "n": size_of_tenant})
            continue
        own = {**match, **{name: _is(value) for name, value in values.items()}}
        found = await _values(
            collection, own, value_field, size, counted=not distinct, ordered=ordered(value_field)
        )
        rows += [{"_id": {**ids, "k": value}, "n": n} for value, n in (found or {}).items()]
    return rows, sum(tenants.values())


async def collect_stats(
    connection: Connection, *, agent_id: str | None = None, by: bool = True
) -> Stats:
    """Count every kind in :data:`KINDS` for one agent or all. ``by=False`` leaves each
    total's ``by`` empty (the counts per status, type or outcome), which a large collection
    counts per tenant and value (the console's page of users shows none)."""
    agent = None if agent_id is None else check_id(agent_id, "agent_id")
    where: dict[str, Any] = {} if agent is None else {"agent_id": {"$eq": agent}}
    started = time.perf_counter()
    totals: dict[str, Total] = {}
    tenants: dict[tuple[Any, Any], TenantCounts] = {}
    agents: set[str] = set()
    with translate_errors("counting stored data"):
        for kind in KINDS:
            total = totals[kind.label] = Total(
                kind.label, connection.collection_name(kind.collection)
            )
            group: dict[str, Any] = {"a": "$agent_id"}
            if kind.per_user:
                group["u"] = "$user_id"
            if kind.field:
                group["k"] = f"${kind.field}"
            match = {**where, **kind.only}
            rows, total.documents = await _counted(
                connection.collection(kind.collection),
                match,
                group,
                distinct=kind.distinct,
                by=by,
            )
            per_tenant: dict[tuple[Any, Any], int] = defaultdict(int)
            distinct: set[tuple[Any, Any, Any]] = set()
            for row in rows:
                key, n = row["_id"], int(row["n"])
                if isinstance(key.get("a"), str):
                    agents.add(key["a"])
                if kind.distinct:
                    distinct.add((key.get("a"), key.get("u"), key.get("k")))
                elif kind.field and by:
                    label = _key(key.get("k"))
                    total.by[label] = total.by.get(label, 0) + n
                if kind.per_user:
                    per_tenant[(key.get("a"), key.get("u"))] += 0 if kind.distinct else n
            if kind.distinct:
                for a, u, _ in distinct:
                    per_tenant[(a, u)] += 1
                total.count = len(distinct)
            else:
                total.count = total.documents
            for tenant, n in per_tenant.items():
                row_counts = tenants.setdefault(tenant, TenantCounts(*tenant)).counts
                row_counts[kind.label] = n
    ordered = sorted(tenants.values(), key=lambda t: (-t.total, _key(t.agent_id), _key(t.user_id)))
    stats = Stats(
        agent_id=agent,
        totals=totals,
        tenants=ordered,
        agents=sorted(agents),
        seconds=round(time.perf_counter() - started, 3),
    )
    logger.info(
        "stats_collected",
        agent_id=agent,
        tenants=len(ordered),
        documents=sum(t.documents for t in totals.values()),
        seconds=stats.seconds,
    )
    return stats

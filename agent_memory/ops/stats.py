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
from collections.abc import Mapping
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
from agent_memory.mongo.connection import Connection

__all__ = ["KINDS", "Kind", "Stats", "TenantCounts", "Total", "collect_stats"]

logger = get_logger(__name__)

#: Documents one aggregate counts at most. The embedded engine refuses a ``$group`` fed more
#: than 50,000 documents ("exceeds the configured materialization budget"); MongoDB keeps a
#: ``$group``'s groups within 100 MB unless ``allowDiskUse`` (given, for many tenants).
CHUNK = 20_000


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


async def collect_stats(connection: Connection, *, agent_id: str | None = None) -> Stats:
    """Count every kind in :data:`KINDS` for one agent or all; one aggregate per kind."""
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
            rows = await _grouped(connection.collection(kind.collection), match, group)
            per_tenant: dict[tuple[Any, Any], int] = defaultdict(int)
            distinct: set[tuple[Any, Any, Any]] = set()
            for row in rows:
                key, n = row["_id"], int(row["n"])
                total.documents += n
                if isinstance(key.get("a"), str):
                    agents.add(key["a"])
                if kind.distinct:
                    distinct.add((key.get("a"), key.get("u"), key.get("k")))
                elif kind.field:
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

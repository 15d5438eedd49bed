"""Erasing a user from what the LangGraph store keeps app-wide.

Every item :class:`~agent_memory.langgraph.MemoryStore` keeps is a memory of one tenant: the
user its :class:`~agent_memory.langgraph.NamespaceMap` reads from the namespace, else the
agent's app-wide user ``"*"``. The previous version stored a user's namespace written for
another layout (``("u1", "memories")`` under its default map, ``("memories", ...)`` first)
app-wide, where erasing the user by tenant leaves it. So an erasure also takes the agent's
app-wide store items whose namespace is *shaped like a user's*: the user id next to a root
label (``("u1", "memories", ...)`` or ``(..., "memories", "u1", ...)``), every version of
each. A namespace that merely holds a label equal to the user id (``("docs", "faq")`` for
the user ``"faq"``) is shared data and stays.

The roots are :data:`DEFAULT_ROOTS`, the default map's (``agent-memory forget``,
:func:`agent_memory.ops.forget_user`, which know no map), and the store's map's too in
:meth:`MemoryStore.forget_user`: an app whose map has other roots registers it with
``MemorySystem.register_forgetter``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_memory.checks import check_id
from agent_memory.langgraph.namespaces import APP_WIDE
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.batches import slices
from agent_memory.tenancy import Tenant, check_tenant

__all__ = [
    "DEFAULT_ROOTS",
    "agents_naming",
    "count_named_items",
    "forget_named_items",
    "names_user",
]

#: ``source.store`` of every memory the store writes.
_STORE = "langgraph"
#: The root labels of the default map (``NamespaceMap().user_roots``).
DEFAULT_ROOTS: tuple[str, ...] = ("memories",)


def names_user(namespace: Sequence[Any], user_id: str, roots: Sequence[str]) -> bool:
    """Whether ``namespace`` is shaped like ``user_id``'s: the user id next to a root label."""
    labels = list(namespace)
    for at, label in enumerate(labels):
        if label != user_id:
            continue
        before = labels[at - 1] if at > 0 else None
        after = labels[at + 1] if at + 1 < len(labels) else None
        if before in roots or after in roots:
            return True
    return False


def _candidates(agent_ids: Sequence[str], user_id: str, roots: Sequence[str]) -> dict[str, Any]:
    # Namespaces holding the user id and a root label (an array field equals a value when one
    # of its elements does); whether they are next to each other is checked in Python. Of at
    # most BOUND agents (mongo.batches).
    return {
        "agent_id": {"$in": [check_id(agent, "agent_id") for agent in agent_ids]},
        "user_id": APP_WIDE,
        "source.store": _STORE,
        "$and": [
            {"source.namespace": {"$eq": check_id(user_id, "user_id")}},
            {"source.namespace": {"$in": [check_id(root, "root") for root in roots]}},
        ],
    }


async def _named(
    long_term: LongTermMemory,
    agent_ids: Sequence[str],
    user_id: str,
    roots: Sequence[str],
    *,
    first: bool = False,
) -> list[dict[str, Any]]:
    """The app-wide store memories (``agent_id`` and ``key``) whose namespace is shaped like
    ``user_id``'s; the first one only when ``first``."""
    found = []
    if not agent_ids or not roots:
        return found
    projection = {"agent_id": 1, "key": 1, "source.namespace": 1}
    for part in slices(agent_ids):
        query = _candidates(part, user_id, roots)
        async for doc in long_term.collection.find(query, projection):
            if names_user((doc.get("source") or {}).get("namespace") or (), user_id, roots):
                found.append(doc)
                if first:
                    return found
    return found


async def count_named_items(
    long_term: LongTermMemory,
    agent_ids: Sequence[str],
    user_id: str,
    roots: Sequence[str] = DEFAULT_ROOTS,
) -> int:
    """How many memories (every version of every item) :func:`forget_named_items` would
    erase for ``user_id`` under these agents."""
    with translate_errors("counting a user's app-wide items"):
        return len(await _named(long_term, agent_ids, user_id, roots))


async def agents_naming(
    long_term: LongTermMemory,
    user_id: str,
    agent_ids: Sequence[str],
    roots: Sequence[str] = DEFAULT_ROOTS,
) -> list[str]:
    """Those of ``agent_ids`` whose app-wide items are shaped like ``user_id``'s (one probe
    per agent, on the tenant index: ``agent_id`` and the app-wide user)."""
    found = []
    with translate_errors("finding a user's app-wide items"):
        for agent in agent_ids:
            if await _named(long_term, [agent], user_id, roots, first=True):
                found.append(agent)
    return found


async def forget_named_items(
    long_term: LongTermMemory, tenant: Tenant, roots: Sequence[str] = DEFAULT_ROOTS
) -> int:
    """Erase the agent's app-wide store items whose namespace is shaped like the user's,
    every version of each; how many memories were deleted."""
    tenant = check_tenant(tenant)
    shared = Tenant(tenant.agent_id, APP_WIDE)
    with translate_errors("finding a user's app-wide items"):
        named = await _named(long_term, [tenant.agent_id], tenant.user_id, roots)
    keys = sorted({doc["key"] for doc in named if isinstance(doc.get("key"), str)})
    return await long_term.forget_keys(shared, keys)

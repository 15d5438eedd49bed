"""Erasing a user from what the LangGraph store keeps app-wide.

Every item :class:`~agent_memory.langgraph.MemoryStore` keeps is a memory of one tenant: the
user its :class:`~agent_memory.langgraph.NamespaceMap` reads from the namespace, else the
agent's app-wide user ``"*"``. An item stored for a user under a namespace the map does not
read the user from (``("u1", "memories")`` under the previous version's default map, or
``("docs", "u1")`` by design) is app-wide, and erasing the user by tenant would leave it. So
an erasure also takes the agent's app-wide store items whose namespace has a label equal to
the user id, every version of each, whatever map wrote them: a namespace that names a user
holds that user's data. ``agent-memory forget`` and :func:`agent_memory.ops.forget_user` do
this; an app that erases through ``MemorySystem.forget_user`` registers
``MemoryStore.forget_user``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_memory.checks import check_id
from agent_memory.langgraph.namespaces import APP_WIDE
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.mongo._errors import translate_errors
from agent_memory.tenancy import Tenant, check_tenant

__all__ = ["agents_naming", "count_named_items", "forget_named_items"]

#: ``source.store`` of every memory the store writes.
_STORE = "langgraph"


def _naming(agent_ids: Sequence[str], user_id: str) -> dict[str, Any]:
    # An array field equals a value when one of its elements does: any label of the namespace.
    return {
        "agent_id": {"$in": [check_id(agent, "agent_id") for agent in agent_ids]},
        "user_id": APP_WIDE,
        "source.store": _STORE,
        "source.namespace": {"$eq": check_id(user_id, "user_id")},
    }


async def count_named_items(
    long_term: LongTermMemory, agent_ids: Sequence[str], user_id: str
) -> int:
    """How many memories (every version of every item) :func:`forget_named_items` would
    erase for ``user_id`` under these agents."""
    if not agent_ids:
        return 0
    with translate_errors("counting a user's app-wide items"):
        return await long_term.collection.count_documents(_naming(agent_ids, user_id))


async def agents_naming(
    long_term: LongTermMemory, user_id: str, agent_ids: Sequence[str]
) -> list[str]:
    """Those of ``agent_ids`` whose app-wide items name ``user_id`` (one probe per agent,
    on the tenant index: ``agent_id`` and the app-wide user)."""
    found = []
    with translate_errors("finding a user's app-wide items"):
        for agent in agent_ids:
            if await long_term.collection.find_one(_naming([agent], user_id), {"_id": 1}):
                found.append(agent)
    return found


async def forget_named_items(long_term: LongTermMemory, tenant: Tenant) -> int:
    """Erase the agent's app-wide store items whose namespace names the user, every version
    of each; how many memories were deleted."""
    tenant = check_tenant(tenant)
    shared = Tenant(tenant.agent_id, APP_WIDE)
    with translate_errors("finding a user's app-wide items"):
        keys = await long_term.collection.distinct(
            "key", _naming([tenant.agent_id], tenant.user_id)
        )
    return await long_term.forget_keys(shared, [key for key in keys if isinstance(key, str)])

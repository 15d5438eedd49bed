"""Erase a user everywhere: the memories, queued formation jobs and LangGraph threads.

:meth:`MemorySystem.forget_user <agent_memory.memory.system.MemorySystem.forget_user>` erases
the four memories and the knowledge base, plus whatever was registered with it (the
``RAGAgent`` registers its formation queue). Three holders of user data live beside the
memories and are easy to miss: queued memory-formation jobs, the threads of the LangGraph
checkpointer (:class:`~agent_memory.langgraph.checkpointer.MongoCheckpointer`, when the app
runs its graphs with ``agent_id`` and ``user_id`` in the configurable) and the LangGraph
store's app-wide items whose namespace is shaped like the user's (:mod:`agent_memory.langgraph.erasure`).
:func:`forget_user` erases those too, so an erasure request is one call.

Order matters while the app runs. Formation jobs are erased first: a worker that takes over a
job with a recorded plan (its extracted facts and profile) would otherwise write the memories
back right after they were erased. The jobs are erased again at the end, for a turn that queued
one meanwhile. A turn of the user that is still running can still write its messages and action
log after the erasure: stop the user's sessions (or the app) first, and check with
:func:`agents_of` afterwards (``agent-memory forget`` does, and erases what came back).

Without an agent, :func:`agents_of` finds every agent that holds something of the user: the
agents come from ``distinct("agent_id")`` and each is checked with ``{agent_id, user_id}``,
both answered by the collections' tenant indexes (the user alone has no index of its own).

>>> erased = await forget_user(memories, Tenant("support-agent", "u42"))   # doctest: +SKIP
>>> erased["formation_jobs"], erased["lg_checkpoints"]                     # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_memory._log import get_logger
from agent_memory.checks import check_id
from agent_memory.errors import InvalidInputError
from agent_memory.formation.queue import FormationQueue
from agent_memory.memory.knowledge.base import SHARED_USER
from agent_memory.memory.long_term.fields import NOT_FIELD
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.batches import count_in
from agent_memory.mongo.catalog import user_collections
from agent_memory.tenancy import Tenant

__all__ = [
    "COLLECTION_NOUNS",
    "USER_COLLECTIONS",
    "Held",
    "agents_of",
    "forget_user",
    "held",
    "holds",
]

logger = get_logger(__name__)

#: The order an operator reads the collections in: what the memories hold first, then queues
#: and agent state. A collection the catalog adds and this does not name comes last, by name.
_LISTED_ORDER = (
    "memories",
    "profiles",
    "sessions",
    "messages",
    "tasks",
    "checkpoints",
    "action_logs",
    "knowledge_chunks",
    "formation_jobs",
    "lg_checkpoints",
    "lg_checkpoint_writes",
)

#: Collections holding documents with the tenant keys ``agent_id`` and ``user_id``: those
#: the index catalog (``atlas_indexes/``) indexes by tenant, so a new one is included here.
USER_COLLECTIONS = tuple(
    sorted(
        user_collections(),
        key=lambda name: (
            _LISTED_ORDER.index(name) if name in _LISTED_ORDER else len(_LISTED_ORDER),
            name,
        ),
    )
)


#: What a question before erasing calls the documents of each collection (singular, plural).
COLLECTION_NOUNS = {
    "memories": ("memory", "memories"),
    "profiles": ("profile", "profiles"),
    "sessions": ("session", "sessions"),
    "messages": ("message", "messages"),
    "tasks": ("task", "tasks"),
    "checkpoints": ("task checkpoint", "task checkpoints"),
    "action_logs": ("action log", "action logs"),
    "knowledge_chunks": ("knowledge chunk", "knowledge chunks"),
    "formation_jobs": ("formation job", "formation jobs"),
    "lg_checkpoints": ("LangGraph checkpoint", "LangGraph checkpoints"),
    "lg_checkpoint_writes": ("LangGraph checkpoint write", "LangGraph checkpoint writes"),
}


def check_user(user_id: str) -> str:
    """A user id that may be erased: ``"*"`` names the knowledge shared by every user."""
    user_id = check_id(user_id, "user_id")
    if user_id == SHARED_USER:
        raise InvalidInputError(
            f"user_id {SHARED_USER!r} is reserved for knowledge shared by all users of an agent; "
            "it is not a user and cannot be forgotten"
        )
    return user_id


async def agents_of(memories: MemorySystem, user_id: str) -> list[str]:
    """Every agent that holds something of ``user_id``, sorted.

    Index-backed: every collection's indexes start with ``agent_id, user_id``, so the agents
    are listed from the index and each agent is probed for the user with one indexed
    ``find_one``; a filter on the user alone would scan every collection."""
    user_id = check_user(user_id)
    found: set[str] = set()
    with translate_errors("finding the agents of a user"):
        for name in USER_COLLECTIONS:
            collection = memories.connection.collection(name)
            agents = await collection.distinct("agent_id")
            for agent in sorted(a for a in agents if isinstance(a, str) and a not in found):
                probe = {"agent_id": {"$eq": agent}, "user_id": {"$eq": user_id}}
                if await collection.find_one(probe, {"_id": 1}) is not None:
                    found.add(agent)
        # App-wide LangGraph store items shaped like the user's namespace are the user's too.
        from agent_memory.langgraph.erasure import agents_naming

        agents = await memories.connection.collection("memories").distinct("agent_id")
        others = sorted(a for a in agents if isinstance(a, str) and a not in found)
        found.update(await agents_naming(memories.long_term, user_id, others))
    return sorted(found)


async def holds(memories: MemorySystem, agent_id: str, user_id: str | None = None) -> bool:
    """Whether anything is stored for ``agent_id`` (of ``user_id`` only, when given): what
    :func:`held` would count, found with one indexed ``find_one`` per collection until one
    answers rather than counted."""
    probe: dict[str, Any] = {"agent_id": {"$eq": check_id(agent_id, "agent_id")}}
    if user_id is not None:
        probe["user_id"] = {"$eq": check_id(user_id, "user_id")}
    with translate_errors("looking for stored data"):
        for name in USER_COLLECTIONS:
            if await memories.connection.collection(name).find_one(probe, {"_id": 1}):
                return True
    return False


@dataclass(frozen=True, slots=True)
class Held:
    """What is stored of a user: the ``agents`` holding something, the documents per
    collection (``counts``, every collection of :data:`USER_COLLECTIONS`) and their ``total``."""

    agents: list[str]
    counts: dict[str, int]
    total: int


async def held(memories: MemorySystem, user_id: str, agent_id: str | None = None) -> Held:
    """What an erasure of ``user_id`` would erase: of every agent, or of ``agent_id`` only
    (``agents`` is then that agent when it holds something, else empty). What
    ``agent-memory forget`` and the memory console show before they ask for confirmation."""
    user_id = check_user(user_id)
    if agent_id is not None:
        agent_id = check_id(agent_id, "agent_id")
    agents = [agent_id] if agent_id is not None else await agents_of(memories, user_id)
    counts: dict[str, int] = {}
    with translate_errors("counting a user's data"):
        for name in USER_COLLECTIONS:
            # A memory's field documents (its vectors per index field) go with it, uncounted.
            only = {"status": NOT_FIELD} if name == "memories" else {}
            counts[name] = await count_in(
                memories.connection.collection(name),
                agents,
                lambda part, only=only: {
                    "agent_id": {"$in": part},
                    "user_id": {"$eq": user_id},
                    **only,
                },
            )
    from agent_memory.langgraph.erasure import count_named_items

    counts["memories"] += await count_named_items(memories.long_term, agents, user_id)
    total = sum(counts.values())
    holding = agents if agent_id is None else agents if total else []
    return Held(holding, counts, total)


async def forget_user(memories: MemorySystem, tenant: Tenant) -> dict[str, int]:
    """Erase ``tenant`` in the memories, the formation queue and the LangGraph checkpointer;
    returns what was erased per collection. Idempotent: a rerun finishes an interrupted one."""
    if not isinstance(tenant, Tenant):
        raise InvalidInputError(f"tenant must be a Tenant, got {type(tenant).__name__}")
    check_user(tenant.user_id)  # before anything is erased
    # Imported here: the checkpointer pulls in LangGraph, which only this path needs.
    from agent_memory.langgraph.checkpointer import MongoCheckpointer
    from agent_memory.langgraph.erasure import forget_named_items

    connection = memories.connection
    queue = FormationQueue(connection)
    # Jobs first (a recorded plan would be re-applied by a worker taking the job over), then
    # the memories, then jobs queued meanwhile; see the module docstring.
    before = await queue.forget_user(tenant)  # names carry the prefix
    erased = dict(await memories.forget_user(tenant))
    after = await queue.forget_user(tenant)
    threads = await MongoCheckpointer(connection).forget_user(tenant)  # names do not
    named = await forget_named_items(memories.long_term, tenant)
    more = [*before.items(), *after.items(), (connection.collection_name("memories"), named)]
    more += [(connection.collection_name(k), v) for k, v in threads.items()]
    for collection, count in more:
        erased[collection] = erased.get(collection, 0) + count
    logger.info("user_erased", agent_id=tenant.agent_id, erased=sum(erased.values()))
    return erased

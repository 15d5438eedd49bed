"""What the Atlas tier knows of the search indexes behind its searches, and says.

On Atlas a missing, misnamed or still building search index is no error: ``$vectorSearch``
and ``$search`` return nothing, and the application sees an agent that remembers nothing. The
Atlas searcher (``search/atlas.py``) calls :func:`first_use` after a collection's first search
in the process and :func:`when_vector_search_is_empty` when a vector search found nothing;
each says what is wrong once, with what to run. A check never fails a search.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.mongo import _driver
from agent_memory.mongo._errors import classify_refusal, first_line
from agent_memory.mongo.search.types import SearchTarget

__all__ = ["IndexWatch", "first_use", "note_search_indexes_serving", "when_vector_search_is_empty"]

logger = get_logger(__name__)

#: What to run when a search index is not in place.
_SETUP = "run `agent-memory indexes setup` as the provisioning user"
_STATUS = "`agent-memory indexes status` shows each index's state"


@dataclass
class IndexWatch:
    """What this process knows of the search indexes behind its searches.

    A missing, misnamed or still building search index is no error on Atlas: the search
    stages return nothing, and the application sees an agent that remembers nothing. So a
    collection's search indexes are listed the first time it is searched (once per process,
    unless :class:`~agent_memory.mongo.indexes.IndexManager` just saw them serving), and a
    ``$vectorSearch`` that finds nothing for a tenant that has matching documents is looked
    into, at most once per ``interval`` seconds of ``clock`` per collection and index, so a
    busy application does not pay a round trip for every empty search.
    """

    clock: Callable[[], float] = time.monotonic
    interval: float = 600.0
    #: (database, collection): listed at first use, or seen serving by the index manager.
    started: set[tuple[str, str]] = field(default_factory=set)
    #: (database, collection, index): when an empty search of it was last looked into.
    looked_into: dict[tuple[str, str, str], float] = field(default_factory=dict)
    #: database: why the server refuses to list its search indexes.
    unlistable: dict[str, str] = field(default_factory=dict)


#: The process's watch (tests put in another, with their own clock).
_WATCH = IndexWatch()


def note_search_indexes_serving(database: str, collection: str) -> None:
    """The index manager saw every search index of ``collection`` serving: searchers of this
    process need not list them at first use."""
    _WATCH.started.add((database, collection))


def _database_name(db: Any) -> str:
    return str(getattr(db, "name", ""))


async def _listing(
    db: Any, collection: Any, target: SearchTarget
) -> tuple[dict[str, dict[str, Any]] | None, str]:
    """The collection's search indexes by name, or ``None`` and why they cannot be listed.
    A refusal (M0 and Flex clusters refuse ``$listSearchIndexes``, a user may lack the
    privilege) is remembered for the database: it is not asked again."""
    database = _database_name(db)
    known = _WATCH.unlistable.get(database)
    if known is not None:
        return None, known
    try:
        listed = await _driver.list_search_indexes(collection)
    except Exception as exc:  # a check must never fail a search
        reason = first_line(exc)
        if isinstance(exc, pm.OperationFailure) and classify_refusal(exc) != "transient":
            _WATCH.unlistable[database] = reason
        logger.info(
            "search_index_status_unavailable",
            collection=target.collection,
            reason=reason,
            check=f"{_STATUS} (run it as the provisioning user); M0 and Flex clusters list "
            "no search indexes: see them in the Atlas UI",
        )
        return None, reason
    return {str(index.get("name")): index for index in listed}, ""


async def first_use(
    db: Any, collection: Any, target: SearchTarget, *, vector_only: bool = False
) -> None:
    """At the first search of a collection in this process: are its search indexes (only the
    vector index, with ``vector_only``) there and serving their latest definition? One
    ``search_indexes_not_ready`` warning if not."""
    key = (_database_name(db), target.collection)
    if key in _WATCH.started:
        return
    _WATCH.started.add(key)
    listed, _ = await _listing(db, collection, target)
    if listed is None:
        if key[0] not in _WATCH.unlistable:
            # A transient failure (a refusal is remembered): the next search looks again.
            _WATCH.started.discard(key)
        return
    from agent_memory.mongo.indexes import serving_state  # lazily: indexes imports this module

    not_ready = []
    for name in (target.vector_index,) if vector_only else (target.vector_index, target.text_index):
        state, detail = serving_state(listed.get(name))
        if state != "ok":
            not_ready.append(f"{name} ({state}{': ' + detail if detail else ''})")
    if not_ready:
        logger.warning(
            "search_indexes_not_ready",
            collection=target.collection,
            indexes=", ".join(not_ready),
            consequence="searches of this collection find nothing (or miss documents) until "
            "they serve",
            remedy=f"{_SETUP}; {_STATUS}",
        )


async def when_vector_search_is_empty(
    db: Any, collection: Any, target: SearchTarget, vector_filter: dict[str, Any]
) -> None:
    """``$vectorSearch`` found nothing. That is the right answer only when the tenant has no
    document the search may return; if it has one (one indexed ``find_one``), the vector
    index is missing, building or behind the writes: one ``search_index_unusable`` warning.
    At most once per collection and index per ``IndexWatch.interval``."""
    key = (_database_name(db), target.collection, target.vector_index)
    now = _WATCH.clock()
    last = _WATCH.looked_into.get(key)
    if last is not None and now - last < _WATCH.interval:
        return
    _WATCH.looked_into[key] = now
    searchable = {
        "$and": [
            *vector_filter["$and"],
            {target.vector_path: {"$exists": True}},
        ]
    }
    try:
        found = await collection.find_one(searchable, {"_id": 1})
    except Exception as exc:  # a check must never fail a search
        logger.debug(
            "search_index_check_failed", collection=target.collection, reason=first_line(exc)
        )
        return
    if found is None:
        return  # nothing to find: the empty answer is right
    listed, reason = await _listing(db, collection, target)
    if listed is None:
        state, detail = "unknown", reason
    else:
        from agent_memory.mongo.indexes import serving_state  # lazily, as above

        state, detail = serving_state(listed.get(target.vector_index))
    name = f"{target.collection}.{target.vector_index}"
    if state == "missing":
        problem = f"the search index {name} does not exist"
    elif state == "failed":
        problem = f"the search index {name} failed to build" + (f": {detail}" if detail else "")
    else:
        problem = (
            f"the search index {name} is missing, building, or not caught up with recent writes"
        )
    logger.warning(
        "search_index_unusable",
        collection=target.collection,
        index=target.vector_index,
        state=state,
        detail=detail,
        message=(
            f"$vectorSearch found nothing although the tenant has documents to find: {problem}"
        ),
        remedy=f"{_SETUP} if it is missing; {_STATUS}",
    )

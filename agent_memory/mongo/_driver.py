"""The few places where pymongo's async API and Motor differ, behind one set of helpers.

The framework is written against ``pymongo.AsyncMongoClient``. Apps that still hand in a
Motor database get the same code paths: Motor's ``aggregate`` and ``list_*indexes`` return
cursors directly where pymongo's return awaitables of cursors, and Motor's ``start_session``
is a coroutine. Everything else the framework uses is called the same way on both.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = [
    "aggregate",
    "count",
    "is_motor",
    "list_indexes",
    "list_search_indexes",
    "start_session",
    "start_transaction",
]


def is_motor(handle: Any) -> bool:
    """True for Motor clients, databases and collections."""
    return type(handle).__module__.startswith("motor.")


async def _cursor(result: Any) -> Any:
    return await result if inspect.isawaitable(result) else result


async def aggregate(collection: Any, pipeline: list[dict[str, Any]], **kwargs: Any) -> list[dict]:
    """Run an aggregation and return every result document."""
    cursor = await _cursor(collection.aggregate(pipeline, **kwargs))
    return await cursor.to_list(None)


async def count(collection: Any, query: dict[str, Any]) -> int:
    """How many documents match ``query``, by the ``count`` command: the server counts (index
    entries where an index serves the query) and no document leaves it. ``count_documents``
    is an aggregate, which the embedded engine refuses past 50,000 matching documents ("exceeds
    the configured materialization budget"). Not for use in a transaction."""
    reply = await collection.database.command({"count": collection.name, "query": query})
    return int(reply["n"])


async def list_indexes(collection: Any) -> list[dict[str, Any]]:
    cursor = await _cursor(collection.list_indexes())
    return [dict(index) for index in await cursor.to_list(None)]


async def list_search_indexes(collection: Any) -> list[dict[str, Any]]:
    cursor = await _cursor(collection.list_search_indexes())
    return [dict(index) for index in await cursor.to_list(None)]


async def start_session(client: Any) -> Any:
    """A client session, to be used as ``async with``."""
    return await _cursor(client.start_session())


async def start_transaction(session: Any, **kwargs: Any) -> None:
    """Begin a transaction on ``session`` (a coroutine on pymongo, plain on Motor)."""
    await _cursor(session.start_transaction(**kwargs))

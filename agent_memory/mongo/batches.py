"""Queries built from a list that a caller or the stored data sized, sent a bounded slice at a time.

A ``$in``, ``$nin`` or ``$or`` grows with its list, and servers limit how large one query may
be. The embedded engine (mongoeco on SQLite) turns each value of an ``$in`` or ``$nin`` on
``_id`` or on an array field into two levels of one SQL expression, and each branch of an
``$or`` into one, and SQLite refuses an expression deeper than 1,000 ("Expression tree is too
large (maximum depth 1000)"). Measured on mongoeco 4.11 over the wire, with the framework's
engine adjustments: ``find``, ``count``, ``update_many`` and ``delete_many`` took an ``_id``
``$in`` (or ``$nin``) of at most 494 ids (493 beside a tenant filter), an ``$or`` of at most
992 documents of three fields. MongoDB has no such limit but the 16 MiB of one command.

So every such list goes to the server :data:`BOUND` values at a time: finds concatenate,
counts add up. Fixed lists (the statuses of a task, the types of a memory) need none of this.

>>> list(slices(["a", "b", "c"], 2))
[['a', 'b'], ['c']]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple, TypeVar

__all__ = [
    "BOUND",
    "Written",
    "count_in",
    "delete_in",
    "distinct_in",
    "find_in",
    "slices",
    "update_in",
]

T = TypeVar("T")

#: Values in one ``$in``, ``$nin`` or ``$or``: well below the embedded engine's 494 (see the
#: module docstring), so a query's other conditions fit beside them.
BOUND = 400

Query = Callable[[list[T]], Mapping[str, Any]]


def slices(values: Iterable[T], size: int = BOUND) -> Iterator[list[T]]:
    """``values`` in order, in lists of at most ``size`` (none for no values)."""
    if size < 1:
        raise ValueError("size must be at least 1")
    part: list[T] = []
    for value in values:
        part.append(value)
        if len(part) == size:
            yield part
            part = []
    if part:
        yield part


async def find_in(
    collection: Any,
    values: Iterable[T],
    query: Query[T],
    projection: Mapping[str, Any] | None = None,
    **options: Any,
) -> list[dict[str, Any]]:
    """The documents ``query(part)`` finds for each bounded part of ``values``, one part
    after the other (``options``, such as ``sort`` or ``session``, apply within a part)."""
    found: list[dict[str, Any]] = []
    for part in slices(values):
        found += await collection.find(query(part), projection, **options).to_list(None)
    return found


async def distinct_in(
    collection: Any, key: str, values: Iterable[T], query: Query[T], **options: Any
) -> list[Any]:
    """The distinct values of ``key`` among the documents ``query(part)`` finds for the
    parts of ``values`` (each value once, in the order found)."""
    found: dict[Any, None] = {}
    for part in slices(values):
        found.update(dict.fromkeys(await collection.distinct(key, query(part), **options)))
    return list(found)


async def count_in(collection: Any, values: Iterable[T], query: Query[T], **options: Any) -> int:
    """How many documents ``query(part)`` counts, over the parts of ``values``; the parts
    must select disjoint documents, as a list of distinct ids does."""
    total = 0
    for part in slices(values):
        total += await collection.count_documents(query(part), **options)
    return total


class Written(NamedTuple):
    """What the updates of :func:`update_in` matched and modified, added up."""

    matched_count: int
    modified_count: int


async def update_in(
    collection: Any,
    values: Iterable[T],
    query: Query[T],
    update: Mapping[str, Any] | list[Mapping[str, Any]],
    **options: Any,
) -> Written:
    """``update_many(query(part), update)`` for each bounded part of ``values``; pass
    ``session=`` to keep every part inside one transaction."""
    matched = modified = 0
    for part in slices(values):
        result = await collection.update_many(query(part), update, **options)
        matched += result.matched_count
        modified += result.modified_count
    return Written(matched, modified)


async def delete_in(collection: Any, values: Iterable[T], query: Query[T], **options: Any) -> int:
    """``delete_many(query(part))`` for each bounded part of ``values``; how many were
    deleted. Pass ``session=`` to keep every part inside one transaction."""
    deleted = 0
    for part in slices(values):
        deleted += (await collection.delete_many(query(part), **options)).deleted_count
    return deleted

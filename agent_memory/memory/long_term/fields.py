"""A memory searched by its best field: one vector per text, each in a document of its own.

A LangGraph item indexed on several fields (``index={"fields": ["title", "body"]}``) is
embedded field by field and scored by its best field, as LangGraph's stores do
(:attr:`NewMemory.field_texts`). MongoDB's vector index has one vector path (``embedding``)
and cannot index vectors inside an array, so each field's vector is a *field document* in the
memories collection beside the memory:

- the memory's tenant, type and tags, ``status: "field"``, ``of`` the memory's id and
  ``of_key`` its key, the vector at ``embedding``, the memory's ``expires_at``; no content.
  Every read of memories asks for ``status: "active"`` (or passes ``status: "field"`` by),
  so nothing but a search by fields sees them.
- the memory itself carries :data:`FIELDS_TAG`, which a search by fields excludes: the
  memory is found through its fields' vectors, never through the vector of its joined text
  (which the framework's own ranking keeps using).

A search by fields (:meth:`LongTermMemory.similar` with ``fields=True``) asks for
``status`` ``active`` or ``field`` without :data:`FIELDS_TAG`, a documented ``$vectorSearch``
filter on the declared ``status`` and ``tags`` paths, then gives each memory the best score
of its documents. The field documents of a key are those of its active memory: a store of the
key replaces them, and forgetting the key, the memory or the user deletes them; editing the
memory's content drops them (it is searched by its new text). Every other read or write of
memories passes them by (``status``), and ``tenant_field_of``/``tenant_field_of_key``
(partial on ``status: "field"``) find them by ``of``/``of_key``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from agent_memory.mongo.batches import delete_in, distinct_in, update_in
from agent_memory.mongo.search.snapshots import Change
from agent_memory.mongo.vectors import to_bson_vector
from agent_memory.stamps import utcnow
from agent_memory.tenancy import Tenant

if TYPE_CHECKING:
    from agent_memory.memory.long_term.records import NewMemory, StoreResult

__all__ = [
    "FIELD",
    "FIELDS_TAG",
    "MAX_FIELD_TEXTS",
    "NOT_FIELD",
    "best_per_memory",
    "by_fields",
    "field_documents",
    "fields_of",
    "replace_fields",
    "stale_fields",
]

#: The ``status`` of a field document.
FIELD = "field"
#: On a memory searched by its fields' vectors rather than its own.
FIELDS_TAG = "memory/fields"
#: A condition on ``status`` that passes field documents by (for reads of every status).
NOT_FIELD: dict[str, Any] = {"$ne": FIELD}
#: The most texts one memory is embedded as.
MAX_FIELD_TEXTS = 64


def field_documents(
    tenant: Tenant,
    memory_id: str,
    item: NewMemory,
    vectors: Sequence[np.ndarray],
    now: datetime,
) -> list[dict[str, Any]]:
    """The field documents of the memory ``memory_id`` stored from ``item`` (checked, with
    ``field_texts``), one per vector. Their ids are new at each store (``<memory id>~<new>``),
    so they are written before the ones they replace are deleted."""
    tags = [tag for tag in item.tags if tag != FIELDS_TAG]
    written = uuid.uuid4().hex[:12]
    return [
        {
            "_id": f"{memory_id}~{written}{position}",
            **tenant.filter(),
            "status": FIELD,
            "of": memory_id,
            "of_key": item.key,
            "memory_type": item.memory_type,
            "tags": tags,
            "embedding": to_bson_vector(vector),
            "expires_at": item.expires_at,
            "created_at": now,
        }
        for position, vector in enumerate(vectors)
    ]


def by_fields(
    filters: Mapping[str, Any], exclude: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The filters and exclusions of a vector search of active memories, made a search by
    fields: active memories and field documents, without the memories their fields stand
    for. Only ``status`` and ``tags``, both declared as filter paths of the vector index."""
    excluded = exclude.get("tags")
    tags = [] if excluded is None else [excluded] if isinstance(excluded, str) else list(excluded)
    return (
        {**filters, "status": ["active", FIELD]},
        {**exclude, "tags": [*tags, FIELDS_TAG]},
    )


def fields_of(tenant: Tenant, memory_ids: Sequence[str]) -> dict[str, Any]:
    """The field documents of these memories (at most
    :data:`~agent_memory.mongo.batches.BOUND` of them: :mod:`agent_memory.mongo.batches`)."""
    return {**tenant.filter(), "status": FIELD, "of": {"$in": list(memory_ids)}}


def stale_fields(tenant: Tenant, keys: Sequence[str]) -> dict[str, Any]:
    """The field documents of the memories stored under ``keys`` (at most
    :data:`~agent_memory.mongo.batches.BOUND` of them)."""
    return {**tenant.filter(), "status": FIELD, "of_key": {"$in": sorted(set(keys))}}


def best_per_memory(
    hits: Sequence[tuple[Mapping[str, Any], float]],
) -> list[tuple[str, float]]:
    """Each memory's best score among its documents (its own, or a field document's),
    best first: ``(memory id, score)``."""
    best: dict[str, float] = {}
    for document, score in hits:
        memory_id = document.get("of") if document.get("status") == FIELD else document["_id"]
        if isinstance(memory_id, str) and score > best.get(memory_id, -np.inf):
            best[memory_id] = score
    return sorted(best.items(), key=lambda pair: -pair[1])


async def replace_fields(
    collection: Any,
    tenant: Tenant,
    items: Sequence[NewMemory],
    results: Sequence[StoreResult],
    field_vectors: Sequence[Sequence[np.ndarray]],
) -> Change | None:
    """Replace the field documents of the keys stored with ``field_texts`` (``items``, as
    ``results`` stored them, ``field_vectors`` embedded): those of the key's active memory
    now, none when it has fewer than two texts. An item stored as history (``outdated``)
    leaves them. The change to announce, or ``None`` when nothing changed.

    The new documents are written first and the stale ones deleted after, so a failure
    never leaves a memory tagged :data:`FIELDS_TAG` without field vectors: when the insert
    fails, the memories lose the tag (they are searched by their joined text, as the tag
    then says) and the partial write is removed, before the error is raised."""
    keys: list[str] = []
    owners: list[str] = []
    added: list[dict[str, Any]] = []
    now = utcnow()
    for item, result, vectors in zip(items, results, field_vectors, strict=True):
        if item.field_texts is None or item.key is None or result.action == "outdated":
            continue
        keys.append(item.key)
        owners.append(result.id)
        added += field_documents(tenant, result.id, item, vectors, now)
    if not keys:
        return None
    fresh = {document["_id"] for document in added}
    stale = [
        doc_id
        for doc_id in await distinct_in(
            collection, "_id", sorted(set(keys)), lambda part: stale_fields(tenant, part)
        )
        if doc_id not in fresh
    ]
    if added:
        try:
            await collection.insert_many(added, ordered=True)
        except BaseException:
            await _untag(collection, tenant, owners, [*fresh, *stale])
            raise
    await delete_in(collection, stale, lambda part: {**tenant.filter(), "_id": {"$in": part}})
    return Change(added=added, removed=stale) if stale or added else None


async def _untag(collection: Any, tenant: Tenant, owners: list[str], documents: list[Any]) -> None:
    """After a failed write of field documents: the memories are searched by their own
    vector (no tag) and have none (best effort: the write's own error is what is raised)."""
    with contextlib.suppress(Exception):  # the caller raises the write's error
        await update_in(
            collection,
            owners,
            lambda part: {**tenant.filter(), "_id": {"$in": part}, "status": {"$ne": FIELD}},
            {"$pull": {"tags": FIELDS_TAG}},
        )
        await delete_in(
            collection, documents, lambda part: {**tenant.filter(), "_id": {"$in": part}}
        )

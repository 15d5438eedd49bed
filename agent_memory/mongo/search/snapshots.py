"""Tenants' corpora kept in memory between searches, and the generation tokens that say when
a kept one is out of date.

Reading every document of a tenant for every search is what made plain-tier retrieval slow
(hundreds of milliseconds at a few hundred memories on the embedded engine, which decodes each
document in Python). A target whose writers all announce their writes keeps its corpora here:

- **Writers** call :func:`announce_write` after every write that adds or removes a document or
  changes a filterable field. It sets a fresh random token in the tenant's generation document
  (``search_generations``, one small document per collection and tenant). A random token, not
  a counter: a counter deleted with the tenant would restart and repeat old values.
- **Readers** (:class:`Snapshots`) read the token (one read by ``_id``; the reads asked for
  at one moment on a connection go out as one ``find``, :class:`TokenReads`: a turn's
  memories and both scopes of its knowledge, and other users' searches of that moment),
  then rank over the kept corpus. A token that differs from the one the corpus was kept
  under means another
  writer (any process) wrote since: the corpus is brought up to date (the tenant's documents
  without vectors, then the vectors of documents not held yet) and the search runs again. A
  write announced before a search started is always seen by that search.

The kept documents are whole (without their vectors), so a search answers from memory after one
small read of the token: every writer of a field that ranking or filtering reads (content,
status, tags, importance, feedback) announces its write. Access statistics are the exception:
each process keeps its own view of them current (:meth:`Snapshots.touch`) and sees other
processes' accesses at its next refresh, which can only make a memory look slightly less
recently used.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pymongo import ReturnDocument, UpdateOne

from agent_memory._log import get_logger
from agent_memory.mongo.batches import BOUND
from agent_memory.mongo.search.corpus import Corpus, TokenCache
from agent_memory.mongo.search.types import SearchTarget

__all__ = [
    "GENERATIONS",
    "Change",
    "Snapshot",
    "Snapshots",
    "TokenReads",
    "announce",
    "announce_write",
    "announce_writes",
    "current_token",
    "erase_tenant",
    "erase_token",
    "generation_id",
]

logger = get_logger(__name__)

#: The collection of generation tokens (its name gets the connection's prefix).
GENERATIONS = "search_generations"
#: Documents kept in memory over all tenants, by default (about 1.6 KB each at 384 dimensions,
#: plus their text and terms).
DEFAULT_MAX_DOCUMENTS = 50_000
#: A kept corpus is read again after this long even when no write was announced: a bound on
#: how late another process's access statistics, or a write whose announcement was lost to
#: a crash, reach this process.
DEFAULT_MAX_AGE_SECONDS = 300.0
#: Ids in one ``$in`` when reading the vectors of documents not held yet (the shared bound of
#: :mod:`agent_memory.mongo.batches`: the embedded engine refused 495).
VECTOR_BATCH = BOUND
#: Turns of the event loop a token read waits for others to join it (see :class:`TokenReads`).
READ_WINDOW_TURNS = 4
#: Tokens read in one ``find`` (an ``$in`` of their ids) at most.
READ_BATCH = BOUND


def generation_id(collection: str, tenant: Mapping[str, str]) -> str:
    """The ``_id`` of a tenant's generation document for ``collection``: the collection and
    the tenant's fields as compact JSON, sorted by name (unambiguous whatever the ids hold).

    A string, not an embedded document: a server reads many of them with one ``$in`` through
    its ``_id`` index, where mongoeco cannot translate a ``$in`` (or an equality) of
    documents to SQL and read every generation document of every tenant in Python instead,
    at every token read (``docs/upstream/mongoeco-document-equality.md``)."""
    return json.dumps(
        {"collection": collection, **tenant},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )


def _legacy_generation_id(collection: str, tenant: Mapping[str, str]) -> dict[str, str]:
    """The ``_id`` generation documents had before :func:`generation_id` was a string; only
    erasure still names it, so that a tenant's token written by an earlier version goes too."""
    return {"collection": collection, **{key: tenant[key] for key in sorted(tenant)}}


def _token_update(tenant: Mapping[str, str], token: str) -> dict[str, Any]:
    return {"$set": {"token": token, **tenant, "updated_at": datetime.now(UTC)}}


async def announce_write(generations: Any, collection: str, tenant: Mapping[str, str]) -> str:
    """Record that ``tenant``'s documents in ``collection`` changed (one upsert); returns the
    new token. Call it after the write has landed, also when it failed half-way."""
    token = secrets.token_hex(8)
    await generations.update_one(
        {"_id": generation_id(collection, tenant)}, _token_update(tenant, token), upsert=True
    )
    return token


async def announce_writes(
    generations: Any, collection: str, tenants: Sequence[Mapping[str, str]]
) -> None:
    """:func:`announce_write` for many tenants at once (one bulk write)."""
    if not tenants:
        return
    await generations.bulk_write(
        [
            UpdateOne(
                {"_id": generation_id(collection, tenant)},
                _token_update(tenant, secrets.token_hex(8)),
                upsert=True,
            )
            for tenant in tenants
        ],
        ordered=False,
    )


async def announce(
    snapshots: Snapshots | None,
    generations: Any,
    target: SearchTarget,
    tenant: Mapping[str, str],
    change: Change | None = None,
) -> None:
    """Announce a writer's write to ``tenant``'s documents of ``target``: through this
    process's kept corpora when it keeps them (a kept corpus follows ``change``), otherwise
    by the token alone."""
    if snapshots is not None:
        await snapshots.announce(target, tenant, change)
    else:
        await announce_write(generations, target.collection, tenant)


async def current_token(
    reads: TokenReads, generations: Any, collection: str, tenant: Mapping[str, str]
) -> str:
    """The tenant's generation token for ``collection`` now. A tenant without one (written
    before tokens existed, or never) gets one, so that what is kept of it can be kept from
    then on."""
    document_id = generation_id(collection, tenant)
    token = await reads.read(document_id)
    if token is not None:
        return token
    found = await generations.find_one_and_update(
        {"_id": document_id},
        {"$setOnInsert": {"token": secrets.token_hex(8), **tenant}},
        upsert=True,
        projection={"token": 1},
        return_document=ReturnDocument.AFTER,
    )
    return str(found.get("token"))


async def erase_token(generations: Any, collection: str, tenant: Mapping[str, str]) -> None:
    """Delete the tenant's generation token for ``collection`` (in its current and its
    earlier form of ``_id``)."""
    ids = [generation_id(collection, tenant), _legacy_generation_id(collection, tenant)]
    await generations.delete_many({"_id": {"$in": ids}})


async def erase_tenant(
    snapshots: Snapshots | None, generations: Any, target: SearchTarget, tenant: Mapping[str, str]
) -> None:
    """After a tenant's documents of ``target`` were erased: its token goes too (it names the
    tenant) with whatever this process kept of it; a reader then starts afresh."""
    await erase_token(generations, target.collection, tenant)
    if snapshots is not None:
        snapshots.forget(target, tenant)


class TokenReads:
    """Generation tokens read together: the reads asked for within a few turns of the event
    loop (:data:`READ_WINDOW_TURNS`) go out as one ``find`` by ``_id``.

    A turn of the agent asks for three at once (the user's memories, the user's and the
    agent's shared knowledge) and, under load, other users' searches ask at the same moment:
    one command instead of one each. The wait is counted in turns of the loop, not in time,
    so a search on an idle process is not delayed; a token read is never older than the
    moment it was asked for, so a write announced before a search started is still seen.
    """

    def __init__(self, generations: Any) -> None:
        self._generations = generations
        self._asked: dict[str, list[asyncio.Future[str | None]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flush: asyncio.Task[None] | None = None
        self.reads = 0

    async def read(self, document_id: str) -> str | None:
        """The token stored under ``document_id``, or ``None`` when there is none."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            if self._loop is not None and not self._loop.is_closed() and self._flush is not None:
                # Another loop is gathering reads (a client serves one loop; this is for
                # safety): this one is read alone.
                self.reads += 1
                found = await self._generations.find_one({"_id": document_id}, {"token": 1})
                return _token_of(found)
            self._loop, self._asked, self._flush = loop, {}, None
        waiting: asyncio.Future[str | None] = loop.create_future()
        self._asked.setdefault(document_id, []).append(waiting)
        if self._flush is None:
            self._flush = loop.create_task(self._read_asked(), name="generation-token-reads")
        return await waiting

    async def _read_asked(self) -> None:
        asked = None
        try:
            for _ in range(READ_WINDOW_TURNS):
                await asyncio.sleep(0)  # let the searches of this moment ask too
            asked, self._asked, self._flush = self._asked, {}, None
            entries = list(asked.items())
            for start in range(0, len(entries), READ_BATCH):
                part = entries[start : start + READ_BATCH]
                self.reads += 1
                try:
                    rows = await self._generations.find(
                        {"_id": {"$in": [document_id for document_id, _ in part]}},
                        {"token": 1},
                    ).to_list(None)
                except Exception as exc:  # each waiting search fails as its own read would
                    for _, waiting in part:
                        for future in waiting:
                            if not future.done():
                                future.set_exception(exc)
                    continue
                tokens = {row["_id"]: _token_of(row) for row in rows}
                for key, waiting in part:
                    for future in waiting:
                        if not future.done():
                            future.set_result(tokens.get(key))
        finally:
            if asked is None:  # cancelled while waiting for others to ask
                asked, self._asked, self._flush = self._asked, {}, None
            for waiting in asked.values():  # nobody is left waiting for ever
                for future in waiting:
                    if not future.done():
                        future.cancel()


def _token_of(found: Mapping[str, Any] | None) -> str | None:
    token = None if found is None else found.get("token")
    return token if isinstance(token, str) else None


@dataclass(frozen=True, slots=True)
class Change:
    """What one writer changed, for a kept corpus to follow without reading it back:
    documents added (whole, with their vector), fields set on documents, documents removed."""

    added: Sequence[Mapping[str, Any]] = ()
    fields: Mapping[Hashable, Mapping[str, Any]] = field(default_factory=dict)
    removed: Sequence[Hashable] = ()


@dataclass(slots=True)
class Snapshot:
    token: str
    corpus: Corpus
    #: ``time.monotonic()`` when the corpus was last read in full.
    read_at: float = field(default_factory=time.monotonic)


class Snapshots:
    """Kept corpora, least recently used dropped first beyond ``max_documents`` in all."""

    def __init__(
        self,
        generations: Any,
        *,
        dimensions: int,
        max_documents: int = DEFAULT_MAX_DOCUMENTS,
        max_age: float = DEFAULT_MAX_AGE_SECONDS,
        reads: TokenReads | None = None,
    ) -> None:
        self._generations = generations
        self._reads = reads or TokenReads(generations)
        self._max_age = max_age
        self._dimensions = dimensions
        self._max_documents = max_documents
        self._kept: OrderedDict[Hashable, Snapshot] = OrderedDict()
        self._tokens = TokenCache()
        self.refreshes = 0

    @staticmethod
    def _key(target: SearchTarget, tenant: Mapping[str, str]) -> Hashable:
        return (target.collection, *(tenant[path] for path in target.tenant_paths))

    def kept(self, target: SearchTarget, tenant: Mapping[str, str]) -> Snapshot | None:
        key = self._key(target, tenant)
        found = self._kept.get(key)
        if found is not None:
            self._kept.move_to_end(key)
        return found

    def current(self, snapshot: Snapshot, token: str) -> bool:
        """Whether ``snapshot`` may answer a search: nothing announced since it was kept, and
        not older than the maximum age."""
        return snapshot.token == token and time.monotonic() - snapshot.read_at <= self._max_age

    async def token(self, target: SearchTarget, tenant: Mapping[str, str]) -> str:
        """The tenant's generation token now (see :func:`current_token`)."""
        return await current_token(self._reads, self._generations, target.collection, tenant)

    async def refresh(
        self,
        collection: Any,
        target: SearchTarget,
        tenant: Mapping[str, str],
        token: str,
    ) -> Snapshot:
        """Bring the tenant's corpus up to date as of ``token`` (read before this call): with
        nothing held, the tenant's documents with their vectors in one ``find``; otherwise the
        documents without their vectors, then the vectors of those not held yet."""
        where = {path: {"$eq": tenant[path]} for path in target.tenant_paths}
        old = self.kept(target, tenant)
        vectors: dict[Any, Any] = {}
        if old is None:
            # Nothing held: the documents with their vectors, in one read.
            omitted = {path: 0 for path in target.omit_paths} or None
            documents = await collection.find(where, omitted).to_list(None)
            vectors = {doc["_id"]: doc.get(target.vector_path) for doc in documents}
        else:
            unread = {path: 0 for path in target.unread}
            documents = await collection.find(where, unread).to_list(None)
            held = set(old.corpus.ids)
            missing = [doc["_id"] for doc in documents if doc["_id"] not in held]
            # Vectors of the documents not held yet, a bounded list of ids at a time (some
            # servers limit the size of one $in: mongo.batches).
            for start in range(0, len(missing), VECTOR_BATCH):
                found = await collection.find(
                    {**where, "_id": {"$in": missing[start : start + VECTOR_BATCH]}},
                    {target.vector_path: 1},
                ).to_list(None)
                vectors.update((row["_id"], row.get(target.vector_path)) for row in found)
        corpus = Corpus.merge(
            documents,
            vectors,
            None if old is None else old.corpus,
            target,
            dimensions=self._dimensions,
            tokens=self._tokens,
        )
        snapshot = Snapshot(token, corpus)
        self._keep(self._key(target, tenant), snapshot)
        self.refreshes += 1
        logger.debug(
            "search_snapshot_refreshed",
            collection=target.collection,
            documents=len(corpus),
            read=len(vectors),
        )
        return snapshot

    def touch(
        self,
        target: SearchTarget,
        tenant: Mapping[str, str],
        fields: Mapping[Hashable, Mapping[str, Any]],
    ) -> None:
        """Set fields of kept documents that no search filters on and other processes may
        see late (access statistics): no token changes, so no other process reads again."""
        kept = self.kept(target, tenant)
        if kept is None:
            return
        for position, document in enumerate(kept.corpus.documents):
            update = fields.get(document["_id"])
            if update:
                kept.corpus.documents[position] = {**document, **update}

    async def announce(
        self, target: SearchTarget, tenant: Mapping[str, str], change: Change | None
    ) -> None:
        """Announce a write of this process. When the tenant's corpus is kept and no other
        writer announced since it was (the token is swapped only if it is still the kept
        one), the kept corpus follows ``change`` instead of being read again."""
        kept = self.kept(target, tenant)
        try:
            if kept is not None and change is not None:
                token = secrets.token_hex(8)
                result = await self._generations.update_one(
                    {"_id": generation_id(target.collection, tenant), "token": kept.token},
                    _token_update(tenant, token),
                )
                if result.matched_count == 1:
                    kept.corpus = kept.corpus.changed(
                        change, target, dimensions=self._dimensions, tokens=self._tokens
                    )
                    kept.token = token
                    return
            await announce_write(self._generations, target.collection, tenant)
        except BaseException:
            # The write landed but may not be announced: this process reads the tenant again
            # at its next search (others within the maximum age, or at the next write).
            self.forget(target, tenant)
            raise

    def forget(self, target: SearchTarget, tenant: Mapping[str, str]) -> None:
        self._kept.pop(self._key(target, tenant), None)

    def _keep(self, key: Hashable, snapshot: Snapshot) -> None:
        self._kept[key] = snapshot
        self._kept.move_to_end(key)
        total = sum(len(kept.corpus) for kept in self._kept.values())
        while total > self._max_documents and len(self._kept) > 1:
            _, dropped = self._kept.popitem(last=False)
            total -= len(dropped.corpus)

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

**Only what changed is read again.** Each announcement also appends to a short log (the
tenant's log document beside its token document, :func:`log_id`; :data:`LOG_LENGTH` writes)
the token it replaced, the token it set and the ids its write touched (a write that does not
say which documents it touched, or touched more than :data:`LOG_IDS`, is logged as "anything
may have changed"). A reader whose kept corpus is a few writes behind follows the links from
its own token to the current one and reads only the documents they name, so another
process's write costs a reader what that write touched, not the tenant's whole history. A
reader too far behind, behind a write that named nothing, or missing a link (a writer that
failed between its token and its log entry, or has not logged it yet) reads the tenant again.
The log is a document of its own so that the token read at every search stays small: the
embedded engine decodes a whole document before it projects a field out of it, and a log of
64 writes of 50 memories is 3,200 ids.

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
from typing import Any, Protocol

from pymongo import ReturnDocument, UpdateOne

from agent_memory._log import get_logger
from agent_memory.mongo.batches import BOUND
from agent_memory.mongo.search.corpus import Corpus
from agent_memory.mongo.search.types import SearchTarget

__all__ = [
    "DEFAULT_BUDGET_BYTES",
    "GENERATIONS",
    "Change",
    "KeptBudget",
    "Snapshot",
    "Snapshots",
    "TokenReads",
    "announce",
    "announce_write",
    "announce_writes",
    "change_ids",
    "current_token",
    "erase_tenant",
    "erase_token",
    "generation_id",
]

logger = get_logger(__name__)

#: The collection of generation tokens (its name gets the connection's prefix).
GENERATIONS = "search_generations"
#: A kept corpus is read again after this long even when no write was announced: a bound on
#: how late another process's access statistics, or a write whose announcement was lost to
#: a crash, reach this process.
DEFAULT_MAX_AGE_SECONDS = 300.0
#: Ids in one ``$in`` when reading the vectors of documents not held yet (the shared bound of
#: :mod:`agent_memory.mongo.batches`: the embedded engine refused 495).
VECTOR_BATCH = BOUND
#: Writes a generation document remembers (see the module's docstring).
LOG_LENGTH = 64
#: Ids one logged write names at most; a larger write is logged as touching anything.
LOG_IDS = 256
#: What a tenant's log document's ``_id`` adds to its token document's (a generation id is a
#: JSON object, so no generation id ends with it).
LOG_SUFFIX = "#log"
#: A full read of a kept corpus for its age takes at most this share of the time it is kept:
#: a corpus whose last full read took ``r`` seconds is read for its age after
#: ``max(max_age, r / FULL_READ_SHARE)`` (100,000 memories on the embedded engine take
#: seconds to read; without this they were read again every five minutes).
FULL_READ_SHARE = 0.01
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


def log_id(collection: str, tenant: Mapping[str, str]) -> str:
    """The ``_id`` of the tenant's log of writes for ``collection`` (see the module)."""
    return generation_id(collection, tenant) + LOG_SUFFIX


def _token_update(tenant: Mapping[str, str], token: str) -> dict[str, Any]:
    """The new token (and no log kept in the token document by earlier versions)."""
    return {
        "$set": {"token": token, **tenant, "updated_at": datetime.now(UTC)},
        "$unset": {"log": ""},
    }


def _log_entry(
    tenant: Mapping[str, str], previous: str, token: str, ids: Sequence[Hashable] | None
) -> dict[str, Any]:
    """The update that logs the write that replaced ``previous`` by ``token``, with the ids
    it touched (``None``: any). String ids are logged as one JSON string: every write
    rewrites the log, and the embedded engine encodes each value of a document on its own
    (64 writes of 50 ids: 3,200 strings to encode at each write, or 64)."""
    logged: Any = None
    if ids is not None and len(ids) <= LOG_IDS:
        named = list(ids)
        strings = all(isinstance(doc_id, str) for doc_id in named)
        logged = json.dumps(named, separators=(",", ":")) if strings else named
    return {
        "$set": {**tenant},
        "$push": {
            "log": {
                "$each": [{"p": previous, "t": token, "ids": logged}],
                "$slice": -LOG_LENGTH,
            }
        },
    }


async def _log_write(
    generations: Any,
    collection: str,
    tenant: Mapping[str, str],
    previous: str | None,
    token: str,
    ids: Sequence[Hashable] | None,
) -> None:
    """Log the write that replaced ``previous`` by ``token``. Nothing to log when there was
    no token: no reader kept one."""
    if previous is None:
        return
    await generations.update_one(
        {"_id": log_id(collection, tenant)},
        _log_entry(tenant, previous, token, ids),
        upsert=True,
    )


def change_ids(change: Change | None) -> list[Hashable] | None:
    """The ids of the documents ``change`` touched (``None`` when it is not known)."""
    if change is None:
        return None
    return list(
        dict.fromkeys(
            [
                *(document["_id"] for document in change.added),
                *change.fields,
                *change.removed,
                *change.touched,
            ]
        )
    )


async def announce_write(
    generations: Any,
    collection: str,
    tenant: Mapping[str, str],
    ids: Sequence[Hashable] | None = None,
) -> str:
    """Record that ``tenant``'s documents in ``collection`` changed; returns the new token.
    ``ids`` names the documents the write touched (added, changed or removed), so that readers
    read only those: the token swapped by findAndModify, then the write logged with the token
    it replaced (two commands when a token existed). ``None`` when not known: one update, and
    a reader behind it reads the tenant again. Call it after the write has landed,
    also when it failed half-way (then with ``ids=None``)."""
    token = secrets.token_hex(8)
    if ids is None or len(ids) > LOG_IDS:
        # A write that names nothing is not logged (a reader behind it reads the tenant
        # again, its link missing), so it need not learn the token it replaces: one update.
        await generations.update_one(
            {"_id": generation_id(collection, tenant)}, _token_update(tenant, token), upsert=True
        )
        return token
    before = await generations.find_one_and_update(
        {"_id": generation_id(collection, tenant)},
        _token_update(tenant, token),
        upsert=True,
        projection={"token": 1},
        return_document=ReturnDocument.BEFORE,
    )
    await _log_write(generations, collection, tenant, _token_of(before), token, ids)
    return token


async def announce_writes(
    generations: Any, collection: str, tenants: Sequence[Mapping[str, str]]
) -> None:
    """:func:`announce_write` for many tenants at once (one bulk write), each write named as
    touching anything: unlogged, so a reader behind it reads the tenant again."""
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
        await announce_write(generations, target.collection, tenant, change_ids(change))


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
    ids = [
        generation_id(collection, tenant),
        log_id(collection, tenant),
        _legacy_generation_id(collection, tenant),
    ]
    await generations.delete_many({"_id": {"$in": ids}})


async def erase_tenant(
    snapshots: Snapshots | None, generations: Any, target: SearchTarget, tenant: Mapping[str, str]
) -> None:
    """After a tenant's documents of ``target`` were erased: its token goes too (it names the
    tenant) with whatever this process kept of it; a reader then starts afresh."""
    await erase_token(generations, target.collection, tenant)
    if snapshots is not None:
        snapshots.forget(target, tenant)


class LocalReads(Protocol):
    """Documents by ``_id`` read without a round trip (:class:`TokenReads`'s ``local``)."""

    def find(self, ids: Sequence[str], fields: Sequence[str]) -> list[dict[str, Any]] | None:
        """The documents of ``ids`` that exist, with ``_id`` and ``fields``; ``None``: not
        answered here (read through the server)."""
        ...


class TokenReads:
    """Generation tokens read together: the reads asked for within a few turns of the event
    loop (:data:`READ_WINDOW_TURNS`) go out as one ``find`` by ``_id``.

    A turn of the agent asks for three at once (the user's memories, the user's and the
    agent's shared knowledge) and, under load, other users' searches ask at the same moment:
    one command instead of one each. The wait is counted in turns of the loop, not in time,
    so a search on an idle process is not delayed; a token read is never older than the
    moment it was asked for, so a write announced before a search started is still seen.
    """

    def __init__(self, generations: Any, *, local: LocalReads | None = None) -> None:
        self._generations = generations
        #: In the process serving the embedded database: the tokens read from its file, no
        #: round trip (:mod:`agent_memory.mongo._embedded_reads`); ``None`` declines a read.
        self.local = local
        self._asked: dict[str, list[asyncio.Future[str | None]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flush: asyncio.Task[None] | None = None
        self.reads = 0

    async def read(self, document_id: str) -> str | None:
        """The token stored under ``document_id``, or ``None`` when there is none."""
        local = self.local
        if local is not None:
            found = local.find([document_id], ("token",))
            if found is not None:
                # A search still lets the loop turn once here, as a read through the server
                # would: the background writes of the previous searches go out meanwhile.
                await asyncio.sleep(0)
                return _token_of(found[0] if found else None)
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


async def _read_again(
    collection: Any,
    target: SearchTarget,
    tenant: Mapping[str, str],
    corpus: Corpus,
    ids: Sequence[Hashable],
) -> int:
    """Read the documents ``ids`` of the tenant again (whole, a bounded list of ids at a time)
    into ``corpus``: each found replaces what was kept, each not found is dropped. How many
    were found."""
    where = {path: {"$eq": tenant[path]} for path in target.tenant_paths}
    documents: list[dict[str, Any]] = []
    for start in range(0, len(ids), VECTOR_BATCH):
        documents += await collection.find(
            {**where, "_id": {"$in": list(ids[start : start + VECTOR_BATCH])}}
        ).to_list(None)
    corpus.changed(Change(added=documents, removed=[doc_id for doc_id in ids if doc_id in corpus]))
    return len(documents)


def _links(log: Any, kept: str, token: str | None) -> list[Mapping[str, Any]] | None:
    """The logged writes that lead from token ``kept`` to ``token``, in order, or ``None``
    when the log cannot say: a link missing (not logged, or fallen off the log) or a write
    that named nothing."""
    if not isinstance(log, list) or token is None:
        return None
    after = {
        entry.get("p"): entry
        for entry in log
        if isinstance(entry, Mapping) and isinstance(entry.get("p"), str)
    }
    later: list[Mapping[str, Any]] = []
    at = kept
    while at != token:
        entry = after.get(at)
        named = None if entry is None else _named(entry.get("ids"))
        if entry is None or named is None or len(later) >= len(log):
            return None
        later.append({**entry, "ids": named})
        at = entry.get("t")
    return later


def _named(ids: Any) -> list[Any] | None:
    """The ids a log entry names (a list, or a JSON string of string ids), or ``None``."""
    if isinstance(ids, str):
        try:
            ids = json.loads(ids)
        except ValueError:
            return None
    return ids if isinstance(ids, list) else None


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
    #: Documents the writer changed without saying how (an update of many, a pipeline): every
    #: reader, this process's kept corpus too, reads them again.
    touched: Sequence[Hashable] = ()


#: The memory all kept corpora of a connection may use, by default (``search_cache_mb``).
DEFAULT_BUDGET_BYTES = 1024 * 2**20


class KeptBudget:
    """One memory budget for the corpora kept by every store of a connection: long-term
    memories, knowledge and action logs of every user, together. Each kept corpus is charged
    its estimated size (:attr:`Corpus.nbytes`) when kept and whenever a write changes it;
    beyond the budget the corpora searched least recently are dropped (a user dropped costs
    one read at their next search). A single corpus larger than the whole budget is still
    kept while it is the one being searched."""

    def __init__(self, max_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        if not isinstance(max_bytes, int) or max_bytes <= 0:
            raise ValueError("max_bytes must be a positive int")
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[int, Hashable], tuple[Snapshots, int]] = OrderedDict()
        self.used = 0
        #: Corpora dropped for the budget so far.
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._entries)

    def charge(self, owner: Snapshots, key: Hashable, size: int) -> None:
        """Record ``owner``'s corpus ``key`` at ``size`` bytes, as the most recently used,
        and drop the least recently used others while over the budget."""
        entry = (id(owner), key)
        previous = self._entries.pop(entry, None)
        if previous is not None:
            self.used -= previous[1]
        self._entries[entry] = (owner, size)
        self.used += size
        while self.used > self.max_bytes and len(self._entries) > 1:
            (_, dropped_key), (dropped_owner, dropped_size) = next(iter(self._entries.items()))
            if dropped_owner is owner and dropped_key == key:
                break  # only the corpus being searched is left over the budget
            self._entries.popitem(last=False)
            self.used -= dropped_size
            dropped_owner._dropped(dropped_key)
            self.evicted += 1

    def touch(self, owner: Snapshots, key: Hashable) -> None:
        entry = (id(owner), key)
        if entry in self._entries:
            self._entries.move_to_end(entry)

    def release(self, owner: Snapshots, key: Hashable) -> None:
        found = self._entries.pop((id(owner), key), None)
        if found is not None:
            self.used -= found[1]


@dataclass(slots=True)
class Snapshot:
    token: str
    corpus: Corpus
    #: ``time.monotonic()`` when the corpus was last read in full.
    read_at: float = field(default_factory=time.monotonic)
    #: How long that full read took, in seconds.
    read_seconds: float = 0.0


class Snapshots:
    """Kept corpora of one store, within a memory budget shared with the other stores of the
    connection (:class:`KeptBudget`): least recently searched dropped first."""

    def __init__(
        self,
        generations: Any,
        *,
        dimensions: int,
        max_age: float = DEFAULT_MAX_AGE_SECONDS,
        reads: TokenReads | None = None,
        budget: KeptBudget | None = None,
    ) -> None:
        self._generations = generations
        self._reads = reads or TokenReads(generations)
        self._max_age = max_age
        self._dimensions = dimensions
        self._budget = budget if budget is not None else KeptBudget()
        self._kept: dict[Hashable, Snapshot] = {}
        self.refreshes = 0
        #: Kept corpora brought up to date from the log instead of a full read.
        self.followed = 0

    @staticmethod
    def _key(target: SearchTarget, tenant: Mapping[str, str]) -> Hashable:
        return (target.collection, *(tenant[path] for path in target.tenant_paths))

    def kept(self, target: SearchTarget, tenant: Mapping[str, str]) -> Snapshot | None:
        key = self._key(target, tenant)
        found = self._kept.get(key)
        if found is not None:
            self._budget.touch(self, key)
        return found

    def current(self, snapshot: Snapshot, token: str) -> bool:
        """Whether ``snapshot`` may answer a search: nothing announced since it was kept, and
        not older than the maximum age."""
        age_limit = max(self._max_age, snapshot.read_seconds / FULL_READ_SHARE)
        return snapshot.token == token and time.monotonic() - snapshot.read_at <= age_limit

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
        a kept corpus a few logged writes behind, the documents those writes touched; with
        nothing held, the tenant's documents with their vectors in one ``find``; otherwise the
        documents without their vectors, then the vectors of those not held yet."""
        where = {path: {"$eq": tenant[path]} for path in target.tenant_paths}
        old = self.kept(target, tenant)
        if old is not None and old.token != token:
            followed = await self._follow_log(collection, target, tenant, old)
            if followed:
                return old
        started = time.monotonic()
        vectors: dict[Any, Any] = {}
        if old is None:
            # Nothing held: the documents with their vectors, in one read, whole: the omitted
            # fields are bounded (a memory's trail) and dropped here, and the embedded engine
            # copies every document once more to leave a field out (2,000 memories: 204 ms
            # whole, 427 ms without the trail).
            documents = await collection.find(where).to_list(None)
            vectors = {doc["_id"]: doc.get(target.vector_path) for doc in documents}
        else:
            unread = {path: 0 for path in target.unread}
            documents = await collection.find(where, unread).to_list(None)
            # Vectors of the documents not held yet, or held with another text (edited by a
            # write this process could not follow: the vector was embedded again), a
            # bounded list of ids at a time (some servers limit the size of one $in:
            # mongo.batches).
            missing = [doc["_id"] for doc in documents if not old.corpus.holds_as(doc)]
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
        )
        snapshot = Snapshot(token, corpus, read_at=started)
        snapshot.read_seconds = time.monotonic() - started
        self._keep(self._key(target, tenant), snapshot)
        self.refreshes += 1
        logger.debug(
            "search_snapshot_refreshed",
            collection=target.collection,
            documents=len(corpus),
            read=len(vectors),
        )
        return snapshot

    async def _follow_log(
        self, collection: Any, target: SearchTarget, tenant: Mapping[str, str], kept: Snapshot
    ) -> bool:
        """Bring ``kept`` up to date by the writes logged since its token: the documents they
        touched read again (whole), the ones gone dropped. False, with ``kept`` untouched,
        when the log cannot say (:func:`_links`). One read of the token and the log."""
        token_id, logged_id = (
            generation_id(target.collection, tenant),
            log_id(target.collection, tenant),
        )
        found = await self._generations.find({"_id": {"$in": [token_id, logged_id]}}).to_list(None)
        by_id = {row["_id"]: row for row in found}
        token = _token_of(by_id.get(token_id))
        later = _links((by_id.get(logged_id) or {}).get("log"), kept.token, token)
        if later is None:
            return False
        ids: dict[Hashable, None] = {}
        for entry in later:
            ids.update(dict.fromkeys(entry["ids"]))
        read = await _read_again(collection, target, tenant, kept.corpus, list(ids))
        kept.token = str(token)
        self._charge(target, tenant, kept)
        self.followed += 1
        logger.debug(
            "search_snapshot_followed",
            collection=target.collection,
            writes=len(later),
            read=read,
        )
        return True

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
        for doc_id, update in fields.items():
            if update:
                kept.corpus.set_fields(doc_id, update)

    def kept_document(
        self, target: SearchTarget, tenant: Mapping[str, str], doc_id: Hashable
    ) -> Mapping[str, Any] | None:
        """The kept copy of one document of the tenant (not to be changed; :meth:`touch`
        sets its fields), or ``None`` when it is not kept."""
        kept = self.kept(target, tenant)
        return None if kept is None else kept.corpus.get(doc_id)

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
                # One command: the token swapped if it is still the kept one, then the
                # write logged. When the swap fails the entry names a token never set,
                # which no reader can follow: at worst one reads the tenant again.
                result = await self._generations.bulk_write(
                    [
                        UpdateOne(
                            {"_id": generation_id(target.collection, tenant), "token": kept.token},
                            _token_update(tenant, token),
                        ),
                        UpdateOne(
                            {"_id": log_id(target.collection, tenant)},
                            _log_entry(tenant, kept.token, token, change_ids(change)),
                            upsert=True,
                        ),
                    ],
                    ordered=True,
                )
                # The log's document matched unless this write created it.
                if result.matched_count - (1 - result.upserted_count) == 1:
                    kept.corpus.changed(change)
                    kept.token = token
                    if change.touched:
                        collection = self._generations.database[target.collection]
                        await _read_again(
                            collection, target, tenant, kept.corpus, list(change.touched)
                        )
                    self._charge(target, tenant, kept)
                    return
            await announce_write(self._generations, target.collection, tenant, change_ids(change))
        except BaseException:
            # The write landed but may not be announced: this process reads the tenant again
            # at its next search (others within the maximum age, or at the next write).
            self.forget(target, tenant)
            raise

    def forget(self, target: SearchTarget, tenant: Mapping[str, str]) -> None:
        key = self._key(target, tenant)
        if self._kept.pop(key, None) is not None:
            self._budget.release(self, key)

    def _keep(self, key: Hashable, snapshot: Snapshot) -> None:
        self._kept[key] = snapshot
        self._budget.charge(self, key, snapshot.corpus.nbytes)

    def _charge(self, target: SearchTarget, tenant: Mapping[str, str], kept: Snapshot) -> None:
        """Charge a kept corpus a write changed at its new size."""
        key = self._key(target, tenant)
        if self._kept.get(key) is kept:
            self._budget.charge(self, key, kept.corpus.nbytes)

    def _dropped(self, key: Hashable) -> None:
        """The budget dropped this corpus (called by :class:`KeptBudget`)."""
        self._kept.pop(key, None)

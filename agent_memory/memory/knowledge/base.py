"""The knowledge base: documents chunked for retrieval-augmented generation.

>>> kb = KnowledgeBase(connection, embedder)                                # doctest: +SKIP
>>> await kb.ingest(SharedKnowledge("support-agent"), source="faq.md", text=faq)
>>> await kb.ingest(Tenant("support-agent", "u1"), source="contract.txt", text=contract)
>>> hits = await kb.retrieve(Tenant("support-agent", "u1"), "how do I cancel?")
>>> print(hits[0].source, hits[0].chunk_index, hits[0].explain())          # doctest: +SKIP

Scopes. Knowledge belongs to an agent and either to one user (a :class:`Tenant`) or to every
user of the agent (:class:`SharedKnowledge`). Shared chunks are stored with the reserved
``user_id`` ``"*"`` (:data:`SHARED_USER`), so they carry the same tenant keys as everything
else and every query filters on both. A ``Tenant`` whose ``user_id`` is ``"*"`` is refused by
every method: a caller cannot reach or overwrite shared knowledge by accident. ``retrieve``
searches two scopes, the user's and the agent's shared one, as two concurrent searches (a
search is scoped to exactly one tenant), and merges their hits by the relevance the searcher
gives each (0 to 1, :attr:`SearchHit.relevance`): the search tier owns the fusion, and this
module neither fuses again nor asks which tier it runs on. Per-source ranks in a hit are
ranks over both scopes' hits (by each source's raw score: cosine, keyword score); they
explain a hit and never order them. Nothing outside the agent is ever searched.

Re-ingesting a source. Each ingest is a new ``version`` (time-ordered). Its chunks are
inserted with ``state: "pending"``, which searches exclude; one ``update_many`` then makes
them ``"live"``, and only after that are older versions deleted. So a source never has no
chunks; a crash leaves only invisible pending chunks, removed by a later ingest of the
source; and while two versions are briefly both live, a search returns chunks of the newest
only (hits are filtered per source). A later ingest deletes only older versions, so two
concurrent ingests of one source never delete each other's chunks. Search engines index
asynchronously anyway (Atlas Search lags writes), so a transaction would not make the swap
more atomic for readers. Unchanged text (same hash, title, metadata, tags and chunk
settings) is a no-op: nothing embedded, nothing written.

Searches keep each scope's chunks in memory (as long-term memories are kept, see
``agent_memory/mongo/search/snapshots.py``): every write here announces itself, and a search
reads the scope's generation token and ranks the kept chunks, reading the scope again only
when the token changed. A shared knowledge base is thus read once per process, not at every
turn of every user.

Round trips: commands sent (how many the caller waits for one after another, in brackets)
and provider calls; counted in ``tests/integration/test_knowledge.py``. An instance's first
ingest or retrieve also reads the embedder record once, concurrently with its first read.
``insert_many`` is one command unless the driver splits it (over 48 MB or 100,000 chunks);
``embed_documents`` is one call, which the embedder may send in several batches.
"announce" is one command when this process keeps the scope's chunks, otherwise the token
swapped, then the write logged when the scope had a token before (two commands; see
``mongo/search/snapshots.py``): the counts below are the first case.

==============================  ==========================================  ============
operation                       commands                                    provider
==============================  ==========================================  ============
ingest, new source              find versions, insert_many, update_many,    1 embed
                                announce (4)
ingest, changed source          find, insert_many, update_many,             1 embed
                                delete_many older versions, announce (5)
ingest, unchanged               find versions (1); + 1 delete and 1         none
                                announce if a crash left stale chunks
retrieve, plain tier            both scopes' generation tokens in one       1 embed, none
                                find, with any other search's of the        with a
                                moment (1); a scope changed since: + its    query_vector
                                chunks, then the vectors not held yet
retrieve, Atlas tier            per scope 1 aggregate ($rankFusion) or 2    as above
                                concurrent; two scopes: 2 or 4 (1)
list_sources                    1 (1)                                       none
delete_source                   delete, announce (2)                        none
forget_user                     delete, delete the token (2)                none
==============================  ==========================================  ============
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import bson
import numpy as np

from agent_memory._log import get_logger
from agent_memory.checks import (
    check_count,
    check_document_size,
    check_id,
    check_ids,
    check_int,
    check_mapping,
    check_text,
)
from agent_memory.errors import ConfigurationError, InvalidInputError
from agent_memory.memory.knowledge.chunking import Chunk, check_settings, chunk_text, stitch
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.connection import Connection
from agent_memory.mongo.embedding_record import EmbedderGuard
from agent_memory.mongo.search import SearchHit, SearchQuery, SourceScore, make_searcher
from agent_memory.mongo.search.snapshots import GENERATIONS, Snapshots, announce, erase_tenant
from agent_memory.mongo.search.types import MAX_QUERY_CHARS
from agent_memory.mongo.vectors import to_bson_vector
from agent_memory.providers.embedders.base import Embedder
from agent_memory.stamps import new_id, utcnow
from agent_memory.tenancy import Tenant

__all__ = [
    "SHARED_USER",
    "IngestReport",
    "KnowledgeBase",
    "KnowledgeConfig",
    "KnowledgeHit",
    "SharedKnowledge",
    "SourceInfo",
]

logger = get_logger(__name__)

COLLECTION = "knowledge_chunks"
#: The ``user_id`` of knowledge shared by every user of an agent.
SHARED_USER = "*"
_MAX_K = 50
_THREAD_CHARS = 50_000  # chunk longer texts off the event loop


@dataclass(frozen=True, slots=True)
class KnowledgeConfig:
    """Chunking and size limits. ``max_chunks`` caps one source (2,000 chunks of 300 tokens
    are about 500,000 words); split bigger documents into several sources."""

    chunk_tokens: int = 300
    overlap_tokens: int = 50
    max_text_chars: int = 1_000_000
    max_chunks: int = 2_000
    max_title_chars: int = 1_000
    max_tags: int = 32
    #: Each scope's search returns this many times ``k`` hits before the scopes are merged
    #: (spares for hits of a source's older version, dropped while two versions are live).
    overfetch: int = 4

    def __post_init__(self) -> None:
        check_settings(self.chunk_tokens, self.overlap_tokens)
        for name in ("max_text_chars", "max_chunks", "max_title_chars", "max_tags", "overfetch"):
            check_int(getattr(self, name), name, minimum=1)


@dataclass(frozen=True, slots=True)
class SharedKnowledge:
    """The scope of knowledge an agent shares with all its users."""

    agent_id: str

    def __post_init__(self) -> None:
        check_id(self.agent_id, "agent_id")

    def filter(self) -> dict[str, str]:
        return {"agent_id": self.agent_id, "user_id": SHARED_USER}


Scope = Tenant | SharedKnowledge


def _scope_filter(scope: Any) -> dict[str, str]:
    if isinstance(scope, SharedKnowledge):
        return scope.filter()
    if not isinstance(scope, Tenant):
        raise InvalidInputError(f"expected a Tenant or SharedKnowledge, got {type(scope).__name__}")
    if scope.user_id == SHARED_USER:
        raise InvalidInputError(
            f"user_id {SHARED_USER!r} is reserved for knowledge shared by all users of an agent; "
            "pass SharedKnowledge(agent_id) to address it"
        )
    return scope.filter()


@dataclass(frozen=True, slots=True)
class IngestReport:
    """What an ingest did; ``version`` is the live version of the source afterwards."""

    source: str
    action: Literal["inserted", "replaced", "unchanged"]
    version: str
    chunks: int
    #: Chunks of older (or abandoned) versions deleted by this ingest.
    removed: int
    content_hash: str


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """A stored source: its live version and the fields given when it was ingested."""

    source: str
    title: str | None
    version: str
    chunk_count: int
    content_hash: str
    ingested_at: datetime
    shared: bool
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class KnowledgeHit:
    """A retrieved chunk (or adjacent chunks merged): its text, where it comes from, its
    ``score`` and its rank in each search source, over both scopes.

    ``score`` is the relevance from 0 to 1 the search tier gave the chunk in its scope's
    search (:attr:`~agent_memory.mongo.search.SearchHit.relevance`, the scale every kind of
    memory reads); hits come best first. (Up to 0.2.0 it was a reciprocal rank fusion of
    the two scopes' rankings, about 0.01 to 0.03.)"""

    id: str
    source: str
    chunk_index: int
    content: str
    score: float
    sources: Mapping[str, SourceScore]
    shared: bool
    title: str | None = None
    version: str = ""
    chunk_indexes: tuple[int, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: Where ``content`` lies in the ingested text: ``text[start:end]``.
    start: int = 0
    end: int = 0

    def explain(self) -> str:
        parts = [f"{n} #{s.rank} ({s.score:.3f})" for n, s in sorted(self.sources.items())]
        scope = "shared" if self.shared else "user"
        chunks = ",".join(map(str, self.chunk_indexes or (self.chunk_index,)))
        return f"{self.source}#{chunks} ({scope}): relevance {self.score:.3f} from " + " + ".join(
            parts
        )


def _new_version(now: datetime) -> str:
    # Sorts by time as a string, so "older than this version" is a `$lt` on the server.
    return f"{int(now.timestamp() * 1000):013d}-{uuid.uuid4().hex[:12]}"


class KnowledgeBase:
    """Ingest documents per user or shared per agent; retrieve chunks by hybrid search.

    >>> kb = KnowledgeBase(connection, embedder)                            # doctest: +SKIP
    >>> report = await kb.ingest(SharedKnowledge("bot"), source="faq", text="Refunds ...")
    >>> [hit.content for hit in await kb.retrieve(Tenant("bot", "u1"), "refund?", k=3)]
    """

    def __init__(
        self, connection: Connection, embedder: Embedder, *, config: KnowledgeConfig | None = None
    ) -> None:
        self.connection = connection
        self.embedder = embedder
        self.config = config or KnowledgeConfig()
        if self.config.chunk_tokens * 4 > embedder.max_chars:
            # A chunk of n estimated tokens has at most 4n characters.
            raise ConfigurationError(
                f"chunk_tokens={self.config.chunk_tokens} makes chunks longer than "
                f"{type(embedder).__name__} embeds ({embedder.max_chars} characters)"
            )
        self.collection = connection.collection(COLLECTION)
        # Every write to this collection goes through this class and is announced, so the
        # plain tier keeps each scope's chunks in memory between searches (a turn reads two
        # generation tokens, not every chunk of both scopes).
        self.target = connection.index_catalog(
            dimensions=embedder.dimensions, similarity=embedder.similarity
        ).target(COLLECTION, snapshot=True)
        self._searcher = make_searcher(
            connection, dimensions=embedder.dimensions, similarity=embedder.similarity
        )
        self._snapshots: Snapshots | None = getattr(self._searcher, "snapshots", None)
        self._generations = connection.collection(GENERATIONS)
        self._embedder_guard = EmbedderGuard(connection, embedder.signature)

    # --- ingest -----------------------------------------------------------------------------

    async def ingest(
        self,
        scope: Scope,
        *,
        source: str,
        text: str,
        metadata: Mapping[str, Any] | None = None,
        title: str | None = None,
        tags: Sequence[str] = (),
    ) -> IngestReport:
        """Chunk, embed and store ``text`` as ``source``, replacing an earlier version of it.
        Everything is validated before anything is written."""
        where = _scope_filter(scope)
        source = check_id(source, "source")
        text = check_text(text, "text", max_chars=self.config.max_text_chars)
        meta = check_mapping(metadata, "metadata") if metadata is not None else {}
        if title is not None:
            title = check_text(title, "title", max_chars=self.config.max_title_chars)
        tag_list = list(dict.fromkeys(check_ids(tags, "tags") or [])) if tags else []
        if len(tag_list) > self.config.max_tags:
            raise InvalidInputError(f"at most {self.config.max_tags} tags")
        settings = {
            "chunk_tokens": self.config.chunk_tokens,
            "overlap_tokens": self.config.overlap_tokens,
        }
        if len(text) > _THREAD_CHARS:  # tens of milliseconds: off the event loop
            chunks = await asyncio.to_thread(chunk_text, text, **settings)
        else:
            chunks = chunk_text(text, **settings)
        if len(chunks) > self.config.max_chunks:
            raise InvalidInputError(
                f"text makes {len(chunks)} chunks; a source holds at most "
                f"{self.config.max_chunks}; split the document into several sources"
            )
        content_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
        fingerprint = hashlib.sha256(
            bson.encode({"h": content_hash, "t": title, "m": meta, "g": tag_list, "c": settings})
        ).hexdigest()
        now = utcnow()
        version = _new_version(now)
        base = {**where, "source": source, "title": title, "metadata": meta, "tags": tag_list}
        documents = [
            self._document(base, chunk, len(chunks), content_hash, fingerprint, version, now)
            for chunk in chunks
        ]
        with translate_errors("ingesting knowledge"):
            _, existing = await asyncio.gather(
                self._embedder_guard.check(),
                self.collection.find(
                    {**where, "source": source},
                    {"_id": 0, "version": 1, "state": 1, "fingerprint": 1, "chunk_count": 1},
                ).to_list(None),
            )
            live = _live_version(existing)
            if live is not None and live["fingerprint"] == fingerprint:
                removed = 0
                if any(row["version"] < live["version"] for row in existing):
                    # Left over by a crash or a concurrent ingest: clean up, re-embed nothing.
                    async with self._announcing(where):
                        result = await self.collection.delete_many(
                            {**where, "source": source, "version": {"$lt": live["version"]}}
                        )
                    removed = result.deleted_count
                return IngestReport(
                    source, "unchanged", live["version"], live["chunks"], removed, content_hash
                )
            vectors = await self.embedder.embed_documents([chunk.content for chunk in chunks])
            for document, vector in zip(documents, vectors, strict=True):
                document["embedding"] = to_bson_vector(vector)
            async with self._announcing(where):
                try:
                    await self.collection.insert_many(documents, ordered=True)
                    await self.collection.update_many(
                        {**where, "source": source, "version": version},
                        {"$set": {"state": "live"}},
                    )
                except Exception:
                    # Pending chunks are invisible; a later ingest removes any this cannot.
                    await _quietly(self.collection.delete_many({**where, "version": version}))
                    raise
                removed = 0
                if existing:
                    result = await self.collection.delete_many(
                        {**where, "source": source, "version": {"$lt": version}}
                    )
                    removed = result.deleted_count
        action = "replaced" if live is not None else "inserted"
        logger.info(
            "knowledge_ingested",
            agent_id=where["agent_id"],
            shared=where["user_id"] == SHARED_USER,
            action=action,
            chunks=len(chunks),
            removed=removed,
        )
        return IngestReport(source, action, version, len(chunks), removed, content_hash)

    def _document(
        self,
        base: dict[str, Any],
        chunk: Chunk,
        count: int,
        content_hash: str,
        fingerprint: str,
        version: str,
        now: datetime,
    ) -> dict[str, Any]:
        document = {
            "_id": new_id("chunk"),
            **base,
            "chunk_index": chunk.index,
            "chunk_count": count,
            "start": chunk.start,
            "end": chunk.end,
            "content": chunk.content,
            # A placeholder of the real size, so the size check below is the final one.
            "embedding": to_bson_vector(np.zeros(self.embedder.dimensions, dtype=np.float32)),
            "content_hash": content_hash,
            "fingerprint": fingerprint,
            "version": version,
            "state": "pending",
            "ingested_at": now,
        }
        check_document_size(document, f"chunk {chunk.index}")
        return document

    # --- retrieve ---------------------------------------------------------------------------

    async def retrieve(
        self,
        tenant: Tenant,
        query: str,
        *,
        k: int = 5,
        query_vector: np.ndarray | None = None,
        sources: str | Sequence[str] | None = None,
        tags: str | Sequence[str] | None = None,
        include_shared: bool = True,
        merge_adjacent: bool = False,
    ) -> list[KnowledgeHit]:
        """The ``k`` chunks that best answer ``query`` from the user's knowledge and (unless
        ``include_shared`` is false) the agent's shared knowledge, best first.

        ``merge_adjacent`` joins hits that are neighbouring chunks of one source into one
        hit (its text stitched without the overlap), so fewer than ``k`` hits may come back.
        """
        if not isinstance(tenant, Tenant):
            raise InvalidInputError("tenant must be a Tenant")
        scopes = [_scope_filter(tenant)]
        if include_shared:
            scopes.append(SharedKnowledge(tenant.agent_id).filter())
        check_count(k, "k", maximum=_MAX_K)
        query = check_text(query, "query", max_chars=MAX_QUERY_CHARS)
        filters: dict[str, Any] = {"state": "live"}  # never another ingest's pending chunks
        if (source_list := check_ids(sources, "sources")) is not None:
            filters["source"] = source_list
        if (tag_list := check_ids(tags, "tags")) is not None:
            filters["tags"] = tag_list
        if query_vector is not None:
            query_vector = np.asarray(query_vector, dtype=np.float32)
            if query_vector.shape != (self.embedder.dimensions,):
                raise InvalidInputError(
                    f"query_vector must have shape ({self.embedder.dimensions},)"
                )
        with translate_errors("retrieving knowledge"):
            embedding = (
                self.embedder.embed_query(query) if query_vector is None else _ready(query_vector)
            )
            _, vector = await asyncio.gather(self._embedder_guard.check(), embedding)
            searches = [
                SearchQuery(
                    tenant=scope,
                    text=query,
                    vector=vector,
                    filters=filters,
                    limit=k * self.config.overfetch,
                )
                for scope in scopes
            ]
            results = await asyncio.gather(
                *(self._searcher.search(self.target, search) for search in searches)
            )
        ranks = _ranks_over_scopes(results)
        hits = [_hit(hit, ranks) for hit in _newest_versions(_by_relevance(results))[:k]]
        return _merge_adjacent(hits) if merge_adjacent else hits

    # --- sources and forgetting ---------------------------------------------------------------

    async def list_sources(self, scope: Scope) -> list[SourceInfo]:
        """The sources stored in ``scope`` (their live versions), by name."""
        where = _scope_filter(scope)
        with translate_errors("listing knowledge sources"):
            docs = await self.collection.find(
                {**where, "state": "live", "chunk_index": 0}, {"embedding": 0, "content": 0}
            ).to_list(None)
        newest: dict[str, dict[str, Any]] = {}
        for doc in docs:
            if doc["source"] not in newest or doc["version"] > newest[doc["source"]]["version"]:
                newest[doc["source"]] = doc
        return [
            SourceInfo(
                source=doc["source"],
                title=doc.get("title"),
                version=doc["version"],
                chunk_count=int(doc["chunk_count"]),
                content_hash=doc["content_hash"],
                ingested_at=doc["ingested_at"],
                shared=doc["user_id"] == SHARED_USER,
                tags=tuple(doc.get("tags") or ()),
                metadata=doc.get("metadata") or {},
            )
            for _, doc in sorted(newest.items())
        ]

    async def delete_source(self, scope: Scope, source: str) -> int:
        """Delete every chunk of ``source`` in ``scope``; returns how many were deleted
        (0 if the scope has no such source, such as another user's)."""
        where = _scope_filter(scope)
        source = check_id(source, "source")
        with translate_errors("deleting a knowledge source"):
            async with self._announcing(where):
                result = await self.collection.delete_many({**where, "source": source})
        logger.info(
            "knowledge_source_deleted", agent_id=where["agent_id"], chunks=result.deleted_count
        )
        return result.deleted_count

    async def forget_user(self, tenant: Tenant) -> dict[str, int]:
        """Delete the user's own knowledge; shared knowledge is the agent's and stays."""
        if not isinstance(tenant, Tenant):
            raise InvalidInputError("forget_user takes a Tenant; use delete_source for shared")
        where = _scope_filter(tenant)
        with translate_errors("forgetting a user's knowledge"):
            result = await self.collection.delete_many(where)
            await erase_tenant(self._snapshots, self._generations, self.target, where)
        return {self.connection.collection_name(COLLECTION): result.deleted_count}

    @contextlib.asynccontextmanager
    async def _announcing(self, where: dict[str, str]) -> AsyncIterator[None]:
        """Announce the scope's writes made inside, also when they fail half-way (what did
        land must be seen by searches); a failed announcement does not hide the write's own
        error."""
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                await announce(self._snapshots, self._generations, self.target, where)
            raise
        await announce(self._snapshots, self._generations, self.target, where)


# --- helpers ----------------------------------------------------------------------------------


async def _ready(value: np.ndarray) -> np.ndarray:
    return value


async def _quietly(operation: Any) -> None:
    try:
        await operation
    except Exception as exc:
        logger.warning("knowledge_cleanup_failed", error=type(exc).__name__)


def _live_version(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The newest live version of a source, if it is complete (all its chunks live)."""
    live = [row for row in rows if row.get("state") == "live"]
    if not live:
        return None
    version = max(row["version"] for row in live)
    mine = [row for row in live if row["version"] == version]
    if len(mine) != mine[0].get("chunk_count"):
        return None
    return {"version": version, "fingerprint": mine[0].get("fingerprint"), "chunks": len(mine)}


def _by_relevance(results: Sequence[list[SearchHit]]) -> list[SearchHit]:
    """The scopes' hits in one ranking, by the relevance the searcher gave each: one scale for
    every search of a target, so hits of two scopes compare without fusing their rankings a
    second time. Ties keep the user's scope first, then each search's own order."""
    merged = [hit for hits in results for hit in hits]
    merged.sort(key=lambda hit: -hit.relevance)  # stable
    return merged


def _ranks_over_scopes(results: Sequence[list[SearchHit]]) -> dict[Any, dict[str, SourceScore]]:
    """Each hit's rank in each source over the hits of every scope searched, by the source's
    raw score (a cosine, a keyword score; ties by the rank within the scope), for
    :meth:`KnowledgeHit.explain`; with one scope, the searcher's own ranks. Explains, never
    orders: the order is the relevance's."""
    if len(results) == 1:
        return {hit.id: dict(hit.sources) for hit in results[0]}
    entries: dict[str, list[tuple[float, int, Any]]] = {}
    for hits in results:
        for hit in hits:
            for name, found in hit.sources.items():
                entries.setdefault(name, []).append((found.score, found.rank, hit.id))
    ranks: dict[Any, dict[str, SourceScore]] = {hit.id: {} for hits in results for hit in hits}
    for name, rows in entries.items():
        rows.sort(key=lambda row: (-row[0], row[1]))
        for rank, (score, _, doc_id) in enumerate(rows, start=1):
            ranks[doc_id][name] = SourceScore(rank=rank, score=score)
    return ranks


def _newest_versions(hits: list[SearchHit]) -> list[SearchHit]:
    """Drop hits of a source's older version while two versions are briefly both live."""
    newest: dict[tuple[str, str], str] = {}
    for hit in hits:
        key = (hit.document["user_id"], hit.document["source"])
        newest[key] = max(newest.get(key, ""), hit.document["version"])
    return [
        hit
        for hit in hits
        if hit.document["version"] == newest[(hit.document["user_id"], hit.document["source"])]
    ]


def _hit(hit: SearchHit, ranks: Mapping[Any, dict[str, SourceScore]]) -> KnowledgeHit:
    doc = hit.document
    return KnowledgeHit(
        id=hit.id,
        source=doc["source"],
        chunk_index=int(doc["chunk_index"]),
        content=doc["content"],
        score=hit.relevance,
        sources=ranks[hit.id],
        shared=doc["user_id"] == SHARED_USER,
        title=doc.get("title"),
        version=doc["version"],
        chunk_indexes=(int(doc["chunk_index"]),),
        metadata=doc.get("metadata") or {},
        start=int(doc.get("start", 0)),
        end=int(doc.get("end", 0)),
    )


def _merge_adjacent(hits: list[KnowledgeHit]) -> list[KnowledgeHit]:
    """Join hits that are consecutive chunks of one version of one source, in score order."""
    groups: dict[tuple[bool, str, str], list[KnowledgeHit]] = {}
    for hit in hits:
        groups.setdefault((hit.shared, hit.source, hit.version), []).append(hit)
    merged: list[KnowledgeHit] = []
    for members in groups.values():
        members.sort(key=lambda h: h.chunk_index)
        run = [members[0]]
        for hit in [*members[1:], None]:
            if hit is not None and hit.chunk_index == run[-1].chunk_index + 1:
                run.append(hit)
                continue
            merged.append(_join(run))
            if hit is not None:
                run = [hit]
    merged.sort(key=lambda h: -h.score)
    return merged


def _join(run: list[KnowledgeHit]) -> KnowledgeHit:
    if len(run) == 1:
        return run[0]
    best = max(run, key=lambda h: h.score)
    return KnowledgeHit(
        id=best.id,
        source=best.source,
        chunk_index=run[0].chunk_index,
        content=stitch([(h.start, h.end, h.content) for h in run]),
        score=best.score,
        sources=best.sources,
        shared=best.shared,
        title=best.title,
        version=best.version,
        chunk_indexes=tuple(h.chunk_index for h in run),
        metadata=best.metadata,
        start=run[0].start,
        end=max(h.end for h in run),
    )

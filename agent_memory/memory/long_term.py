"""Long-term memory: facts, preferences, instructions and learned items per user.

>>> memory = LongTermMemory(connection, embedder)                  # doctest: +SKIP
>>> tenant = Tenant("support-agent", "user-456")                    # doctest: +SKIP
>>> await memory.store(tenant, "Prefers detailed technical answers", memory_type="preference")
>>> hits = await memory.retrieve(tenant, "how should I answer?")    # doctest: +SKIP
>>> print(hits[0].memory.content, hits[0].explain())                # doctest: +SKIP

Round trips: commands sent (and how many of them the caller waits for one after another);
measured with command monitoring and held by ``tests/integration/test_round_trips.py``.

==================================  ====================================  ==========  =========
operation                           commands                              sequential  provider
==================================  ====================================  ==========  =========
store, no key                       find vectors, find candidates,        3           1 embed
                                    insert (+1 find of the embedder
                                    record on an instance's first write)
store, key: new / repeat            find by key, insert / update          2           1 embed
store, key: supersede               find by key, insert + update          2 or 3      1 embed
                                    (one transaction where usable)
store_many(n, consolidate=False)    insert_many                           1           1 embed
retrieve (plain tier)               find vectors (whole documents) and    1           1 embed, 0
                                    $text find concurrently; access                   with a
                                    statistics: coalesced updates, not                vector
                                    awaited
retrieve (Atlas tier)               1 aggregate ($rankFusion) or 2        1
                                    concurrent aggregates; + coalesced
                                    updates, not awaited
get, history, forget, forget_user   1                                     1
==================================  ====================================  ==========  =========
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import structlog
from pymongo import InsertOne, UpdateMany

from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.memory._common import (
    BackgroundWrites,
    Tenant,
    check_count,
    check_document_size,
    check_id,
    check_ids,
    check_importance,
    check_tenant,
    check_text,
    check_vector,
    new_id,
    utcnow,
)
from agent_memory.memory.access import AccessRecorder
from agent_memory.memory.consolidation import Candidate, Decision, decide
from agent_memory.memory.ranking import SourceScaler, score_memory
from agent_memory.memory.records import (
    MEMORY_TYPES,
    LongTermConfig,
    Memory,
    NewMemory,
    RetrievedMemory,
    StoreResult,
)
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.catalog import IndexCatalog
from agent_memory.mongo.connection import Connection
from agent_memory.mongo.embedding_record import EmbedderGuard
from agent_memory.mongo.search import SearchQuery, make_searcher
from agent_memory.mongo.search.types import MAX_QUERY_CHARS
from agent_memory.mongo.transactions import run_in_transaction
from agent_memory.mongo.vectors import to_bson_vector
from agent_memory.providers.chat.base import ChatModel
from agent_memory.providers.embedders.base import Embedder

__all__ = ["LongTermMemory"]

logger = structlog.get_logger(__name__)

COLLECTION = "memories"
_MAX_K = 100
_DECISION_ATTEMPTS = 4


class _StaleDecision(Exception):
    """The memories a decision was about changed before it was applied."""


class LongTermMemory:
    """Store and retrieve a user's long-term memories with explainable ranking.

    ``judge`` is an optional chat model consolidation asks whether a close memory is
    contradicted; without one (or with the offline model) only keyed memories supersede.
    """

    def __init__(
        self,
        connection: Connection,
        embedder: Embedder,
        *,
        config: LongTermConfig | None = None,
        judge: ChatModel | None = None,
    ) -> None:
        self.connection = connection
        self.embedder = embedder
        self.config = config or LongTermConfig()
        self.judge = judge
        self.collection = connection.collection(COLLECTION)
        self.target = IndexCatalog.load(
            dimensions=embedder.dimensions,
            similarity=embedder.similarity,
            prefix=connection.settings.collection_prefix,
        ).target(COLLECTION)
        self._searcher = make_searcher(connection, dimensions=embedder.dimensions)
        self._background = BackgroundWrites()
        self._access = AccessRecorder(self.collection, self._background)
        self._embedder_guard = EmbedderGuard(connection, embedder.signature)

    # --- helpers ----------------------------------------------------------------------------

    def _similarity(self, raw: float) -> float:
        # Atlas reports cosine as (1 + cos) / 2; the plain tier reports cos itself.
        return 2.0 * raw - 1.0 if self.connection.tier == "atlas" else raw

    def _document(
        self, tenant: Tenant, item: NewMemory, vector: np.ndarray, now: datetime
    ) -> dict[str, Any]:
        document: dict[str, Any] = {
            "_id": new_id("mem"),
            **tenant.filter(),
            "memory_type": item.memory_type,
            "content": item.content,
            "embedding": to_bson_vector(vector),
            "importance": item.importance,
            "tags": list(item.tags),
            "key": item.key,
            "status": "active",
            "created_at": now,
            "valid_from": now,
            "valid_to": None,
            "supersedes": [],
            "superseded_by": None,
            "last_accessed": now,
            "access_count": 0,
            "reinforced": 0,
            "feedback": {"count": 0, "sum": 0.0},
            "source": item.source,
            "expires_at": item.expires_at,
            "context": item.context,
            "schema": item.schema,
        }
        check_document_size(document, "the memory")
        return document

    async def _candidates(
        self, tenant: Tenant, item: NewMemory, vector: np.ndarray
    ) -> list[Candidate]:
        if item.key is not None:
            docs = await self.collection.find(
                {**tenant.filter(), "key": item.key, "status": "active"},
                {"content": 1},
            ).to_list(None)
            return [Candidate(doc["_id"], doc["content"]) for doc in docs]
        hits = await self._searcher.search(
            self.target,
            SearchQuery(
                tenant=tenant.filter(),
                vector=vector,
                filters={"memory_type": item.memory_type, "status": "active"},
                limit=3,
            ),
        )
        return [
            Candidate(
                hit.id,
                hit.document.get("content", ""),
                self._similarity(hit.sources["vector"].score),
            )
            for hit in hits
            if "vector" in hit.sources
        ]

    async def _reinforce(self, tenant: Tenant, target: str, item: NewMemory, now: datetime) -> bool:
        step = self.config.reinforce_step
        result = await self.collection.update_one(
            {"_id": target, **tenant.filter(), "status": "active"},
            [
                {
                    "$set": {
                        "importance": {
                            "$min": [
                                1.0,
                                {"$add": [{"$max": ["$importance", item.importance]}, step]},
                            ]
                        },
                        "reinforced": {"$add": [{"$ifNull": ["$reinforced", 0]}, 1]},
                        "last_accessed": now,
                        "tags": {"$setUnion": [{"$ifNull": ["$tags", []]}, list(item.tags)]},
                    }
                }
            ],
        )
        return result.matched_count == 1

    async def _insert(
        self, tenant: Tenant, document: dict[str, Any], supersede: Sequence[str], now: datetime
    ) -> None:
        if not supersede:
            await self.collection.insert_one(document)
            return
        document["supersedes"] = list(supersede)
        operations = [
            InsertOne(document),
            UpdateMany(
                {"_id": {"$in": list(supersede)}, **tenant.filter(), "status": "active"},
                {
                    "$set": {
                        "status": "superseded",
                        "superseded_by": document["_id"],
                        "valid_to": now,
                    }
                },
            ),
        ]
        if not self.connection.capabilities.transactions:
            # Insert first: a crash or a concurrent writer in between leaves two active
            # memories for the key (both true once), never one superseded without a successor;
            # the next memory stored for the key supersedes every active one.
            await self.collection.bulk_write(operations, ordered=True)
            return

        async def work(session: Any) -> None:
            result = await self.collection.bulk_write(operations, ordered=True, session=session)
            if result.modified_count != len(supersede):
                # Another writer superseded them first: decide again on fresh candidates.
                raise _StaleDecision()

        await run_in_transaction(self.connection.client, work)

    async def _apply(
        self, tenant: Tenant, item: NewMemory, vector: np.ndarray, decision: Decision
    ) -> StoreResult:
        now = utcnow()
        if decision.action == "reinforce" and await self._reinforce(
            tenant, decision.targets[0], item, now
        ):
            return StoreResult(decision.targets[0], "reinforced")
        # A reinforce target superseded meanwhile falls through to a plain insert.
        document = self._document(tenant, item, vector, now)
        supersede = decision.targets if decision.action == "supersede" else ()
        await self._insert(tenant, document, supersede, now)
        return StoreResult(
            document["_id"], "superseded" if supersede else "inserted", tuple(supersede)
        )

    async def _consolidate(
        self, tenant: Tenant, item: NewMemory, vector: np.ndarray
    ) -> StoreResult:
        for _ in range(_DECISION_ATTEMPTS - 1):
            try:
                return await self._apply(
                    tenant, item, vector, await self._decide(tenant, item, vector)
                )
            except _StaleDecision:
                continue
        return await self._apply(tenant, item, vector, await self._decide(tenant, item, vector))

    async def _decide(self, tenant: Tenant, item: NewMemory, vector: np.ndarray) -> Decision:
        return await decide(
            item.content,
            key=item.key,
            candidates=await self._candidates(tenant, item, vector),
            # A vector made with context says little about the content alone: neighbouring
            # turns share most of their context. Such a memory repeats another only when the
            # contents are the same text.
            repeat_similarity=self.config.repeat_similarity if not item.context else math.inf,
            judge_similarity=self.config.judge_similarity,
            judge=self.judge,
        )

    # --- writing ------------------------------------------------------------------------------

    async def store(
        self,
        tenant: Tenant,
        content: str,
        *,
        memory_type: str = "fact",
        importance: float | None = None,
        tags: Sequence[str] = (),
        key: str | None = None,
        source: dict[str, Any] | None = None,
        expires_at: datetime | None = None,
        consolidate: bool = True,
    ) -> StoreResult:
        """Store one memory, consolidated with what is stored (see :mod:`.consolidation`)."""
        item = NewMemory(content, memory_type, importance, tags, key, source, expires_at)
        (result,) = await self.store_many(tenant, [item], consolidate=consolidate)
        return result

    async def store_many(
        self, tenant: Tenant, items: Sequence[NewMemory], *, consolidate: bool = True
    ) -> list[StoreResult]:
        """Store several memories with one embedding call. Every item is validated before
        anything is written; an invalid one fails the whole call."""
        tenant = check_tenant(tenant)
        if isinstance(items, NewMemory | str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InvalidInputError(
                f"items must be a non-empty list of NewMemory, got {type(items).__name__}"
            )
        checked = [
            item.checked(self.config) if isinstance(item, NewMemory) else _not_a_memory(item)
            for item in items
        ]
        if not checked:
            raise InvalidInputError("items must be a non-empty list of NewMemory")
        with translate_errors("storing memories"):
            await self._embedder_guard.check()
            vectors = await self.embedder.embed_documents([item.index_text for item in checked])
            if not consolidate:
                now = utcnow()
                documents = [
                    self._document(tenant, item, vector, now)
                    for item, vector in zip(checked, vectors, strict=True)
                ]
                await self.collection.insert_many(documents, ordered=True)
                results = [StoreResult(doc["_id"], "inserted") for doc in documents]
            else:
                results = []
                # In order: a later item may repeat or replace an earlier one of the batch.
                for item, vector in zip(checked, vectors, strict=True):
                    results.append(await self._consolidate(tenant, item, vector))
        logger.info(
            "memories_stored",
            agent_id=tenant.agent_id,
            count=len(results),
            inserted=sum(r.action == "inserted" for r in results),
            reinforced=sum(r.action == "reinforced" for r in results),
            superseded=sum(r.action == "superseded" for r in results),
        )
        return results

    # --- reading ------------------------------------------------------------------------------

    async def retrieve(
        self,
        tenant: Tenant,
        query: str,
        *,
        k: int = 5,
        query_vector: np.ndarray | None = None,
        memory_types: str | Sequence[str] | None = None,
        tags: str | Sequence[str] | None = None,
        include_history: bool = False,
        min_importance: float | None = None,
        now: datetime | None = None,
    ) -> list[RetrievedMemory]:
        """The ``k`` memories that best answer ``query``, ranked by the full score.

        ``query_vector`` reuses an embedding the caller already has (no provider call).
        ``include_history`` also returns superseded memories ("where did I live before?").
        ``min_importance`` is an explicit, opt-in floor; by default nothing is filtered out
        for being unimportant.
        """
        tenant = check_tenant(tenant)
        query = check_text(query, "query", max_chars=MAX_QUERY_CHARS)
        check_count(k, "k", maximum=_MAX_K)
        if min_importance is not None:
            min_importance = check_importance(min_importance, "min_importance")
        if query_vector is not None:
            # Checked here, not deep inside a search (a wrong dimension, strings, NaN).
            query_vector = check_vector(
                query_vector, "query_vector", dimensions=self.embedder.dimensions
            )
        types = check_ids(memory_types, "memory_types")
        if types and set(types) - set(MEMORY_TYPES):
            raise InvalidInputError(f"memory_types must be among {', '.join(MEMORY_TYPES)}")
        tag_list = check_ids(tags, "tags")
        filters: dict[str, Any] = {}
        if types:
            filters["memory_type"] = types
        if tag_list:
            filters["tags"] = tag_list
        now = now or datetime.now(UTC)
        with translate_errors("retrieving memories"):
            vector = (
                query_vector if query_vector is not None else await self.embedder.embed_query(query)
            )
            search = SearchQuery(
                tenant=tenant.filter(),
                text=query,
                vector=vector,
                filters=filters,
                exclude={} if include_history else {"status": "superseded"},
                limit=min(max(k * self.config.overfetch, self.config.min_candidates), 10_000),
            )
            hits = await self._searcher.search(self.target, search)
        scaler = SourceScaler(
            [hit.sources for hit in hits],
            search.weights,
            min_spread=self.config.ranking.relevance_spread,
        )
        ranked = []
        for hit in hits:
            doc = hit.document
            expires = doc.get("expires_at")
            if isinstance(expires, datetime) and expires <= now:
                continue  # expired; the TTL monitor has not removed it yet
            if min_importance is not None and float(doc.get("importance", 0.0)) < min_importance:
                continue
            breakdown = score_memory(
                doc, relevance=scaler.relevance(hit.sources), now=now, weights=self.config.ranking
            )
            ranked.append(
                RetrievedMemory(Memory.from_document(doc), breakdown.total, breakdown, hit.sources)
            )
        ranked.sort(key=lambda item: -item.score)
        ranked = ranked[:k]
        if ranked:
            self._access.record(tenant, [item.memory.id for item in ranked], now)
        return ranked

    async def get(self, tenant: Tenant, memory_id: str) -> Memory:
        tenant = check_tenant(tenant)
        check_id(memory_id, "memory_id")
        with translate_errors("reading a memory"):
            doc = await self.collection.find_one(
                {"_id": memory_id, **tenant.filter()}, {"embedding": 0}
            )
        if doc is None:
            raise NotFoundError(f"no memory {memory_id!r} for this user")
        return Memory.from_document(doc)

    async def list_memories(
        self,
        tenant: Tenant,
        *,
        memory_types: str | Sequence[str] | None = None,
        include_inactive: bool = False,
        limit: int = 50,
    ) -> list[Memory]:
        """The user's memories, newest first: at most ``limit``, active ones only unless
        ``include_inactive`` (superseded and archived memories too). Round trips: 1."""
        tenant = check_tenant(tenant)
        limit = check_count(limit, "limit", maximum=1000)
        query: dict[str, Any] = dict(tenant.filter())
        if memory_types is not None:
            types = check_ids(memory_types, "memory_types")
            if not set(types) <= set(MEMORY_TYPES):
                raise InvalidInputError(f"memory_types must be among {', '.join(MEMORY_TYPES)}")
            query["memory_type"] = {"$in": list(types)}
        if not include_inactive:
            query["status"] = "active"
        with translate_errors("listing memories"):
            docs = (
                await self.collection.find(query, {"embedding": 0})
                .sort([("valid_from", -1), ("_id", -1)])
                .limit(limit)
                .to_list(limit)
            )
        return [Memory.from_document(doc) for doc in docs]

    async def history(self, tenant: Tenant, *, key: str) -> list[Memory]:
        """Every memory ever stored under ``key``, the current one first."""
        tenant = check_tenant(tenant)
        check_id(key, "key")
        with translate_errors("reading memory history"):
            docs = (
                await self.collection.find({**tenant.filter(), "key": key}, {"embedding": 0})
                .sort([("valid_from", -1), ("_id", -1)])
                .to_list(None)
            )
        return [Memory.from_document(doc) for doc in docs]

    # --- forgetting ---------------------------------------------------------------------------

    async def forget(self, tenant: Tenant, memory_id: str) -> None:
        """Delete one memory of this user (another user's id is not found)."""
        tenant = check_tenant(tenant)
        check_id(memory_id, "memory_id")
        with translate_errors("forgetting a memory"):
            result = await self.collection.delete_one({"_id": memory_id, **tenant.filter()})
        if result.deleted_count == 0:
            raise NotFoundError(f"no memory {memory_id!r} for this user")
        logger.info("memory_forgotten", agent_id=tenant.agent_id)

    async def forget_user(self, tenant: Tenant) -> dict[str, int]:
        tenant = check_tenant(tenant)
        with translate_errors("forgetting a user's memories"):
            result = await self.collection.delete_many(tenant.filter())
        return {self.connection.collection_name(COLLECTION): result.deleted_count}

    async def drain(self) -> None:
        """Wait for writes that were not awaited (access statistics)."""
        await self._background.drain()

    async def aclose(self) -> None:
        await self.drain()


def _not_a_memory(item: object) -> NewMemory:
    raise InvalidInputError(f"items must be NewMemory objects, got {type(item).__name__}")

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
store, no key                       find token (candidates are ranked     3           1 embed
                                    from the kept memories), insert,
                                    update token
  ... first use in a process        + find of the embedder record, and
                                    the tenant's memories read once
                                    (plain tier: create token, 1-2 finds)
store, key: new / repeat            find by key, insert + update token /  3 / 2       1 embed
                                    update
store, key: supersede               find by key, insert + update, update  3 or 4      1 embed
                                    token (one transaction where usable)
store_many(n), all new              n finds of the token, then            n + 2       1 embed
                                    insert_many + update token (new
                                    memories wait and go in together;
                                    a reinforce or supersede first
                                    writes those waiting)
store_many(n, consolidate=False)    insert_many, update token             2           1 embed
retrieve (plain tier)               find token by _id, then the kept      1           1 embed, 0
                                    memories are ranked; when another                 with a
                                    writer changed them, + 1-2 finds to               vector
                                    read them again; access statistics:
                                    coalesced updates, not awaited
retrieve (Atlas tier)               1 aggregate ($rankFusion) or 2        1
                                    concurrent aggregates; + coalesced
                                    updates, not awaited
get, history                        1                                     1
forget                              delete, update token                  2
forget_user                         delete, delete field vectors, delete  3
                                    token
==================================  ====================================  ==========  =========

Every write announces itself (the tenant's token in ``search_generations``, see
:mod:`agent_memory.mongo.search.snapshots`) so that searches in every process see it; a write
to the collection made around this class must call :meth:`LongTermMemory.announce`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from pymongo import InsertOne, ReturnDocument, UpdateMany, UpdateOne

from agent_memory._log import get_logger
from agent_memory.checks import (
    check_count,
    check_document_size,
    check_id,
    check_ids,
    check_importance,
    check_int,
    check_mapping,
    check_moment,
    check_text,
    check_vector,
)
from agent_memory.errors import AgentMemoryError, InvalidInputError, NotFoundError
from agent_memory.memory.background import BackgroundWrites
from agent_memory.memory.long_term.access import AccessRecorder
from agent_memory.memory.long_term.change import tells_change
from agent_memory.memory.long_term.consolidation import Candidate, Decision, decide
from agent_memory.memory.long_term.fields import (
    FIELD,
    FIELDS_TAG,
    NOT_FIELD,
    best_per_memory,
    by_fields,
    fields_of,
    replace_fields,
    stale_fields,
)
from agent_memory.memory.long_term.ranking import (
    ScoreBreakdown,
    order_current_first,
    score_memory,
)
from agent_memory.memory.long_term.records import (
    MEMORY_TYPES,
    NEIGHBOURS,
    LongTermConfig,
    Memory,
    NewMemory,
    RetrievedMemory,
    StoreResult,
    check_content,
    check_tags,
    updates_of,
)
from agent_memory.memory.long_term.trail import TRAIL_FIELD, trail_append, trail_start
from agent_memory.memory.long_term.when import asks_when, spans_in, tells_time
from agent_memory.mongo import _driver
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.batches import delete_in, distinct_in, find_in, slices, update_in
from agent_memory.mongo.connection import Connection
from agent_memory.mongo.embedding_record import EmbedderGuard
from agent_memory.mongo.search import SearchHit, SearchQuery, make_searcher
from agent_memory.mongo.search.corpus import searchable_text
from agent_memory.mongo.search.snapshots import (
    GENERATIONS,
    Change,
    Snapshots,
    announce,
    erase_tenant,
)
from agent_memory.mongo.search.types import MAX_QUERY_CHARS, SourceScore
from agent_memory.mongo.transactions import run_in_transaction
from agent_memory.mongo.vectors import from_bson_vector, to_bson_vector
from agent_memory.providers.chat.base import ChatModel
from agent_memory.providers.embedders.base import Embedder
from agent_memory.providers.rerankers.base import Reranker
from agent_memory.stamps import new_id, utcnow
from agent_memory.tenancy import Tenant, check_tenant

__all__ = ["LongTermMemory"]

logger = get_logger(__name__)

#: The most memories :meth:`LongTermMemory.browse` skips or reads in one call.
_MAX_BROWSE = 100_000

COLLECTION = "memories"
#: When what a memory says was said (``NewMemory.occurred_at``): the field spans of time
#: (``retrieve``'s ``since``/``until``) read.
EVENT_TIME = "occurred_at"
_MAX_K = 100
#: Spans of time read from one question: a question names one or two; a long text made of
#: time words (8,000 characters name 1,500) is scored against the first ones only.
_MAX_SPANS = 16
_DECISION_ATTEMPTS = 4
#: Items of a batch whose candidates are searched together at most (see ``_search_ahead``).
_SEARCHED_AHEAD = 16
#: Atlas tier: at most this many of the tenant's most recent memories of a type are compared
#: by the framework itself, besides ``$vectorSearch``'s candidates.
_RECENT_LIMIT = 200
#: What consolidation reads of the active memories of a key.
_KEYED_FIELDS = {
    "content": 1,
    "source.messages_through": 1,
    "last_said": 1,
    "occurred_at": 1,
    "restated_at": 1,
    "created_at": 1,
    "indexed": 1,
    "tags": 1,
}
#: The most memories :meth:`LongTermMemory.similar` returns.
_MAX_SIMILAR = 1_000
#: The fields :meth:`LongTermMemory.grouped` groups by.
_GROUPABLE = frozenset({"source.namespace", "memory_type"})


class _Keep:
    """The default of an argument that leaves a stored value as it is."""


_KEEP = _Keep()


def _cosine(vector: np.ndarray, other: np.ndarray) -> float:
    return float(np.dot(vector, other)) / (
        (float(np.linalg.norm(vector)) or 1.0) * (float(np.linalg.norm(other)) or 1.0)
    )


def _said(source: Any) -> str | None:
    """Where a memory was said, from its ``source``: the ``seq`` of the last message formed
    into it (set by memory formation), or ``None`` when not known."""
    said = source.get("messages_through") if isinstance(source, dict) else None
    return said if isinstance(said, str) else None


def _last_said(document: dict[str, Any]) -> str | None:
    """Where a stored memory was said last: its ``last_said`` (the latest restatement that
    reinforced it) or, never restated, where it was first said."""
    last = document.get("last_said")
    return last if isinstance(last, str) else _said(document.get("source"))


def _last_occurred(document: Mapping[str, Any]) -> datetime | None:
    """When a stored memory was last said by event time: its latest restatement's, or its
    own (``created_at`` for a memory stored before event times were kept)."""
    times = [
        t
        for t in (
            document.get("restated_at"),
            document.get("occurred_at") or document.get("created_at"),
        )
        if isinstance(t, datetime)
    ]
    return max(times, default=None)


def _comparable(document: Mapping[str, Any], item: NewMemory) -> str:
    """The text ``item`` is compared with to find a repeat: the document's content, or none
    when it is indexed differently (a put that changes how a memory is found, with or without
    a vector, by its own vector or its fields', replaces it)."""
    indexed = document.get("indexed", True) is not False
    by_fields = FIELDS_TAG in (document.get("tags") or ())
    same = indexed == item.indexed and by_fields == (FIELDS_TAG in item.tags)
    return document["content"] if same else ""


def _searched_for(item: NewMemory, vector: np.ndarray | None) -> bool:
    """Whether deciding ``item`` searches the stored memories by its vector (a keyed item
    reads its key's memories instead; one without a vector is not compared)."""
    return item.key is None and vector is not None


def _likely_updates(
    item: NewMemory, neighbours: Sequence[Candidate], occurred: datetime
) -> list[str]:
    """The memories ``item`` likely updates: when it announces a change (:mod:`.change`) and
    has no key (a key's memories supersede each other), those of its nearest that were said
    before it."""
    if item.key is not None or not neighbours or not tells_change(item.content):
        return []
    return [
        neighbour.id
        for neighbour in neighbours[:NEIGHBOURS]
        if neighbour.occurred is not None and neighbour.occurred < occurred
    ]


def _candidates_query(tenant: Tenant, item: NewMemory, vector: np.ndarray) -> SearchQuery:
    """The search for the stored memories a new unkeyed memory may repeat or replace."""
    return SearchQuery(
        tenant=tenant.filter(),
        vector=vector,
        filters={"memory_type": item.memory_type, "status": "active"},
        limit=NEIGHBOURS,
    )


def _with_pending(
    candidates: list[Candidate],
    item: NewMemory,
    vector: np.ndarray | None,
    pending: Sequence[tuple[dict[str, Any], np.ndarray | None]],
) -> list[Candidate]:
    """``candidates`` from the collection joined by the batch's memories not yet inserted
    that the same search would have found: for a key, its active memories; otherwise the
    most similar memories of the same type (the search's limit of three in all)."""
    if item.key is not None:
        return candidates + [
            Candidate(
                document["_id"],
                _comparable(document, item),
                said=_last_said(document),
                occurred=_last_occurred(document),
            )
            for document, _ in pending
            if document["key"] == item.key
        ]
    same_type = [
        (doc, vec)
        for doc, vec in pending
        if doc["memory_type"] == item.memory_type and vec is not None
    ]
    if not same_type:
        return candidates
    joined = candidates + [
        Candidate(
            document["_id"],
            document["content"],
            _cosine(vector, other),
            occurred=_last_occurred(document),
            keyed=document.get("key") is not None,
        )
        for document, other in same_type
    ]
    joined.sort(key=lambda c: -(c.similarity if c.similarity is not None else math.inf))
    return joined[:NEIGHBOURS]


class _StaleDecision(Exception):
    """The memories a decision was about changed before it was applied."""


class LongTermMemory:
    """Store and retrieve a user's long-term memories with explainable ranking.

    ``judge`` is an optional chat model consolidation asks whether a close memory is
    contradicted; without one (or with the offline model) only keyed memories supersede.
    ``reranker`` is an optional second stage (:mod:`agent_memory.providers.rerankers`): the
    search's best ``config.rerank_candidates`` are scored again by it, and its score is the
    relevance; a reranker that fails leaves the search's own ranking, with a warning.
    """

    def __init__(
        self,
        connection: Connection,
        embedder: Embedder,
        *,
        config: LongTermConfig | None = None,
        judge: ChatModel | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.connection = connection
        self.embedder = embedder
        self.config = config or LongTermConfig()
        self.judge = judge
        self.reranker = reranker
        self.collection = connection.collection(COLLECTION)
        # Every write to this collection goes through this class and is announced, so the
        # plain tier may keep a tenant's memories in memory between searches.
        self.target = connection.index_catalog(
            dimensions=embedder.dimensions, similarity=embedder.similarity
        ).target(COLLECTION, snapshot=True, omit=(TRAIL_FIELD,))  # no search reads the trail
        self._searcher = make_searcher(
            connection, dimensions=embedder.dimensions, similarity=embedder.similarity
        )
        # The kept corpora of the plain tier (and of the Atlas tier's keyword ranking in the
        # vector layout): every write is announced to them.
        self._snapshots: Snapshots | None = getattr(self._searcher, "snapshots", None)
        self._generations = connection.collection(GENERATIONS)
        self._background = BackgroundWrites(connection)
        self._access = AccessRecorder(self.collection, self._background)
        self._embedder_guard = EmbedderGuard(connection, embedder.signature)

    # --- helpers ----------------------------------------------------------------------------

    def _document(
        self,
        tenant: Tenant,
        item: NewMemory,
        vector: np.ndarray | None,
        now: datetime,
        neighbours: Sequence[Candidate] = (),
    ) -> dict[str, Any]:
        """The document of a new memory; ``neighbours``: the stored memories consolidation
        compared it with, among which one that announces a change finds what it updates."""
        # When it was said: the event time given, else now. Its facts hold from then
        # (valid_from), and its recency counts from then until it is used.
        occurred = item.occurred_at or now
        document: dict[str, Any] = {
            "_id": new_id("mem"),
            **tenant.filter(),
            "memory_type": item.memory_type,
            "content": item.content,
            "importance": item.importance,
            "tags": list(item.tags),
            "key": item.key,
            "status": "active",
            "created_at": now,
            "occurred_at": occurred,
            # Whether it tells a time of its own ("last week"): raised for questions asking when.
            "tells_time": tells_time(item.content, occurred),
            "valid_from": occurred,
            "valid_to": None,
            "supersedes": [],
            "superseded_by": None,
            "updates": _likely_updates(item, neighbours, occurred),
            "last_accessed": occurred,
            "access_count": 0,
            "reinforced": 0,
            "feedback": {"count": 0, "sum": 0.0},
            "source": item.source,
            "expires_at": item.expires_at,
            "context": item.context,
            "schema": item.schema,
            TRAIL_FIELD: trail_start(item.importance, now),
        }
        if vector is None:
            document["indexed"] = False  # no vector: no search finds it (NewMemory.indexed)
        else:
            document["embedding"] = to_bson_vector(vector)
        check_document_size(document, "the memory")
        return document

    async def _candidates(
        self,
        tenant: Tenant,
        item: NewMemory,
        vector: np.ndarray | None,
        recent: dict[str, list[dict[str, Any]]] | None = None,
        keyed: dict[str, list[dict[str, Any]]] | None = None,
        found: list[SearchHit] | None = None,
    ) -> list[Candidate]:
        if item.key is not None:
            docs = None if keyed is None else keyed.get(item.key)
            if docs is None:
                docs = await self.collection.find(
                    {**tenant.filter(), "key": item.key, "status": "active"},
                    _KEYED_FIELDS,
                ).to_list(None)
            return [
                Candidate(
                    doc["_id"],
                    _comparable(doc, item),
                    said=_last_said(doc),
                    occurred=_last_occurred(doc),
                )
                for doc in docs
            ]
        hits = found
        if hits is None:
            hits = await self._searcher.search(self.target, _candidates_query(tenant, item, vector))
        candidates = [
            Candidate(
                hit.id,
                hit.document.get("content", ""),
                hit.sources["vector"].score,  # a cosine on either tier
                occurred=_last_occurred(hit.document),
                keyed=hit.document.get("key") is not None,
            )
            for hit in hits
            if "vector" in hit.sources
        ]
        if self._searcher.sees_writes_at_once or self.config.recent_writes_s <= 0:
            return candidates  # the search finds what is stored now
        return await self._with_recent(tenant, item, vector, candidates, recent)

    async def _with_recent(
        self,
        tenant: Tenant,
        item: NewMemory,
        vector: np.ndarray,
        candidates: list[Candidate],
        cache: dict[str, list[dict[str, Any]]] | None,
    ) -> list[Candidate]:
        """``candidates`` joined by the tenant's memories of the type stored in the last
        ``recent_writes_s``, compared here. Atlas's search index catches up with writes
        asynchronously, so ``$vectorSearch`` does not see a memory stored a moment ago: the
        same fact told twice in a row would be stored twice, a contradiction not superseded.
        One indexed read (``tenant_type_created``) of at most :data:`_RECENT_LIMIT` documents,
        once per memory type for a batch (``cache``, which the batch empties whenever it
        writes anything but the memories it keeps waiting)."""
        recent = None if cache is None else cache.get(item.memory_type)
        if recent is None:
            since = datetime.now(UTC) - timedelta(seconds=self.config.recent_writes_s)
            recent = await self.collection.find(
                {
                    **tenant.filter(),
                    "memory_type": item.memory_type,
                    "status": "active",
                    "created_at": {"$gte": since},
                },
                {
                    "content": 1,
                    "key": 1,
                    "occurred_at": 1,
                    "restated_at": 1,
                    "created_at": 1,
                    self.target.vector_path: 1,
                },
                sort=[("created_at", -1)],
                limit=_RECENT_LIMIT,
            ).to_list(None)
            if cache is not None:
                cache[item.memory_type] = recent
        if not recent:
            return candidates
        by_id = {candidate.id: candidate for candidate in candidates}
        for document in recent:
            try:
                stored = from_bson_vector(document.get(self.target.vector_path))
            except (InvalidInputError, ValueError, TypeError):
                continue  # no usable vector (written by hand): nothing to compare
            if stored.shape != vector.shape:
                continue  # another embedder's vector: not comparable
            by_id[document["_id"]] = Candidate(
                document["_id"],
                document.get("content", ""),
                _cosine(vector, stored),
                occurred=_last_occurred(document),
                keyed=document.get("key") is not None,
            )
        joined = sorted(by_id.values(), key=lambda c: -(c.similarity or 0.0))
        return joined[:NEIGHBOURS]

    async def _reinforce(self, tenant: Tenant, target: str, item: NewMemory, now: datetime) -> bool:
        step = self.config.reinforce_step
        # Said again: the fact is as late as its latest statement, so a change said before
        # this restatement but formed after it (sessions formed out of order) stays history.
        said = _said(item.source)
        restated = (
            {"last_said": {"$max": [{"$ifNull": ["$last_said", "$source.messages_through"]}, said]}}
            if said is not None
            else {}
        )
        # Within one $set, "$importance" is the value before it: the trail gets the new value
        # from the same expression.
        importance = {"$min": [1.0, {"$add": [{"$max": ["$importance", item.importance]}, step]}]}
        # Said again at its event time (now unless given): used then, and restated then.
        occurred = item.occurred_at or now
        first = {"$ifNull": ["$occurred_at", "$created_at"]}
        result = await self.collection.update_one(
            {"_id": target, **tenant.filter(), "status": "active"},
            [
                {
                    "$set": {
                        "importance": importance,
                        TRAIL_FIELD: trail_append(importance, now, "reinforced"),
                        "reinforced": {"$add": [{"$ifNull": ["$reinforced", 0]}, 1]},
                        "last_accessed": {"$max": ["$last_accessed", occurred]},
                        "restated_at": {"$max": [{"$ifNull": ["$restated_at", first]}, occurred]},
                        "tags": {"$setUnion": [{"$ifNull": ["$tags", []]}, list(item.tags)]},
                        **restated,
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
            await self._announce(tenant, Change(added=[document]))
            return
        document["supersedes"] = list(supersede)
        # They held until the new memory's statement (its event time; now unless given).
        superseded = {
            "$set": {
                "status": "superseded",
                "superseded_by": document["_id"],
                "valid_to": document["valid_from"],
            }
        }
        operations = [
            InsertOne(document),
            *(
                UpdateMany(
                    {"_id": {"$in": part}, **tenant.filter(), "status": "active"}, superseded
                )
                for part in slices(supersede)
            ),
        ]
        change = Change(
            added=[document], fields={old: {"status": "superseded"} for old in supersede}
        )
        if not self.connection.capabilities.transactions:
            # Insert first: a crash or a concurrent writer in between leaves two active
            # memories for the key (both true once), never one superseded without a successor;
            # the next memory stored for the key supersedes every active one.
            await self.collection.bulk_write(operations, ordered=True)
            await self._announce(tenant, change)
            return

        async def work(session: Any) -> None:
            result = await self.collection.bulk_write(operations, ordered=True, session=session)
            if result.modified_count != len(supersede):
                # Another writer superseded them first: decide again on fresh candidates.
                raise _StaleDecision()

        await run_in_transaction(self.connection.client, work)
        await self._announce(tenant, change)

    async def _apply(
        self, tenant: Tenant, item: NewMemory, vector: np.ndarray | None, decision: Decision
    ) -> StoreResult:
        now = utcnow()
        if decision.action == "reinforce" and await self._reinforce(
            tenant, decision.targets[0], item, now
        ):
            if item.tags:  # tags are filtered on: every search must see the new ones
                await self._announce(tenant, Change(touched=[decision.targets[0]]))
            else:  # importance and recency: this process's searches at once, as for accesses
                self._touch_reinforced(tenant, decision.targets[0], item, now)
            return StoreResult(decision.targets[0], "reinforced")
        # A reinforce target superseded meanwhile falls through to a plain insert.
        document = self._document(tenant, item, vector, now, decision.neighbours)
        if decision.action == "outdated":
            # History from the start: what was said before the active memory of the key.
            newer = decision.targets[0]
            current = await self.collection.find_one(
                {"_id": newer, **tenant.filter()}, {"valid_from": 1}
            )
            # Valid until the later statement; listed right after it in the key's history
            # (from its own event time when that is earlier).
            until = current["valid_from"] if current else now
            start = until - timedelta(milliseconds=1)
            if item.occurred_at is not None:
                start = min(start, item.occurred_at)
            document.update(
                status="superseded",
                superseded_by=newer,
                valid_from=start,
                valid_to=until,
            )
            await self.collection.insert_one(document)
            await self._announce(tenant, Change(added=[document]))
            return StoreResult(document["_id"], "outdated", (newer,))
        supersede = decision.targets if decision.action == "supersede" else ()
        await self._insert(tenant, document, supersede, now)
        return StoreResult(
            document["_id"], "superseded" if supersede else "inserted", tuple(supersede)
        )

    async def _consolidate(
        self, tenant: Tenant, item: NewMemory, vector: np.ndarray | None, decision: Decision
    ) -> StoreResult:
        for _ in range(_DECISION_ATTEMPTS - 1):
            try:
                return await self._apply(tenant, item, vector, decision)
            except _StaleDecision:
                decision = await self._decide(tenant, item, vector)
        return await self._apply(tenant, item, vector, decision)

    async def _decide(
        self,
        tenant: Tenant,
        item: NewMemory,
        vector: np.ndarray | None,
        pending: Sequence[tuple[dict[str, Any], np.ndarray | None]] = (),
        recent: dict[str, list[dict[str, Any]]] | None = None,
        keyed: dict[str, list[dict[str, Any]]] | None = None,
        found: list[SearchHit] | None = None,
    ) -> Decision:
        if vector is None:
            if item.key is None:
                return Decision("insert", reason="not indexed: nothing to compare it with")
            candidates = await self._candidates(tenant, item, vector, recent, keyed)
            return await decide(
                item.content,
                key=item.key,
                candidates=candidates + _with_pending([], item, vector, pending),
                repeat_similarity=math.inf,
                judge_similarity=math.inf,
                judge=None,
                said=_said(item.source),
                occurred=item.occurred_at,
            )
        candidates = await self._candidates(tenant, item, vector, recent, keyed, found)
        if pending:
            candidates = _with_pending(candidates, item, vector, pending)
        decision = await decide(
            item.content,
            key=item.key,
            candidates=candidates,
            # A memory with context is a turn of a conversation: two turns that say nearly
            # the same ("Yes, I loved it!") in different places are different memories. Such a
            # memory repeats another only when the contents are the same text.
            repeat_similarity=self.config.repeat_similarity if not item.context else math.inf,
            judge_similarity=self.config.judge_similarity,
            judge=self.judge,
            said=_said(item.source),
            occurred=item.occurred_at,
        )
        return replace(decision, neighbours=tuple(candidates))

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
        occurred_at: datetime | None = None,
    ) -> StoreResult:
        """Store one memory, consolidated with what is stored (see :mod:`.consolidation`).
        ``occurred_at``: when it was said or happened, if not now (``NewMemory.occurred_at``)."""
        item = NewMemory(
            content, memory_type, importance, tags, key, source, expires_at, occurred_at=occurred_at
        )
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
            vectors, field_vectors = await self._embed(checked)
            try:
                results = await self._write(tenant, checked, vectors, consolidate)
                await self._store_fields(tenant, checked, results, field_vectors)
            except BaseException:
                # A failure half-way: what did land must still be found by searches.
                with contextlib.suppress(Exception):
                    await self._announce(tenant)
                raise
        logger.info(
            "memories_stored",
            agent_id=tenant.agent_id,
            count=len(results),
            inserted=sum(r.action == "inserted" for r in results),
            reinforced=sum(r.action == "reinforced" for r in results),
            superseded=sum(r.action == "superseded" for r in results),
            outdated=sum(r.action == "outdated" for r in results),
        )
        return results

    async def _vectors(self, items: Sequence[NewMemory]) -> list[np.ndarray | None]:
        """One embedding call for the indexed items; ``None`` for the others."""
        return (await self._embed(items))[0]

    async def _embed(
        self, items: Sequence[NewMemory]
    ) -> tuple[list[np.ndarray | None], list[list[np.ndarray]]]:
        """The vector of each indexed item (``None`` for the others) and the vectors of each
        item's field texts (:mod:`.fields`, when two or more), in one embedding call."""
        fielded = [
            list(item.field_texts or ()) if len(item.field_texts or ()) > 1 else []
            for item in items
        ]
        texts = [item.vector_text(self.config) for item in items if item.indexed]
        texts += [text for field_texts in fielded for text in field_texts]
        if not texts:
            return [None] * len(items), [[] for _ in items]
        await self._embedder_guard.check()
        embedded = iter(await self.embedder.embed_documents(texts))
        vectors = [next(embedded) if item.indexed else None for item in items]
        return vectors, [[next(embedded) for _ in field_texts] for field_texts in fielded]

    async def _store_fields(
        self,
        tenant: Tenant,
        items: Sequence[NewMemory],
        results: Sequence[StoreResult],
        field_vectors: Sequence[Sequence[np.ndarray]],
    ) -> None:
        change = await replace_fields(self.collection, tenant, items, results, field_vectors)
        if change is not None:
            await self._announce(tenant, change)

    async def _write(
        self,
        tenant: Tenant,
        checked: Sequence[NewMemory],
        vectors: Sequence[np.ndarray | None],
        consolidate: bool,
    ) -> list[StoreResult]:
        if not consolidate:
            now = utcnow()
            documents = [
                self._document(tenant, item, vector, now)
                for item, vector in zip(checked, vectors, strict=True)
            ]
            await self.collection.insert_many(documents, ordered=True)
            await self._announce(tenant, Change(added=documents))
            return [StoreResult(doc["_id"], "inserted") for doc in documents]
        # In order: a later item may repeat or replace an earlier one of the batch. New
        # memories wait in `pending` (candidates for the items after them) and are inserted
        # together, before any other write and at the end: one insert and one announcement
        # for a run of new memories instead of one each.
        results: list[StoreResult] = []
        pending: list[tuple[dict[str, Any], np.ndarray | None]] = []
        # Atlas tier: the recent memories read for consolidation, per type, for the batch.
        recent: dict[str, list[dict[str, Any]]] = {}
        # The active memories of the batch's keys, read once (a key is read again after the
        # batch writes to it).
        keyed = await self._keyed(tenant, checked)
        # The candidates of the items still to decide, searched together where the searcher
        # answers several queries for less than one each (the plain tier: one product of
        # the kept vectors with all of theirs); searched again after any write but the
        # batch's own new memories (which wait in `pending` and are compared here).
        found: dict[int, list[SearchHit]] = {}
        for index, (item, vector) in enumerate(zip(checked, vectors, strict=True)):
            if index not in found and _searched_for(item, vector):
                found = await self._search_ahead(tenant, checked, vectors, index)
            decision = await self._decide(
                tenant, item, vector, pending, recent, keyed, found.pop(index, None)
            )
            if decision.action == "insert":
                document = self._document(tenant, item, vector, utcnow(), decision.neighbours)
                pending.append((document, vector))
                results.append(StoreResult(document["_id"], "inserted"))
                continue
            await self._insert_pending(tenant, pending)
            for written, _ in pending:  # now in the collection: read its key again
                keyed.pop(written.get("key"), None)
            if item.key is None:
                keyed.clear()  # it may reinforce a keyed memory found by its vector
            else:
                keyed.pop(item.key, None)
            pending = []
            recent.clear()  # reinforced, superseded or inserted: read again
            found = {}  # the stored memories changed: search again
            results.append(await self._consolidate(tenant, item, vector, decision))
        await self._insert_pending(tenant, pending)
        return results

    async def _search_ahead(
        self,
        tenant: Tenant,
        items: Sequence[NewMemory],
        vectors: Sequence[np.ndarray | None],
        start: int,
    ) -> dict[int, list[SearchHit]]:
        """The candidate searches of the next :data:`_SEARCHED_AHEAD` items from ``start``
        on, by their index, when the searcher answers them together (otherwise each is
        searched when it is decided). A bounded window: a write in the batch discards what
        was searched for the items after it."""
        if not self._searcher.answers_together:
            return {}
        wanted = [
            index
            for index in range(start, len(items))
            if _searched_for(items[index], vectors[index])
        ][:_SEARCHED_AHEAD]
        answers = await self._searcher.search_many(
            self.target,
            [_candidates_query(tenant, items[index], vectors[index]) for index in wanted],
        )
        return dict(zip(wanted, answers, strict=True))

    async def _keyed(
        self, tenant: Tenant, items: Sequence[NewMemory]
    ) -> dict[str, list[dict[str, Any]]]:
        keys = sorted({item.key for item in items if item.key is not None})
        if len(keys) < 2:
            return {}
        found: dict[str, list[dict[str, Any]]] = {key: [] for key in keys}
        docs = await find_in(
            self.collection,
            keys,
            lambda part: {**tenant.filter(), "key": {"$in": part}, "status": "active"},
            {**_KEYED_FIELDS, "key": 1},
        )
        for doc in docs:
            found[doc["key"]].append(doc)
        return found

    async def _insert_pending(
        self, tenant: Tenant, pending: Sequence[tuple[dict[str, Any], np.ndarray | None]]
    ) -> None:
        if not pending:
            return
        documents = [document for document, _ in pending]
        await self.collection.insert_many(documents, ordered=True)
        await self._announce(tenant, Change(added=documents))

    async def announce(self, tenant: Tenant) -> None:
        """Call after writing to this collection other than through this class: searches
        (in every process) then read the tenant's memories again."""
        with translate_errors("announcing a write"):
            await self._announce(check_tenant(tenant))

    async def _announce(self, tenant: Tenant, change: Change | None = None) -> None:
        """Tell every process's search that this tenant's memories changed; a corpus this
        instance keeps follows ``change`` when nobody else wrote meanwhile."""
        await announce(self._snapshots, self._generations, self.target, tenant.filter(), change)

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
        learn: bool = True,
        learn_above: float | None = None,
        record_access: bool = True,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[RetrievedMemory]:
        """The ``k`` memories that best answer ``query``, ranked by the full score.

        ``query_vector`` reuses an embedding the caller already has (no provider call).
        ``include_history`` also returns superseded memories ("where did I live before?").
        ``min_importance`` is an explicit, opt-in floor; by default nothing is filtered out
        for being unimportant. ``learn`` false: the query is ranked with the user's keyword
        trust but does not count in it (the agent passes it for messages that ask nothing;
        agent_memory/mongo/search/trust.py); ``learn_above`` counts it only when some memory's
        cosine similarity to the query reaches it (the agent passes its strong-match
        threshold, so questions no memory answers teach nothing). ``record_access`` false:
        the memories found are not counted as used (their recency and access count stay), for
        someone looking at what the agent would recall rather than the agent recalling it
        (the memory console).

        ``since`` / ``until`` (timezone-aware datetimes) keep the search to memories said or
        done in that span of time, by event time (``NewMemory.occurred_at``, else when the
        memory was stored): from ``since`` included to ``until`` not included, either side
        open when not given ("what did I tell you in March?"). A memory restated later keeps
        the time it was first said. On Atlas the span is applied inside both search stages,
        as the tenant is.

        Each result's ``sources`` holds its rank in every ranking that found it: ``vector``,
        ``text`` (keywords) and, with a reranker, ``rerank``.
        """
        tenant = check_tenant(tenant)
        query = check_text(query, "query", max_chars=MAX_QUERY_CHARS)
        check_count(k, "k", maximum=_MAX_K)
        for flag, value in (("learn", learn), ("record_access", record_access)):
            if not isinstance(value, bool):
                raise InvalidInputError(f"{flag} must be a bool, got {type(value).__name__}")
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
        since = None if since is None else check_moment(since, "since")
        until = None if until is None else check_moment(until, "until")
        if since is not None and until is not None and since >= until:
            raise InvalidInputError("since must be before until")
        ranges = {} if since is None and until is None else {EVENT_TIME: (since, until)}
        now = now or datetime.now(UTC)
        # A span of time the question names ("last week") raises what was said then; an
        # explicit span has kept the search to it already.
        # (read only when the score or the move below uses it: a long text of time words
        # takes tens of milliseconds)
        reads_spans = bool(self.config.ranking.in_span or self.config.update_window)
        named = (
            spans_in(query, now)[:_MAX_SPANS]
            if reads_spans and not ranges and now.tzinfo is not None
            else []
        )
        spans = named if self.config.ranking.in_span else []
        # A question asking when raises the memories that tell a time ("last week").
        when = asks_when(query)
        asked_when = bool(self.config.ranking.told_time) and when
        # A question about the present puts a change before the older memories it updates;
        # one about a time ("when", "in March", since/until) leaves them as found.
        about_now = not (ranges or named or when)
        with translate_errors("retrieving memories"):
            vector = (
                query_vector if query_vector is not None else await self.embedder.embed_query(query)
            )
            search = SearchQuery(
                tenant=tenant.filter(),
                text=query,
                vector=vector,
                filters=filters,
                # Field documents (:mod:`.fields`) are never a result of their own.
                exclude={"status": FIELD if include_history else ["superseded", FIELD]},
                ranges=ranges,
                limit=min(max(k * self.config.overfetch, self.config.min_candidates), 10_000),
                # Each tier fuses its own way; the searcher takes the weights of its own.
                weights=self.config.search_weights,
                tier_weights={"atlas": self.config.rank_fusion_weights},
                coverage_power=self.config.coverage_power,
                keyword_trust=self.config.keyword_trust,
                learns=learn,
                learn_above=learn_above,
            )
            hits = await self._searcher.search(self.target, search)
        relevance = [hit.relevance for hit in hits]
        if self.reranker is not None and hits:
            hits, relevance = await self._rerank(query, hits, relevance)
        scored = []
        for hit, hit_relevance in zip(hits, relevance, strict=True):
            doc = hit.document
            if not _findable(doc, now):
                continue
            if min_importance is not None and float(doc.get("importance", 0.0)) < min_importance:
                continue
            breakdown = score_memory(
                doc,
                relevance=hit_relevance,
                now=now,
                weights=self.config.ranking,
                spans=spans,
                asks_when=asked_when,
            )
            scored.append((hit, breakdown))
        scored.sort(key=lambda item: -item[1].total)  # stable: the search's order breaks ties
        if about_now and self.config.update_window:
            scored = _current_first(scored, self.config.update_window, self.config.update_links)
        # Only the memories returned are built (the candidates are several times as many).
        ranked = [
            RetrievedMemory(
                Memory.from_document(hit.document), breakdown.total, breakdown, hit.sources
            )
            for hit, breakdown in scored[:k]
        ]
        ranked = _with_history(ranked)
        if ranked and record_access:
            self._access.record(tenant, [item.memory.id for item in ranked], now)
            self._touch(tenant, ranked, now)
        return ranked

    async def _rerank(
        self, query: str, hits: list[SearchHit], relevance: list[float]
    ) -> tuple[list[SearchHit], list[float]]:
        """The search's best candidates scored again by the reranker (its score, 0-1, is the
        relevance, its order the ``rerank`` source); the search's own ranking when the reranker
        fails."""
        assert self.reranker is not None
        head = hits[: self.config.rerank_candidates]
        # What the keyword ranking reads: content, then context (never empty: content is).
        texts = [searchable_text(h.document, self.target) or "-" for h in head]
        try:
            scores = await self.reranker.rerank(query, texts)
        except AgentMemoryError as exc:
            logger.warning(
                "rerank_failed", provider=self.reranker.provider, error=type(exc).__name__
            )
            return hits, relevance
        reranked = [
            replace(
                head[s.index],
                sources={**head[s.index].sources, "rerank": SourceScore(rank, s.score)},
            )
            for rank, s in enumerate(scores, start=1)
        ]
        return reranked, [max(0.0, min(1.0, s.score)) for s in scores]

    def _touch_reinforced(
        self, tenant: Tenant, memory_id: str, item: NewMemory, now: datetime
    ) -> None:
        """Keep this process's kept copy of a reinforced memory as :meth:`_reinforce` wrote
        it (importance, recency, restatement), without a round trip; other processes see it
        when they next read the memory, as they see access statistics."""
        if self._snapshots is None:
            return
        kept = self._snapshots.kept_document(self.target, tenant.filter(), memory_id)
        if kept is None:
            return
        occurred = item.occurred_at or now
        importance = kept.get("importance")
        importance = float(importance) if isinstance(importance, int | float) else 0.0
        times = [t for t in (kept.get("last_accessed"), occurred) if isinstance(t, datetime)]
        self._snapshots.touch(
            self.target,
            tenant.filter(),
            {
                memory_id: {
                    "importance": min(
                        1.0,
                        max(importance, item.importance or 0.0) + self.config.reinforce_step,
                    ),
                    "last_accessed": max(times),
                    "restated_at": max(
                        t for t in (_last_occurred(kept), occurred) if isinstance(t, datetime)
                    ),
                    "reinforced": int(kept.get("reinforced") or 0) + 1,
                }
            },
        )

    def _touch(self, tenant: Tenant, ranked: Sequence[RetrievedMemory], now: datetime) -> None:
        """Keep this process's kept copies of the access statistics as the flush will write
        them (they rank by recency), without making other processes read again."""
        if self._snapshots is None:
            return
        self._snapshots.touch(
            self.target,
            tenant.filter(),
            {
                item.memory.id: {
                    "access_count": item.memory.access_count + 1,
                    "last_accessed": max(now, item.memory.last_accessed or now),
                }
                for item in ranked
            },
        )

    async def get(self, tenant: Tenant, memory_id: str) -> Memory:
        tenant = check_tenant(tenant)
        check_id(memory_id, "memory_id")
        with translate_errors("reading a memory"):
            doc = await self.collection.find_one(
                {"_id": memory_id, **tenant.filter(), "status": NOT_FIELD}, {"embedding": 0}
            )
        if doc is None:
            raise NotFoundError(f"no memory {memory_id!r} for this user")
        return Memory.from_document(doc)

    async def get_many(self, tenant: Tenant, memory_ids: Sequence[str]) -> dict[str, Memory]:
        """The user's memories among ``memory_ids``: id -> memory, for the ids found
        (another user's, or one forgotten, is left out, as :meth:`get` would not find it).
        Round trips: 1 per :data:`~agent_memory.mongo.batches.BOUND` ids (none for no ids)."""
        tenant = check_tenant(tenant)
        if isinstance(memory_ids, str):
            raise InvalidInputError("memory_ids must be a list of ids, not one str")
        wanted = sorted({check_id(memory_id, "memory_id") for memory_id in memory_ids})
        if not wanted:
            return {}
        with translate_errors("reading memories"):
            docs = await find_in(
                self.collection,
                wanted,
                lambda part: {**tenant.filter(), "_id": {"$in": part}, "status": NOT_FIELD},
                {"embedding": 0},
            )
        return {doc["_id"]: Memory.from_document(doc) for doc in docs}

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
        query["status"] = NOT_FIELD if include_inactive else "active"
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

    async def current(self, tenant: Tenant, *, key: str) -> Memory | None:
        """The active memory stored under ``key`` (the newest version), or ``None``; an
        expired one is gone even before the TTL monitor removes it. Round trips: 1
        (:meth:`history` reads every version)."""
        tenant = check_tenant(tenant)
        check_id(key, "key")
        with translate_errors("reading a memory"):
            doc = await self.collection.find_one(
                {**tenant.filter(), "key": key, "status": "active", **_live(utcnow())},
                {"embedding": 0},
                sort=[("valid_from", -1), ("_id", -1)],
            )
        return None if doc is None else Memory.from_document(doc)

    async def current_many(self, tenant: Tenant, keys: Sequence[str | None]) -> dict[str, Memory]:
        """:meth:`current` for several keys in one read (one per
        :data:`~agent_memory.mongo.batches.BOUND` keys): key -> its active memory, for the
        keys that have one (``None`` keys are skipped)."""
        tenant = check_tenant(tenant)
        wanted = sorted({check_id(key, "key") for key in keys if key is not None})
        if not wanted:
            return {}
        now = utcnow()
        with translate_errors("reading memories"):
            # Every version of a key is in the part of its key: sorted within the part.
            docs = await find_in(
                self.collection,
                wanted,
                lambda part: {
                    **tenant.filter(),
                    "key": {"$in": part},
                    "status": "active",
                    **_live(now),
                },
                {"embedding": 0},
                sort=[("valid_from", 1), ("_id", 1)],
            )
        return {doc["key"]: Memory.from_document(doc) for doc in docs}  # the newest wins

    def _browsing(
        self,
        tenant: Tenant,
        tag: str | None,
        without_tag: str | None,
        source: Mapping[str, str] | None,
    ) -> dict[str, Any]:
        query: dict[str, Any] = {**tenant.filter(), "status": {"$eq": "active"}}
        tags: dict[str, Any] = {}
        if tag is not None:
            tags["$eq"] = check_id(tag, "tag")
        if without_tag is not None:
            tags["$ne"] = check_id(without_tag, "without_tag")
        if tags:
            query["tags"] = tags
        for field, value in check_mapping(source or {}, "source").items():
            query[f"source.{check_id(field, 'source field')}"] = {
                "$eq": check_id(value, f"source.{field}")
            }
        return {**query, **_live(utcnow())}

    async def browse(
        self,
        tenant: Tenant,
        *,
        tag: str | None = None,
        without_tag: str | None = None,
        source: Mapping[str, str] | None = None,
        skip: int = 0,
        limit: int | None = None,
    ) -> AsyncIterator[Memory]:
        """The active, unexpired memories tagged ``tag`` and not ``without_tag`` (either may
        be left out), newest first, whose ``source`` holds each field of ``source`` with that
        value; read in batches while the caller iterates, so a caller that filters further
        stops reading when it has enough."""
        tenant = check_tenant(tenant)
        query = self._browsing(tenant, tag, without_tag, source)
        skip = check_int(skip, "skip", minimum=0, maximum=_MAX_BROWSE)
        cursor = self.collection.find(query, {"embedding": 0}).sort(
            [("valid_from", -1), ("_id", -1)]
        )
        if skip:
            cursor = cursor.skip(skip)
        if limit is not None:
            cursor = cursor.limit(check_count(limit, "limit", maximum=_MAX_BROWSE))
        with translate_errors("listing memories"):
            async for doc in cursor:
                yield Memory.from_document(doc)

    async def grouped(
        self,
        tenant: Tenant,
        field: str,
        *,
        tag: str | None = None,
        without_tag: str | None = None,
        source: Mapping[str, str] | None = None,
    ) -> list[Any]:
        """The distinct values of ``field`` (an array counts as one value) among the memories
        :meth:`browse` would yield, read by one aggregation instead of whole documents."""
        tenant = check_tenant(tenant)
        if field not in _GROUPABLE:
            raise InvalidInputError(f"field must be one of {', '.join(sorted(_GROUPABLE))}")
        query = self._browsing(tenant, tag, without_tag, source)
        with translate_errors("listing memories"):
            rows = await _driver.aggregate(
                self.collection, [{"$match": query}, {"$group": {"_id": f"${field}"}}]
            )
        return [row["_id"] for row in rows]

    async def user_ids(self, agent_id: str) -> list[str]:
        """The users of ``agent_id`` with active memories, sorted: for an operation that spans
        an agent's users, one tenant at a time."""
        query: dict[str, Any] = {"agent_id": check_id(agent_id, "agent_id"), "status": "active"}
        with translate_errors("listing users"):
            users = await self.collection.distinct("user_id", query)
        return sorted(user for user in users if isinstance(user, str))

    async def similar(
        self,
        tenant: Tenant,
        query: str,
        *,
        k: int = 10,
        tag: str | None = None,
        without_tag: str | None = None,
        memory_type: str | None = None,
        query_vector: np.ndarray | None = None,
        fields: bool = False,
    ) -> list[tuple[Memory, float]]:
        """The ``k`` active memories whose vectors are nearest ``query``, each with its
        cosine similarity, best first: the vector search alone, without the ranking
        :meth:`retrieve` adds (recency, importance, feedback, keywords) and without counting
        as an access. Unindexed and expired memories are never returned. ``fields``: a
        memory stored with field texts scores by its best field (:mod:`.fields`), not by
        its own vector."""
        tenant = check_tenant(tenant)
        query = check_text(query, "query", max_chars=MAX_QUERY_CHARS)
        k = check_count(k, "k", maximum=_MAX_SIMILAR)
        filters: dict[str, Any] = {"status": "active"}
        exclude: dict[str, Any] = {}
        if tag is not None:
            filters["tags"] = check_id(tag, "tag")
        if without_tag is not None:
            exclude["tags"] = check_id(without_tag, "without_tag")
        if memory_type is not None:
            if memory_type not in MEMORY_TYPES:
                raise InvalidInputError(f"memory_type must be among {', '.join(MEMORY_TYPES)}")
            filters["memory_type"] = memory_type
        if fields:
            filters, exclude = by_fields(filters, exclude)
        if query_vector is not None:
            query_vector = check_vector(
                query_vector, "query_vector", dimensions=self.embedder.dimensions
            )
        now = utcnow()
        limit = k
        with translate_errors("searching memories"):
            vector = (
                query_vector if query_vector is not None else await self.embedder.embed_query(query)
            )
            while True:
                hits = await self._searcher.search(
                    self.target,
                    SearchQuery(
                        tenant=tenant.filter(),
                        vector=vector,
                        filters=filters,
                        exclude=exclude,
                        limit=limit,
                    ),
                )
                found = await self._found(tenant, hits, now, fields=fields)
                # Expired memories took places in the page: ask for more, up to the cap.
                if len(found) >= k or len(hits) < limit or limit >= _MAX_SIMILAR:
                    break
                limit = min(limit * 4, _MAX_SIMILAR)
        found.sort(key=lambda pair: -pair[1])
        return found[:k]

    async def _found(
        self, tenant: Tenant, hits: Sequence[SearchHit], now: datetime, *, fields: bool
    ) -> list[tuple[Memory, float]]:
        """The memories of vector ``hits``, with their scores; a field document's hit stands
        for its memory (read here, when active), each memory scored by its best hit."""
        scored = [
            (hit.document, float(hit.sources["vector"].score))
            for hit in hits
            if "vector" in hit.sources and _findable(hit.document, now)
        ]
        if not fields:
            return [(Memory.from_document(doc), score) for doc, score in scored]
        documents = {doc["_id"]: doc for doc, _ in scored if doc.get("status") != FIELD}
        owners = sorted(
            {doc["of"] for doc, _ in scored if doc.get("status") == FIELD} - set(documents)
        )
        for doc in await find_in(
            self.collection,
            owners,
            lambda part: {"_id": {"$in": part}, **tenant.filter(), "status": "active"},
            {"embedding": 0, TRAIL_FIELD: 0},
        ):
            if _findable(doc, now):
                documents[doc["_id"]] = doc
        return [
            (Memory.from_document(documents[memory_id]), score)
            for memory_id, score in best_per_memory(scored)
            if memory_id in documents
        ]

    async def set_source(
        self,
        tenant: Tenant,
        memory_id: str,
        source: Mapping[str, Any],
        *,
        expires_at: datetime | _Keep | None = _KEEP,
    ) -> bool:
        """Replace the ``source`` an active memory records (where it came from, and what
        its writer keeps with it), and its expiry when ``expires_at`` is given (``None``:
        never); ``False`` when no active memory ``memory_id`` of this user exists. Searches
        in every process see the change."""
        (found,) = await self.set_sources(tenant, [(memory_id, source, expires_at)])
        return found

    async def set_sources(
        self,
        tenant: Tenant,
        changes: Sequence[tuple[str, Mapping[str, Any], datetime | _Keep | None]],
    ) -> list[bool]:
        """:meth:`set_source` for several memories of the user in one bulk write and one
        announcement: ``(memory_id, source, expires_at)`` each (``_KEEP``-like default: pass
        the same as :meth:`set_source`'s). Whether each active memory was found."""
        tenant = check_tenant(tenant)
        updates: list[tuple[str, dict[str, Any]]] = []
        for memory_id, source, expires_at in changes:
            fields: dict[str, Any] = {"source": check_mapping(source, "source")}
            if not isinstance(expires_at, _Keep):
                fields["expires_at"] = _check_expiry(expires_at)
            updates.append((check_id(memory_id, "memory_id"), fields))
        if not updates:
            return []
        with translate_errors("updating memories' sources"):
            result = await self.collection.bulk_write(
                [
                    UpdateOne(
                        {"_id": memory_id, **tenant.filter(), "status": "active"}, {"$set": f}
                    )
                    for memory_id, f in updates
                ],
                ordered=False,
            )
            matched = result.matched_count
            if matched:
                # The kept corpora follow the change when every memory took it; otherwise
                # they read again.
                everything = matched == len(updates)
                await self._announce(tenant, Change(fields=dict(updates)) if everything else None)
        if matched == len(updates):
            return [True] * len(updates)
        ids = [memory_id for memory_id, _ in updates]
        with translate_errors("updating memories' sources"):
            present = set(
                await distinct_in(
                    self.collection,
                    "_id",
                    ids,
                    lambda part: {"_id": {"$in": part}, **tenant.filter(), "status": "active"},
                )
            )
        return [memory_id in present for memory_id in ids]

    async def relabel(
        self,
        tenant: Tenant,
        memory_id: str,
        *,
        key: str | None,
        tags: Sequence[str],
        source: Mapping[str, Any],
    ) -> bool:
        """Give a memory of this user (any version) a new ``key``, ``tags`` and ``source``,
        keeping everything else: for a writer that changes how it labels what it stored.
        ``False`` when no memory ``memory_id`` of this user exists. Searches see the change."""
        tenant = check_tenant(tenant)
        check_id(memory_id, "memory_id")
        fields: dict[str, Any] = {
            "key": None if key is None else check_id(key, "key"),
            "tags": list(dict.fromkeys(check_id(tag, "tag") for tag in tags)),
            "source": check_mapping(source, "source"),
        }
        if len(fields["tags"]) > self.config.max_tags:
            raise InvalidInputError(f"at most {self.config.max_tags} tags")
        with translate_errors("relabelling a memory"):
            result = await self.collection.update_one(
                {"_id": memory_id, **tenant.filter(), "status": NOT_FIELD}, {"$set": fields}
            )
            if result.matched_count:  # tags are filtered on: every search reads it again
                await self._announce(tenant, Change(touched=[memory_id]))
        return result.matched_count == 1

    async def move_to_user(
        self,
        tenant: Tenant,
        memory_ids: Sequence[str],
        user_id: str,
        *,
        schema: str | None = None,
        supersede: bool = False,
        untag: str | None = None,
    ) -> int:
        """Give these memories of ``tenant`` (any status, with their field documents) to the
        user ``user_id`` of the same agent, with ``schema``, without the tag ``untag``, and
        superseded when ``supersede`` (the user holds a newer version): for a writer that
        filed them under the wrong user. How many memories were moved; searches of both
        users see the change."""
        tenant = check_tenant(tenant)
        target = check_tenant(Tenant(tenant.agent_id, user_id))
        ids = check_ids(list(memory_ids), "memory_ids") if memory_ids else []
        if not ids or target == tenant:
            return 0
        moved: dict[str, Any] = {"user_id": target.user_id, "schema": schema}
        if supersede:
            moved["status"] = "superseded"
        update: dict[str, Any] = {"$set": moved}
        if untag is not None:
            update["$pull"] = {"tags": check_id(untag, "untag")}
        with translate_errors("moving memories"):
            fields = await distinct_in(
                self.collection, "_id", ids, lambda part: fields_of(tenant, part)
            )
            result = await update_in(self.collection, ids, _memories_in(tenant), update)
            if fields:
                field_update: dict[str, Any] = {"$set": {"user_id": target.user_id}}
                if "$pull" in update:
                    field_update["$pull"] = update["$pull"]
                await update_in(self.collection, fields, _documents_in(tenant), field_update)
            await self._announce(tenant, Change(removed=[*ids, *fields]))
            await self._announce(target, Change(touched=[*ids, *fields]))
        return result.modified_count

    async def tag_memories(self, tenant: Tenant, memory_ids: Sequence[str], tag: str) -> int:
        """Add ``tag`` to these memories of ``tenant`` (any status) and their field
        documents, so that a search or listing can leave them out by it; how many memories
        took it."""
        tenant = check_tenant(tenant)
        ids = check_ids(list(memory_ids), "memory_ids") if memory_ids else []
        tag = check_id(tag, "tag")
        if not ids:
            return 0
        with translate_errors("tagging memories"):
            tagged = {"$addToSet": {"tags": tag}}
            result = await update_in(self.collection, ids, _memories_in(tenant), tagged)
            fields = await distinct_in(
                self.collection, "_id", ids, lambda part: fields_of(tenant, part)
            )
            await update_in(self.collection, fields, _documents_in(tenant), tagged)
            if result.modified_count:  # tags are filtered on: every search reads them again
                await self._announce(tenant, Change(touched=[*ids, *fields]))
        return result.modified_count

    async def set_expiry(
        self, tenant: Tenant, memory_ids: Sequence[str], expires_at: datetime | None
    ) -> int:
        """Move the expiry of these active, unexpired memories of the user to ``expires_at``
        (``None``: never); how many were moved. One write per
        :data:`~agent_memory.mongo.batches.BOUND` memories."""
        tenant = check_tenant(tenant)
        ids = check_ids(list(memory_ids), "memory_ids") if memory_ids else []
        if not ids:
            return 0
        expires_at = _check_expiry(expires_at)
        now = utcnow()
        expiry = {"$set": {"expires_at": expires_at}}
        with translate_errors("updating memories' expiry"):
            result = await update_in(
                self.collection,
                ids,
                lambda part: {
                    "_id": {"$in": part},
                    **tenant.filter(),
                    "status": "active",
                    **_live(now),
                },
                expiry,
            )
            # The field documents (:mod:`.fields`) expire with their memory.
            fields = await distinct_in(
                self.collection, "_id", ids, lambda part: fields_of(tenant, part)
            )
            if fields:
                await update_in(self.collection, fields, _documents_in(tenant), expiry)
            # The kept corpora follow the change only when every memory took it (one expired
            # or superseded meanwhile must not look live there); otherwise they read again.
            change = (
                Change(
                    fields={memory_id: {"expires_at": expires_at} for memory_id in [*ids, *fields]}
                )
                if result.matched_count == len(ids)
                else Change(touched=[*ids, *fields])
            )
            await self._announce(tenant, change)
        return result.modified_count

    async def edit(
        self,
        tenant: Tenant,
        memory_id: str,
        *,
        content: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
    ) -> Memory:
        """Correct one memory of this user in place: its ``content`` (embedded again, so
        searches find it by its new text; a memory searched by its fields' vectors loses them
        and is searched by the new text, :mod:`.fields`), ``importance`` or ``tags``; what is
        not given stays.
        For a person fixing what the agent remembers wrong (the memory console); what the
        agent learns anew goes through :meth:`store`, which keeps the old version as history.
        Returns the memory as stored now; :class:`NotFoundError` for another user's id."""
        tenant = check_tenant(tenant)
        check_id(memory_id, "memory_id")
        fields: dict[str, Any] = {}
        if importance is not None:
            fields["importance"] = check_importance(importance)
        if tags is not None:
            fields["tags"] = list(check_tags(tags, self.config))
        if content is not None:
            fields["content"] = check_content(content, self.config)
        if not fields:
            raise InvalidInputError("nothing to edit: give content, importance or tags")
        with translate_errors("editing a memory"):
            stored = await self.collection.find_one(
                {"_id": memory_id, **tenant.filter(), "status": NOT_FIELD}, {"embedding": 0}
            )
            if stored is None:
                raise NotFoundError(f"no memory {memory_id!r} for this user")
            by_fields = FIELDS_TAG in (stored.get("tags") or ())
            if "content" in fields and by_fields:
                # Its field vectors were of the texts replaced: it is searched by its new
                # text from now on, and its field documents go (below).
                kept = fields["tags"] if "tags" in fields else list(stored.get("tags") or ())
                fields["tags"] = [tag for tag in kept if tag != FIELDS_TAG]
            elif "tags" in fields and by_fields:
                fields["tags"].append(FIELDS_TAG)  # how it is searched is not a tag to edit
            if "content" in fields:
                said = stored.get("occurred_at") or stored.get("created_at") or utcnow()
                fields["tells_time"] = tells_time(fields["content"], said)
            if "content" in fields and stored.get("indexed", True):
                # Embedded before anything is written: a provider failure changes nothing.
                item = NewMemory(fields["content"], context=stored.get("context"))
                (vector,) = await self._vectors([item])
                fields["embedding"] = to_bson_vector(vector)
            now = utcnow()
            fields["edited_at"] = now
            # A pipeline, for the trail's append; every value a literal (a content or tag
            # starting with "$" is text, not a field path).
            stage = {name: {"$literal": value} for name, value in fields.items()}
            stage[TRAIL_FIELD] = trail_append(
                fields.get("importance", "$importance"), now, "edited"
            )
            updated = await self.collection.find_one_and_update(
                {"_id": memory_id, **tenant.filter()},
                [{"$set": stage}],
                projection={"embedding": 0},
                return_document=ReturnDocument.AFTER,
            )
            if updated is None:  # forgotten meanwhile
                raise NotFoundError(f"no memory {memory_id!r} for this user")
            gone: list[str] = []
            if "content" in fields and by_fields:
                gone = await self.collection.distinct("_id", fields_of(tenant, [memory_id]))
                await self.collection.delete_many(fields_of(tenant, [memory_id]))
            # Content, importance and tags are all searched on: every search sees the edit
            # (this process's kept copy follows it; others read this memory again).
            edited = {name: value for name, value in updated.items() if name != "_id"}
            if "embedding" in fields:
                edited["embedding"] = fields["embedding"]
            await self._announce(tenant, Change(fields={memory_id: edited}, removed=gone))
        logger.info(
            "memory_edited",
            agent_id=tenant.agent_id,
            fields=sorted(set(fields) - {"embedding", "edited_at", "tells_time"}),
        )
        return Memory.from_document(updated)

    # --- forgetting ---------------------------------------------------------------------------

    async def forget(self, tenant: Tenant, memory_id: str) -> None:
        """Delete one memory of this user (another user's id is not found)."""
        tenant = check_tenant(tenant)
        check_id(memory_id, "memory_id")
        with translate_errors("forgetting a memory"):
            result = await self.collection.delete_one(
                {"_id": memory_id, **tenant.filter(), "status": NOT_FIELD}
            )
            fields = await self.collection.distinct("_id", fields_of(tenant, [memory_id]))
            if fields:
                await delete_in(self.collection, fields, _documents_in(tenant))
            await self._announce(tenant, Change(removed=[memory_id, *fields]))
        if result.deleted_count == 0:
            raise NotFoundError(f"no memory {memory_id!r} for this user")
        logger.info("memory_forgotten", agent_id=tenant.agent_id)

    async def forget_keys(self, tenant: Tenant, keys: Sequence[str]) -> int:
        """Delete every memory (every version) stored under these keys for the user; how
        many were deleted."""
        tenant = check_tenant(tenant)
        wanted = sorted({check_id(key, "key") for key in keys})
        if not wanted:
            return 0
        with translate_errors("forgetting memories"):
            ids = await distinct_in(
                self.collection,
                "_id",
                wanted,
                lambda part: {**tenant.filter(), "key": {"$in": part}},
            )
            fields = await distinct_in(
                self.collection, "_id", wanted, lambda part: stale_fields(tenant, part)
            )
            if not ids and not fields:
                return 0
            deleted = await delete_in(self.collection, ids, _documents_in(tenant))
            if fields:  # the keys' field documents (:mod:`.fields`)
                await delete_in(self.collection, fields, _documents_in(tenant))
            await self._announce(tenant, Change(removed=[*ids, *fields]))
        return deleted

    async def forget_expired(self, tenant: Tenant) -> int:
        """Delete the user's memories whose ``expires_at`` has passed, now: the TTL index
        does the same within a minute or so on a MongoDB server, and reads never return an
        expired memory meanwhile. How many were deleted."""
        tenant = check_tenant(tenant)
        now = utcnow()
        with translate_errors("forgetting expired memories"):
            expired = await self.collection.distinct(
                "_id", {**tenant.filter(), "expires_at": _passed(now), "status": NOT_FIELD}
            )
            # Their field documents (:mod:`.fields`), and any that expired on their own.
            fields = list(
                dict.fromkeys(
                    [
                        *await distinct_in(
                            self.collection, "_id", expired, lambda part: fields_of(tenant, part)
                        ),
                        *await self.collection.distinct(
                            "_id",
                            {**tenant.filter(), "status": FIELD, "expires_at": _passed(now)},
                        ),
                    ]
                )
            )
            if not expired and not fields:
                return 0
            deleted = await delete_in(self.collection, expired, _documents_in(tenant))
            if fields:
                await delete_in(self.collection, fields, _documents_in(tenant))
            await self._announce(tenant, Change(removed=[*expired, *fields]))
        return deleted

    async def forget_user(self, tenant: Tenant) -> dict[str, int]:
        tenant = check_tenant(tenant)
        with translate_errors("forgetting a user's memories"):
            result = await self.collection.delete_many({**tenant.filter(), "status": NOT_FIELD})
            await self.collection.delete_many(tenant.filter())  # and their field documents
            await erase_tenant(self._snapshots, self._generations, self.target, tenant.filter())
        return {self.connection.collection_name(COLLECTION): result.deleted_count}

    async def drain(self) -> None:
        """Wait for writes that were not awaited (access statistics)."""
        await self._background.drain()

    async def aclose(self) -> None:
        await self.drain()


def _current_first(
    scored: list[tuple[SearchHit, ScoreBreakdown]], window: int, links: int
) -> list[tuple[SearchHit, ScoreBreakdown]]:
    """``scored`` (best first) with each memory among the first ``window`` that likely updates
    memories ranked above it (the nearest ``links`` of those stored with it) moved just above
    the highest of them (:func:`~.ranking.order_current_first`); a moved memory's total
    becomes the smallest number above that memory's, the difference its breakdown's
    ``current``."""
    by_id = {hit.id: (hit, breakdown) for hit, breakdown in scored}
    ids = [hit.id for hit, _ in scored]
    order = order_current_first(
        ids, lambda memory_id: updates_of(by_id[memory_id][0].document)[:links], window
    )
    if order == ids:
        return scored  # nothing moved (most questions)
    before = {memory_id: position for position, memory_id in enumerate(ids)}
    ranked: list[tuple[SearchHit, ScoreBreakdown]] = []
    floor: float | None = None  # the total of the memory just below, as it ends
    for position in range(len(order) - 1, -1, -1):
        hit, breakdown = by_id[order[position]]
        if floor is not None and position < before[hit.id] and breakdown.total <= floor:
            total = math.nextafter(floor, math.inf)
            breakdown = replace(breakdown, total=total, current=total - breakdown.total)
        floor = breakdown.total
        ranked.append((hit, breakdown))
    ranked.reverse()
    return ranked


def _with_history(ranked: list[RetrievedMemory]) -> list[RetrievedMemory]:
    """``ranked`` with each memory that a memory ranked above it likely updates marked
    ``updated_by`` that one (the first such): history, shown after the current statement."""
    seen: dict[str, str] = {}
    marked = []
    for item in ranked:
        newer = seen.get(item.memory.id)
        marked.append(replace(item, updated_by=newer) if newer else item)
        for old in item.memory.updates:
            seen.setdefault(old, item.memory.id)
    return marked


def _not_a_memory(item: object) -> NewMemory:
    raise InvalidInputError(f"items must be NewMemory objects, got {type(item).__name__}")


def _findable(document: Mapping[str, Any], now: datetime) -> bool:
    """Whether a search may return ``document``: not expired at ``now`` (the server's TTL
    monitor may not have removed it yet) and not stored unindexed (NewMemory.indexed: to be
    read by key, never found)."""
    expires = document.get("expires_at")
    if isinstance(expires, datetime) and expires <= now:
        return False
    return document.get("indexed") is not False


def _memories_in(tenant: Tenant) -> Callable[[list[str]], dict[str, Any]]:
    """The query of the tenant's memories (not their field documents) among a part of ids."""
    return lambda part: {**tenant.filter(), "_id": {"$in": part}, "status": NOT_FIELD}


def _documents_in(tenant: Tenant) -> Callable[[list[Any]], dict[str, Any]]:
    """The query of the tenant's documents (memories or field documents) among a part of ids."""
    return lambda part: {**tenant.filter(), "_id": {"$in": part}}


def _live(now: datetime) -> dict[str, Any]:
    """The filter of memories not expired at ``now`` (a missing ``expires_at`` is never)."""
    return {"$or": [{"expires_at": None}, {"expires_at": {"$gt": now}}]}


def _passed(now: datetime) -> dict[str, Any]:
    """The condition on ``expires_at`` of a memory expired at ``now``: a date, not after it.
    A memory that never expires holds ``None``, which MongoDB never orders against a date
    but the embedded engine sorts before every date (so ``$lte`` alone matched it there)."""
    return {"$type": "date", "$lte": now}


def _check_expiry(expires_at: Any) -> datetime | None:
    if expires_at is not None and (
        not isinstance(expires_at, datetime) or expires_at.tzinfo is None
    ):
        raise InvalidInputError("expires_at must be a timezone-aware datetime or None")
    return expires_at

"""The Atlas tier end to end, against a real Atlas or atlas-local deployment.

Skipped unless ``MONGODB_URI`` is set (see ``conftest.py``). Search indexes are built and
synchronised asynchronously by Atlas (mongot), so every check that depends on them waits with
a bounded poll rather than a fixed sleep.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
import pytest_asyncio

from agent_memory.config import Settings
from agent_memory.mongo import _driver
from agent_memory.mongo.connection import Connection, connect
from agent_memory.mongo.indexes import IndexManager, IndexState
from agent_memory.mongo.search import Searcher, SearchHit, SearchQuery, make_searcher
from agent_memory.mongo.search.fusion import RRF_K
from agent_memory.mongo.search.types import SearchTarget
from agent_memory.mongo.vectors import from_bson_vector, to_bson_vector
from agent_memory.providers.embedders.fake import FakeEmbedder

AGENT = "agent-1"
COLLECTION = "memories"
BERLIN_QUERY = "where do I live in Berlin"
# Documents each user's probe text query matches, once the collection is in sync.
SYNC_TEXT = "kreuzberg spree munich coffee tea"
#: When the seeded memories were said: this moment, then one day earlier each.
SAID_FROM = datetime(2026, 6, 1, 12, tzinfo=UTC)
SYNC_TEXT_MATCHES = {"ada": {"ada-home", "ada-old", "ada-tea"}, "bob": {"bob-home", "bob-coffee"}}

# (user, id suffix, memory_type, tags, status, content)
MEMORIES = [
    ("ada", "home", "fact", ["home"], "active", "I live in Berlin near the river Spree"),
    ("ada", "tea", "preference", ["food"], "active", "I prefer green tea in the morning"),
    ("ada", "german", "instruction", ["style"], "active", "Always answer in German"),
    ("ada", "winter", "fact", ["weather", "home"], "active", "Berlin winters are cold and grey"),
    ("ada", "old", "fact", ["home"], "archived", "I used to live in Munich"),
    ("bob", "home", "fact", ["home"], "active", "I live in Berlin as well, in Kreuzberg"),
    ("bob", "coffee", "preference", ["food"], "active", "I prefer strong coffee"),
    ("bob", "winter", "fact", ["weather"], "active", "Berlin winters are long"),
]


def tenant(user: str, agent: str = AGENT) -> dict[str, str]:
    return {"agent_id": agent, "user_id": user}


def ids(hits: list[SearchHit]) -> list[Any]:
    return [hit.id for hit in hits]


Eventually = Callable[..., Awaitable[Any]]


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def manager(connection: Connection, embedder: FakeEmbedder) -> IndexManager:
    """The index manager for the embedder the suite stores vectors with."""
    return IndexManager(connection, embedder.signature)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def first_setup(manager: IndexManager, index_timeout: float) -> list[IndexState]:
    """The first ``setup`` on the fresh database: creates everything and waits for it."""
    return await manager.setup(wait=True, timeout=index_timeout)


@pytest.fixture(scope="module")
def target(manager: IndexManager, first_setup: list[IndexState]) -> SearchTarget:
    return manager.catalog.target(COLLECTION)


@pytest.fixture(scope="module")
def searcher(
    connection: Connection, embedder: FakeEmbedder, first_setup: list[IndexState]
) -> Searcher:
    return make_searcher(connection, dimensions=embedder.dimensions)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def seeded(
    connection: Connection,
    embedder: FakeEmbedder,
    target: SearchTarget,
    searcher: Searcher,
    eventually: Eventually,
) -> dict[str, dict[str, Any]]:
    """Memories for two users (plus one under another agent), searchable by the time this
    returns: newly written documents reach Atlas Search after a short delay, so this polls."""
    vectors = await embedder.embed_documents([m[5] for m in MEMORIES])
    now = datetime.now(UTC)
    docs: dict[str, dict[str, Any]] = {}
    for number, ((user, suffix, kind, tags, status, content), vector) in enumerate(
        zip(MEMORIES, vectors, strict=True)
    ):
        docs[f"{user}-{suffix}"] = {
            "_id": f"{user}-{suffix}",
            "agent_id": AGENT,
            "user_id": user,
            "memory_type": kind,
            "tags": tags,
            "status": status,
            "content": content,
            "embedding": to_bson_vector(vector),
            "created_at": now,
            # One day apart: said on days 0, -1, -2, ... (spans of time keep to some of them).
            "occurred_at": SAID_FROM - timedelta(days=number),
        }
    stranger = dict(docs["ada-home"], _id="agent2-ada-home", agent_id="agent-2")
    docs[stranger["_id"]] = stranger
    await connection.collection(COLLECTION).insert_many([dict(doc) for doc in docs.values()])

    vector = await embedder.embed_query(BERLIN_QUERY)
    for user in ("ada", "bob"):
        expected = {
            doc_id
            for doc_id, doc in docs.items()
            if doc["user_id"] == user and doc["agent_id"] == AGENT
        }
        await eventually(
            lambda user=user: searcher.search(
                target, SearchQuery(tenant=tenant(user), vector=vector, limit=50)
            ),
            lambda hits, expected=expected: set(ids(hits)) == expected,
            what=f"vector search sees all of {user}'s memories",
        )
        await eventually(
            lambda user=user: searcher.search(
                target, SearchQuery(tenant=tenant(user), text=SYNC_TEXT)
            ),
            lambda hits, user=user: set(ids(hits)) == SYNC_TEXT_MATCHES[user],
            what=f"text search sees {user}'s memories",
        )
    return docs


def exact_order(docs: dict[str, dict[str, Any]], query_vector: np.ndarray, user: str) -> list[str]:
    """The tenant's documents in exact cosine order (the fake embedder's vectors are unit)."""
    own = [d for d in docs.values() if d["user_id"] == user and d["agent_id"] == AGENT]
    matrix = np.stack([from_bson_vector(d["embedding"]) for d in own])
    scores = matrix.astype(np.float64) @ np.asarray(query_vector, dtype=np.float64)
    return [own[i]["_id"] for i in np.argsort(-scores, kind="stable")]


# --- connection and index lifecycle --------------------------------------------------------


async def test_connection_is_on_the_atlas_tier(connection: Connection) -> None:
    """The probe finds Atlas Search on this deployment and the connection picks the Atlas tier."""
    assert connection.capabilities.atlas_search is True
    assert connection.tier == "atlas"
    assert connection.capabilities.version_tuple >= (6, 0, 11)


async def test_setup_creates_regular_and_search_indexes(
    manager: IndexManager, first_setup: list[IndexState]
) -> None:
    """The first ``setup`` creates every regular index for the Atlas tier and every search
    index, and returns only once all are queryable; the catalog has no ``$text`` index."""
    created = {(s.collection, s.name) for s in first_setup if s.state == "created"}
    for spec in manager.catalog.collections.values():
        name = manager.connection.collection_name(spec.name)
        for index in spec.indexes:
            if index.applies_to("atlas"):
                assert (name, index.name) in created
            else:
                assert (name, index.name) not in created
        for search_index in spec.search_indexes:
            assert (name, search_index.name) in created
    assert not [s for s in first_setup if s.problem]

    status = await manager.status()
    kinds = {"vectorSearch", "search"}
    assert {s.state for s in status if s.kind in kinds} == {"ok"}, status
    assert not [s for s in status if s.kind == "text"]
    assert {s.state for s in status if s.kind in ("regular", "embedding")} == {"ok"}
    assert await manager.validate() == []


async def test_setup_again_is_idempotent(
    manager: IndexManager, first_setup: list[IndexState], index_timeout: float
) -> None:
    """A second ``setup`` creates and updates nothing and reports no drift: the definitions the
    server stores are recognised as the ones in ``atlas_indexes/``."""
    again = await manager.setup(wait=True, timeout=index_timeout)
    assert not [s for s in again if s.state in ("created", "updated")], again
    assert not [s for s in again if s.problem], again


# --- search --------------------------------------------------------------------------------


@pytest.mark.parametrize("user", ["ada", "bob"])
async def test_vector_search_stays_in_tenant_in_exact_order(
    searcher: Searcher,
    target: SearchTarget,
    embedder: FakeEmbedder,
    seeded: dict[str, dict[str, Any]],
    user: str,
) -> None:
    """Vector-only search returns all and only the tenant's memories, nearest first (on a set
    this small the approximate search is exact)."""
    vector = await embedder.embed_query(BERLIN_QUERY)
    hits = await searcher.search(target, SearchQuery(tenant=tenant(user), vector=vector))
    assert ids(hits) == exact_order(seeded, vector, user)
    assert all(h.document["user_id"] == user and h.document["agent_id"] == AGENT for h in hits)
    assert all(set(h.sources) == {"vector"} for h in hits)
    assert all(target.vector_path not in h.document for h in hits)


@pytest.mark.parametrize(
    ("user", "expected"),
    [("ada", {"ada-home", "ada-winter"}), ("bob", {"bob-home", "bob-winter"})],
)
async def test_text_search_stays_in_tenant(
    searcher: Searcher,
    target: SearchTarget,
    seeded: dict[str, dict[str, Any]],
    user: str,
    expected: set[str],
) -> None:
    """Text-only search finds the tenant's documents with the word and nothing of others'."""
    hits = await searcher.search(target, SearchQuery(tenant=tenant(user), text="Berlin"))
    assert set(ids(hits)) == expected
    assert all(set(h.sources) == {"text"} and h.sources["text"].score > 0 for h in hits)


@pytest.mark.parametrize("user", ["ada", "bob"])
async def test_hybrid_search_stays_in_tenant(
    searcher: Searcher,
    target: SearchTarget,
    embedder: FakeEmbedder,
    seeded: dict[str, dict[str, Any]],
    user: str,
) -> None:
    """Text and vector together return only the tenant's memories, best fused score first.

    With equal weights and at most five results per source, a document found by both sources
    (at least 2/65) always outranks one found by a single source (at most 1/61)."""
    vector = await embedder.embed_query(BERLIN_QUERY)
    hits = await searcher.search(
        target, SearchQuery(tenant=tenant(user), text="Berlin", vector=vector)
    )
    own = {i for i, d in seeded.items() if d["user_id"] == user and d["agent_id"] == AGENT}
    assert set(ids(hits)) == own
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    both = [len(h.sources) == 2 for h in hits]
    assert both == sorted(both, reverse=True), [(h.id, sorted(h.sources)) for h in hits]
    assert {h.id for h in hits if len(h.sources) == 2} == {f"{user}-home", f"{user}-winter"}


async def test_other_agent_is_a_different_tenant(
    searcher: Searcher,
    target: SearchTarget,
    embedder: FakeEmbedder,
    seeded: dict[str, dict[str, Any]],
    eventually: Eventually,
) -> None:
    """The same user id under another agent sees only that agent's memory."""
    vector = await embedder.embed_query(BERLIN_QUERY)
    query = SearchQuery(tenant=tenant("ada", agent="agent-2"), text="Berlin", vector=vector)
    hits = await eventually(
        lambda: searcher.search(target, query),
        lambda found: bool(found),
        what="the other agent's memory is searchable",
    )
    assert ids(hits) == ["agent2-ada-home"]


@pytest.mark.parametrize(
    ("text", "filters", "exclude", "expected"),
    [
        pytest.param(None, {"memory_type": "fact"}, {"status": "archived"}, {"ada-home", "ada-winter"}, id="vector-scalar"),
        pytest.param(None, {}, {"tags": ["home"]}, {"ada-tea", "ada-german"}, id="vector-exclude-list"),
        pytest.param("live", {"memory_type": "fact"}, {"status": "archived"}, {"ada-home", "ada-winter"}, id="hybrid-live"),
        pytest.param("Berlin", {"tags": ["food", "style"]}, {}, {"ada-tea", "ada-german"}, id="hybrid-list"),
        pytest.param("Berlin", {"tags": "weather"}, {}, {"ada-winter"}, id="hybrid-array-field"),
    ],
)  # fmt: skip
async def test_filters_and_exclusions_apply_in_both_sources(
    searcher: Searcher,
    target: SearchTarget,
    embedder: FakeEmbedder,
    seeded: dict[str, dict[str, Any]],
    text: str | None,
    filters: dict[str, Any],
    exclude: dict[str, Any],
    expected: set[str],
) -> None:
    """Filters keep, exclusions drop, scalar or list, on plain and array fields, and inside
    both the ``$vectorSearch`` pre-filter and the ``$search`` compound filter (the vector
    source returns every document the filters admit, so hybrid results are exactly those)."""
    vector = await embedder.embed_query(BERLIN_QUERY)
    query = SearchQuery(
        tenant=tenant("ada"), text=text, vector=vector, filters=filters, exclude=exclude
    )
    hits = await searcher.search(target, query)
    assert set(ids(hits)) == expected
    if text is not None:
        text_only = SearchQuery(tenant=tenant("ada"), text=text, filters=filters, exclude=exclude)
        assert set(ids(await searcher.search(target, text_only))) <= expected


@pytest.mark.parametrize("text", [None, SYNC_TEXT], ids=["vector", "hybrid"])
@pytest.mark.parametrize("days", [(0, 3), (2, None), (None, 1)], ids=["both", "until", "since"])
async def test_a_span_of_time_applies_in_both_sources(
    searcher: Searcher,
    target: SearchTarget,
    embedder: FakeEmbedder,
    seeded: dict[str, dict[str, Any]],
    text: str | None,
    days: tuple[int | None, int | None],
) -> None:
    """``ranges`` on ``occurred_at`` (a vector filter field, a ``date`` field of the text
    index) keep both sources to the documents said in the span: from included, until not."""
    # (days before SAID_FROM: the span runs from the older day to the newer one, each
    # included through the second after it)
    span = (
        None if days[1] is None else SAID_FROM - timedelta(days=days[1]) + timedelta(seconds=1),
        None if days[0] is None else SAID_FROM - timedelta(days=days[0]) + timedelta(seconds=1),
    )
    expected = {
        doc_id
        for doc_id, doc in seeded.items()
        if doc["user_id"] == "ada"
        and doc["agent_id"] == AGENT
        and (span[0] is None or doc["occurred_at"] >= span[0])
        and (span[1] is None or doc["occurred_at"] < span[1])
    }
    vector = await embedder.embed_query(BERLIN_QUERY)
    query = SearchQuery(
        tenant=tenant("ada"), text=text, vector=vector, ranges={"occurred_at": span}, limit=50
    )
    hits = await searcher.search(target, query)
    assert set(ids(hits)) == expected
    if text is not None:
        text_only = SearchQuery(tenant=tenant("ada"), text=text, ranges={"occurred_at": span})
        assert set(ids(await searcher.search(target, text_only))) <= expected


async def test_rank_fusion_hits_carry_per_source_ranks(
    connection: Connection,
    searcher: Searcher,
    target: SearchTarget,
    embedder: FakeEmbedder,
    seeded: dict[str, dict[str, Any]],
) -> None:
    """With ``$rankFusion`` the server's ``scoreDetails`` give every hit its rank in each input
    that returned it, and the fused score is the documented sum of weight / (60 + rank)."""
    if not connection.capabilities.rank_fusion:
        pytest.skip(
            "this server has no $rankFusion: "
            + connection.capabilities.notes.get("rank_fusion", "no reason given")
        )
    vector = await embedder.embed_query(BERLIN_QUERY)
    weights = {"vector": 2.0, "text": 1.0}
    query = SearchQuery(tenant=tenant("ada"), text="Berlin", vector=vector, weights=weights)
    hits = await searcher.search(target, query)
    by_id = {hit.id: hit for hit in hits}
    # Nearest vector (2/61) plus a text match (at least 1/62) beats ada-winter, the other text
    # match, whose vector rank is 3 (2/63 + at most 1/61).
    assert hits[0].id == "ada-home"
    assert set(by_id["ada-home"].sources) == {"vector", "text"}
    assert set(by_id["ada-tea"].sources) == {"vector"}
    for hit in hits:
        assert hit.sources, f"{hit.id} has no per-source ranks"
        assert all(isinstance(s.rank, int) and s.rank >= 1 for s in hit.sources.values())
        expected = sum(weights[name] / (RRF_K + s.rank) for name, s in hit.sources.items())
        assert hit.score == pytest.approx(expected, rel=1e-6)
    for name in ("vector", "text"):
        ranks = sorted(h.sources[name].rank for h in hits if name in h.sources)
        assert ranks == list(range(1, len(ranks) + 1)), f"{name} ranks {ranks}"


# --- drift and drop ------------------------------------------------------------------------


async def test_other_dimension_is_reported_as_drift(
    connection: Connection, manager: IndexManager, first_setup: list[IndexState]
) -> None:
    """An embedder with another dimension sees every vector index (and the embedding record)
    as drift, and ``validate`` lists them; the text indexes are unaffected."""
    other = IndexManager(connection, FakeEmbedder(manager.signature.dimensions * 2).signature)
    status = await other.status()
    vector_states = [s for s in status if s.kind == "vectorSearch"]
    assert vector_states and {s.state for s in vector_states} == {"drift"}, vector_states
    assert all("numDimensions" in s.detail for s in vector_states)
    assert {s.state for s in status if s.kind == "search"} == {"ok"}
    assert [s.state for s in status if s.kind == "embedding"] == ["drift"]

    problems = {(s.collection, s.name) for s in await other.validate()}
    assert {(s.collection, s.name) for s in vector_states} <= problems
    assert await manager.validate() == [], "the configured embedder still sees no problem"


async def test_drop_removes_search_indexes(
    database_name: str,
    connection: Connection,
    embedder: FakeEmbedder,
    atlas_settings: Callable[..., Settings],
    index_timeout: float,
    eventually: Eventually,
) -> None:
    """``drop`` removes the search indexes it created (Atlas deletes them asynchronously, so
    the listing is polled) and leaves the data alone. Uses collections of its own (another
    prefix in the session's database), so it does not disturb the other tests."""
    conn = await connect(atlas_settings(database_name, collection_prefix="dropcheck_"))
    try:
        manager = IndexManager(conn, embedder.signature)
        await manager.setup(wait=True, timeout=index_timeout)
        await conn.collection(COLLECTION).insert_one({"_id": "keep", "content": "still here"})

        dropped = await manager.drop()
        expected = {
            (conn.collection_name(spec.name), index.name)
            for spec in manager.catalog.collections.values()
            for index in spec.search_indexes
        }
        assert expected <= {(s.collection, s.name) for s in dropped if s.state == "dropped"}

        for spec in manager.catalog.collections.values():
            names = {index.name for index in spec.search_indexes}
            collection = conn.collection(spec.name)
            await eventually(
                lambda collection=collection: _driver.list_search_indexes(collection),
                lambda listed, names=names: not names & {i["name"] for i in listed},
                timeout=index_timeout,
                what=f"search indexes of {spec.name} are gone",
            )
        status = await manager.status()
        assert {s.state for s in status if s.kind in ("vectorSearch", "search")} == {"missing"}
        assert await conn.collection(COLLECTION).count_documents({"_id": "keep"}) == 1
    finally:
        await conn.close()


@pytest.mark.parametrize("user", ["ada", "bob"])
async def test_the_vector_layout_ranks_keywords_in_the_framework(
    connection: Connection,
    target: SearchTarget,
    embedder: FakeEmbedder,
    seeded: dict[str, dict[str, Any]],
    user: str,
) -> None:
    """The vector layout (a free cluster's three search indexes): ``$vectorSearch`` on the
    real index, BM25 in the framework, fused here; the same tenant and the same winners as
    the full layout's hybrid search."""
    from agent_memory.mongo.search import AtlasSearcher, PlainSearcher

    searcher = AtlasSearcher(
        connection.db,
        rank_fusion=connection.capabilities.rank_fusion,
        keywords=PlainSearcher(connection.db, dimensions=embedder.dimensions),
    )
    vector = await embedder.embed_query(BERLIN_QUERY)
    hits = await searcher.search(
        target, SearchQuery(tenant=tenant(user), text="Berlin", vector=vector)
    )
    own = {i for i, d in seeded.items() if d["user_id"] == user and d["agent_id"] == AGENT}
    assert set(ids(hits)) == own
    assert {h.id for h in hits if len(h.sources) == 2} == {f"{user}-home", f"{user}-winter"}
    assert all(target.vector_path not in h.document for h in hits)

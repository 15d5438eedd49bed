"""Properties of tenancy, checked on generated data over the wire.

1. No read ever returns another tenant's data, on every search path (hybrid, vector only,
   keyword only, with history) and through LongTermMemory.retrieve.
2. A tenant whose memories all rank far below another tenant's still gets its k results:
   the tenant filter is applied before ranking, never after (a post-filter would leave
   such a tenant with nothing).

The Atlas pipelines cannot run here; their tenant pre-filter is checked by the contract
tests and, in the form the embedded engine supports, by test_atlas_form_on_embedded.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import NewMemory
from agent_memory.mongo.catalog import IndexCatalog
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.search import SearchQuery, make_searcher
from agent_memory.mongo.vectors import to_bson_vector
from agent_memory.tenancy import Tenant

WORDS = [
    "tea",
    "coffee",
    "berlin",
    "paris",
    "cat",
    "dog",
    "jazz",
    "chess",
    "window",
    "aisle",
    "nurse",
    "pilot",
]
sentence = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
tenant_memories = st.lists(sentence, min_size=1, max_size=8)

PROPERTY_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
async def indexes(connection, embedder) -> None:
    """Set up once per test: its examples share the test's database."""
    await IndexManager(connection, embedder.signature).setup()


def fresh_tenants(count: int) -> list[Tenant]:
    # Unique per example: examples share one database, so they must not share tenants.
    run = uuid.uuid4().hex[:8]
    return [Tenant(f"agent-{run}", f"user-{i}") for i in range(count)]


@pytest.mark.usefixtures("indexes")
@PROPERTY_SETTINGS
@given(data=st.lists(tenant_memories, min_size=2, max_size=4), query=sentence)
async def test_no_search_path_returns_another_tenants_memory(connection, embedder, data, query):
    tenants = fresh_tenants(len(data))
    collection = connection.collection("memories")
    owner = {}
    for tenant, texts in zip(tenants, data, strict=True):
        vectors = await embedder.embed_documents(texts)
        for text, vector in zip(texts, vectors, strict=True):
            doc_id = uuid.uuid4().hex
            owner[doc_id] = tenant
            await collection.insert_one(
                {
                    "_id": doc_id,
                    **tenant.filter(),
                    "memory_type": "fact",
                    "status": "active",
                    "content": text,
                    "embedding": to_bson_vector(vector),
                    "importance": 0.5,
                    "created_at": datetime.now(UTC),
                }
            )
    searcher = make_searcher(connection, dimensions=embedder.dimensions)
    target = IndexCatalog.load(dimensions=embedder.dimensions).target("memories")
    vector = await embedder.embed_query(query)
    for tenant in tenants:
        for kwargs in ({"text": query, "vector": vector}, {"vector": vector}, {"text": query}):
            hits = await searcher.search(
                target, SearchQuery(tenant=tenant.filter(), limit=50, **kwargs)
            )
            assert all(owner[hit.id] == tenant for hit in hits), kwargs
            assert all(hit.document["user_id"] == tenant.user_id for hit in hits)


@pytest.mark.usefixtures("indexes")
@PROPERTY_SETTINGS
@given(
    strong=st.lists(sentence, min_size=5, max_size=10),
    weak=st.lists(
        st.sampled_from(["zebra", "quartz", "umbrella", "volcano"]), min_size=1, max_size=6
    ),
    k=st.integers(min_value=1, max_value=6),
)
async def test_a_tenant_ranked_far_below_another_still_gets_k_results(
    connection, embedder, strong, weak, k
):
    winner, loser = fresh_tenants(2)
    memory = LongTermMemory(connection, embedder)
    query = strong[0]
    # The winner holds the query itself and near copies; the loser only unrelated words.
    await memory.store_many(
        winner, [NewMemory(text) for text in [query, *strong]], consolidate=False
    )
    await memory.store_many(
        loser, [NewMemory(f"{word} {i}") for i, word in enumerate(weak)], consolidate=False
    )
    hits = await memory.retrieve(loser, query, k=k)
    assert len(hits) == min(k, len(weak))
    assert {hit.memory.user_id for hit in hits} == {loser.user_id}
    history = await memory.retrieve(loser, query, k=k, include_history=True)
    assert {hit.memory.user_id for hit in history} == {loser.user_id}
    await memory.aclose()


@pytest.mark.usefixtures("indexes")
@PROPERTY_SETTINGS
@given(
    data=st.lists(st.lists(sentence, min_size=1, max_size=5), min_size=2, max_size=3),
    query=sentence,
)
async def test_similar_actions_never_cross_tenants(connection, embedder, data, query):
    from agent_memory.memory.episodic.memory import EpisodicMemory

    episodic = EpisodicMemory(connection, embedder)
    tenants = fresh_tenants(len(data))
    for tenant, texts in zip(tenants, data, strict=True):
        for text in texts:
            await episodic.log_action(
                tenant,
                session_id="s",
                action_type="query_response",
                outcome="success",
                content=text,
            )
    for tenant in tenants:
        for outcome in ("success", None):
            found = await episodic.similar_actions(tenant, query=query, outcome=outcome, limit=20)
            assert found and {(item.action.agent_id, item.action.user_id) for item in found} == {
                (tenant.agent_id, tenant.user_id)
            }

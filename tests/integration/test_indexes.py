"""Index lifecycle on the plain tier: setup, idempotence, drift, embedder changes, drop."""

from __future__ import annotations

import pytest

from agent_memory.errors import EmbeddingMismatchError
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.embedders.fake import FakeEmbedder


async def test_setup_creates_regular_indexes_and_is_idempotent(connection, embedder):
    manager = IndexManager(connection, embedder.signature)
    first = await manager.setup()
    created = {(s.collection, s.name) for s in first if s.state == "created"}
    assert ("memories", "tenant_type_created") in created
    # No $text index: the plain tier ranks keywords with BM25 in the framework.
    assert not any(name == "content_text" for _, name in created)
    assert all(s.state == "not used" for s in first if s.kind in ("vectorSearch", "search"))

    second = await manager.setup()
    assert not [s for s in second if s.state == "created"]
    assert await manager.validate() == []

    info = await connection.collection("memories").index_information()
    assert info["expires_at_ttl"]["expireAfterSeconds"] == 0


async def test_status_reports_missing_before_setup(connection, embedder):
    manager = IndexManager(connection, embedder.signature)
    problems = await manager.validate()
    assert {s.state for s in problems} == {"missing"}
    assert any(s.kind == "embedding" for s in problems)


async def test_drifted_index_is_reported_not_replaced(connection, embedder):
    # Someone created an index under our name with another key.
    await connection.collection("memories").create_index(
        [("user_id", 1)], name="tenant_type_created"
    )
    manager = IndexManager(connection, embedder.signature)
    states = await manager.setup()
    drift = [s for s in states if s.state == "drift"]
    assert [s.name for s in drift] == ["tenant_type_created"]
    assert "agent-memory indexes drop" in drift[0].detail
    info = await connection.collection("memories").index_information()
    assert info["tenant_type_created"]["key"] == [("user_id", 1)]  # left alone


async def test_changed_embedder_is_caught(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    other = FakeEmbedder(dimensions=128)
    manager = IndexManager(connection, other.signature)
    with pytest.raises(EmbeddingMismatchError, match=r"256 dims.*128 dims"):
        await manager.setup()
    problems = await manager.validate()
    assert [s.kind for s in problems] == ["embedding"]

    renamed = FakeEmbedder(model="hashing-v2")
    state = await IndexManager(connection, renamed.signature).embedding_state()
    assert state.state == "drift" and "meaningless" in state.detail


async def test_drop_removes_only_our_indexes(connection, embedder):
    manager = IndexManager(connection, embedder.signature)
    await manager.setup()
    await connection.collection("memories").insert_one({"_id": "keep-me"})
    dropped = await manager.drop()
    assert {s.state for s in dropped} == {"dropped"}
    info = await connection.collection("memories").index_information()
    assert list(info) == ["_id_"]
    assert await connection.collection("memories").count_documents({}) == 1
    # the embedder record stays unless asked: data embedded with it is still there
    assert (await manager.embedding_state()).state == "ok"
    await manager.drop(include_embedding_record=True)
    assert (await manager.embedding_state()).state == "missing"


async def test_a_keyed_memory_is_found_through_an_index_not_the_users_history(connection, embedder):
    """Consolidation of a keyed memory, current(), history() and forget_keys() ask for a
    user's memories of one key: the read goes through an index of tenant, key and status, so
    it costs the same at any length of history (it read the whole history before:
    current(key) 14 ms at 500 memories, 95 ms at 5,000)."""
    if not connection.capabilities.mongoeco:
        pytest.skip("reads the embedded engine's plan")
    await IndexManager(connection, embedder.signature).setup()
    memories = connection.collection("memories")
    plan = await connection.db.command(
        "explain",
        {
            "find": memories.name,
            "filter": {"agent_id": "a", "user_id": "u", "key": "home", "status": "active"},
        },
    )
    (detail,) = plan["details"]["engine_details"]
    # The namespace, then two expressions per indexed field: all four fields are searched.
    assert "USING INDEX" in detail and detail.count("<expr>=?") == 8, detail

"""MemorySystem: the four memories over one connection; forgetting a user everywhere."""

from __future__ import annotations

import pytest

from agent_memory.memory import MemorySystem, Tenant
from agent_memory.memory.conversation.records import NewMessage
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.chat.fake import FakeChatModel

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")


async def populate(system: MemorySystem, tenant: Tenant) -> str:
    memory = await system.long_term.store(tenant, f"{tenant.user_id} likes tea")
    await system.profiles.patch(tenant, {"user_name": tenant.user_id})
    await system.conversation.append_turn(
        tenant, f"{tenant.user_id}-s1", [NewMessage.user("hello"), NewMessage("assistant", "hi")]
    )
    task = await system.working.create_task(
        tenant, f"{tenant.user_id}-s1", "plan a trip", plan=["search", "book"]
    )
    await system.working.checkpoint(tenant, task.id)
    action = await system.episodic.log_action(
        tenant,
        session_id=f"{tenant.user_id}-s1",
        action_type="query_response",
        outcome="success",
        content="hello",
        memory_ids=[memory.id],
    )
    await system.episodic.add_feedback(tenant, action, rating=5)
    await system.knowledge.ingest(
        tenant, source="notes.txt", text=f"{tenant.user_id} keeps notes here."
    )
    await system.conversation.drain()
    return memory.id


@pytest.fixture
async def system(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    memories = MemorySystem(connection, embedder, chat_model=FakeChatModel(default="summary"))
    yield memories
    await memories.aclose()


async def test_forget_user_erases_every_memory_of_that_user_only(connection, system):
    await populate(system, ALICE)
    bob_memory = await populate(system, BOB)
    extra = []

    async def agent_state(tenant):
        extra.append(tenant)
        return {"agent_state": 2}

    system.register_forgetter(agent_state)
    erased = await system.forget_user(ALICE)
    assert erased == {
        "memories": 1,
        "profiles": 1,
        "sessions": 1,
        "messages": 2,
        "tasks": 1,
        "checkpoints": 1,
        "action_logs": 1,
        "knowledge_chunks": 1,
        "agent_state": 2,
    }
    assert extra == [ALICE]
    for name in (
        "memories",
        "profiles",
        "sessions",
        "messages",
        "tasks",
        "checkpoints",
        "action_logs",
    ):
        assert await connection.collection(name).count_documents({"user_id": "alice"}) == 0, name
        assert await connection.collection(name).count_documents({"user_id": "bob"}) >= 1, name
    # Bob's memory still carries his feedback credit
    assert (await system.long_term.get(BOB, bob_memory)).feedback_count == 1
    # forgetting again erases nothing and does not fail
    assert sum((await system.forget_user(ALICE)).values()) == 2  # only the registered extra


async def test_feedback_through_the_system_changes_ranking(connection, embedder):
    from agent_memory.memory.long_term.records import LongTermConfig

    await IndexManager(connection, embedder.signature).setup()
    # Two memories the question matches equally: by its words (fixed weights, so a new user's
    # unearned keyword trust does not leave the ranking to the fake embedder's arbitrary
    # vectors). Feedback is what separates them.
    system = MemorySystem(
        connection,
        embedder,
        chat_model=FakeChatModel(default="summary"),
        long_term_config=LongTermConfig(keyword_trust=None),
    )
    first = await system.long_term.store(ALICE, "Alice's favourite drink is tea")
    second = await system.long_term.store(ALICE, "Alice's favourite drink is coffee")
    before = [
        hit.memory.id for hit in await system.long_term.retrieve(ALICE, "favourite drink", k=2)
    ]
    liked, disliked = (second.id, first.id) if before[0] == first.id else (first.id, second.id)
    good = await system.episodic.log_action(
        ALICE,
        session_id="s",
        action_type="query_response",
        outcome="success",
        content="q",
        memory_ids=[liked],
    )
    bad = await system.episodic.log_action(
        ALICE,
        session_id="s",
        action_type="query_response",
        outcome="success",
        content="q",
        memory_ids=[disliked],
    )
    for _ in range(3):
        await system.episodic.add_feedback(ALICE, good, rating=5, idempotency_key=None)
    await system.episodic.add_feedback(ALICE, bad, rating=1)
    after = [
        hit.memory.id for hit in await system.long_term.retrieve(ALICE, "favourite drink", k=2)
    ]
    assert after[0] == liked, "a well-rated memory should now rank first"
    await system.aclose()


async def test_each_memory_takes_its_config_through_the_system(connection, embedder):
    from agent_memory.memory import DecayConfig
    from agent_memory.memory.conversation.records import ConversationConfig
    from agent_memory.memory.episodic.records import EpisodicConfig
    from agent_memory.memory.knowledge.base import KnowledgeConfig
    from agent_memory.memory.working.tasks import WorkingConfig

    configs = {
        "conversation": ConversationConfig(retention_days=7, retention_mode="delete"),
        "working": WorkingConfig(checkpoints_kept=2),
        "episodic": EpisodicConfig(retention_days=3),
        "knowledge": KnowledgeConfig(chunk_tokens=100),
    }
    memories = MemorySystem(
        connection,
        embedder,
        decay_config=DecayConfig(factor=0.5),
        **{f"{name}_config": config for name, config in configs.items()},
    )
    for name, config in configs.items():
        assert getattr(memories, name).config is config
    assert memories.decay.config.factor == 0.5

"""MemorySystem: the four memories over one connection; forgetting a user everywhere."""

from __future__ import annotations

import pytest

from agent_memory.agent.config import AgentConfig
from agent_memory.agent.rag_agent import RAGAgent
from agent_memory.config import load_settings
from agent_memory.memory import MemorySystem, Tenant
from agent_memory.memory.conversation.records import NewMessage
from agent_memory.memory.episodic import EpisodicConfig
from agent_memory.mongo.catalog import IndexCatalog
from agent_memory.mongo.connection import connect
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


# --- built from the settings --------------------------------------------------------------


@pytest.fixture
def maintenance_settings(settings, monkeypatch):
    """The test's settings with every decay and retention variable set away from its default,
    through the environment, as a library user would set them."""
    for name, value in {
        "AGENT_MEMORY_DECAY_FACTOR": "0.5",
        "AGENT_MEMORY_DECAY_INACTIVE_DAYS": "7",
        "AGENT_MEMORY_DECAY_FLOOR": "0.2",
        "AGENT_MEMORY_DECAY_PERIOD_DAYS": "3",
        "AGENT_MEMORY_SESSION_RETENTION_DAYS": "10",
        "AGENT_MEMORY_SESSION_RETENTION_MODE": "delete",
        "AGENT_MEMORY_ACTION_RETENTION_DAYS": "5",
    }.items():
        monkeypatch.setenv(name, value)
    return load_settings(
        mongodb_uri=settings.mongodb_uri, database=settings.database, embedder="fake"
    )


def _maintenance(system: MemorySystem) -> tuple:
    decay = system.decay.config
    return (
        decay.factor,
        decay.inactive_days,
        decay.floor,
        decay.period_days,
        system.conversation.config.retention_days,
        system.conversation.config.retention_mode,
        system.episodic.config.retention_days,
    )


async def test_from_settings_takes_decay_and_retention_from_the_connections_settings(
    maintenance_settings, embedder
):
    connection = await connect(maintenance_settings)
    try:
        system = MemorySystem.from_settings(connection, embedder)
        assert _maintenance(system) == (0.5, 7.0, 0.2, 3.0, 10, "delete", 5)
        # An agent built without memories of its own gets the same.
        async with RAGAgent(
            connection, embedder, FakeChatModel(), config=AgentConfig("agent")
        ) as agent:
            assert _maintenance(agent.memories) == (0.5, 7.0, 0.2, 3.0, 10, "delete", 5)
    finally:
        await connection.client.drop_database(maintenance_settings.database)
        await connection.close()


async def test_from_settings_takes_settings_given_and_a_config_given_wins(connection, embedder):
    settings = load_settings(decay_factor=0.8, action_retention_days=9)
    system = MemorySystem.from_settings(
        connection, embedder, settings, episodic_config=EpisodicConfig(retention_days=2)
    )
    assert system.decay.config.factor == 0.8
    assert system.episodic.config.retention_days == 2


async def test_without_variables_from_settings_is_the_plain_constructor(connection, embedder):
    # The settings' defaults are the configs' defaults: nothing changes for a user who sets none.
    built = MemorySystem.from_settings(connection, embedder, load_settings())
    assert _maintenance(built) == _maintenance(MemorySystem(connection, embedder))


async def test_the_stores_of_a_connection_share_one_index_catalog(
    connection, embedder, monkeypatch
):
    loads = []
    load = IndexCatalog.load.__func__

    def counting(cls, **kwargs):
        loads.append(kwargs)
        return load(cls, **kwargs)

    monkeypatch.setattr(IndexCatalog, "load", classmethod(counting))
    MemorySystem(connection, embedder)
    MemorySystem(connection, embedder)
    # Long-term, episodic and knowledge each need it, twice over: loaded once.
    assert len(loads) == 1
    assert connection.index_catalog(dimensions=embedder.dimensions) is connection.index_catalog(
        dimensions=embedder.dimensions
    )

"""Migrate end to end, as issue 38 asks: from the embedded server to a second embedded server
with another embedder, and to the Atlas tier (through the wire-level Atlas double)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from agent_memory.config import load_settings
from agent_memory.memory import MemorySystem
from agent_memory.mongo.connection import connect
from agent_memory.mongo.indexes import IndexManager
from agent_memory.ops.transfer import migrate_memories
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.providers.embedders.fake import FakeEmbedder
from tests.integration.atlas_double import AtlasDouble, indexed_connection
from tests.integration.test_transfer import ALICE, BOB, OTHER_AGENT, documents, populate


@pytest.fixture
async def source(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    system = MemorySystem(connection, embedder, chat_model=FakeChatModel(default="summary"))
    for tenant in (ALICE, BOB, OTHER_AGENT):
        await populate(system, tenant)
    yield system
    await system.aclose()


@pytest.fixture
async def double(embedded_server) -> AsyncIterator[AtlasDouble]:
    info = embedded_server.info
    async with AtlasDouble(info.host, info.port, info.secret, lag=0) as running:
        running.auto_advance = True
        yield running


async def test_migrate_to_a_second_embedded_server_with_another_embedder(
    source, connection, own_embedded_server
):
    other = FakeEmbedder(96, model="second-server")
    settings = load_settings(mongodb_uri=own_embedded_server.uri, database="moved", embedder="fake")
    target = await connect(settings)
    try:
        await IndexManager(target, other.signature).setup()
        plan = await migrate_memories(connection, target, other)
        assert plan.report is not None and plan.report.verified
        assert plan.report.embedded > 0 and plan.fields_dropped == 6
        moved = await documents(target, vectors=False)
        assert (
            sum(len(d) for d in moved.values())
            == sum(len(d) for d in (await documents(connection)).values()) - 6
        )  # the field vectors, which cannot be made again
        system = MemorySystem(target, other)
        try:
            found = await system.long_term.retrieve(ALICE, "where does alice live?", k=3)
            assert found[0].memory.content == "alice lives in Porto"
            history = await system.long_term.history(ALICE, key="city")
            assert [m.content for m in history] == ["alice lives in Porto", "alice lives in Lyon"]
        finally:
            await system.aclose()
    finally:
        await target.close()


async def test_migrate_to_the_atlas_tier(source, connection, embedder, through, double):
    async with indexed_connection(through(database=f"atlas_{uuid.uuid4().hex[:8]}")) as atlas:
        assert atlas.tier == "atlas"
        plan = await migrate_memories(connection, atlas, embedder)
        assert plan.report is not None and plan.report.verified and plan.report.embedded == 0
        assert await documents(atlas) == await documents(connection)
        system = MemorySystem(atlas, embedder)
        try:
            found = await system.long_term.retrieve(BOB, "where does bob live?", k=3)
            assert found[0].memory.content == "bob lives in Porto"
            assert any("$vectorSearch" in str(answered) for answered in double.answered)
        finally:
            await system.aclose()

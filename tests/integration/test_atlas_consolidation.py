"""Consolidation on the Atlas tier does not depend on the search index for recent writes.

Atlas's search index catches up with writes asynchronously, so ``$vectorSearch`` does not see a
memory stored a moment ago. Through the wire-level double (tests/integration/atlas_double.py),
whose mongot view is refreshed only by ``sync()``, a fact told twice in a row is reinforced,
not stored twice.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import LongTermConfig
from agent_memory.providers.embedders.fake import FakeEmbedder
from agent_memory.tenancy import Tenant
from tests.integration.atlas_double import AtlasDouble, indexed_connection

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")


@pytest.fixture
async def double(embedded_server):
    info = embedded_server.info
    async with AtlasDouble(info.host, info.port, info.secret) as running:
        running.auto_advance = True
        yield running


@pytest.fixture
async def atlas(through) -> AsyncIterator[Any]:
    """A connection on the Atlas tier through the double, with the catalog's indexes READY."""
    async with indexed_connection(through()) as conn:
        yield conn


async def _memories(conn: Any, tenant: Tenant) -> list[dict[str, Any]]:
    return await conn.collection("memories").find(tenant.filter()).to_list(None)


async def test_a_fact_told_twice_before_the_index_catches_up_is_reinforced(atlas, double):
    memory = LongTermMemory(atlas, FakeEmbedder())
    first = await memory.store(ALICE, "I like green tea")
    again = await memory.store(ALICE, "I like green tea")  # no sync: mongot has not seen it
    assert first.action == "inserted"
    assert (again.action, again.id) == ("reinforced", first.id)
    [document] = await _memories(atlas, ALICE)
    assert document["reinforced"] == 1
    # Another user's identical fact is theirs: the recent read is the tenant's own.
    other = await memory.store(BOB, "I like green tea")
    assert other.action == "inserted"
    # Other memory types are other slots.
    instruction = await memory.store(ALICE, "I like green tea", memory_type="preference")
    assert instruction.action == "inserted"
    await memory.aclose()


async def test_without_the_recent_read_the_lag_stores_the_fact_twice(atlas, double):
    """What the recent read prevents: with it turned off, the lagging index misses the
    first memory and the same fact is stored twice (so the test above could fail)."""
    memory = LongTermMemory(atlas, FakeEmbedder(), config=LongTermConfig(recent_writes_s=0))
    await memory.store(ALICE, "I like green tea")
    again = await memory.store(ALICE, "I like green tea")
    assert again.action == "inserted"
    assert len(await _memories(atlas, ALICE)) == 2
    # Once mongot caught up, the search finds it again.
    await double.sync()
    third = await memory.store(ALICE, "I like green tea")
    assert third.action == "reinforced"
    await memory.aclose()


async def test_memories_older_than_the_window_are_left_to_the_search(atlas, double):
    memory = LongTermMemory(atlas, FakeEmbedder())
    first = await memory.store(ALICE, "I like green tea")
    await atlas.collection("memories").update_one(
        {"_id": first.id}, {"$set": {"created_at": datetime(2020, 1, 1, tzinfo=UTC)}}
    )
    before = len(double.answered)
    again = await memory.store(ALICE, "I like green tea")
    # Old enough for the index to have it; this double's view was never refreshed, so the
    # search misses it and the recent read does not look that far back.
    assert again.action == "inserted"
    assert double.answered[before:] == ["$vectorSearch"]
    await memory.aclose()


@pytest.mark.parametrize("seconds", [-1, 86_401, True, "60", float("nan")])
def test_the_window_is_checked(seconds):
    from agent_memory.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="recent_writes_s"):
        LongTermConfig(recent_writes_s=seconds)


async def test_a_recent_memory_without_a_usable_vector_is_skipped(atlas, double):
    """Documents written by hand (no vector, or a vector of words) do not break a store."""
    memory = LongTermMemory(atlas, FakeEmbedder())
    first = await memory.store(ALICE, "I like green tea")
    memories = atlas.collection("memories")
    for broken in ({"$unset": {"embedding": ""}}, {"$set": {"embedding": ["a", "b"]}}):
        await memories.update_one({"_id": first.id}, broken)
        result = await memory.store(ALICE, "I like black coffee")
        assert result.action == "inserted"
        await memories.delete_one({"_id": result.id})
    await memory.aclose()


async def test_a_batch_reads_the_recent_memories_once_per_type(atlas, double):
    """store_many compares each item with the recent memories read once for the batch (the
    items it keeps waiting are compared as they are), not once per item; a write of anything
    else makes the next item read again."""
    from agent_memory.memory.long_term.records import NewMemory

    memory = LongTermMemory(atlas, FakeEmbedder())
    await memory.store(ALICE, "I like green tea")  # the first write also reads the embedder record
    before = len(double.commands)
    facts = ["I live in Porto", "I work as a translator", "I play the cello", "I like cats"]
    results = await memory.store_many(ALICE, [NewMemory(fact) for fact in facts])
    assert [r.action for r in results] == ["inserted"] * 4
    assert double.commands[before:].count("find") == 1
    # A repeat in the middle of a batch reinforces (a write): the item after it reads again.
    before = len(double.commands)
    batch = ["I like green tea", "I have a garden", "I like green tea"]
    results = await memory.store_many(ALICE, [NewMemory(text) for text in batch])
    assert [r.action for r in results] == ["reinforced", "inserted", "reinforced"]
    assert double.commands[before:].count("find") == 2
    await memory.aclose()

"""The LangGraph store on the Atlas tier, through the wire-level Atlas double: an item with
several index fields is found by its best field through the one ``$vectorSearch`` path."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_memory.langgraph.store import MemoryStore
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.providers.embedders.fake import FakeEmbedder
from tests.integration.atlas_double import AtlasDouble, indexed_connection

NOTES = ("memories", "alice", "notes")


@pytest.fixture
async def double(embedded_server) -> AsyncIterator[AtlasDouble]:
    info = embedded_server.info
    async with AtlasDouble(info.host, info.port, info.secret, lag=0) as running:
        running.auto_advance = True
        yield running


@pytest.fixture
async def atlas(through, double) -> AsyncIterator[Any]:
    """A connection on the Atlas tier through the double, with the catalog's indexes READY."""
    async with indexed_connection(through()) as conn:
        yield conn


async def test_an_item_is_found_by_its_best_field_on_the_atlas_tier(atlas, double):
    embedder = FakeEmbedder()
    store = MemoryStore(
        LongTermMemory(atlas, embedder), agent_id="agent", index={"fields": ["title", "body"]}
    )
    try:
        await store.aput(NOTES, "a", {"title": "tomato soup", "body": "bike repair manual"})
        await store.aput(NOTES, "b", {"title": "jazz records", "body": "tax forms"})
        assert atlas.tier == "atlas"
        for query, key in (("bike repair manual", "a"), ("tax forms", "b")):
            hits = await store.asearch(NOTES, query=query)
            assert hits[0].key == key
            assert hits[0].score == pytest.approx(1.0, abs=1e-4)  # the field's own vector
        assert any("$vectorSearch" in str(answered) for answered in double.answered)
    finally:
        await store.aclose()

"""Profiles patched per user and notes inserted as memories (seed 001's memory schemas)."""

from __future__ import annotations

import asyncio

import pytest

from agent_memory.errors import ConfigurationError, InvalidInputError
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.profile import MemorySchema, PatchOp, ProfileMemory
from agent_memory.mongo.indexes import IndexManager
from agent_memory.tenancy import Tenant

XIAOMING = Tenant("travel", "xiaoming")
OTHER = Tenant("travel", "someone-else")


@pytest.fixture
async def profiles(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    long_term = LongTermMemory(connection, embedder)
    yield ProfileMemory(connection, long_term)
    await long_term.aclose()


async def test_patches_build_a_profile(profiles):
    assert (await profiles.get(XIAOMING)).data == {}
    await profiles.patch(XIAOMING, {"user_name": "小明", "preferences": {"座位": "靠窗"}})
    await profiles.patch(
        XIAOMING, [PatchOp("add", "interests", "樱花"), PatchOp("add", "interests", "樱花")]
    )
    profile = await profiles.patch(XIAOMING, {"preferences": {"座位": "靠窗", "饮食": "素食"}})
    assert profile.version == 3
    assert profile.data == {
        "user_name": "小明",
        "preferences": {"座位": "靠窗", "饮食": "素食"},
        "interests": ["樱花"],
    }
    await profiles.patch(XIAOMING, {"interests": None})
    assert "interests" not in (await profiles.get(XIAOMING)).data
    rendered = await profiles.render(XIAOMING)
    assert "- user_name: 小明" in rendered
    assert "- preferences: 座位: 靠窗; 饮食: 素食" in rendered  # readable, not JSON


async def test_a_change_stated_before_the_profiles_own_does_not_undo_it(profiles):
    """Sessions are not always formed in the order they were held: a set or remove said
    before the field's last statement is skipped; a restatement counts as said again."""
    await profiles.patch(XIAOMING, {"user_name": "Ming"}, said="0000000001000.000000.a.0001")
    await profiles.patch(XIAOMING, {"user_name": "Xiaoming"}, said="0000000002000.000000.a.0001")
    # Said again later (same value): it is now as late as the restatement.
    await profiles.patch(XIAOMING, {"user_name": "Xiaoming"}, said="0000000004000.000000.a.0001")
    late = await profiles.patch(
        XIAOMING, {"user_name": "Ming", "age": 30}, said="0000000003000.000000.a.0001"
    )
    assert late.data == {"user_name": "Xiaoming", "age": 30}  # the age was never stated
    assert (await profiles.patch(XIAOMING, {"age": None}, said="0000000000500.000000.a.0001")).data[
        "age"
    ] == 30
    # Said later: applied, as any change is; without a place in a conversation, newest wins.
    newer = await profiles.patch(
        XIAOMING, {"user_name": "Ming"}, said="0000000005000.000000.a.0001"
    )
    assert newer.data["user_name"] == "Ming"
    assert (await profiles.patch(XIAOMING, {"user_name": "X"})).data["user_name"] == "X"
    # Only the said changes are skipped; nothing skipped writes nothing, and neither does the
    # same patch said again where it was said (a formation job resumed after a crash).
    version = (await profiles.get(XIAOMING)).version
    await profiles.patch(XIAOMING, {"age": 31}, said="0000000000100.000000.a.0001")
    await profiles.patch(XIAOMING, {"user_name": "X"}, said="0000000005000.000000.a.0001")
    assert (await profiles.get(XIAOMING)).version == version
    with pytest.raises(InvalidInputError):
        await profiles.patch(XIAOMING, {"age": 32}, said=12)


async def test_patches_that_break_the_schema_are_refused(profiles):
    await profiles.patch(XIAOMING, {"age": 30})
    for bad in ({"age": "thirty"}, {"age": -1}, {"shoe_size": 42}, {"interests": "hiking"}):
        with pytest.raises(InvalidInputError):
            await profiles.patch(XIAOMING, bad)
    assert (await profiles.get(XIAOMING)).data == {"age": 30}


@pytest.mark.parametrize(
    "changes", [{"$set": {"age": 1}}, {"a.b": 1}, "age=3", [("set", "age", 3)]]
)
async def test_hostile_patches(profiles, changes):
    with pytest.raises(InvalidInputError):
        await profiles.patch(XIAOMING, changes)


async def test_concurrent_patches_are_not_lost(profiles):
    await profiles.patch(XIAOMING, {"user_name": "小明"})
    await asyncio.gather(
        *(profiles.patch(XIAOMING, [PatchOp("add", "interests", f"topic {i}")]) for i in range(5))
    )
    profile = await profiles.get(XIAOMING)
    assert sorted(profile.data["interests"]) == [f"topic {i}" for i in range(5)]
    assert profile.version == 6


async def test_profiles_are_per_tenant(profiles):
    await profiles.patch(XIAOMING, {"home": "Shanghai"})
    assert (await profiles.get(OTHER)).data == {}
    assert await profiles.forget_user(OTHER) == {"profiles": 0}
    assert await profiles.forget_user(XIAOMING) == {"profiles": 1}
    assert (await profiles.get(XIAOMING)).data == {}


async def test_notes_are_searchable_memories(profiles):
    result = await profiles.add(
        XIAOMING, "Note", {"content": "想下个月去日本看樱花", "context": "travel planning"}
    )
    hits = await profiles.long_term.retrieve(XIAOMING, "日本 樱花")
    assert hits[0].memory.id == result.id
    assert (hits[0].memory.schema, hits[0].memory.context, hits[0].memory.memory_type) == (
        "Note",
        "travel planning",
        "learned",
    )
    with pytest.raises(InvalidInputError):
        await profiles.add(XIAOMING, "Note", {"context": "no content"})
    with pytest.raises(InvalidInputError):
        await profiles.add(XIAOMING, "User", {"content": "x"})  # a patch schema
    with pytest.raises(InvalidInputError, match="unknown memory schema"):
        await profiles.add(XIAOMING, "Diary", {"content": "x"})


async def test_notes_added_together_share_one_embedding_call(connection, profiles):
    calls = []
    embed = profiles.long_term.embedder._embed

    async def counting(texts, *, kind):
        calls.append(len(texts))
        return await embed(texts, kind=kind)

    profiles.long_term.embedder._embed = counting
    notes = [{"content": f"Visited museum number {i}", "context": "travel diary"} for i in range(3)]
    results = await profiles.add_many(XIAOMING, "Note", notes)
    assert len(results) == 3 and len({r.id for r in results}) == 3
    assert calls == [3]
    before = await connection.collection("memories").count_documents({})
    assert before >= 3
    # One invalid note stores none of the batch; wrong shapes are refused with a clear error.
    with pytest.raises(InvalidInputError):
        await profiles.add_many(XIAOMING, "Note", [{"content": "fine"}, {"context": "no content"}])
    for bad in ({"content": "a mapping, not a list"}, "text", None):
        with pytest.raises(InvalidInputError, match="list of Note"):
            await profiles.add_many(XIAOMING, "Note", bad)
    assert await connection.collection("memories").count_documents({}) == before
    assert await profiles.add_many(XIAOMING, "Note", []) == []


async def test_custom_schemas_by_configuration(connection, profiles):
    trip = MemorySchema.from_dict(
        {
            "name": "Trip",
            "description": "The trip being planned",
            "update_mode": "patch",
            "parameters": {"type": "object", "properties": {"destination": {"type": "string"}}},
        }
    )
    custom = ProfileMemory(connection, profiles.long_term, schemas=[trip])
    await custom.patch(XIAOMING, {"destination": "Kyoto"}, schema="Trip")
    assert (await custom.get(XIAOMING, "Trip")).data == {"destination": "Kyoto"}
    with pytest.raises(ConfigurationError):
        MemorySchema.from_dict(
            {"name": "Bad", "update_mode": "append", "parameters": {"type": "object"}}
        )
    with pytest.raises(ConfigurationError):
        MemorySchema(
            "Bad", "", "patch", {"type": "object", "properties": {"x": {"type": "nonsense"}}}
        )
    with pytest.raises(ConfigurationError):
        MemorySchema("NoContent", "", "insert", {"type": "object", "properties": {}})


async def test_merges_apply_to_the_fresh_profile_so_concurrent_keys_survive(profiles):
    await profiles.patch(XIAOMING, {"preferences": {"座位": "靠窗"}})
    await asyncio.gather(
        profiles.patch(XIAOMING, [PatchOp("merge", "preferences", {"饮食": "素食"})]),
        profiles.patch(XIAOMING, [PatchOp("merge", "preferences", {"舱位": "经济舱"})]),
        profiles.patch(XIAOMING, [PatchOp("merge", "preferences", {"座位": None})]),
    )
    assert (await profiles.get(XIAOMING)).data["preferences"] == {"饮食": "素食", "舱位": "经济舱"}
    with pytest.raises(InvalidInputError):
        await profiles.patch(XIAOMING, [PatchOp("merge", "preferences", "not a mapping")])
    with pytest.raises(InvalidInputError):
        await profiles.patch(XIAOMING, [PatchOp("merge", "preferences", {"bad.key": "x"})])

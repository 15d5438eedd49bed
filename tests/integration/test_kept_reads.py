"""Profiles and active tasks are kept between reads while their generation token stands
(``agent_memory/mongo/kept.py``). These tests hold them to what a read of the database would
return: a change made through another instance on another connection (another process, as
far as what is kept goes) is seen by the next read; a change nobody announced is seen once
the kept value is older than its maximum age; a caller cannot change what is kept; another
tenant's values never answer; erasing a user erases the token too."""

from __future__ import annotations

import pytest

from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.profile import ProfileMemory
from agent_memory.memory.working.memory import WorkingMemory
from agent_memory.mongo.connection import connect
from agent_memory.mongo.kept import KeptReads
from agent_memory.mongo.search.snapshots import GENERATIONS
from agent_memory.tenancy import Tenant

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")


@pytest.fixture
async def elsewhere(settings):
    """A second connection: its own token reads, its own kept values."""
    conn = await connect(settings)
    yield conn
    await conn.close()


async def test_a_task_created_or_moved_elsewhere_is_listed_by_the_next_read(connection, elsewhere):
    reader, writer = WorkingMemory(connection), WorkingMemory(elsewhere)
    assert await reader.list_active_tasks(ALICE, "s1", limit=1) == []
    assert await reader.list_active_tasks(ALICE, "s1", limit=1) == []
    assert reader.kept.hits == 1  # nothing changed: the token alone was read
    task = await writer.create_task(ALICE, "s1", "Book a flight", plan=["search", "pay"])
    assert [t.id for t in await reader.list_active_tasks(ALICE, "s1", limit=1)] == [task.id]
    await writer.start_task(ALICE, task.id)
    assert (await reader.list_active_tasks(ALICE, "s1", limit=1))[0].status == "in_progress"
    await writer.fail_task(ALICE, task.id, error="cancelled")
    assert await reader.list_active_tasks(ALICE, "s1", limit=1) == []


async def test_a_profile_patched_elsewhere_is_read_by_the_next_get(connection, elsewhere, embedder):
    reader = ProfileMemory(connection, LongTermMemory(connection, embedder))
    writer = ProfileMemory(elsewhere, LongTermMemory(elsewhere, embedder))
    assert await reader.render(ALICE) == ""
    await writer.patch(ALICE, {"user_name": "Alice", "home": "Berlin"})
    assert "Berlin" in await reader.render(ALICE)
    await writer.patch(ALICE, {"home": "Lisbon"})
    assert (await reader.get(ALICE)).data == {"user_name": "Alice", "home": "Lisbon"}
    misses = reader.kept.misses
    assert (await reader.get(ALICE)).version == 2
    assert reader.kept.misses == misses  # kept: answered without reading the profile


async def test_a_write_nobody_announced_is_read_once_the_kept_value_is_old(connection):
    now = [0.0]
    working = WorkingMemory(connection)
    working.kept = KeptReads(connection, "tasks", max_age=60, clock=lambda: now[0])
    working._store.announce = working._announce  # the store announces through the new one
    task = await WorkingMemory(connection).create_task(ALICE, "s1", "Plan a trip")
    assert (await working.list_active_tasks(ALICE))[0].goal == "Plan a trip"  # now kept
    # A program that writes the collection directly announces nothing:
    await connection.collection("tasks").update_one({"_id": task.id}, {"$set": {"goal": "Swim"}})
    now[0] += 59
    assert (await working.list_active_tasks(ALICE))[0].goal == "Plan a trip"
    now[0] += 2
    assert (await working.list_active_tasks(ALICE))[0].goal == "Swim"


async def test_what_a_caller_gets_cannot_change_what_is_kept(connection, embedder):
    profiles = ProfileMemory(connection, LongTermMemory(connection, embedder))
    await profiles.patch(ALICE, {"user_name": "Alice"})
    first = await profiles.get(ALICE)
    first.data["user_name"] = "Mallory"
    assert (await profiles.get(ALICE)).data == {"user_name": "Alice"}


async def test_tenants_do_not_share_kept_values_and_erasure_takes_the_token(connection, embedder):
    profiles = ProfileMemory(connection, LongTermMemory(connection, embedder))
    working = WorkingMemory(connection)
    await profiles.patch(ALICE, {"user_name": "Alice"})
    await working.create_task(ALICE, "s1", "Alice's task")
    assert (await profiles.get(ALICE)).data and await working.list_active_tasks(ALICE, "s1")
    assert (await profiles.get(BOB)).data == {}
    assert await working.list_active_tasks(BOB, "s1") == []
    await profiles.forget_user(ALICE)
    await working.forget_user(ALICE)
    tokens = connection.collection(GENERATIONS)
    assert await tokens.count_documents({"user_id": "alice"}) == 0
    assert (await profiles.get(ALICE)).data == {}
    assert await working.list_active_tasks(ALICE, "s1") == []

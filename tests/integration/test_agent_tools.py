"""The agent's tools: tenant bound from the run, arguments validated, errors returned."""

from __future__ import annotations

import pytest

from agent_memory.agent.tools import ToolBox
from agent_memory.memory import LongTermMemory, Tenant, WorkingMemory
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.chat.base import ToolCall, ToolSpec

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")


@pytest.fixture
async def stores(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    long_term = LongTermMemory(connection, embedder)
    yield long_term, WorkingMemory(connection)
    await long_term.aclose()


async def test_memory_search_is_scoped_to_the_run_tenant(stores):
    long_term, working = stores
    await long_term.store(ALICE, "Alice likes green tea")
    secret = await long_term.store(BOB, "Bob's safe code is 1234")
    tools = ToolBox(ALICE, "s1", long_term=long_term, working=working)
    outcome = await tools.run(ToolCall("c1", "search_long_term_memory", {"query": "safe code tea"}))
    assert "green tea" in outcome.result.content and "1234" not in outcome.result.content
    assert secret.id not in outcome.memory_ids and len(outcome.memory_ids) == 1
    # the model cannot name a user: unknown arguments are refused, not obeyed
    hostile = await tools.run(
        ToolCall("c2", "search_long_term_memory", {"query": "safe code", "user_id": "bob"})
    )
    assert hostile.result.is_error and "Additional properties" in hostile.result.content


async def test_task_tools_plan_advance_checkpoint(stores):
    long_term, working = stores
    tools = ToolBox(ALICE, "s1", long_term=long_term, working=working)
    created = await tools.run(
        ToolCall("c1", "create_plan", {"goal": "trip", "steps": ["search", "book"]})
    )
    assert not created.result.is_error and created.task_id
    advanced = await tools.run(
        ToolCall(
            "c2",
            "advance_step",
            {"task_id": created.task_id, "step_index": 0, "status": "in_progress"},
        )
    )
    assert "next: step 0" in advanced.result.content
    done = await tools.run(
        ToolCall(
            "c3",
            "advance_step",
            {
                "task_id": created.task_id,
                "step_index": 0,
                "status": "completed",
                "result": "3 hotels",
            },
        )
    )
    assert "next: step 1 book" in done.result.content
    saved = await tools.run(ToolCall("c4", "checkpoint_task", {"task_id": created.task_id}))
    assert saved.result.content.startswith("checkpoint ")
    # another user's run cannot touch the task
    bobs = ToolBox(BOB, "s9", long_term=long_term, working=working)
    stolen = await bobs.run(ToolCall("c5", "checkpoint_task", {"task_id": created.task_id}))
    assert stolen.result.is_error and "failed" in stolen.result.content


@pytest.mark.parametrize(
    "call",
    [
        ToolCall("x", "no_such_tool", {}),
        ToolCall("x", "search_long_term_memory", {}),
        ToolCall("x", "search_long_term_memory", {"query": {"$ne": None}}),
        ToolCall("x", "advance_step", {"task_id": "t", "step_index": -1, "status": "completed"}),
        ToolCall(
            "x", "advance_step", {"task_id": "task_missing", "step_index": 0, "status": "completed"}
        ),
        ToolCall("x", "create_plan", {"goal": "g", "steps": []}),
    ],
)
async def test_bad_calls_come_back_as_error_results(stores, call):
    long_term, working = stores
    outcome = await ToolBox(ALICE, "s1", long_term=long_term, working=working).run(call)
    assert outcome.result.is_error and outcome.result.tool_call_id == "x"


async def test_extra_tools_and_their_failures(stores):
    long_term, _ = stores
    tools = ToolBox(ALICE, "s1", long_term=long_term)

    async def weather(arguments):
        if arguments["city"] == "Atlantis":
            raise RuntimeError("no such city")
        return f"sunny in {arguments['city']}"

    tools.add(
        ToolSpec(
            "weather",
            "Weather by city",
            {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
        ),
        weather,
    )
    assert [s.name for s in tools.specs] == ["search_long_term_memory", "weather"]
    assert (
        await tools.run(ToolCall("a", "weather", {"city": "Lisbon"}))
    ).result.content == "sunny in Lisbon"
    broken = await tools.run(ToolCall("b", "weather", {"city": "Atlantis"}))
    assert broken.result.is_error and "RuntimeError" in broken.result.content
    with pytest.raises(ValueError):
        tools.add(ToolSpec("weather", "again"), weather)

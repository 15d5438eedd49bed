"""Other kinds at length (issue 36, item 7): reads of conversation memory read about as many
documents from the server at ten times the history. Each test counts, for every read command
a call sent, how many documents the command's filter matches on the server (what the
embedded engine goes through, whatever the limit) at two sizes; ``agent-memory bench
lengths`` measures the times.
"""

from __future__ import annotations

import pytest

from agent_memory.memory.conversation.memory import ConversationMemory
from agent_memory.memory.conversation.records import NewMessage
from agent_memory.mongo.indexes import IndexManager
from agent_memory.tenancy import Tenant


async def matched(connection, counter, start: int, collection: str) -> list[int]:
    """For each ``find`` and ``aggregate`` of ``collection`` sent since ``start``: how many
    documents its filter (an aggregate's first ``$match``) matches now, which a server goes
    through to sort them; a ``find`` without a sort stops at its limit."""
    name = connection.collection_name(collection)
    counts = []
    for command, body in counter.documents[start:]:
        if body.get(command) != name:
            continue
        if command == "find":
            where = body.get("filter") or {}
        elif command == "aggregate":
            first = body["pipeline"][0] if body.get("pipeline") else {}
            where = first.get("$match", {})
        else:
            continue
        found = await connection.db[name].count_documents(where)
        if command == "find" and not body.get("sort") and body.get("limit"):
            found = min(found, abs(body["limit"]))
        counts.append(found)
    return counts


@pytest.fixture
async def setup(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    return connection


# --- conversation ----------------------------------------------------------------------------


async def test_the_context_window_matches_the_newest_turns_only(counted, embedder):
    """The agent's context read of a session of 2,000 messages matches as many messages on
    the embedded server as one of 200: the turns that hold the window and the count, not the
    session (the engine sorts every message a query matches)."""
    connection, counter = counted
    if not connection.capabilities.mongoeco:
        pytest.skip("MongoDB walks the index; the bound is for the embedded engine")
    await IndexManager(connection, embedder.signature).setup()
    conversation = ConversationMemory(connection)
    cap = conversation.config.window_messages + conversation.config.summary_batch_messages
    widest = {}
    for size in (200, 2_000):
        tenant = Tenant("agent", f"user-{size}")
        for start in range(0, size, 50):
            turn = [NewMessage.user(f"message {start + i} of {size}") for i in range(50)]
            await conversation.append_turn(tenant, "long", turn)
        await conversation.drain()
        first = len(counter.documents)
        context = await conversation.context(tenant, "long")
        widest[size] = max(await matched(connection, counter, first, "messages"))
        assert context.messages[-1].content == f"message {size - 1} of {size}"
        assert [m.content for m in context.messages] == [
            f"message {i} of {size}" for i in range(size - len(context.messages), size)
        ]
        # what the summary does not cover, counted up to the cap as before
        assert context.omitted == min(size, cap) - len(context.messages)
        window = await conversation.window(tenant, "long", last_n=5)
        assert [m.content for m in window] == [
            f"message {i} of {size}" for i in range(size - 5, size)
        ]
    # the newest turns that hold ``cap`` messages, whole: at most one turn more
    assert widest[200] == 200 and widest[2_000] <= cap + 50, widest
    await conversation.aclose()


async def test_a_cleared_session_and_a_turn_not_yet_recorded_are_read_right(setup):
    conversation = ConversationMemory(setup)
    tenant = Tenant("agent", "clears")
    for index in range(6):
        await conversation.append_turn(
            tenant, "s", [NewMessage.user(f"old {index}.{i}") for i in range(50)]
        )
    await conversation.drain()
    await conversation.clear_session(tenant, "s")
    await conversation.append_turn(tenant, "s", [NewMessage.user("after the clear")])
    # The next turn's activity (which records it among the recent turns) has not landed
    # when the context is read: the floor comes from the turns recorded before it.
    await conversation.append_turn(tenant, "s", [NewMessage.assistant("a reply")])
    context = await conversation.context(tenant, "s")
    assert [m.content for m in context.messages] == ["after the clear", "a reply"]
    await conversation.aclose()

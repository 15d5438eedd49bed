"""Other kinds at length (issue 36, item 7): reads of conversation and episodic memory, and the
console's pages of actions, read about as many documents from the server at ten times the
history. Each test counts, for every read command a call sent, how many documents the
command's filter matches on the server (what the embedded engine goes through, whatever the
limit) at two sizes; ``agent-memory bench lengths`` measures the times.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from agent_memory.console import create_console_app
from agent_memory.memory.conversation.memory import ConversationMemory
from agent_memory.memory.conversation.records import NewMessage
from agent_memory.memory.episodic.hours import hour_of
from agent_memory.memory.episodic.memory import EpisodicMemory
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.migrations import action_hours
from agent_memory.mongo.vectors import to_bson_vector
from agent_memory.stamps import new_id
from agent_memory.tenancy import Tenant

from .console_data import TOKEN, console_settings

_TYPES = ("query_response", "tool_call", "search")
_OUTCOMES = ("success", "success", "failure", "partial")


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


def stored_logs(
    tenant: Tenant, count: int, *, now: datetime, days: int = 28, seed: int = 1
) -> list[dict[str, Any]]:
    """``count`` action logs as ``log_action`` stores them, spread over ``days`` days before
    the current hour (none in it, nor in the hour a 30-day window starts in), without
    embeddings (found by keyword only, as ``log_action(embed=False)`` stores them)."""
    rng = random.Random(seed)
    newest = now.replace(minute=0, second=0, microsecond=0) - timedelta(minutes=1)
    span = timedelta(days=days).total_seconds()
    logs = []
    for _ in range(count):
        when = newest - timedelta(seconds=rng.uniform(0, span))
        when = when.replace(microsecond=when.microsecond // 1000 * 1000)
        logs.append(
            {
                "_id": new_id("act"),
                **tenant.filter(),
                "session_id": f"s{rng.randrange(20)}",
                "task_id": None,
                "action_type": rng.choice(_TYPES),
                "action": {
                    "tool": None,
                    "input": None,
                    "output": None,
                    "duration_ms": rng.uniform(10, 900),
                    "truncated": False,
                },
                "outcome": rng.choice(_OUTCOMES),
                "metadata": {"model": None, "tokens": rng.randrange(10, 500)},
                "memory_ids": [],
                "content": "reset my password please",
                "feedback": {"rating": rng.randint(1, 5)} if rng.random() < 0.1 else {},
                "timestamp": when,
                "hour": hour_of(when),
            }
        )
    return logs


def expected_rates(logs: list[dict[str, Any]], action_type: str | None) -> tuple:
    chosen = [log for log in logs if action_type is None or log["action_type"] == action_type]
    ratings = [log["feedback"]["rating"] for log in chosen if "rating" in log["feedback"]]
    return (
        len(chosen),
        sum(log["outcome"] == "success" for log in chosen),
        len(ratings),
        sum(ratings),
        sum(log["metadata"]["tokens"] for log in chosen),
    )


def observed(rates) -> tuple:
    return (
        rates.total,
        rates.counts.get("success", 0),
        rates.rated,
        round((rates.average_rating or 0) * rates.rated),
        rates.tokens,
    )


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


# --- episodic: success rates -----------------------------------------------------------------


async def test_success_rates_read_kept_hours_not_every_action(counted, embedder):
    """A second read of an agent's success rates matches no log outside the window's two
    end hours, with 200 actions as with 2,000; the counts are exact."""
    connection, counter = counted
    await IndexManager(connection, embedder.signature).setup()
    episodic = EpisodicMemory(connection, embedder)
    now = datetime.now(UTC)
    logs_read = {}
    for size in (200, 2_000):
        agent = f"agent-{size}"
        logs = stored_logs(Tenant(agent, "u"), size, now=now, seed=size)
        await connection.collection("action_logs").insert_many(logs)
        start = len(counter.documents)
        first = await episodic.success_rates(agent, now=now)  # counts the hours, keeps them
        assert observed(first) == expected_rates(logs, None)
        # ... a day at a time: the embedded engine refuses a $group of more than 50,000
        # documents (without spilling to disk), which one over the window would reach
        assert max(await matched(connection, counter, start, "action_logs")) < size / 5
        start = len(counter.documents)
        again = await episodic.success_rates(agent, now=now)
        by_type = await episodic.success_rates_by_type(agent, list(_TYPES), now=now)
        logs_read[size] = sum(await matched(connection, counter, start, "action_logs"))
        assert observed(again) == expected_rates(logs, None)
        for name in _TYPES:
            assert observed(by_type[name]) == expected_rates(logs, name)
        assert max(await matched(connection, counter, start, "action_hours")) <= 31
    assert logs_read == {200: 0, 2_000: 0}


async def test_kept_hours_follow_every_write(setup, embedder):
    """A log back-dated into a kept hour, a rating, an erased user and a write that lands
    while a read counts: each is in the next read's counts."""
    episodic = EpisodicMemory(setup, embedder)
    now = datetime.now(UTC)
    alice, bob = Tenant("agent", "alice"), Tenant("agent", "bob")
    hour_ago = now - timedelta(hours=5)

    async def log(tenant, outcome="success", when=hour_ago):
        return await episodic.log_action(
            tenant,
            session_id="s",
            action_type="tool_call",
            outcome=outcome,
            tokens=10,
            embed=False,
            timestamp=when,
        )

    first = await log(alice)
    await log(bob, "failure")
    await episodic.drain()
    assert (await episodic.success_rates("agent")).total == 2  # now kept
    await log(alice, "partial")
    await episodic.drain()
    rates = await episodic.success_rates("agent")
    assert (rates.total, rates.counts["partial"]) == (3, 1)
    await episodic.add_feedback(alice, first, rating=2)
    await episodic.drain()
    assert (await episodic.success_rates("agent")).average_rating == 2
    await episodic.forget_user(bob)
    rates = await episodic.success_rates("agent")
    assert (rates.total, rates.counts["failure"]) == (2, 0)

    # A write between a read's count and its keeping: the count made before it is not kept.
    original = episodic._hours._count
    calls = []

    async def count_then_write(agent_id, hours, since, until):
        found = await original(agent_id, hours, since, until)
        if hours and since is None and not calls:
            calls.append(hours)
            await log(alice, when=hour_ago - timedelta(days=2))
            await episodic.drain()
        return found

    await episodic.success_rates("agent", days=3)  # keeps the 3-day window's hours first
    await log(alice, when=hour_ago - timedelta(days=2))  # makes that hour count again
    await episodic.drain()
    episodic._hours._count = count_then_write
    assert (await episodic.success_rates("agent", days=3)).total == 3
    assert calls, "the hour written was counted from its logs"
    episodic._hours._count = original
    assert (await episodic.success_rates("agent", days=3)).total == 4


async def test_an_hour_marked_by_a_writer_that_died_is_counted_from_its_logs(counted, embedder):
    connection, counter = counted
    await IndexManager(connection, embedder.signature).setup()
    episodic = EpisodicMemory(connection, embedder)
    when = datetime.now(UTC) - timedelta(hours=3)
    await episodic.log_action(
        Tenant("agent", "u"),
        session_id="s",
        action_type="t",
        outcome="success",
        embed=False,
        timestamp=when,
    )
    await episodic.drain()
    # A process marked the hour, wrote its log and died before releasing it.
    await episodic._hours._mark("agent", {hour_of(when)[:10]: ["h" + hour_of(when)[11:]]})
    await connection.collection("action_logs").insert_one(
        {**stored_logs(Tenant("agent", "u"), 1, now=when + timedelta(hours=1))[0]}
        | {"timestamp": when, "hour": hour_of(when), "action_type": "t", "outcome": "failure"}
    )
    for _ in range(2):
        start = len(counter.documents)
        rates = await episodic.success_rates("agent", "t")
        assert (rates.total, rates.counts["failure"]) == (2, 1)
        assert 2 in await matched(connection, counter, start, "action_logs")  # its logs


# --- episodic: lists and search --------------------------------------------------------------


async def test_the_newest_actions_match_recent_hours_only(counted, embedder):
    connection, counter = counted
    await IndexManager(connection, embedder.signature).setup()
    episodic = EpisodicMemory(connection, embedder)
    tenant = Tenant("agent", "heavy")
    logs = stored_logs(tenant, 2_000, now=datetime.now(UTC), seed=3)
    await connection.collection("action_logs").insert_many(logs)
    newest = sorted(logs, key=lambda log: (log["timestamp"], log["_id"]), reverse=True)
    start = len(counter.documents)
    listed = await episodic.list_actions(tenant, limit=50)
    assert [action.id for action in listed] == [log["_id"] for log in newest[:50]]
    widest = max(await matched(connection, counter, start, "action_logs"))
    if connection.capabilities.mongoeco:  # MongoDB walks the index: one find, no bound
        assert widest <= 12 * 50, widest
    few = Tenant("agent", "light")
    await connection.collection("action_logs").insert_many(
        stored_logs(few, 30, now=datetime.now(UTC), seed=4)
    )
    assert len(await episodic.list_actions(few, limit=50)) == 30  # the last read has no bound


async def test_similar_actions_search_kept_logs(counted, embedder):
    """The tenant's logs are read once; later searches read the winners only, and a log
    another instance writes is found by the next search."""
    connection, counter = counted
    await IndexManager(connection, embedder.signature).setup()
    episodic = EpisodicMemory(connection, embedder)
    tenant = Tenant("agent", "u")
    logs = stored_logs(tenant, 500, now=datetime.now(UTC), seed=5)
    for log in logs:
        log["content"] = f"step {log['_id'][-6:]} of a plan"
        log["embedding"] = to_bson_vector(await embedder.embed_query(log["content"]))
    await connection.collection("action_logs").insert_many(logs)
    wanted = logs[17]["content"]
    first = await episodic.similar_actions(tenant, query=wanted, outcome=None, limit=3)
    assert first[0].action.content == wanted
    start = len(counter.documents)
    again = await episodic.similar_actions(tenant, query=wanted, outcome=None, limit=3)
    assert [hit.action.id for hit in again] == [hit.action.id for hit in first]
    assert again[0].action.feedback == logs[17]["feedback"]  # read whole
    assert max(await matched(connection, counter, start, "action_logs")) <= 3 + 5
    other = EpisodicMemory(connection, embedder)
    action_id = await other.log_action(
        tenant, session_id="s", action_type="plan", outcome="success", content="zebra quartet"
    )
    found = await episodic.similar_actions(tenant, query="zebra quartet", outcome=None, limit=1)
    assert found[0].action.id == action_id
    await other.aclose()
    await episodic.aclose()


# --- the console -----------------------------------------------------------------------------


async def test_the_actions_page_matches_recent_actions_only(counted, embedder, settings):
    connection, counter = counted
    await IndexManager(connection, embedder.signature).setup()
    memories = MemorySystem(connection, embedder)
    app = create_console_app(memories, settings=console_settings(settings), token=TOKEN)
    widest = {}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
    ) as client:
        await client.post("/login", data={"secret": TOKEN})
        for size in (200, 2_000):
            tenant = Tenant(f"agent-{size}", "u")
            logs = stored_logs(tenant, size, now=datetime.now(UTC), days=14, seed=size)
            newest = max(logs, key=lambda log: (log["timestamp"], log["_id"]))
            newest["content"] = "the newest action"
            await connection.collection("action_logs").insert_many(logs)
            page = {"agent": tenant.agent_id, "user": tenant.user_id}
            assert (await client.get("/actions", params=page)).status_code == 200
            start = len(counter.documents)
            response = await client.get("/actions", params=page)
            assert response.status_code == 200 and "the newest action" in response.text
            widest[size] = max(await matched(connection, counter, start, "action_logs"))
    await memories.aclose()
    if connection.capabilities.mongoeco:
        # 200 shown: three days of two weeks hold them at 2,000 (all 200 are read)
        assert widest[200] == 200 and widest[2_000] <= 600, widest


# --- migration -------------------------------------------------------------------------------


async def test_logs_stored_before_hours_get_theirs(setup):
    logs = stored_logs(Tenant("agent", "old"), 5, now=datetime.now(UTC), seed=6)
    for log in logs:
        del log["hour"]
    collection = setup.collection("action_logs")
    await collection.insert_many(logs)
    assert await action_hours(collection) == 5
    for log in logs:
        stored = await collection.find_one({"_id": log["_id"]}, {"hour": 1})
        assert stored["hour"] == hour_of(log["timestamp"])
    assert await action_hours(collection) == 0

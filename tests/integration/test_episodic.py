"""Episodic memory over the wire: logging, feedback credited to the prompt's memories (with and
without transactions, crashes included), similar actions, success rates, retention, forget."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
import structlog
from bson.binary import Binary

from agent_memory.errors import ConflictError, InvalidInputError, NotFoundError
from agent_memory.memory.episodic.memory import EpisodicConfig, EpisodicMemory, Feedback
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.search.fusion import relevances
from agent_memory.tenancy import Tenant

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")
ALICE_ELSEWHERE = Tenant("other-agent", "alice")  # same user id under another agent


class Crash(Exception):
    """Stands in for a process dying between two writes."""


@pytest.fixture
async def episodic(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    return EpisodicMemory(connection, embedder)


@pytest.fixture
async def memories(connection):
    """Memory documents as long-term memory stores them: some with feedback, some without."""
    docs = [
        {"_id": "mem_a1", **ALICE.filter(), "content": "Alice lives in Berlin"},
        {**ALICE.filter(), "_id": "mem_a2", "content": "Alice likes tea"},
        {**ALICE.filter(), "_id": "mem_a3", "content": "Alice is a nurse"},
        {**BOB.filter(), "_id": "mem_b1", "content": "Bob likes coffee"},
        {**ALICE_ELSEWHERE.filter(), "_id": "mem_x1", "content": "Alice, seen by another agent"},
    ]
    docs[1]["feedback"] = {"count": 2, "sum": 1.0}
    await connection.collection("memories").insert_many(docs)
    return connection.collection("memories")


async def feedback_of(memories, memory_id):
    doc = await memories.find_one({"_id": memory_id})
    stored = doc.get("feedback")
    return None if stored is None else (stored["count"], stored["sum"])


async def snapshot(memories):
    return {doc["_id"]: doc.get("feedback") async for doc in memories.find({})}


async def log(episodic, tenant=ALICE, **kwargs):
    fields = {"session_id": "s1", "action_type": "query_response", "outcome": "success"}
    return await episodic.log_action(tenant, **{**fields, **kwargs})


def use_transactions(connection, enabled: bool) -> None:
    """Choose the feedback write path. The embedded engine runs transactions, but exclusively,
    so the capability probe reports them unusable; a test with one session may use them."""
    connection.capabilities = dataclasses.replace(connection.capabilities, transactions=enabled)


@pytest.fixture
def no_transactions(connection):
    """Treated as a server without transactions (a standalone mongod): ordered writes."""
    use_transactions(connection, False)


@pytest.fixture
def with_transactions(connection):
    use_transactions(connection, True)


# --- logging -------------------------------------------------------------------------------


async def test_log_action_stores_the_documented_shape(episodic, connection, embedder):
    action_id = await log(
        episodic,
        task_id="task_1",
        action_type="tool_call",
        tool="hybrid_search",
        input={"query": "vector search optimization"},
        output={"hits": 3},
        duration_ms=150,
        tokens=1500,
        model="claude",
        memory_ids=["mem_a1", "mem_a2", "mem_a1"],
        metadata={"route": "memory"},
    )
    assert action_id.startswith("act_")
    assert embedder.calls == [("document", 1)]
    doc = await connection.collection("action_logs").find_one({"_id": action_id})
    assert {k: doc[k] for k in ("agent_id", "user_id", "session_id", "task_id")} == {
        "agent_id": "agent",
        "user_id": "alice",
        "session_id": "s1",
        "task_id": "task_1",
    }
    assert doc["action"] == {
        "tool": "hybrid_search",
        "input": {"query": "vector search optimization"},
        "output": {"hits": 3},
        "duration_ms": 150,
        "truncated": False,
    }
    assert doc["metadata"] == {"model": "claude", "tokens": 1500, "route": "memory"}
    assert doc["memory_ids"] == ["mem_a1", "mem_a2"]  # the manifest, once each
    assert doc["content"] == "tool_call hybrid_search query: vector search optimization"
    assert isinstance(doc["embedding"], Binary) and doc["embedding"].subtype == 9
    assert doc["feedback"] == {} and doc["timestamp"].tzinfo is not None

    action = await episodic.get_action(ALICE, action_id)
    assert (action.tool, action.model, action.tokens, action.metadata) == (
        "hybrid_search",
        "claude",
        1500,
        {"route": "memory"},
    )
    assert action.memory_ids == ("mem_a1", "mem_a2") and action.outcome == "success"


async def test_a_given_embedding_costs_no_provider_call(episodic, embedder):
    vector = await embedder.embed_query("reset my password")
    embedder.calls.clear()
    action_id = await log(episodic, content="reset my password", embedding=vector)
    assert embedder.calls == []
    hits = await episodic.similar_actions(ALICE, query_vector=vector)
    assert [hit.action.id for hit in hits] == [action_id]
    assert embedder.calls == []


async def test_oversize_payloads_are_cut_with_a_visible_marker(episodic):
    limit = episodic.config.max_payload_chars
    action_id = await log(
        episodic, input={"document": "y" * (2 * limit)}, output="x" * (limit + 10), tool="read"
    )
    action = await episodic.get_action(ALICE, action_id)
    assert action.truncated is True
    assert action.output.startswith("x" * limit) and action.output.endswith(
        f"[truncated: {limit} of {limit + 10} characters kept]"
    )
    assert isinstance(action.input, str) and "[truncated:" in action.input
    assert len(action.input) < limit + 100
    assert len(action.content) <= episodic.config.max_content_chars


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"outcome": "succeeded"}, "outcome"),
        ({"outcome": None}, "outcome"),
        ({"duration_ms": -1}, "duration_ms"),
        ({"duration_ms": True}, "duration_ms"),
        ({"duration_ms": float("nan")}, "duration_ms"),
        ({"tokens": -5}, "tokens"),
        ({"tokens": 2.5}, "tokens"),
        ({"session_id": 7}, "session_id"),
        ({"action_type": ""}, "action_type"),
        ({"task_id": {"$ne": None}}, "task_id"),
        ({"tool": ["x"]}, "tool"),
        ({"memory_ids": ["mem_a1", 42]}, "memory_ids"),
        ({"memory_ids": [{"$gt": ""}]}, "memory_ids"),
        ({"memory_ids": "mem_a1"}, "memory_ids"),
        ({"memory_ids": [f"m{i}" for i in range(201)]}, "limit is 200"),
        ({"input": {"$where": "sleep(1000)"}}, r"\$where"),
        ({"output": {"a.b": 1}}, "a.b"),
        ({"input": {"nested": [{"$set": 1}]}}, r"\$set"),
        ({"input": {"when": {1, 2}}}, "cannot be stored"),
        ({"metadata": {"$inc": 1}}, r"\$inc"),
        ({"metadata": {"model": "x"}}, "model="),
        ({"metadata": {"blob": "z" * 9_000}}, "metadata"),
        ({"content": "   "}, "content"),
        ({"content": "c" * 8_001}, "content"),
        ({"embedding": [0.1, 0.2]}, "dimensions"),
        ({"embedding": [float("nan")] * 256}, "NaN"),
        ({"timestamp": datetime(2030, 1, 1)}, "timezone"),
        ({"timestamp": datetime.now(UTC) - timedelta(days=40)}, "timestamp"),
        ({"timestamp": datetime.now(UTC) + timedelta(days=1)}, "timestamp"),
    ],
)
async def test_bad_log_input_writes_nothing(episodic, connection, embedder, kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        await log(episodic, **kwargs)
    assert await connection.collection("action_logs").count_documents({}) == 0
    assert embedder.calls == []


async def test_bad_tenant_and_ids_are_refused(episodic):
    with pytest.raises(InvalidInputError, match="Tenant"):
        await log(episodic, tenant={"agent_id": "agent", "user_id": "alice"})
    with pytest.raises(InvalidInputError, match="action_id"):
        await episodic.get_action(ALICE, {"$ne": None})
    with pytest.raises(NotFoundError):
        await episodic.get_action(ALICE, "act_missing")


async def test_an_action_of_another_tenant_is_not_found(episodic):
    action_id = await log(episodic)
    for other in (BOB, ALICE_ELSEWHERE):
        with pytest.raises(NotFoundError):
            await episodic.get_action(other, action_id)


# --- feedback ------------------------------------------------------------------------------


async def test_feedback_credits_exactly_the_listed_memories_of_the_tenant(episodic, memories):
    action_id = await log(episodic, memory_ids=["mem_a1", "mem_a2", "mem_b1", "mem_x1", "mem_gone"])
    before = await snapshot(memories)
    result = await episodic.add_feedback(ALICE, action_id, rating=5)
    assert result.credited == 1.0 and result.rating == 5
    assert result.memory_ids == ("mem_a1", "mem_a2", "mem_b1", "mem_x1", "mem_gone")
    assert await feedback_of(memories, "mem_a1") == (1, 1.0)  # feedback created
    assert await feedback_of(memories, "mem_a2") == (3, 2.0)  # added to what was there
    after = await snapshot(memories)
    # Not listed, or listed but another tenant's: untouched.
    for untouched in ("mem_a3", "mem_b1", "mem_x1"):
        assert after[untouched] == before[untouched]
    stored = (await episodic.get_action(ALICE, action_id)).feedback
    assert stored["rating"] == 5 and stored["credited"] == 1.0
    assert stored["updated_at"].tzinfo is not None


@pytest.mark.usefixtures("memories")
@pytest.mark.parametrize("transactions", [True, False], ids=["transaction", "ordered"])
async def test_rerating_adjusts_by_the_difference_and_counts_once(
    episodic, memories, connection, transactions
):
    use_transactions(connection, transactions)
    action_id = await log(episodic, memory_ids=["mem_a1", "mem_a2"])
    await episodic.add_feedback(ALICE, action_id, rating=5)
    await episodic.add_feedback(ALICE, action_id, rating=1)  # the user changed their mind
    assert await feedback_of(memories, "mem_a1") == (1, -1.0)
    assert await feedback_of(memories, "mem_a2") == (3, 0.0)
    # Given again, feedback replaces the earlier one entirely: the rating is gone.
    result = await episodic.add_feedback(ALICE, action_id, helpful=True, correction="use v2")
    assert (result.rating, result.helpful, result.correction, result.credited) == (
        None,
        True,
        "use v2",
        0.5,
    )
    assert await feedback_of(memories, "mem_a1") == (1, 0.5)
    assert await feedback_of(memories, "mem_a2") == (3, 1.5)
    # `helpful` given with a rating does not override it; the correction is cleared.
    result = await episodic.add_feedback(ALICE, action_id, rating=1, helpful=True)
    assert (result.rating, result.helpful, result.correction, result.credited) == (
        1,
        True,
        None,
        -1.0,
    )
    assert await feedback_of(memories, "mem_a1") == (1, -1.0)
    same = await episodic.add_feedback(ALICE, action_id, rating=1, helpful=True)  # sent twice
    assert same == result and await feedback_of(memories, "mem_a1") == (1, -1.0)
    action = await episodic.get_action(ALICE, action_id)
    assert "pending" not in action.feedback and action.feedback["credited"] == -1.0
    assert "correction" not in action.feedback


async def test_helpful_alone_counts_half_and_a_correction_alone_nothing(episodic, memories):
    action_id = await log(episodic, memory_ids=["mem_a1"])
    await episodic.add_feedback(ALICE, action_id, correction="the answer missed the v2 API")
    assert await feedback_of(memories, "mem_a1") is None
    await episodic.add_feedback(ALICE, action_id, helpful=False)
    assert await feedback_of(memories, "mem_a1") == (1, -0.5)
    await episodic.add_feedback(ALICE, action_id, helpful=True)
    assert await feedback_of(memories, "mem_a1") == (1, 0.5)
    await episodic.add_feedback(ALICE, action_id, rating=2, helpful=True)  # the rating wins
    assert await feedback_of(memories, "mem_a1") == (1, -0.5)


@pytest.mark.parametrize("transactions", [True, False], ids=["transaction", "ordered"])
async def test_feedback_given_again_replaces_the_earlier_one_entirely(
    episodic, memories, connection, transactions
):
    """Issue 15 item 7: a rating, then "not helpful" with a correction, leaves no rating."""
    use_transactions(connection, transactions)
    action_id = await log(episodic, memory_ids=["mem_a1", "mem_a2"])
    first = await episodic.add_feedback(ALICE, action_id, rating=4)
    assert first.credited == 0.5
    assert await feedback_of(memories, "mem_a1") == (1, 0.5)
    assert await feedback_of(memories, "mem_a2") == (3, 1.5)

    result = await episodic.add_feedback(
        ALICE, action_id, helpful=False, correction="I moved to Porto"
    )
    assert (result.rating, result.helpful, result.correction, result.credited) == (
        None,
        False,
        "I moved to Porto",
        -0.5,
    )
    stored = (await episodic.get_action(ALICE, action_id)).feedback
    assert "rating" not in stored and stored["helpful"] is False
    assert stored["correction"] == "I moved to Porto" and stored["credited"] == -0.5
    assert "pending" not in stored
    # Only the new state is credited: -0.5 instead of +0.5, the action still counted once.
    assert await feedback_of(memories, "mem_a1") == (1, -0.5)
    assert await feedback_of(memories, "mem_a2") == (3, 0.5)
    rates = await episodic.success_rates("agent", "query_response")
    assert rates.rated == 0 and rates.average_rating is None


@pytest.mark.parametrize("transactions", [True, False], ids=["transaction", "ordered"])
async def test_a_correction_alone_after_a_rating_clears_the_ratings_credit(
    episodic, memories, connection, transactions
):
    use_transactions(connection, transactions)
    action_id = await log(episodic, memory_ids=["mem_a1", "mem_a2"])
    before = await snapshot(memories)
    await episodic.add_feedback(ALICE, action_id, rating=5, helpful=True)
    assert await feedback_of(memories, "mem_a1") == (1, 1.0)

    result = await episodic.add_feedback(ALICE, action_id, correction="use the v2 API")
    assert (result.rating, result.helpful, result.correction, result.credited) == (
        None,
        None,
        "use the v2 API",
        None,
    )
    stored = (await episodic.get_action(ALICE, action_id)).feedback
    assert stored["correction"] == "use the v2 API"
    assert not {"rating", "helpful", "credited", "pending"} & set(stored)
    # The action no longer credits anything: its value and its count are taken back.
    after = await snapshot(memories)
    assert after["mem_a1"]["count"] == 0 and after["mem_a1"]["sum"] == 0.0
    assert (after["mem_a2"]["count"], after["mem_a2"]["sum"]) == (
        before["mem_a2"]["count"],
        before["mem_a2"]["sum"],
    )
    # Sent again: the same state, nothing written; a new rating counts once again.
    again = await episodic.add_feedback(ALICE, action_id, correction="use the v2 API")
    assert again == result
    await episodic.add_feedback(ALICE, action_id, rating=2, correction="use the v2 API")
    assert await feedback_of(memories, "mem_a1") == (1, -0.5)
    assert await feedback_of(memories, "mem_a2") == (3, 0.5)


@pytest.mark.usefixtures("no_transactions")
async def test_a_crashed_credit_taken_back_is_repaired_once(episodic, memories, monkeypatch):
    """Taking a credit back (count -1) goes through the same pending/repair protocol."""
    action_id = await log(episodic, memory_ids=["mem_a1", "mem_a2"])
    await episodic.add_feedback(ALICE, action_id, rating=1)
    ledger = episodic._feedback
    original = ledger._clear

    async def crash(*args, **kwargs):
        raise Crash

    monkeypatch.setattr(ledger, "_clear", crash)
    with pytest.raises(Crash):
        await episodic.add_feedback(ALICE, action_id, correction="wrong city")
    raw = (await episodic._logs.find_one({"_id": action_id}))["feedback"]
    assert raw["pending"]["delta"] == 1.0 and raw["pending"]["count"] == -1
    monkeypatch.setattr(ledger, "_clear", original)
    assert await episodic.repair_pending_credits() == 1
    assert await episodic.repair_pending_credits() == 0
    assert await feedback_of(memories, "mem_a1") == (0, 0.0)
    assert await feedback_of(memories, "mem_a2") == (2, 1.0)


async def test_retried_request_with_the_same_key_is_a_no_op(episodic, memories):
    action_id = await log(episodic, memory_ids=["mem_a1"])
    first = await episodic.add_feedback(ALICE, action_id, rating=5, idempotency_key="req-1")
    again = await episodic.add_feedback(ALICE, action_id, rating=5, idempotency_key="req-1")
    assert again == first
    assert await feedback_of(memories, "mem_a1") == (1, 1.0)
    # A late retry of an older request must not undo a newer one.
    await episodic.add_feedback(ALICE, action_id, rating=2, idempotency_key="req-2")
    await episodic.add_feedback(ALICE, action_id, rating=5, idempotency_key="req-1")
    assert (await episodic.get_action(ALICE, action_id)).feedback["rating"] == 2
    assert await feedback_of(memories, "mem_a1") == (1, -0.5)
    with pytest.raises(ConflictError, match="different feedback"):
        await episodic.add_feedback(ALICE, action_id, rating=4, idempotency_key="req-2")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rating": 0}, "from 1 to 5"),
        ({"rating": 6}, "from 1 to 5"),
        ({"rating": 3.5}, "int"),
        ({"rating": True}, "int"),
        ({"rating": "5"}, "int"),
        ({"helpful": "yes"}, "bool"),
        ({"helpful": 1}, "bool"),
        ({"correction": ""}, "correction"),
        ({"correction": "c" * 4_001}, "correction"),
        ({}, "give a rating"),
        ({"rating": 4, "idempotency_key": 12}, "idempotency_key"),
    ],
)
async def test_bad_feedback_writes_nothing(episodic, memories, kwargs, message):
    action_id = await log(episodic, memory_ids=["mem_a1", "mem_a2"])
    before = await snapshot(memories)
    with pytest.raises(InvalidInputError, match=message):
        await episodic.add_feedback(ALICE, action_id, **kwargs)
    assert (await episodic.get_action(ALICE, action_id)).feedback == {}
    assert await snapshot(memories) == before


async def test_feedback_on_another_tenants_action_is_not_found(episodic, memories):
    action_id = await log(episodic, memory_ids=["mem_a1"])
    before = await snapshot(memories)
    for other in (BOB, ALICE_ELSEWHERE):
        with pytest.raises(NotFoundError):
            await episodic.add_feedback(other, action_id, rating=1)
    with pytest.raises(NotFoundError):
        await episodic.add_feedback(ALICE, "act_unknown", rating=1)
    with pytest.raises(InvalidInputError):
        await episodic.add_feedback(ALICE, 42, rating=1)
    assert (await episodic.get_action(ALICE, action_id)).feedback == {}
    assert await snapshot(memories) == before


@pytest.mark.usefixtures("with_transactions")
async def test_a_failed_transaction_leaves_nothing_written(episodic, memories, monkeypatch):
    action_id = await log(episodic, memory_ids=["mem_a1", "mem_a2"])
    before = await snapshot(memories)
    ledger = episodic._feedback
    original = ledger._apply

    async def apply_then_crash(*args, **kwargs):
        await original(*args, **kwargs)  # the memories are written inside the transaction...
        raise Crash

    monkeypatch.setattr(ledger, "_apply", apply_then_crash)
    with pytest.raises(Crash):
        await episodic.add_feedback(ALICE, action_id, rating=5)
    # ...and rolled back with the action's update.
    assert (await episodic.get_action(ALICE, action_id)).feedback == {}
    assert await snapshot(memories) == before
    monkeypatch.setattr(ledger, "_apply", original)
    await episodic.add_feedback(ALICE, action_id, rating=5)
    assert await feedback_of(memories, "mem_a1") == (1, 1.0)


@pytest.mark.usefixtures("no_transactions")
async def test_crash_after_crediting_is_repaired_without_double_counting(
    episodic, memories, monkeypatch
):
    action_id = await log(episodic, memory_ids=["mem_a1", "mem_a2"])
    ledger = episodic._feedback
    original = ledger._clear

    async def crash(*args, **kwargs):
        raise Crash

    monkeypatch.setattr(ledger, "_clear", crash)
    with pytest.raises(Crash):
        await episodic.add_feedback(ALICE, action_id, rating=5)
    assert await feedback_of(memories, "mem_a1") == (1, 1.0)  # credited, pending not cleared
    raw = (await episodic._logs.find_one({"_id": action_id}))["feedback"]
    assert raw["pending"]["delta"] == 1.0 and raw["credited"] == 1.0

    monkeypatch.setattr(ledger, "_clear", original)
    assert await episodic.repair_pending_credits() == 1
    assert await feedback_of(memories, "mem_a1") == (1, 1.0)  # not applied a second time
    assert await feedback_of(memories, "mem_a2") == (3, 2.0)
    assert await episodic.repair_pending_credits(agent_id="agent") == 0
    assert "pending" not in (await episodic._logs.find_one({"_id": action_id}))["feedback"]


@pytest.mark.usefixtures("no_transactions")
async def test_crash_before_crediting_is_finished_by_the_next_feedback(
    episodic, memories, monkeypatch
):
    action_id = await log(episodic, memory_ids=["mem_a1", "mem_a2"])
    ledger = episodic._feedback
    original = ledger._apply

    async def crash(*args, **kwargs):
        raise Crash

    monkeypatch.setattr(ledger, "_apply", crash)
    with pytest.raises(Crash):
        await episodic.add_feedback(ALICE, action_id, rating=5)
    assert await feedback_of(memories, "mem_a1") is None  # recorded as pending only
    monkeypatch.setattr(ledger, "_apply", original)
    # The user re-rates: the pending credit of 5 is finished first, then adjusted to 4.
    result = await episodic.add_feedback(ALICE, action_id, rating=4)
    assert result.credited == 0.5
    assert await feedback_of(memories, "mem_a1") == (1, 0.5)
    assert await feedback_of(memories, "mem_a2") == (3, 1.5)
    assert "pending" not in (await episodic._logs.find_one({"_id": action_id}))["feedback"]
    assert await episodic.repair_pending_credits() == 0


@pytest.mark.usefixtures("no_transactions")
async def test_crash_between_memory_updates_and_repair_twice(episodic, memories, monkeypatch):
    """Repair racing with (or repeating) a half-applied credit applies it once per memory."""
    action_id = await log(episodic, memory_ids=["mem_a1", "mem_a2"])
    ledger = episodic._feedback
    original = ledger._apply

    async def credit_one_memory_then_crash(tenant, memory_ids, credit, **kwargs):
        await original(tenant, memory_ids[:1], credit, **kwargs)
        raise Crash

    monkeypatch.setattr(ledger, "_apply", credit_one_memory_then_crash)
    with pytest.raises(Crash):
        await episodic.add_feedback(ALICE, action_id, rating=1)
    monkeypatch.setattr(ledger, "_apply", original)
    doc = await episodic._logs.find_one({"_id": action_id})
    await ledger._finish(doc)  # a repair that ran, and another one from a stale read
    await ledger._finish(doc)
    assert await feedback_of(memories, "mem_a1") == (1, -1.0)
    assert await feedback_of(memories, "mem_a2") == (3, 0.0)


@pytest.mark.usefixtures("no_transactions")
async def test_concurrent_ratings_of_one_action_settle_on_the_last_written(episodic, memories):
    import asyncio

    action_id = await log(episodic, memory_ids=["mem_a1"])
    results = await asyncio.gather(
        *(episodic.add_feedback(ALICE, action_id, rating=r) for r in (1, 5, 2, 4, 3, 5)),
        return_exceptions=True,
    )
    # Losing the race every time is allowed ("send it again"); anything else is not.
    assert all(isinstance(r, Feedback | ConflictError) for r in results)
    assert any(isinstance(r, Feedback) for r in results)
    stored = (await episodic.get_action(ALICE, action_id)).feedback
    assert "pending" not in stored
    assert await feedback_of(memories, "mem_a1") == (1, (stored["rating"] - 3) / 2)


# --- similar actions -----------------------------------------------------------------------

PAST_ACTIONS = [
    ("tool_call", "success", "reset a forgotten password through the account page"),
    ("tool_call", "failure", "reset password failed: the account is locked"),
    ("query_response", "success", "explain vector search index options"),
    ("tool_call", "success", "book a table at an italian restaurant"),
    ("tool_call", "success", "convert currency from euro to dollar"),
]


@pytest.fixture
async def past(episodic):
    ids = {}
    for action_type, outcome, content in PAST_ACTIONS:  # the best match is logged first
        ids[content] = await log(
            episodic, action_type=action_type, outcome=outcome, content=content
        )
    await log(episodic, tenant=BOB, action_type="tool_call", content="reset password for bob")
    return ids


async def test_similar_actions_are_found_by_meaning_not_recency(episodic, past):
    hits = await episodic.similar_actions(ALICE, query="how do I reset my password?")
    assert hits[0].action.content == PAST_ACTIONS[0][2]
    assert {hit.action.user_id for hit in hits} == {"alice"}
    assert all(hit.action.outcome == "success" for hit in hits)  # the default filter
    assert hits[0].score >= hits[-1].score and "vector #1" in hits[0].explanation


async def test_similar_actions_score_the_searchers_relevance(episodic, past):
    """``score`` is the relevance from 0 to 1 the search tier gave each action, the scale
    every kind of memory reports on every tier; the tier's own fused score, what ``score``
    was before, stays reachable as ``fused_score``."""
    hits = await episodic.similar_actions(ALICE, query="reset my password", outcome=None, limit=5)
    scores = [hit.score for hit in hits]
    assert len(hits) == 5 and all(0 <= score <= 1 for score in scores)
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    fused = [hit.fused_score for hit in hits]
    scale = episodic._searcher.relevance_scale
    assert scores == pytest.approx(relevances(fused, scale=scale))
    assert f"fused {fused[0]:.4f}" in hits[0].explanation


async def test_similar_actions_respect_filters_and_tenant(episodic, past):
    query = "reset password"
    anything = await episodic.similar_actions(ALICE, query=query, outcome=None, limit=10)
    assert {h.action.outcome for h in anything} == {"success", "failure"}
    failures = await episodic.similar_actions(ALICE, query=query, outcome="failure")
    assert [h.action.content for h in failures] == [PAST_ACTIONS[1][2]]
    answers = await episodic.similar_actions(ALICE, query=query, action_type="query_response")
    assert [h.action.action_type for h in answers] == ["query_response"]
    bobs = await episodic.similar_actions(BOB, query=query)
    assert [h.action.content for h in bobs] == ["reset password for bob"]
    assert await episodic.similar_actions(ALICE_ELSEWHERE, query=query) == []


async def test_min_rating_keeps_only_well_rated_actions(episodic, past):
    good = past[PAST_ACTIONS[4][2]]
    await episodic.add_feedback(ALICE, good, rating=5)
    await episodic.add_feedback(ALICE, past[PAST_ACTIONS[0][2]], rating=2)
    # limit=1: only over-fetching reaches past the best (poorly rated) match.
    hits = await episodic.similar_actions(ALICE, query="reset my password", min_rating=4, limit=1)
    assert [hit.action.id for hit in hits] == [good]  # a poor match, but the only well-rated one
    unfiltered = await episodic.similar_actions(ALICE, query="reset my password", limit=1)
    assert unfiltered[0].action.id == past[PAST_ACTIONS[0][2]]
    assert hits[0].action.feedback["rating"] == 5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "query"),
        ({"query": "x", "outcome": "won"}, "outcome"),
        ({"query": "x", "action_type": {"$ne": None}}, "action_type"),
        ({"query": "x", "min_rating": 0}, "min_rating"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": True}, "limit"),
        ({"query_vector": np.ones(3)}, "dimensions"),
    ],
)
async def test_bad_similar_queries_are_refused(episodic, kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        await episodic.similar_actions(ALICE, **kwargs)


# --- success rates and retention -----------------------------------------------------------

NOW = datetime.now(UTC)
LATER = NOW + timedelta(days=20)  # from here, logs before about NOW - 10 days are past retention


async def fill_history(episodic):
    """Four weeks of actions from two users of one agent, plus another agent's."""
    outcomes = ["success", "success", "failure", "partial"]
    for day in range(28):
        for index, tenant in enumerate((ALICE, BOB)):
            action_id = await log(
                episodic,
                tenant=tenant,
                action_type="tool_call" if index == 0 else "query_response",
                outcome=outcomes[(day + index) % 4],
                duration_ms=100 + day,
                tokens=10,
                timestamp=NOW - timedelta(days=day, hours=index),
                content=f"step {day}",
                embedding=np.ones(256, dtype=np.float32),
            )
            if day % 3 == 0:
                await episodic.add_feedback(tenant, action_id, rating=1 + day % 5)
    await log(episodic, tenant=ALICE_ELSEWHERE, timestamp=NOW - timedelta(days=27))


def comparable(rates):
    return (
        rates.total,
        rates.counts,
        rates.rated,
        rates.average_rating,
        rates.average_duration_ms,
        rates.tokens,
    )


@pytest.fixture
async def history(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    episodic = EpisodicMemory(connection, embedder, config=EpisodicConfig(retention_batch_size=5))
    await fill_history(episodic)
    return episodic


async def test_success_rates_per_agent_over_a_window(history):
    soon = NOW + timedelta(hours=1)  # the window is [now - days, now): include today's logs
    rates = await history.success_rates("agent", "tool_call", days=7, now=soon)
    assert rates.total == 7 and rates.summarised == 0
    assert rates.counts == {"success": 4, "failure": 2, "partial": 1}
    assert rates.success_rate == pytest.approx(4 / 7)
    assert rates.failure_rate + rates.partial_rate + rates.success_rate == pytest.approx(1)
    assert rates.average_duration_ms == pytest.approx(103)  # days 0..6
    assert rates.rated == 3 and rates.average_rating == pytest.approx((1 + 4 + 2) / 3)
    everything = await history.success_rates("agent", days=60, now=soon)
    assert everything.total == 56 and everything.tokens == 560  # both users, both types
    other = await history.success_rates("other-agent", days=60, now=soon)
    assert other.total == 1
    with pytest.raises(InvalidInputError):
        await history.success_rates("agent", days=0)


async def test_retention_summarises_old_days_and_rates_stay_exact(history, connection):
    before = {
        kind: await history.success_rates("agent", kind, days=60, now=LATER)
        for kind in ("tool_call", "query_response", None)
    }
    report = await history.apply_retention(now=LATER)
    assert report.deleted == report.summarised > 0 and not report.more
    cutoff = datetime(LATER.year, LATER.month, LATER.day, tzinfo=UTC) - timedelta(days=30)
    logs = connection.collection("action_logs")
    assert await logs.count_documents({"timestamp": {"$lt": cutoff}}) == 0
    assert await logs.count_documents({}) == 57 - report.deleted
    for kind, rates in before.items():
        after = await history.success_rates("agent", kind, days=60, now=LATER)
        assert comparable(after) == comparable(rates)
        assert after.summarised > 0
    # Summaries: one per agent, type and day, with no user data.
    summaries = await connection.collection("action_aggregates").find({}).to_list(None)
    keys = [(s["agent_id"], s["action_type"], s["day"]) for s in summaries]
    assert len(keys) == len(set(keys))
    assert sum(s["total"] for s in summaries) == report.summarised
    assert all("user_id" not in s for s in summaries)

    again = await history.apply_retention(now=LATER)
    assert (again.batches, again.deleted) == (0, 0)
    assert (
        sum(
            s["total"]
            for s in await connection.collection("action_aggregates").find({}).to_list(None)
        )
        == report.summarised
    )


async def test_retention_is_bounded_and_resumable_per_agent(history, connection):
    small = EpisodicMemory(
        history._connection,
        history._embedder,
        config=EpisodicConfig(retention_batch_size=1, retention_max_batches=3),
    )
    first = await small.apply_retention(agent_id="other-agent", now=LATER)
    assert (first.batches, first.deleted, first.more) == (1, 1, False)
    partial = await small.apply_retention(agent_id="agent", now=LATER)
    assert (partial.batches, partial.deleted, partial.more) == (3, 3, True)
    rest = await history.apply_retention(now=LATER)
    assert not rest.more and rest.batches > 0
    summaries = await connection.collection("action_aggregates").find({}).to_list(None)
    assert sum(s["total"] for s in summaries) == first.deleted + partial.deleted + rest.deleted


@pytest.mark.parametrize(
    ("crash_at", "on_call"),
    [("_summarise", 1), ("_write_summary", 2), ("_delete_batch", 2)],
    ids=["after-claim", "between-summaries", "after-summaries"],
)
async def test_retention_crash_anywhere_neither_loses_nor_double_counts(
    history, connection, monkeypatch, crash_at, on_call
):
    before = await history.success_rates("agent", None, days=60, now=LATER)
    retention = history._retention
    original = getattr(retention, crash_at)
    calls = {"n": 0}

    async def crash_on_call(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == on_call:
            raise Crash
        return await original(*args, **kwargs)

    monkeypatch.setattr(retention, crash_at, crash_on_call)
    with pytest.raises(Crash):
        await history.apply_retention(now=LATER)
    # Exact even mid-crash: a claimed log counts live until a summary lists its batch.
    during = await history.success_rates("agent", None, days=60, now=LATER)
    assert comparable(during) == comparable(before)
    monkeypatch.setattr(retention, crash_at, original)

    report = await history.apply_retention(now=LATER)
    assert report.resumed == 1
    after = await history.success_rates("agent", None, days=60, now=LATER)
    assert comparable(after) == comparable(before)
    logs = connection.collection("action_logs")
    summaries = await connection.collection("action_aggregates").find({}).to_list(None)
    assert await logs.count_documents({}) + sum(s["total"] for s in summaries) == 57
    assert await logs.count_documents({"retention_batch": {"$exists": True}}) == 0


# --- forget, round trips, logs -------------------------------------------------------------


async def test_forget_user_deletes_their_logs_and_keeps_summaries(history, connection):
    await history.apply_retention(now=LATER)
    summaries = await connection.collection("action_aggregates").count_documents({})
    bob_logs = await connection.collection("action_logs").count_documents(BOB.filter())
    assert await history.forget_user(BOB) == {"action_logs": bob_logs}
    assert await connection.collection("action_logs").count_documents(BOB.filter()) == 0
    assert await connection.collection("action_logs").count_documents(ALICE.filter()) > 0
    assert await connection.collection("action_aggregates").count_documents({}) == summaries
    assert await history.forget_user(BOB) == {"action_logs": 0}


async def test_each_operation_sends_no_more_commands_than_documented(counted, embedder):
    connection, counter = counted
    await IndexManager(connection, embedder.signature).setup()
    await connection.collection("memories").insert_one({"_id": "mem_1", **ALICE.filter()})
    episodic = EpisodicMemory(connection, embedder)
    vector = await embedder.embed_query("reset password")

    def targets(sent_from: int) -> list[tuple[str, str]]:
        """The commands sent since ``sent_from``, each with the collection it names."""
        return [(name, str(body.get(name))) for name, body in counter.documents[sent_from:]]

    start = len(counter.documents)
    action_id = await log(episodic, memory_ids=["mem_1"], content="reset", embedding=vector)
    await episodic.drain()
    sent = targets(start)
    # The hour's mark beside the insert (one round trip), the search's token after it (the
    # tenant's first: no earlier token, so no write to log); the hour's release (not
    # awaited) once both landed.
    assert sorted(sent[:2]) == [("insert", "action_logs"), ("update", "action_hours")]
    assert sorted(sent[2:]) == [
        ("findAndModify", "search_generations"),
        ("update", "action_hours"),
    ]
    with counter.count() as sent:
        await episodic.get_action(ALICE, action_id)
    assert sent == ["find"]
    use_transactions(connection, True)
    start = len(counter.documents)
    await episodic.add_feedback(ALICE, action_id, rating=4, idempotency_key="k")
    await episodic.drain()
    sent = targets(start)
    # The action's hour, then its mark beside the ledger's transaction; the memories' new
    # ranking announced to searches after the commit; the hour released.
    assert sent[0] == ("find", "action_logs") and sent[-1] == ("update", "action_hours")
    # The memories' new ranking: their token swapped (one update, unlogged: the credit
    # names no memories, so a reader behind it reads the tenant's memories again).
    assert sorted(sent[1:-1]) == sorted(
        [
            ("update", "action_hours"),
            ("find", "action_logs"),
            ("update", "action_logs"),
            ("update", "memories"),
            ("commitTransaction", "1"),
            ("update", "search_generations"),
        ]
    )
    start = len(counter.documents)
    await episodic.add_feedback(ALICE, action_id, rating=4, idempotency_key="k")
    await episodic.drain()
    sent = targets(start)
    assert sent[0] == ("find", "action_logs") and sorted(sent[1:3]) == [
        ("find", "action_logs"),
        ("update", "action_hours"),
    ]
    start = len(counter.documents)
    await episodic.similar_actions(ALICE, query="reset password", query_vector=vector)
    # The tenant's token, its logs (kept from then on), the winners whole.
    assert targets(start) == [
        ("find", "search_generations"),
        ("find", "action_logs"),
        ("find", "action_logs"),
    ]
    start = len(counter.documents)
    await episodic.similar_actions(ALICE, query="reset password", query_vector=vector)
    assert targets(start) == [("find", "search_generations"), ("find", "action_logs")]
    start = len(counter.documents)
    await episodic.success_rates("agent")
    # The kept hours; the hours not counted yet (one aggregate per day of the window) and the
    # window's two ends, from their logs (concurrently); the new counts kept.
    sent = targets(start)
    assert sent[0] == ("find", "action_hours") and sent[-1] == ("update", "action_hours")
    assert set(sent[1:-1]) == {("aggregate", "action_logs")} and 2 <= len(sent) - 2 <= 33
    with counter.count() as sent:
        await episodic.success_rates("agent")
    # the kept hours; the two ends, one aggregate per day they fall on
    assert sorted(sent) in (["aggregate", "find"], ["aggregate", "aggregate", "find"])
    with counter.count() as sent:
        await episodic.apply_retention(agent_id="agent")
    assert sent == ["distinct", "find", "delete"]  # nothing claimed, nothing old
    with counter.count() as sent:
        await episodic.forget_user(BOB)
    assert sent == ["delete", "delete"]  # the logs, the search token

    use_transactions(connection, False)
    start = len(counter.documents)
    await episodic.add_feedback(ALICE, action_id, rating=1)
    await episodic.drain()
    sent = targets(start)
    # action (+ pending), memories, search generation, action (pending cleared), beside the
    # hour's mark after the action's hour was read; the hour released
    assert sent[0] == ("find", "action_logs") and sent[-1] == ("update", "action_hours")
    assert sorted(sent[1:-1]) == sorted(
        [
            ("update", "action_hours"),
            ("find", "action_logs"),
            ("update", "action_logs"),
            ("update", "memories"),
            ("update", "search_generations"),  # the token swapped, unlogged
            ("update", "action_logs"),
        ]
    )


async def test_logs_say_what_happened_never_the_payload(episodic, memories):
    secret = "my bank password is hunter2"
    with structlog.testing.capture_logs() as logs:
        action_id = await log(episodic, content=secret, input={"q": secret}, memory_ids=["mem_a1"])
        await episodic.add_feedback(ALICE, action_id, rating=5, correction=secret)
        await episodic.similar_actions(ALICE, query=secret)
    events = [entry["event"] for entry in logs]
    for expected in ("action_logged", "feedback_recorded", "similar_actions_found"):
        assert expected in events
    assert "hunter2" not in repr(logs)


async def test_list_actions_newest_first_by_session_memory_and_rating(episodic):
    now = datetime.now(UTC)
    ids = []
    for minutes, session, memory_ids in ((3, "s1", ["m1"]), (2, "s1", ["m1", "m2"]), (1, "s2", [])):
        ids.append(
            await episodic.log_action(
                ALICE,
                session_id=session,
                action_type="query_response",
                outcome="success",
                content=f"turn {minutes}",
                memory_ids=memory_ids,
                timestamp=now - timedelta(minutes=minutes),
                embed=False,
            )
        )
    await episodic.log_action(
        BOB,
        session_id="s1",
        action_type="query_response",
        outcome="success",
        embed=False,
        memory_ids=["m1"],
        content="bob's",
    )
    await episodic.log_action(
        ALICE_ELSEWHERE,
        session_id="s1",
        action_type="x",
        outcome="success",
        embed=False,
        memory_ids=["m1"],
        content="elsewhere",
    )
    await episodic.add_feedback(ALICE, ids[0], rating=4)
    await episodic.add_feedback(ALICE, ids[1], correction="no rating, just a correction")
    listed = await episodic.list_actions(ALICE)
    assert [a.id for a in listed] == [ids[2], ids[1], ids[0]]  # newest first, this tenant only
    assert [a.id for a in await episodic.list_actions(ALICE, session_id="s1")] == ids[1::-1]
    assert [a.id for a in await episodic.list_actions(ALICE, memory_id="m1")] == ids[1::-1]
    assert [a.id for a in await episodic.list_actions(ALICE, memory_id="m2")] == [ids[1]]
    rated = await episodic.list_actions(ALICE, memory_id="m1", rated=True)
    assert [a.id for a in rated] == [ids[0]] and rated[0].feedback["credited"] == 0.5
    assert [a.id for a in await episodic.list_actions(ALICE, limit=1)] == [ids[2]]
    for bad, match in (
        ({"limit": 0}, "limit"),
        ({"limit": 10_000}, "limit"),
        ({"rated": "yes"}, "rated must be a bool"),
        ({"memory_id": {"$ne": None}}, "memory_id"),
        ({"session_id": ""}, "session_id"),
    ):
        with pytest.raises(InvalidInputError, match=match):
            await episodic.list_actions(ALICE, **bad)

"""The console's pages at length (issue 36 item 7): the agent's counts answer past the
embedded engine's 50,000-document budget for one aggregate."""

from __future__ import annotations

import pytest

from agent_memory.ops import stats
from agent_memory.ops.stats import collect_stats

# Reaches into this process's embedded engine to lower its aggregate budget.
pytestmark = pytest.mark.mongoeco


def _engine(embedded_server):
    server = getattr(embedded_server, "_server", None)
    if server is None:
        pytest.skip("needs the embedded server of this process")
    return server._client._engine


@pytest.mark.parametrize(
    ("small", "per_key"),
    [(10**9, 100), (10, 1), (10, 1_000)],
    ids=["by-group-in-chunks", "key-by-key", "keys-too-many-for-their-documents"],
)
async def test_the_agents_counts_answer_past_the_engines_budget_for_one_aggregate(
    connection, embedded_server, monkeypatch, small, per_key
):
    from mongoeco.core.aggregation.cost import AggregationCostPolicy

    # The engine refuses a $group fed more than 50,000 documents; here 60, and the chunk
    # under it as 20,000 is under 50,000.
    monkeypatch.setattr(
        _engine(embedded_server), "aggregation_cost_policy", AggregationCostPolicy(60)
    )
    monkeypatch.setattr(stats, "CHUNK", 25, raising=False)
    monkeypatch.setattr(stats, "SMALL", small, raising=False)
    monkeypatch.setattr(stats, "PER_KEY", per_key, raising=False)
    logs = connection.collection("action_logs")
    outcomes = ("success", "failure")
    await logs.insert_many(
        [
            {
                "_id": f"act_{i:04d}",
                "agent_id": "agent",
                "user_id": f"u{i % 3}",
                "outcome": outcomes[i % 2],
            }
            for i in range(200)
        ]
        + [
            {"_id": "act_other", "agent_id": "other", "user_id": "u0", "outcome": "partial"},
            {"_id": "act_none", "agent_id": "agent", "user_id": None},  # no user, no outcome
        ]
    )
    await connection.collection("knowledge_chunks").insert_many(
        [
            {"agent_id": "agent", "user_id": "*", "source": f"doc-{i % 2}", "chunk_index": i}
            for i in range(5)
        ]
    )
    await connection.collection("memories").insert_many(
        [{"agent_id": "agent", "user_id": "u0", "memory_type": "fact"} for _ in range(3)]
        + [{"agent_id": "agent", "user_id": "u0", "status": "field"}]  # a memory's vectors
    )
    found = await collect_stats(connection, agent_id="agent")
    knowledge, memories = found.totals["knowledge docs"], found.totals["memories"]
    assert (knowledge.count, knowledge.documents) == (2, 5)
    assert (memories.count, memories.by) == (3, {"fact": 3})
    actions = found.totals["actions"]
    assert (actions.count, actions.by) == (201, {"success": 100, "failure": 100, "-": 1})
    per_user = {t.user_id: t.counts.get("actions") for t in found.tenants if t.user_id != "*"}
    assert per_user == {"u0": 67, "u1": 67, "u2": 66, None: 1}
    assert [t.counts for t in found.tenants if t.user_id == "*"] == [{"knowledge docs": 2}]
    # The console's page of users shows no counts per outcome: none are counted.
    plain = await collect_stats(connection, agent_id="agent", by=False)
    assert (plain.totals["actions"].count, plain.totals["actions"].by) == (201, {})
    assert {t.user_id: t.counts.get("actions") for t in plain.tenants if t.user_id != "*"} == (
        per_user
    )
    everything = await collect_stats(connection)
    assert everything.totals["actions"].count == 202 and everything.agents == ["agent", "other"]
    assert everything.totals["actions"].by["partial"] == 1

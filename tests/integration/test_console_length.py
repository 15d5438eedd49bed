"""The console's pages at length (issue 36 item 7): the agent's counts answer past the
embedded engine's 50,000-document budget for one aggregate."""

from __future__ import annotations

import pytest

from agent_memory.mongo.indexes import IndexManager
from agent_memory.ops import stats
from agent_memory.ops.stats import collect_stats
from agent_memory.providers.embedders.fake import FakeEmbedder

# Reaches into this process's embedded engine to lower its aggregate budget.
pytestmark = pytest.mark.mongoeco


def _engine(embedded_server):
    server = getattr(embedded_server, "_server", None)
    if server is None:
        pytest.skip("needs the embedded server of this process")
    return server._client._engine


@pytest.mark.parametrize("indexed", [False, True], ids=["no-indexes", "indexes"])
@pytest.mark.parametrize(
    ("small", "per_key"),
    [(10**9, 100), (10, 1), (10, 1_000)],
    ids=["by-group-in-chunks", "key-by-key", "keys-too-many-for-their-documents"],
)
async def test_the_agents_counts_answer_past_the_engines_budget_for_one_aggregate(
    connection, embedded_server, monkeypatch, small, per_key, indexed
):
    """With the indexes set up, keys are found in an index's order; without, by ranges."""
    from mongoeco.core.aggregation.cost import AggregationCostPolicy

    if indexed:
        await IndexManager(connection, FakeEmbedder().signature).setup()
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


async def test_the_agents_counts_ask_nothing_of_null_that_reads_every_document(
    connection, settings, monkeypatch
):
    """A find or count of null (``user_id: null``) can use no index on the embedded engine:
    its translation looks into every document of the tenant (264 ms for 100,000 actions,
    whether any is null or not). The counts find the strings through the index and count
    what they leave; a document without a user is still counted, under ``None``."""
    from pymongo import monitoring

    from agent_memory.mongo.connection import connect

    await IndexManager(connection, FakeEmbedder().signature).setup()
    monkeypatch.setattr(stats, "SMALL", 10, raising=False)
    monkeypatch.setattr(stats, "PER_KEY", 1, raising=False)
    sent: list[dict] = []
    sorted_by: list[str] = []

    class Reads(monitoring.CommandListener):
        def started(self, event):
            if event.command_name in ("find", "count"):
                sent.append(dict(event.command.get("filter") or event.command.get("query") or {}))
            if event.command_name == "find" and event.command.get("sort"):
                sorted_by.extend(event.command["sort"])

        def succeeded(self, event):
            pass

        def failed(self, event):
            pass

    logs = connection.collection("action_logs")
    await logs.insert_many(
        [
            {"agent_id": "agent", "user_id": f"u{i % 4}", "outcome": ("success", "failure")[i % 2]}
            for i in range(40)
        ]
    )
    async with await connect(settings, client_options={"event_listeners": [Reads()]}) as watched:
        found = await collect_stats(watched, agent_id="agent")

        def holds_null(value) -> bool:
            if isinstance(value, dict):
                return any(v is None or holds_null(v) for v in value.values())
            return isinstance(value, list) and any(v is None or holds_null(v) for v in value)

        assert sent and not [query for query in sent if holds_null(query)]
        # The users follow the agent in the logs' indexes: each is the first after the last
        # (the outcomes follow no index: found by ranges, unsorted).
        assert "user_id" in sorted_by and "outcome" not in sorted_by
        actions = found.totals["actions"]
        assert (actions.count, actions.by) == (40, {"success": 20, "failure": 20})
        assert {t.user_id: t.counts["actions"] for t in found.tenants} == dict.fromkeys(
            ["u0", "u1", "u2", "u3"], 10
        )
        # A log with no user (a number is no user id) and no outcome: counted under None
        # (its own outcomes are then asked of null, only because it exists).
        await logs.insert_one({"agent_id": "agent", "user_id": 7})
        found = await collect_stats(watched, agent_id="agent")
        assert found.totals["actions"].by == {"success": 20, "failure": 20, "-": 1}
        assert {t.user_id: t.counts["actions"] for t in found.tenants}[None] == 1

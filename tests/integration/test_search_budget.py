"""The corpora the plain tier keeps share one memory budget per connection: every store and
every user of it together, the least recently searched dropped first, and a user dropped is
read again (once) at their next search, with the same answers."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from agent_memory.memory.knowledge.base import KnowledgeBase
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import NewMemory
from agent_memory.mongo.connection import connect
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.search.snapshots import KeptBudget
from agent_memory.tenancy import Tenant


class Owner:
    def __init__(self) -> None:
        self.dropped: list[str] = []

    def _dropped(self, key: str) -> None:
        self.dropped.append(key)


def test_the_budget_drops_the_least_recently_used_corpora_of_every_owner():
    budget = KeptBudget(100)
    memories, knowledge = Owner(), Owner()
    budget.charge(memories, "alice", 40)
    budget.charge(knowledge, "alice", 30)
    budget.charge(memories, "bob", 20)
    budget.touch(memories, "alice")  # searched again: now the most recent
    budget.charge(memories, "carol", 30)  # 120 > 100: knowledge's alice goes first
    assert knowledge.dropped == ["alice"] and memories.dropped == []
    assert budget.used == 90 and len(budget) == 3
    budget.charge(memories, "bob", 45)  # bob grew (a write): 115, alice is now oldest
    assert memories.dropped == ["alice"] and budget.used == 75
    budget.release(memories, "carol")
    assert budget.used == 45 and len(budget) == 1
    budget.charge(memories, "dave", 500)  # larger than the budget: kept, alone
    assert memories.dropped == ["alice", "bob"] and len(budget) == 1
    assert budget.evicted == 3
    with pytest.raises(ValueError):
        KeptBudget(0)


@pytest.fixture
async def small(settings):
    """A connection whose kept corpora may use 8 MiB (the smallest setting)."""
    connection = await connect(settings.model_copy(update={"search_cache_mb": 8}))
    try:
        yield connection
    finally:
        await connection.client.drop_database(settings.database)
        await connection.close()


async def test_users_beyond_the_budget_are_dropped_and_read_again_with_the_same_answers(
    small, embedder
):
    await IndexManager(small, embedder.signature).setup()
    memory = LongTermMemory(small, embedder)
    knowledge = KnowledgeBase(small, embedder)
    users = [Tenant("agent", f"user-{i}") for i in range(16)]
    for user in users:
        await memory.store_many(
            user,
            [NewMemory(f"{user.user_id} note {n} about sailing " + "x" * 4000) for n in range(40)],
            consolidate=False,
        )
    first = {}
    for user in users:
        first[user] = [hit.memory.id for hit in await memory.retrieve(user, "sailing", k=5)]
    await knowledge.ingest(users[0], source="guide", text="How to reef a sail in a squall. " * 50)
    await knowledge.retrieve(users[0], "reef a sail")
    budget = small.kept_budget
    assert budget is memory._searcher.snapshots._budget is knowledge._searcher.snapshots._budget
    assert budget.evicted > 0 and budget.used <= budget.max_bytes
    refreshes = memory._searcher.snapshots.refreshes
    again = [hit.memory.id for hit in await memory.retrieve(users[0], "sailing", k=5)]
    assert again == first[users[0]]  # dropped long ago: read again, same answer
    assert memory._searcher.snapshots.refreshes == refreshes + 1
    await memory.aclose()


@pytest.mark.parametrize("words", [5, 30, 90])
async def test_the_budget_counts_what_a_kept_corpus_takes(connection, embedder, words):
    """The estimate a kept corpus is charged (``Corpus.nbytes``) is what Python allocates
    for it (tracemalloc), a little above rather than below, for short and long memories alike."""
    await IndexManager(connection, embedder.signature).setup()
    memory = LongTermMemory(connection, embedder)
    warm, user = Tenant("agent", "warm-up"), Tenant("agent", "measured")
    for tenant in (warm, user):
        await memory.store_many(
            tenant,
            [
                NewMemory(" ".join(f"w{(n * 7 + k) % 997}" for k in range(words)) + f" {n}")
                for n in range(400)
            ],
            consolidate=False,
        )
    vector = await embedder.embed_query("w1 w2")
    await memory.retrieve(warm, "w1 w2", query_vector=vector)  # the first search's own caches
    await memory.drain()
    gc.collect()
    tracing = tracemalloc.is_tracing()  # started by the run (-X tracemalloc): left running
    if not tracing:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        await memory.retrieve(user, "w1 w2", query_vector=vector)
        await memory.drain()
        gc.collect()
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        if not tracing:
            tracemalloc.stop()
    snapshots = memory._searcher.snapshots
    kept = snapshots.kept(memory.target, user.filter())
    assert kept is not None and len(kept.corpus) == 400
    assert 0.75 <= kept.corpus.nbytes / taken <= 1.33, (kept.corpus.nbytes, taken)
    await memory.aclose()

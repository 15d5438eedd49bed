"""Lists of ids longer than a server takes in one query, through every path that builds one.

The embedded engine refuses an ``_id`` ``$in`` of more than 494 values and an ``$or`` of more
than about 990 documents ("Expression tree is too large"); each path here sends 20,000 ids (or
the most its own bound allows) and the result must be exact: the lists go to the server a
bounded part at a time (:mod:`agent_memory.mongo.batches`).

One database of 2,500 memories of one user is stored once for the module; every path is sent
20,000 values, the user's memories spread among values that match nothing, so the lists are as
long as a history of 20,000 would make them while the embedded engine writes only the memories
it must (1 to 2 ms per document written: all 20,000 cost minutes). The tests that change
memories each take their own share of them.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from structlog.testing import capture_logs

from agent_memory.config import load_settings
from agent_memory.memory.conversation.memory import ConversationConfig, ConversationMemory
from agent_memory.memory.episodic.memory import EpisodicConfig, EpisodicMemory
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import NewMemory
from agent_memory.memory.working.memory import WorkingConfig, WorkingMemory
from agent_memory.mongo.connection import Connection, connect
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.embedders.fake import FakeEmbedder
from agent_memory.stamps import utcnow
from agent_memory.tenancy import Tenant
from tests.waiting import until

pytestmark = pytest.mark.slow

#: Values every path is sent.
N = 20_000
#: Memories stored: the values that match something.
REAL = 2_500
#: The tests that change memories each change one share of them: 500 memories among the
#: 20,000 values they send.
SHARES = 5
USER = Tenant("agent", "long-history")
OTHER = Tenant("agent", "someone-else")


class Many:
    """The module's database: ``ids`` of the ``REAL`` memories of ``USER``, in storing order."""

    def __init__(self, connection: Connection, memory: LongTermMemory, ids: list[str]) -> None:
        self.connection = connection
        self.memory = memory
        self.ids = ids
        self.collection = memory.collection

    def share(self, part: int) -> list[str]:
        """The ``part``-th of :data:`SHARES` disjoint shares of the ids, each spread over the
        whole list: the memories a test that changes memories changes."""
        return self.ids[part::SHARES]

    @property
    def keys(self) -> dict[str, str]:
        """Memory id -> its key."""
        return {memory_id: f"k{n:05}" for n, memory_id in enumerate(self.ids)}

    async def count(self, query: dict[str, Any]) -> int:
        return await self.collection.count_documents({**USER.filter(), **query})


@pytest.fixture(scope="module")
async def many(embedded_server) -> AsyncIterator[Many]:
    settings = load_settings(
        mongodb_uri=embedded_server.uri,
        database=f"t_{uuid.uuid4().hex[:12]}",
        embedder="fake",
        connect_timeout_ms=5_000,
    )
    connection = await connect(settings)
    embedder = FakeEmbedder()
    await IndexManager(connection, embedder.signature).setup()
    memory = LongTermMemory(connection, embedder)
    ids: list[str] = []
    try:
        for start in range(0, REAL, 1_250):
            items = [
                # Unindexed: no vector to store, which none of these paths reads.
                NewMemory(f"note {n}", key=f"k{n:05}", indexed=False)
                for n in range(start, start + 1_250)
            ]
            ids += [r.id for r in await memory.store_many(USER, items, consolidate=False)]
        yield Many(connection, memory, ids)
    finally:
        await memory.aclose()
        await connection.client.drop_database(settings.database)
        await connection.close()


def asked(share: list[str], prefix: str) -> list[str]:
    """``N`` values: ``share`` spread evenly among values that match nothing."""
    values = [f"{prefix}{n}" for n in range(N)]
    values[:: N // len(share)] = share
    return values


async def test_get_many_reads_among_20000_ids(many):
    found = await many.memory.get_many(USER, asked(many.ids, "mem_unknown_"))
    assert len(found) == REAL and set(found) == set(many.ids)
    assert all(found[i].content == f"note {n}" for n, i in enumerate(many.ids))
    assert await many.memory.get_many(OTHER, many.ids) == {}  # another user's: none


async def test_the_access_statistics_of_20000_retrieved_ids_are_all_written(many):
    """The background flush after retrievals that returned 20,000 distinct ids (the LoCoMo
    run as one user lost every count of such a flush): every memory among them counted."""
    recorder = many.memory._access
    now = utcnow()
    with capture_logs() as logs:
        recorder.record(USER, asked(many.ids, "mem_gone_"), now)
        recorder.record(USER, many.ids[:100], now)  # retrieved twice: counted twice
        await until(lambda: not recorder._flushing, "the flush", timeout=600)
    assert not [e for e in logs if e["log_level"] == "warning"]
    assert await many.count({"access_count": 2}) == 100
    assert await many.count({"access_count": 1}) == REAL - 100
    assert await many.count({"last_accessed": {"$gte": now.replace(microsecond=0)}}) == REAL


async def test_tag_memories_and_set_expiry_take_20000_ids(many):
    share = many.share(0)
    ids = asked(share, "mem_unknown_")
    assert await many.memory.tag_memories(USER, ids, "audited") == len(share)
    assert await many.count({"tags": "audited"}) == len(share)
    later = utcnow() + timedelta(days=30)
    assert await many.memory.set_expiry(USER, ids, later) == len(share)
    expiring = {"$type": "date", "$gt": later - timedelta(seconds=1)}
    assert await many.count({"expires_at": expiring}) == len(share)


async def test_forget_keys_and_move_to_user_take_20000_values(many):
    forgotten, moved = many.share(1), many.share(2)
    key_of = many.keys
    keys = [key_of[memory_id] for memory_id in forgotten]
    before = await many.count({})
    assert await many.memory.forget_keys(USER, asked(keys, "no-such-key-")) == len(keys)
    assert await many.count({}) == before - len(keys)
    ids = asked(moved, "mem_unknown_")
    assert await many.memory.move_to_user(USER, ids, OTHER.user_id) == len(moved)
    assert await many.collection.count_documents(OTHER.filter()) == len(moved)
    assert await many.count({}) == before - len(keys) - len(moved)


async def test_forget_expired_deletes_the_expired_among_20000(many):
    """Without the TTL index, as on a MongoDB server before its monitor has run: the
    expired memories are found by the server, deleted a bounded list at a time, and the
    memories that never expire (``expires_at: None``) stay."""
    await many.collection.drop_index("expires_at_ttl")
    share = many.share(3)
    past = utcnow() - timedelta(seconds=1)
    assert await many.memory.set_expiry(USER, share, past) == len(share)
    before = await many.count({})
    assert await many.memory.forget_expired(USER) == len(share)
    assert await many.count({}) == before - len(share)
    assert await many.memory.get_many(USER, share) == {}


async def test_feedback_is_credited_to_a_manifest_of_20000_ids(many):
    share = many.share(4)
    episodic = EpisodicMemory(
        many.connection, FakeEmbedder(), config=EpisodicConfig(max_memory_ids=N)
    )
    action = await episodic.log_action(
        USER,
        session_id="s1",
        action_type="query_response",
        outcome="success",
        memory_ids=asked(share, "mem_forgotten_"),
        embed=False,
    )
    assert (await episodic.add_feedback(USER, action, rating=5)).credited == 1.0
    assert await many.count({"feedback.count": 1, "feedback.sum": 1.0}) == len(share)


async def test_conversation_retention_deletes_a_batch_of_a_thousand_sessions(connection):
    """A retention batch is up to 1,000 sessions of many users: an ``$or`` of one
    condition each, beyond the engine's limit."""
    conversation = ConversationMemory(
        connection, config=ConversationConfig(retention_mode="delete")
    )
    old = utcnow() - timedelta(days=400)
    sessions = [
        {
            "_id": f"ses_{n:04}",
            "agent_id": "agent",
            "user_id": f"u{n % 7}",
            "session_id": f"s{n}",
            "status": "active",
            "last_active_at": old,
        }
        for n in range(1_000)
    ]
    recent = {
        **sessions[0],
        "_id": "ses_recent",
        "session_id": "recent",
        "last_active_at": utcnow(),
    }
    await conversation.sessions.insert_many([*sessions, recent])
    talked = [*sessions[::10], recent]  # a message in every tenth session
    await conversation.messages.insert_many(
        {"agent_id": s["agent_id"], "user_id": s["user_id"], "session_id": s["session_id"]}
        for s in talked
    )
    counts = await conversation.apply_retention(batch_size=1_000)
    assert counts["sessions_deleted"] == 1_000 and counts["messages_deleted"] == 100
    assert await conversation.sessions.distinct("session_id") == ["recent"]
    assert await conversation.messages.distinct("session_id") == ["recent"]


async def test_a_checkpoint_prunes_hundreds_of_stale_ones(connection):
    """A checkpoint deletes the task's stale checkpoints (up to 1,000 at a time)."""
    working = WorkingMemory(connection, config=WorkingConfig(checkpoints_kept=3))
    task = await working.create_task(USER, "s1", "a long task", plan=["one"])
    await working.checkpoints.insert_many(
        {
            "_id": f"ckpt_{n:04}",
            "task_id": task.id,
            **USER.filter(),
            "session_id": "s1",
            "version": 0,
            "created_at": utcnow() - timedelta(days=1, seconds=n),
        }
        for n in range(600)
    )
    newest = await working.checkpoint(USER, task.id)
    kept = await working.checkpoints.distinct("_id", {"task_id": task.id})
    assert len(kept) == 3 and newest.id in kept


async def test_episodic_retention_claims_a_day_of_hundreds_of_logs(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    episodic = EpisodicMemory(connection, embedder)
    day = utcnow().replace(hour=12, minute=0, second=0, microsecond=0) - timedelta(days=90)
    await connection.collection("action_logs").insert_many(
        {
            "_id": f"act_{n:04}",
            **USER.filter(),
            "session_id": "s1",
            "action_type": "tool_call",
            "outcome": "success",
            "timestamp": day + timedelta(seconds=n),
        }
        for n in range(600)
    )
    report = await episodic.apply_retention(now=utcnow())
    assert report.summarised == 600 and report.deleted == 600
    rates = await episodic.success_rates("agent", "tool_call", days=120)
    assert rates.total == 600 and rates.summarised == 600


async def test_a_kept_corpus_reads_the_vectors_of_hundreds_of_new_memories(long_term):
    """A reader keeps the user's memories; after another writer stored hundreds more, its
    next search reads their vectors, a bounded list of ids at a time."""
    vector = np.ones(long_term.embedder.dimensions, dtype=np.float32)
    await long_term.store_many(USER, [NewMemory(f"first {n}") for n in range(10)])
    writer = LongTermMemory(long_term.connection, long_term.embedder)
    try:
        assert await long_term.retrieve(USER, "first", query_vector=vector, k=3)
        await writer.store_many(
            USER, [NewMemory(f"second note {n}") for n in range(600)], consolidate=False
        )
    finally:
        await writer.aclose()
    found = await long_term.retrieve(USER, "second note 599", k=5)
    assert len(found) == 5 and found[0].memory.content == "second note 599"

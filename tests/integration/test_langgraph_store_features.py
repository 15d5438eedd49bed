"""The LangGraph store beyond the BaseStore basics, on the embedded server: time to live, a
user's learned memories and profile read through the store, the namespace map and erasure,
similarity against ranked scores, unindexed items, and concurrent calls that fail alone."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from langgraph.store.base import InvalidNamespaceError
from structlog.testing import capture_logs

from agent_memory.bench.store_ops import render_store_ops, run_store_ops
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.formation import FormationQueue, FormationWorker
from agent_memory.langgraph.store import MemoryStore, NamespaceMap
from agent_memory.memory.conversation.memory import NewMessage
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.profile import ProfileMemory
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo.indexes import IndexManager
from agent_memory.ops.forget import agents_of, forget_user, held
from agent_memory.ops.stats import collect_stats
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.stamps import utcnow
from agent_memory.tenancy import Tenant

ALICE = ("memories", "alice")
BOB = ("memories", "bob")
NOTE = (*ALICE, "Note")


@pytest.fixture
async def store(long_term):
    store = MemoryStore(long_term, agent_id="agent")
    yield store
    await store.aclose()


async def expire_now(long_term: LongTermMemory, tenant: Tenant) -> None:
    """Move every memory of ``tenant`` with an expiry into the past, as time passing would
    (announced, so every search sees it)."""
    await long_term.collection.update_many(
        {**tenant.filter(), "expires_at": {"$ne": None}},
        {"$set": {"expires_at": utcnow() - timedelta(seconds=1)}},
    )
    await long_term.announce(tenant)


# --- time to live ---------------------------------------------------------------------------


async def test_an_expired_item_is_gone_from_every_read_before_any_sweep(store, long_term):
    alice = Tenant("agent", "alice")
    await store.aput(NOTE, "short", {"content": "Alice parks on level 2"}, ttl=5)
    await store.aput(NOTE, "kept", {"content": "Alice parks her bike outside"})
    assert store.supports_ttl
    assert (await store.aget(NOTE, "short")).value == {"content": "Alice parks on level 2"}
    await expire_now(long_term, alice)
    assert await store.aget(NOTE, "short") is None
    assert [h.key for h in await store.asearch(NOTE)] == ["kept"]
    assert [h.key for h in await store.asearch(NOTE, query="where does Alice park?")] == ["kept"]
    assert [m.memory.content for m in await long_term.retrieve(alice, "park level 2")] == [
        "Alice parks her bike outside"
    ]
    await store.sweep_ttl()
    assert await long_term.collection.count_documents({"key": {"$regex": "short"}}) == 0


async def test_a_sweep_forgets_the_expired_memories_of_every_user_and_app_wide(
    store, long_term, monkeypatch
):
    await store.aput(NOTE, "k", {"content": "x"}, ttl=1)
    await store.aput((*BOB, "Note"), "k", {"content": "y"})
    swept: list[Tenant] = []

    async def forget_expired(tenant: Tenant) -> int:
        swept.append(tenant)
        return 2

    monkeypatch.setattr(long_term, "forget_expired", forget_expired)
    assert await store.sweep_ttl() == 6
    assert sorted(t.user_id for t in swept) == ["*", "alice", "bob"]


async def test_reads_refresh_the_time_to_live_unless_told_not_to(store, long_term):
    alice = Tenant("agent", "alice")
    await store.aput(NOTE, "k", {"content": "Alice's locker is 41"}, ttl=60)

    async def expiry():
        return (
            await long_term.current(alice, key='lg/key:["memories","alice","Note","k"]')
        ).expires_at

    first = await expiry()
    assert timedelta(minutes=59) < first - utcnow() <= timedelta(minutes=60)
    soon = utcnow() + timedelta(minutes=1)
    await long_term.set_expiry(
        alice,
        [(await long_term.current(alice, key='lg/key:["memories","alice","Note","k"]')).id],
        soon,
    )
    await store.aget(NOTE, "k", refresh_ttl=False)
    assert await expiry() == soon.replace(microsecond=soon.microsecond // 1000 * 1000)
    await store.aget(NOTE, "k")  # refresh_on_read defaults to true
    assert await expiry() - utcnow() > timedelta(minutes=59)
    await long_term.set_expiry(
        alice,
        [(await long_term.current(alice, key='lg/key:["memories","alice","Note","k"]')).id],
        soon,
    )
    await store.asearch(NOTE, query="locker")
    assert await expiry() - utcnow() > timedelta(minutes=59)


async def test_the_ttl_config_sets_a_default_and_can_turn_refresh_off(long_term):
    store = MemoryStore(
        long_term, agent_id="agent", ttl={"default_ttl": 30, "refresh_on_read": False}
    )
    try:
        await store.aput(NOTE, "k", {"content": "x"})
        memory = await long_term.current(
            Tenant("agent", "alice"), key='lg/key:["memories","alice","Note","k"]'
        )
        assert timedelta(minutes=29) < memory.expires_at - utcnow() <= timedelta(minutes=30)
        await store.aput(NOTE, "forever", {"content": "y"}, ttl=None)
        forever = await long_term.current(
            Tenant("agent", "alice"), key='lg/key:["memories","alice","Note","forever"]'
        )
        assert forever.expires_at is None
    finally:
        await store.aclose()
    for bad in ({"default_ttl": 0}, {"refresh_on_read": "yes"}, {"sweep": 1}, [1]):
        with pytest.raises(InvalidInputError, match="ttl"):
            MemoryStore(long_term, agent_id="agent", ttl=bad)


async def test_the_sweeper_sweeps_in_the_background_until_stopped(store, long_term, monkeypatch):
    await store.aput(NOTE, "k", {"content": "x"}, ttl=1)
    swept = asyncio.Event()

    async def forget_expired(tenant: Tenant) -> int:
        swept.set()
        return 1

    monkeypatch.setattr(long_term, "forget_expired", forget_expired)
    task = await store.start_ttl_sweeper(sweep_interval_minutes=0.0005)
    assert await store.start_ttl_sweeper() is task  # one sweeper
    await asyncio.wait_for(swept.wait(), timeout=20)  # bounded: the first sweep after 30 ms
    assert await store.stop_ttl_sweeper(timeout=5) is True
    assert task.done()
    for bad in (0, -1, float("nan"), "5"):
        with pytest.raises(InvalidInputError, match="sweep_interval_minutes"):
            await store.start_ttl_sweeper(sweep_interval_minutes=bad)


# --- learned memories and the profile --------------------------------------------------------


async def test_a_users_learned_memories_are_items_under_the_learned_label(store, long_term):
    alice, bob = Tenant("agent", "alice"), Tenant("agent", "bob")
    learned = (await long_term.store(alice, "Alice moved to Lisbon", memory_type="fact")).id
    await long_term.store(alice, "Alice prefers window seats", memory_type="preference")
    await long_term.store(bob, "Bob moved to Oslo", memory_type="fact")
    await store.aput(NOTE, "pet", {"content": "Alice has a cat"})

    hits = await store.asearch(ALICE, query="Alice moved to Lisbon")
    assert hits[0].namespace == (*ALICE, "learned", "fact") and hits[0].key == learned
    assert hits[0].value["content"] == "Alice moved to Lisbon"
    assert "Oslo" not in str([h.value for h in hits])
    item = await store.aget((*ALICE, "learned", "fact"), learned)
    assert item.value == {
        "content": "Alice moved to Lisbon",
        "memory_type": "fact",
        "importance": item.value["importance"],
    }
    assert await store.aget((*ALICE, "learned", "preference"), learned) is None
    assert await store.aget((*BOB, "learned", "fact"), learned) is None
    # Said long before it was stored (an imported history): created when stored, and not
    # updated before that.
    said = datetime(2023, 5, 1, tzinfo=UTC)
    old = (await long_term.store(alice, "Alice grew up in Cork", occurred_at=said)).id
    item = await store.aget((*ALICE, "learned", "fact"), old)
    assert item.created_at == item.updated_at > said
    assert {h.key for h in await store.asearch((*ALICE, "learned"))} >= {learned}
    assert [h.key for h in await store.asearch(NOTE)] == ["pet"]
    assert await store.alist_namespaces(prefix=ALICE) == [
        (*ALICE, "Note"),
        (*ALICE, "learned", "fact"),
        (*ALICE, "learned", "preference"),
    ]
    with pytest.raises(InvalidNamespaceError, match="learned memories are read"):
        await store.aput((*ALICE, "learned", "fact"), "x", {"content": "forged"})
    await store.adelete((*ALICE, "learned", "fact"), learned)  # forgetting is allowed
    with pytest.raises(NotFoundError):
        await long_term.get(alice, learned)


async def test_the_profile_is_readable_and_read_only(long_term, connection):
    profiles = ProfileMemory(connection, long_term)
    store = MemoryStore(long_term, agent_id="agent", profiles=profiles)
    try:
        alice = Tenant("agent", "alice")
        assert await store.aget((*ALICE, "learned", "profile"), "User") is None
        await profiles.patch(alice, {"user_name": "Alice", "home": "Lisbon"})
        item = await store.aget((*ALICE, "learned", "profile"), "User")
        assert item.value == {"user_name": "Alice", "home": "Lisbon"}
        assert (*ALICE, "learned", "profile") in await store.alist_namespaces(prefix=ALICE)
        listed = await store.asearch((*ALICE, "learned", "profile"))
        assert [(h.key, h.value["home"]) for h in listed] == [("User", "Lisbon")]
        assert await store.aget((*BOB, "learned", "profile"), "User") is None
        with pytest.raises(InvalidNamespaceError, match="read-only"):
            await store.adelete((*ALICE, "learned", "profile"), "User")
    finally:
        await store.aclose()


# --- the namespace map and erasure ------------------------------------------------------------


async def test_a_custom_map_puts_the_user_first(long_term):
    users = NamespaceMap(user_roots=None, user_segment=0)
    store = MemoryStore(long_term, agent_id="agent", namespaces=users)
    try:
        await store.aput(("alice", "memories"), "k", {"content": "Alice likes figs"})
        await store.aput(("bob", "memories"), "k", {"content": "Bob likes figs"})
        alice_items = [m async for m in long_term.browse(Tenant("agent", "alice"))]
        assert [m.content for m in alice_items] == ["Alice likes figs"]
        assert [h.namespace for h in await store.asearch(("alice",), query="figs")] == [
            ("alice", "memories")
        ]
    finally:
        await store.aclose()


async def test_erasing_a_user_erases_their_items_and_keeps_app_wide_ones(
    store, connection, embedder
):
    await store.aput(NOTE, "k", {"content": "Alice's secret"})
    await store.aput((*BOB, "Note"), "k", {"content": "Bob's note"})
    await store.aput(("docs", "faq"), "hours", {"content": "open 9 to 5"})
    memories = MemorySystem(connection, embedder)
    counts = await forget_user(memories, Tenant("agent", "alice"))
    assert counts[connection.collection_name("memories")] == 1
    assert await store.aget(NOTE, "k") is None
    assert (await store.aget((*BOB, "Note"), "k")).value == {"content": "Bob's note"}
    assert (await store.aget(("docs", "faq"), "hours")).value == {"content": "open 9 to 5"}


async def test_a_users_namespace_in_another_layout_is_refused_not_stored_app_wide(store, long_term):
    # ("alice", "memories") under the default map, ("memories", user_id, ...), names no user:
    # it used to be stored app-wide, read by every user's graph and erased by nobody.
    calls = (
        lambda: store.aput(("alice", "memories"), "k", {"content": "Alice's secret"}),
        lambda: store.aget(("alice", "memories"), "k"),
        lambda: store.asearch(("alice", "memories"), query="secret"),
        lambda: store.alist_namespaces(prefix=("alice", "memories")),
    )
    for call in calls:
        with pytest.raises(InvalidNamespaceError, match=r"NamespaceMap\(user_segment=0\)"):
            await call()
    # A delete there is allowed: it removes what the previous version stored app-wide there.
    await store.adelete(("alice", "memories", "notes"), "k")
    assert await long_term.collection.count_documents({}) == 0
    # The root first, or an app-wide namespace without the root label, are stored as before.
    await store.aput(("memories", "alice"), "k", {"content": "Alice's"})
    await store.aput(("docs", "faq"), "hours", {"content": "open 9 to 5"})
    assert await long_term.collection.count_documents({"user_id": "*"}) == 1


async def test_the_user_first_layout_keeps_each_users_items_theirs(long_term, connection, embedder):
    store = MemoryStore(long_term, agent_id="agent", namespaces=NamespaceMap(user_segment=0))
    strict = MemoryStore(
        long_term,
        agent_id="agent",
        namespaces=NamespaceMap(user_segment=0, span_users=False),
    )
    try:
        await store.aput(("alice", "memories"), "k", {"content": "Alice likes figs"})
        await store.aput(("bob", "memories", "notes"), "k", {"content": "Bob likes figs"})
        await store.aput(("faq",), "hours", {"content": "figs are sold 9 to 5"})
        raw = {d["user_id"] async for d in long_term.collection.find({}, {"user_id": 1})}
        assert raw == {"alice", "bob", "*"}
        # Bob's graph reads his items and the app-wide ones, never alice's.
        for reader in (store, strict):
            hits = await reader.asearch(("bob",), query="figs")
            assert {h.namespace for h in hits} == {("bob", "memories", "notes")}
            listed = await reader.alist_namespaces(prefix=("bob",))
            assert listed == [("bob", "memories", "notes")]
        with pytest.raises(InvalidNamespaceError, match="names no user"):
            await strict.asearch((), query="figs")
        with pytest.raises(InvalidNamespaceError, match="NamespaceMap"):
            await store.aput(("memories", "alice"), "k", {"content": "root first"})
        await forget_user(MemorySystem(connection, embedder), Tenant("agent", "alice"))
        assert await store.aget(("alice", "memories"), "k") is None
        assert (await store.aget(("bob", "memories", "notes"), "k")) is not None
    finally:
        await store.aclose()
        await strict.aclose()


async def test_erasure_takes_app_wide_items_shaped_like_the_users(long_term, connection, embedder):
    # Here a map whose root is "people", so ("alice", "memories") is app-wide, as it was under
    # the previous version's default map: shaped like alice's (her id next to "memories").
    other = MemoryStore(
        long_term, agent_id="agent", namespaces=NamespaceMap(user_roots=("people",))
    )
    try:
        await other.aput(("alice", "memories"), "k", {"content": "Alice's secret"})
        await other.aput(("alice", "memories"), "k", {"content": "Alice's newer secret"})
        await other.aput(("docs", "alice"), "bio", {"content": "Alice, born 1990"})
        await other.aput(("docs", "faq"), "hours", {"content": "open 9 to 5"})
        await other.aput(("people", "bob"), "k", {"content": "Bob's note"})
        memories = MemorySystem(connection, embedder)
        before = await held(memories, "alice")
        assert before.agents == ["agent"] and before.counts["memories"] == 2
        assert await agents_of(memories, "alice") == ["agent"]
        counts = await forget_user(memories, Tenant("agent", "alice"))
        assert counts[connection.collection_name("memories")] == 2  # both versions
        assert await other.aget(("alice", "memories"), "k") is None
        # A label equal to the user id is not a user's namespace: shared data stays.
        assert (await other.aget(("docs", "alice"), "bio")) is not None
        assert (await other.aget(("docs", "faq"), "hours")) is not None
        assert (await other.aget(("people", "bob"), "k")) is not None
        assert (await held(memories, "alice")).total == 0
        # An app erasing through MemorySystem registers the store's forgetter.
        await other.aput(("alice", "memories"), "k", {"content": "again"})
        memories.register_forgetter(other.forget_user)
        await memories.forget_user(Tenant("agent", "alice"))
        assert await other.aget(("alice", "memories"), "k") is None
    finally:
        await other.aclose()


async def test_an_items_field_vectors_follow_it(long_term, embedder, connection):
    # Each text of an item with several index fields is a field document beside its memory
    # (memory/long_term/fields.py): replaced when the item is put again, moved with its
    # expiry, gone with the item or the user, and never seen by the framework's own reads.
    store = MemoryStore(long_term, agent_id="agent", index={"fields": ["title", "body"]})
    alice = Tenant("agent", "alice")
    fields = {"status": "field"}
    try:
        await store.aput(NOTE, "k", {"title": "bike repair", "body": "tax forms"}, ttl=5)
        assert await long_term.collection.count_documents(fields) == 2
        assert [h.score for h in await store.asearch(NOTE, query="tax forms")] == [
            pytest.approx(1.0, abs=1e-4)
        ]
        # The framework's reads see one memory, its text the fields joined.
        listed = await long_term.list_memories(alice, include_inactive=True)
        assert [m.content for m in listed] == ["bike repair\ntax forms"]
        assert len(await long_term.retrieve(alice, "tax forms")) == 1
        assert (await held(MemorySystem(connection, embedder), "alice")).counts["memories"] == 1
        assert (await collect_stats(connection)).totals["memories"].count == 1
        # Put again with one field: no field vectors are left to find it by "tax forms".
        await store.aput(NOTE, "k", {"title": "bike repair", "body": ""})
        assert await long_term.collection.count_documents(fields) == 0
        (hit,) = await store.asearch(NOTE, query="tax forms")
        vectors = await embedder.embed_documents(["tax forms", "bike repair"])
        assert hit.score == pytest.approx(float(vectors[0] @ vectors[1]), abs=1e-4)
        await store.aput(NOTE, "k", {"title": "apple pie", "body": "jazz records"}, ttl=5)
        soon = utcnow() + timedelta(minutes=1)
        await long_term.collection.update_many({}, {"$set": {"expires_at": soon}})
        await long_term.announce(alice)
        await store.aget(NOTE, "k")  # refreshes the expiry of the item and of its fields
        item = await long_term.collection.find_one({"status": "active"})
        companions = await long_term.collection.find(fields).to_list(None)
        assert item is not None and item["expires_at"] > soon
        assert len(companions) == 2
        assert all(d["expires_at"] == item["expires_at"] for d in companions)
        await store.adelete(NOTE, "k")
        assert await long_term.collection.count_documents({}) == 0
        await store.aput(NOTE, "k", {"title": "apple pie", "body": "jazz records"})
        await long_term.forget_user(alice)
        assert await long_term.collection.count_documents({}) == 0
    finally:
        await store.aclose()


# --- scores, unindexed items, concurrent calls -----------------------------------------------


async def test_similarity_scores_by_default_and_the_full_ranking_on_request(long_term):
    ranked = MemoryStore(long_term, agent_id="agent", scores="ranked")
    plain = MemoryStore(long_term, agent_id="agent")
    try:
        await plain.aput(NOTE, "a", {"content": "Alice plays the cello"})
        await plain.aput(NOTE, "b", {"content": "Alice plays tennis on Sundays"})
        query = "Alice plays the cello"
        vectors = await long_term.embedder.embed_documents([query, "Alice plays the cello"])
        similar = await plain.asearch(NOTE, query=query)
        assert similar[0].key == "a"
        assert similar[0].score == pytest.approx(float(vectors[0] @ vectors[1]), abs=1e-4)
        full = await ranked.asearch(NOTE, query=query)
        assert full[0].key == "a" and full[0].score != pytest.approx(similar[0].score, abs=1e-3)
        with pytest.raises(InvalidInputError, match="scores"):
            MemoryStore(long_term, agent_id="agent", scores="bm25")
    finally:
        await ranked.aclose()
        await plain.aclose()


async def test_an_unindexed_item_costs_no_embedding_and_stays_out_of_recall(store, long_term):
    calls_before = len(long_term.embedder.calls)
    await store.aput(NOTE, "raw", {"content": "Alice's passport number"}, index=False)
    assert len(long_term.embedder.calls) == calls_before
    assert (await store.aget(NOTE, "raw")).value == {"content": "Alice's passport number"}
    assert await long_term.retrieve(Tenant("agent", "alice"), "passport number") == []
    # Indexed again by a later put of the same text, and unindexed again after that.
    await store.aput(NOTE, "raw", {"content": "Alice's passport number"})
    assert [h.key for h in await store.asearch(NOTE, query="passport")] == ["raw"]
    await store.aput(NOTE, "raw", {"content": "Alice's passport number"}, index=False)
    assert await store.asearch(NOTE, query="passport") == []


async def test_a_bad_call_among_concurrent_ones_fails_alone(store):
    results = await asyncio.gather(
        store.aput(NOTE, "good", {"content": "fine"}),
        store.aput(NOTE, "bad", {"$set": 1}),
        store.aput(("memories", "*", "x"), "k", {"content": "claims app-wide"}),
        store.aget(NOTE, "good"),
        store.asearch(NOTE, filter={"$where": "1"}),
        return_exceptions=True,
    )
    assert results[0] is None
    assert isinstance(results[1], InvalidInputError)
    assert isinstance(results[2], InvalidNamespaceError)
    assert results[3].value == {"content": "fine"}
    assert isinstance(results[4], InvalidInputError)
    assert [h.key for h in await store.asearch(NOTE)] == ["good"]


async def test_concurrent_puts_share_embedding_calls(store, long_term):
    before = len(long_term.embedder.calls)
    await asyncio.gather(
        *(store.aput((*ALICE, "bulk"), f"k{i}", {"content": f"fact number {i}"}) for i in range(50))
    )
    assert len(long_term.embedder.calls) - before == 1
    assert len(await store.asearch((*ALICE, "bulk"), limit=100)) == 50


async def test_the_store_benchmark_prints_its_figures(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    result = await run_store_ops(connection, embedder, rounds=2, per_round=10, bulk=30)
    assert result["calls"] == result["answered"] == 120
    assert result["items_left"] == 0
    assert result["bulk_embedding_calls"] == 1 and result["bulk_items_stored"] == 30
    assert result["concurrent_embedding_calls"] == 2
    assert "120 calls" in render_store_ops(result)


# --- found in review --------------------------------------------------------------------------


async def test_aclose_answers_the_calls_already_made(long_term):
    store = MemoryStore(long_term, agent_id="agent")
    pending = asyncio.ensure_future(store.aput(NOTE, "k", {"content": "made before close"}))
    await asyncio.sleep(0)  # the call is queued, and being served
    await store.aclose()
    assert await pending is None
    reopened = MemoryStore(long_term, agent_id="agent")
    assert (await reopened.aget(NOTE, "k")).value == {"content": "made before close"}
    await reopened.aclose()


async def test_identical_concurrent_reads_get_items_of_their_own(store):
    await store.aput(NOTE, "k", {"content": "shared"})
    first, second = await asyncio.gather(store.asearch(NOTE), store.asearch(NOTE))
    first[0].value["content"] = "changed by one caller"
    assert second[0].value == {"content": "shared"}


async def test_expired_items_do_not_crowd_live_ones_out_of_a_page(store, long_term, monkeypatch):
    # A real server's TTL monitor removes expired memories within a minute or so; until then
    # a query must still fill its page with live items.
    for i in range(6):
        await store.aput(NOTE, f"old{i}", {"content": f"Alice's tea note {i}"}, ttl=5)
    await store.aput(NOTE, "live", {"content": "Alice's tea is green"})
    later = utcnow() + timedelta(minutes=10)
    monkeypatch.setattr("agent_memory.memory.long_term.memory.utcnow", lambda: later)
    monkeypatch.setattr("agent_memory.langgraph.store.utcnow", lambda: later)
    hits = await store.asearch(NOTE, query="Alice's tea note", limit=2)
    assert [h.key for h in hits] == ["live"]


async def test_a_search_refreshes_only_items_with_a_ttl(store, long_term, monkeypatch):
    await store.aput(NOTE, "a", {"content": "Alice rows"})
    await store.aput(NOTE, "b", {"content": "Alice rows at dawn"}, ttl=60)
    moved: list[list[str]] = []
    real = long_term.set_expiry

    async def set_expiry(tenant, ids, expires_at):
        moved.append(list(ids))
        return await real(tenant, ids, expires_at)

    monkeypatch.setattr(long_term, "set_expiry", set_expiry)
    reads: list[str] = []
    current = long_term.current

    async def counted(*args, **kwargs):
        reads.append("current")
        return await current(*args, **kwargs)

    monkeypatch.setattr(long_term, "current", counted)
    hits = await store.asearch(NOTE, query="Alice rows")
    assert {h.key for h in hits} == {"a", "b"}
    assert reads == []  # no read per item
    assert len(moved) == 1 and len(moved[0]) == 1  # only the item with a TTL


async def test_pages_without_a_query_join_up_after_a_repeated_put(store):
    await store.aput(NOTE, "a", {"content": "first"})
    await store.aput(NOTE, "b", {"content": "second"})
    await store.aput(NOTE, "a", {"content": "first", "seen": True})  # same text: kept
    everything = [h.key for h in await store.asearch(NOTE, limit=10)]
    paged = [h.key for h in await store.asearch(NOTE, limit=1)]
    paged += [h.key for h in await store.asearch(NOTE, limit=1, offset=1)]
    assert paged == everything and sorted(everything) == ["a", "b"]


async def test_ranked_scores_refuse_a_window_they_cannot_rank(long_term):
    store = MemoryStore(long_term, agent_id="agent", scores="ranked")
    try:
        with pytest.raises(InvalidInputError, match="at most 100"):
            await store.asearch(NOTE, query="x", offset=95, limit=10)
    finally:
        await store.aclose()


async def test_a_search_across_users_embeds_the_query_once(store, long_term):
    for user in ("alice", "bob", "carol", "dan"):
        await store.aput(("memories", user, "Note"), "k", {"content": f"{user} plays chess"})
    before = len(long_term.embedder.calls)
    hits = await store.asearch(("memories",), query="chess")
    assert len(hits) == 4
    assert len(long_term.embedder.calls) - before == 1


async def test_items_of_the_earlier_store_layout_do_not_pose_as_learned_memories(store, long_term):
    alice = Tenant("agent", "alice")
    await long_term.store(
        alice,
        "Alice's old item",
        key='lg:["Note","old"]',
        tags=["lgns:[]", 'lgns:["Note"]'],
        source={"store": "langgraph", "namespace": ["Note"], "key": "old", "value": {}},
    )
    assert await store.asearch((*ALICE, "learned")) == []
    assert await store.asearch((*ALICE, "learned"), query="old item") == []


async def test_setup_upgrades_items_of_the_earlier_layout_with_their_history(store, long_term):
    alice = Tenant("agent", "alice")

    async def legacy(text: str) -> None:
        await long_term.store(
            alice,
            text,
            key='lg:["Note","diet"]',
            tags=["lgns:[]", 'lgns:["Note"]', "mine"],
            source={
                "store": "langgraph",
                "namespace": ["Note"],
                "key": "diet",
                "value": {"content": text},
            },
        )

    await legacy("Alice eats fish")
    await legacy("Alice is vegetarian")  # supersedes the first version
    assert await store.aget(NOTE, "diet") is None  # not served before the upgrade
    assert await store.setup() == 2
    item = await store.aget(NOTE, "diet")
    assert item.value == {"content": "Alice is vegetarian"}
    assert [h.key for h in await store.asearch(ALICE, query="vegetarian")] == ["diet"]
    assert [v.value["content"] for v in await store.ahistory(NOTE, "diet")] == [
        "Alice is vegetarian",
        "Alice eats fish",
    ]
    memory = await long_term.current(alice, key='lg/key:["memories","alice","Note","diet"]')
    assert "mine" in memory.tags and not any(t.startswith("lgns:") for t in memory.tags)
    assert await store.setup() == 0  # idempotent


async def test_what_the_formation_worker_learned_is_readable_through_the_store(
    connection, embedder
):
    ana = Tenant("travel", "ana")
    await IndexManager(connection, embedder.signature).setup()
    memories = MemorySystem(connection, embedder)
    queue = FormationQueue(connection, debounce_seconds=30.0, lease_seconds=60.0)
    reply = {
        "profile": {"user_name": "Ana", "interests": ["jazz"]},
        "notes": [{"content": "Wants to see cherry blossoms in Kyoto", "context": "April trip"}],
        "facts": [{"content": "The user lives in Lisbon.", "key": "home", "importance": 0.8}],
    }
    await memories.conversation.append_turn(
        ana,
        "s1",
        [NewMessage.user("I'm Ana from Lisbon; I love jazz."), NewMessage.assistant("OK")],
    )
    start = utcnow()
    await queue.schedule(ana, "s1", now=start)
    worker = FormationWorker(
        memories, FakeChatModel([json.dumps(reply)]), queue=queue, worker_id="w"
    )
    assert await worker.run_once(now=start + timedelta(seconds=31)) is True
    store = MemoryStore(memories.long_term, agent_id="travel", profiles=memories.profiles)
    try:
        home = ("memories", "ana")
        hits = await store.asearch(home, query="Where does Ana live? Lisbon")
        assert hits[0].value["content"] == "The user lives in Lisbon."
        assert hits[0].namespace == (*home, "learned", "fact")
        listed = {h.value.get("content") for h in await store.asearch((*home, "learned"))}
        assert {"The user lives in Lisbon.", "Wants to see cherry blossoms in Kyoto"} <= listed
        profile = await store.aget((*home, "learned", "profile"), "User")
        assert profile.value == {"user_name": "Ana", "interests": ["jazz"]}
        assert await store.aget(("memories", "bob", "learned", "profile"), "User") is None
    finally:
        await store.aclose()
        await memories.aclose()


@pytest.mark.parametrize("namespace", [3.5, b"memories", {"memories": 1}, None])
async def test_a_namespace_that_is_not_a_tuple_is_a_clear_error_sync_or_async(store, namespace):
    with pytest.raises(InvalidNamespaceError, match="must be a tuple of labels"):
        await store.aput(namespace, "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError, match="must be a tuple of labels"):
        await store.asearch(namespace)
    for call in (
        lambda: store.put(namespace, "k", {"content": "x"}),
        lambda: store.get(namespace, "k"),
        lambda: store.search(namespace),
        lambda: store.delete(namespace, "k"),
    ):
        with pytest.raises(InvalidNamespaceError, match="must be a tuple of labels"):
            await asyncio.to_thread(call)


async def test_a_store_built_like_langgraphs_own_from_an_index_config(connection):
    from langchain_core.embeddings import DeterministicFakeEmbedding

    embeddings = DeterministicFakeEmbedding(size=64)
    index = {"dims": 64, "embed": embeddings, "fields": ["text"]}
    store = MemoryStore.from_connection(connection, agent_id="agent", index=index)
    try:
        await IndexManager(connection, store.long_term.embedder.signature).setup()
        assert store.index_config["embed"] is embeddings
        assert store.index_config["dims"] == 64 and store.index_config["fields"] == ["text"]
        await store.aput(("docs",), "a", {"text": "alpha"})
        await store.aput(("docs",), "b", {"text": "beta"})
        hits = await store.asearch(("docs",), query="alpha")
        assert hits[0].key == "a" and hits[0].score == pytest.approx(1.0, abs=1e-4)
    finally:
        await store.aclose()
        await store.long_term.aclose()
    with pytest.raises(InvalidInputError, match="dims"):
        MemoryStore.from_connection(connection, agent_id="agent", index={"embed": embeddings})


# --- items the previous version kept app-wide under a user's namespace ---------------------


async def stored_app_wide_before(long_term: LongTermMemory, namespace, key: str, text: str):
    """An item as the previous version (4bcc9d0, the same layout) stored it under a namespace
    its default map read no user from, such as ("u1", "memories"): app-wide, user "*"."""

    def encoded(parts) -> str:
        return json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))

    await long_term.store(
        Tenant("agent", "*"),
        text,
        key="lg/key:" + encoded([*namespace, key]),
        tags=["lg/ns:" + encoded(namespace[:depth]) for depth in range(len(namespace) + 1)],
        source={
            "store": "langgraph",
            "layout": "2",
            "namespace": list(namespace),
            "key": key,
            "value": {"content": text},
            "ttl": None,
        },
    )


async def test_a_refused_namespaces_old_items_are_in_no_read_and_can_be_deleted(store, long_term):
    await stored_app_wide_before(long_term, ("u1", "memories"), "k", "u1 keeps a secret diary")
    await stored_app_wide_before(long_term, ("u1", "memories"), "k", "u1 keeps a secret blog")
    await stored_app_wide_before(long_term, ("u2", "memories"), "j", "u2 has a secret too")
    await store.aput(("docs", "faq"), "hours", {"content": "a secret: open 9 to 5"})
    await store.aput(("memories", "u3"), "m", {"content": "u3's secret"})

    async def reads() -> set:
        found = {(h.namespace, h.key) for h in await store.asearch(())}
        found |= {(h.namespace, h.key) for h in await store.asearch((), query="secret")}
        found |= {(h.namespace, h.key) for h in await store.asearch(("u1",))}
        found |= {(h.namespace, h.key) for h in await store.asearch(("u1",), query="diary")}
        return found | {(ns, None) for ns in await store.alist_namespaces()}

    expected = {
        (("docs", "faq"), "hours"),
        (("memories", "u3"), "m"),
        (("docs", "faq"), None),
        (("memories", "u3"), None),
    }
    assert await reads() == expected
    assert await store.alist_namespaces(prefix=("u1",)) == []
    # setup() leaves them where they are (this map gives them no user) and says how many.
    with capture_logs() as logs:
        assert await store.setup() == 0
    (warning,) = [entry for entry in logs if entry["event"] == "store_items_refused"]
    assert warning["count"] == 3 and "secret" not in json.dumps(warning, default=str)
    assert await reads() == expected
    listed = await store.refused_items()
    assert [(i.namespace, i.key, i.value) for i in listed] == [
        (("u1", "memories"), "k", {"content": "u1 keeps a secret blog"}),
        (("u2", "memories"), "j", {"content": "u2 has a secret too"}),
    ]
    # Deleting under a refused namespace deletes what is stored app-wide there, every version.
    await store.adelete(("u1", "memories"), "k")
    assert await long_term.collection.count_documents({"source.namespace": "u1"}) == 0
    assert await store.forget_refused() == 1
    assert await store.refused_items() == []
    assert await reads() == expected
    with pytest.raises(InvalidNamespaceError):
        await store.aput(("u1", "memories"), "k", {"content": "refused as before"})


async def test_setup_moves_old_app_wide_items_to_the_user_the_map_names(long_term, embedder):
    store = MemoryStore(long_term, agent_id="agent", namespaces=NamespaceMap(user_segment=0))
    try:
        await stored_app_wide_before(long_term, ("u1", "memories"), "k", "u1 eats fish")
        await stored_app_wide_before(long_term, ("u1", "memories"), "k", "u1 is vegetarian")
        await stored_app_wide_before(long_term, ("u2", "memories"), "j", "u2's old note")
        await store.aput(("u2", "memories"), "j", {"content": "u2's new note"})
        assert await store.aget(("u1", "memories"), "k") is None  # not served before setup
        assert await store.setup() == 3
        assert (await store.aget(("u1", "memories"), "k")).value == {"content": "u1 is vegetarian"}
        assert [v.value["content"] for v in await store.ahistory(("u1", "memories"), "k")] == [
            "u1 is vegetarian",
            "u1 eats fish",
        ]
        # u2 already held the key: the old item is its history, the new one stays current.
        assert (await store.aget(("u2", "memories"), "j")).value == {"content": "u2's new note"}
        assert len(await store.ahistory(("u2", "memories"), "j")) == 2
        assert await long_term.collection.count_documents({"user_id": "*"}) == 0
        hits = await store.asearch(("u1",), query="vegetarian")
        assert [(h.namespace, h.key) for h in hits] == [(("u1", "memories"), "k")]
        assert await store.setup() == 0  # idempotent
    finally:
        await store.aclose()


async def test_erasing_a_user_named_like_shared_data_leaves_the_shared_data(
    store, long_term, connection, embedder
):
    # The user "faq" asks to be forgotten: ("docs", "faq") is the app's FAQ, not theirs;
    # ("faq", "memories"), stored app-wide by the previous version, is theirs.
    faq = Tenant("agent", "faq")
    await store.aput(("docs", "faq"), "hours", {"content": "open 9 to 5"})
    await store.aput(("docs", "faq"), "hours", {"content": "open 8 to 6"})
    memories = MemorySystem(connection, embedder)
    for erase in (lambda: forget_user(memories, faq), lambda: store.forget_user(faq)):
        await stored_app_wide_before(long_term, ("faq", "memories"), "k", "faq's old secret")
        await stored_app_wide_before(long_term, ("faq", "memories", "x"), "j", "faq's diary")
        assert (await held(memories, "faq")).counts["memories"] == 2
        await erase()
        assert await long_term.collection.count_documents({"source.namespace": "memories"}) == 0
        assert (await store.aget(("docs", "faq"), "hours")).value == {"content": "open 8 to 6"}
        assert len(await store.ahistory(("docs", "faq"), "hours")) == 2


# --- field documents: what every other read and write must leave alone ----------------------


async def test_field_documents_are_never_memories_to_count_read_or_relabel(long_term, monkeypatch):
    store = MemoryStore(long_term, agent_id="agent", index={"fields": ["title", "body"]})
    alice = Tenant("agent", "alice")
    try:
        await store.aput(NOTE, "k", {"title": "bike repair", "body": "tax forms"}, ttl=5)
        memory = await long_term.current(alice, key='lg/key:["memories","alice","Note","k"]')
        field_ids = await long_term.collection.distinct("_id", {"status": "field"})
        assert memory is not None and len(field_ids) == 2
        assert set(await long_term.get_many(alice, [memory.id, *field_ids])) == {memory.id}
        assert not await long_term.relabel(alice, field_ids[0], key="x", tags=[], source={})
        # Editing the text drops the field vectors: the memory is searched by its new text.
        await long_term.edit(alice, memory.id, content="Alice grows tomatoes")
        assert await long_term.collection.count_documents({"status": "field"}) == 0
        (hit,) = await store.asearch(NOTE, query="Alice grows tomatoes")
        assert hit.score == pytest.approx(1.0, abs=1e-4)
        # One expired item is one memory swept, whatever its field documents. (Time moves
        # for the sweep only: the server's TTL monitor would delete them first otherwise.)
        await store.aput(NOTE, "k2", {"title": "apple pie", "body": "jazz records"}, ttl=5)
        assert await long_term.collection.count_documents({"status": "field"}) == 2
        later = utcnow() + timedelta(minutes=10)
        monkeypatch.setattr("agent_memory.memory.long_term.memory.utcnow", lambda: later)
        assert await store.sweep_ttl() == 2  # k and k2
        assert await long_term.collection.count_documents({}) == 0
        indexes = {i["name"] for i in await (await long_term.collection.list_indexes()).to_list()}
        assert {"tenant_field_of", "tenant_field_of_key"} <= indexes
    finally:
        await store.aclose()


async def test_a_failed_write_of_field_vectors_leaves_the_item_searchable(long_term, monkeypatch):
    from agent_memory.memory.long_term import fields

    store = MemoryStore(long_term, agent_id="agent", index={"fields": ["title", "body"]})
    alice = Tenant("agent", "alice")
    try:
        await store.aput(NOTE, "k", {"title": "bike repair", "body": "tax forms"})
        made = fields.field_documents

        def clashing(tenant, memory_id, item, vectors, now):  # the second insert fails
            documents = made(tenant, memory_id, item, vectors, now)
            return [documents[0], {**documents[1], "_id": documents[0]["_id"]}]

        monkeypatch.setattr(fields, "field_documents", clashing)
        with pytest.raises(Exception):  # noqa: B017 - the server's duplicate key, mapped
            await store.aput(NOTE, "k", {"title": "apple pie", "body": "jazz records"})
        monkeypatch.undo()
        current = await long_term.current(alice, key='lg/key:["memories","alice","Note","k"]')
        assert current is not None and current.content == "apple pie\njazz records"
        assert "memory/fields" not in current.tags
        assert await long_term.collection.count_documents({"status": "field"}) == 0
        (hit,) = await store.asearch(NOTE, query="apple pie\njazz records")
        assert hit.value == {"title": "apple pie", "body": "jazz records"}
    finally:
        await store.aclose()


# --- event time -----------------------------------------------------------------------------


async def _memory_of(long_term: LongTermMemory, key: str) -> dict:
    """The current memory document of the item ``key`` (its latest version by event time)."""
    found = await long_term.collection.find_one(
        {"key": {"$regex": f'"{key}"\\]$'}, "status": {"$ne": "superseded"}}
    )
    assert found is not None
    return {
        name: value.replace(tzinfo=UTC)
        if isinstance(value, datetime) and not value.tzinfo
        else value
        for name, value in found.items()
    }


async def test_an_items_occurred_at_is_when_its_memory_happened(store, long_term):
    said = datetime(2024, 3, 1, 8, 30, tzinfo=UTC)
    await store.aput(NOTE, "moved", {"content": "Alice moved to Lisbon", "occurred_at": said})
    await store.aput(
        NOTE,
        "job",
        {"content": "Alice works at a bakery", "occurred_at": "2024-05-02T10:00:00+02:00"},
    )
    await store.aput(NOTE, "z", {"content": "Alice likes jazz", "occurred_at": "2024-06-01T00:00Z"})
    assert (await _memory_of(long_term, "moved"))["occurred_at"] == said
    job = await _memory_of(long_term, "job")
    assert job["occurred_at"] == datetime(2024, 5, 2, 8, 0, tzinfo=UTC)
    assert (await _memory_of(long_term, "z"))["occurred_at"] == datetime(2024, 6, 1, tzinfo=UTC)
    # The value is returned as it was put; the memory was stored now, said then.
    item = await store.aget(NOTE, "job")
    assert item.value == {
        "content": "Alice works at a bakery",
        "occurred_at": "2024-05-02T10:00:00+02:00",
    }
    memory = await long_term.get(Tenant("agent", "alice"), job["_id"])
    assert memory.occurred_at == datetime(2024, 5, 2, 8, 0, tzinfo=UTC)
    assert memory.created_at > memory.occurred_at + timedelta(days=365)


async def test_a_history_put_out_of_order_keeps_what_was_said_last_current(store):
    # Imported newest first: the older statement, put second, is history from the start.
    await store.aput(
        NOTE, "city", {"content": "Alice lives in Porto", "occurred_at": "2024-09-01T00:00Z"}
    )
    await store.aput(
        NOTE, "city", {"content": "Alice lives in Lyon", "occurred_at": "2023-01-01T00:00Z"}
    )
    assert (await store.aget(NOTE, "city")).value["content"] == "Alice lives in Porto"
    assert [i.value["content"] for i in await store.ahistory(NOTE, "city")] == [
        "Alice lives in Porto",
        "Alice lives in Lyon",
    ]
    # Without event times the later put would have won.
    await store.aput((*ALICE, "Other"), "city", {"content": "Alice lives in Porto"})
    await store.aput((*ALICE, "Other"), "city", {"content": "Alice lives in Lyon"})
    assert (await store.aget((*ALICE, "Other"), "city")).value["content"] == "Alice lives in Lyon"


@pytest.mark.parametrize(
    "when",
    [
        "2024-03-01T09:30:00",  # no offset
        datetime(2024, 3, 1, 9, 30),  # naive
        "last Tuesday, secret-token-123",
        "",
        12345,
        ["2024-03-01T09:30:00Z"],
        {"$date": "2024-03-01T09:30:00Z"},  # refused as a key of the value
        "9999-01-01T00:00:00Z",  # in the future
        datetime.now(UTC) + timedelta(days=2),
        "2024-03-01T09:30:00Z" * 5000,
    ],
)
async def test_a_bad_occurred_at_is_a_clear_error_and_nothing_is_stored(store, long_term, when):
    with pytest.raises(InvalidInputError, match=r"value\W+occurred_at") as raised:
        await store.aput(NOTE, "bad", {"content": "Alice parks on level 2", "occurred_at": when})
    assert "secret-token" not in str(raised.value)
    assert "2024-03-01" not in str(raised.value)
    assert await store.aget(NOTE, "bad") is None
    assert await long_term.collection.count_documents({"key": {"$regex": "bad"}}) == 0
    # The same through the sync API, from a worker thread as LangGraph runs sync nodes.
    with pytest.raises(InvalidInputError, match=r"value\W+occurred_at"):
        await asyncio.to_thread(
            store.put, NOTE, "bad", {"content": "Alice parks on level 2", "occurred_at": when}
        )
    assert await long_term.collection.count_documents({"key": {"$regex": "bad"}}) == 0


async def test_event_time_reads_the_field_it_is_told_or_none(long_term):
    named = MemoryStore(long_term, agent_id="agent", event_time="said_at")
    plain = MemoryStore(long_term, agent_id="agent", event_time=None)
    try:
        await named.aput(NOTE, "a", {"content": "Alice sings", "said_at": "2022-02-02T00:00Z"})
        await named.aput(NOTE, "b", {"content": "Alice hums", "occurred_at": "not a time"})
        await plain.aput(NOTE, "c", {"content": "Alice whistles", "occurred_at": "not a time"})
        assert (await _memory_of(long_term, "a"))["occurred_at"] == datetime(2022, 2, 2, tzinfo=UTC)
        for key in ("b", "c"):  # an ordinary field of the value: the memory happened now
            memory = await _memory_of(long_term, key)
            assert memory["occurred_at"] == memory["created_at"]
        assert (await plain.aget(NOTE, "c")).value["occurred_at"] == "not a time"
    finally:
        await named.aclose()
        await plain.aclose()
    for bad in ("", 3, "a.b", "$x"):
        with pytest.raises(InvalidInputError, match="event_time"):
            MemoryStore(long_term, agent_id="agent", event_time=bad)

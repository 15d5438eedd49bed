"""Long-term memory as a LangGraph store, on the embedded server: the BaseStore surface, tenant
isolation, hostile inputs, history on repeated puts, and a real LangGraph agent using it."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    BaseStore,
    GetOp,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from agent_memory.errors import InvalidInputError
from agent_memory.langgraph.store import MemoryStore
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.mongo.indexes import IndexManager
from agent_memory.tenancy import Tenant

ALICE = ("memories", "alice")
BOB = ("memories", "bob")


@pytest.fixture
async def long_term(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    memory = LongTermMemory(connection, embedder)
    yield memory
    await memory.aclose()


@pytest.fixture
def store(long_term):
    return MemoryStore(long_term, agent_id="agent")


async def test_put_get_search_delete_round_trip(store, long_term):
    note = (*ALICE, "Note")
    await store.aput(note, "diet", {"content": "Alice is vegetarian", "context": "at dinner"})
    await store.aput(note, "pet", {"content": "Alice has a cat named Miso"})
    await store.aput((*ALICE, "User"), "profile", {"user_name": "Alice", "age": 31})

    item = await store.aget(note, "diet")
    assert item is not None
    assert (item.namespace, item.key) == (note, "diet")
    assert item.value == {"content": "Alice is vegetarian", "context": "at dinner"}
    assert item.created_at.tzinfo is not None and item.updated_at >= item.created_at
    assert await store.aget(note, "missing") is None
    assert await store.aget((*ALICE, "User"), "diet") is None  # keys are per namespace

    hits = await store.asearch(ALICE, query="what pet does she have? a cat")
    assert hits[0].key == "pet" and hits[0].score is not None
    assert {hit.key for hit in hits} == {"diet", "pet", "profile"}
    assert [h.key for h in await store.asearch(note, query="cat", limit=1)] == ["pet"]
    listed = await store.asearch(note)
    assert {h.key for h in listed} == {"diet", "pet"} and all(h.score is None for h in listed)
    assert [h.key for h in await store.asearch(ALICE, filter={"age": 31})] == ["profile"]
    assert [h.key for h in await store.asearch(ALICE, filter={"age": {"$gte": 30}})] == ["profile"]
    assert [h.key for h in await store.asearch(ALICE, query="Alice", filter={"age": 31})] == [
        "profile"
    ]
    assert len(await store.asearch(ALICE, limit=2)) == 2
    assert len(await store.asearch(ALICE, limit=2, offset=2)) == 1

    # The memories are the framework's own: its retrieval sees them too.
    memories = await long_term.retrieve(Tenant("agent", "alice"), "vegetarian")
    assert memories[0].memory.content == "Alice is vegetarian"
    assert memories[0].memory.schema == "Note"
    assert memories[0].memory.context == "at dinner"

    assert await store.alist_namespaces(prefix=ALICE) == [(*ALICE, "Note"), (*ALICE, "User")]
    assert await store.alist_namespaces(prefix=ALICE, suffix=("User",)) == [(*ALICE, "User")]
    assert await store.alist_namespaces(prefix=ALICE, max_depth=2) == [ALICE]
    assert await store.alist_namespaces(prefix=(*ALICE, "*"), limit=1, offset=1) == [
        (*ALICE, "User")
    ]

    await store.adelete(note, "diet")
    assert await store.aget(note, "diet") is None
    assert await store.ahistory(note, "diet") == []
    assert {h.key for h in await store.asearch(note)} == {"pet"}
    await store.adelete(note, "never-stored")  # deleting nothing is not an error


async def test_batch_runs_ops_in_order_with_one_embedding_call(store, embedder):
    note = (*ALICE, "Note")
    embedder.calls.clear()
    results = await store.abatch(
        [
            PutOp(note, "a", {"content": "likes jazz"}),
            PutOp(note, "b", {"content": "owns a bike"}),
            GetOp(note, "a"),
            SearchOp(ALICE, limit=5),
            GetOp(note, "missing"),
            ListNamespacesOp((MatchCondition("prefix", ALICE),)),
        ]
    )
    assert embedder.calls == [("document", 2)]
    assert results[0] is None and results[1] is None
    assert results[2].value == {"content": "likes jazz"}
    assert {item.key for item in results[3]} == {"a", "b"}
    assert results[4] is None
    assert results[5] == [note]


async def test_an_invalid_op_in_a_batch_writes_nothing(store):
    note = (*ALICE, "Note")
    with pytest.raises(InvalidInputError):
        await store.abatch(
            [PutOp(note, "a", {"content": "ok"}), PutOp(note, "b", {"$set": {"x": 1}})]
        )
    assert await store.aget(note, "a") is None


async def test_putting_a_key_again_keeps_one_current_item_and_the_old_in_history(store):
    profile = (*ALICE, "User")
    await store.aput(profile, "home", {"content": "Alice lives in Berlin"})
    await store.aput(profile, "home", {"content": "Alice lives in Lisbon"})
    current = await store.aget(profile, "home")
    assert current.value == {"content": "Alice lives in Lisbon"}
    assert [h.value["content"] for h in await store.asearch(profile)] == ["Alice lives in Lisbon"]
    hits = await store.asearch(profile, query="where does Alice live? Berlin")
    assert [h.value["content"] for h in hits] == ["Alice lives in Lisbon"]
    history = await store.ahistory(profile, "home")
    assert [h.value["content"] for h in history] == [
        "Alice lives in Lisbon",
        "Alice lives in Berlin",
    ]

    # Same text, other fields: consolidation reinforces, and the new value still wins.
    await store.aput(profile, "home", {"content": "Alice lives in Lisbon", "since": 2024})
    assert (await store.aget(profile, "home")).value["since"] == 2024
    assert len(await store.ahistory(profile, "home")) == 2


async def test_users_are_isolated(store):
    await store.aput((*ALICE, "Note"), "secret", {"content": "Alice's door code is 4711"})
    await store.aput((*BOB, "Note"), "hobby", {"content": "Bob plays chess"})
    assert await store.aget((*BOB, "Note"), "secret") is None
    assert [h.key for h in await store.asearch(BOB, query="door code 4711")] == ["hobby"]
    assert [h.key for h in await store.asearch(BOB)] == ["hobby"]
    assert await store.alist_namespaces(prefix=BOB) == [(*BOB, "Note")]
    await store.adelete((*BOB, "Note"), "secret")
    assert await store.aget((*ALICE, "Note"), "secret") is not None
    other_agent = MemoryStore(store.long_term, agent_id="other-agent")
    assert await other_agent.aget((*ALICE, "Note"), "secret") is None


async def test_memories_not_written_by_the_store_do_not_pose_as_items(store, long_term):
    # Tags are free text in the framework: one that looks like the store's marker is not enough.
    await long_term.store(Tenant("agent", "alice"), "Alice likes tea", tags=["lgns:[]"])
    await store.aput((*ALICE, "Note"), "drink", {"content": "Alice likes coffee"})
    assert [h.key for h in await store.asearch(ALICE, query="what does Alice like? tea")] == [
        "drink"
    ]
    assert [h.key for h in await store.asearch(ALICE)] == ["drink"]
    assert await store.alist_namespaces(prefix=ALICE) == [(*ALICE, "Note")]


@pytest.mark.parametrize(
    "namespace",
    [
        ("notes", "alice"),
        ("memories",),
        ("alice", "memories"),
        ("memories", {"$ne": None}),
        ("memories", "alice", "a" * 300),
        ("memories", "alice", *["x"] * 9),
    ],
)
async def test_other_namespace_shapes_are_refused(store, namespace):
    with pytest.raises(ValueError, match=r"namespace|user_id|label|deeper"):
        await store.abatch([PutOp(namespace, "k", {"content": "x"})])
    with pytest.raises(ValueError):
        await store.abatch([GetOp(namespace, "k")])
    with pytest.raises(ValueError):
        await store.abatch([SearchOp(namespace)])


async def test_a_dict_user_id_is_a_clear_error(store):
    with pytest.raises(InvalidInputError, match="user_id must be a str, got dict"):
        await store.abatch([SearchOp(("memories", {"$gt": ""}), query="x")])


@pytest.mark.parametrize(
    "filter_",
    [
        {"$where": "sleep(1000)"},
        {"content": {"$regex": ".*"}},
        {"content": {"$ne": None, "other": 1}},
        {"a.b": 1},
        {"age": {"$gt": {"$ne": 0}}},
        {"age": {"$in": [1, 2]}},
        "content",
    ],
)
async def test_hostile_filters_are_refused(store, filter_):
    await store.aput((*ALICE, "Note"), "k", {"content": "x", "age": 3})
    with pytest.raises(InvalidInputError):
        await store.asearch(ALICE, filter=filter_)


async def test_cross_user_listing_and_search_are_refused(store):
    await store.aput((*ALICE, "Note"), "k", {"content": "x"})
    for prefix in [None, ("memories",), ("memories", "*")]:
        with pytest.raises(InvalidInputError, match="one user"):
            await store.alist_namespaces(prefix=prefix)
    with pytest.raises(InvalidInputError):
        await store.asearch(("memories",), query="x")
    with pytest.raises(InvalidInputError):
        await store.asearch((), query="x")


async def test_values_and_options_are_checked(store):
    note = (*ALICE, "Note")
    with pytest.raises(InvalidInputError, match="may not start with"):
        await store.aput(note, "k", {"$set": 1})
    with pytest.raises(InvalidInputError, match=r"contain '\.'"):
        await store.aput(note, "k", {"a.b": 1})
    with pytest.raises(NotImplementedError, match="TTL"):
        await store.aput(note, "k", {"content": "x"}, ttl=5)
    with pytest.raises(InvalidInputError, match="at most 100"):
        await store.asearch(ALICE, query="x", limit=90, offset=20)
    with pytest.raises(InvalidInputError, match="index"):
        MemoryStore(store.long_term, agent_id="a", index={"embed": "openai:x", "dims": 3})


async def test_index_fields_choose_the_searchable_text(long_term):
    store = MemoryStore(long_term, agent_id="agent", index={"fields": ["title"]})
    await store.aput((*ALICE, "Doc"), "d1", {"title": "Tomato soup recipe", "body": "zzz"})
    await store.aput((*ALICE, "Doc"), "d2", {"title": "Bike repair", "body": "tomato"})
    hits = await store.asearch(ALICE, query="tomato soup")
    assert hits[0].key == "d1"
    memories = await long_term.retrieve(Tenant("agent", "alice"), "tomato soup")
    assert memories[0].memory.content == "Tomato soup recipe"


async def test_sync_api_on_the_loop_thread_refuses_instead_of_deadlocking(store):
    # asyncio.InvalidStateError, as LangGraph's async stores raise on their loop.
    with pytest.raises(asyncio.InvalidStateError, match="aget"):
        store.get((*ALICE, "Note"), "k")


def test_sync_api_outside_the_loop_points_to_the_async_api(long_term):
    store = MemoryStore(long_term, agent_id="agent")
    with pytest.raises(asyncio.InvalidStateError, match="aget"):
        store.get((*ALICE, "Note"), "k")


# --- a LangGraph agent of its own ---------------------------------------------------------------


class State(TypedDict):
    message: str
    recalled: Annotated[list[str], operator.add]


class Context(TypedDict):
    user_id: str


async def remember(state: State, runtime: Runtime[Context]) -> dict:
    """Recall what the store knows about this user, then remember the new message."""
    namespace = ("memories", runtime.context["user_id"], "Note")
    hits = await runtime.store.asearch(namespace, query=state["message"], limit=5)
    key = f"note-{len(await runtime.store.asearch(namespace, limit=100))}"
    await runtime.store.aput(namespace, key, {"content": state["message"]})
    return {"recalled": [hit.value["content"] for hit in hits]}


def count_notes(state: State, *, store: BaseStore, runtime: Runtime[Context]) -> dict:
    """A sync node: LangGraph runs it in a worker thread, and the sync store API works there."""
    namespaces = store.list_namespaces(prefix=("memories", runtime.context["user_id"]))
    return {"recalled": [f"namespaces={len(namespaces)}"]}


def build_graph(store: MemoryStore):
    builder = StateGraph(State, context_schema=Context)
    builder.add_node("remember", remember)
    builder.add_node("count_notes", count_notes)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "count_notes")
    builder.add_edge("count_notes", END)
    return builder.compile(checkpointer=InMemorySaver(), store=store)


async def test_a_langgraph_agent_remembers_across_threads_per_user(long_term):
    graph = build_graph(MemoryStore(long_term, agent_id="agent"))

    async def turn(thread: str, user: str, message: str) -> list[str]:
        result = await graph.ainvoke(
            {"message": message, "recalled": []},
            {"configurable": {"thread_id": thread}},
            context={"user_id": user},
        )
        return result["recalled"]

    first = await turn("t1", "alice", "My favourite city is Kyoto")
    assert first == ["namespaces=1"]  # nothing recalled yet; the note was written
    # A new thread, same user: the memory is there.
    second = await turn("t2", "alice", "Which city do I like? Kyoto?")
    assert second[0] == "My favourite city is Kyoto"
    # Another user in another thread sees nothing of Alice's.
    third = await turn("t3", "bob", "Which city do I like? Kyoto?")
    assert third == ["namespaces=1"]
    store = MemoryStore(long_term, agent_id="agent")
    assert len(await store.asearch(("memories", "alice", "Note"))) == 2
    assert len(await store.asearch(("memories", "bob", "Note"))) == 1

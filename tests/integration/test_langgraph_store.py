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
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from agent_memory.errors import InvalidInputError
from agent_memory.langgraph.store import MemoryStore, NamespaceMap
from agent_memory.tenancy import Tenant

ALICE = ("memories", "alice")
BOB = ("memories", "bob")


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
    # Tags are free text in the framework: one that looks like the store's tags is not enough
    # to make a memory an item; such a memory is not a learned one either.
    alice = Tenant("agent", "alice")
    await long_term.store(alice, "Alice likes tea", tags=['lg/ns:["memories","alice","Note"]'])
    await long_term.store(alice, "Alice likes jazz", tags=["lg/ns:[]"])
    await store.aput((*ALICE, "Note"), "drink", {"content": "Alice likes coffee"})
    note = (*ALICE, "Note")
    assert [h.key for h in await store.asearch(note, query="what does Alice like? tea")] == [
        "drink"
    ]
    assert [h.key for h in await store.asearch(note)] == ["drink"]
    learned = await store.asearch((*ALICE, "learned"))
    assert [h.value["content"] for h in learned] == ["Alice likes tea"]
    assert await store.alist_namespaces(prefix=ALICE) == [
        (*ALICE, "Note"),
        (*ALICE, "learned", "fact"),
    ]


@pytest.mark.parametrize(
    "namespace",
    [
        ("memories", {"$ne": None}),
        ("memories", "alice", "a" * 300),
        ("memories", "alice", *["x"] * 19),
        ("memories", "a.b"),
        ("memories", ""),
        ("memories", "al\x00ice"),
        ("langgraph", "x"),
        "memories",
    ],
)
async def test_invalid_namespaces_are_refused_as_langgraph_does(store, namespace):
    # One exception for both worlds: this framework's InvalidInputError and LangGraph's
    # InvalidNamespaceError, which its own stores raise.
    for op in (
        PutOp(namespace, "k", {"content": "x"}),
        GetOp(namespace, "k"),
        SearchOp(namespace),
    ):
        with pytest.raises(InvalidNamespaceError, match=r"namespace|label|langgraph") as caught:
            await store.abatch([op])
        assert isinstance(caught.value, InvalidInputError)


async def test_the_app_wide_user_id_cannot_be_claimed(store):
    with pytest.raises(InvalidNamespaceError, match="reserved for app-wide"):
        await store.aput(("memories", "*", "Note"), "k", {"content": "x"})


async def test_an_empty_namespace_holds_no_item(store):
    with pytest.raises(InvalidNamespaceError, match="empty"):
        await store.abatch([PutOp((), "k", {"content": "x"})])


async def test_a_dict_user_id_is_a_clear_error(store):
    with pytest.raises(InvalidInputError, match="namespace labels must be str, got dict"):
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


async def test_reads_that_name_no_user_span_every_user_as_langgraph_stores_do(store):
    await store.aput((*ALICE, "Note"), "k", {"content": "Alice reads poetry"})
    await store.aput((*BOB, "Note"), "k", {"content": "Bob reads poetry"})
    await store.aput(("docs",), "faq", {"content": "poetry books are on shelf 3"})
    for prefix in [None, ("memories",), ("memories", "*")]:
        assert await store.alist_namespaces(prefix=prefix) == [
            n
            for n in [("docs",), (*ALICE, "Note"), (*BOB, "Note")]
            if prefix is None or n[0] == "memories"
        ]
    hits = await store.asearch(("memories",), query="poetry")
    assert {h.namespace for h in hits} == {(*ALICE, "Note"), (*BOB, "Note")}
    hits = await store.asearch((), query="poetry")
    assert {h.namespace for h in hits} == {("docs",), (*ALICE, "Note"), (*BOB, "Note")}
    assert [h.key for h in await store.asearch(ALICE, query="poetry")] == ["k"]


async def test_a_store_that_serves_one_user_at_a_time_refuses_reads_naming_none(long_term):
    store = MemoryStore(long_term, agent_id="agent", namespaces=NamespaceMap(span_users=False))
    await store.aput((*ALICE, "Note"), "k", {"content": "x"})
    await store.aput(("docs",), "faq", {"content": "y"})
    for prefix in [None, ("memories",), ("memories", "*")]:
        with pytest.raises(InvalidInputError, match="one user at a time"):
            await store.alist_namespaces(prefix=prefix)
    with pytest.raises(InvalidInputError, match="include the user id"):
        await store.asearch(("memories",), query="x")
    with pytest.raises(InvalidNamespaceError):
        await store.asearch((), query="x")
    # App-wide namespaces and a user's own stay readable.
    assert [h.key for h in await store.asearch(("docs",))] == ["faq"]
    assert await store.alist_namespaces(prefix=ALICE) == [(*ALICE, "Note")]


async def test_values_and_options_are_checked(store):
    note = (*ALICE, "Note")
    with pytest.raises(InvalidInputError, match="may not start with"):
        await store.aput(note, "k", {"$set": 1})
    with pytest.raises(InvalidInputError, match=r"contain '\.'"):
        await store.aput(note, "k", {"a.b": 1})
    for ttl in (0, -1, float("nan"), float("inf"), True, "5"):
        with pytest.raises(InvalidInputError, match="ttl"):
            await store.aput(note, "k", {"content": "x"}, ttl=ttl)
    with pytest.raises(InvalidInputError, match="at most 1000"):
        await store.asearch(ALICE, query="x", limit=1000, offset=1)
    with pytest.raises(InvalidInputError, match="at most 1000"):
        await store.asearch(ALICE, query="x", filter={"a": 1}, limit=150, offset=60)
    assert await store.aget(note, "k") is None  # nothing was written
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


async def test_root_is_deprecated_and_still_maps_the_user(long_term):
    # MemoryStore(root=...) of the first version: one release more, with a warning.
    replacement = r"namespaces=NamespaceMap\(user_roots=\('notes',\), span_users=False\)"
    with pytest.warns(DeprecationWarning, match=replacement):
        store = MemoryStore(long_term, agent_id="agent", root="notes")
    try:
        assert store.namespaces == NamespaceMap(user_roots=("notes",), span_users=False)
        await store.aput(("notes", "alice", "diet"), "k", {"content": "Alice is vegetarian"})
        assert {d["user_id"] async for d in long_term.collection.find({})} == {"alice"}
        hits = await store.asearch(("notes", "alice"), query="what does Alice eat?")
        assert [h.key for h in hits] == ["k"]
        with pytest.raises(InvalidNamespaceError, match="names no user"):
            await store.asearch(())  # reads name the user, as the store with root= required
    finally:
        await store.aclose()
    with pytest.raises(InvalidInputError, match="not both"):
        MemoryStore(long_term, agent_id="agent", root="notes", namespaces=NamespaceMap())


async def test_roots_warning_names_the_callers_line(long_term, connection):
    # Python's default filters show a DeprecationWarning only when it names code of the app
    # (__main__): one that named a line inside agent_memory was hidden.
    with pytest.warns(DeprecationWarning) as direct:
        await MemoryStore(long_term, agent_id="agent", root="notes").aclose()
    with pytest.warns(DeprecationWarning) as built:
        store = MemoryStore.from_connection(
            connection, agent_id="agent", root="notes", index={"embed": long_term.embedder}
        )
    await store.aclose()
    assert store.namespaces == NamespaceMap(user_roots=("notes",), span_users=False)
    assert [w.filename for w in (*direct, *built)] == [__file__, __file__]
    with pytest.raises(InvalidInputError, match="not both"):
        MemoryStore.from_connection(
            connection, agent_id="agent", root="notes", namespaces=NamespaceMap()
        )

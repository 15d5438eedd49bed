"""The LangGraph ``BaseStore`` contract, run against two stores side by side.

Every test runs twice: against "reference", LangGraph's own ``InMemoryStore``, and against
"ours", :class:`agent_memory.langgraph.store.MemoryStore` on the embedded server. Both embed
with the same FakeEmbedder, so vector scores are comparable: a query search must rank the
same items in the same order with the cosine similarity computed here from the same vectors.

A behaviour in which the two stores differ fails the suite, unless it is one of the deliberate
differences in ``DIFFERENCES``, on which the tests that touch it branch explicitly.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from datetime import timedelta
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from agent_memory.langgraph.store import MemoryStore
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.providers.embedders.fake import FakeEmbedder

#: Deliberate differences between the stores; a test touching one branches on it by name.
DIFFERENCES = {
    "no_index_fields": (
        "without index fields the reference embeds the whole value as JSON, ours embeds "
        "value['content'] when it is a non-empty string, else the JSON; "
        "documented in docs/langgraph.md#index-fields"
    ),
    "sync_on_loop_thread": (
        "the reference is sync and its sync methods work on the event loop thread, ours is "
        "async and raises asyncio.InvalidStateError there (sync calls work from worker "
        "threads); documented in docs/langgraph.md#sync-calls"
    ),
    "ttl": (
        "the reference does not support TTL (supports_ttl False), ours does; "
        "documented in docs/langgraph.md#ttl"
    ),
    "created_at_kept": (
        "the reference builds a new item on every put, so an update sets created_at to now; "
        "ours keeps the first version's created_at (as LangGraph's SQL stores do); "
        "documented in docs/langgraph.md#differences"
    ),
    "unindexed_never_ranked": (
        "the reference fills a query search that has fewer embedded matches than `limit` "
        "with unembedded items (score None), index=False ones included; ours never returns "
        "an unindexed item to a query; documented in docs/langgraph.md#differences"
    ),
    "batch_in_order": (
        "the reference runs every read of one abatch against the store as it was before the "
        "batch and applies the last put of each key; ours runs the ops in order, so a get "
        "after a put in the same batch sees it; documented in docs/langgraph.md#differences"
    ),
}

TOLERANCE = 1e-4
DOCS = ("docs",)
ALICE = ("memories", "alice", "notes")
BOB = ("memories", "bob", "notes")


def embed_now(embedder: FakeEmbedder, texts: list[str]) -> list[list[float]]:
    """``embedder.embed_documents`` without an event loop, for the reference's sync calls:
    the fake embedder never awaits, so its coroutine finishes on its first step."""
    coroutine = embedder.embed_documents(texts)
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value.tolist()
    coroutine.close()
    raise AssertionError("the fake embedder awaited something")


def cosine(embedder: FakeEmbedder, query: str, text: str) -> float:
    """The score a query search must give ``text``: the cosine of the two vectors."""
    q, t = (np.asarray(v, dtype=np.float64) for v in embed_now(embedder, [query, text]))
    return float(q @ t / (np.linalg.norm(q) * np.linalg.norm(t)))


def expected_ranking(
    embedder: FakeEmbedder, query: str, texts: dict[str, str]
) -> list[tuple[str, float]]:
    """``(key, score)`` best first; refuses a fixture whose scores nearly tie."""
    ranked = sorted(
        ((key, cosine(embedder, query, text)) for key, text in texts.items()),
        key=lambda pair: pair[1],
        reverse=True,
    )
    gaps = [a[1] - b[1] for a, b in pairwise(ranked)]
    assert all(gap > 10 * TOLERANCE for gap in gaps), f"near tie in the fixture: {ranked}"
    return ranked


def index_config(embedder: FakeEmbedder, fields: Sequence[str] | None) -> dict[str, Any]:
    index: dict[str, Any] = {"dims": embedder.dimensions}
    if fields is not None:
        index["fields"] = list(fields)
    return index


def make_reference(embedder: FakeEmbedder, fields: Sequence[str] | None = ("text",)) -> BaseStore:
    index = index_config(embedder, fields)
    return InMemoryStore(index={**index, "embed": lambda texts: embed_now(embedder, texts)})


def make_ours(
    long_term: LongTermMemory, embedder: FakeEmbedder, fields: Sequence[str] | None = ("text",)
) -> BaseStore:
    return MemoryStore(long_term, agent_id="agent", index=index_config(embedder, fields))


@pytest.fixture(params=["reference", "ours"])
def kind(request) -> str:
    return request.param


@pytest.fixture
def made() -> list[MemoryStore]:
    """Our stores a test built, closed after it (their serving task stopped)."""
    return []


@pytest.fixture(autouse=True)
async def close_ours(made):
    yield
    for store in made:
        await store.aclose()


@pytest.fixture
def make_store(kind, request, embedder, made) -> Callable[..., BaseStore]:
    """``make_store(fields=...)``: a store of this test's kind (the server only for ours)."""
    if kind == "reference":
        return lambda fields=("text",): make_reference(embedder, fields)
    long_term = request.getfixturevalue("long_term")

    def make(fields: Sequence[str] | None = ("text",)) -> BaseStore:
        made.append(make_ours(long_term, embedder, fields))
        return made[-1]

    return make


@pytest.fixture
async def store(make_store) -> BaseStore:
    # Built on the running loop, as a graph's store is.
    return make_store()


def differs(kind: str, name: str) -> bool:
    """Whether the deliberate difference ``name`` applies to this store (ours only): without
    the entry in ``DIFFERENCES``, ours must behave as the reference does."""
    return kind == "ours" and name in DIFFERENCES


def keys(items: Sequence[Item]) -> list[str]:
    return [item.key for item in items]


async def put_texts(store: BaseStore, namespace: tuple[str, ...], texts: dict[str, str]) -> None:
    for key, text in texts.items():
        await store.aput(namespace, key, {"text": text})


# --- put, get, delete ---------------------------------------------------------------------------


async def test_put_then_get_returns_the_item(store):
    await store.aput(DOCS, "k1", {"text": "hello", "n": 1, "nested": {"a": [1, 2]}})
    item = await store.aget(DOCS, "k1")
    assert isinstance(item, Item)
    assert (item.namespace, item.key) == (DOCS, "k1")
    assert item.value == {"text": "hello", "n": 1, "nested": {"a": [1, 2]}}
    assert item.created_at.utcoffset() == timedelta(0)
    assert item.updated_at >= item.created_at


async def test_put_again_replaces_the_value_and_moves_updated_at_forward(store):
    await store.aput(DOCS, "k", {"text": "first"})
    before = await store.aget(DOCS, "k")
    await asyncio.sleep(0.005)  # both clocks resolve milliseconds at least
    await store.aput(DOCS, "k", {"text": "second", "extra": True})
    after = await store.aget(DOCS, "k")
    assert after.value == {"text": "second", "extra": True}
    assert after.updated_at > before.updated_at
    assert keys(await store.asearch(DOCS)) == ["k"]


async def test_put_again_keeps_or_resets_created_at(store, kind):
    await store.aput(DOCS, "k", {"text": "first"})
    before = await store.aget(DOCS, "k")
    await asyncio.sleep(0.005)
    await store.aput(DOCS, "k", {"text": "second"})
    after = await store.aget(DOCS, "k")
    if differs(kind, "created_at_kept"):
        assert after.created_at == before.created_at
    else:
        assert after.created_at > before.created_at


async def test_delete_removes_the_item(store):
    await store.aput(DOCS, "gone", {"text": "bye"})
    await store.aput(DOCS, "kept", {"text": "stay"})
    await store.adelete(DOCS, "gone")
    assert await store.aget(DOCS, "gone") is None
    assert keys(await store.asearch(DOCS)) == ["kept"]
    assert keys(await store.asearch(DOCS, query="bye")) == ["kept"]


async def test_delete_of_a_missing_key_is_not_an_error(store):
    await store.aput(DOCS, "kept", {"text": "stay"})
    await store.adelete(DOCS, "never-stored")
    assert await store.aget(DOCS, "never-stored") is None
    assert (await store.aget(DOCS, "kept")).value == {"text": "stay"}


async def test_get_of_a_missing_key_is_none(store):
    await store.aput(DOCS, "present", {"text": "x"})
    assert await store.aget(DOCS, "absent") is None
    assert await store.aget(("never", "used"), "present") is None


async def test_keys_are_per_namespace(store):
    await store.aput(DOCS, "same", {"text": "root"})
    await store.aput((*DOCS, "a"), "same", {"text": "in a"})
    await store.aput(ALICE, "same", {"text": "alice's"})
    await store.adelete((*DOCS, "a"), "same")
    assert (await store.aget(DOCS, "same")).value == {"text": "root"}
    assert await store.aget((*DOCS, "a"), "same") is None
    assert (await store.aget(ALICE, "same")).value == {"text": "alice's"}


@pytest.mark.parametrize(
    "namespace",
    [
        ("app",),
        ("app", "settings"),
        ("memories", "alice"),
        ("memories", "alice", "notes", "2024"),
        ("a", "b", "c", "d", "e", "f"),
        ("Ünïcode", "名前", "with space", "dash-and_underscore"),
    ],
)
async def test_namespaces_come_back_exactly_as_put(store, namespace):
    await store.aput(namespace, "k", {"text": "x"})
    item = await store.aget(namespace, "k")
    assert item.namespace == namespace and type(item.namespace) is tuple
    assert [hit.namespace for hit in await store.asearch(namespace)] == [namespace]
    assert await store.alist_namespaces(prefix=namespace) == [namespace]


@pytest.mark.parametrize(
    "namespace",
    [(), ("docs", ""), ("docs", "a.b"), ("docs", 1), ("langgraph", "x")],
    ids=["empty", "empty-label", "dotted-label", "int-label", "langgraph-root"],
)
async def test_put_refuses_an_invalid_namespace(store, namespace):
    with pytest.raises(InvalidNamespaceError):
        await store.aput(namespace, "k", {"text": "x"})
    assert await store.alist_namespaces() == []


@pytest.mark.parametrize(
    "namespace",
    [("docs", ""), ("docs", "a.b"), ("docs", None)],
    ids=["empty-label", "dotted-label", "none-label"],
)
async def test_reads_and_deletes_refuse_an_invalid_label(store, namespace):
    with pytest.raises(InvalidNamespaceError):
        await store.aget(namespace, "k")
    with pytest.raises(InvalidNamespaceError):
        await store.asearch(namespace)
    with pytest.raises(InvalidNamespaceError):
        await store.adelete(namespace, "k")
    with pytest.raises(InvalidNamespaceError):
        await store.alist_namespaces(prefix=namespace)
    with pytest.raises(InvalidNamespaceError):
        await store.alist_namespaces(suffix=namespace)


# --- list_namespaces ------------------------------------------------------------------------

NAMESPACES = [
    ("library", "books", "fiction"),
    ("library", "books", "science", "physics"),
    ("library", "books", "science", "biology"),
    ("library", "films", "fiction"),
    ("memories", "alice", "notes"),
    ("memories", "bob", "notes"),
    ("shop",),
]


@pytest.fixture
async def shelves(store) -> BaseStore:
    for namespace in NAMESPACES:
        await store.aput(namespace, "k", {"text": "/".join(namespace)})
    return store


async def test_list_namespaces_without_prefix_lists_every_namespace_sorted(shelves):
    assert await shelves.alist_namespaces() == sorted(NAMESPACES)


async def test_list_namespaces_by_prefix(shelves):
    assert await shelves.alist_namespaces(prefix=("library", "books")) == [
        ("library", "books", "fiction"),
        ("library", "books", "science", "biology"),
        ("library", "books", "science", "physics"),
    ]
    assert await shelves.alist_namespaces(prefix=("lib",)) == []


async def test_list_namespaces_by_suffix(shelves):
    assert await shelves.alist_namespaces(suffix=("fiction",)) == [
        ("library", "books", "fiction"),
        ("library", "films", "fiction"),
    ]
    assert await shelves.alist_namespaces(suffix=("alice", "notes")) == [ALICE]


async def test_list_namespaces_by_prefix_and_suffix(shelves):
    assert await shelves.alist_namespaces(prefix=("library", "books"), suffix=("fiction",)) == [
        ("library", "books", "fiction")
    ]
    assert await shelves.alist_namespaces(prefix=("memories",), suffix=("fiction",)) == []


async def test_list_namespaces_with_wildcards_in_the_prefix(shelves):
    assert await shelves.alist_namespaces(prefix=("library", "*", "fiction")) == [
        ("library", "books", "fiction"),
        ("library", "films", "fiction"),
    ]
    assert await shelves.alist_namespaces(prefix=("memories", "*")) == [ALICE, BOB]


async def test_list_namespaces_with_wildcards_in_the_suffix(shelves):
    assert await shelves.alist_namespaces(suffix=("science", "*")) == [
        ("library", "books", "science", "biology"),
        ("library", "books", "science", "physics"),
    ]
    assert await shelves.alist_namespaces(suffix=("*", "notes")) == [ALICE, BOB]


async def test_list_namespaces_max_depth_truncates_and_deduplicates(shelves):
    assert await shelves.alist_namespaces(max_depth=1) == [("library",), ("memories",), ("shop",)]
    assert await shelves.alist_namespaces(prefix=("library", "books"), max_depth=3) == [
        ("library", "books", "fiction"),
        ("library", "books", "science"),
    ]
    assert await shelves.alist_namespaces(prefix=("memories",), max_depth=9) == [ALICE, BOB]


async def test_list_namespaces_pages_with_limit_and_offset(shelves):
    pages = [await shelves.alist_namespaces(limit=3, offset=offset) for offset in (0, 3, 6, 9)]
    assert [len(page) for page in pages] == [3, 3, 1, 0]
    assert [ns for page in pages for ns in page] == sorted(NAMESPACES)
    assert await shelves.alist_namespaces(prefix=("library",), limit=1, offset=1) == [
        ("library", "books", "science", "biology")
    ]


# --- search without a query ----------------------------------------------------------------


async def test_search_by_namespace_prefix_returns_the_items_below_it(store):
    await store.aput(("docs", "a"), "a1", {"text": "x"})
    await store.aput(("docs", "a", "deep"), "a2", {"text": "x"})
    await store.aput(("docs", "b"), "b1", {"text": "x"})
    await store.aput(("other",), "o1", {"text": "x"})
    assert sorted(keys(await store.asearch(("docs",)))) == ["a1", "a2", "b1"]
    assert sorted(keys(await store.asearch(("docs", "a")))) == ["a1", "a2"]
    assert keys(await store.asearch(("docs", "a", "deep"))) == ["a2"]
    assert await store.asearch(("docs", "c")) == []


async def test_search_prefix_matches_whole_labels_only(store):
    await store.aput(("foo",), "exact", {"text": "x"})
    await store.aput(("foo", "bar"), "below", {"text": "x"})
    await store.aput(("foobar",), "lookalike", {"text": "x"})
    assert sorted(keys(await store.asearch(("foo",)))) == ["below", "exact"]
    assert sorted(keys(await store.asearch(("foo",), query="x"))) == ["below", "exact"]
    assert keys(await store.asearch(("foob",))) == []


async def test_search_from_the_root_returns_every_item(store):
    await store.aput(DOCS, "d", {"text": "x"})
    await store.aput(ALICE, "a", {"text": "x"})
    await store.aput(BOB, "b", {"text": "x"})
    hits = await store.asearch(())
    assert sorted((hit.namespace, hit.key) for hit in hits) == [
        (DOCS, "d"),
        (ALICE, "a"),
        (BOB, "b"),
    ]
    assert all(isinstance(hit, SearchItem) and hit.score is None for hit in hits)


async def test_search_under_one_user_stays_with_that_user(store):
    await store.aput(ALICE, "a", {"text": "x"})
    await store.aput(BOB, "b", {"text": "x"})
    assert keys(await store.asearch(("memories", "alice"))) == ["a"]
    assert keys(await store.asearch(("memories", "alice"), query="x")) == ["a"]
    assert sorted(keys(await store.asearch(("memories",)))) == ["a", "b"]


async def test_search_returns_the_stored_values_and_times(store):
    await store.aput(DOCS, "k", {"text": "x", "n": 2})
    (hit,) = await store.asearch(DOCS)
    item = await store.aget(DOCS, "k")
    assert (hit.namespace, hit.key, hit.value) == (DOCS, "k", {"text": "x", "n": 2})
    assert (hit.created_at, hit.updated_at) == (item.created_at, item.updated_at)


CATALOG = {
    "k1": {"text": "apple pie", "kind": "book", "year": 1999, "tags": ["a", "b"]},
    "k2": {"text": "banana bread", "kind": "book", "year": 2005, "tags": ["b"]},
    "k3": {"text": "cherry tart", "kind": "film", "year": 2010, "tags": ["a", "b"]},
}
CATALOG["k1"]["meta"] = {"lang": "en", "pages": 300}
CATALOG["k2"]["meta"] = {"lang": "fr", "pages": 120}
CATALOG["k3"]["meta"] = {"lang": "en", "pages": 0}


@pytest.fixture
async def catalog(store) -> BaseStore:
    for key, value in CATALOG.items():
        await store.aput(DOCS, key, value)
    return store


@pytest.mark.parametrize(
    ("filter_", "expected"),
    [
        ({"kind": "book"}, ["k1", "k2"]),
        ({"kind": "book", "year": 2005}, ["k2"]),
        ({"kind": "music"}, []),
        ({"missing": "x"}, []),
    ],
)
async def test_search_filter_by_exact_values(catalog, filter_, expected):
    assert sorted(keys(await catalog.asearch(DOCS, filter=filter_))) == expected


@pytest.mark.parametrize(
    ("filter_", "expected"),
    [
        ({"meta": {"lang": "en"}}, ["k1", "k3"]),
        ({"meta": {"lang": "en", "pages": 0}}, ["k3"]),
        ({"meta": {"lang": "de"}}, []),
    ],
)
async def test_search_filter_by_nested_dicts(catalog, filter_, expected):
    assert sorted(keys(await catalog.asearch(DOCS, filter=filter_))) == expected


@pytest.mark.parametrize(
    ("filter_", "expected"),
    [
        ({"tags": ["a", "b"]}, ["k1", "k3"]),
        ({"tags": ["b"]}, ["k2"]),
        ({"tags": ["b", "a"]}, []),
        ({"tags": ["a"]}, []),
    ],
)
async def test_search_filter_by_lists_matches_the_whole_list(catalog, filter_, expected):
    assert sorted(keys(await catalog.asearch(DOCS, filter=filter_))) == expected


@pytest.mark.parametrize(
    ("filter_", "expected"),
    [
        ({"kind": {"$eq": "film"}}, ["k3"]),
        ({"kind": {"$ne": "film"}}, ["k1", "k2"]),
        ({"year": {"$gt": 2005}}, ["k3"]),
        ({"year": {"$gte": 2005}}, ["k2", "k3"]),
        ({"year": {"$lt": 2005}}, ["k1"]),
        ({"year": {"$lte": 2005}}, ["k1", "k2"]),
        ({"year": {"$gt": 1999, "$lt": 2010}}, ["k2"]),
        ({"year": {"$gte": 2000}, "kind": "book"}, ["k2"]),
    ],
)
async def test_search_filter_with_operators(catalog, filter_, expected):
    assert sorted(keys(await catalog.asearch(DOCS, filter=filter_))) == expected


async def test_search_filter_applies_to_a_query_search(catalog, embedder):
    query = "cherry pie"
    hits = await catalog.asearch(DOCS, query=query, filter={"meta": {"lang": "en"}})
    texts = {key: CATALOG[key]["text"] for key in ("k1", "k3")}
    assert_ranked(hits, expected_ranking(embedder, query, texts))


async def test_search_pages_with_limit_and_offset_without_overlap(store):
    for number in range(7):
        await store.aput(DOCS, f"k{number}", {"text": f"item {number}"})
    everything = keys(await store.asearch(DOCS, limit=100))
    pages = [keys(await store.asearch(DOCS, limit=3, offset=offset)) for offset in (0, 3, 6, 9)]
    assert [len(page) for page in pages] == [3, 3, 1, 0]
    assert [key for page in pages for key in page] == everything
    assert sorted(everything) == [f"k{number}" for number in range(7)]


# --- search with a query -------------------------------------------------------------------

TEXTS = {
    "berlin": "Alice lives in Berlin near the river",
    "tea": "Alice drinks green tea every morning",
    "bike": "Bob repairs old bikes in his garage",
    "kyoto": "Carol loves the temples of Kyoto",
    "soup": "Dan cooks tomato soup on Sundays",
}


def assert_ranked(hits: Sequence[SearchItem], expected: list[tuple[str, float]]) -> None:
    assert keys(hits) == [key for key, _ in expected]
    assert [hit.score for hit in hits] == [
        pytest.approx(score, abs=TOLERANCE) for _, score in expected
    ]


async def test_query_search_ranks_by_cosine_similarity(store, embedder):
    await put_texts(store, DOCS, TEXTS)
    query = "where does Alice live? Berlin"
    assert_ranked(await store.asearch(DOCS, query=query), expected_ranking(embedder, query, TEXTS))


async def test_query_search_pages_follow_the_ranking(store, embedder):
    await put_texts(store, DOCS, TEXTS)
    query = "tea or coffee in the morning"
    ranking = expected_ranking(embedder, query, TEXTS)
    pages = [await store.asearch(DOCS, query=query, limit=2, offset=o) for o in (0, 2, 4)]
    assert [keys(page) for page in pages] == [[k for k, _ in ranking[o : o + 2]] for o in (0, 2, 4)]
    assert_ranked([hit for page in pages for hit in page], ranking)


async def test_query_search_finds_a_new_item(store, embedder):
    await put_texts(store, DOCS, {"tea": TEXTS["tea"]})
    await store.aput(DOCS, "kyoto", {"text": TEXTS["kyoto"]})
    hits = await store.asearch(DOCS, query="temples in Kyoto", limit=1)
    assert_ranked(hits, [("kyoto", cosine(embedder, "temples in Kyoto", TEXTS["kyoto"]))])


async def test_query_search_scores_the_new_text_after_an_update(store, embedder):
    old, new = "Alice lives in Berlin", "Alice moved to Lisbon"
    await store.aput(DOCS, "home", {"text": old})
    (before,) = await store.asearch(DOCS, query="Berlin")
    await store.aput(DOCS, "home", {"text": new})
    (after,) = await store.asearch(DOCS, query="Berlin")
    assert before.score == pytest.approx(cosine(embedder, "Berlin", old), abs=TOLERANCE)
    assert after.score == pytest.approx(cosine(embedder, "Berlin", new), abs=TOLERANCE)
    assert after.score < before.score - 0.1
    assert after.value == {"text": new}


async def test_query_search_forgets_a_deleted_item(store):
    await put_texts(store, DOCS, TEXTS)
    await store.adelete(DOCS, "kyoto")
    hits = await store.asearch(DOCS, query="temples of Kyoto")
    assert sorted(keys(hits)) == sorted(set(TEXTS) - {"kyoto"})


async def test_unindexed_item_is_stored_listed_and_filtered(store):
    await store.aput(DOCS, "indexed", {"text": "green tea", "n": 1})
    await store.aput(DOCS, "unindexed", {"text": "green tea", "n": 2}, index=False)
    assert (await store.aget(DOCS, "unindexed")).value == {"text": "green tea", "n": 2}
    assert sorted(keys(await store.asearch(DOCS))) == ["indexed", "unindexed"]
    assert keys(await store.asearch(DOCS, filter={"n": 2})) == ["unindexed"]
    assert keys(await store.asearch(DOCS, query="green tea", limit=1)) == ["indexed"]


async def test_an_unindexed_item_is_never_ranked(store, kind):
    await store.aput(DOCS, "indexed", {"text": "black coffee"})
    await store.aput(DOCS, "unindexed", {"text": "green tea"}, index=False)
    hits = await store.asearch(DOCS, query="green tea", limit=10)
    if differs(kind, "unindexed_never_ranked"):
        assert keys(hits) == ["indexed"]
    else:  # the reference fills the page with it, unscored
        assert keys(hits) == ["indexed", "unindexed"] and hits[1].score is None


@pytest.mark.parametrize("query", ["", None], ids=["empty", "none"])
async def test_an_empty_or_missing_query_does_not_rank(store, query):
    await put_texts(store, DOCS, TEXTS)
    hits = await store.asearch(DOCS, query=query, limit=100)
    assert sorted(keys(hits)) == sorted(TEXTS)
    assert [hit.score for hit in hits] == [None] * len(TEXTS)


async def test_a_long_query_ranks_like_a_short_one(store, embedder):
    await put_texts(store, DOCS, TEXTS)
    query = " ".join(["where does Alice live, which city, Berlin?"] * 120)  # about 5,000 chars
    assert len(query) > 5_000
    assert_ranked(await store.asearch(DOCS, query=query), expected_ranking(embedder, query, TEXTS))


async def test_a_query_of_special_characters_is_plain_text(store, embedder):
    await put_texts(store, DOCS, TEXTS)
    query = 'Où vit Alice? ¿Berlín o 東京? {"$ne": null} $where; DROP TABLE -- \\ \n\t🎉 Berlin'
    assert_ranked(await store.asearch(DOCS, query=query), expected_ranking(embedder, query, TEXTS))


async def test_both_stores_rank_a_fixed_set_alike(long_term, embedder):
    reference, ours = make_reference(embedder), make_ours(long_term, embedder)
    query = "who lives by the river in Berlin?"
    for store in (reference, ours):
        await put_texts(store, ALICE, TEXTS)
    by_reference = await reference.asearch(ALICE, query=query)
    by_ours = await ours.asearch(ALICE, query=query)
    assert keys(by_reference) == [key for key, _ in expected_ranking(embedder, query, TEXTS)]
    assert keys(by_ours) == keys(by_reference)
    assert [hit.score for hit in by_ours] == [
        pytest.approx(hit.score, abs=TOLERANCE) for hit in by_reference
    ]


# --- index configuration -------------------------------------------------------------------


async def test_index_config_names_dims_and_fields(store, embedder):
    assert store.index_config["dims"] == embedder.dimensions
    assert store.index_config["fields"] == ["text"]


async def test_several_index_fields(make_store, embedder):
    # Each field embedded alone, the best one scores (not the fields joined into one text).
    store = make_store(fields=["title", "body"])
    value = {"title": "tomato soup", "body": "bike repair manual"}
    await store.aput(DOCS, "doc", value)
    for query in ("tomato soup", "bike repair manual"):
        (hit,) = await store.asearch(DOCS, query=query)
        expected = max(cosine(embedder, query, text) for text in value.values())
        assert hit.score == pytest.approx(expected, abs=TOLERANCE)
        assert hit.score == pytest.approx(1.0, abs=TOLERANCE)  # the field itself


async def test_index_paths_embed_each_text_alone(make_store, embedder):
    # LangGraph's test_embed_with_path: a path into a list embeds each element, and
    # put(index=[...]) names other fields for one item.
    store = make_store(fields=["key0", "key1[*].text"])
    sections = {"key0": "apple pie", "key1": [{"text": "bike repair"}, {"text": "tax forms"}]}
    await store.aput(DOCS, "multi", sections)
    await store.aput(DOCS, "other", {"key0": "jazz records", "extra": "tax forms"}, index=["extra"])
    ranked = await store.asearch(DOCS, query="tax forms")
    assert {hit.key for hit in ranked} == {"multi", "other"}
    assert all(hit.score == pytest.approx(1.0, abs=TOLERANCE) for hit in ranked)
    for query, text in (("bike repair", "bike repair"), ("apple", "apple pie")):
        (best, _) = await store.asearch(DOCS, query=query)
        assert best.key == "multi"
        assert best.score == pytest.approx(cosine(embedder, query, text), abs=TOLERANCE)


async def test_no_index_fields_with_content(make_store, kind, embedder):
    store = make_store(fields=None)
    value = {"content": "Alice likes green tea", "mood": "sunny"}
    await store.aput(DOCS, "k", value)
    (hit,) = await store.asearch(DOCS, query="green tea")
    if differs(kind, "no_index_fields"):
        text = value["content"]
    else:
        text = json.dumps(value, sort_keys=True)
    assert hit.score == pytest.approx(cosine(embedder, "green tea", text), abs=TOLERANCE)


async def test_no_index_fields_without_content_embeds_the_json(make_store, embedder):
    store = make_store(fields=None)
    value = {"title": "green tea", "notes": ["steep", "three minutes"]}
    await store.aput(DOCS, "k", value)
    (hit,) = await store.asearch(DOCS, query="green tea")
    expected = cosine(embedder, "green tea", json.dumps(value, sort_keys=True))
    assert hit.score == pytest.approx(expected, abs=TOLERANCE)


async def test_supports_ttl(store, kind):
    assert store.supports_ttl is differs(kind, "ttl")


# --- batch ---------------------------------------------------------------------------------


async def test_batch_returns_results_in_op_order(store):
    await store.aput(DOCS, "a", {"text": "apple"})
    await store.aput((*DOCS, "sub"), "b", {"text": "banana"})
    results = await store.abatch(
        [
            GetOp(DOCS, "a"),
            PutOp(("elsewhere",), "c", {"text": "cherry"}),
            SearchOp(DOCS, limit=10),
            ListNamespacesOp((MatchCondition("prefix", DOCS),)),
            GetOp(DOCS, "missing"),
            PutOp((*DOCS, "sub"), "b", None),
        ]
    )
    assert len(results) == 6
    assert results[0].value == {"text": "apple"}
    assert results[1] is None
    assert sorted(keys(results[2])) == ["a", "b"]
    assert results[3] == [DOCS, (*DOCS, "sub")]
    assert results[4] is None and results[5] is None
    assert (await store.aget(("elsewhere",), "c")).value == {"text": "cherry"}
    assert await store.aget((*DOCS, "sub"), "b") is None


async def test_batch_put_with_none_value_deletes(store):
    await store.aput(DOCS, "a", {"text": "apple"})
    await store.aput(DOCS, "b", {"text": "banana"})
    assert await store.abatch([PutOp(DOCS, "a", None)]) == [None]
    assert await store.aget(DOCS, "a") is None
    assert keys(await store.asearch(DOCS)) == ["b"]


async def test_reads_in_a_batch_and_the_writes_before_them(store, kind):
    await store.aput(DOCS, "old", {"text": "before"})
    results = await store.abatch(
        [
            PutOp(DOCS, "new", {"text": "written in the batch"}),
            PutOp(DOCS, "old", None),
            GetOp(DOCS, "new"),
            GetOp(DOCS, "old"),
            SearchOp(DOCS),
        ]
    )
    if differs(kind, "batch_in_order"):  # in order: the reads see the writes before them
        assert results[2].value == {"text": "written in the batch"}
        assert results[3] is None
        assert keys(results[4]) == ["new"]
    else:  # the reference: every read sees the store as it was before the batch
        assert results[2] is None
        assert results[3].value == {"text": "before"}
        assert keys(results[4]) == ["old"]
    assert keys(await store.asearch(DOCS)) == ["new"]


async def test_the_last_put_of_a_key_in_a_batch_wins(store):
    await store.abatch(
        [
            PutOp(DOCS, "k", {"text": "one"}),
            PutOp(DOCS, "k", {"text": "two"}),
            PutOp(DOCS, "gone", {"text": "x"}),
            PutOp(DOCS, "gone", None),
        ]
    )
    assert (await store.aget(DOCS, "k")).value == {"text": "two"}
    assert await store.aget(DOCS, "gone") is None
    assert keys(await store.asearch(DOCS)) == ["k"]


# --- concurrency ---------------------------------------------------------------------------


async def test_many_concurrent_operations_leave_the_expected_state(store):
    spaces = [("c", str(n)) for n in range(4)]
    slots = [(spaces[n % 4], f"k{n}") for n in range(120)]
    await asyncio.gather(*(store.aput(ns, key, {"text": f"v0 {key}"}) for ns, key in slots))
    deleted, updated, read = slots[:40], slots[40:80], slots[80:]
    results = await asyncio.gather(
        *(store.adelete(ns, key) for ns, key in deleted),
        *(store.aput(ns, key, {"text": f"v1 {key}"}) for ns, key in updated),
        *(store.aget(ns, key) for ns, key in read),
        *(store.asearch(ns, limit=100) for ns in spaces * 5),
        *(store.alist_namespaces(prefix=("c",)) for _ in range(10)),
    )
    gets, searches = results[80:120], results[120:140]
    assert [item.value for item in gets] == [{"text": f"v0 {key}"} for _, key in read]
    for ns, hits in zip(spaces * 5, searches, strict=True):
        assert {hit.namespace for hit in hits} == {ns}
        assert {key for space, key in read if space == ns} <= set(keys(hits))
    assert results[-10:] == [sorted(spaces)] * 10
    final = {
        hit.key: hit.value["text"] for ns in spaces for hit in await store.asearch(ns, limit=100)
    }
    assert final == {
        **{key: f"v1 {key}" for _, key in updated},
        **{key: f"v0 {key}" for _, key in read},
    }


async def test_concurrent_puts_of_one_key_leave_one_item(store):
    values = [{"text": f"version {n}"} for n in range(20)]
    await asyncio.gather(*(store.aput(DOCS, "k", value) for value in values))
    hits = await store.asearch(DOCS, limit=100)
    assert keys(hits) == ["k"]
    assert hits[0].value in values
    assert (await store.aget(DOCS, "k")).value == hits[0].value


# --- the sync API --------------------------------------------------------------------------


async def test_sync_api_works_from_a_worker_thread(store):
    def work() -> list[Any]:
        store.put(DOCS, "a", {"text": "apple"})
        store.put((*DOCS, "x"), "b", {"text": "banana"})
        got = store.get(DOCS, "a")
        found = store.search(DOCS, query="banana", limit=1)
        listed = store.list_namespaces(prefix=DOCS)
        store.delete(DOCS, "a")
        batched = store.batch([GetOp(DOCS, "a"), GetOp((*DOCS, "x"), "b")])
        return [got.value, keys(found), listed, batched[0], batched[1].value]

    assert await asyncio.to_thread(work) == [
        {"text": "apple"},
        ["b"],
        [DOCS, (*DOCS, "x")],
        None,
        {"text": "banana"},
    ]


SYNC_CALLS: dict[str, Callable[[BaseStore], Any]] = {
    "put": lambda store: store.put(DOCS, "k", {"text": "x"}),
    "get": lambda store: store.get(DOCS, "k"),
    "search": lambda store: store.search(DOCS),
    "delete": lambda store: store.delete(DOCS, "k"),
    "list_namespaces": lambda store: store.list_namespaces(),
    "batch": lambda store: store.batch([GetOp(DOCS, "k")]),
}


@pytest.mark.parametrize("method", list(SYNC_CALLS))
async def test_sync_api_on_the_event_loop_thread(store, kind, method):
    await store.aput(DOCS, "k", {"text": "x"})
    refused = differs(kind, "sync_on_loop_thread")
    if refused:
        with pytest.raises(asyncio.InvalidStateError):
            SYNC_CALLS[method](store)
    else:  # the reference is sync, so it simply works
        SYNC_CALLS[method](store)
    deleted = method == "delete" and not refused
    assert ((await store.aget(DOCS, "k")) is None) is deleted

"""The embedded server's path for counters and times by id
(``agent_memory/mongo/_engine_counters.py``): the updates it serves end exactly as mongoeco's
general update path ends them (counts, stored values, reads through indexes, refusals), it
declines what it cannot compute, and the access statistics of a retrieve take it."""

from __future__ import annotations

import contextlib
import datetime
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("mongoeco", reason="the embedded engine (mongoeco) needs Python 3.13+")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import ASCENDING, MongoClient
from pymongo.errors import OperationFailure

from agent_memory.mongo import _engine_counters, _mongoeco
from agent_memory.mongo._engine_counters import counter_update
from agent_memory.mongo.embedded import EmbeddedServer

pytestmark = pytest.mark.mongoeco

_T0 = datetime.datetime(2026, 3, 1, 12, 0, 0, 123000)
_TIMES = [_T0 + datetime.timedelta(days=d) for d in (-40, -1, 0, 1, 30)]
_MISSING = "missing"

# Values the counters path computes, and values it leaves to the general path.
_COUNTERS = [0, 5, -1, 2.5, 7, _MISSING]
_ODD_COUNTERS = [2**62, True, "3", None, [1]]
_STAMPS = [*_TIMES, _MISSING]
_ODD_STAMPS = [None, "2026", 7]
_OWNERS = ["x", "y"]
_ODD_OWNERS = [["x", "y"], None, 3, _MISSING]


def _documents(*, odd: bool) -> st.SearchStrategy[list[dict[str, Any]]]:
    def values(plain: list[Any], others: list[Any]) -> st.SearchStrategy[Any]:
        return st.sampled_from(plain + others) if odd else st.sampled_from(plain)

    document = st.fixed_dictionaries(
        {
            "a": values(_OWNERS, _ODD_OWNERS),
            "n": values(_COUNTERS, _ODD_COUNTERS),
            "t": values(_STAMPS, _ODD_STAMPS),
            "f": values(_COUNTERS, _ODD_COUNTERS),
        }
    )
    return st.lists(document, min_size=4, max_size=8)


# Three examples in four hold only values the path computes; the others mix in the rest.
_DOCUMENTS = st.one_of(*[_documents(odd=False)] * 3, _documents(odd=True))
_IDS = st.lists(st.sampled_from([f"d{i}" for i in range(6)]), min_size=1, max_size=6)
_CHANGE = st.fixed_dictionaries(
    {},
    optional={
        "$inc": st.dictionaries(
            st.sampled_from(["n", "f", "new"]),
            st.sampled_from([1, -2, 0.5, 2**31 - 1, 3]),
            min_size=1,
            max_size=2,
        ),
        "$max": st.dictionaries(st.just("t"), st.sampled_from(_TIMES), min_size=1),
        "$min": st.dictionaries(st.just("u"), st.sampled_from(_TIMES), min_size=1),
    },
).filter(bool)
_UPDATES = st.lists(
    st.tuples(_IDS, st.sampled_from([None, None, "x", "y"]), _CHANGE), min_size=1, max_size=6
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MongoClient[Any]]:
    embedded = EmbeddedServer(tmp_path_factory.mktemp("counters") / "data")
    client: MongoClient[Any] = MongoClient(embedded.start())
    try:
        yield client
    finally:
        client.close()
        embedded.stop()


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int] | None]:
    """What the counters path answered for each command offered to it (``None``: declined)."""
    answers: list[tuple[int, int] | None] = []
    update = _engine_counters.update_counters

    def counted(*args: Any) -> tuple[int, int] | None:
        answer = update(*args)
        answers.append(answer)
        return answer

    monkeypatch.setattr(_mongoeco, "update_counters", counted)
    return answers


@contextlib.contextmanager
def _pair(client: MongoClient[Any], **options: Any) -> Iterator[tuple[Any, Any]]:
    """Two collections made alike (``options`` of ``create_collection``, the same indexes):
    one for the counters path, one whose commands are worded so that it never takes them;
    dropped afterwards."""
    name = uuid.uuid4().hex[:12]
    pair = tuple(
        client["db"].create_collection(f"{kind}_{name}", **options) for kind in ("fast", "general")
    )
    try:
        for collection in pair:
            collection.create_index([("a", ASCENDING), ("t", ASCENDING)], name="a_t")
            collection.create_index([("k", ASCENDING)], name="k", unique=True)
            collection.create_index(
                [("a", ASCENDING)], name="a_big", partialFilterExpression={"n": {"$gt": 3}}
            )
        yield pair
    finally:
        for collection in pair:
            collection.drop()


def _filter(ids: list[str], owner: str | None) -> dict[str, Any]:
    query: dict[str, Any] = {"_id": {"$in": ids} if len(ids) > 1 else ids[0]}
    if owner is not None:
        query["a"] = owner
    return query


def _outcome(collection: Any, query: dict[str, Any], change: dict[str, Any]) -> Any:
    try:
        result = collection.update_many(query, change)
    except Exception as exc:  # both paths must refuse it alike
        return type(exc).__name__
    return result.matched_count, result.modified_count


def _reads(collection: Any) -> list[Any]:
    return [
        list(collection.find({}).sort("_id", 1)),
        list(collection.find({"a": "x", "t": {"$gte": _T0}}, {"_id": 1}).sort("_id", 1)),
        list(collection.find({"a": "x", "n": {"$gt": 3}}, {"_id": 1}).sort("_id", 1)),
        list(collection.find({"a": "y"}).sort([("t", -1), ("_id", 1)])),
    ]


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(documents=_DOCUMENTS, updates=_UPDATES)
def test_counter_updates_end_as_the_general_path_ends_them(
    server: MongoClient[Any], taken: list[tuple[int, int] | None], documents, updates
) -> None:  # type: ignore[no-untyped-def]
    with _pair(server) as (fast, general):
        for collection in (fast, general):
            collection.insert_many(
                [
                    {"_id": f"d{i}", "k": i, **{f: v for f, v in doc.items() if v != _MISSING}}
                    for i, doc in enumerate(documents)
                ]
            )
        for ids, owner, change in updates:
            query = _filter(ids, owner)
            offered = len(taken)
            expected = _outcome(general, {"$and": [query]}, change)  # never the counters path
            assert len(taken) == offered
            assert _outcome(fast, query, change) == expected, (query, change)
            assert len(taken) == offered + 1  # offered to the counters path
            assert _reads(fast) == _reads(general), (query, change)


def test_access_statistics_of_plain_documents_take_the_counters_path(
    server: MongoClient[Any], taken: list[tuple[int, int] | None]
) -> None:
    with _pair(server) as (fast, _):
        fast.insert_many([{"_id": f"m{i}", "a": "x", "k": i, "n": i} for i in range(20)])
        ids = [f"m{i}" for i in range(0, 20, 2)]
        result = fast.update_many(
            {"_id": {"$in": ids}, "a": "x"}, {"$inc": {"n": 1}, "$max": {"t": _T0}}
        )
        assert (result.matched_count, result.modified_count) == (10, 10)
        assert taken == [(10, 10)]  # one engine step for the ten documents
        assert [d["n"] for d in fast.find({"_id": {"$in": ids}}).sort("k", 1)] == [
            i + 1 for i in range(0, 20, 2)
        ]
        # The index on (a, t) finds them by their new time.
        assert {d["_id"] for d in fast.find({"a": "x", "t": _T0}, {"_id": 1})} == set(ids)


def test_what_the_path_cannot_compute_goes_the_general_way(
    server: MongoClient[Any], taken: list[tuple[int, int] | None]
) -> None:
    with _pair(server) as (fast, _):
        fast.insert_many([{"_id": "s", "k": 1, "n": "three"}, {"_id": "z", "k": 2, "n": 0}])
        with pytest.raises(Exception, match=r"(?i)numeric"):
            fast.update_many({"_id": {"$in": ["s", "z"]}}, {"$inc": {"n": 1}})
        assert taken == [None]  # declined, and the general path refused it
        assert fast.find_one({"_id": "z"})["n"] == 0  # nothing written by either
        # A unique index on a changed field: the general path checks the key.
        with pytest.raises(Exception, match=r"(?i)duplicate"):
            fast.update_many({"_id": "z"}, {"$inc": {"k": -1}})
        assert taken == [None, None]


def test_a_counter_update_inside_a_transaction_goes_the_general_way(
    server: MongoClient[Any], taken: list[tuple[int, int] | None]
) -> None:
    with _pair(server) as (fast, _):
        fast.insert_one({"_id": "m", "k": 1, "n": 1})
        with server.start_session() as session:
            session.start_transaction()
            fast.update_many({"_id": "m"}, {"$inc": {"n": 1}}, session=session)
            session.abort_transaction()
        assert taken == []
        assert fast.find_one({"_id": "m"})["n"] == 1


def test_a_client_that_has_not_signed_in_is_refused(
    server: MongoClient[Any], taken: list[tuple[int, int] | None]
) -> None:
    with _pair(server) as (fast, _):
        host, port = server.address
        anonymous: MongoClient[Any] = MongoClient(host, port, serverSelectionTimeoutMS=5000)
        try:
            fast.insert_one({"_id": "m", "k": 1, "n": 1})
            with pytest.raises(OperationFailure, match="Authentication required"):
                anonymous["db"][fast.name].update_many({"_id": {"$in": ["m"]}}, {"$inc": {"n": 1}})
            assert taken == []
            assert fast.find_one({"_id": "m"})["n"] == 1
        finally:
            anonymous.close()


@pytest.mark.parametrize(
    "statement",
    [
        {"q": {"_id": "a"}, "u": {"$inc": {"n": 1}}, "multi": False},
        {"q": {"_id": "a"}, "u": {"$inc": {"n": 1}}, "multi": True, "upsert": True},
        {"q": {"_id": "a"}, "u": {"$set": {"n": 1}}, "multi": True},
        {"q": {"_id": "a"}, "u": {"$inc": {"n": 0}}, "multi": True},
        {"q": {"_id": "a"}, "u": {"$inc": {"n.x": 1}}, "multi": True},
        {"q": {"_id": "a"}, "u": {"$inc": {"_id": 1}}, "multi": True},
        {"q": {"_id": "a"}, "u": {"$inc": {"n": True}}, "multi": True},
        {"q": {"_id": "a"}, "u": {"$max": {"t": "2026"}}, "multi": True},
        {"q": {"_id": "a"}, "u": {"$inc": {"n": 1}, "$max": {"n": _T0}}, "multi": True},
        {"q": {"_id": {"$in": ["a", 1]}}, "u": {"$inc": {"n": 1}}, "multi": True},
        {"q": {"_id": {"$gt": "a"}}, "u": {"$inc": {"n": 1}}, "multi": True},
        {"q": {"a": "x"}, "u": {"$inc": {"n": 1}}, "multi": True},
        {"q": {"_id": "a", "a": {"$ne": "x"}}, "u": {"$inc": {"n": 1}}, "multi": True},
        {"q": {"_id": "a", "a.b": "x"}, "u": {"$inc": {"n": 1}}, "multi": True},
        {"q": {"_id": "a"}, "u": {"$inc": {"n": 1}}, "multi": True, "arrayFilters": []},
        {"q": {"_id": "a"}, "u": [{"$set": {"n": 1}}], "multi": True},
    ],
)
def test_commands_of_other_shapes_are_not_taken(statement: dict[str, Any]) -> None:
    assert counter_update({"update": "c", "updates": [statement]}) is None


def test_the_shape_it_takes() -> None:
    update = counter_update(
        {
            "update": "memories",
            "ordered": True,
            "updates": [
                {
                    "q": {"_id": {"$in": ["m1", "m2", "m1"]}, "agent_id": "a", "user_id": "u"},
                    "u": {"$inc": {"access_count": 2}, "$max": {"last_accessed": _T0}},
                    "multi": True,
                    "upsert": False,
                }
            ],
        }
    )
    assert update is not None
    assert update.ids == ("m1", "m2")
    assert update.equal == (("agent_id", "a"), ("user_id", "u"))
    assert update.fields == {"access_count", "last_accessed"}
    too_many = {"_id": {"$in": [f"m{i}" for i in range(_engine_counters.MAX_IDS + 1)]}}
    assert (
        counter_update(
            {"update": "c", "updates": [{"q": too_many, "u": {"$inc": {"n": 1}}, "multi": True}]}
        )
        is None
    )
    two = {"q": {"_id": "a"}, "u": {"$inc": {"n": 1}}, "multi": True}
    assert counter_update({"update": "c", "updates": [two, two]}) is None
    assert (
        counter_update({"update": "c", "updates": [two], "bypassDocumentValidation": True}) is None
    )


def test_an_engine_whose_methods_changed_leaves_every_update_to_the_general_path(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from types import SimpleNamespace

    from agent_memory.mongo._mongoeco import _counter_server, engine_class

    engine = engine_class()(str(tmp_path_factory.mktemp("engine") / "e.sqlite3"))
    auth = SimpleNamespace(require_authenticated=lambda *_: None)
    server = SimpleNamespace(_client=SimpleNamespace(_engine=engine), _auth=auth)
    assert _counter_server(server) is not None  # this mongoeco: the path applies

    class Changed(engine_class()):  # type: ignore[misc]
        def _purge_expired_documents_sync(self, conn):  # type: ignore[no-untyped-def, override]
            return 0

    changed = Changed(str(tmp_path_factory.mktemp("changed") / "e.sqlite3"))
    server = SimpleNamespace(_client=SimpleNamespace(_engine=changed), _auth=auth)
    assert _counter_server(server) is None


def test_a_collection_with_a_default_collation_goes_the_general_way(
    server: MongoClient[Any], taken: list[tuple[int, int] | None]
) -> None:
    """String equality follows the collection's collation, which only the general path
    applies (as mongoeco applies it): the counters path leaves such a collection to it."""
    with _pair(server, collation={"locale": "en", "strength": 2}) as (fast, general):
        for collection in (fast, general):
            collection.insert_one({"_id": "m", "a": "Alice", "n": 1})
        query = {"_id": {"$in": ["m"]}, "a": "alice"}
        expected = _outcome(general, {"$and": [query]}, {"$inc": {"n": 1}})
        assert taken == []
        assert _outcome(fast, query, {"$inc": {"n": 1}}) == expected
        assert taken == [None]  # offered, declined
        assert fast.find_one({"_id": "m"}) == general.find_one({"_id": "m"})


def _facts(engine: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    """Ask the engine the facts a read plans from about ``fields`` of ``db.docs``; the cache
    keys of what it now holds, with their values."""
    for field in fields:
        engine._field_is_top_level_array_in_collection("db", "docs", field)
        engine._field_contains_real_numeric_in_collection("db", "docs", field)
        engine._field_has_uniform_scalar_sort_type_in_collection("db", "docs", field)
        engine._field_contains_tagged_value_type_in_collection("db", "docs", field, "datetime")
        for expected in ("number", "string"):
            engine._field_has_comparison_type_mismatch_in_collection("db", "docs", field, expected)
    return {
        key[2]: value
        for key, value in engine._collection_features_cache.items()
        if key[:2] == ("db", "docs")
    }


def _counter_engine(path: Any) -> tuple[Any, Any]:
    from mongoeco import MongoClient as EngineClient

    engine = _mongoeco.engine_class()(str(path))
    return engine, EngineClient(engine=engine)


def _apply_counters(engine: Any, command: dict[str, Any]) -> tuple[int, int] | None:
    from mongoeco.engines._sqlite_write_scope import sqlite_write_scope

    update = counter_update(command)
    assert update is not None
    return _engine_counters.update_counters(engine, "db", update, sqlite_write_scope)


_FACT_FIELDS = ("a", "n", "t", "f", "new", "u")


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(documents=_DOCUMENTS, updates=_UPDATES)
def test_facts_kept_across_counter_updates_are_never_wrong(
    tmp_path_factory: pytest.TempPathFactory, documents, updates
) -> None:  # type: ignore[no-untyped-def]
    """The counters path tells the trigger which fields it changed, and the facts about them
    are read from those values alone: what the cache keeps afterwards is what probing the
    collection afresh finds, or errs towards the engine's general path."""
    engine, client = _counter_engine(tmp_path_factory.mktemp("facts") / "e.sqlite3")
    try:
        client["db"]["docs"].insert_many(
            [
                {"_id": f"d{i}", **{f: v for f, v in doc.items() if v != _MISSING}}
                for i, doc in enumerate(documents)
            ]
        )
        for ids, owner, change in updates:
            with engine._lock:
                _facts(engine, _FACT_FIELDS)
            command = {
                "update": "docs",
                "updates": [{"q": _filter(ids, owner), "u": change, "multi": True}],
            }
            if _apply_counters(engine, command) is None:
                continue  # declined: the general path's writes are another test's
            with engine._lock:
                kept = {k: v for k, v in engine._collection_features_cache.items()}
                engine._collection_features_cache.clear()
                _facts(engine, _FACT_FIELDS)
                fresh = dict(engine._collection_features_cache)
            for key, value in kept.items():
                if key[:2] != ("db", "docs") or key not in fresh or value == fresh[key]:
                    continue
                # A stale fact may only keep the engine on its general path.
                assert value is True or key[2].startswith("uniform_scalar_sort_type"), (
                    change,
                    key,
                    value,
                    fresh[key],
                )
                assert not key[2].startswith("uniform") or fresh[key] is not False
    finally:
        client.close()


def test_a_counter_update_reads_facts_from_the_fields_it_wrote_alone(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trigger reconciles the facts of the changed fields from their new values, keeps
    the facts about the other fields without looking, and never parses the whole document
    (a memory's vector and texts) in the interpreter that serves the application."""
    from agent_memory.mongo import _engine_tuning

    engine, client = _counter_engine(tmp_path_factory.mktemp("partial") / "e.sqlite3")
    try:
        bulky = "x" * 5000
        client["db"]["docs"].insert_many(
            [{"_id": f"m{i}", "a": "x", "n": i, "body": bulky} for i in range(6)]
        )
        with engine._lock:
            before = _facts(engine, ("a", "n", "t", "body"))
        assert before["contains_real_numeric:n"] is False
        assert before["uniform_scalar_sort_type:a"] == "string"
        parsed: list[str] = []
        loads = _engine_tuning.json.loads

        def recorded(text: str, *args: Any, **kwargs: Any) -> Any:
            parsed.append(text)
            return loads(text, *args, **kwargs)

        monkeypatch.setattr(_engine_tuning.json, "loads", recorded)
        command = {
            "update": "docs",
            "updates": [
                {
                    "q": {"_id": {"$in": ["m1", "m2"]}, "a": "x"},
                    "u": {"$inc": {"n": 0.5}, "$max": {"t": _T0}},
                    "multi": True,
                }
            ],
        }
        assert _apply_counters(engine, command) == (2, 2)
        monkeypatch.undo()
        # (the engine's own codec parses through the same module: the small reads of the
        # fields the update reads, and the trigger's two documents of the written fields)
        assert not any(bulky in text for text in parsed)
        assert sum(text.startswith('{"n":') for text in parsed) == 2
        after = {
            key[2]: value
            for key, value in engine._collection_features_cache.items()
            if key[:2] == ("db", "docs")
        }
        # The other fields' facts are kept as they were: nothing to probe again.
        for key, value in before.items():
            if key.split(":")[1] in ("a", "body"):
                assert after[key] == value, key
        # The changed fields' facts follow the new values: a real number at n now, and t
        # (absent before) no longer absent from every document.
        assert after.get("contains_real_numeric:n", True) is True
        assert after.get("contains_tagged_value_type:t:datetime", True) is not False
        with engine._lock:
            engine._collection_features_cache.clear()
            fresh = _facts(engine, ("n",))
        assert fresh["contains_real_numeric:n"] is True
    finally:
        client.close()

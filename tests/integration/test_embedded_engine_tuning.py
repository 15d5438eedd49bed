"""The embedded engine as tuned for load (``agent_memory/mongo/_engine_tuning.py``) answers
every read exactly as mongoeco's own engine does, while reads use indexes, writes keep the
collection facts a read plans from, and every read runs on the engine's one connection."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import sqlite3
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mongoeco", reason="the embedded engine (mongoeco) needs Python 3.13+")

from bson import Decimal128
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mongoeco import AsyncMongoClient, MongoClient
from mongoeco.engines import SQLiteEngine
from mongoeco.errors import DuplicateKeyError
from pymongo import MongoClient as PyMongoClient

from agent_memory.mongo import _engine_tuning
from agent_memory.mongo._engine_tuning import (
    ADJUSTMENTS,
    INLINE_STEPS_PER_COMMAND,
    JOURNAL_SIZE_LIMIT,
    counting_steps,
    sort_shape_anywhere,
    text_anywhere,
)
from agent_memory.mongo._mongoeco import engine_class

pytestmark = pytest.mark.mongoeco

_FIELDS = ("a", "b", "s", "n.x")
_VALUES = st.one_of(
    st.sampled_from(["alpha", "beta", "gamma", "Zürich", "東京", ""]),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False).filter(lambda f: f != int(f)),
    st.booleans(),
    st.none(),
    st.just(Decimal128("1.5")),
    st.just(b"\x00\x01"),
    st.just(datetime.datetime(2026, 1, 2)),
    st.lists(st.sampled_from(["alpha", "beta", 1, 2.5]), max_size=3),
    st.fixed_dictionaries({"x": st.sampled_from(["alpha", 1])}),
)
_DOCUMENT = st.dictionaries(st.sampled_from(("a", "b", "s", "n")), _VALUES, max_size=4)
# The JSON texts of a stored array and object: a string equal to one must not match them.
_QUERY_VALUE = st.sampled_from(
    ["alpha", "beta", "Zürich", 1, 2.5, None, True, '["alpha"]', '{"x":"alpha"}', "[1]"]
)
_OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), _DOCUMENT),
        st.tuples(st.just("set"), st.integers(0, 20), st.sampled_from((*_FIELDS, "k")), _VALUES),
        st.tuples(st.just("unset"), st.integers(0, 20), st.sampled_from(("a", "s"))),
        st.tuples(st.just("delete"), st.integers(0, 20)),
        st.tuples(
            st.just("find"),
            st.dictionaries(st.sampled_from(_FIELDS), _QUERY_VALUE, max_size=2),
            st.sampled_from([None, "s", "a", "n.x"]),
        ),
        st.tuples(st.just("range"), st.sampled_from(("a", "s")), _QUERY_VALUE),
        st.tuples(
            st.just("in"),
            st.sampled_from(("_id", "a", "s", "k", "n.x")),
            st.lists(
                st.sampled_from(["alpha", "beta", "Zürich", "d1", "d3", "x7", '{"x":"alpha"}']),
                max_size=3,
            ),
            st.sampled_from(["find", "update", "delete"]),
        ),
        # A write in a transaction, read back inside it (facts probed on what it wrote), then
        # rolled back.
        st.tuples(
            st.just("abort"),
            st.one_of(
                st.tuples(st.just("insert"), _DOCUMENT),
                st.tuples(st.just("set"), st.integers(0, 20), st.sampled_from(_FIELDS), _VALUES),
                st.tuples(st.just("unset"), st.integers(0, 20), st.sampled_from(("a", "s"))),
                st.tuples(st.just("delete"), st.integers(0, 20)),
            ),
            st.sampled_from(_FIELDS),
        ),
    ),
    min_size=5,
    max_size=30,
)


def _collections(tmp_path: Path, tag: str):  # type: ignore[no-untyped-def]
    stock = MongoClient(engine=SQLiteEngine(str(tmp_path / f"stock-{tag}.sqlite3")))
    tuned = MongoClient(engine=engine_class()(str(tmp_path / f"tuned-{tag}.sqlite3")))
    for client in (stock, tuned):
        docs = client["db"]["docs"]
        docs.create_index([("a", 1), ("b", 1)], name="a_b")
        docs.create_index([("s", 1)], name="s")
        docs.create_index([("k", 1), ("b", 1)], name="k_b", unique=True)
    return stock, tuned


def _apply(client: Any, operation: tuple[Any, ...], session: Any = None) -> Any:
    docs, kind = client["db"]["docs"], operation[0]
    if kind == "insert":
        return docs.insert_one(dict(operation[1]), session=session).acknowledged
    if kind in ("set", "unset", "delete"):
        ids = sorted(d["_id"] for d in docs.find({}, {"_id": 1}, session=session))
        if not ids:
            return None
        target = {"_id": ids[operation[1] % len(ids)]}
        if kind == "set":
            change = {"$set": {operation[2]: operation[3]}}
            return docs.update_one(target, change, session=session).modified_count
        if kind == "unset":
            change = {"$unset": {operation[2]: ""}}
            return docs.update_one(target, change, session=session).modified_count
        return docs.delete_one(target, session=session).deleted_count
    if kind == "abort":
        with client.start_session() as session:
            session.start_transaction()
            with contextlib.suppress(Exception):  # a refused write is rolled back all the same
                _apply(client, operation[1], session)
            field = operation[2]
            docs.find_one({field: "alpha"}, session=session)
            docs.find_one({field: {"$gte": 1}}, session=session)
            list(docs.find({}, session=session).sort(field, 1))
            session.abort_transaction()
        return sorted(repr(d) for d in docs.find({}))
    if kind == "find":
        cursor = docs.find(operation[1], {"_id": 0})
        if operation[2]:
            cursor = cursor.sort([(operation[2], 1), ("_id", 1)])
        found = list(cursor)
        return found if operation[2] else sorted(map(repr, found))
    if kind == "in":  # string memberships (and ids), which the tuned engine states for SQL
        query = {operation[1]: {"$in": operation[2]}}
        if operation[3] == "update":
            return docs.update_many(query, {"$set": {"u": 1}}).modified_count
        if operation[3] == "delete":
            return docs.delete_many(query).deleted_count
        return sorted(repr(d) for d in docs.find(query))
    field, value = operation[1], operation[2]
    return sorted(repr(d) for d in docs.find({field: {"$gte": value}}, {"_id": 0}))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(seed=_DOCUMENT, operations=_OPERATIONS)
def test_every_read_answers_as_the_stock_engine(tmp_path: Path, seed, operations) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex  # hypothesis replays examples in the same tmp_path
    stock, tuned = _collections(tmp_path, tag)
    try:
        # ids the same in both, so updates and deletes pick the same one
        seeded = [("insert", {"_id": f"d{i}", **seed, "k": i}) for i in range(8)]
        decimals = False
        for step, operation in enumerate([*seeded, *operations]):
            if operation[0] == "insert" and "_id" not in operation[1]:
                operation = ("insert", {"_id": f"x{step}", **operation[1]})
            decimals = decimals or "Decimal128" in repr(operation)
            if decimals and operation[0] == "range" and not isinstance(operation[2], str):
                # Once a Decimal128 was stored, the stock engine's numeric ranges match
                # strings too (docs/upstream/mongoeco-decimal-range.md): the tuned engine,
                # which keeps "a decimal is here" after it is overwritten, meets that defect
                # where the stock engine, probing again, does not.
                continue
            try:
                expected = _apply(stock, operation)
            except sqlite3.OperationalError as exc:
                if "syntax error" not in str(exc):
                    raise
                # The stock engine wrote SQL that SQLite cannot parse (seen on an insert
                # after a few writes of mixed types, a path the tuned engine replaces): its
                # defect, not a refusal. The tuned engine may answer, after which the two
                # hold different data and the example ends here.
                with contextlib.suppress(sqlite3.OperationalError):
                    _apply(tuned, operation)
                return
            except Exception as exc:  # the stock engine refuses it: so must the tuned one
                with pytest.raises(type(exc)):
                    _apply(tuned, operation)
                continue
            assert _apply(tuned, operation) == expected, operation
    finally:
        stock.close()
        tuned.close()


def _probe(engine: Any, names: list[str]) -> dict[Any, Any]:
    """Ask the engine every fact a read could ask about the fields in ``names``."""
    probes = {
        "top_level_array": engine._field_is_top_level_array_in_collection,
        "real": engine._field_contains_real_numeric_in_collection,
        "non_ascii": engine._field_contains_non_ascii_text_in_collection,
        "traverses": engine._field_traverses_array_in_collection,
    }
    facts: dict[Any, Any] = {}
    for field in names:
        for label, probe in probes.items():
            facts[(label, field)] = probe("db", "docs", field)
        facts[("uniform", field)] = engine._field_has_uniform_scalar_sort_type_in_collection(
            "db", "docs", field
        )
        for expected in ("number", "string", "bool"):
            facts[("mismatch", field, expected)] = (
                engine._field_has_comparison_type_mismatch_in_collection(
                    "db", "docs", field, expected
                )
            )
        facts[("sort_shape", field)] = sort_shape_anywhere(engine, "db", "docs", field)
        if "." not in field:
            facts[("text_at", field)] = text_anywhere(engine, "db", "docs", field)
        for tag in ("decimal", "bytes", "datetime"):
            facts[("tagged", field, tag)] = engine._field_contains_tagged_value_type_in_collection(
                "db", "docs", field, tag
            )
    return facts


def _safe(kept: Any, fresh: Any, key: tuple[Any, ...], empty: bool) -> bool:
    """A kept fact may be stale only towards the engine's general path."""
    if kept == fresh:
        return True
    if key[0] == "uniform":
        # "not one type" is the general path; "one type" holds for no document at all
        return kept is None or empty
    return kept is True


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(first=st.lists(_DOCUMENT, min_size=1, max_size=5), then=_OPERATIONS)
def test_facts_kept_across_writes_are_never_wrong(tmp_path: Path, first, then) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex
    engine = engine_class()(str(tmp_path / f"facts-{tag}.sqlite3"))
    client = MongoClient(engine=engine)
    try:
        docs = client["db"]["docs"]
        for i, document in enumerate(first):
            docs.insert_one({"_id": f"d{i}", **document})
        names = ["a", "b", "s", "n.x", "n"]
        with engine._lock:
            _probe(engine, names)
        for step, operation in enumerate(then):
            if operation[0] == "insert":
                operation = ("insert", {"_id": f"x{step}", **operation[1]})
            try:
                _apply(client, operation)
            except Exception:
                continue
            with engine._lock:
                kept = _probe(engine, names)
                engine._collection_features_cache.clear()
                fresh = _probe(engine, names)
            empty = docs.count_documents({}) == 0
            unsafe = {
                k: (kept[k], fresh[k]) for k in kept if not _safe(kept[k], fresh[k], k, empty)
            }
            assert not unsafe, (operation, unsafe)
    finally:
        client.close()


def test_a_write_keeps_the_facts_it_cannot_change(tmp_path: Path) -> None:
    engine = engine_class()(str(tmp_path / "keep.sqlite3"))
    client = MongoClient(engine=engine)
    try:
        docs = client["db"]["docs"]
        docs.insert_many([{"_id": f"d{i}", "a": "alpha", "s": i} for i in range(20)])
        with engine._lock:
            engine._collection_features_cache.clear()
            _probe(engine, ["a", "s"])
        cached = dict(engine._collection_features_cache)
        assert cached
        docs.insert_one({"_id": "new", "a": "beta", "s": 99})
        assert engine._collection_features_cache == cached  # nothing probed again
        docs.insert_one({"_id": "list", "a": ["alpha"], "s": 1.5})
        cache = engine._collection_features_cache
        assert cache[("db", "docs", "top_level_array:a")] is True
        assert cache[("db", "docs", "contains_real_numeric:s")] is True
        assert ("db", "docs", "uniform_scalar_sort_type:a") not in cache
    finally:
        client.close()


def test_a_removal_and_a_refused_write_keep_the_facts(tmp_path: Path) -> None:
    """Neither a delete nor a write the engine rolls back (a duplicate key) sends the next
    read to probe the collection again: on a large collection each probe is a scan, and the
    server answers nobody meanwhile."""
    engine = engine_class()(str(tmp_path / "kept.sqlite3"))
    client = MongoClient(engine=engine)
    try:
        docs = client["db"]["docs"]
        docs.create_index([("k", 1)], name="k", unique=True)
        docs.insert_many(
            [{"_id": f"d{i}", "a": "alpha", "s": f"{i:03d}", "k": i} for i in range(20)]
        )
        with engine._lock:
            engine._collection_features_cache.clear()
            _probe(engine, ["a", "s"])
        cached = dict(engine._collection_features_cache)
        assert cached[("db", "docs", "uniform_scalar_sort_type:s")] == "string"
        docs.delete_one({"_id": "d3"})
        assert engine._collection_features_cache == cached
        with pytest.raises(DuplicateKeyError):
            docs.insert_one({"_id": "d4"})
        with pytest.raises(DuplicateKeyError):
            docs.insert_one({"_id": "other", "k": 5})
        assert engine._collection_features_cache == cached
        assert [d["_id"] for d in docs.find({"a": "alpha"}).sort("s", -1).limit(2)] == [
            "d19",
            "d18",
        ]
        docs.delete_many({})  # "one type" of no document at all: an ordered read of nothing
        assert list(docs.find({}).sort("s", 1)) == []
        docs.insert_one({"_id": "n", "s": 7, "k": 1})
        docs.insert_one({"_id": "t", "s": "7", "k": 2})
        assert [d["_id"] for d in docs.find({}).sort("s", 1)] == ["n", "t"]  # numbers first
    finally:
        client.close()


def test_a_rolled_back_transaction_leaves_no_fact_it_probed(tmp_path: Path) -> None:
    """Inside a transaction the engine probes what the transaction wrote: here, that no
    document holds an array at ``a`` any more. The rollback brings the array back, and the
    fact with it must go, or a read for one of its elements finds nothing."""
    engine = engine_class()(str(tmp_path / "rollback.sqlite3"))
    client = MongoClient(engine=engine)
    try:
        docs = client["db"]["docs"]
        docs.insert_many([{"_id": "x", "a": ["alpha", "beta"]}, {"_id": "y", "a": "gamma"}])
        with engine._lock:
            engine._collection_features_cache.clear()
        with client.start_session() as session:
            session.start_transaction()
            docs.update_one({"_id": "x"}, {"$set": {"a": "plain"}}, session=session)
            assert docs.find_one({"a": "beta"}, session=session) is None
            assert engine._collection_features_cache[("db", "docs", "top_level_array:a")] is False
            session.abort_transaction()
        assert ("db", "docs", "top_level_array:a") not in engine._collection_features_cache
        assert [d["_id"] for d in docs.find({"a": "beta"})] == ["x"]
    finally:
        client.close()


@pytest.mark.parametrize("tuned", [True, False], ids=["tuned", "stock-check"])
def test_a_sorted_read_does_not_check_every_match_for_arrays(tmp_path: Path, tuned: bool) -> None:
    """Whether a sort needs Python is decided from a fact about the collection, not by
    reading every document the filter matches at each sorted read; a write that makes the
    fact true brings the full check back. (``stock-check``: every other adjustment, so the
    reads run on the traced connection, with the engine's own check.)"""
    cls = engine_class()
    if not tuned:
        cls = type(
            "StockCheck", (cls,), {"_sort_requires_python": SQLiteEngine._sort_requires_python}
        )
    engine = cls(str(tmp_path / "sorted.sqlite3"))
    client = MongoClient(engine=engine)
    try:
        docs = client["db"]["docs"]
        docs.create_index([("a", 1), ("s", 1)], name="a_s")
        docs.insert_many([{"_id": f"d{i}", "a": "alpha", "s": i} for i in range(50)])
        sorted_read = lambda: list(docs.find({"a": "alpha"}).sort("s", -1).limit(3))  # noqa: E731
        sorted_read()  # the collection's facts are probed once
        statements: list[str] = []
        engine._require_connection().set_trace_callback(statements.append)
        assert [d["s"] for d in sorted_read()] == [49, 48, 47]
        per_read = [sql for sql in statements if "= 'array'" in sql]
        assert not per_read if tuned else per_read

        docs.insert_one({"_id": "listed", "a": "alpha", "s": [100, -1]})
        statements.clear()
        assert sorted_read()[0]["_id"] == "listed"  # arrays sort by their max
        assert [sql for sql in statements if "= 'array'" in sql]
    finally:
        client.close()


def _plans(path: Path, statements: list[str]) -> list[str]:
    connection = sqlite3.connect(path)
    try:
        return [
            " ".join(str(row[-1]) for row in connection.execute("EXPLAIN QUERY PLAN " + sql))
            for sql in statements
        ]
    finally:
        connection.close()


def test_string_equality_reads_through_the_compound_index(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    engine = engine_class()(str(path))
    client = MongoClient(engine=engine)
    statements: list[str] = []
    try:
        docs = client["db"]["docs"]
        docs.create_index([("agent_id", 1), ("user_id", 1), ("seq", 1)], name="tenant_seq")
        docs.insert_many([{"agent_id": "a", "user_id": f"u{i % 40}", "seq": i} for i in range(400)])
        connection = engine._connection
        connection.set_trace_callback(statements.append)
        found = list(docs.find({"agent_id": "a", "user_id": "u3"}).sort("seq", -1).limit(5))
        connection.set_trace_callback(None)
    finally:
        client.close()
    assert [d["seq"] for d in found] == [363, 323, 283, 243, 203]
    reads = [s for s in statements if s.lstrip().startswith("SELECT") and "documents" in s]
    plans = _plans(path, [s for s in reads if "?" not in s])
    assert plans and all("sqlite_autoindex_documents_1" not in p for p in plans), plans
    assert any("<expr>=? AND <expr>=? AND <expr>=? AND <expr>=?" in p for p in plans), plans


def _index_sql(path: Path) -> dict[str, str]:
    """Each expression index on ``documents``: its SQL, by the collection it serves."""
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute(
            "SELECT i.coll_name || '.' || i.name, s.sql FROM indexes AS i JOIN sqlite_schema "
            "AS s ON s.name = i.physical_name AND s.tbl_name = 'documents'"
        ).fetchall()
    finally:
        connection.close()
    return dict(rows)


def _bound_plan(path: Path, coll_name: str, value: str) -> str:
    """The plan of a read as the engine sends it: the namespace as bound values."""
    connection = sqlite3.connect(path)
    try:
        (type_sql, value_sql) = _expressions("a")
        sql = (
            "EXPLAIN QUERY PLAN SELECT document FROM documents WHERE db_name = ? AND "
            f"coll_name = ? AND {type_sql} = '' AND {value_sql} = ?"
        )
        rows = connection.execute(sql, ("db", coll_name, value)).fetchall()
        return " ".join(str(row[-1]) for row in rows)
    finally:
        connection.close()


def _expressions(field: str) -> tuple[str, str]:
    from mongoeco.engines.sqlite_query import index_expressions_sql

    return index_expressions_sql(field)


@pytest.mark.parametrize("tuned", [True, False], ids=["tuned", "stock"])
def test_each_index_holds_only_its_own_collection(tmp_path: Path, tuned: bool) -> None:
    """Every collection's documents were entries in every collection's indexes (each write
    computed them all); an index now holds its own collection's documents only, reads still
    go through it with the namespace bound, and a renamed collection's indexes follow it."""
    path = tmp_path / "narrow.sqlite3"
    client = MongoClient(engine=(engine_class() if tuned else SQLiteEngine)(str(path)))
    try:
        db = client["db"]
        for name in ("one", "two"):
            db[name].create_index([("a", 1)], name="a")
            db[name].insert_many([{"a": f"{name}{i % 5}", "i": i} for i in range(40)])
        sql = _index_sql(path)
        narrowed = {key: text.endswith(f"WHERE db_name = 'db' AND coll_name = '{key[:3]}'")
                    for key, text in sql.items()}  # fmt: skip
        assert narrowed == {"one.a": tuned, "two.a": tuned}
        plan = _bound_plan(path, "one", "one3")
        assert "USING INDEX" in plan and "<expr>=?" in plan, plan
        assert len(list(db["one"].find({"a": "one3"}))) == 8
        hinted = list(db["one"].find({"a": "one3"}).hint("a"))
        assert sorted(d["i"] for d in hinted) == [3, 8, 13, 18, 23, 28, 33, 38]

        db["one"].rename("three")
        sql = _index_sql(path)
        assert sql["three.a"].endswith("WHERE db_name = 'db' AND coll_name = 'three'") is tuned
        assert "USING INDEX" in _bound_plan(path, "three", "one3")
        assert len(list(db["three"].find({"a": "one3"}).hint("a"))) == 8
    finally:
        client.close()


def test_a_file_written_before_has_its_indexes_narrowed_at_start(tmp_path: Path) -> None:
    path = tmp_path / "before.sqlite3"
    stock = MongoClient(engine=SQLiteEngine(str(path)))
    stock["db"]["one"].create_index([("a", 1), ("b", 1)], name="a_b")
    stock["db"]["one"].insert_many([{"a": "x", "b": i % 3} for i in range(30)])
    stock["db"]["two"].insert_many([{"a": "x", "b": 1} for _ in range(5)])
    expected = list(stock["db"]["one"].find({"a": "x", "b": 1}, {"_id": 0}).sort("b", 1))
    stock.close()
    assert not _index_sql(path)["one.a_b"].endswith("'one'")

    tuned = MongoClient(engine=engine_class()(str(path)))
    try:
        found = list(tuned["db"]["one"].find({"a": "x", "b": 1}, {"_id": 0}).sort("b", 1))
    finally:
        tuned.close()
    assert found == expected and len(found) == 10
    assert _index_sql(path)["one.a_b"].endswith("WHERE db_name = 'db' AND coll_name = 'one'")
    connection = sqlite3.connect(path)
    try:
        guard = "SELECT sql FROM sqlite_schema WHERE name = ?"
        (sql,) = connection.execute(guard, (_engine_tuning.PLAN_GUARD,)).fetchone()
    finally:
        connection.close()
    assert sql.endswith("WHERE db_name = ''")  # before any statement of the tuned engine


def _unattributed(client: Any, name: str, gone: int) -> tuple[Any, ...]:
    """What the engine answers for one filter on ``name``: its count, its documents by find
    and by aggregate, the documents an update of it reaches, and a delete of it and ``n``
    equal to ``gone``."""
    coll, legacy = client["db"][name], {"agent_id": {"$exists": False}}
    return (
        coll.count_documents(legacy),
        sorted(d["n"] for d in coll.find(legacy)),
        sorted(d["n"] for d in coll.aggregate([{"$match": legacy}])),
        coll.update_many(legacy, {"$inc": {"seen": 1}}).modified_count,
        coll.delete_many({**legacy, "n": gone}).deleted_count,
    )


def test_one_filter_on_two_collections_answers_for_each(tmp_path: Path) -> None:
    """A statement the engine's connection prepared before any partial index existed (the
    first reads of a new file), re-planned after an index was made partial on one
    collection, kept that collection's index for every namespace bound afterwards: the same
    filter on another collection found nothing (SQLite re-plans for new bound values only a
    statement prepared while some partial index could use them). The LangGraph thread
    migration's sequence: a read of each collection, then its indexes, then both again."""
    names = ("lg_checkpoints", "lg_checkpoint_writes")
    answers = []
    for kind in (SQLiteEngine, engine_class()):
        client = MongoClient(engine=kind(str(tmp_path / f"{len(answers)}.sqlite3")))
        try:
            steps = []
            for name in names:
                client["db"][name].insert_many([{"thread_id": "t", "n": n} for n in range(4)])
                steps.append(_unattributed(client, name, 0))
                client["db"][name].create_index([("agent_id", 1), ("thread_id", 1)], name="a_t")
            for gone, order in enumerate((names, names[::-1]), start=1):
                steps.extend(_unattributed(client, name, gone) for name in order)
            answers.append(steps)
        finally:
            client.close()
    stock, tuned = answers
    assert stock[2] == stock[3] == (3, [1, 2, 3], [1, 2, 3], 3, 1)
    assert tuned == stock


def test_reads_use_the_engine_connection_and_the_log_is_capped(tmp_path: Path) -> None:
    engine = engine_class()(str(tmp_path / "one.sqlite3"))
    client = MongoClient(engine=engine)
    try:
        docs = client["db"]["docs"]
        docs.insert_many([{"n": i} for i in range(300)])
        opened: list[Any] = []
        create = type(engine)._create_sqlite_connection

        def counted(self):  # type: ignore[no-untyped-def]
            opened.append(1)
            return create(self)

        type(engine)._create_sqlite_connection = counted  # type: ignore[method-assign]
        try:
            assert len(list(docs.find({"n": {"$gte": 10}}))) == 290
            assert docs.count_documents({"n": {"$lt": 5}}) == 5
        finally:
            type(engine)._create_sqlite_connection = create  # type: ignore[method-assign]
        assert opened == []  # stock mongoeco opens a connection, and a snapshot, per read
        limit = engine._connection.execute("PRAGMA journal_size_limit").fetchone()[0]
        assert limit == JOURNAL_SIZE_LIMIT
    finally:
        client.close()


def _decodes(engine: Any) -> list[int]:
    counted = [0]
    decode = type(engine)._deserialize_document

    def counting(self, payload):  # type: ignore[no-untyped-def]
        counted[0] += 1
        return decode(self, payload)

    type(engine)._deserialize_document = counting  # type: ignore[method-assign]
    return counted


@pytest.mark.parametrize("tuned", [True, False], ids=["tuned", "stock"])
def test_compound_unique_keys_are_checked_through_the_index(tmp_path: Path, tuned: bool) -> None:
    engine = (engine_class() if tuned else SQLiteEngine)(str(tmp_path / "unique.sqlite3"))
    client = MongoClient(engine=engine)
    decode = type(engine)._deserialize_document
    try:
        docs = client["db"]["docs"]
        docs.create_index([("agent_id", 1), ("user_id", 1)], unique=True, name="tenant")
        jobs = client["db"]["jobs"]
        jobs.create_index(
            [("agent_id", 1), ("user_id", 1)],
            unique=True,
            name="open",
            partial_filter_expression={"status": "pending"},
        )
        docs.insert_many([{"agent_id": "a", "user_id": f"u{i}", "n": i} for i in range(300)])
        jobs.insert_one({"agent_id": "a", "user_id": "u1", "status": "done"})
        docs.insert_one({"agent_id": "a", "user_id": 7})  # not a string: the engine's own way
        with pytest.raises(DuplicateKeyError):
            docs.insert_one({"agent_id": "a", "user_id": 7})
        decoded = _decodes(engine)
        with pytest.raises(DuplicateKeyError):
            docs.insert_one({"agent_id": "a", "user_id": "u7"})
        with pytest.raises(DuplicateKeyError):
            docs.update_one({"user_id": "u8"}, {"$set": {"user_id": "u9"}})
        docs.update_one({"user_id": "u8"}, {"$set": {"n": -8}})  # its own key is no conflict
        docs.insert_one({"agent_id": "a", "user_id": "new"})
        docs.insert_one({"agent_id": "b", "user_id": "u7"})
        jobs.insert_one({"agent_id": "a", "user_id": "u1", "status": "pending"})  # partial
        with pytest.raises(DuplicateKeyError):
            jobs.insert_one({"agent_id": "a", "user_id": "u1", "status": "pending"})
        assert docs.count_documents({}) == 303
        assert docs.find_one({"user_id": "u8"})["n"] == -8
        if tuned:
            assert decoded[0] < 50, decoded  # stock decodes the collection per write
        else:
            assert decoded[0] > 1000, decoded
    finally:
        type(engine)._deserialize_document = decode  # type: ignore[method-assign]
        client.close()


def _undelivered(path: Path) -> int:
    """Changes in the engine's outbox that a registered consumer has not been given."""
    connection = sqlite3.connect(path)
    try:
        (count,) = connection.execute(
            "SELECT COUNT(*) FROM change_outbox WHERE sequence > "
            "(SELECT MIN(checkpoint) FROM change_outbox_consumers)"
        ).fetchone()
        return int(count)
    finally:
        connection.close()


def _outbox_rows(path: Path) -> int:
    """Writes the engine recorded in its change outbox (delivered ones included)."""
    connection = sqlite3.connect(path)
    try:
        (count,) = connection.execute("SELECT COUNT(*) FROM change_outbox_identities").fetchone()
        return int(count)
    finally:
        connection.close()


@pytest.mark.parametrize("tuned", [True, False], ids=["tuned", "stock"])
def test_the_tuned_engine_keeps_no_change_outbox(tmp_path: Path, tuned: bool) -> None:
    """The tuned engine's writes record nothing in the change outbox and start no delivery;
    the stock engine records every write and has delivered it all by the time it closes.
    Change streams in the same process still see every write (the client tells them)."""
    path = tmp_path / "changes.sqlite3"
    engine = (engine_class() if tuned else SQLiteEngine)(str(path))
    client = MongoClient(engine=engine)
    docs = client["db"]["docs"]
    stream = docs.watch()
    for i in range(40):
        docs.insert_one({"_id": f"d{i}", "n": i})
        docs.update_one({"_id": f"d{i}"}, {"$set": {"m": i}})
    docs.delete_one({"_id": "d0"})
    seen = [stream.next()["operationType"] for _ in range(81)]
    stream.close()
    assert seen == ["insert", "update"] * 40 + ["delete"]
    assert (_outbox_rows(path) == 0) is tuned
    assert "_agent_memory_dispatcher" not in engine.__dict__
    client.close()
    assert _undelivered(path) == 0


def test_every_adjustment_applies_to_this_mongoeco() -> None:
    """A mongoeco release that changes a method one of them relies on leaves that method
    as it was (and logs it); this test makes such a release visible here first."""
    adjusted = set(engine_class().__dict__)
    assert set(ADJUSTMENTS) <= adjusted, set(ADJUSTMENTS) - adjusted


def _record_threads(engine: Any, name: str, threads: list[int]) -> None:
    """Make ``engine``'s step ``name`` note the thread it runs on (keeping its name, by
    which the engine's runner tells short steps from long ones)."""
    step = getattr(engine, name)

    def noted(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return step(*args, **kwargs)

    noted.__name__ = name
    setattr(engine, name, noted)


def test_short_steps_run_on_the_loop_and_long_ones_in_the_pool(tmp_path: Path) -> None:
    engine = engine_class()(str(tmp_path / "inline.sqlite3"))
    inserts: list[int] = []
    builds: list[int] = []
    _record_threads(engine, "_insert_document_sync", inserts)
    _record_threads(engine, "_create_index_sync", builds)

    async def main() -> int:
        async with AsyncMongoClient(engine=engine) as client:
            docs = client["db"]["docs"]
            await docs.create_index([("n", 1)], name="n")
            for i in range(3):
                await docs.insert_one({"n": i})
            assert [d["n"] async for d in docs.find({"n": {"$gte": 1}}).sort("n", 1)] == [1, 2]
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert inserts == [loop_thread] * 3  # no hop to a thread and back
    assert builds and loop_thread not in builds  # an index build never holds the loop


def test_a_short_step_goes_to_the_pool_while_another_thread_holds_the_engine(
    tmp_path: Path,
) -> None:
    """The loop waits for the engine's lock only briefly: while another thread holds it
    (here until the loop itself lets go of it), the step runs in the pool and the loop goes
    on serving."""
    engine = engine_class()(str(tmp_path / "held.sqlite3"))
    inserts: list[int] = []
    _record_threads(engine, "_insert_document_sync", inserts)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with engine._lock:
            held.set()
            release.wait(timeout=20)  # if the loop were stuck, the step would run inline

    async def main() -> int:
        async with AsyncMongoClient(engine=engine) as client:
            docs = client["db"]["docs"]
            await docs.insert_one({"n": 0})
            inserts.clear()
            holder = threading.Thread(target=hold)
            holder.start()
            await asyncio.to_thread(held.wait)
            insert = asyncio.create_task(docs.insert_one({"n": 1}))
            await asyncio.sleep(0.2)  # the loop serves meanwhile
            assert not insert.done()  # the step waits for the engine, in the pool
            release.set()
            await insert
            await asyncio.to_thread(holder.join)
            assert await docs.count_documents({}) == 2
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert len(inserts) == 1 and inserts[0] != loop_thread


def test_a_command_past_its_first_steps_runs_the_rest_in_the_pool(tmp_path: Path) -> None:
    """A served command (the wire server's guard counts its steps) runs its first steps on
    the loop; an update of many documents writes the rest from the pool, so that a read
    beside it is not served one step per document of it."""
    engine = engine_class()(str(tmp_path / "many.sqlite3"))
    updates: list[int] = []
    _record_threads(engine, "_update_with_operation_sync", updates)

    async def main() -> tuple[int, list[int], list[int]]:
        async with AsyncMongoClient(engine=engine) as client:
            docs = client["db"]["docs"]
            await docs.insert_many([{"n": i} for i in range(12)])
            updates.clear()
            with counting_steps():
                assert (await docs.update_many({}, {"$inc": {"n": 1}})).modified_count == 12
            many = list(updates)
            updates.clear()
            with counting_steps():
                await docs.update_one({"n": 1}, {"$inc": {"n": 1}})
            assert await docs.count_documents({"n": {"$gte": 1}}) == 12
            return threading.get_ident(), many, list(updates)

    loop_thread, many, single = asyncio.run(main())
    assert len(many) == 12 and many[0] == loop_thread
    assert all(thread != loop_thread for thread in many[INLINE_STEPS_PER_COMMAND:])
    assert single == [loop_thread]


def test_the_server_counts_the_steps_of_each_command_it_serves(
    own_embedded_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted: list[int] = []
    counting = _engine_tuning.counting_steps

    @contextlib.contextmanager
    def noted() -> Any:
        with counting() as steps:
            yield steps
            counted.append(steps.count)

    monkeypatch.setattr(_engine_tuning, "counting_steps", noted)
    with PyMongoClient(own_embedded_server.uri) as client:
        notes = client["db"]["notes"]
        notes.insert_many([{"n": i} for i in range(10)])
        counted.clear()
        notes.update_many({}, {"$inc": {"n": 1}})
    assert counted and max(counted) > INLINE_STEPS_PER_COMMAND  # one step per document


def test_an_operation_of_many_steps_lets_the_loop_serve_between_them(tmp_path: Path) -> None:
    """A delete_many deletes document by document; run on the loop without a pause between
    steps it would hold every other client (and its heartbeat) until the last one."""
    engine = engine_class()(str(tmp_path / "steps.sqlite3"))

    async def main() -> int:
        async with AsyncMongoClient(engine=engine) as client:
            docs = client["db"]["docs"]
            await docs.insert_many([{"n": i} for i in range(200)])
            done, turns = asyncio.Event(), [0]

            async def other_client() -> None:
                while not done.is_set():
                    turns[0] += 1
                    await asyncio.sleep(0)

            other = asyncio.create_task(other_client())
            await asyncio.sleep(0)
            before = turns[0]
            assert (await docs.delete_many({})).deleted_count == 200
            done.set()
            await other
            return turns[0] - before

    assert asyncio.run(main()) >= 200  # a turn for the other client at every step at least


def _plan(engine: Any, db: str, coll: str, query: dict[str, Any]) -> str:
    """How SQLite would run the tuned engine's translation of ``query`` (its query plan)."""
    from mongoeco.core.query_plan import compile_filter

    sql, params = engine._translate_query_plan_with_multikey(db, coll, compile_filter(query))
    where = f"SELECT document FROM documents WHERE db_name = ? AND coll_name = ? AND {sql}"
    rows = engine._require_connection().execute(f"EXPLAIN QUERY PLAN {where}", [db, coll, *params])
    return " | ".join(row[3] for row in rows)


def test_string_memberships_and_ids_are_served_by_an_index(tmp_path: Path) -> None:
    """``_id`` equalities and ``$in`` go through the primary key; a ``$in`` of strings
    through the field's index while no document holds an array there, and with the engine's
    array-aware translation (the same answers as the stock engine) once one does."""
    engine = engine_class()(str(tmp_path / "in.sqlite3"))
    client = MongoClient(engine=engine)
    try:
        docs = client["db"]["docs"]
        docs.create_index([("a", 1)], name="a")
        docs.insert_many([{"_id": f"x{i}", "a": f"v{i % 3}"} for i in range(30)])
        assert sorted(d["_id"] for d in docs.find({"_id": {"$in": ["x1", "x7", "nope"]}})) == [
            "x1",
            "x7",
        ]
        assert docs.count_documents({"a": {"$in": ["v1", "v2"]}}) == 20
        with engine._lock:
            by_id = _plan(engine, "db", "docs", {"_id": {"$in": ["x1", "x7"]}})
            one_id = _plan(engine, "db", "docs", {"_id": "x1"})
            by_field = _plan(engine, "db", "docs", {"a": {"$in": ["v1", "v2"]}})
        assert "storage_key=?" in by_id and "storage_key=?" in one_id, (by_id, one_id)
        assert "USING INDEX" in by_field and "<expr>=?" in by_field, by_field
        # By id within a tenant's documents: the primary key serves it whatever the order of
        # the filter's keys, not the tenant's index (which names every document of the
        # tenant); the other conditions still decide.
        docs.create_index([("t", 1), ("u", 1)], name="tenant")
        docs.update_many({}, {"$set": {"t": "agent", "u": "user"}})
        docs.update_one({"_id": "x2"}, {"$set": {"u": "other"}})
        for query in (
            {"t": "agent", "u": "user", "_id": {"$in": ["x1", "x2", "x4", "nope"]}},
            {"_id": {"$in": ["x1", "x2", "x4", "nope"]}, "t": "agent", "u": "user"},
        ):
            assert sorted(d["_id"] for d in docs.find(query)) == ["x1", "x4"]
            with engine._lock:
                plan = _plan(engine, "db", "docs", query)
            assert "storage_key=?" in plan and "<expr>" not in plan.split("|")[0], plan
        assert [d["_id"] for d in docs.find({"t": "agent", "u": "user", "_id": "x2"})] == []
        assert docs.count_documents({"u": {"$ne": "user"}, "_id": {"$in": ["x1", "x2"]}}) == 1
        with engine._lock:
            plan = _plan(engine, "db", "docs", {"t": "agent", "u": "user", "_id": "x1"})
        assert "storage_key=?" in plan and "<expr>" not in plan.split("|")[0], plan
        docs.insert_one({"_id": "arr", "a": ["v1", "w"]})  # now an array at "a"
        assert sorted(d["_id"] for d in docs.find({"a": {"$in": ["w"]}})) == ["arr"]
        assert docs.count_documents({"a": {"$in": ["v1"]}}) == 11
        assert (
            docs.update_many({"_id": {"$in": ["arr", "x2"]}}, {"$set": {"u": 1}}).modified_count
            == 2
        )
    finally:
        client.close()


def test_a_string_that_is_the_json_of_a_stored_value_matches_only_that_string(
    tmp_path: Path,
) -> None:
    """A string equality answered by the index's expressions alone (so that a count reads no
    document) must not match an object or array whose JSON text is that string."""
    engine = engine_class()(str(tmp_path / "json.sqlite3"))
    client = MongoClient(engine=engine)
    try:
        docs = client["db"]["docs"]
        docs.create_index([("a", 1), ("b", 1)], name="a_b")
        docs.insert_many(
            [
                {"_id": "object", "a": {"x": "alpha"}, "b": 1},
                {"_id": "text", "a": '{"x":"alpha"}', "b": 1},
                {"_id": "plain", "a": "alpha", "b": 1},
            ]
        )
        for query, expected in (
            ({"a": '{"x":"alpha"}'}, ["text"]),
            ({"a": {"$in": ['{"x":"alpha"}', "alpha"]}}, ["plain", "text"]),
            ({"a": "alpha"}, ["plain"]),
        ):
            assert sorted(d["_id"] for d in docs.find(query)) == expected, query
            assert docs.count_documents(query) == len(expected), query
        # A plain string is the index's expressions alone (SQLite reads no document for a
        # count); one that could be an object's JSON keeps the engine's condition.
        from mongoeco.core.query_plan import compile_filter

        with engine._lock:
            plain, _ = engine._translate_query_plan_with_multikey(
                "db", "docs", compile_filter({"a": "alpha"})
            )
            braced, _ = engine._translate_query_plan_with_multikey(
                "db", "docs", compile_filter({"a": '{"x":"alpha"}'})
            )
            plan = _plan(engine, "db", "docs", {"a": "alpha"})
        assert "json_type" not in plain and "json_type" in braced, (plain, braced)
        assert "USING INDEX" in plan and "<expr>=? AND <expr>=?" in plan, plan
        docs.insert_one({"_id": "array", "a": ["alpha"], "b": 2})
        assert [d["_id"] for d in docs.find({"a": '["alpha"]'})] == []
        assert sorted(d["_id"] for d in docs.find({"a": "alpha"})) == ["array", "plain"]
    finally:
        client.close()


def test_an_element_of_an_indexed_array_is_found_through_the_index(tmp_path: Path) -> None:
    """``field == "s"`` on a field of arrays with a single-field index (the actions that cite
    one memory: ``memory_ids``) reads the index's entries for ``"s"``, within a tenant too,
    instead of asking for each document whether an entry names it (which scanned every
    entry per document); once a document holds a string there, the engine's own translation
    answers, and the answers are the stock engine's throughout."""
    engine = engine_class()(str(tmp_path / "multikey.sqlite3"))
    client = MongoClient(engine=engine)
    stock = MongoClient(engine=SQLiteEngine(str(tmp_path / "multikey-stock.sqlite3")))
    try:
        both = [c["db"]["docs"] for c in (client, stock)]
        for docs in both:
            docs.create_index([("t", 1), ("u", 1)], name="tenant")
            docs.create_index([("m", 1)], name="m")
            docs.insert_many(
                [
                    {"_id": f"a{i:04d}", "t": "agent", "u": f"u{i % 3}", "m": [f"m{i % 50}", "mx"]}
                    for i in range(2_000)
                ]
                + [{"_id": "none", "t": "agent", "u": "u0"}, {"_id": "empty", "m": []}]
            )
        queries = [
            {"m": "m7"},
            {"t": "agent", "u": "u1", "m": "m7"},
            {"m": "m7", "t": "agent", "u": "u1"},
            {"t": "agent", "m": "nope"},
            {"m": "mx", "_id": {"$in": ["a0001", "a0002", "none"]}},
        ]

        def answers(docs: Any) -> list[list[str]]:
            return [sorted(d["_id"] for d in docs.find(q)) for q in queries]

        tuned = answers(both[0])
        assert tuned == answers(both[1])
        assert len(tuned[0]) == 40 and 0 < len(tuned[1]) < 40 and tuned[3] == []
        for query in queries[:4]:
            with engine._lock:
                plan = _plan(engine, "db", "docs", query)
            assert "multikey_entries" in plan and "storage_key=?" in plan, (query, plan)
            assert "tenant" not in plan, (query, plan)
        # A string at the field: the engine's own translation again, the same answers.
        for docs in both:
            docs.insert_one({"_id": "scalar", "t": "agent", "u": "u1", "m": "m7"})
        assert answers(both[0]) == answers(both[1])
        assert "scalar" in answers(both[0])[1]
        with engine._lock:
            plan = _plan(engine, "db", "docs", {"m": "m7"})
        assert "CORRELATED" in plan or "multikey" not in plan.split("|")[0], plan
    finally:
        client.close()
        stock.close()


def test_string_ranges_are_served_by_the_index(tmp_path: Path) -> None:
    """A range of strings after equalities on an index's first fields reads that range of the
    index (the newest messages of a session from a ``seq`` on), not every document the
    equalities match; the answers are the stock engine's (the differential test covers
    ranges of every type)."""
    engine = engine_class()(str(tmp_path / "range.sqlite3"))
    client = MongoClient(engine=engine)
    try:
        docs = client["db"]["docs"]
        docs.create_index([("s", 1), ("seq", 1)], name="s_seq")
        docs.insert_many([{"s": "long", "seq": f"{i:05d}"} for i in range(300)])
        newest = docs.find({"s": "long", "seq": {"$gte": "00290"}}).sort("seq", -1)
        assert [d["seq"] for d in newest] == [f"{i:05d}" for i in range(299, 289, -1)]
        assert docs.count_documents({"s": "long", "seq": {"$lt": "00010"}}) == 10
        with engine._lock:
            plans = {
                op: _plan(engine, "db", "docs", {"s": "long", "seq": {op: "00290"}})
                for op in ("$gt", "$gte", "$lt", "$lte")
            }
        for op, plan in plans.items():  # SQLite shows >= as > (and <= as <)
            assert f"<expr>{'>' if op.startswith('$gt') else '<'}?" in plan, (op, plan)
        docs.insert_one({"s": "long", "seq": ["00295", "zz"]})  # now an array at "seq"
        assert docs.count_documents({"s": "long", "seq": {"$gte": "zz"}}) == 1
    finally:
        client.close()


def test_a_slow_command_is_logged_by_its_shape_alone(
    own_embedded_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server logs each command whose engine steps take long, by command, collection and
    shape: field names and value types, never a value a user wrote."""
    from structlog.testing import capture_logs

    from agent_memory.mongo import _mongoeco

    with PyMongoClient(own_embedded_server.uri) as client:
        notes = client["db"]["notes"]
        notes.insert_one({"secret": "hunter2", "n": 1})
        monkeypatch.setattr(_mongoeco, "SLOW_COMMAND_SECONDS", 3600.0)
        with capture_logs() as quick:
            notes.find_one({"secret": "hunter2"})
        monkeypatch.setattr(_mongoeco, "SLOW_COMMAND_SECONDS", 0.0)
        with capture_logs() as logs:
            notes.find_one({"secret": "hunter2", "n": {"$gte": 1}})
    assert not [e for e in quick if e["event"] == "embedded_slow_command"]
    slow = [e for e in logs if e["event"] == "embedded_slow_command"]
    assert slow and slow[0]["command"] == "find" and slow[0]["collection"] == "notes"
    assert slow[0]["shape"]["filter"] == {"secret": "str", "n": {"$gte": "int"}}
    assert slow[0]["steps"] >= 1 and slow[0]["engine_ms"] >= 0
    assert "hunter2" not in repr(slow)


def test_a_documents_multikey_entries_are_found_by_the_document(tmp_path: Path) -> None:
    """A write replaces the document's entries in each multikey index, deleting them by
    collection, storage key and index: that delete reads an index by the document, not every
    entry of the multikey index (an update of one of 50,000 actions with ``memory_ids``:
    18 ms before, 5 ms after)."""
    path = tmp_path / "multikey-entries.sqlite3"
    client = MongoClient(engine=engine_class()(str(path)))
    try:
        docs = client["db"]["docs"]
        docs.create_index([("m", 1)], name="m")
        docs.insert_many([{"_id": f"d{i}", "m": [f"x{i}", "y"]} for i in range(50)])
        docs.update_one({"_id": "d7"}, {"$set": {"m": ["z"]}})
        assert [d["_id"] for d in docs.find({"m": "z"})] == ["d7"]
        assert docs.count_documents({"m": "x7"}) == 0 and docs.count_documents({"m": "y"}) == 49
    finally:
        client.close()
    connection = sqlite3.connect(path)
    try:
        plan = " | ".join(
            row[3]
            for row in connection.execute(
                "EXPLAIN QUERY PLAN DELETE FROM multikey_entries "
                "WHERE collection_id = ? AND storage_key = ? AND index_name = ?",
                (1, "d7", "m"),
            )
        )
    finally:
        connection.close()
    assert _engine_tuning.MULTIKEY_BY_DOCUMENT in plan and "storage_key=?" in plan, plan


@pytest.mark.parametrize(
    "query",
    [{"_id": "d3"}, {"_id": {"$in": ["d1", "d4", "d6"]}}, {"_id": {"$in": ["d2"]}, "s": "alpha"}],
)
def test_documents_by_id_sorted_by_an_indexed_field(tmp_path: Path, query) -> None:  # type: ignore[no-untyped-def]
    """A read by id goes through the primary key (``documents.storage_key``); sorted by an
    indexed field, SQLite joins the index's entries, which name a ``storage_key`` too: the
    tuned engine answered "ambiguous column name: storage_key" where the stock one answers."""
    stock, tuned = _collections(tmp_path, "sorted")
    try:
        for client in (stock, tuned):
            client["db"]["sorted"].create_index([("k", 1)], name="k", unique=True)
            client["db"]["sorted"].insert_many(
                [{"_id": f"d{i}", "k": 9 - i, "s": "alpha"} for i in range(8)]
            )
        for direction in (1, -1):
            found = [
                list(client["db"]["sorted"].find(query).sort("k", direction))
                for client in (stock, tuned)
            ]
            assert found[0] and found[1] == found[0], (query, direction)
    finally:
        stock.close()
        tuned.close()

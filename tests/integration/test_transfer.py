"""Export, import and migrate (agent_memory.ops.transfer) on the embedded server: every kind
of memory carried whole, with the same or another embedder, idempotent and resumable,
damaged files refused before anything is written, a scope that takes only what it names."""

from __future__ import annotations

import gzip
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.config import load_settings
from agent_memory.errors import EmbeddingMismatchError, InvalidInputError
from agent_memory.memory import MemorySystem, Tenant
from agent_memory.memory.conversation.records import NewMessage
from agent_memory.memory.long_term.fields import FIELD, FIELDS_TAG
from agent_memory.memory.long_term.records import NewMemory
from agent_memory.mongo.connection import connect
from agent_memory.mongo.indexes import IndexManager
from agent_memory.ops.transfer import (
    KINDS,
    ExportScope,
    export_memories,
    import_memories,
    migrate_memories,
)
from agent_memory.ops.transfer import load as loading
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.providers.embedders.fake import FakeEmbedder

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")
OTHER_AGENT = Tenant("other", "alice")
#: Stands in for what users tell: no error message may repeat it.
SECRET = "Alice's locker code is 4471-secret"
#: When the actions happened: an hour inside the window of success rates, not at its ends
#: (the ends are always counted from the logs; the hours between are kept counts).
EARLIER = datetime.now(UTC).replace(minute=10, second=0, microsecond=0) - timedelta(hours=5)
QUESTIONS = ("where does Alice live?", "what does Alice drink?", "locker code", "trip to Rome")


async def populate(system: MemorySystem, tenant: Tenant) -> None:
    """Something of every kind for ``tenant``: a keyed fact with its history, memories with
    event times, one searched by its fields, a profile, a conversation, a task with
    checkpoints, an action with feedback, knowledge."""
    long_term = system.long_term
    user = tenant.user_id
    await long_term.store(tenant, f"{user} lives in Lyon", key="city")
    await long_term.store(tenant, f"{user} lives in Porto", key="city")
    await long_term.store_many(
        tenant,
        [
            NewMemory(f"{user} drinks green tea", occurred_at=datetime(2024, 3, 1, tzinfo=UTC)),
            NewMemory(SECRET, importance=0.9, tags=["private"]),
            NewMemory(f"{user} plans a trip to Rome in May", context="said on the phone"),
            NewMemory(
                f"{user} item: title Rome guide; body museums",
                key=f"item-{user}",
                field_texts=("Rome guide", "museums and churches"),
            ),
        ],
    )
    await system.profiles.patch(tenant, {"user_name": user})
    await system.conversation.append_turn(
        tenant, f"{user}-s1", [NewMessage.user("hello"), NewMessage("assistant", "hi")]
    )
    task = await system.working.create_task(tenant, f"{user}-s1", "plan a trip", plan=["a", "b"])
    await system.working.checkpoint(tenant, task.id)
    await system.working.start_task(tenant, task.id)
    await system.working.advance_step(tenant, task.id, 0, status="in_progress")
    await system.working.advance_step(tenant, task.id, 0, status="completed", result={"n": 1})
    await system.working.checkpoint(tenant, task.id)
    action = await system.episodic.log_action(
        tenant,
        session_id=f"{user}-s1",
        action_type="query",
        outcome="success",
        content="hello",
        timestamp=EARLIER,
    )
    await system.episodic.add_feedback(tenant, action, rating=4)
    await system.knowledge.ingest(tenant, source="notes.txt", text=f"{user} keeps notes here.")
    await system.conversation.drain()
    await long_term.drain()


@pytest.fixture
async def source(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    system = MemorySystem(connection, embedder, chat_model=FakeChatModel(default="summary"))
    for tenant in (ALICE, BOB, OTHER_AGENT):
        await populate(system, tenant)
    yield system
    await system.aclose()


def other_settings(settings, **overrides):
    return load_settings(
        mongodb_uri=settings.mongodb_uri.get_secret_value(),
        database=f"t_{uuid.uuid4().hex[:12]}",
        embedder="fake",
        **overrides,
    )


@pytest.fixture
async def target_of(settings):
    """Make an empty database on the same server, indexes set up for ``embedder``."""
    made = []

    async def make(embedder):
        connection = await connect(other_settings(settings))
        await IndexManager(connection, embedder.signature).setup()
        made.append(connection)
        return connection

    yield make
    for connection in made:
        await connection.client.drop_database(connection.settings.database)
        await connection.close()


async def documents(connection, *, vectors: bool = True) -> dict[str, list[dict]]:
    """Every document of every kind, by id (without vectors unless asked)."""
    found = {}
    for kind in KINDS:
        docs = await connection.collection(kind.name).find({}).to_list(None)
        if not vectors:
            for doc in docs:
                doc.pop("embedding", None)
        found[kind.name] = sorted(docs, key=lambda doc: str(doc["_id"]))
    return found


async def ranked(system: MemorySystem, tenant: Tenant) -> list[list[str]]:
    return [
        [m.memory.id for m in await system.long_term.retrieve(tenant, q, k=5, record_access=False)]
        for q in QUESTIONS
    ]


async def test_an_export_imported_with_the_same_embedder_is_the_same_database(
    source, connection, embedder, target_of, tmp_path
):
    out = tmp_path / "all.jsonl.gz"
    report = await export_memories(connection, out)
    assert out.stat().st_mode & 0o777 == 0o600
    assert not (tmp_path / "all.jsonl.gz.partial").exists()
    stored = await documents(connection)
    assert report.counts == {name: len(docs) for name, docs in stored.items()}
    assert report.counts["memories"] > 18  # history and field documents included
    with gzip.open(out, "rt") as lines:
        header = json.loads(lines.readline())
    assert header["embedder"]["model"] == embedder.model and header["vectors"] is True

    target = await target_of(embedder)
    imported = await import_memories(target, embedder, out)
    assert imported.verified and not imported.reembed_reason and imported.embedded == 0
    assert imported.inserted == {k: v for k, v in report.counts.items() if v}
    # Every document, vectors, ids, times, history, feedback and all, as it was.
    assert await documents(target) == stored
    system = MemorySystem(target, embedder)
    try:
        assert await ranked(system, ALICE) == await ranked(source, ALICE)
        history = await system.long_term.history(ALICE, key="city")
        assert [m.content for m in history] == ["alice lives in Porto", "alice lives in Lyon"]
    finally:
        await system.aclose()


async def test_another_embedder_makes_the_vectors_again_and_ranks_as_a_direct_ingest(
    source, connection, target_of, tmp_path
):
    other = FakeEmbedder(64, model="other-model")
    out = tmp_path / "all.jsonl"
    await export_memories(connection, out, vectors=False)
    assert "$binary" not in out.read_text()
    target = await target_of(other)
    report = await import_memories(target, other, out)
    assert report.verified
    assert "without vectors" in report.reembed_reason
    # The field vectors cannot be made again: those memories are searched by their text.
    assert report.fields_dropped == 6
    assert await target.collection("memories").count_documents({"status": FIELD}) == 0
    assert await target.collection("memories").count_documents({"tags": FIELDS_TAG}) == 0
    before = await documents(connection, vectors=False)
    after = await documents(target, vectors=False)
    for name in before:
        kept = [d for d in before[name] if d.get("status") != FIELD]
        for doc in kept:
            if FIELDS_TAG in (doc.get("tags") or []):
                doc["tags"] = [t for t in doc["tags"] if t != FIELDS_TAG]
        assert after[name] == kept, name
    vectors = (
        await target.collection("memories").find({"embedding": {"$exists": True}}).to_list(None)
    )
    assert vectors and all(len(doc["embedding"]) == 2 + 4 * 64 for doc in vectors)
    assert report.embedded == len(vectors) + await target.collection("action_logs").count_documents(
        {}
    ) + await target.collection("knowledge_chunks").count_documents({})

    # The same memories stored directly with that embedder rank in the same order.
    direct = await target_of(other)
    fresh = MemorySystem(direct, other)
    imported = MemorySystem(target, other)
    try:
        by_content = {}
        # Stored as they were, in order: history too (the keyword statistics count it), with
        # their event times and importance.
        alices = [
            doc
            for doc in before["memories"]
            if doc["user_id"] == "alice" and doc["agent_id"] == "agent" and doc["status"] != FIELD
        ]
        for doc in sorted(alices, key=lambda doc: doc["created_at"]):
            said = doc["occurred_at"]
            new = NewMemory(
                doc["content"],
                importance=doc["importance"],
                tags=[t for t in doc["tags"] if t != FIELDS_TAG],
                key=doc.get("key"),
                context=doc.get("context"),
                occurred_at=said if said.tzinfo else said.replace(tzinfo=UTC),
            )
            (stored,) = await fresh.long_term.store_many(ALICE, [new])
            by_content[stored.id] = doc["content"]
        for question in QUESTIONS:
            direct_order = [
                by_content[m.memory.id]
                for m in await fresh.long_term.retrieve(ALICE, question, record_access=False)
            ]
            imported_order = [
                m.memory.content
                for m in await imported.long_term.retrieve(ALICE, question, record_access=False)
            ]
            assert imported_order == direct_order, question
    finally:
        await fresh.aclose()
        await imported.aclose()


async def test_importing_again_or_after_a_crash_creates_nothing_twice(
    source, connection, embedder, target_of, tmp_path, monkeypatch
):
    out = tmp_path / "all.jsonl"
    await export_memories(connection, out)
    target = await target_of(embedder)
    monkeypatch.setattr(loading, "BATCH", 3)
    real = loading.Loader._flush
    flushed = 0

    async def crashing(self, name):
        nonlocal flushed
        flushed += 1
        if flushed == 4:
            raise ConnectionError("the process died here")
        await real(self, name)

    monkeypatch.setattr(loading.Loader, "_flush", crashing)
    with pytest.raises(ConnectionError):
        await import_memories(target, embedder, out)
    partly = sum(len(d) for d in (await documents(target)).values())
    assert 0 < partly < sum(len(d) for d in (await documents(connection)).values())
    monkeypatch.setattr(loading.Loader, "_flush", real)
    resumed = await import_memories(target, embedder, out)
    assert resumed.verified
    assert sum(resumed.present.values()) == partly
    again = await import_memories(target, embedder, out)
    assert again.inserted == {} and again.verified
    assert await documents(target) == await documents(connection)


async def test_nothing_stored_is_overwritten_and_other_tenants_ids_are_conflicts(
    source, connection, embedder, target_of, tmp_path
):
    out = tmp_path / "all.jsonl"
    await export_memories(connection, out)
    target = await target_of(embedder)
    first = await connection.collection("memories").find_one({"user_id": "alice", "key": "city"})
    # The target already holds that id, for another user, and has changed a memory of its own.
    await target.collection("memories").insert_one(
        {"_id": first["_id"], "agent_id": "agent", "user_id": "mallory", "content": "mine"}
    )
    report = await import_memories(target, embedder, out)
    assert report.conflicts == {"memories": 1}
    assert report.verified and not report.shortfalls  # a conflict is left alone, not missing
    kept = await target.collection("memories").find_one({"_id": first["_id"]})
    assert kept["user_id"] == "mallory" and kept["content"] == "mine"
    changed = await target.collection("memories").find_one(
        {"user_id": "bob", "key": "city", "status": "active"}
    )
    await target.collection("memories").update_one(
        {"_id": changed["_id"]}, {"$set": {"importance": 0.1}}
    )
    await import_memories(target, embedder, out)
    assert (await target.collection("memories").find_one({"_id": changed["_id"]}))[
        "importance"
    ] == 0.1


async def test_a_scope_takes_one_user_one_agent_or_what_was_written_since(
    source, connection, tmp_path
):
    alice = await export_memories(
        connection, tmp_path / "alice.jsonl", ExportScope("agent", "alice")
    )
    lines = [json.loads(line) for line in (tmp_path / "alice.jsonl").read_text().splitlines()]
    docs = [line["doc"] for line in lines[1:-1]]
    assert docs and all(d["agent_id"] == "agent" and d["user_id"] == "alice" for d in docs)
    assert "action_aggregates" not in alice.counts  # per agent: nobody's data but the agent's
    everyone = await export_memories(connection, tmp_path / "agent.jsonl", ExportScope("agent"))
    assert {
        d["user_id"]
        for d in (
            json.loads(x)["doc"] for x in (tmp_path / "agent.jsonl").read_text().splitlines()[1:-1]
        )
    } == {"alice", "bob"}
    assert everyone.total == 2 * alice.total
    later = await export_memories(
        connection,
        tmp_path / "later.jsonl",
        ExportScope(since=datetime.now(UTC) + timedelta(seconds=1)),
    )
    assert later.total == 0
    dated = await export_memories(
        connection,
        tmp_path / "dated.jsonl",
        ExportScope(since=datetime.now(UTC) - timedelta(days=1)),
    )
    assert dated.total == sum(len(d) for d in (await documents(connection)).values())
    # Each kind by its own time: the actions happened five hours ago, the rest was just stored.
    recent = await export_memories(
        connection,
        tmp_path / "recent.jsonl",
        ExportScope(since=datetime.now(UTC) - timedelta(hours=1)),
    )
    assert recent.counts["action_logs"] == 0
    assert recent.total == dated.total - dated.counts["action_logs"] == dated.total - 3


async def test_an_export_does_not_overwrite_a_file_and_checks_its_scope(connection, tmp_path):
    (tmp_path / "taken.jsonl").write_text("keep me")
    with pytest.raises(InvalidInputError, match="exists"):
        await export_memories(connection, tmp_path / "taken.jsonl")
    assert (tmp_path / "taken.jsonl").read_text() == "keep me"
    for scope in (
        ExportScope(agent_id=""),
        ExportScope(user_id=3),
        ExportScope(since=datetime(2024, 1, 1)),
    ):
        with pytest.raises(InvalidInputError):
            await export_memories(connection, tmp_path / "x.jsonl", scope)
        assert not (tmp_path / "x.jsonl").exists()
        assert not (tmp_path / "x.jsonl.partial").exists()


def _damage(lines: list[str], how: str) -> tuple[list[str], str]:
    """``lines`` of an export damaged one way, and the error expected."""
    record = json.loads(lines[3])
    if how == "cut":
        return lines[:-1], "cut short"
    if how == "truncated line":
        return [*lines[:3], lines[3][: len(lines[3]) // 2], *lines[4:]], "line 4: not JSON"
    if how == "version":
        header = json.loads(lines[0]) | {"version": 2}
        return [json.dumps(header), *lines[1:]], "format version 2"
    if how == "not an export":
        return ['{"hello": "world"}', *lines[1:]], "not an agent-memory-export"
    if how == "unknown kind":
        return [
            *lines[:3],
            json.dumps(record | {"kind": "passwords"}),
            *lines[4:],
        ], "line 4: no kind"
    if how == "dollar key":
        record["doc"]["$where"] = SECRET
        return [*lines[:3], json.dumps(record), *lines[4:]], "line 4"
    if how == "nested dollar key":
        record["doc"]["source"] = {"value": [{"ok": 1}, {"$where": SECRET}]}
        return [*lines[:3], json.dumps(record), *lines[4:]], "line 4: the document has a field"
    if how == "dotted key":
        record["doc"]["source"] = {"a.b": SECRET}
        return [*lines[:3], json.dumps(record), *lines[4:]], "line 4: the document has a field"
    if how == "no tenant":
        record["doc"]["user_id"] = {"$ne": None}
        return [*lines[:3], json.dumps(record), *lines[4:]], "line 4"
    if how == "no id":
        record["doc"].pop("_id")
        return [*lines[:3], json.dumps(record), *lines[4:]], "line 4: the document has no id"
    if how == "after the end":
        return [*lines, lines[3]], "after the end line"
    if how == "counts":
        return [*lines[:3], *lines[4:]], "counts differ"
    if how == "vector":
        record["doc"]["embedding"] = {"$binary": {"base64": "AAAA", "subType": "09"}}
        return [*lines[:3], json.dumps(record), *lines[4:]], "line 4: the document's vector"
    if how == "empty":
        return [], "empty"
    raise AssertionError(how)


@pytest.mark.parametrize(
    "how",
    [
        "cut",
        "truncated line",
        "version",
        "not an export",
        "unknown kind",
        "dollar key",
        "nested dollar key",
        "dotted key",
        "no tenant",
        "no id",
        "after the end",
        "counts",
        "vector",
        "empty",
    ],
)
async def test_a_damaged_file_is_refused_naming_the_line_and_nothing_is_written(
    source, connection, embedder, target_of, tmp_path, how
):
    out = tmp_path / "all.jsonl"
    await export_memories(connection, out)
    lines, expected = _damage(out.read_text().splitlines(), how)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(line + "\n" for line in lines))
    target = await target_of(embedder)
    with pytest.raises(InvalidInputError, match=expected) as raised:
        await import_memories(target, embedder, bad)
    assert SECRET not in str(raised.value) and "alice" not in str(raised.value)
    assert sum(len(d) for d in (await documents(target)).values()) == 0
    with pytest.raises(InvalidInputError, match=expected):
        await import_memories(target, embedder, bad, dry_run=True)


async def test_unreadable_files_are_clear_errors(connection, embedder, tmp_path, monkeypatch):
    with pytest.raises(InvalidInputError, match="cannot read"):
        await import_memories(connection, embedder, tmp_path / "missing.jsonl")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"format": "agent-memory-export"\xff\xfe}\n')
    with pytest.raises(InvalidInputError, match="line 1"):
        await import_memories(connection, embedder, binary)
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(b'{"format": "x"}\n' * 100)[:40])
    with pytest.raises(InvalidInputError, match="line"):
        await import_memories(connection, embedder, broken)
    monkeypatch.setattr(loading, "MAX_LINE_CHARS", 100)
    long = tmp_path / "long.jsonl"
    long.write_text('{"format": "agent-memory-export", "pad": "' + "x" * 200 + '"}\n')
    with pytest.raises(InvalidInputError, match="line 1: longer than 100"):
        await import_memories(connection, embedder, long)


async def test_a_dry_run_checks_and_counts_and_writes_nothing(
    source, connection, embedder, target_of, tmp_path
):
    out = tmp_path / "all.jsonl"
    exported = await export_memories(connection, out)
    target = await target_of(FakeEmbedder(32, model="small"))
    report = await import_memories(target, FakeEmbedder(32, model="small"), out, dry_run=True)
    assert report.counts == {k: v for k, v in exported.counts.items() if v}
    assert "small" in report.reembed_reason
    assert sum(len(d) for d in (await documents(target)).values()) == 0


async def test_a_target_of_another_recorded_embedder_is_refused(
    source, connection, embedder, target_of, tmp_path
):
    out = tmp_path / "all.jsonl"
    await export_memories(connection, out)
    target = await target_of(FakeEmbedder(32, model="small"))
    with pytest.raises(EmbeddingMismatchError):
        await import_memories(target, embedder, out)
    assert sum(len(d) for d in (await documents(target)).values()) == 0


async def test_imported_memories_are_found_by_a_search_that_already_kept_the_tenant(
    source, connection, embedder, target_of, tmp_path
):
    out = tmp_path / "alice.jsonl"
    await export_memories(connection, out, ExportScope("agent", "alice"))
    target = await target_of(embedder)
    system = MemorySystem(target, embedder)
    try:
        await system.long_term.store(ALICE, "alice has a cat")
        assert len(await system.long_term.retrieve(ALICE, "Porto", k=10)) == 1  # kept now
        await system.episodic.log_action(
            ALICE,
            session_id="s0",
            action_type="query",
            outcome="failure",
            content="hello",
            timestamp=EARLIER + timedelta(minutes=5),
        )
        assert (await system.episodic.success_rates("agent")).total == 1  # counted and kept
        assert len(await system.episodic.similar_actions(ALICE, query="hello", outcome=None)) == 1
        await import_memories(target, embedder, out)
        found = [m.memory.content for m in await system.long_term.retrieve(ALICE, "Porto", k=10)]
        assert "alice lives in Porto" in found
        assert len(await system.episodic.similar_actions(ALICE, query="hello", outcome=None)) == 2
        rates = await system.episodic.success_rates("agent")
        assert rates.total == 2 and rates.counts["success"] == 1
    finally:
        await system.aclose()


async def test_migrate_moves_everything_to_another_server_and_embedder(
    source, connection, embedder, target_of
):
    other = FakeEmbedder(48, model="migrated")
    target = await target_of(other)
    plan = await migrate_memories(connection, target, other, dry_run=True)
    assert plan.dry_run and plan.report is None
    assert plan.counts["memories"] == len((await documents(connection))["memories"])
    assert plan.to_embed > 0 and plan.embedding_seconds is not None
    assert plan.fields_dropped == 6
    assert sum(len(d) for d in (await documents(target)).values()) == 0

    done = await migrate_memories(connection, target, other)
    assert done.report is not None and done.report.verified
    assert done.report.embedded == plan.to_embed
    assert done.report.reembed_reason == plan.reembed_reason != ""
    again = await migrate_memories(connection, target, other)
    assert again.report is not None and again.report.inserted == {}
    system = MemorySystem(target, other)
    try:
        found = await system.long_term.retrieve(BOB, "where does bob live?", k=3)
        assert found[0].memory.content == "bob lives in Porto"
    finally:
        await system.aclose()
    # The same embedder: vectors carried, nothing embedded.
    same = await target_of(embedder)
    carried = await migrate_memories(connection, same, embedder, ExportScope("agent", "alice"))
    assert carried.report is not None and carried.report.embedded == 0
    assert carried.reembed_reason == ""


async def test_the_transfer_benchmark_prints_its_figures(settings, embedder, tmp_path):
    from pathlib import Path

    from agent_memory.bench.embedders import load_locomo
    from agent_memory.bench.transfer import (
        other_fake,
        render_transfer,
        run_round_trip,
        run_transfer_sizes,
    )

    other = other_fake(embedder)
    sizes = await run_transfer_sizes(settings, embedder, other, [40, 120], tmp_path)
    assert [row["memories"] for row in sizes["sizes"]] == [40, 120]
    assert all(row["export_per_second"] > 0 for row in sizes["sizes"])
    assert sizes["sizes"][0]["import_other_embedded"] == 40
    assert sizes["sizes"][0]["engine_insert_per_second"] > 0
    conversations, _ = load_locomo(
        Path(__file__).parents[2] / "datasets" / "dialogues" / "dialogues.json", limit=1
    )
    trip = await run_round_trip(settings, embedder, other, conversations, tmp_path)
    assert trip["documents_differing"] == 0 and trip["verified"]
    assert trip["memories"] == trip["documents_compared"] > 100
    assert trip["same_top10_without_current_first"] == trip["questions"] > 10
    table = render_transfer({"sizes": sizes, "round_trip": trip})
    assert "| 120 |" in table and "documents equal to their source" in table
    assert not list(tmp_path.iterdir())  # the export files are removed


async def test_a_second_import_of_more_than_a_batch_finds_everything_present(
    connection, embedder, target_of, tmp_path
):
    # More ids than one lookup may name on the embedded engine (about 494): read in parts.
    system = MemorySystem(connection, embedder)
    try:
        await IndexManager(connection, embedder.signature).setup()
        await system.long_term.store_many(
            ALICE, [NewMemory(f"note number {i} about topic {i % 37}") for i in range(1_100)]
        )
    finally:
        await system.aclose()
    out = tmp_path / "many.jsonl"
    stored = (await export_memories(connection, out)).counts["memories"]
    assert stored > 1_000  # consolidation may merge a near-duplicate or two
    target = await target_of(embedder)
    first = await import_memories(target, embedder, out)
    assert first.inserted == {"memories": stored} and first.verified
    counted = []
    real = embedder.embed_documents

    async def embed(texts):
        counted.append(len(texts))
        return await real(texts)

    again = await import_memories(target, FakeEmbedder(32, model="x"), out, dry_run=True)
    assert again.counts == {"memories": stored}
    embedder.embed_documents = embed
    second = await import_memories(target, embedder, out)
    assert second.present == {"memories": stored} and second.inserted == {} and second.verified
    assert counted == []  # nothing embedded for documents already there


async def test_a_document_missing_after_writing_fails_the_verification(
    source, connection, embedder, target_of, tmp_path, monkeypatch
):
    out = tmp_path / "all.jsonl"
    await export_memories(connection, out)
    target = await target_of(embedder)
    real = loading.find_in
    calls = 0

    async def losing(collection, values, query, projection=None, **options):
        nonlocal calls
        calls += 1
        rows = await real(collection, values, query, projection, **options)
        # Every second lookup is a batch's read-back: one document seems gone.
        return rows[1:] if calls % 2 == 0 else rows

    monkeypatch.setattr(loading, "find_in", losing)
    report = await import_memories(target, embedder, out)
    assert not report.verified
    assert any("written but not found" in line for line in report.shortfalls)


async def test_closing_an_export_early_stops_its_reading_at_once(source, connection, monkeypatch):
    import asyncio

    from agent_memory.ops.transfer import export as exporting

    monkeypatch.setattr(exporting, "BATCH", 2)  # the read-ahead queue fills at once
    lines = exporting.export_lines(connection)
    for _ in range(4):
        await anext(lines)
    await asyncio.sleep(0.5)  # the reader is blocked on a full queue now

    def readers():
        return [
            task
            for task in asyncio.all_tasks()
            if task.get_coro().__qualname__ == "_prefetched.<locals>.read"
        ]

    assert readers() and not any(task.done() for task in readers())
    started = asyncio.get_running_loop().time()
    await asyncio.wait_for(lines.aclose(), timeout=5)
    assert asyncio.get_running_loop().time() - started < 3  # not ended by the timeout
    assert all(task.done() for task in readers())


async def test_a_source_document_an_import_would_refuse_stops_a_migration_before_it_writes(
    source, connection, embedder, target_of
):
    await connection.collection("memories").insert_one(
        {"_id": "mem_legacy", "agent_id": "agent", "content": "no user id"}
    )
    target = await target_of(embedder)
    with pytest.raises(InvalidInputError, match="user_id"):
        await migrate_memories(connection, target, embedder)
    with pytest.raises(InvalidInputError, match="user_id"):
        await migrate_memories(connection, target, embedder, dry_run=True)
    assert sum(len(d) for d in (await documents(target)).values()) == 0

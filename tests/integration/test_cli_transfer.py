"""``agent-memory export | import | migrate`` as a user runs them."""

from __future__ import annotations

import asyncio
import gzip
import json
import uuid

import pytest
from pymongo import MongoClient
from typer.testing import CliRunner

from agent_memory.cli import app
from agent_memory.config import load_settings
from agent_memory.memory import MemorySystem, Tenant
from agent_memory.memory.conversation.records import NewMessage
from agent_memory.mongo.connection import connect
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.embedders.fake import FakeEmbedder

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")


def invoke(args, env):
    return CliRunner().invoke(app, args, env=env, catch_exceptions=False)


def env_of(server, database=None, **extra):
    return {
        "MONGODB_URI": server.uri,
        "AGENT_MEMORY_DATABASE": database or f"tr_{uuid.uuid4().hex[:10]}",
        "AGENT_MEMORY_EMBEDDER": "fake",
        **extra,
    }


@pytest.fixture
def envs(embedded_server):
    made = [env_of(embedded_server), env_of(embedded_server)]
    yield made
    with MongoClient(embedded_server.uri) as client:
        for env in made:
            client.drop_database(env["AGENT_MEMORY_DATABASE"])


async def fill(env) -> None:
    settings = load_settings(
        mongodb_uri=env["MONGODB_URI"], database=env["AGENT_MEMORY_DATABASE"], embedder="fake"
    )
    connection = await connect(settings)
    embedder = FakeEmbedder()
    await IndexManager(connection, embedder.signature).setup()
    system = MemorySystem(connection, embedder)
    try:
        for tenant in (ALICE, BOB):
            await system.long_term.store(tenant, f"{tenant.user_id} lives in Lyon", key="city")
            await system.long_term.store(tenant, f"{tenant.user_id} lives in Porto", key="city")
            await system.conversation.append_turn(
                tenant, "s1", [NewMessage.user("hello"), NewMessage("assistant", "hi")]
            )
        await system.conversation.drain()
    finally:
        await system.aclose()
        await connection.close()


def counts(env) -> dict[str, int]:
    with MongoClient(env["MONGODB_URI"]) as client:
        db = client[env["AGENT_MEMORY_DATABASE"]]
        return {name: db[name].count_documents({}) for name in ("memories", "sessions", "messages")}


def test_export_then_import_carries_a_user_to_another_database(envs, tmp_path):
    source, target = envs
    asyncio.run(fill(source))
    out = tmp_path / "alice.jsonl.gz"
    exported = invoke(["export", str(out), "--user", "alice", "--json"], source)
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.output)["counts"]["memories"] == 2
    with gzip.open(out, "rt") as lines:
        assert json.loads(lines.readline())["scope"]["user_id"] == "alice"

    dry = invoke(["import", str(out), "--dry-run"], target)
    assert dry.exit_code == 0, dry.output
    assert "nothing written" in dry.output
    assert counts(target) == {"memories": 0, "sessions": 0, "messages": 0}

    imported = invoke(["import", str(out)], target)
    assert imported.exit_code == 0, imported.output
    assert "verified" in imported.output
    assert counts(target) == {"memories": 2, "sessions": 1, "messages": 2}
    again = invoke(["import", str(out), "--json"], target)
    report = json.loads(again.output)
    assert report["inserted"] == {} and report["present"]["memories"] == 2 and report["verified"]

    # Another embedder on the target: the vectors are made again.
    other = env_of_db(target, AGENT_MEMORY_EMBEDDING_DIMENSIONS="64")
    reembedded = invoke(["import", str(out), "--json"], other)
    assert reembedded.exit_code == 0, reembedded.output
    assert json.loads(reembedded.output)["embedded"] == 2


def env_of_db(env, **extra):
    """``env``'s server with a database of its own (dropped with the server's test data)."""
    return {**env, "AGENT_MEMORY_DATABASE": f"tr_{uuid.uuid4().hex[:10]}", **extra}


def test_export_refuses_an_existing_file_and_bad_options(envs, tmp_path):
    source, _ = envs
    asyncio.run(fill(source))
    taken = tmp_path / "taken.jsonl"
    taken.write_text("mine")
    result = invoke(["export", str(taken)], source)
    assert result.exit_code != 0 and "exists" in result.output
    assert taken.read_text() == "mine"
    result = invoke(["export", str(tmp_path / "x.jsonl"), "--since", "last tuesday"], source)
    assert result.exit_code == 2 and "ISO 8601" in result.output
    result = invoke(["export", str(tmp_path / "x.jsonl"), "--user", ""], source)
    assert result.exit_code == 2
    assert not (tmp_path / "x.jsonl").exists()
    # A hostile id is a value compared as it is: nobody's data.
    result = invoke(["export", str(tmp_path / "x.jsonl"), "--user", "$where", "--json"], source)
    assert result.exit_code == 0 and sum(json.loads(result.output)["counts"].values()) == 0


def test_import_names_the_damaged_line(envs, tmp_path):
    source, target = envs
    asyncio.run(fill(source))
    out = tmp_path / "all.jsonl"
    assert invoke(["export", str(out)], source).exit_code == 0
    lines = out.read_text().splitlines()
    lines[2] = lines[2][:20]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    result = invoke(["import", str(bad)], target)
    assert result.exit_code != 0
    assert "line 3" in result.output and "Lyon" not in result.output
    # Nothing at all: not even the indexes and the embedder record of a new target (the
    # connection itself makes the empty meta collection).
    with MongoClient(target["MONGODB_URI"]) as client:
        db = client[target["AGENT_MEMORY_DATABASE"]]
        assert db.list_collection_names() == ["meta"]
        assert db["meta"].find_one({"_id": "embedding"}) is None


def test_migrate_dry_run_then_for_real(envs, embedded_server):
    source, target = envs
    asyncio.run(fill(source))
    to = ["--to", embedded_server.uri, "--to-database", target["AGENT_MEMORY_DATABASE"]]
    dry = invoke(["migrate", *to, "--dry-run"], source)
    assert dry.exit_code == 0, dry.output
    assert "would move" in dry.output and "carried as they are" in dry.output
    assert counts(target) == {"memories": 0, "sessions": 0, "messages": 0}
    done = invoke(["migrate", *to, "--json"], source)
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)["report"]
    assert report["verified"] and report["inserted"]["memories"] == 4
    assert counts(target) == counts(source)
    assert invoke(["migrate", "--dry-run"], source).exit_code == 2

"""``agent-memory demo``: every part shows real values, checked in its output and its database."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pymongo import MongoClient
from typer.testing import CliRunner

from agent_memory.cli import app
from agent_memory.cli import demo as demo_command
from agent_memory.cli.demo_feedback import FAVOURITE, STEAKHOUSE
from agent_memory.cli.demo_long_term import QUESTIONS, shared_words
from agent_memory.cli.demo_working import PLAN
from agent_memory.config import load_settings
from agent_memory.mongo.connection import connect
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.search import index_watch
from agent_memory.mongo.search.index_watch import IndexWatch
from agent_memory.providers.embedders.fake import FakeEmbedder
from tests.integration.atlas_double import ATLAS_NOT_ALLOWED, AtlasDouble, ManualClock

AGENT = "demo-agent"


def invoke(env: dict[str, str]):
    return invoke_args(["demo"], env)


def invoke_args(args: list[str], env: dict[str, str]):
    return CliRunner().invoke(app, args, env=env, catch_exceptions=False)


def part(output: str, number: int) -> str:
    """The output under the heading of part ``number`` (up to the next heading)."""
    start = re.search(rf"─ {number}\. ", output)
    assert start, f"no heading for part {number}"
    end = re.search(rf"─ {number + 1}\. ", output[start.end() :])
    return output[start.end() : start.end() + end.start() if end else None]


@pytest.fixture(scope="module")
def demo_env(embedded_server):
    """The session's server, a database name of the module's own, the fake embedder."""
    return {
        "MONGODB_URI": embedded_server.uri,
        "AGENT_MEMORY_DATABASE": f"demo_{uuid.uuid4().hex[:10]}",
        "AGENT_MEMORY_EMBEDDER": "fake",
    }


@pytest.fixture(scope="module")
def shared_run(embedded_server, demo_env):
    """One demo run, and the demo's own database (the configured name with _demo after it)."""
    database = demo_env["AGENT_MEMORY_DATABASE"]
    result = invoke(demo_env)
    assert result.exit_code == 0, result.output
    with MongoClient(embedded_server.uri) as client:
        yield result.output, client[f"{database}_demo"]
        client.drop_database(f"{database}_demo")
        client.drop_database(database)


def _documents(db) -> dict[str, int]:
    return {name: db[name].count_documents({}) for name in db.list_collection_names()}


def test_the_demo_writes_into_a_database_of_its_own(shared_run, demo_env, embedded_server):
    output, demo_db = shared_run
    application = demo_env["AGENT_MEMORY_DATABASE"]
    with MongoClient(embedded_server.uri) as client:
        assert not any(_documents(client[application]).values())  # the application's: nothing
    assert _documents(demo_db)["memories"] and _documents(demo_db)["decay_runs"]
    stats = invoke_args(["stats", "--json"], demo_env)
    assert stats.exit_code == 0 and json.loads(stats.output)["tenants"] == []
    closing = " ".join(output.split("Done in")[1].split())
    assert f"is in the database {application}_demo, not in {application}" in closing
    assert "Remove it with `agent-memory demo --remove`." in closing


def test_remove_drops_the_demos_database_only(embedded_server, demo_env):
    env = {**demo_env, "AGENT_MEMORY_DATABASE": f"remove_{uuid.uuid4().hex[:8]}"}
    application = env["AGENT_MEMORY_DATABASE"]
    with MongoClient(embedded_server.uri) as client:
        try:
            client[application].memories.insert_one({"agent_id": "a", "user_id": "u"})
            # what the demo writes: its agent's documents (another agent's make it refuse)
            client[f"{application}_demo"].memories.insert_one(
                {"agent_id": "demo-agent", "user_id": "u"}
            )
            removed = invoke_args(["demo", "--remove"], env)
            assert removed.exit_code == 0, removed.output
            assert f"removed the demo's database {application}_demo" in removed.output
            assert not any(_documents(client[f"{application}_demo"]).values())
            assert client[application].memories.count_documents({}) == 1  # the application's
            again = invoke_args(["demo", "--remove"], env)
            assert f"no demo data in {application}_demo: nothing to remove" in again.output
        finally:
            client.drop_database(application)
            client.drop_database(f"{application}_demo")


# --- the demo's database is never the application's ------------------------------------------------


def test_the_demos_database_name_is_never_the_applications():
    """Issue 35 review: a 63-character name ending in _demo was its own demo database (the
    name was cut to fit), so `demo --remove` dropped the application's database."""
    named = {}
    for name in ["agent_memory", "a" * 58, "a" * 58 + "_demo", "b" * 63, "b" * 62 + "c"]:
        named[name] = demo_command.demo_database(load_settings(database=name))
    for length in range(1, 64):
        name = "x" * length
        named[name] = demo_command.demo_database(load_settings(database=name))
    assert named["agent_memory"] == "agent_memory_demo"
    assert named["a" * 58] == "a" * 58 + "_demo"
    for name, demo in named.items():
        assert demo != name and demo.endswith("_demo") and len(demo) <= 63, (name, demo)
        load_settings(database=demo)  # a name the settings take
    # long names that share their start get databases of their own
    assert named["b" * 63] != named["b" * 62 + "c"]


def test_remove_never_drops_the_applications_database(embedded_server, demo_env):
    application = f"{uuid.uuid4().hex}{'a' * 26}_demo"  # 63 characters, ending in _demo
    env = {**demo_env, "AGENT_MEMORY_DATABASE": application}
    with MongoClient(embedded_server.uri) as client:
        try:
            client[application].memories.insert_one({"agent_id": "demo-agent", "user_id": "u"})
            removed = invoke_args(["demo", "--remove"], env)
            assert removed.exit_code == 0, removed.output
            assert "no demo data in" in removed.output
            assert client[application].memories.count_documents({}) == 1
        finally:
            client.drop_database(application)


def test_remove_refuses_the_applications_database_whatever_the_name(
    embedded_server, demo_env, monkeypatch
):
    """The guard behind the name: were the demo's name the application's, nothing is dropped."""
    application = demo_env["AGENT_MEMORY_DATABASE"]
    monkeypatch.setattr(demo_command, "demo_database", lambda settings: settings.database)
    with MongoClient(embedded_server.uri) as client:
        try:
            client[application].memories.insert_one({"agent_id": "demo-agent", "user_id": "u"})
            refused = invoke_args(["demo", "--remove"], demo_env)
            assert refused.exit_code == 1
            assert f"error: the demo's database {application} is the application's" in (
                " ".join(refused.output.split())
            )
            assert client[application].memories.count_documents({}) == 1
        finally:
            client[application].memories.delete_many({})


def test_a_database_holding_another_applications_data_is_not_the_demos(embedded_server, demo_env):
    """Another deployment named like the demo's database (its name with _demo after it): the
    demo neither writes into it nor drops it."""
    application = f"other_{uuid.uuid4().hex[:8]}"
    env = {**demo_env, "AGENT_MEMORY_DATABASE": application}
    theirs = f"{application}_demo"
    with MongoClient(embedded_server.uri) as client:
        try:
            client[theirs].memories.insert_one({"agent_id": "support", "user_id": "u-1"})
            ran = invoke_args(["demo"], env)
            assert ran.exit_code == 1
            said = " ".join(ran.output.split())
            assert f"error: the database {theirs} holds data the demo did not write (in " in said
            assert "so the demo does not write into it" in said and "u-1" not in said
            assert client[theirs].memories.count_documents({"agent_id": "demo-agent"}) == 0
            removed = invoke_args(["demo", "--remove"], env)
            assert removed.exit_code == 1
            assert "so the demo does not drop it" in " ".join(removed.output.split())
            assert client[theirs].memories.count_documents({"agent_id": "support"}) == 1
        finally:
            client.drop_database(theirs)
            client.drop_database(application)


# --- on Atlas: the demo's own search indexes ----------------------------------------------------

VECTOR = {"memories_vector", "knowledge_vector", "action_logs_vector"}


@pytest.fixture
async def atlas(embedded_server, monkeypatch) -> AsyncIterator[tuple[AtlasDouble, dict[str, str]]]:
    """The Atlas double (builds finish as polled) and the environment of an application on
    it, whose database and the demo's are dropped afterwards."""
    monkeypatch.setattr(index_watch, "_WATCH", IndexWatch(clock=ManualClock(), interval=600.0))
    info = embedded_server.info
    application = f"atlas_{uuid.uuid4().hex[:8]}"
    async with AtlasDouble(info.host, info.port, info.secret, auto_advance=True) as double:
        env = {
            "MONGODB_URI": double.uri,
            "AGENT_MEMORY_DATABASE": application,
            "AGENT_MEMORY_EMBEDDER": "fake",
            "AGENT_MEMORY_SEARCH_TIER": "atlas",
        }
        try:
            yield double, env
        finally:
            with MongoClient(embedded_server.uri) as client:
                client.drop_database(application)
                client.drop_database(f"{application}_demo")


def _demo_in_a_thread(args: list[str], env: dict[str, str]):
    """The command in a thread: the double answers on this test's event loop."""
    return asyncio.to_thread(invoke_args, args, env)


def _search_indexes(double: AtlasDouble, database: str) -> set[str]:
    return {
        name
        for namespace, indexes in double.indexes.items()
        if namespace.startswith(f"{database}.")
        for name in indexes
    }


async def test_on_atlas_the_demo_asks_before_it_takes_search_index_slots(atlas, embedded_server):
    """Issue 35 review: on Atlas the demo's set-up made a second set of search indexes in its
    own database, taking the application's slots on a free cluster until `demo --remove`."""
    double, env = atlas
    demo_db = f"{env['AGENT_MEMORY_DATABASE']}_demo"
    result = await _demo_in_a_thread(["demo"], env)
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert said.startswith(
        f"error: on Atlas the demo creates search indexes of its own in {demo_db}"
    )
    assert (
        "count toward the cluster's search-index limit (3 on a free M0 cluster, 10 on Flex)" in said
    )
    assert "until `agent-memory demo --remove` drops them" in said
    assert "run `agent-memory demo --yes` to go ahead" in said
    assert double.index_states == {}  # nothing created, nothing written
    with MongoClient(embedded_server.uri) as client:
        assert not any(
            client[demo_db][name].count_documents({})
            for name in client[demo_db].list_collection_names()
            if name != "meta"
        )


async def test_where_its_indexes_do_not_fit_the_demo_drops_what_it_made(atlas):
    """A free cluster with room for one more search index than the application's three: the
    demo (asked with --yes) says first what it creates, is refused its second index, and drops
    its database and the index it made, so the application keeps the cluster's slots."""
    double, env = atlas
    application = env["AGENT_MEMORY_DATABASE"]
    double.max_search_indexes = 4
    double.refuse(
        "$listSearchIndexes", 8000, "AtlasError", ATLAS_NOT_ALLOWED.format("$listSearchIndexes")
    )
    settings = load_settings(
        mongodb_uri=double.uri, database=application, embedder="fake", search_tier="atlas"
    )
    async with await connect(settings) as conn:
        await IndexManager(conn, FakeEmbedder().signature).setup(timeout=10, poll_interval=0.001)
    assert _search_indexes(double, application) == VECTOR

    result = await _demo_in_a_thread(["demo", "--yes"], env)
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    notice = said.index("search indexes: on Atlas the demo creates search indexes of its own")
    assert notice < said.index("error: ")
    assert (
        "error: the demo's search indexes could not be made (the cluster's search-index limit "
        f"was reached (M0 free clusters allow 3, Flex clusters 10)); the demo dropped its "
        f"database {application}_demo again, so it holds none of them, and nothing of "
        f"{application} was touched"
    ) in said
    assert "indexes setup" not in said  # the application's command, not the demo's
    assert _search_indexes(double, f"{application}_demo") == set()
    assert _search_indexes(double, application) == VECTOR


async def test_remove_on_atlas_drops_the_demos_search_indexes(atlas):
    double, env = atlas
    demo_db = f"{env['AGENT_MEMORY_DATABASE']}_demo"
    settings = load_settings(
        mongodb_uri=double.uri, database=demo_db, embedder="fake", search_tier="atlas"
    )
    async with await connect(settings) as conn:  # what a demo run leaves
        await IndexManager(conn, FakeEmbedder().signature).setup(timeout=10, poll_interval=0.001)
        await conn.collection("memories").insert_one({"agent_id": "demo-agent", "user_id": "alice"})
    assert len(_search_indexes(double, demo_db)) == 6
    removed = await _demo_in_a_thread(["demo", "--remove"], env)
    assert removed.exit_code == 0, removed.output
    assert f"removed the demo's database {demo_db} and its search indexes" in removed.output
    assert _search_indexes(double, demo_db) == set()


@pytest.mark.mongoeco
def test_demo_runs_on_the_embedded_default(tmp_path: Path):
    env = {"AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_EMBEDDER": "fake"}
    result = invoke(env)
    assert result.exit_code == 0, result.output
    assert "search tier: plain" in result.output
    assert "stored 8 memories for 2 users" in result.output
    # the agent: told in session 1, formed by the worker, recalled in a new session
    assert "- user_name: Alice" in result.output and "seat: window" in result.output
    session_2 = result.output.split("session 2:")[1]
    assert "From long-term memory: The user lives in Berlin." in session_2
    assert "From long-term memory: The user's name is Alice." in session_2
    bob = session_2.split("bob: Where do I live?")[1].splitlines()[1]
    assert "nothing relevant" in bob and "Berlin" not in bob
    assert "Every result came from the asking user's own memories" in result.output
    # the way to Atlas Search it suggests works: docker-compose.yml requires the root password
    assert "MONGODB_INITDB_ROOT_PASSWORD='choose-one' docker compose up -d" in result.output
    for number in range(1, 6):
        assert part(result.output, number).strip()
    # a second run works on the same data directory (idempotent set-up, same story)
    again = invoke(env)
    assert again.exit_code == 0 and "0 created" in again.output
    for output in (result.output, again.output):
        assert "steakhouse memory: rank 1 -> 2" in output
        assert "resumed at step 2: buy a wedding gift" in output
    # the default database shows nothing of it; the demo's own, until removed, all of it
    stats = invoke_args(["stats", "--json"], env)
    assert stats.exit_code == 0 and json.loads(stats.output)["tenants"] == []
    demo_env = {**env, "AGENT_MEMORY_DATABASE": "agent_memory_demo"}
    users = {
        t["user_id"]
        for t in json.loads(invoke_args(["stats", "--json"], demo_env).output)["tenants"]
    }
    assert {"alice", "bob"} <= users
    assert invoke_args(["demo", "--remove"], env).exit_code == 0
    assert json.loads(invoke_args(["stats", "--json"], demo_env).output)["tenants"] == []


def test_each_search_says_which_ranking_found_its_first_result(shared_run):
    output, _ = shared_run
    search = part(output, 2)
    assert "keyword: BM25 rank, words stemmed, Chinese as character pairs" in search
    captions = re.findall(r"#1 found (.*)", search)
    assert len(captions) == len(QUESTIONS)
    # the explanation ends with each ranking's rank in brackets, printed as text, not markup
    assert re.search(r"why that answer ranked first: .* \[text #\d, vector #\d\]", search)
    # Chinese is matched by character pairs, and Bob's seat by its word, whatever the embedder
    assert "both ways: vector #1, keyword #1 (matched: 喜欢, 欢喝)" in captions[3]
    assert captions[4].endswith("(matched: seat)")


def test_the_caption_names_the_words_matched_once_stemmed():
    assert shared_words("book her flight?", "A window seat on long flights.") == ["flights"]
    assert shared_words("Any dietary restrictions?", "She is vegetarian.") == []
    assert shared_words("谁喜欢喝茶？", "小明是爱丽丝的同事，他喜欢喝绿茶。") == ["喜欢", "欢喝"]


def test_a_rating_changes_what_is_recalled(shared_run):
    output, db = shared_run
    feedback = part(output, 3)
    ratings = [int(r) for r in re.findall(r"alice rates the answer (\d)/5", feedback)]
    # the steakhouse answer is rated down until the agent names her favourite, rated up
    assert ratings[0] == 1 and ratings[-1] == 5 and set(ratings[:-1]) == {1}
    evenings = feedback.split("evening ")[1:]
    assert "steakhouse" in evenings[0].split("alice rates")[0]
    assert "Green Garden" in evenings[-1].split("alice rates")[0]

    moved = re.search(
        r"steakhouse memory: rank (\d) -> (\d), score ([\d.]+) -> ([\d.]+), utility ([-+][\d.]+)",
        feedback,
    )
    assert moved, feedback
    rank_before, rank_after, score_before, score_after, utility = moved.groups()
    assert (int(rank_before), int(rank_after)) == (1, 2)
    assert float(score_after) < float(score_before) and float(utility) < 0
    raised = re.search(
        r"Green Garden memory: rank (\d) -> (\d), score ([\d.]+) -> ([\d.]+)", feedback
    )
    assert raised and raised.group(2) == "1" and float(raised.group(4)) > float(raised.group(3))

    # in the database: the ratings sit on the turns' actions and on the memories they used
    actions = list(
        db.action_logs.find(
            {"agent_id": AGENT, "user_id": "alice", "feedback.rating": {"$exists": True}}
        ).sort("timestamp", 1)
    )
    assert [a["feedback"]["rating"] for a in actions] == ratings
    steakhouse = db.memories.find_one({"agent_id": AGENT, "content": STEAKHOUSE})
    favourite = db.memories.find_one({"agent_id": AGENT, "content": FAVOURITE})
    assert steakhouse["feedback"]["sum"] == -1.0 * (len(ratings) - 1)
    assert (favourite["feedback"]["count"], favourite["feedback"]["sum"]) == (1, 1.0)
    assert steakhouse["_id"] in actions[0]["memory_ids"]
    assert favourite["_id"] in actions[-1]["memory_ids"]


def test_a_task_is_interrupted_and_resumed_from_its_checkpoint(shared_run):
    output, db = shared_run
    working = part(output, 4)
    checkpoint = re.search(r"checkpoint (ckpt_\w+) taken after 2 completed steps", working)
    assert checkpoint, working
    assert "killed" in working
    assert "2 in_progress" in working and "'gift_shortlist'" in working  # left by the crash
    assert f"restored checkpoint {checkpoint.group(1)}: 2 steps completed, context {{}}" in working
    assert "resumed at step 2: buy a wedding gift" in working
    row = next(line for line in working.splitlines() if "2 buy a wedding gift" in line)
    assert re.search(r"in_progress\s*│\s*pending\s*│\s*completed", row), row
    assert f"task completed: 4 of {len(PLAN)} steps" in working

    task = db.tasks.find_one({"agent_id": AGENT, "user_id": "alice"})
    assert task["status"] == "completed" and task["restored_from"] == checkpoint.group(1)
    assert [step["status"] for step in task["plan"]] == ["completed"] * len(PLAN)
    assert "gift_shortlist" not in task["context"]  # the half-done write was rolled back
    assert task["plan"][2]["result"] == {"gift": "a hand-painted azulejo"}


def test_decay_is_applied_once_per_period(shared_run):
    output, db = shared_run
    decay = part(output, 5)
    first = re.search(r"decayed (\d+) memories \((\d+) eligible\)", decay)
    assert first, decay
    decayed, eligible = int(first.group(1)), int(first.group(2))
    assert decayed == eligible > 0
    assert re.search(r"runs again.*decayed 0 memories", decay)
    seat = next(line for line in decay.splitlines() if "window seat" in line)
    assert "day 40" in seat and "(decayed)" not in seat
    # The others were stored on day 0 and not used since; the run's count is explained.
    rows = [line for line in decay.splitlines() if "(decayed)" in line]
    assert rows and all("day 0" in row for row in rows)
    others = decayed - len(rows)
    assert others == 0 or f"the other {others} decayed memor" in decay
    assert re.search(r"0\.500\s*│\s*0\.475 \(decayed\)", decay)

    runs = list(db.decay_runs.find({"agent_id": AGENT}).sort("started_at", 1))
    assert [run["decayed"] for run in runs] == [decayed, 0]
    assert runs[0]["period"] == runs[1]["period"]
    memories = list(db.memories.find({"agent_id": AGENT, "user_id": "alice", "status": "active"}))
    window = [m for m in memories if "window seat" in m["content"]]
    assert window and all(m["importance"] == 0.5 for m in window)
    others = [m for m in memories if "window seat" not in m["content"]]
    assert others and all("decay_period" in m for m in others)


@pytest.mark.mongoeco
@pytest.mark.slow
def test_demo_with_the_default_local_embedder(tmp_path: Path):
    result = invoke({"AGENT_MEMORY_DATA_DIR": str(tmp_path / "data")})
    assert result.exit_code == 0, result.output
    assert "local/multilingual-e5-small-q4 (384 dims" in result.output
    # the multilingual model finds the Chinese memory for a Chinese question, and for an
    # English one with no word in common; a stemmed word ("flight", "flights") matches too
    for question in ("谁喜欢喝茶", "Who drinks green tea?"):
        section = result.output.split(question)[1]
        first_row = next(line for line in section.splitlines() if line.strip().startswith("1 "))
        assert "小明" in first_row
    captions = re.findall(r"#1 found (.*)", part(result.output, 2))
    assert captions[0] == "both ways: vector #1, keyword #1 (matched: flights)"
    alone = "by the vector ranking alone: no word in common with the question"
    assert captions[1] == captions[2] == alone
    # with the README's embedder too, one low rating moves the steakhouse below her favourite
    feedback = part(result.output, 3)
    assert "alice rates the answer 1/5" in feedback
    assert "steakhouse memory: rank 1 -> 2" in feedback
    assert "Green Garden memory: rank 2 -> 1" in feedback
    assert "resumed at step 2: buy a wedding gift" in part(result.output, 4)
    assert re.search(r"decayed [1-9]\d* memories", part(result.output, 5))
    done = re.search(r"Done in ([\d.]+) s\.", result.output)
    assert done and float(done.group(1)) < 60

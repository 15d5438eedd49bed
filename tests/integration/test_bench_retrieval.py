"""The retrieval benchmark at a small size, on the embedded server with the fake embedder."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from agent_memory.bench.retrieval import AGENT_ID, render, run_retrieval, write_outputs
from agent_memory.mongo.indexes import IndexManager
from tests.unit.test_bench_embedders import _dataset


def _two_conversations(path: Path) -> Path:
    _dataset(path)
    one = json.loads(path.read_text())[0]
    other = json.loads(json.dumps(one))
    other["sample_id"] = "conv-2"
    other["conversation"]["session_1"] = [
        {"speaker": "Cy", "dia_id": "D1:1", "text": "My tax forms are due on Friday."},
        {"speaker": "Di", "dia_id": "D1:2", "text": "I bake sourdough bread every Sunday."},
    ]
    other["qa"] = [
        {
            "question": "When are Cy's tax forms due?",
            "answer": "Friday",
            "evidence": ["D1:1"],
            "category": 2,
        },
        {"question": "What does Di bake?", "answer": "bread", "evidence": ["D1:2"], "category": 4},
    ]
    path.write_text(json.dumps([one, other]), encoding="utf-8")
    return path


async def test_recall_through_the_framework_with_baselines_and_outputs(
    connection, embedder, tmp_path
):
    await IndexManager(connection, embedder.signature).setup()
    dataset = _two_conversations(tmp_path / "locomo.json")
    lines: list[str] = []
    run = await run_retrieval(connection, embedder, dataset, context=False, progress=lines.append)
    data = run.as_json()
    assert data["questions"] == 4 and data["conversations"] == 2 and len(lines) == 2
    assert data["skipped_questions_without_evidence"] == 1
    for recall in (data["recall"], *(b["recall"] for b in data["baselines"].values())):
        assert list(recall) == ["1", "5", "10", "25", "50"]
        assert all(0.0 <= value <= 1.0 for value in recall.values())
        assert recall["50"] == 1.0  # a handful of turns: every evidence turn is in the top 50
    # Distinctive words: each question finds its own turn first, through the framework too.
    assert data["recall"]["1"] == 1.0
    assert set(data["per_category"]) == {"temporal", "single-hop"}
    assert data["per_category"]["single-hop"]["questions"] == 3
    # The run's memories are erased again.
    assert await connection.collection("memories").count_documents({"agent_id": AGENT_ID}) == 0

    # Every conversation on its own, with the same recall keys and its baselines.
    per = {entry["sample_id"]: entry for entry in data["per_conversation"]}
    assert len(per) == 2 and "conv-2" in per
    assert sum(entry["questions"] for entry in per.values()) == 4
    for entry in per.values():
        assert list(entry["recall"]) == list(data["recall"])
        assert set(entry["baselines"]) == {"vector", "vector_content", "bm25"}
        for found in entry["baselines"].values():
            assert list(found["recall"]) == list(data["recall"])
        assert isinstance(entry["below_baseline"], list)

    table, image = write_outputs(run, tmp_path / "out" / "retrieval.json")
    assert json.loads((tmp_path / "out" / "retrieval.json").read_text())["questions"] == 4
    text = table.read_text()
    assert "| agent_memory retrieve |" in text
    for sample_id in per:
        assert f"| {sample_id} |" in text
    assert image.read_bytes().startswith(b"\x89PNG")


async def test_every_conversation_as_one_users_history(connection, embedder, tmp_path):
    """--one-user: the conversations are one user's memories (each question's evidence points
    at its own conversation's turns among all of them), and each conversation still has its
    row."""
    from agent_memory.bench.embedders import load_locomo
    from agent_memory.bench.retrieval import merge_conversations

    await IndexManager(connection, embedder.signature).setup()
    dataset = _two_conversations(tmp_path / "locomo.json")
    conversations, _ = load_locomo(dataset)
    merged = merge_conversations(conversations)
    assert len(merged.turns) == sum(len(c.turns) for c in conversations) == 5
    taxes = next(q for q in merged.questions if "tax" in q.text)
    assert [merged.turns[e].text for e in taxes.evidence] == ["My tax forms are due on Friday."]
    run = await run_retrieval(connection, embedder, dataset, context=False, one_user=True)
    data = run.as_json()
    assert data["questions"] == 4 and data["recall"]["1"] == 1.0
    per = {entry["sample_id"]: entry for entry in data["per_conversation"]}
    assert set(per) == {conversations[0].sample_id, "conv-2"}
    assert per["conv-2"]["questions"] == 2
    assert await connection.collection("memories").count_documents({"agent_id": AGENT_ID}) == 0


def test_a_conversation_below_a_baseline_is_marked(tmp_path):
    from agent_memory.bench.embedders import LoadReport
    from agent_memory.bench.retrieval import RetrievalRun, render

    run = RetrievalRun("d.json", "fake", "plain", LoadReport())
    run.sample_ids = ["a", "b"]
    for sample, mine, theirs in (("a", 1, 1), ("b", 30, 2)):
        run.framework.add(sample, 4, np.array([mine]))
        for baseline in (run.vector, run.vector_content, run.bm25):
            baseline.add(sample, 4, np.array([theirs]))
    data = run.as_json()
    below = {entry["sample_id"]: entry["below_baseline"] for entry in data["per_conversation"]}
    assert below["a"] == []
    assert "bm25 R@5" in below["b"] and "vector R@10" in below["b"]
    table = render(run)
    assert "| a | 1 |" in table and "| b | 1 |" in table and "**bm25 R@10" in table


def _moved(path: Path, *, second_date: str = "10:00 am on 1 June, 2023") -> Path:
    """One user who lived in Dublin (March) and then in Porto (June), asked where they live."""
    sample = {
        "sample_id": "moved",
        "conversation": {
            "speaker_a": "Eve",
            "speaker_b": "Assistant",
            "session_1_date_time": "9:00 am on 1 March, 2023",
            "session_1": [{"speaker": "Eve", "dia_id": "D1:1", "text": "I live in Dublin."}],
            "session_2_date_time": second_date,
            "session_2": [
                {"speaker": "Eve", "dia_id": "D2:1", "text": "I live in Porto."},
                {"speaker": "Assistant", "dia_id": "D2:2", "text": "Noted, welcome to Porto."},
            ],
        },
        "qa": [
            {
                "question": "Where do I live?",
                "answer": "Porto",
                "evidence": ["D2:1"],
                "category": 6,
                "superseded": ["D1:1"],
            }
        ],
    }
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


async def test_turns_are_stored_at_their_sessions_dates_and_asked_after_the_last(
    connection, embedder, tmp_path, monkeypatch
):
    """Dated (the default): each turn's event time is its session's date (a second a turn
    after it), the questions are asked a day after the last session without recording
    accesses; questions about a changed fact are counted. --at-once stores everything at one
    moment, as earlier runs did."""
    from agent_memory.bench.retrieval import LongTermMemory

    await IndexManager(connection, embedder.signature).setup()
    dataset = _moved(tmp_path / "moved.json")
    stored: list[list] = []
    asked: list[dict] = []
    store_many, retrieve = LongTermMemory.store_many, LongTermMemory.retrieve

    async def spy_store(self, tenant, items, **kwargs):
        stored.append(list(items))
        return await store_many(self, tenant, items, **kwargs)

    async def spy_retrieve(self, tenant, query, **kwargs):
        asked.append(kwargs)
        return await retrieve(self, tenant, query, **kwargs)

    monkeypatch.setattr(LongTermMemory, "store_many", spy_store)
    monkeypatch.setattr(LongTermMemory, "retrieve", spy_retrieve)
    data = (await run_retrieval(connection, embedder, dataset, context=False)).as_json()
    june = datetime(2023, 6, 1, 10, tzinfo=UTC)
    assert [item.occurred_at for item in stored[0]] == [
        datetime(2023, 3, 1, 9, tzinfo=UTC),
        june + timedelta(seconds=1),
        june + timedelta(seconds=2),
    ]
    assert asked[0]["now"] == june + timedelta(days=1, seconds=2)
    assert asked[0]["record_access"] is False
    assert data["time"].startswith("each turn stored at its session's date")
    assert data["undated_conversations"] == 0
    # The question about the changed fact is counted for the framework and every baseline.
    assert set(data["changed_facts"]) == {"agent_memory", "vector", "vector_content", "bm25"}
    for found in data["changed_facts"].values():
        assert found["questions"] == 1
        assert found["stale_first"] <= found["stale_above_current"] <= 1
    assert "| changed facts | questions |" in render(run_of(data))

    stored.clear()
    asked.clear()
    data = (
        await run_retrieval(connection, embedder, dataset, context=False, dated=False)
    ).as_json()
    assert [item.occurred_at for item in stored[0]] == [None, None, None]
    assert asked[0]["record_access"] is True
    assert data["time"].startswith("everything stored at one moment")

    # A date that cannot be read: that conversation is stored at one moment, and counted.
    stored.clear()
    dataset = _moved(tmp_path / "undated.json", second_date="sometime in June")
    data = (await run_retrieval(connection, embedder, dataset, context=False)).as_json()
    assert [item.occurred_at for item in stored[0]] == [None, None, None]
    assert data["undated_conversations"] == 1


def run_of(data: dict) -> object:
    """A run whose rendering shows ``data``'s changed facts (render reads ``as_json``)."""

    class Shown:
        def as_json(self) -> dict:
            return data

    return Shown()


def test_an_earlier_value_above_the_current_one_is_counted():
    from agent_memory.bench.embedders import LoadReport
    from agent_memory.bench.retrieval import _MISSED, RetrievalRun

    run = RetrievalRun("d.json", "fake", "plain", LoadReport())
    run.sample_ids = ["a", "b"]
    for sample, current, earlier in (
        ("a", [3], [1, 9]),  # the earlier value first
        ("a", [2, 6], [5]),  # the current one above it
        ("b", [_MISSED], [7]),  # the current one not found, the earlier one found
        ("b", [4], [_MISSED]),  # the earlier one not found
    ):
        for ranks in (run.framework, *run.baselines().values()):
            ranks.add(sample, 6, np.array(current), np.array(earlier))
    run.framework.add("a", 4, np.array([1]))  # no earlier value: not a changed fact
    run.framework.add("a", 4, np.array([1]), np.array([], dtype=np.int64))
    assert run.framework.stale() == {"questions": 4, "stale_above_current": 2, "stale_first": 1}
    assert run.framework.of("b").stale() == {
        "questions": 2,
        "stale_above_current": 1,
        "stale_first": 0,
    }
    # Each conversation's count is in the result too (a set of several languages).
    per = {entry["sample_id"]: entry["changed_facts"] for entry in run.per_conversation()}
    assert per["a"] == {"questions": 2, "stale_above_current": 1, "stale_first": 1}
    assert per["b"] == run.framework.of("b").stale()


async def test_turns_can_carry_their_neighbours_as_context(connection, embedder, tmp_path):
    await IndexManager(connection, embedder.signature).setup()
    dataset = _two_conversations(tmp_path / "locomo.json")
    data = (await run_retrieval(connection, embedder, dataset, context=True)).as_json()
    assert data["memory_context"].startswith("neighbouring turns") and data["questions"] == 4
    assert "the vector reads the content alone" in data["memory_context"]
    assert data["recall"]["5"] == 1.0


@pytest.mark.mongoeco
async def test_latency_benchmark_runs_both_flows_at_a_small_size():
    from agent_memory.bench.latency import LatencySettings, render_latency, run_latency

    result = await run_latency(
        LatencySettings(turns=2, db_rtt_ms=1, embed_ms=20, ttft_ms=30, chat_ms=60)
    )
    for flow in ("agent", "sequential"):
        data = result[flow]
        assert 0 < data["first_token_ms"]["p50"] <= data["committed_ms"]["p50"]
        assert data["sequential_db_round_trips"] <= data["db_commands_per_turn"]
    agent, sequential = result["agent"], result["sequential"]
    # The agent answers before it commits and leaves formation to the background; the
    # blueprint waits for everything, fact extraction included.
    assert agent["provider_calls_per_turn"] < sequential["provider_calls_per_turn"]
    assert agent["sequential_db_round_trips"] < sequential["sequential_db_round_trips"]
    assert agent["background_provider_calls_per_turn"] > 0
    assert sequential["committed_ms"]["p50"] >= 60 * 2  # two chat calls, one after the other
    assert "| time to committed turn" in render_latency(result)


def test_sequential_chain_counts_only_non_overlapping_commands():
    from agent_memory.bench.latency import sequential_chain

    assert sequential_chain([]) == 0
    assert sequential_chain([(0, 1), (1, 2), (2, 3)]) == 3
    assert sequential_chain([(0, 2), (0.5, 1.5), (2, 3)]) == 2  # two overlap: one wait


async def test_concurrency_benchmark_finds_nothing_lost_or_crossed(connection, embedder):
    from agent_memory.bench.concurrency import (
        ConcurrencySettings,
        render_concurrency,
        run_concurrency,
    )

    await IndexManager(connection, embedder.signature).setup()
    result = await run_concurrency(
        connection, embedder, ConcurrencySettings(sessions=6, turns=3, chat_seconds=0.01)
    )
    assert result["ok"], result
    assert result["turns"] == 18 and result["errors"] == 0
    assert result["lost_messages"] == result["crossed"] == result["missing_actions"] == 0
    assert result["prompts_checked"] == 18  # every turn's prompt was checked for other users
    assert "nothing lost or crossed" in render_concurrency(result)


def test_a_crossed_read_is_counted():
    from agent_memory.bench.concurrency import crossed_reads

    own, other = "mk" + "a" * 12, "mk" + "b" * 12
    assert crossed_reads([(own, f"memory: code word {own}")]) == 0
    assert crossed_reads([(own, f"memory: code word {own}, and {other}")]) == 1


async def test_speed_benchmark_measures_ingest_and_retrieve(connection, embedder):
    from agent_memory.bench.speed import render_speed, run_speed

    await IndexManager(connection, embedder.signature).setup()
    data = (await run_speed(connection, embedder, memories=30, queries=5, batch=10)).as_json()
    assert data["memories"] == 30 and data["ingest_per_second"] > 0
    for key in ("retrieve_ms", "retrieve_with_vector_ms"):
        assert 0 < data[key]["p50"] <= data[key]["p95"]
    assert data["found_across_instances"] is True
    assert await connection.collection("memories").count_documents({}) == 0
    assert "| retrieve, vector given" in render_speed(data)
    assert data["cold_retrieve_ms"] > 0 and data["rss_mb"] > 0
    assert 0 < data["numpy_exact_top10_ms"]["p50"] <= data["numpy_exact_top10_ms"]["p95"]


async def test_speed_benchmark_measures_a_curve_of_sizes(connection, embedder, tmp_path):
    from agent_memory.bench.speed import plot_speed, render_speed, run_speed_sizes

    await IndexManager(connection, embedder.signature).setup()
    runs = await run_speed_sizes(connection, embedder, [12, 36], queries=3, batch=12)
    assert [run.memories for run in runs] == [12, 36]
    data = {"runs": [run.as_json() for run in runs], "commit": "abc1234"}
    table = render_speed(data)
    assert "| 12 |" in table and "| 36 |" in table and "commit abc1234" in table
    assert "found by the next retrieve at every size" in table
    plot_speed(data, tmp_path / "speed.png")
    assert (tmp_path / "speed.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert await connection.collection("memories").count_documents({}) == 0


def test_speed_sizes_are_read_from_one_option():
    import typer

    from agent_memory.cli.bench import _sizes

    assert _sizes("1000") == [1000]
    assert _sizes("1000, 10_000,100000") == [1000, 10_000, 100_000]
    for bad in ("", "0", "ten", "1000,,", "-5", "2000000", "1e3"):
        with pytest.raises(typer.BadParameter, match="one size or several"):
            _sizes(bad)


async def test_a_memory_kept_for_turns_with_the_same_text_finds_each_of_them(
    connection, embedder, tmp_path
):
    """Consolidation keeps one memory for two turns that read the same ("Ann: I adopted a
    puppy called Rex." in two sessions): evidence on either turn is found where the memory is,
    not only on the turn stored last."""
    await IndexManager(connection, embedder.signature).setup()
    dataset = _dataset(tmp_path / "locomo.json")
    samples = json.loads(dataset.read_text())
    conversation = samples[0]["conversation"]
    conversation["session_2_date_time"] = "2:00 pm on 9 May, 2023"
    conversation["session_2"] = [
        {"speaker": "Ann", "dia_id": "D2:1", "text": "I adopted a puppy called Rex."}
    ]
    samples[0]["qa"] = [
        {"question": "What is the puppy called?", "answer": "Rex", "evidence": ["D1:1"],
         "category": 4},
    ]  # fmt: skip
    dataset.write_text(json.dumps(samples), encoding="utf-8")
    data = (await run_retrieval(connection, embedder, dataset, context=False)).as_json()
    assert data["questions"] == 1
    assert data["recall"]["1"] == 1.0


async def test_users_benchmark_measures_cold_and_warm_users_within_the_budget(small_budget):
    from agent_memory.bench.users import render_users, run_users

    connection, embedder = small_budget
    data = (
        await run_users(connection, embedder, users=6, memories=30, queries=8, batch=10)
    ).as_json()
    assert data["users"] == 6 and data["ingest_per_second"] > 0
    assert data["retrieve_cold_ms"]["count"] >= 1
    assert data["retrieve_cold_ms"]["count"] + data["retrieve_warm_ms"]["count"] == 16
    assert data["kept_mb"] <= data["budget_mb"] and data["rss_mb"]["end"] > 0
    assert "| retrieve, cold user" in render_users(data)
    assert await connection.collection("memories").count_documents({}) == 0


@pytest.fixture
async def small_budget(settings, embedder):
    from agent_memory.mongo.connection import connect

    connection = await connect(settings.model_copy(update={"search_cache_mb": 8}))
    try:
        await IndexManager(connection, embedder.signature).setup()
        yield connection, embedder
    finally:
        await connection.client.drop_database(settings.database)
        await connection.close()

"""The prompt-token benchmark at a small size: a LoCoMo-format conversation the test builds,
replayed through the agent on the embedded server with the fake embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_memory.bench.embedders import load_locomo
from agent_memory.bench.tokens import (
    AGENT_ID,
    TokenSettings,
    exchanges,
    render_tokens,
    run_tokens,
    write_outputs,
)
from agent_memory.errors import InvalidInputError
from agent_memory.mongo.indexes import IndexManager

TOPICS = [
    "sourdough", "kayaking", "violin", "astronomy", "pottery", "marathon", "chess", "beekeeping",
    "origami", "salsa", "woodworking", "birdwatching", "calligraphy", "surfing", "knitting",
    "fencing", "gardening", "skydiving", "photography", "juggling", "sailing", "archery",
    "baking", "climbing",
]  # fmt: skip


def _dataset(path: Path, *, sessions: int = 3, turns: int = 20) -> Path:
    """One conversation; every turn names a topic of its own, so a question about it has
    exactly one evidence turn. Session 2 starts with the other speaker."""
    conversation: dict = {"speaker_a": "Ann", "speaker_b": "Ben"}
    qa = []
    for s in range(1, sessions + 1):
        conversation[f"session_{s}_date_time"] = f"1:00 pm on {s} May, 2023"
        speakers = ("Ben", "Ann") if s == 2 else ("Ann", "Ben")
        rows = []
        for t in range(1, turns + 1):
            topic = TOPICS[((s - 1) * turns + t - 1) % len(TOPICS)]
            speaker = speakers[(t - 1) % 2]
            code = f"{s}{t:02d}"
            rows.append(
                {
                    "speaker": speaker,
                    "dia_id": f"D{s}:{t}",
                    "text": f"{speaker} tried {topic} {code} for the first time and liked it.",
                }
            )
            if s == 1 and t <= 4:
                qa.append(
                    {
                        "question": f"When was the {topic} {code} outing?",
                        "answer": "1 May",
                        "evidence": [f"D{s}:{t}"],
                        "category": 4,
                    }
                )
        conversation[f"session_{s}"] = rows
    qa.append({"question": "Who paints?", "answer": "nobody", "evidence": [], "category": 5})
    path.write_text(
        json.dumps([{"sample_id": "conv-t", "conversation": conversation, "qa": qa}]),
        encoding="utf-8",
    )
    return path


def test_exchanges_pair_each_query_with_the_other_speakers_answer(tmp_path):
    path = tmp_path / "d.json"
    _dataset(path, sessions=2, turns=5)
    data = json.loads(path.read_text())
    # Two turns in a row by the same speaker form one query; a session can end on a query.
    data[0]["conversation"]["session_1"][1]["speaker"] = "Ann"
    path.write_text(json.dumps(data))
    (conversation,), _ = load_locomo(path)
    plan = exchanges(conversation)
    assert [(e.session, e.turns) for e in plan] == [
        (0, (0, 1, 2, 3)),
        (0, (4,)),
        (1, (5, 6)),
        (1, (7, 8)),
        (1, (9,)),
    ]
    assert plan[0].query.count("\n") == 2 and plan[0].query.startswith(
        "[1:00 pm on 1 May, 2023] Ann:"
    )
    assert plan[2].query.startswith("[1:00 pm on 2 May, 2023] Ben:")  # session 2: Ben asks
    assert plan[1].reply == "" and plan[4].reply == ""
    # Every turn is carried exactly once, in order.
    assert [i for e in plan for i in e.turns] == list(range(len(conversation.turns)))


async def test_replay_stays_in_budget_saves_tokens_and_brings_evidence(
    connection, embedder, tmp_path
):
    await IndexManager(connection, embedder.signature).setup()
    dataset = _dataset(tmp_path / "locomo.json")
    lines: list[str] = []
    data = await run_tokens(connection, embedder, dataset, progress=lines.append)

    assert data["conversation"] == "conv-t" and data["conversation_turns"] == 60
    assert data["agent_turns"] == 30 and data["sessions"] == 3 and len(lines) == 3
    rows = data["per_turn"]
    assert [row["turn"] for row in rows] == list(range(1, 31))
    history = [row["full_history_tokens"] for row in rows]
    assert history == sorted(history) and history[-1] > 2 * history[0]
    # The prompt stays bounded while the full history grows.
    assert data["over_budget"] == 0
    assert data["prompt_tokens"]["max"] <= data["settings"]["prompt_budget_tokens"]
    assert data["last_turn"]["prompt_tokens"] < data["last_turn"]["full_history_tokens"]
    assert 0 < data["last_turn"]["reduction"] < 1
    # Every turn became one memory through the formation worker, once (no repeats).
    assert data["memories_formed"] == 60
    assert data["model_calls"]["extractions"] == 3
    assert data["model_calls"]["summaries"] >= 1
    assert data["model_calls"]["answers"] == 30 + data["questions"]
    # Later turns carry memories from earlier sessions.
    assert any(row["memories"] > 0 for row in rows if row["session"] > 1)
    assert all(row["messages"] <= 10 for row in rows)
    # Questions: the one without evidence is skipped; distinctive words find their turn.
    assert data["questions"] == 4
    assert data["retrieval_recall"]["10"] == 1.0
    assert data["evidence_in_prompt"] >= data["retrieval_recall"]["10"]
    assert data["per_category"]["single-hop"]["questions"] == 4
    # The run's data is erased again.
    assert await connection.collection("memories").count_documents({"agent_id": AGENT_ID}) == 0
    assert await connection.collection("messages").count_documents({"agent_id": AGENT_ID}) == 0

    table, image = write_outputs(data, tmp_path / "out" / "tokens.json")
    assert json.loads((tmp_path / "out" / "tokens.json").read_text())["agent_turns"] == 30
    assert table.read_text() == render_tokens(data)
    assert "| agent turn | session |" in table.read_text()
    assert image.read_bytes().startswith(b"\x89PNG")


async def test_a_tight_budget_is_kept_and_cuts_what_goes_in(connection, embedder, tmp_path):
    await IndexManager(connection, embedder.signature).setup()
    dataset = _dataset(tmp_path / "locomo.json", sessions=2, turns=12)
    wide = await run_tokens(connection, embedder, dataset, TokenSettings(questions=1))
    tight = await run_tokens(
        connection, embedder, dataset, TokenSettings(budget_tokens=2000, memories=40, questions=1)
    )
    assert tight["settings"]["prompt_budget_tokens"] == 2000 - 1024
    assert tight["over_budget"] == 0 and tight["prompt_tokens"]["max"] <= 976
    assert wide["prompt_tokens"]["max"] > tight["prompt_tokens"]["max"]


async def test_unknown_conversation_is_a_clear_error(connection, embedder, tmp_path):
    dataset = _dataset(tmp_path / "locomo.json", sessions=1, turns=2)
    with pytest.raises(InvalidInputError, match="no conversation 'conv-x'"):
        await run_tokens(connection, embedder, dataset, TokenSettings(conversation="conv-x"))

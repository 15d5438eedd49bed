"""The embedder benchmark on a small dataset in LoCoMo's format (the real one stays outside)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_memory.bench.embedders import load_locomo, main

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo10.json"


def _dataset(path: Path) -> Path:
    sample = {
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Ben",
            "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy called Rex."},
                {
                    "speaker": "Ben",
                    "dia_id": "D1:2",
                    "text": "I am training for a marathon in Oslo.",
                },
                {"speaker": "Ann", "dia_id": "D1:3", "text": "My sister paints watercolours."},
            ],
        },
        "qa": [
            {
                "question": "What is the name of Ann's puppy?",
                "answer": "Rex",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "Where is Ben's marathon?",
                "answer": "Oslo",
                "evidence": ["D:1:2"],
                "category": 4,
            },
            {"question": "Who paints?", "answer": "Ann's sister", "evidence": [], "category": 5},
        ],
    }
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def test_loader_repairs_ids_and_skips_questions_without_evidence(tmp_path):
    conversations, report = load_locomo(_dataset(tmp_path / "d.json"))
    assert report.questions == 3 and report.without_evidence == 1 and report.repaired_ids == 1
    # evidence points at turn positions; "D:1:2" was repaired to the second turn
    assert [q.evidence for q in conversations[0].questions] == [(0,), (1,)]


def test_run_prints_tables_and_writes_json(tmp_path, capsys):
    out = tmp_path / "result.json"
    assert (
        main(
            [
                "--dataset",
                str(_dataset(tmp_path / "d.json")),
                "--embedders",
                "fake",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "| bm25 |" in printed and "| fake |" in printed
    result = json.loads(out.read_text())
    assert result["questions"] == 3 and result["skipped_without_evidence"] == 1
    by_method = {(r["method"], r["variant"]): r for r in result["results"]}
    assert by_method[("bm25", "turn")]["overall"]["questions"] == 2
    # Both questions share a content word only with their evidence turn.
    assert by_method[("bm25", "turn")]["overall"]["any"]["1"] == 1.0
    assert by_method[("fake", "turn")]["overall"]["any"]["1"] == 1.0


@pytest.mark.skipif(not SHARED.exists(), reason="the LoCoMo data is not beside the repository")
def test_runs_on_the_real_dataset_for_one_conversation(tmp_path):
    out = tmp_path / "r.json"
    assert (
        main(["--dataset", str(SHARED), "--embedders", "fake", "--limit", "1", "--out", str(out)])
        == 0
    )
    result = json.loads(out.read_text())
    assert result["conversations"] == 1 and result["questions"] > 100
    bm25 = next(r for r in result["results"] if r["method"] == "bm25" and r["variant"] == "turn")
    assert 0.3 < bm25["overall"]["any"]["10"] <= 1.0


def test_routing_calibration_separates_evidence_from_other_conversations(tmp_path, capsys):
    from agent_memory.bench.routing import main as calibrate_main

    path = _dataset(tmp_path / "d.json")
    one = json.loads(path.read_text())[0]
    other = json.loads(json.dumps(one))
    for turn in other["conversation"]["session_1"]:
        turn["text"] = "Quarterly tax forms are due for the accounting office."
    for qa in other["qa"]:
        qa["question"] = "When are the tax forms due?"
    path.write_text(json.dumps([one, other]), encoding="utf-8")
    assert calibrate_main(["--dataset", str(path), "--embedder", "fake"]) == 0
    out = capsys.readouterr().out
    result = json.loads(out[: out.rindex("}") + 1])
    assert result["questions"] == 4 and 0 < result["threshold"] < 1
    assert result["relevant_percentiles"]["50"] > result["irrelevant_percentiles"]["50"]
    assert "strong_match_similarity =" in out
    assert calibrate_main(["--dataset", str(tmp_path / "missing.json")]) == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "cannot read"),
        (b"\xff\xfe\x00", "cannot read"),
        ('{"x": 1}', "expected a list of samples"),
        ('[{"qa": []}]', "KeyError 'conversation'"),
        ('[{"conversation": {"session_1": [{"speaker": "a"}]}, "qa": []}]', "KeyError 'dia_id'"),
        ('[{"conversation": {"session_1": 5}, "qa": []}]', "TypeError"),
    ],
)
def test_a_file_that_is_not_locomo_is_one_clear_error(tmp_path, content, message):
    from agent_memory.errors import InvalidInputError

    path = tmp_path / "data.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(InvalidInputError, match=message):
        load_locomo(path)

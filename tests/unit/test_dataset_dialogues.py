"""The dialogues evaluation set (``datasets/dialogues``): reproducible from its generator, read
by the LoCoMo loader without repairs, and shaped as its README says."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections import Counter
from datetime import date, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agent_memory.bench.embedders import CATEGORIES, load_locomo

HERE = Path(__file__).resolve().parents[2] / "datasets" / "dialogues"
DATASET = HERE / "dialogues.json"
MIX = {4: 0.40, 2: 0.15, 1: 0.10, 6: 0.20, 7: 0.15}
_HAN = re.compile(r"[\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{3,}")
MONTHS_ES = [
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
]
_SPANISH_DATE = re.compile(
    r"(?:(?:el fin de semana|la semana) anterior al )?(\d{1,2}) de ("
    + "|".join(MONTHS_ES)
    + r") de (\d{4})"
)
#: Spanish punctuation and accents, or a Spanish function word.
_SPANISH = re.compile(
    r"[¿¡áéíóúñ]|\b(?:de|del|al|que|el|la|los|las|en|y|mi|me|te|se|si|es|para|con|por|lo|un|una)\b"
)
#: English words that are not Spanish ones too ("has", "me" and "no" are both).
_ENGLISH = re.compile(
    r"\b(?:the|and|you|your|what|with|this|that|when|where|which|how|would|could|should|"
    r"about|there|have|been|from|they|their|it's|i'm|don't|thanks|please|just|my)\b"
)


def _stats() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dialogues_stats", HERE / "stats.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


stats = _stats()


@pytest.fixture(scope="module")
def samples() -> list[dict[str, Any]]:
    return json.loads(DATASET.read_text(encoding="utf-8"))


def _sessions(sample: dict[str, Any]) -> list[tuple[int, str, list[dict[str, str]]]]:
    conversation = sample["conversation"]
    numbers = sorted(
        int(m[1]) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key))
    )
    return [
        (n, conversation[f"session_{n}_date_time"], conversation[f"session_{n}"]) for n in numbers
    ]


def _turns(sample: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {turn["dia_id"]: turn for _, _, turns in _sessions(sample) for turn in turns}


def _session_of(dia_id: str) -> int:
    return int(dia_id[1:].split(":")[0])


def _questions(samples: list[dict[str, Any]], category: int) -> list[tuple[dict, dict]]:
    return [(s, qa) for s in samples for qa in s["qa"] if qa["category"] == category]


def _language(sample: dict[str, Any]) -> str:
    return sample["sample_id"].split("-")[1]


def test_the_committed_file_is_what_the_generator_writes(tmp_path):
    out = tmp_path / "dialogues.json"
    subprocess.run(
        [sys.executable, str(HERE / "generate.py"), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    assert out.read_bytes() == DATASET.read_bytes(), (
        "datasets/dialogues/dialogues.json is out of date: run "
        "python datasets/dialogues/generate.py --out datasets/dialogues/dialogues.json"
    )


def test_the_loader_resolves_every_question_without_repairs(samples):
    conversations, report = load_locomo(DATASET)
    assert len(conversations) == len(samples) >= 12
    assert report.questions == sum(len(s["qa"]) for s in samples)
    assert (report.without_evidence, report.unresolvable) == (0, 0)
    assert (report.unknown_ids, report.repaired_ids) == (0, 0)
    for conversation, sample in zip(conversations, samples, strict=True):
        assert len(conversation.questions) == len(sample["qa"])
        assert all(q.evidence for q in conversation.questions)
        # A changed fact's earlier statement is read as its stale turn; every turn has a date.
        assert [bool(q.stale) for q in conversation.questions] == [
            qa["category"] == 6 for qa in sample["qa"]
        ]
        assert all(turn.when is not None for turn in conversation.turns)
        assert 150 <= len(conversation.turns) <= 300
        assert 30 <= len(conversation.questions) <= 50


def test_the_harness_names_the_new_categories():
    assert CATEGORIES[6] == "changed-fact" and CATEGORIES[7] == "other-people"


def test_dia_ids_are_unique_well_formed_and_sessions_in_date_order(samples):
    for sample in samples:
        conversation = sample["conversation"]
        assert conversation["speaker_b"] == "Assistant"
        sessions = _sessions(sample)
        assert [n for n, _, _ in sessions] == list(range(1, len(sessions) + 1))
        assert 8 <= len(sessions) <= 15
        stamps = [datetime.strptime(s, "%I:%M %p on %d %B, %Y") for _, s, _ in sessions]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
        assert (stamps[-1] - stamps[0]).days >= 60, "sessions should spread over months"
        seen = set()
        for number, _, turns in sessions:
            assert [t["dia_id"] for t in turns] == [
                f"D{number}:{i}" for i in range(1, len(turns) + 1)
            ]
            # user, then assistant, pair after pair
            speakers = [t["speaker"] for t in turns]
            assert speakers == [conversation["speaker_a"], "Assistant"] * (len(turns) // 2)
            assert all(t["text"].strip() for t in turns)
            seen.update(t["dia_id"] for t in turns)
        assert len(seen) == sum(len(t) for _, _, t in sessions)


def test_the_category_mix_is_the_one_described(samples):
    counts = Counter(qa["category"] for s in samples for qa in s["qa"])
    total = sum(counts.values())
    assert set(counts) == set(MIX)
    for category, share in MIX.items():
        assert abs(counts[category] / total - share) < 0.03, (category, counts[category], total)
    for sample in samples:
        assert set(Counter(qa["category"] for qa in sample["qa"])) == set(MIX)


def test_both_languages_and_mixed_conversations_are_present(samples):
    languages = Counter(_language(s) for s in samples)
    # English and Chinese shares among the conversations in those two languages and their mix
    # (the Spanish ones have their own test below)
    english_and_chinese = len(samples) - languages["es"]
    assert 0.4 <= languages["en"] / english_and_chinese <= 0.6
    assert 0.25 <= languages["zh"] / english_and_chinese <= 0.45
    assert languages["mix"] >= 2
    code_mixing = switching = asked_both_ways = False
    for sample in samples:
        user = sample["conversation"]["speaker_a"]
        texts = [t["text"] for t in _turns(sample).values() if t["speaker"] == user]
        chinese = [t for t in texts if _HAN.search(t)]
        questions = [qa["question"] for qa in sample["qa"]]
        if _language(sample) == "en":
            assert not chinese and not any(_HAN.search(q) for q in questions)
        elif _language(sample) == "zh":
            assert len(chinese) == len(texts) and all(_HAN.search(q) for q in questions)
        elif _language(sample) == "es":
            assert not chinese and not any(_HAN.search(q) for q in questions)
        else:
            both = [t for t in chinese if _LATIN_WORD.search(t)]
            code_mixing |= len(both) >= 0.25 * len(texts)
            switching |= 0.2 <= len(chinese) / len(texts) <= 0.8
            asked_both_ways |= 0 < sum(bool(_HAN.search(q)) for q in questions) < len(questions)
    assert code_mixing and switching and asked_both_ways


def test_evidence_is_the_users_turn_and_holds_the_answer(samples):
    for sample in samples:
        turns = _turns(sample)
        for qa in sample["qa"]:
            said = [turns[i] for i in qa["evidence"]]
            assert all(t["speaker"] == sample["conversation"]["speaker_a"] for t in said)
            if qa["category"] in (4, 6, 7):
                assert len(said) == 1 and qa["answer"] in said[0]["text"], qa
            elif qa["category"] == 1:
                assert qa["answer"] in said[-1]["text"], qa


def test_the_assistant_does_not_repeat_the_fact_it_is_told(samples):
    # Otherwise the reply right after the evidence would be a second, unlisted evidence turn.
    for sample in samples:
        turns = _turns(sample)
        for qa in sample["qa"]:
            if qa["category"] not in (4, 6, 7) or len(qa["answer"]) < 4:
                continue
            (evidence,) = qa["evidence"]
            session, index = evidence[1:].split(":")
            reply = turns[f"D{session}:{int(index) + 1}"]
            assert reply["speaker"] == "Assistant"
            assert qa["answer"] not in reply["text"], (qa, reply)


def test_a_changed_fact_points_only_at_the_later_turn(samples):
    questions = _questions(samples, 6)
    assert questions
    for sample, qa in questions:
        turns = _turns(sample)
        (later,), (earlier,) = qa["evidence"], qa["superseded"]
        assert _session_of(earlier) < _session_of(later)
        assert qa["previous_answer"] != qa["answer"]
        assert qa["previous_answer"] in turns[earlier]["text"]
        assert qa["answer"] in turns[later]["text"]
        assert qa["answer"] not in turns[earlier]["text"]
        assert turns[earlier]["speaker"] == sample["conversation"]["speaker_a"]


def test_other_peoples_facts_and_the_users_are_each_others_distractors(samples):
    questions = _questions(samples, 7)
    assert questions
    pairs = set()
    for sample, qa in questions:
        turns = _turns(sample)
        (evidence,), (distractor,) = qa["evidence"], qa["distractors"]
        assert evidence != distractor
        assert qa["answer"] not in turns[distractor]["text"]
        assert turns[distractor]["speaker"] == sample["conversation"]["speaker_a"]
        pairs.add((sample["sample_id"], evidence, distractor))
    # both ways: asked about the user with the other person as distractor, and the reverse
    mirrored = sum((s, d, e) in pairs for s, e, d in pairs)
    assert mirrored >= 0.6 * len(pairs)


def test_multi_hop_questions_need_two_turns_from_different_sessions(samples):
    questions = _questions(samples, 1)
    assert questions
    for _, qa in questions:
        first, second = qa["evidence"]
        assert _session_of(first) < _session_of(second)


def _answer_date(answer: str) -> tuple[date, bool]:
    """The date in a temporal answer, and whether the answer is "the week/weekend before"."""
    if m := re.search(r"(\d{4})年(\d{1,2})月(\d{1,2})日", answer):
        day = date(int(m[1]), int(m[2]), int(m[3]))
    elif m := _SPANISH_DATE.search(answer):
        day = date(int(m[3]), MONTHS_ES.index(m[2]) + 1, int(m[1]))
    else:
        day = datetime.strptime(re.search(r"\d{1,2} \w+ \d{4}", answer)[0], "%d %B %Y").date()
    before = ("before", "之前", "前一周", "anterior al")
    return day, any(word in answer for word in before)


def test_temporal_answers_are_dates_just_before_the_session(samples):
    questions = _questions(samples, 2)
    assert questions
    for sample, qa in questions:
        (evidence,) = qa["evidence"]
        stamp = sample["conversation"][f"session_{_session_of(evidence)}_date_time"]
        session_day = datetime.strptime(stamp, "%I:%M %p on %d %B, %Y").date()
        day, relative = _answer_date(qa["answer"])
        if relative:
            assert day == session_day, qa
        else:
            assert timedelta(0) <= session_day - day <= timedelta(days=7), qa


def test_the_overlap_measure():
    assert stats.overlap("What does the user do for a living?", ["I work as a nurse."]) == 0
    assert stats.overlap("Where is Lisbon?", ["Lisbon is lovely"]) == 1
    assert stats.overlap("吃什么东西会让我身体出问题？", ["我对花生过敏"]) == 0
    assert stats.overlap("对花生过敏", ["我对花生过敏"]) == 1
    assert stats.content_tokens("我们的什么") == set()  # only function characters
    assert stats.overlap("the and of", ["anything"]) is None
    # Spanish: accented words kept whole, Spanish stop words dropped
    assert stats.content_tokens("¿Dónde vivo en la actualidad?", "es") == {"vivo", "actualidad"}
    assert stats.overlap("¿A qué me dedico?", ["Trabajo en enfermería"], "es") == 0
    assert stats.overlap("¿Qué pasó en Málaga?", ["Málaga es preciosa"], "es") == 0.5
    assert stats.overlap("¿Qué es lo que?", ["nada"], "es") is None


def test_questions_do_not_repeat_the_words_of_their_evidence(samples):
    mean = stats.measure(samples)["overlap"]
    assert mean[("all", None)] < 0.15
    for group in ("en", "zh", "mix", "es"):
        assert mean[(group, None)] < 0.15, group
    assert mean[("es", 4)] < 0.05 and mean[("es", 6)] < 0.05
    # the paraphrased and the changed facts above all
    assert mean[("all", 4)] < 0.05 and mean[("all", 6)] < 0.05


def test_the_readme_shows_the_current_figures(samples):
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    assert stats.render(samples) in readme, (
        "datasets/dialogues/README.md is out of date: run "
        "python datasets/dialogues/stats.py --write-readme"
    )


def test_the_spanish_conversations_are_written_in_spanish(samples):
    spanish = [s for s in samples if _language(s) == "es"]
    assert [s["sample_id"] for s in spanish] == [f"dialogues-es-0{i}" for i in (1, 2, 3)]
    for sample in spanish:
        turns = _turns(sample).values()
        texts = [t["text"] for t in turns] + [qa["question"] for qa in sample["qa"]]
        for text in texts:
            words = re.sub(r"`[^`]*`", "", text).lower()  # code stays code
            assert not _HAN.search(text) and "{" not in text and "}" not in text, text
            assert not _ENGLISH.search(words), text
            # a short reply ("Vale, entendido, tiene sentido.") need not have a function word
            assert _SPANISH.search(words) or len(words.split()) <= 5, text
        for qa in sample["qa"]:
            assert "¿" in qa["question"] and qa["question"].endswith("?"), qa


def test_the_spanish_conversations_have_every_kind_of_question(samples):
    for sample in (s for s in samples if _language(s) == "es"):
        turns = _turns(sample)
        by_category = Counter(qa["category"] for qa in sample["qa"])
        assert set(by_category) == set(MIX)
        for qa in sample["qa"]:
            if qa["category"] == 6:
                (earlier,) = qa["superseded"]
                assert qa["previous_answer"] in turns[earlier]["text"]
            elif qa["category"] == 7:
                (distractor,) = qa["distractors"]
                assert turns[distractor]["speaker"] == sample["conversation"]["speaker_a"]
            elif qa["category"] == 2:
                # "7 de mayo de 2023", "el fin de semana anterior al 7 de mayo de 2023"
                assert _SPANISH_DATE.fullmatch(qa["answer"]), qa

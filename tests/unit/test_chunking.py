"""Chunking: sizes within budget, overlap, boundaries, CJK, determinism, stitching."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory._tokens import estimate_tokens
from agent_memory.errors import InvalidInputError
from agent_memory.memory.knowledge.chunking import chunk_text, stitch

WORDS = "river bank money loan water fish boat interest rate account deposit stream".split()


def prose(seed: int = 7, paragraphs: int = 20) -> str:
    rng = random.Random(seed)
    out = []
    for _ in range(paragraphs):
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 20))).capitalize() + "."
            for _ in range(rng.randint(2, 7))
        ]
        out.append(" ".join(sentences))
    return "\n\n".join(out)


CJK = (
    "机器学习是人工智能的一个分支。它使计算机能够从数据中学习，而无需明确编程。"
    "深度学习使用多层神经网络，「卷积网络」擅长处理图像。自然语言处理研究人类语言。"
) * 30


def covered(text: str, chunks) -> bool:
    """Every non-whitespace character is inside some chunk."""
    inside = [False] * len(text)
    for chunk in chunks:
        for i in range(chunk.start, chunk.end):
            inside[i] = True
    return all(inside[i] or text[i].isspace() for i in range(len(text)))


@pytest.mark.parametrize(("budget", "overlap"), [(300, 50), (100, 20), (40, 0), (16, 8)])
def test_chunks_stay_within_budget_and_cover_the_text(budget, overlap):
    text = prose()
    chunks = chunk_text(text, chunk_tokens=budget, overlap_tokens=overlap)
    assert len(chunks) > 1
    for index, chunk in enumerate(chunks):
        assert chunk.index == index
        assert chunk.content == text[chunk.start : chunk.end]
        assert chunk.content.strip() == chunk.content != ""
        assert chunk.tokens == estimate_tokens(chunk.content) <= budget
    assert covered(text, chunks)
    stitched = stitch([(c.start, c.end, c.content) for c in chunks])
    if overlap:
        assert stitched == text.strip()
    else:  # chunks that do not overlap are joined by a space, whatever whitespace was there
        assert stitched.split() == text.split()


def test_consecutive_chunks_overlap_by_at_most_the_overlap():
    text = prose()
    chunks = chunk_text(text, chunk_tokens=120, overlap_tokens=30)
    for before, after in pairwise(chunks):
        assert before.start < after.start < before.end  # overlap present, progress made
        assert estimate_tokens(text[after.start : before.end]) <= 30


def test_no_overlap_when_asked():
    chunks = chunk_text(prose(), chunk_tokens=100, overlap_tokens=0)
    assert all(b.start > a.end for a, b in pairwise(chunks))


def test_cuts_fall_between_words_and_prefer_sentence_ends():
    text = prose(seed=3, paragraphs=40)
    chunks = chunk_text(text, chunk_tokens=200, overlap_tokens=40)
    for chunk in chunks:
        assert chunk.start == 0 or text[chunk.start - 1].isspace()
        assert chunk.end == len(text) or text[chunk.end].isspace()
    # Sentences here are at most ~25 tokens, so every chunk can end at one.
    assert all(c.content.endswith(".") for c in chunks)
    # And overlaps mostly start at a sentence (when one lies in the overlap window).
    assert sum(c.content[0].isupper() for c in chunks) >= 0.8 * len(chunks)


def test_paragraphs_are_preferred_over_sentences():
    paragraph = "Short sentence here. Another one follows. " * 3
    text = "\n\n".join([paragraph.strip()] * 12)
    chunks = chunk_text(text, chunk_tokens=60, overlap_tokens=0)
    assert all(c.end == len(text) or text[c.end : c.end + 2] == "\n\n" for c in chunks)


def test_cjk_text_without_spaces_is_chunked_within_budget():
    chunks = chunk_text(CJK, chunk_tokens=100, overlap_tokens=20)
    assert len(chunks) > 5
    for chunk in chunks:
        assert 0 < chunk.tokens <= 100
        assert chunk.content == CJK[chunk.start : chunk.end]
        # Closing punctuation stays with its sentence; an opening bracket with what follows.
        assert chunk.content[0] not in "。，、」"
        assert chunk.content[-1] != "「"
    assert all(b.start < a.end for a, b in pairwise(chunks))
    # Chunks end at sentence ends where the window allows it.
    assert sum(c.content.endswith("。") for c in chunks) >= len(chunks) - 1
    assert stitch([(c.start, c.end, c.content) for c in chunks]) == CJK


def test_mixed_cjk_and_latin_words_are_not_split():
    text = "我们使用MongoDB数据库和Python语言。" * 50
    chunks = chunk_text(text, chunk_tokens=40, overlap_tokens=10)
    for chunk in chunks:
        assert "MongoD" not in chunk.content or "MongoDB" in chunk.content
        assert not chunk.content.startswith(("ongoDB", "ython"))


def test_a_word_longer_than_a_chunk_is_cut_into_pieces():
    text = "see " + "x" * 3_000 + " end"
    chunks = chunk_text(text, chunk_tokens=100, overlap_tokens=20)
    assert all(c.tokens <= 100 for c in chunks)
    assert covered(text, chunks)


def test_short_text_is_one_chunk_and_blank_text_none():
    assert [c.content for c in chunk_text("  Just one line.  ")] == ["Just one line."]
    assert chunk_text("   \n\n  ") == []


def test_chunking_is_deterministic():
    text = prose(seed=11) + CJK
    assert chunk_text(text) == chunk_text(text)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"chunk_tokens": 8},
        {"chunk_tokens": 100_000},
        {"chunk_tokens": 100, "overlap_tokens": 60},
        {"overlap_tokens": -1},
        {"chunk_tokens": "300"},
        {"chunk_tokens": True},
    ],
)
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(InvalidInputError):
        chunk_text("text", **kwargs)


def test_text_must_be_a_string():
    with pytest.raises(InvalidInputError):
        chunk_text(b"bytes")  # type: ignore[arg-type]


ALPHABET = st.sampled_from(
    [*"abcdefghij", " ", " ", "\n", "\n\n", ".", ",", "。", "，", "学", "習", "語", "「", "」"]
)


@settings(max_examples=200, deadline=None)
@given(
    text=st.lists(ALPHABET, max_size=600).map("".join),
    budget=st.integers(16, 80),
    overlap_share=st.floats(0, 0.5),
)
def test_any_text_gives_valid_chunks(text, budget, overlap_share):
    overlap = int(budget * overlap_share)
    chunks = chunk_text(text, chunk_tokens=budget, overlap_tokens=overlap)
    assert bool(chunks) == bool(text.strip())
    for chunk in chunks:
        assert chunk.content and chunk.content == text[chunk.start : chunk.end]
        assert chunk.tokens == estimate_tokens(chunk.content) <= budget
    assert [c.start for c in chunks] == sorted({c.start for c in chunks})
    assert [c.end for c in chunks] == sorted({c.end for c in chunks})
    assert covered(text, chunks)

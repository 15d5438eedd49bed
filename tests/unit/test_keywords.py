"""The plain tier's keyword ranking: tokens (stems, stop words, Chinese pairs) and BM25."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_memory.mongo.search.keywords import BM25_B, BM25_K1, Bm25Index, tokenize


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Caroline went hiking", ["carolin", "went", "hike"]),
        ("She hikes; they HIKED!", ["hike", "hike"]),
        ("the adoption was approved", ["adopt", "approv"]),
        ("[8 May, 2023] Mel's dog", ["8", "may", "2023", "mel", "dog"]),
        ("我喜欢猫", ["我喜", "喜欢", "欢猫"]),
        ("住在 北京", ["住在", "北京"]),
        ("猫", ["猫"]),
        ("Ｆｕｌｌ width", ["full", "width"]),  # NFKC folds full-width letters
        ("I went to 上海 in May", ["went", "上海", "may"]),
    ],
)
def test_tokens(text, expected):
    assert tokenize(text) == expected


def test_a_question_and_its_answer_share_stems():
    question = tokenize("When did Melanie paint the sunrise?")
    answer = tokenize("Melanie: I painted that sunrise last year")
    assert {"melani", "paint", "sunris"} <= set(question) & set(answer)


def _lucene(tf: float, df: int, n: int, length: float, average: float) -> float:
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average))


def test_bm25_matches_the_formula():
    docs = [["cat", "cat", "dog"], ["dog"], ["bird", "fish", "cat", "eel"]]
    scores = Bm25Index(docs).scores(["cat"])
    average = (3 + 1 + 4) / 3
    assert scores[0] == pytest.approx(_lucene(2, 2, 3, 3, average), rel=1e-5)
    assert scores[1] == 0.0
    assert scores[2] == pytest.approx(_lucene(1, 2, 3, 4, average), rel=1e-5)


def test_rare_terms_weigh_more_and_repeats_saturate():
    docs = [["common", "rare"], ["common"], ["common"], ["common", "common", "common", "common"]]
    index = Bm25Index(docs)
    assert index.idf("rare") > index.idf("common") > 0
    many = index.scores(["common"])[3]
    assert many < 4 * index.scores(["common"])[1]  # four times the term, far less than 4x


@given(st.lists(st.lists(st.sampled_from("abcdef"), max_size=6), max_size=8), st.text(max_size=20))
def test_scores_are_finite_and_never_negative(docs, query):
    scores = Bm25Index(docs).scores(tokenize(query) + list(query[:3]))
    assert scores.shape == (len(docs),)
    assert np.isfinite(scores).all() and (scores >= 0).all()


@given(st.text(max_size=200))
def test_any_text_tokenizes(text):
    tokens = tokenize(text)
    assert all(isinstance(token, str) and token for token in tokens)


def test_documents_without_keyword_text_do_not_skew_bm25() -> None:
    # A memory's field documents (its vectors per index field) have no text: they are no part
    # of the keyword corpus, so its statistics are those of the texts alone.
    texts = [["tax", "forms", "due"], ["bike", "repair"], ["tax", "office"]]
    alone = Bm25Index(texts)
    beside = Bm25Index([*texts, [], [], [], []])
    assert beside.idf("tax") == alone.idf("tax")
    assert list(beside.scores(["tax", "forms"])[:3]) == list(alone.scores(["tax", "forms"]))
    assert list(beside.scores(["tax"])[3:]) == [0.0] * 4

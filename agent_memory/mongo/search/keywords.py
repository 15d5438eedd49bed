"""Keyword ranking for the plain tier: BM25 over a tenant's documents, computed in the framework.

MongoDB's ``$text`` finds documents but ranks them poorly for this use (the embedded engine
counts matched terms; neither stems Chinese), so the plain tier ranks with BM25 here, over the
same documents the vector ranking reads.

Tokens (:func:`tokenize`): text is NFKC-normalised and case-folded; words are split on
anything that is not a letter or digit; English stop words are dropped and the rest reduced to
their Snowball stem ("hiking", "hikes" -> "hike"); runs of Chinese or Japanese characters, which
have no spaces between words, become overlapping character pairs ("我喜欢猫" -> 我喜 喜欢 欢猫),
the way search engines index them without a dictionary, and a lone character stands for itself.

Scoring (:class:`Bm25Index`) is Okapi BM25 with Lucene's IDF, ``log(1 + (N - df + 0.5) /
(df + 0.5))``, so a term found in every document still counts a little and no score is negative.
"""

from __future__ import annotations

import math
import re
import unicodedata
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

import numpy as np

__all__ = ["BM25_B", "BM25_K1", "Bm25Index", "KeywordIndex", "tokenize"]

#: Term-frequency saturation and length normalisation: Lucene's defaults.
BM25_K1 = 1.2
BM25_B = 0.75

# Han (with extension A and compatibility ideographs), kana: scripts written without spaces.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")
# Questions and statements share these without sharing meaning; "not" and "no" stay, since
# they can matter, and a query of nothing but stop words keeps its words (see tokenize).
_STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves s t d ll m re ve
    also get got like really yeah oh ok okay wow well""".split()
)


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    # PyStemmer: the Snowball stemmers in C, with a cache of recent words.
    import Stemmer

    return Stemmer.Stemmer("english", 100_000).stemWord


def _cjk(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str) -> list[str]:
    """The index terms of ``text`` (see the module docstring); may be empty."""
    stem = _stemmer()
    normal = unicodedata.normalize("NFKC", text).casefold()
    words: list[str] = []
    dropped: list[str] = []
    for match in _TOKEN.finditer(normal):
        run = match.group()
        if match.lastgroup == "cjk":
            words.extend(_cjk(run))
        elif run in _STOP_WORDS:
            dropped.append(run)
        else:
            words.append(stem(run))
    # A query made only of stop words ("who is he?") is still a query.
    return words or [stem(word) for word in dropped]


class KeywordIndex:
    """BM25 postings that follow a changing set of documents: a document is added at a
    position and removed by position, and every score is that of a :class:`Bm25Index` built
    over the documents present at that moment (document frequencies and the average length
    count only those).

    A removed document's postings stay until the owner rebuilds the index (its positions
    score, and the owner masks them out); what it counted in the frequencies and the average
    goes at once. Postings are compact arrays per term, so adding a document costs its own
    terms and a query the postings of its terms, however many documents there are.
    """

    def __init__(self, *, k1: float = BM25_K1, b: float = BM25_B) -> None:
        self.k1 = k1
        self.b = b
        self._positions: dict[str, array[int]] = {}
        self._counts: dict[str, array[float]] = {}
        self._df: dict[str, int] = {}
        self._lengths = array("f")
        self._counted = 0  # documents present with at least one term
        self._total = 0  # their terms, for the average length

    @property
    def size(self) -> int:
        """Positions used so far (removed ones included)."""
        return len(self._lengths)

    def add(self, position: int, terms: Sequence[str]) -> None:
        """Index the document at ``position`` (the next one: positions grow one by one)."""
        if position != len(self._lengths):
            raise ValueError(f"position {position} is not the next one ({len(self._lengths)})")
        self._lengths.append(float(len(terms)))
        if not terms:
            return
        self._counted += 1
        self._total += len(terms)
        for term, count in Counter(terms).items():
            found = self._positions.get(term)
            if found is None:
                found = self._positions[term] = array("i")
                self._counts[term] = array("f")
            found.append(position)
            self._counts[term].append(float(count))
            self._df[term] = self._df.get(term, 0) + 1

    def remove(self, terms: Sequence[str]) -> None:
        """Stop counting a document whose tokens were ``terms`` (its postings stay)."""
        if not terms:
            return
        self._counted -= 1
        self._total -= len(terms)
        for term in set(terms):
            left = self._df.get(term, 0) - 1
            if left > 0:
                self._df[term] = left
            else:
                self._df.pop(term, None)

    def idf(self, term: str) -> float:
        df = self._df.get(term, 0)
        return math.log(1.0 + (self._counted - df + 0.5) / (df + 0.5))

    def coverage(self, query: Sequence[str], terms: Sequence[str]) -> float:
        """How much of ``query``'s weight a document whose tokens are ``terms`` matches: the
        IDF of the query terms it contains over the IDF of all of them (a term no document has
        counts at the largest IDF). 1 when every term matched, near 0 when only common words
        did: how far its keyword match can be trusted."""
        wanted = set(query)
        if not wanted:
            return 0.0
        have = set(terms)
        total = sum(self.idf(term) for term in wanted)
        matched = sum(self.idf(term) for term in wanted if term in have)
        return matched / total if total > 0 else 0.0

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """The BM25 score of every position for ``query``'s tokens (0 where none matches).

        A term repeated in the query counts once per occurrence, as in Lucene."""
        result = np.zeros(self.size, dtype=np.float32)
        if not self._counted:
            return result
        average = self._total / self._counted
        lengths: np.ndarray | None = None
        for term, repeats in Counter(query).items():
            found = self._positions.get(term)
            if found is None or term not in self._df:
                continue
            if lengths is None:
                lengths = np.frombuffer(self._lengths, dtype=np.float32).copy()
            docs = np.array(found, dtype=np.int64)
            tf = np.array(self._counts[term], dtype=np.float32)
            norm = (self.k1 * (1.0 - self.b + self.b * lengths[docs] / average)).astype(np.float32)
            weight = self.idf(term) * repeats * (self.k1 + 1.0)
            result[docs] += weight * tf / (tf + norm)
        return result


class Bm25Index:
    """BM25 over a fixed list of documents, each given as its tokens (a
    :class:`KeywordIndex` with every document added in order)."""

    def __init__(
        self, documents: Iterable[Sequence[str]], *, k1: float = BM25_K1, b: float = BM25_B
    ) -> None:
        self._index = KeywordIndex(k1=k1, b=b)
        for position, tokens in enumerate(documents):
            self._index.add(position, tokens)
        self.k1 = k1
        self.b = b

    @property
    def size(self) -> int:
        return self._index.size

    def idf(self, term: str) -> float:
        return self._index.idf(term)

    def coverage(self, query: Sequence[str], position: int, terms: Sequence[str]) -> float:
        """:meth:`KeywordIndex.coverage` of the document at ``position`` (0 outside the
        index)."""
        if not 0 <= position < self.size:
            return 0.0
        return self._index.coverage(query, terms)

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """The BM25 score of every document for ``query``'s tokens (0 where none matches)."""
        return self._index.scores(query)

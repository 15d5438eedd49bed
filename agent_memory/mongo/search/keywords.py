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
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

import numpy as np

__all__ = ["BM25_B", "BM25_K1", "Bm25Index", "tokenize"]

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


class Bm25Index:
    """BM25 over a fixed list of documents, each given as its tokens.

    Built once per set of documents (a tenant's memories); :meth:`scores` ranks all of them for
    one query in time proportional to the postings of the query's terms.
    """

    def __init__(
        self, documents: Iterable[Sequence[str]], *, k1: float = BM25_K1, b: float = BM25_B
    ) -> None:
        self.k1 = k1
        self.b = b
        postings: dict[str, tuple[list[int], list[int]]] = {}
        lengths: list[int] = []
        for position, tokens in enumerate(documents):
            lengths.append(len(tokens))
            for term, count in Counter(tokens).items():
                docs, counts = postings.setdefault(term, ([], []))
                docs.append(position)
                counts.append(count)
        self.size = len(lengths)
        self._lengths = np.asarray(lengths, dtype=np.float32)
        # A document without keyword text (a memory's field vectors) is no part of the
        # keyword corpus: it counts neither in the document frequencies nor in the average.
        with_text = self._lengths[self._lengths > 0]
        self._counted = int(with_text.size)
        average = float(with_text.mean()) if self._counted else 0.0
        # The length part of BM25's denominator, per document, computed once.
        self._norm = (
            k1 * (1.0 - b + b * self._lengths / average)
            if average > 0
            else np.full(self.size, k1, dtype=np.float32)
        ).astype(np.float32)
        self._postings = {
            term: (np.asarray(docs, dtype=np.int32), np.asarray(counts, dtype=np.float32))
            for term, (docs, counts) in postings.items()
        }

    def idf(self, term: str) -> float:
        found = self._postings.get(term)
        df = 0 if found is None else len(found[0])
        return math.log(1.0 + (self._counted - df + 0.5) / (df + 0.5))

    def coverage(self, query: Sequence[str], position: int, terms: Sequence[str]) -> float:
        """How much of ``query``'s weight the document at ``position`` (whose tokens are
        ``terms``) matches: the IDF of the query terms it contains over the IDF of all of
        them (a term no document has counts at the largest IDF). 1 when every term matched, near
        0 when only common words did: how far its keyword match can be trusted."""
        wanted = set(query)
        if not wanted or not 0 <= position < self.size:
            return 0.0
        have = set(terms)
        total = sum(self.idf(term) for term in wanted)
        matched = sum(self.idf(term) for term in wanted if term in have)
        return matched / total if total > 0 else 0.0

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """The BM25 score of every document for ``query``'s tokens (0 where none matches).

        A term repeated in the query counts once per occurrence, as in Lucene."""
        result = np.zeros(self.size, dtype=np.float32)
        for term, repeats in Counter(query).items():
            found = self._postings.get(term)
            if found is None:
                continue
            docs, tf = found
            weight = self.idf(term) * repeats * (self.k1 + 1.0)
            result[docs] += weight * tf / (tf + self._norm[docs])
        return result

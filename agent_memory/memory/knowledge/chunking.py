"""Splitting a document into overlapping chunks for retrieval, and stitching chunks back.

>>> chunks = chunk_text("First point. " * 200, chunk_tokens=100, overlap_tokens=20)
>>> [c.tokens <= 100 for c in chunks] == [True] * len(chunks)
True

Every chunk is an exact slice of the text (``text[chunk.start:chunk.end]``), so adjacent
chunks can be stitched back without repeating their overlap, and sizes are measured with
:func:`agent_memory._tokens.estimate_tokens`, the estimate prompts are budgeted with.

How a cut is chosen: the text is split into words (runs without whitespace; CJK text, which
has no spaces, into single characters with their punctuation attached). A chunk takes words
while it stays within ``chunk_tokens``, then ends at the strongest boundary in the second half
of that window: a blank line (paragraph), a line break or sentence end, a clause mark
(``,`` ``;`` ``、``), any word. The next chunk starts up to ``overlap_tokens`` earlier,
preferring the start of a sentence. A single word longer than a chunk (a URL, base64) is the
only thing ever cut mid-word; it is cut into pieces of ``overlap_tokens`` characters (at least 8).

The function is pure: the same text and settings always give the same chunks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

from agent_memory._tokens import _is_wide, estimate_tokens
from agent_memory.checks import check_int
from agent_memory.errors import InvalidInputError

__all__ = ["Chunk", "check_settings", "chunk_text", "stitch"]

_RUN = re.compile(r"\S+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")
_CLOSERS = "\"'”’」』）)\\]】》〉"
_SENTENCE_END = re.compile(rf"[.!?。！？…‼][{_CLOSERS}]*$")
_CLAUSE_END = re.compile(rf"[,;:、，；：—–][{_CLOSERS}]*$")
# Opening brackets stay with the word after them, so a chunk never ends with "「".
_OPENERS = frozenset("「『（【〔《〈")

PARAGRAPH, LINE_OR_SENTENCE, CLAUSE, WORD = 3, 2, 1, 0


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk: ``content == text[start:end]``, ``tokens == estimate_tokens(content)``."""

    index: int
    start: int
    end: int
    content: str
    tokens: int


def _is_cjk(ch: str) -> bool:
    return "\u3040" <= ch <= "\u30ff" or "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"


def _words(text: str, chunk_tokens: int, piece: int) -> list[tuple[int, int]]:
    """Spans of the units a cut may fall between; a word of more than ``chunk_tokens`` tokens
    is cut into pieces of ``piece`` characters."""
    spans: list[tuple[int, int]] = []
    for run in _RUN.finditer(text):
        a, b = run.span()
        if _CJK.search(text, a, b) is not None:
            # No spaces between CJK words: any character may start a unit, except that
            # closing punctuation stays with what precedes it.
            piece = a
            for p in range(a + 1, b):
                ch, prev = text[p], text[p - 1]
                if prev in _OPENERS:
                    continue
                if _is_cjk(ch) or ch in _OPENERS or (_is_cjk(prev) and ch.isalnum()):
                    spans.append((piece, p))
                    piece = p
            spans.append((piece, b))
        else:
            spans.append((a, b))
    # A word longer than a chunk cannot be kept whole; cutting it is the only way to store it.
    result: list[tuple[int, int]] = []
    for a, b in spans:
        if b - a > chunk_tokens and estimate_tokens(text[a:b]) > chunk_tokens:
            result.extend((s, min(s + piece, b)) for s in range(a, b, piece))
        else:
            result.append((a, b))
    return result


def _strength(text: str, word: tuple[int, int], next_start: int) -> int:
    """How good a place to cut the boundary after ``word`` is."""
    gap = text[word[1] : next_start]
    if "\n" in gap:
        return PARAGRAPH if _BLANK_LINE.search(gap) else LINE_OR_SENTENCE
    content = text[word[0] : word[1]]
    if _SENTENCE_END.search(content):
        return LINE_OR_SENTENCE
    if _CLAUSE_END.search(content):
        return CLAUSE
    return WORD


def check_settings(chunk_tokens: int, overlap_tokens: int) -> None:
    """Refuse chunk settings :func:`chunk_text` cannot honour."""
    check_int(chunk_tokens, "chunk_tokens", minimum=16, maximum=8_000)
    # At most half of a chunk overlaps the one before.
    check_int(overlap_tokens, "overlap_tokens", minimum=0, maximum=chunk_tokens // 2)


def chunk_text(text: str, *, chunk_tokens: int = 300, overlap_tokens: int = 50) -> list[Chunk]:
    """Split ``text`` into chunks of at most ``chunk_tokens`` estimated tokens, each
    overlapping the previous one by up to ``overlap_tokens``. Blank text gives no chunks."""
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
    check_settings(chunk_tokens, overlap_tokens)
    words = _words(text, chunk_tokens, piece=max(8, overlap_tokens))
    if not words:
        return []
    # Prefix counts of wide characters make every span's estimate O(1); `_is_wide` is the
    # rule estimate_tokens uses, so the two agree exactly (tests/unit/test_chunking.py).
    wide = [0, *accumulate(_is_wide(ch) for ch in text)]

    def cost(start: int, end: int) -> int:
        w = wide[end] - wide[start]
        return w + math.ceil((end - start - w) / 4)

    n = len(words)
    strength = [_strength(text, words[i], words[i + 1][0]) for i in range(n - 1)]
    spans: list[tuple[int, int]] = []
    i = 0
    while True:
        start = words[i][0]
        lo, hi = i, n - 1  # the last word j with cost(start, end of j) <= chunk_tokens
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if cost(start, words[mid][1]) <= chunk_tokens:
                lo = mid
            else:
                hi = mid - 1
        if lo == n - 1:
            spans.append((start, words[-1][1]))
            break
        # End at the strongest boundary in the second half of the window, the latest on ties.
        half = chunk_tokens / 2
        j = max(
            (m for m in range(i, lo + 1) if m == lo or cost(start, words[m][1]) >= half),
            key=lambda m: (strength[m], m),
        )
        end = words[j][1]
        spans.append((start, end))
        i = _next_start(words, strength, cost, i, j, end, overlap_tokens, chunk_tokens)
    return [
        Chunk(index, s, e, text[s:e], estimate_tokens(text[s:e]))
        for index, (s, e) in enumerate(spans)
    ]


def _next_start(
    words: list[tuple[int, int]],
    strength: list[int],
    cost: Callable[[int, int], int],
    i: int,
    j: int,
    end: int,
    overlap_tokens: int,
    chunk_tokens: int,
) -> int:
    """The first word of the chunk after words ``i..j``: up to ``overlap_tokens`` back."""
    k = j + 1
    while k - 1 > i and cost(words[k - 1][0], end) <= overlap_tokens:
        k -= 1
    if k > j:
        return j + 1
    # Prefer starting at a sentence or paragraph, if that keeps at least half the overlap.
    enough = [m for m in range(k, j + 1) if cost(words[m][0], end) * 2 >= overlap_tokens]
    m = max(enough, key=lambda m: (strength[m - 1], -m)) if enough else k
    # The next chunk must reach past this one, or it would repeat it.
    if cost(words[m][0], words[j + 1][1]) > chunk_tokens:
        return j + 1
    return m


def stitch(parts: Sequence[tuple[int, int, str]]) -> str:
    """Join ``(start, end, content)`` slices of one text, in order, without repeating overlap."""
    if not parts:
        return ""
    text = parts[0][2]
    reached = parts[0][1]
    for start, end, content in parts[1:]:
        if start < reached:
            text += content[reached - start :]
        else:
            text += " " + content  # consecutive chunks are separated by whitespace only
        reached = max(reached, end)
    return text

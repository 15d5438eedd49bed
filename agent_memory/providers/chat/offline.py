"""A chat model that needs no network and no language model: it quotes the retrieved context.

It lets the whole memory pipeline run offline (demos, CI, air-gapped machines). Its replies are
labelled ``[offline model]`` so nobody mistakes them for a real model's, and each quoted line
says where it came from: the data block of the prompt that held it (``<memories>`` is long-term
memory, ``<documents>`` the knowledge base, ``<profile>`` the user's profile ...), the
conversation, or a tool result. It says it found nothing only when nothing was given to it;
when something was but none of it shares words with the question, it says so. Greetings and
thanks get a short reply of their own. :meth:`OfflineChatModel.quotes` gives what a reply
quotes, with its sources, for callers that need to know whether anything was found.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from agent_memory._data_blocks import DATA_TAGS
from agent_memory.providers.chat.base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    ToolResult,
    text_response,
)

__all__ = ["OFFLINE_LABEL", "SOURCES", "OfflineChatModel", "Quote", "empty_extraction"]

OFFLINE_LABEL = "[offline model] "
#: The reply when the request holds nothing to quote at all (no memories, documents,
#: conversation or tool output).
NOTHING_FOUND = "I found nothing relevant in memory for that question."
#: Where a quoted line came from, as a reply names it ("From long-term memory: ...").
SOURCES = {
    "memories": "long-term memory",
    "documents": "the knowledge base",
    "profile": "your profile",
    "task": "the active task",
    "summary": "the summary of our earlier conversation",
    "conversation": "our recent conversation",
    "tool_result": "the tool results",
    "instructions": "your standing instructions",
    "context": "the context I was given",
}
# The source of each data block's lines (see agent_memory._data_blocks.DATA_TAGS).
_BLOCK_SOURCES = {
    "memories": "memories",
    "new_memory": "memories",
    "stored_memory": "memories",
    "documents": "documents",
    "profile": "profile",
    "task": "task",
    "summary": "summary",
    "transcript": "conversation",
    "tool_result": "tool_result",
    "instructions": "instructions",
}
_BLOCK_TAG = re.compile(rf"<(/?)({'|'.join(map(re.escape, DATA_TAGS))})>")
#: The reply to a statement about the user ("I prefer...", no question mark) with nothing
#: in context to quote.
NOTED = "Noted."
_ABOUT_ME = re.compile(r"\b(i|i'm|my|me)\b|我", re.IGNORECASE)

# Small talk: a message made only of these phrases gets the reply of each kind, nothing quoted.
_SMALL_TALK = (
    (
        "greeting",
        r"(?:hi|hello|hey|hiya|howdy|greetings|good (?:morning|afternoon|evening|day)|你好|您好|嗨)"
        r"(?: there| again| everyone| all)?",
        "Hello! How can I help?",
    ),
    (
        "how",
        r"how are you(?: doing)?(?: today)?|how's it going|how is it going|你好吗",
        "I'm fine, thank you.",
    ),
    (
        "thanks",
        r"(?:thanks|thank you|thx|ty|cheers|many thanks|谢谢你?|多谢|谢了)"
        r"(?: (?:so|very) much| a lot| again)?",
        "You're welcome.",
    ),
    ("bye", r"bye bye|goodbye|bye|see you(?: later| soon)?|good night|再见|拜拜", "Goodbye!"),
    ("ok", r"ok|okay|alright|all right|got it|great|cool|perfect|sounds good", "OK."),
)
_SMALL_TALK_PHRASE = re.compile(
    r"\s*(?:"
    + "|".join(f"(?P<{kind}>{pattern})" for kind, pattern, _ in _SMALL_TALK)
    + r")(?=\s|$)"
)
_SMALL_TALK_REPLY = {kind: reply for kind, _, reply in _SMALL_TALK}
_NOT_WORD = re.compile(r"[^\w\s']+")

_MAX_ANSWER_LINES = 3
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
# A sentence ends at . ! ? or their full-width forms, followed by space or the end.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f])")
_COLONS = (":", "\uff1a")  # ASCII and full-width
_QUESTION_MARKS = ("?", "\uff1f")
_STOP = frozenset(
    "a about an and any are as at be been but by can could did do does for from had has have "
    "he her his how i if in into is it its me my no not of on or our she so that the their "
    "them there they this to us was we were what when where which who whom why will with "
    "would you your".split()
)


_CJK = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff"
# A run of CJK characters, or a run of other word characters.
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
# Particles and pronouns that would make almost any two CJK sentences "overlap".
_CJK_STOP = frozenset("的了是在吗呢吧啊和与也都就我你他她它们这那哪什么谁のはがをにでともかなた")
_CJK_STOPS = re.compile(f"[{''.join(sorted(_CJK_STOP))}]+")


def _stem(word: str) -> str:
    # Just enough folding that "lives" meets "live" and "cities" meets "city".
    if word.endswith("'s"):
        word = word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def _terms(text: str, *, asked: bool = False) -> set[str]:
    """Content words of ``text``. CJK has no spaces: a run is cut at particles and pronouns
    and each piece counts by its pairs of adjacent characters. A question (``asked``) adds a
    piece of one character as itself; other text adds every character, so 住 in "我住在哪里"
    meets 用户住在柏林, while a 时 or 小 shared by chance inside longer words does not make
    two sentences related."""
    terms: set[str] = set()
    for token in _TOKEN.findall(text.lower()):
        if _CJK_RUN.fullmatch(token):
            for piece in _CJK_STOPS.split(token):
                if len(piece) == 1 or not asked:
                    terms.update(piece)
                terms.update(piece[i : i + 2] for i in range(len(piece) - 1))
        elif token not in _STOP and not (len(token) == 1 and token.isalpha()):
            # A lone letter is what an apostrophe leaves ("I'm" -> "i", "m"), not a word.
            terms.add(_stem(token))
    return terms


def _is_heading(line: str) -> bool:
    return (
        line.startswith(("#", "===", "---"))
        or line.endswith(_COLONS)
        or (line.startswith("[") and line.endswith("]"))
        or (line.startswith("<") and line.endswith(">"))
    )


def _candidates(text: str) -> list[str]:
    """Bullet items and sentences of ``text``, headings left out."""
    found: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or _is_heading(line):
            continue
        if _BULLET.match(line):
            found.append(_BULLET.sub("", line).strip())
            continue
        found.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return found


def _split_question(text: str) -> tuple[str, list[str]]:
    """The question in the user's message, and the other lines (context the agent added).

    A one-line message is all question. In a longer one the question is the last line that
    ends with a question mark, else the last line.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) <= 1:
        return (lines[0] if lines else ""), []
    index = next(
        (i for i in range(len(lines) - 1, -1, -1) if lines[i].endswith(_QUESTION_MARKS)),
        len(lines) - 1,
    )
    question = re.sub(r"^(?:question|q)\s*[:\uff1a]\s*", "", lines[index], flags=re.IGNORECASE)
    return question, lines[:index] + lines[index + 1 :]


def best_lines(question: str, candidates: list[str], limit: int = _MAX_ANSWER_LINES) -> list[str]:
    """Up to ``limit`` candidates sharing the most terms with ``question``, best first.

    A shared term counts for more the fewer candidates contain it (inverse document
    frequency), so "user" in every memory line does not drown out "live" in one of them.
    """
    wanted = _terms(question, asked=True)
    if not wanted:
        return []
    asked = question.strip().casefold()
    unique: list[tuple[str, set[str]]] = []
    seen: set[str] = set()
    for candidate in candidates:
        key = candidate.casefold()
        if key not in seen and key != asked:
            seen.add(key)
            unique.append((candidate, _terms(candidate)))
    frequency: dict[str, int] = {}
    for _, terms in unique:
        for term in terms & wanted:
            frequency[term] = frequency.get(term, 0) + 1
    scored: list[tuple[float, int, str]] = []
    for position, (candidate, terms) in enumerate(unique):
        shared = terms & wanted
        if shared:
            weight = sum(math.log(1 + len(unique) / frequency[term]) for term in shared)
            # Ties go to the candidate with fewer unrelated words, then to the earlier one.
            scored.append((weight + weight / (len(terms) + 1), -position, candidate))
    scored.sort(reverse=True)
    if not scored:
        return []
    top = scored[0][0]
    # Weak matches next to a strong one are noise; keep those at least half as good.
    return [text for score, _, text in scored[:limit] if score >= top / 2]


def empty_extraction(schema: dict[str, Any]) -> Any:
    """The smallest value valid for ``schema``: what a model that extracted nothing returns.

    Optional properties are left out, required arrays are empty, nullable values are null.
    Placeholder for the rule-based extractor planned for the offline model.
    """
    defs: dict[str, Any] = schema.get("$defs", {})

    def build(node: dict[str, Any]) -> Any:
        if "default" in node:
            return node["default"]
        if "$ref" in node:
            return build(defs[node["$ref"].rsplit("/", 1)[-1]])
        if "const" in node:
            return node["const"]
        if node.get("enum"):
            return node["enum"][0]
        variants = node.get("anyOf") or node.get("oneOf")
        if variants:
            if any(v.get("type") == "null" for v in variants):
                return None
            return build(variants[0])
        if node.get("allOf"):
            return build(node["allOf"][0])
        kind = node.get("type")
        if isinstance(kind, list):
            kind = "null" if "null" in kind else kind[0]
        if kind == "object":
            props: dict[str, Any] = node.get("properties", {})
            return {name: build(props.get(name, {})) for name in node.get("required", [])}
        return {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False}.get(
            kind or "null"
        )

    return build(schema)


def _small_talk(text: str) -> str | None:
    """The reply to a message that is only greetings, thanks and the like, else None."""
    words = " ".join(_NOT_WORD.sub(" ", text.casefold()).split())
    kinds: list[str] = []
    position = 0
    while position < len(words):
        match = _SMALL_TALK_PHRASE.match(words, position)
        if match is None or match.lastgroup is None:
            return None
        kinds.append(match.lastgroup)
        position = match.end()
    return " ".join(dict.fromkeys(_SMALL_TALK_REPLY[kind] for kind in kinds)) or None


@dataclass(frozen=True, slots=True)
class Quote:
    """A line a reply quotes, and where in the request it was found (a key of
    :data:`SOURCES`)."""

    source: str
    text: str


def _sourced(lines: Iterable[str], default: str) -> list[tuple[str, list[str]]]:
    """Each line of ``lines`` with its source and its candidates (bullet items, sentences).

    A line inside a data block (``<memories>`` ... ``</memories>``) has the block's source,
    any other line ``default``."""
    found: list[tuple[str, list[str]]] = []
    open_blocks: list[str] = []
    for raw in lines:
        tag = _BLOCK_TAG.fullmatch(raw.strip())
        if tag is not None:
            closing, name = tag.groups()
            if not closing:
                open_blocks.append(name)
            elif name in open_blocks:
                del open_blocks[len(open_blocks) - 1 - open_blocks[::-1].index(name) :]
            continue
        source = _BLOCK_SOURCES[open_blocks[-1]] if open_blocks else default
        found.append((source, _candidates(raw)))
    return found


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _inventory(counts: dict[str, int]) -> str:
    """What the request held, in words: "3 long-term memories and our recent conversation"."""
    parts = []
    for source, count in counts.items():
        if source == "memories":
            parts.append(_plural(count, "long-term memory", "long-term memories"))
        elif source == "documents":
            parts.append(_plural(count, "knowledge-base passage", "knowledge-base passages"))
        elif source == "summary":
            parts.append("a summary of our earlier conversation")
        elif source == "context":
            parts.append("other context" if len(counts) > 1 else "some context")
        else:
            parts.append(SOURCES[source])
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _render(quotes: list[Quote]) -> str:
    """The quotes grouped by source, the source of the best one first."""
    groups: dict[str, list[str]] = {}
    for quote in quotes:
        groups.setdefault(quote.source, []).append(quote.text)
    parts = []
    for source, texts in groups.items():
        label = f"From {SOURCES[source]}:"
        if len(texts) == 1:
            parts.append(f"{label} {texts[0]}")
        else:
            parts.append(label + "\n" + "\n".join(f"- {text}" for text in texts))
    return "\n".join(parts)


def _user_text(request: ChatRequest, index: int) -> str:
    message = request.messages[index]
    return message.text if message.role == "user" else ""


@dataclass(frozen=True, slots=True)
class _Reading:
    """What the model makes of a request: the question, whether it asks, every candidate
    line with its source, and how many lines of each source held candidates."""

    question: str
    asking: bool
    candidates: list[tuple[str, str]]
    counts: dict[str, int]


class OfflineChatModel(ChatModel):
    """Answers from the context in the request by word overlap: no network, deterministic.

    Example::

        chat = OfflineChatModel()
        request = ChatRequest(
            (Message.user("Where do I live?"),),
            system=(SystemPart("<memories>\\n- The user lives in Berlin.\\n</memories>"),),
        )
        (await chat.generate(request)).text
        # '[offline model] From long-term memory: The user lives in Berlin.'

    Each quoted line is labelled by its source (:data:`SOURCES`): a data block of the prompt
    (``<memories>``, ``<documents>``, ``<profile>``, ``<task>``, ``<summary>``), the
    conversation (the user's earlier turns and the other lines of their message), tool results,
    or "the context I was given" for other text of the system prompt. Tools are never called.
    With an ``output_schema`` the reply is an empty extraction. System parts marked
    ``instructions=True`` are never quoted.
    """

    provider: ClassVar[str] = "offline"
    offline: ClassVar[bool] = True

    def __init__(self, model: str = "offline-extractive-v1") -> None:
        self.model = model

    def _read(self, request: ChatRequest) -> _Reading:
        # Messages carrying only tool results have no text; the question is in an earlier one.
        position = next(
            (i for i in range(len(request.messages) - 1, -1, -1) if _user_text(request, i)), None
        )
        asked = "" if position is None else request.messages[position].text
        question, context = _split_question(asked)
        # For a question, earlier turns (the recent window) are context too: the user's words
        # only, since this model's own earlier replies merely repeat what it quoted then. A
        # statement is not answered with what the user said before.
        asking = question.rstrip().endswith(_QUESTION_MARKS)
        earlier = [_user_text(request, i) for i in range(position or 0)] if asking else []
        # Context arrives in the system prompt, around the question, or as tool results;
        # parts that instruct the model are not context.
        lines = [
            *(
                line
                for part in request.system
                if not part.instructions
                for line in _sourced(part.text.splitlines(), "context")
            ),
            *_sourced(context, "conversation"),
            *(
                ("tool_result", _candidates(line))  # whatever blocks a tool's output imitates
                for message in request.messages
                for block in message.content
                if isinstance(block, ToolResult) and not block.is_error
                for line in block.content.splitlines()
            ),
            *(
                # An earlier question is no answer.
                (source, [c for c in candidates if not c.endswith(_QUESTION_MARKS)])
                for text in earlier
                for source, candidates in _sourced(text.splitlines(), "conversation")
            ),
        ]
        counts: dict[str, int] = {}
        for source, candidates in lines:
            if candidates:
                counts[source] = counts.get(source, 0) + 1
        pairs = [(source, text) for source, candidates in lines for text in candidates]
        return _Reading(question, asking, pairs, counts)

    def _quotes(self, reading: _Reading) -> list[Quote]:
        if _small_talk(reading.question) is not None:
            return []
        first_source: dict[str, str] = {}
        for source, text in reading.candidates:
            first_source.setdefault(text.casefold(), source)
        chosen = best_lines(reading.question, [text for _, text in reading.candidates])
        return [Quote(first_source[text.casefold()], text) for text in chosen]

    def quotes(self, request: ChatRequest) -> tuple[Quote, ...]:
        """What the reply to ``request`` quotes, best first, each with its source; empty when
        it quotes nothing (a structured request, small talk, or nothing matches)."""
        if request.output_schema is not None:
            return ()
        return tuple(self._quotes(self._read(request)))

    def answer(self, request: ChatRequest) -> str:
        """The reply text for ``request`` (without calling anything)."""
        return self._reply(request)[0]

    def _reply(self, request: ChatRequest) -> tuple[str, bool]:
        """The reply text, and whether it quotes nothing (a stand-in, not an answer)."""
        if request.output_schema is not None:
            return json.dumps(empty_extraction(request.output_schema), ensure_ascii=False), False
        reading = self._read(request)
        greeting = _small_talk(reading.question)
        if greeting is not None:
            return OFFLINE_LABEL + greeting, True
        quotes = self._quotes(reading)
        if quotes:
            return OFFLINE_LABEL + _render(quotes), False
        if not reading.asking and _ABOUT_ME.search(reading.question):
            return OFFLINE_LABEL + NOTED, True
        if not reading.counts:
            return OFFLINE_LABEL + NOTHING_FOUND, True
        said = "question" if reading.asking else "message"
        return (
            f"{OFFLINE_LABEL}None of what I was given ({_inventory(reading.counts)}) shares "
            f"words with that {said}."
        ), True

    async def generate(self, request: ChatRequest) -> ChatResponse:
        text, found_nothing = self._reply(request)
        response = text_response(request, text, model=request.model or self.model)
        return replace(response, found_nothing=found_nothing)

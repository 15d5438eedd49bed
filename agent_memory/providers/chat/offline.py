"""A chat model that needs no network and no language model: it quotes the retrieved context.

It lets the whole memory pipeline run offline (demos, CI, air-gapped machines). Its replies are
labelled ``[offline model]`` so nobody mistakes them for a real model's.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, ClassVar

from agent_memory.providers.chat.base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    ToolResult,
    text_response,
)

__all__ = ["OFFLINE_LABEL", "OfflineChatModel", "empty_extraction"]

OFFLINE_LABEL = "[offline model] "
NOTHING_FOUND = "I found nothing relevant in memory for that question."
#: The reply to a statement about the user ("I prefer...", no question mark) with nothing
#: in context to quote.
NOTED = "Noted."
_ABOUT_ME = re.compile(r"\b(i|i'm|my|me)\b|我", re.IGNORECASE)

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


def _user_text(request: ChatRequest, index: int) -> str:
    message = request.messages[index]
    return message.text if message.role == "user" else ""


class OfflineChatModel(ChatModel):
    """Answers from the context in the request by word overlap: no network, deterministic.

    Example::

        chat = OfflineChatModel()
        request = ChatRequest(
            (Message.user("Where do I live?"),),
            system=(SystemPart("Memories:\\n- The user lives in Berlin.\\n- Likes green tea."),),
        )
        (await chat.generate(request)).text
        # '[offline model] From memory: The user lives in Berlin.'

    Tools are never called. With an ``output_schema`` the reply is an empty extraction. System
    parts marked ``instructions=True`` are never quoted.
    """

    provider: ClassVar[str] = "offline"
    offline: ClassVar[bool] = True

    def __init__(self, model: str = "offline-extractive-v1") -> None:
        self.model = model

    def answer(self, request: ChatRequest) -> str:
        """The reply text for ``request`` (without calling anything)."""
        if request.output_schema is not None:
            return json.dumps(empty_extraction(request.output_schema), ensure_ascii=False)
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
        context_parts = [part.text for part in request.system if not part.instructions]
        tool_output = [
            block.content
            for message in request.messages
            for block in message.content
            if isinstance(block, ToolResult) and not block.is_error
        ]
        candidates = [
            *(line for text in context_parts for line in _candidates(text)),
            *_candidates("\n".join(context)),
            *(line for text in tool_output for line in _candidates(text)),
            *(
                line
                for text in earlier
                for line in _candidates(text)
                if not line.endswith(_QUESTION_MARKS)  # an earlier question is no answer
            ),
        ]
        lines = best_lines(question, candidates)
        if not lines:
            telling = not question.rstrip().endswith(_QUESTION_MARKS) and _ABOUT_ME.search(question)
            return OFFLINE_LABEL + (NOTED if telling else NOTHING_FOUND)
        if len(lines) == 1:
            return f"{OFFLINE_LABEL}From memory: {lines[0]}"
        return OFFLINE_LABEL + "From memory:\n" + "\n".join(f"- {line}" for line in lines)

    async def generate(self, request: ChatRequest) -> ChatResponse:
        return text_response(request, self.answer(request), model=request.model or self.model)

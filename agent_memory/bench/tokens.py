"""Prompt tokens: the longest LoCoMo conversation replayed through the agent, turn by turn.

``agent-memory bench tokens --dataset locomo10.json --out tokens.json``

The conversation (the one with the most turns) is replayed through a :class:`RAGAgent` on the
framework's own paths: every session of the conversation is a session of the agent; the
session's first speaker is the user and each of their turns is a query; the other speaker's
next turn is the model's answer. Every message reads ``[session date] Speaker: text``, so
what is stored is the whole conversation, once, in order.

The chat model is a recording stand-in (:class:`ReplayModel`): it answers with the other
speaker's real turn and records every prompt it is sent. Asked to form memories (the
formation worker's structured extraction), it writes each transcript line as one note with
the lines around it as the note's context, where a real model would condense them; asked for
a conversation summary, it keeps the first sentence of each message, newest first within the
summary's length; asked by consolidation whether a new memory repeats or contradicts a close
one, it answers "unrelated" (the turns are distinct statements). After each session the formation worker forms that session's memories, as
the debounced queue would once the user went quiet.

Measured for every turn: the tokens of the prompt the agent sent (system parts and messages,
estimated as the budget estimates them; tool definitions are the same in every request and
counted apart) against the tokens of sending the whole history so far (the system prompt,
every earlier message, the query). Over budget is checked on the same count.

Then every question with evidence is asked, each in a new session of the same user (the
conversation lies entirely in the past; short-term memory is empty, so the evidence can only
arrive through long-term memory). Evidence "reached the prompt" when the text of one of its
evidence turns appears in what the model was sent. The same run also retrieves the question
directly (``LongTermMemory.retrieve``) and scores evidence recall@k over the same memories:
the prompt should carry the evidence at least as often as retrieval's top 10.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from agent_memory._tokens import estimate_tokens
from agent_memory.agent.config import AgentConfig
from agent_memory.agent.prompt import Budget
from agent_memory.agent.rag_agent import RAGAgent
from agent_memory.bench import write_with_plot
from agent_memory.bench.embedders import CATEGORIES, Conversation, Turn, load_locomo
from agent_memory.errors import InvalidInputError
from agent_memory.formation.worker import FormationWorker
from agent_memory.mongo.connection import Connection
from agent_memory.providers.chat.base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    ResponseComplete,
    StreamEvent,
    TextDelta,
    text_response,
)
from agent_memory.providers.embedders.base import Embedder
from agent_memory.tenancy import Tenant

__all__ = [
    "AGENT_ID",
    "ReplayModel",
    "TokenSettings",
    "exchanges",
    "render_tokens",
    "run_tokens",
    "write_outputs",
]

AGENT_ID = "bench-tokens"
USER_ID = "locomo-user"
#: Neighbouring lines given as a note's context, each cut to this many characters.
_CONTEXT_CHARS = 900
_NOTES_PER_EXTRACTION = 50  # the extraction schema's limit
_SENTENCE = re.compile(r"(?<=[.!?])\s")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class TokenSettings:
    #: Long-term memories an answer's prompt may carry (AgentConfig.long_term_limit).
    memories: int = 10
    #: The agent's whole token budget (prompt and answer; Budget.total_tokens).
    budget_tokens: int = 8_000
    #: Ask at most this many questions (None: all with evidence).
    questions: int | None = None
    #: Replay this conversation (a sample_id) instead of the longest.
    conversation: str | None = None


@dataclass(frozen=True, slots=True)
class Exchange:
    session: int
    query: str
    reply: str
    turns: tuple[int, ...]  # indices of the conversation's turns this exchange carries


def _line(turn: Turn) -> str:
    return _SPACE.sub(" ", f"[{turn.date}] {turn.speaker}: {turn.text}").strip()


def exchanges(conversation: Conversation) -> list[Exchange]:
    """The conversation as agent turns: in each session, a turn of the session's first
    speaker is a query and the other speaker's turns up to the next one are its answer."""
    out: list[Exchange] = []
    turns = conversation.turns
    session, index = 0, 0
    while index < len(turns):
        date, first = turns[index].date, turns[index].speaker
        while index < len(turns) and turns[index].date == date:
            asked = [index]
            index += 1
            while (
                index < len(turns) and turns[index].date == date and turns[index].speaker == first
            ):
                asked.append(index)
                index += 1
            answered = []
            while (
                index < len(turns) and turns[index].date == date and turns[index].speaker != first
            ):
                answered.append(index)
                index += 1
            out.append(
                Exchange(
                    session,
                    "\n".join(_line(turns[i]) for i in asked),
                    "\n".join(_line(turns[i]) for i in answered),
                    tuple(asked + answered),
                )
            )
        session += 1
    return out


def prompt_text(request: ChatRequest) -> str:
    return "\n".join([part.text for part in request.system] + [m.text for m in request.messages])


def prompt_tokens(request: ChatRequest) -> int:
    """The request's tokens as the prompt budget counts them (system parts and messages)."""
    return sum(estimate_tokens(part.text) for part in request.system) + sum(
        estimate_tokens(message.text) for message in request.messages
    )


class ReplayModel(ChatModel):
    """The recording stand-in for a chat model (see the module's docstring)."""

    provider: ClassVar[str] = "replay"

    def __init__(self) -> None:
        self.model = "replay-v1"
        #: What the next answer will be (set before each turn).
        self.reply = ""
        self.prompts: list[ChatRequest] = []
        self.extractions = 0
        self.summaries = 0
        self.judgements = 0

    async def generate(self, request: ChatRequest) -> ChatResponse:
        schema = (request.output_schema or {}).get("title")
        if schema == "JudgeVerdict":
            # Consolidation asks whether a new memory repeats or contradicts a close one;
            # the turns of a conversation are distinct statements.
            self.judgements += 1
            text = json.dumps({"relation": "unrelated"})
        elif request.output_schema is not None:
            self.extractions += 1
            text = json.dumps({"notes": _notes(request)}, ensure_ascii=False)
        else:
            self.summaries += 1
            text = _summary(request)
        return text_response(request, text, model=self.model)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        self.prompts.append(request)
        response = text_response(request, self.reply, model=request.model or self.model)
        if self.reply:
            yield TextDelta(self.reply)
        yield ResponseComplete(response)


def _transcript_lines(request: ChatRequest) -> list[str]:
    text = request.messages[-1].text if request.messages else ""
    start, end = text.find("<transcript>"), text.rfind("</transcript>")
    if start < 0 or end < start:
        return []
    lines = []
    for line in text[start + len("<transcript>") : end].splitlines():
        line = re.sub(r"^\[(?:user|assistant)\] ", "", line.strip())
        if line:
            lines.append(line)
    return lines


def _notes(request: ChatRequest) -> list[dict[str, str]]:
    lines = _transcript_lines(request)[:_NOTES_PER_EXTRACTION]
    notes = []
    for i, line in enumerate(lines):
        near = [lines[j][:_CONTEXT_CHARS] for j in (i - 1, i + 1) if 0 <= j < len(lines)]
        note = {"content": line}
        if near:
            note["context"] = "\n".join(near)
        notes.append(note)
    return notes


def _summary(request: ChatRequest) -> str:
    body = request.messages[-1].text if request.messages else ""
    previous, _, rest = body.partition("New messages, oldest first:\n")
    previous = previous.removeprefix("Existing summary:\n").strip()
    new = rest.split("\n\nWhat did the user say", 1)[0]
    lines = [] if previous in ("", "(none yet)") else previous.splitlines()
    for line in new.splitlines():
        line = re.sub(r"^(?:User|Assistant): ", "", line.strip())
        if line:
            lines.append(_SENTENCE.split(line, maxsplit=1)[0])
    kept: list[str] = []
    used = 0
    for line in reversed(lines):  # newest first, within the summary's length
        used += estimate_tokens(line) + 1
        if used > request.max_tokens:
            break
        kept.append(line)
    return "\n".join(reversed(kept)) or "(nothing yet)"


def _normalised(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


async def run_tokens(
    connection: Connection,
    embedder: Embedder,
    dataset: Path,
    settings: TokenSettings = TokenSettings(),
    *,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Replay a conversation of ``dataset`` and ask its questions; the run's data is erased
    again afterwards (also when it fails)."""
    started = time.perf_counter()
    conversations, _ = load_locomo(dataset)
    if settings.conversation is not None:
        chosen = [c for c in conversations if c.sample_id == settings.conversation]
        if not chosen:
            raise InvalidInputError(f"no conversation {settings.conversation!r} in {dataset}")
        conversation = chosen[0]
    else:
        conversation = max(conversations, key=lambda c: len(c.turns))
    plan = exchanges(conversation)
    if not plan:
        raise InvalidInputError(f"conversation {conversation.sample_id!r} has no turns")
    questions = [q for q in conversation.questions if q.evidence][: settings.questions]
    chat = ReplayModel()
    config = AgentConfig(
        AGENT_ID,
        long_term_limit=settings.memories,
        budget=Budget(total_tokens=settings.budget_tokens),
        run_formation_worker=False,
        formation_debounce_s=0.0,
    )
    tenant = Tenant(AGENT_ID, USER_ID)
    run = f"tokens-{uuid.uuid4().hex[:8]}"  # session ids are unique across users and agents
    per_turn: list[dict[str, Any]] = []
    asked: list[dict[str, Any]] = []
    async with RAGAgent(connection, embedder, chat, config=config) as agent:
        await agent.memories.forget_user(tenant)
        worker = FormationWorker(agent.memories, chat, queue=agent.queue, max_messages=40)
        try:
            history = estimate_tokens(config.system_prompt)  # a full-history prompt so far
            replay_started = time.perf_counter()
            for number, exchange in enumerate(plan):
                session_id = f"{run}-s{exchange.session + 1}"
                chat.reply = exchange.reply
                before = len(chat.prompts)
                result = await agent.process_query(USER_ID, session_id, exchange.query)
                request = chat.prompts[before]  # the answer's request (no tool rounds here)
                per_turn.append(
                    {
                        "turn": number + 1,
                        "session": exchange.session + 1,
                        "prompt_tokens": prompt_tokens(request),
                        "full_history_tokens": history + estimate_tokens(exchange.query),
                        "memories": len(result.manifest.memory_ids),
                        "messages": len(result.manifest.message_ids),
                        "summary": result.manifest.summary,
                    }
                )
                history += estimate_tokens(exchange.query)
                if exchange.reply:
                    history += estimate_tokens(exchange.reply)
                last_of_session = (
                    number + 1 == len(plan) or plan[number + 1].session != exchange.session
                )
                if last_of_session:
                    await agent.drain()
                    while await worker.run_once():
                        pass
                    if progress is not None:
                        progress(
                            f"session {exchange.session + 1}: {number + 1}/{len(plan)} turns, "
                            f"prompt {per_turn[-1]['prompt_tokens']} tokens against "
                            f"{per_turn[-1]['full_history_tokens']} for the full history"
                        )
            replay_seconds = time.perf_counter() - replay_started
            tool_tokens = estimate_tokens(
                json.dumps(
                    [[t.name, t.description, t.parameters] for t in chat.prompts[-1].tools],
                    ensure_ascii=False,
                )
            )
            questions_started = time.perf_counter()
            texts = [_normalised(turn.text) for turn in conversation.turns]
            for number, question in enumerate(questions):
                chat.reply = "OK."
                before = len(chat.prompts)
                await agent.process_query(USER_ID, f"{run}-q{number + 1}", question.text)
                sent = _normalised(prompt_text(chat.prompts[before]))
                evidence = [texts[e] for e in question.evidence if texts[e]]
                hits = await agent.memories.long_term.retrieve(tenant, question.text, k=10)
                asked.append(
                    {
                        "category": CATEGORIES.get(question.category, str(question.category)),
                        "in_prompt": any(text in sent for text in evidence),
                        "retrieval_rank": next(
                            (
                                rank
                                for rank, hit in enumerate(hits, 1)
                                if any(t in _normalised(hit.memory.content) for t in evidence)
                            ),
                            0,
                        ),
                        "prompt_tokens": prompt_tokens(chat.prompts[before]),
                    }
                )
                if progress is not None and (number + 1) % 50 == 0:
                    progress(f"asked {number + 1}/{len(questions)} questions")
            questions_seconds = time.perf_counter() - questions_started
            memories = await connection.collection("memories").count_documents(tenant.filter())
        finally:
            await agent.drain()
            await agent.memories.forget_user(tenant)
    return _result(
        dataset=str(dataset),
        conversation=conversation,
        settings=settings,
        config=config,
        per_turn=per_turn,
        asked=asked,
        tool_tokens=tool_tokens,
        memories=memories,
        chat=chat,
        embedder=embedder.signature.describe(),
        seconds=time.perf_counter() - started,
        replay_seconds=replay_seconds,
        questions_seconds=questions_seconds,
    )


def _share(rows: list[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> float:
    return round(float(np.mean([test(row) for row in rows])), 4) if rows else 0.0


def _result(
    *,
    dataset: str,
    conversation: Conversation,
    settings: TokenSettings,
    config: AgentConfig,
    per_turn: list[dict[str, Any]],
    asked: list[dict[str, Any]],
    tool_tokens: int,
    memories: int,
    chat: ReplayModel,
    embedder: str,
    seconds: float,
    replay_seconds: float,
    questions_seconds: float,
) -> dict[str, Any]:
    budget = config.budget.prompt_tokens
    last = per_turn[-1]
    prompts = [row["prompt_tokens"] for row in per_turn] + [row["prompt_tokens"] for row in asked]
    per_category: dict[str, Any] = {}
    for name in sorted({row["category"] for row in asked}):
        rows = [row for row in asked if row["category"] == name]
        per_category[name] = {
            "questions": len(rows),
            "evidence_in_prompt": _share(rows, lambda r: r["in_prompt"]),
            "retrieval_recall_at_10": _share(rows, lambda r: 0 < r["retrieval_rank"] <= 10),
        }
    return {
        "dataset": dataset,
        "conversation": conversation.sample_id,
        "conversation_turns": len(conversation.turns),
        "agent_turns": len(per_turn),
        "sessions": per_turn[-1]["session"],
        "embedder": embedder,
        "settings": {
            "long_term_limit": settings.memories,
            "short_term_limit": config.short_term_limit,
            "budget_total_tokens": config.budget.total_tokens,
            "prompt_budget_tokens": budget,
        },
        "tool_definition_tokens": tool_tokens,
        "last_turn": {
            "prompt_tokens": last["prompt_tokens"],
            "full_history_tokens": last["full_history_tokens"],
            "reduction": round(1 - last["prompt_tokens"] / last["full_history_tokens"], 4),
        },
        "prompt_tokens": {
            "max": max(prompts),
            "p50": float(np.percentile(prompts, 50)),
            "mean": round(float(np.mean(prompts)), 1),
        },
        "over_budget": sum(1 for tokens in prompts if tokens > budget),
        "questions": len(asked),
        "evidence_in_prompt": _share(asked, lambda r: r["in_prompt"]),
        "retrieval_recall": {
            str(k): _share(asked, lambda r, k=k: 0 < r["retrieval_rank"] <= k) for k in (1, 5, 10)
        },
        "per_category": per_category,
        "memories_formed": memories,
        "model_calls": {
            "answers": len(chat.prompts),
            "extractions": chat.extractions,
            "summaries": chat.summaries,
            "consolidation_judgements": chat.judgements,
        },
        "per_turn": per_turn,
        "per_question": asked,
        "seconds": round(seconds, 1),
        "replay_seconds": round(replay_seconds, 1),
        "questions_seconds": round(questions_seconds, 1),
    }


def render_tokens(data: dict[str, Any]) -> str:
    """A markdown summary: tokens at points of the replay, the budget, evidence."""
    rows = data["per_turn"]
    picks = sorted({0, len(rows) // 4, len(rows) // 2, 3 * len(rows) // 4, len(rows) - 1})
    settings = data["settings"]
    lines = [
        f"{data['conversation']} ({data['conversation_turns']} turns in {data['sessions']} "
        f"sessions) replayed as {data['agent_turns']} agent turns; embedder {data['embedder']}; "
        f"{settings['long_term_limit']} memories and {settings['short_term_limit']} recent "
        f"messages per prompt; prompt budget {settings['prompt_budget_tokens']} tokens; "
        f"{data['seconds']} s.",
        "",
        "| agent turn | session | prompt tokens | full history tokens | saved |",
        "|---|---|---|---|---|",
        *(
            f"| {rows[i]['turn']} | {rows[i]['session']} | {rows[i]['prompt_tokens']} | "
            f"{rows[i]['full_history_tokens']} | "
            f"{1 - rows[i]['prompt_tokens'] / rows[i]['full_history_tokens']:.1%} |"
            for i in picks
        ),
        "",
        f"Largest prompt {data['prompt_tokens']['max']} tokens (budget "
        f"{settings['prompt_budget_tokens']}; {data['over_budget']} over); tool definitions "
        f"add {data['tool_definition_tokens']} tokens to every request, the same with or "
        "without memory.",
        "",
        f"{data['questions']} questions, each in a new session: evidence reached the prompt for "
        f"{data['evidence_in_prompt']:.3f}; retrieval over the same memories found it in the "
        f"top 10 for {data['retrieval_recall']['10']:.3f} (top 5 "
        f"{data['retrieval_recall']['5']:.3f}, top 1 {data['retrieval_recall']['1']:.3f}).",
        "",
        "| category | questions | evidence in prompt | retrieval R@10 |",
        "|---|---|---|---|",
        *(
            f"| {name} | {cat['questions']} | {cat['evidence_in_prompt']:.3f} | "
            f"{cat['retrieval_recall_at_10']:.3f} |"
            for name, cat in data["per_category"].items()
        ),
    ]
    return "\n".join(lines) + "\n"


def plot(data: dict[str, Any], path: Path) -> None:
    """Prompt tokens per turn against the full history, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["per_turn"]
    figure, axes = plt.subplots(figsize=(6, 4), dpi=120)
    turns = [row["turn"] for row in rows]
    axes.plot(turns, [row["full_history_tokens"] for row in rows], label="full history")
    axes.plot(turns, [row["prompt_tokens"] for row in rows], label="agent_memory prompt")
    axes.axhline(
        data["settings"]["prompt_budget_tokens"], color="grey", linestyle="--", label="budget"
    )
    axes.set_xlabel("agent turn")
    axes.set_ylabel("prompt tokens (estimated)")
    axes.set_title(f"LoCoMo {data['conversation']} replayed through the agent")
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def write_outputs(data: dict[str, Any], out: Path) -> tuple[Path, Path]:
    """The JSON result at ``out``, the markdown summary and the PNG plot beside it."""
    return write_with_plot(out, data, render_tokens(data), lambda image: plot(data, image))

"""Concurrency: many users' sessions at once through one RAGAgent, and nothing lost or crossed.

``agent-memory bench concurrency --sessions 200 --turns 5``

Every session belongs to a different user, who first has a memory of their own stored
(carrying a marker unique to them). All sessions then run their turns at the same time, each
turn waiting for the previous one of its session, as a user would. Checked afterwards,
reading back what was stored:

- every session holds exactly its own messages, in order (none lost, none duplicated, none
  from another session: each message carries its session's marker and turn number);
- every turn's prompt and every memory it used belonged to the asking user (the chat model
  records the prompts; a prompt containing another user's marker is a crossed read);
- every turn has its one episodic record.

Throughput (turns per second) and p50/p95 turn latency are reported with the checks.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agent_memory.agent.config import AgentConfig
from agent_memory.agent.rag_agent import RAGAgent
from agent_memory.errors import NotFoundError
from agent_memory.mongo.connection import Connection
from agent_memory.providers.chat.base import ChatRequest
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.providers.embedders.base import Embedder
from agent_memory.tenancy import Tenant

__all__ = ["ConcurrencySettings", "crossed_reads", "render_concurrency", "run_concurrency"]

_MARKER = re.compile(r"\bmk[0-9a-f]{12}\b")


@dataclass(frozen=True, slots=True)
class ConcurrencySettings:
    sessions: int = 200
    turns: int = 5
    #: The simulated chat model's answer time, seconds.
    chat_seconds: float = 0.05


async def run_concurrency(
    connection: Connection,
    embedder: Embedder,
    settings: ConcurrencySettings,
    *,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    agent_id = f"bench-conc-{uuid.uuid4().hex[:6]}"
    markers = {f"u{i:04d}": f"mk{uuid.uuid4().hex[:12]}" for i in range(settings.sessions)}
    prompts: list[tuple[str, str]] = []  # (asking user's marker, prompt text)

    def answer(request: ChatRequest) -> str:
        text = request.system_text + "\n" + "\n".join(m.text for m in request.messages)
        asked = _MARKER.findall(request.messages[-1].text)
        prompts.append((asked[-1] if asked else "", text))
        return f"noted {asked[-1] if asked else ''}"

    chat = FakeChatModel(default=answer, delay=settings.chat_seconds)
    config = AgentConfig(agent_id, run_formation_worker=False, formation_debounce_s=3600)
    latencies: list[float] = []
    errors: list[str] = []
    actions: dict[str, list[str]] = {user: [] for user in markers}
    async with RAGAgent(connection, embedder, chat, config=config) as agent:
        for user, marker in markers.items():
            await agent.memories.long_term.store(
                Tenant(agent_id, user), f"The user's favourite code word is {marker}."
            )
        if progress is not None:
            progress(f"stored one memory for each of {len(markers)} users")

        async def session(user: str, marker: str) -> None:
            for turn in range(settings.turns):
                started = time.perf_counter()
                try:
                    result = await agent.process_query(
                        user, f"{user}-{agent_id}", f"turn {turn} {marker}: what is my code word?"
                    )
                    actions[user].append(result.action_id)
                except Exception as exc:  # counted and reported, never hidden
                    errors.append(f"{user} turn {turn}: {type(exc).__name__}: {exc}"[:300])
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(session(user, marker) for user, marker in markers.items()))
        elapsed = time.perf_counter() - started
        await agent.drain()
        checks = await _check(agent, agent_id, markers, settings.turns, prompts, actions)
        for user in markers:
            await agent.memories.forget_user(Tenant(agent_id, user))
    turns = settings.sessions * settings.turns
    return {
        "settings": {
            "sessions": settings.sessions,
            "turns": settings.turns,
            "chat_seconds": settings.chat_seconds,
        },
        "turns": turns,
        "seconds": round(elapsed, 2),
        "turns_per_second": round(turns / elapsed, 1),
        "turn_ms": {
            "p50": round(float(np.percentile(latencies, 50)) * 1000, 1),
            "p95": round(float(np.percentile(latencies, 95)) * 1000, 1),
        },
        "errors": len(errors),
        "error_samples": errors[:5],
        **checks,
        "ok": not errors and checks["lost_messages"] == 0 and checks["crossed"] == 0,
    }


async def _check(
    agent: RAGAgent,
    agent_id: str,
    markers: dict[str, str],
    turns: int,
    prompts: list[tuple[str, str]],
    actions: dict[str, list[str]],
) -> dict[str, Any]:
    lost = duplicated = misplaced = out_of_order = missing_actions = 0
    for user, marker in markers.items():
        tenant = Tenant(agent_id, user)
        session_id = f"{user}-{agent_id}"
        messages = await agent.memories.conversation.messages_after(
            tenant, session_id, None, limit=4 * turns + 10
        )
        asked = [m for m in messages if m.role == "user"]
        numbers = [int(m.content.split()[1]) for m in asked if m.content.startswith("turn ")]
        lost += len(set(range(turns)) - set(numbers))
        duplicated += len(numbers) - len(set(numbers))
        out_of_order += numbers != sorted(numbers)
        misplaced += sum(
            1 for m in messages for found in _MARKER.findall(m.content) if found != marker
        )
        for action_id in actions[user]:
            try:
                action = await agent.memories.episodic.get_action(tenant, action_id)
            except NotFoundError:
                missing_actions += 1
                continue
            misplaced += action.session_id != session_id
        missing_actions += turns - len(actions[user])
    crossed = sum(1 for asker, text in prompts for found in _MARKER.findall(text) if found != asker)
    return {
        "lost_messages": lost,
        "duplicated_messages": duplicated,
        "sessions_out_of_order": out_of_order,
        "messages_in_another_session": misplaced,
        "missing_actions": missing_actions,
        "crossed": crossed + misplaced,
        "prompts_checked": len(prompts),
    }


def crossed_reads(prompts: list[tuple[str, str]]) -> int:
    """Markers of other users found in the prompts built for a user (each is a crossed read)."""
    return sum(1 for asker, text in prompts for found in _MARKER.findall(text) if found != asker)


def render_concurrency(result: dict[str, Any]) -> str:
    s = result["settings"]
    return (
        "\n".join(
            [
                f"{s['sessions']} sessions x {s['turns']} turns at once, chat model "
                f"{s['chat_seconds'] * 1000:.0f} ms, {result.get('server', 'embedded server')}"
                + (f", embedder {result['embedder']}." if result.get("embedder") else "."),
                "",
                "| turns | seconds | turns/s | p50 ms | p95 ms | errors | lost | duplicated | "
                "crossed | missing actions |",
                "|---|---|---|---|---|---|---|---|---|---|",
                f"| {result['turns']} | {result['seconds']} | {result['turns_per_second']} | "
                f"{result['turn_ms']['p50']} | {result['turn_ms']['p95']} | {result['errors']} | "
                f"{result['lost_messages']} | {result['duplicated_messages']} | {result['crossed']} | "
                f"{result['missing_actions']} |",
                "",
                "nothing lost or crossed" if result["ok"] else "FAILED: see the counts above",
            ]
        )
        + "\n"
    )

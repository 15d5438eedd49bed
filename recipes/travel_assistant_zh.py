"""旅行助手 (seed 003) as a Telegram bot, in Chinese: it remembers the user across sessions.

What it shows:

- a ``TelegramAdapter`` that turns Bot API ``Update`` JSON into agent turns and the agent's
  answers into ``sendMessage`` payloads. A Telegram user is an agent user (in a group, the
  pair chat + user, as seed 003 suggests, so nothing said in private shows up in a group); a
  session starts on ``/start`` (or ``/new``) and after an idle gap (6 hours by default);
- the user tells the bot their name, seat and diet in Chinese on day one; the agent's
  formation worker turns that into profile facts (the ``User`` profile: ``user_name`` and
  ``preferences`` ``{"座位": "靠窗", "饮食": "素食"}``) and long-term memories;
- then, as in seed 003's second round, the user asks what the bot remembered; it answers from
  memory, and the recipe prints the turn's route and what it remembered that reached the
  prompt: the profile (every prompt carries it) and the memories in the turn's manifest. The
  offline model answers by shared words, so the question names what it asks about (名字、座位
  和饮食); Claude answers the seed's bare question from the same prompt;
- the next day a new session starts (idle gap), its short-term memory is empty, and the bot
  answers from what it remembers, plus a small shared travel knowledge base; another user of
  the bot sees none of it. For the cherry-blossom flight question (seed 003's third round)
  the recipe prints again what reached the prompt: name, seat and diet are there for the
  model to use. The offline model quotes only the best-matching line (the knowledge base's
  cherry-blossom tip); Claude writes the recommendation around the user's seat and diet.

Nothing goes to Telegram here: the adapter sends through an ``httpx.AsyncClient``, and the
recipe gives it an ``httpx.MockTransport`` that records each request and answers like the Bot
API. Against the real Bot API, pass a plain client (webhook or getUpdates loop)::

    client = httpx.AsyncClient(base_url=f"https://api.telegram.org/bot{token}/")
    bot = TelegramAdapter(agent, client)
    await bot.handle(update)            # each Update from getUpdates or your webhook route

Run it (embedded database, offline models)::

    . .venv/bin/activate    # once per shell: the virtual environment of README's quick start
    python recipes/travel_assistant_zh.py

The offline chat model quotes what it was given (labelled ``[offline model]``, with an
English frame around the Chinese facts); Claude answers in Chinese as the system prompt asks.
Production: MONGODB_URI to Atlas (or atlas-local from docker-compose.yml) and
``agent-memory indexes setup`` once; AGENT_MEMORY_CHAT_MODEL=anthropic with ANTHROPIC_API_KEY;
AGENT_MEMORY_EMBEDDER=voyage with VOYAGE_API_KEY (the default local embedder is multilingual
too).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_memory import (
    AgentConfig,
    AgentMemoryError,
    IndexManager,
    RAGAgent,
    SharedKnowledge,
    Tenant,
    TurnResult,
    connect,
    load_settings,
    make_chat_model,
    make_embedder,
)

logger = structlog.get_logger(__name__)

AGENT_ID = "travel-assistant"
SYSTEM_PROMPT = (
    "你是旅行助手。请用中文回答。根据对话历史、用户资料和记忆回答，称呼用户的名字，"
    "推荐航班时考虑用户的座位和饮食偏好；不要臆造用户没说过的偏好或名字。"
)
GREETING = "你好！我是旅行助手。告诉我你的名字和出行偏好（座位、饮食），下次我都会记得。"
NOT_TEXT = "请发一段文字，我会作为旅行助手回复你。"
FAILED = "抱歉，处理时出错了，请稍后再试。"
NEW_SESSION_COMMANDS = ("/start", "/new")
MAX_MESSAGE_CHARS = 4096  # the Bot API's limit for one message's text


# --- the Telegram Bot API shapes the adapter reads (everything else in an update is ignored) ---


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class TgUser(_Model):
    id: int
    is_bot: bool = False
    first_name: str = ""


class TgChat(_Model):
    id: int
    type: str  # private, group, supergroup, channel


class TgMessage(_Model):
    message_id: int
    date: int  # unix time
    chat: TgChat
    sender: TgUser | None = Field(default=None, alias="from")
    text: str | None = None


class TgUpdate(_Model):
    update_id: int
    message: TgMessage | None = None


@dataclass(frozen=True, slots=True)
class Handled:
    """What one update did: the agent user and session it went to, why a session started
    (``""``: it continued one), the ``sendMessage`` payloads sent, and the agent's turn (its
    route and prompt manifest; ``None`` when no turn ran: a command, not text, a failure)."""

    user_id: str
    session_id: str
    new_session: str
    sent: tuple[dict[str, Any], ...]
    turn: TurnResult | None = None


class TelegramAdapter:
    """Telegram chats to agent users and sessions; updates to turns; answers to messages.

    Updates of one chat should be handled in order (as a getUpdates loop does); an update
    delivered twice (a retried webhook) is answered once. An update counts as delivered once
    it was handled: if handling it raised, a redelivery is handled again.
    """

    def __init__(
        self,
        agent: RAGAgent,
        client: httpx.AsyncClient,
        *,
        idle_gap: timedelta = timedelta(hours=6),
        remembered_updates: int = 1_000,
    ) -> None:
        self.agent = agent
        self.client = client
        self.idle_gap = idle_gap
        self._sessions: dict[str, tuple[str, datetime]] = {}  # user -> (session, last message)
        self._seen: OrderedDict[int, None] = OrderedDict()  # handled, newest last
        self._handling: set[int] = set()  # being handled: a redelivery meanwhile is a duplicate
        self._remembered = remembered_updates

    @staticmethod
    def user_id(message: TgMessage) -> str:
        """The agent user of a message: the Telegram user in a private chat, the pair chat +
        user in a group (a user's private memories never answer in a group)."""
        assert message.sender is not None
        if message.chat.type == "private":
            return f"tg-{message.sender.id}"
        return f"tg-{message.chat.id}-{message.sender.id}"

    async def session_for(
        self, user_id: str, message: TgMessage, *, command: bool
    ) -> tuple[str, str]:
        """The session for ``message`` and why it is new (``""`` if it continues one)."""
        sent_at = datetime.fromtimestamp(message.date, UTC)
        known = self._sessions.get(user_id)
        if known is None:  # e.g. after a restart: the user's latest session in the store
            latest = await self.agent.memories.conversation.list_sessions(
                Tenant(self.agent.config.agent_id, user_id), limit=1
            )
            if latest:
                known = (latest[0].session_id, latest[0].last_active_at)
        if command:
            reason = message.text.split()[0] if message.text else "command"
        elif known is None:
            reason = "first message"
        elif sent_at - known[1] > self.idle_gap:
            reason = f"idle for {(sent_at - known[1]) / timedelta(hours=1):.0f} h"
        else:
            self._sessions[user_id] = (known[0], sent_at)
            return known[0], ""
        # Named after the message that opens it: a redelivered update finds the same session.
        session_id = f"tg-{message.chat.id}-{message.message_id}"
        await self.agent.start_new_session(user_id, session_id)
        self._sessions[user_id] = (session_id, sent_at)
        return session_id, reason

    async def handle(self, update: Mapping[str, Any]) -> Handled | None:
        """Answer one ``Update``; ``None`` when there is nothing to answer (not a message, a
        bot's message, a duplicate, or not an update at all)."""
        try:
            parsed = TgUpdate.model_validate(update)
        except ValidationError as exc:
            logger.warning("telegram_update_ignored", reason="invalid", errors=exc.error_count())
            return None
        message = parsed.message
        if message is None or message.sender is None or message.sender.is_bot:
            return None
        if parsed.update_id in self._seen or parsed.update_id in self._handling:
            logger.info("telegram_update_ignored", reason="duplicate")
            return None
        self._handling.add(parsed.update_id)
        try:
            handled = await self._answer(message)
        finally:
            self._handling.discard(parsed.update_id)
        # Seen only once handled: an update whose handling raised is handled on redelivery.
        self._seen[parsed.update_id] = None
        while len(self._seen) > self._remembered:
            self._seen.popitem(last=False)
        return handled

    async def _answer(self, message: TgMessage) -> Handled:
        user_id = self.user_id(message)
        text = (message.text or "").strip()
        command = text.split()[0].split("@")[0] if text.startswith("/") else ""
        session_id, new = await self.session_for(
            user_id, message, command=command in NEW_SESSION_COMMANDS
        )
        result = None
        if command in NEW_SESSION_COMMANDS:
            replies = [GREETING]
        elif not text or command:
            replies = [NOT_TEXT]
        else:
            try:
                result = await self.agent.process_query(user_id, session_id, text)
                replies = _pieces(result.answer)
            except AgentMemoryError as exc:  # the user gets a short note, the log the reason
                logger.error("telegram_turn_failed", error=type(exc).__name__, detail=str(exc))
                replies = [FAILED]
        sent = []
        for reply in replies:
            payload = {
                "chat_id": message.chat.id,
                "text": reply,
                "reply_parameters": {"message_id": message.message_id},
            }
            await self._send(payload)
            sent.append(payload)
        return Handled(user_id, session_id, new, tuple(sent), result)

    async def _send(self, payload: dict[str, Any]) -> None:
        """POST sendMessage. A failure is logged, not raised: one undeliverable reply must
        not stop the bot from answering the next update."""
        try:
            response = await self.client.post("sendMessage", json=payload)
            body = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            logger.error("telegram_send_failed", error=type(exc).__name__)
            return
        if not isinstance(body, dict) or not body.get("ok"):
            detail = body.get("description") if isinstance(body, dict) else None
            logger.error("telegram_send_failed", status=response.status_code, detail=detail)


def _pieces(text: str) -> list[str]:
    """``text`` in messages Telegram accepts (at most 4096 characters each)."""
    text = text.strip() or "…"
    return [text[i : i + MAX_MESSAGE_CHARS] for i in range(0, len(text), MAX_MESSAGE_CHARS)]


# --- the script: recorded-shaped updates, and a transport that plays the Bot API ----------------

KNOWLEDGE = "\n".join(
    [
        "日本樱花季一般在3月下旬到4月上旬，东京和京都的航班与酒店都很紧张，建议提前一到两个月预订航班。",
        "上海飞东京约3小时，北京飞东京约3.5小时。",
        "京都寺院的精进料理全部是素食，适合吃素的旅客。",
    ]
)
DAY_1 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
DAY_2 = DAY_1 + timedelta(days=1)
XIAOMING = {"id": 7001, "is_bot": False, "first_name": "小明", "language_code": "zh-hans"}
XIAOHONG = {"id": 7002, "is_bot": False, "first_name": "小红", "language_code": "zh-hans"}


def update(update_id: int, who: dict[str, Any], text: str, at: datetime) -> dict[str, Any]:
    """A private-chat text ``Update`` as the Bot API sends it."""
    message: dict[str, Any] = {
        "message_id": update_id % 1000,
        "from": who,
        "chat": {"id": who["id"], "first_name": who["first_name"], "type": "private"},
        "date": int(at.timestamp()),
        "text": text,
    }
    if text.startswith("/"):
        message["entities"] = [{"offset": 0, "length": len(text.split()[0]), "type": "bot_command"}]
    return {"update_id": update_id, "message": message}


SESSION_1 = [
    update(815000001, XIAOMING, "/start", DAY_1),
    update(
        815000002,
        XIAOMING,
        "我叫小明，下次订票请帮我选靠窗，我吃素食。",
        DAY_1 + timedelta(minutes=1),
    ),
    update(815000003, XIAOHONG, "你好，我叫小红，我喜欢过道的座位。", DAY_1 + timedelta(minutes=2)),
]
# Seed 003's second round, on day 1 once the memories are formed: what did you just remember?
RECALL = update(
    815000004,
    XIAOMING,
    "刚才你记住了我的哪些信息？名字、座位和饮食呢？",
    DAY_1 + timedelta(minutes=5),
)
SESSION_2 = [
    update(815000101, XIAOMING, "我叫什么名字？", DAY_2),
    update(815000102, XIAOMING, "订机票时我应该选什么座位？", DAY_2 + timedelta(minutes=1)),
    update(815000103, XIAOMING, "我的饮食有什么要求？", DAY_2 + timedelta(minutes=2)),
    update(
        815000104,
        XIAOMING,
        "我想下个月去日本看樱花，有适合的航班推荐吗？",
        DAY_2 + timedelta(minutes=3),
    ),
    update(815000105, XIAOHONG, "订机票时我应该选什么座位？", DAY_2 + timedelta(minutes=4)),
]


TRIP = SESSION_2[3]  # seed 003's third round: a recommendation that should use what it knows


def bot_api(recorded: list[dict[str, Any]]) -> httpx.MockTransport:
    """Plays the Bot API's sendMessage: records the request, answers with the sent Message."""

    def reply(request: httpx.Request) -> httpx.Response:
        payload = json.loads(request.content)
        recorded.append({"method": request.url.path.rsplit("/", 1)[-1], **payload})
        message = {"message_id": 9000 + len(recorded), "chat": {"id": payload["chat_id"]}}
        return httpx.Response(
            200, json={"ok": True, "result": {**message, "text": payload["text"]}}
        )

    return httpx.MockTransport(reply)


def show(raw: dict[str, Any], handled: Handled | None) -> None:
    message = raw["message"]
    print(f"{message['from']['first_name']}: {message['text']}")
    if handled is None:
        print("  (nothing to answer)")
        return
    if handled.new_session:
        print(f"  [new session {handled.session_id} for {handled.user_id}: {handled.new_session}]")
    for payload in handled.sent:
        print(f"  sendMessage {json.dumps(payload, ensure_ascii=False)}")


async def remembered_in_prompt(agent: RAGAgent, handled: Handled) -> list[str]:
    """What the agent remembered about the user that went into this turn's prompt: the
    profile, which every prompt carries whole (``agent_memory/agent/prompt.py``), and the
    long-term memories listed in the turn's manifest."""
    assert handled.turn is not None
    tenant = Tenant(AGENT_ID, handled.user_id)
    profile = await agent.memories.profiles.render(tenant)
    lines = [f"profile {line.removeprefix('- ')}" for line in profile.splitlines()]
    for memory_id in handled.turn.manifest.all_memory_ids:
        memory = await agent.memories.long_term.get(tenant, memory_id)
        lines.append(f"memory  {memory.content}")
    return lines


async def show_prompt(agent: RAGAgent, handled: Handled | None) -> None:
    assert handled is not None and handled.turn is not None
    print(f"  [route: {handled.turn.route.level}; remembered, and in the prompt of this turn:]")
    for line in await remembered_in_prompt(agent, handled):
        print(f"    {line}")


async def wait_for_formation(agent: RAGAgent, users: list[str], timeout: float = 30.0) -> None:
    """Until the agent's worker has formed every queued session of ``users``."""
    await agent.drain()  # scheduling formation runs after the replies
    for user in users:  # the sessions are over: form them now, not after the debounce
        await agent.queue.expedite(Tenant(agent.config.agent_id, user))
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        jobs = [
            job
            for user in users
            for job in await agent.queue.jobs(Tenant(agent.config.agent_id, user))
        ]
        if jobs and all(job.status in ("done", "merged") for job in jobs):
            return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"memories were not formed within {timeout:.0f} s")


async def main() -> None:
    started = time.perf_counter()
    # This recipe's data in a database of its own, one per embedder (vectors of two models
    # cannot be compared), unless AGENT_MEMORY_DATABASE (or .env) names one.
    if "database" not in (chosen := load_settings()).model_fields_set:
        os.environ["AGENT_MEMORY_DATABASE"] = f"recipe_travel_assistant_zh_{chosen.embedder}"
    settings = load_settings()
    embedder, chat = make_embedder(settings), make_chat_model(settings)
    async with await connect(settings) as conn:
        await IndexManager(conn, embedder.signature).setup()
        config = AgentConfig(AGENT_ID, system_prompt=SYSTEM_PROMPT, formation_debounce_s=0.5)
        async with RAGAgent(conn, embedder, chat, config=config) as agent:
            print(f"{conn.tier} tier, {embedder.signature.describe()}, chat: {chat.model}\n")
            users = ["tg-7001", "tg-7002"]
            for user in users:  # a clean slate, so every run shows the same thing
                await agent.memories.forget_user(Tenant(AGENT_ID, user))
            await agent.memories.knowledge.ingest(
                SharedKnowledge(AGENT_ID), source="japan-tips.md", text=KNOWLEDGE
            )
            recorded: list[dict[str, Any]] = []
            async with httpx.AsyncClient(
                base_url="https://api.telegram.org/bot123456:TEST/", transport=bot_api(recorded)
            ) as client:
                bot = TelegramAdapter(agent, client)
                print("== 第一天 (day 1)")
                for raw in SESSION_1:
                    show(raw, await bot.handle(raw))
                again = await bot.handle(SESSION_1[1])
                print(
                    f"  (update {SESSION_1[1]['update_id']} delivered again, as a retried "
                    "webhook would: "
                    + ("not answered twice)" if again is None else f"answered AGAIN: {again})")
                )

                await wait_for_formation(agent, users)
                print("\n== 记忆形成 (memories formed by the agent's worker)")
                for user in users:
                    profile = await agent.memories.profiles.get(Tenant(AGENT_ID, user))
                    print(f"  {user}: {json.dumps(profile.data, ensure_ascii=False)}")

                print(
                    "\n== 第一天，稍后 (day 1, later: the same session, asked what it remembered)"
                )
                handled = await bot.handle(RECALL)
                show(RECALL, handled)
                await show_prompt(agent, handled)

                print("\n== 第二天 (day 2: a new session, short-term memory empty)")
                for raw in SESSION_2:
                    handled = await bot.handle(raw)
                    show(raw, handled)
                    if raw is TRIP:
                        await show_prompt(agent, handled)
            print(f"\n{len(recorded)} sendMessage requests recorded, none sent to Telegram")
    await chat.aclose()
    await embedder.aclose()
    print(f"done in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    # The library never configures logging; an application decides what it wants to see.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main())

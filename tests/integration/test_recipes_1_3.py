"""Recipes 1-3 do what they say: checked through their own pieces on the embedded server.

``test_recipes.py`` runs every recipe as a script once (``recipe_runs``); these tests import the
recipes and assert their behaviour: the web app recalls across sessions and keeps users apart,
the killed research worker is finished by another process within the checkpoint contract (the
script's own run for the restore, the one-write variant in process), and the Telegram adapter
maps chats to users and sessions and answers in Chinese from what it remembers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import re
import signal
import sys
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import httpx
import pytest
from structlog.testing import capture_logs

from agent_memory.agent.config import AgentConfig
from agent_memory.agent.rag_agent import RAGAgent
from agent_memory.errors import NotInitialisedError
from agent_memory.memory import Tenant
from agent_memory.memory.knowledge.base import SharedKnowledge
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.chat.offline import OfflineChatModel
from tests.integration.recipe_runs import RECIPES, run_cached, succeeded


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"recipe_{name}", RECIPES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


web = _load("support_agent_web")
research = _load("research_agent_resume")
travel = _load("travel_assistant_zh")


@pytest.fixture
async def indexed(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    return connection


# --- 1. the support agent in a web app -----------------------------------------------------------


async def test_web_app_recalls_across_sessions_and_keeps_concurrent_users_apart(settings, indexed):
    app = web.create_app(settings, formation_delay_s=0.0)
    async with app.router.lifespan_context(app):
        agent = app.state.agent
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            await asyncio.gather(
                *(web._talk(client, u, f"{u}-1", m) for u, m in web.SESSION_1.items())
            )
            await web._wait_for_formation(agent, list(web.SESSION_1))
            question = ["Which seat should I book for my flight?"]
            (alice,), (bob,) = await asyncio.gather(
                web._talk(client, "alice", "alice-2", question),
                web._talk(client, "bob", "bob-2", question),
            )
            assert "aisle" in alice["answer"] and "window" not in alice["answer"]
            assert "window" in bob["answer"] and "aisle" not in bob["answer"]
            assert alice["route"] == "memory" and alice["memories_used"] > 0
            assert alice["session_id"] == "alice-2" and alice["action_id"].startswith("act_")
            (faq,) = await web._talk(client, "bob", "bob-2", [web.BAGGAGE])
            assert "two checked bags of up to 32 kg" in faq["answer"]
            assert faq["documents_used"] >= 1

            rated = await client.post(
                "/feedback",
                json={"user_id": "alice", "action_id": alice["action_id"], "rating": 5},
            )
            assert rated.status_code == 200, rated.text
            assert rated.json()["credited"] == 1.0
            assert rated.json()["memories_credited"] == alice["memories_used"]

            # Bob cannot rate Alice's action, and trying writes nothing.
            foreign = await client.post(
                "/feedback", json={"user_id": "bob", "action_id": alice["action_id"], "rating": 1}
            )
            assert foreign.status_code == 404
            action = await agent.memories.episodic.get_action(
                Tenant(web.AGENT_ID, "alice"), alice["action_id"]
            )
            assert action.feedback["rating"] == 5

            bad = [
                ("/feedback", {"user_id": "alice", "action_id": alice["action_id"]}),
                ("/feedback", {"user_id": "alice", "action_id": "x", "rating": "5"}),
                ("/feedback", {"user_id": "alice", "action_id": "x", "rating": 6}),
                ("/chat", {"user_id": "bob", "session_id": "", "message": "hi"}),
                ("/chat", {"user_id": "bob", "session_id": "s", "message": 1}),
                ("/chat", {"user_id": {"$ne": 1}, "session_id": "s", "message": "hi"}),
                ("/chat", {"user_id": "bob", "session_id": "s", "message": "x" * 8001}),
            ]
            for path, body in bad:
                response = await client.post(path, json=body)
                assert response.status_code == 422, (path, body, response.text)
            unknown = await client.post(
                "/feedback", json={"user_id": "alice", "action_id": "act_nope", "rating": 3}
            )
            assert unknown.status_code == 404 and "act_nope" in unknown.json()["detail"]
    assert not hasattr(app.state, "agent")  # the lifespan closed what it opened


async def test_web_app_refuses_to_start_on_a_server_without_indexes(settings, connection):
    # A server named by a URI (here the test server, no indexes in this database) is not set
    # up by the app: that is `agent-memory indexes setup`'s job at deploy time.
    app = web.create_app(settings)
    with pytest.raises(NotInitialisedError, match="agent-memory indexes setup"):
        async with app.router.lifespan_context(app):
            pass


# --- 2. the research agent killed and resumed ------------------------------------------------------


@pytest.mark.mongoeco
def test_research_script_restores_the_checkpoint_after_the_kill(tmp_path_factory, offline_env):
    # The script as a user runs it (its one run of the session, shared with the smoke test).
    out = succeeded(run_cached("research_agent_resume.py", offline_env, tmp_path_factory))
    assert "each step is two writes" in out
    assert "-> SIGKILL to process A in the middle of step 6" in out
    assert "process A exited with -9" in out
    assert "5 steps completed, step(s) [6] left in progress, 5 findings saved in the draft" in out
    assert "B: restored the last checkpoint: 3 steps completed, 3 findings in the draft" in out
    rows = re.findall(
        r"^(\d)\s+\w+ [\w -]+?\s{2,}(started, killed|completed|-)\s+(completed|-)", out, re.M
    )
    assert [(int(step), a, b) for step, a, b in rows] == [
        *((step, "completed", "-") for step in (1, 2, 3)),
        (4, "completed", "completed"),  # after the checkpoint: rolled back, run again
        (5, "completed", "completed"),
        (6, "started, killed", "completed"),
        (7, "-", "completed"),
        (8, "-", "completed"),
    ]
    assert "task completed; the draft holds 8 findings" in out
    assert "contract held: every step completed and drafted once, none of the 3 steps" in out


@pytest.mark.slow
async def test_research_worker_with_one_write_steps_resumes_from_the_live_state(
    settings, indexed, embedded_server, monkeypatch, capsys
):
    monkeypatch.setenv("MONGODB_URI", embedded_server.uri)  # the children connect there too
    monkeypatch.setenv("AGENT_MEMORY_DATABASE", settings.database)
    monkeypatch.setenv("AGENT_MEMORY_EMBEDDER", "fake")
    outcome = await research.scenario("resume")

    assert outcome.a.returncode == -signal.SIGKILL
    assert outcome.a.completed == [0, 1, 2, 3, 4] and outcome.a.started[-1] == 5
    assert outcome.checkpoint_step == 3
    assert outcome.b.completed == [5, 6, 7]  # only the interrupted step ran again
    assert outcome.b.returncode == 0 and outcome.b.events[-1] == {"event": "task_completed"}
    task = outcome.task
    assert task.status == "completed" and all(s.status == "completed" for s in task.plan)
    expected = [research.finding(i, step) for i, step in enumerate(research.PLAN)]
    # One write per step: the finding was saved by the update that completed the step.
    assert [s.result for s in task.plan] == [{"finding": text} for text in expected]
    assert task.context["draft"] == expected
    assert outcome.problems == []
    output = capsys.readouterr().out
    assert "each step is one write" in output
    assert "5 findings saved in step results" in output and "restored" not in output

    # The checker itself fails when the contract is broken.
    a, b = outcome.a, outcome.b
    redone = dataclasses.replace(b, completed=[0, *b.completed])
    assert any("kept steps ran again" in p for p in research.check(task, a, redone, 3))
    doubled = dataclasses.replace(task, context={"draft": [*expected, expected[0]]})
    assert any("each finding once" in p for p in research.check(doubled, a, b, 3))


# --- 3. the Chinese travel assistant behind its Telegram adapter ---------------------------------


def _update(update_id: int, text: str | None, *, chat: int = 7001, user: int = 7001, at=None):
    raw = travel.update(
        update_id,
        {"id": user, "is_bot": False, "first_name": "小明"},
        text or "",
        at or travel.DAY_1,
    )
    raw["message"]["chat"] = {"id": chat, "type": "private" if chat == user else "group"}
    if text is None:
        del raw["message"]["text"]
        raw["message"]["sticker"] = {"file_id": "abc", "emoji": "👍"}
    return raw


def _message(raw: dict[str, Any]):
    return travel.TgUpdate.model_validate(raw).message


def test_telegram_chats_map_to_agent_users():
    assert travel.TelegramAdapter.user_id(_message(_update(1, "hi"))) == "tg-7001"
    in_group = _message(_update(2, "hi", chat=-100500, user=7001))
    assert travel.TelegramAdapter.user_id(in_group) == "tg--100500-7001"
    other = _message(_update(3, "hi", chat=-100500, user=7002))
    assert travel.TelegramAdapter.user_id(other) == "tg--100500-7002"


def test_long_answers_are_split_into_telegram_sized_messages():
    pieces = travel._pieces("字" * 5000)
    assert [len(p) for p in pieces] == [4096, 904]
    assert travel._pieces("   ") == ["…"]


@pytest.fixture
async def agent(indexed, embedder):
    # Memories form when a test says the sessions are over (travel.wait_for_formation brings
    # them forward), never in the middle of one because the machine happened to be slow.
    config = AgentConfig(travel.AGENT_ID, formation_debounce_s=600.0, run_formation_worker=True)
    async with RAGAgent(indexed, embedder, OfflineChatModel(), config=config) as agent:
        yield agent


def _remembered(lines: list[str]) -> bool:
    """The name, seat and diet are all in the turn's prompt: profile and memories."""
    profile = [line for line in lines if line.startswith("profile ")]
    memories = [line for line in lines if line.startswith("memory ")]
    return (
        "profile user_name: 小明" in profile
        and "profile preferences: 座位: 靠窗; 饮食: 素食" in profile
        and all(any(word in m for m in memories) for word in ("小明", "靠窗", "素食"))
    )


def _bot(agent, recorded, reply=None):
    transport = httpx.MockTransport(reply) if reply else travel.bot_api(recorded)
    client = httpx.AsyncClient(base_url="https://api.telegram.org/botTEST/", transport=transport)
    return client, travel.TelegramAdapter(agent, client)


async def test_telegram_sessions_start_on_start_and_after_an_idle_gap(agent):
    recorded: list[dict[str, Any]] = []
    client, bot = _bot(agent, recorded)
    async with client:
        start = await bot.handle(_update(1, "/start"))
        assert (start.session_id, start.new_session) == ("tg-7001-1", "/start")
        assert start.sent == (
            {"chat_id": 7001, "text": travel.GREETING, "reply_parameters": {"message_id": 1}},
        )
        later = travel.DAY_1 + timedelta(minutes=5)
        turn = await bot.handle(_update(2, "我叫小明，我吃素食。", at=later))
        assert (turn.session_id, turn.new_session) == ("tg-7001-1", "")
        assert turn.sent[0]["text"].startswith("[offline model]")
        assert recorded[-1] == {"method": "sendMessage", **turn.sent[0]}

        assert await bot.handle(_update(2, "我叫小明，我吃素食。", at=later)) is None  # retried
        sticker = await bot.handle(_update(3, None, at=later))
        assert sticker.sent[0]["text"] == travel.NOT_TEXT
        from_bot = _update(6, "hi")
        from_bot["message"]["from"]["is_bot"] = True
        for ignored in (
            {"update_id": 4, "channel_post": {"message_id": 1}},
            {"update_id": "five", "message": {}},
            ["not", "an", "update"],
            from_bot,
        ):
            assert await bot.handle(ignored) is None
        assert len(recorded) == 3  # greeting, answer, the note about text

        idle = await bot.handle(_update(7, "我住在哪里？", at=travel.DAY_1 + timedelta(hours=7)))
        assert (idle.session_id, idle.new_session) == ("tg-7001-7", "idle for 7 h")
        window = await agent.memories.conversation.window(
            Tenant(travel.AGENT_ID, "tg-7001"), "tg-7001-1"
        )
        assert [m.content for m in window if m.role == "user"] == ["我叫小明，我吃素食。"]

        # A group member is another agent user, with sessions of their own.
        group = await bot.handle(_update(8, "/new", chat=-100500, user=7001, at=later))
        assert (group.user_id, group.session_id) == ("tg--100500-7001", "tg--100500-8")

    # After a restart the adapter continues the user's latest stored session.
    client, restarted = _bot(agent, recorded)
    async with client:
        now = datetime.now(UTC)
        again = await restarted.handle(_update(9, "我吃素食。", at=now))
        assert (again.session_id, again.new_session) == ("tg-7001-7", "")


async def test_telegram_send_failures_are_logged_and_the_bot_carries_on(agent):
    calls: list[int] = []

    def failing_api(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            raise httpx.ConnectError("unreachable", request=request)
        return httpx.Response(403, json={"ok": False, "description": "Forbidden: bot was blocked"})

    client, bot = _bot(agent, [], reply=failing_api)
    async with client:
        with capture_logs() as logs:
            first = await bot.handle(_update(1, "/start"))
            second = await bot.handle(_update(2, "/start"))
    assert first.sent and second.sent and len(calls) == 2
    failures = [e for e in logs if e["event"] == "telegram_send_failed"]
    assert failures[0]["error"] == "ConnectError"
    assert failures[1]["detail"] == "Forbidden: bot was blocked" and failures[1]["status"] == 403


async def test_a_telegram_update_whose_handling_failed_is_handled_when_redelivered(
    agent, monkeypatch
):
    answer = agent.process_query
    calls = []

    async def crashing_once(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError("a bug, or a failure that is no AgentMemoryError")
        return await answer(*args, **kwargs)

    monkeypatch.setattr(agent, "process_query", crashing_once)
    recorded: list[dict[str, Any]] = []
    client, bot = _bot(agent, recorded)
    async with client:
        raw = _update(1, "我叫小明。")
        with pytest.raises(RuntimeError):
            await bot.handle(raw)
        assert recorded == []  # nothing was answered
        redelivered = await bot.handle(raw)  # the webhook's retry is not taken for a duplicate
        assert redelivered is not None and redelivered.turn is not None
        assert [p["text"] for p in recorded] == [redelivered.turn.answer]
        assert await bot.handle(raw) is None  # handled now: a third delivery is a duplicate
    assert len(calls) == 2


async def test_travel_assistant_answers_in_chinese_from_what_it_remembers(agent):
    await agent.memories.knowledge.ingest(
        SharedKnowledge(travel.AGENT_ID), source="japan-tips.md", text=travel.KNOWLEDGE
    )
    recorded: list[dict[str, Any]] = []
    client, bot = _bot(agent, recorded)
    async with client:
        for raw in travel.SESSION_1:
            await bot.handle(raw)
        await travel.wait_for_formation(agent, ["tg-7001", "tg-7002"])
        profile = await agent.memories.profiles.get(Tenant(travel.AGENT_ID, "tg-7001"))
        assert profile.data == {
            "user_name": "小明",
            "preferences": {"座位": "靠窗", "饮食": "素食"},
        }
        # Seed 003's second round: what did you remember? Answered from memory.
        recall = await bot.handle(travel.RECALL)
        assert recall.session_id == "tg-7001-1" and recall.turn.route.level == "memory"
        assert all(word in recall.sent[0]["text"] for word in ("小明", "靠窗", "素食"))
        assert _remembered(await travel.remembered_in_prompt(agent, recall))
        answers = {}
        for raw in travel.SESSION_2:
            handled = await bot.handle(raw)
            answers[(handled.user_id, raw["message"]["text"])] = handled
    name = answers[("tg-7001", "我叫什么名字？")]
    assert name.new_session.startswith("idle for") and name.session_id == "tg-7001-101"
    assert "小明" in name.sent[0]["text"]
    seat = "订机票时我应该选什么座位？"
    assert "靠窗" in answers[("tg-7001", seat)].sent[0]["text"]
    assert "过道" not in answers[("tg-7001", seat)].sent[0]["text"]
    assert "过道" in answers[("tg-7002", seat)].sent[0]["text"]
    assert "靠窗" not in answers[("tg-7002", seat)].sent[0]["text"]
    assert "素食" in answers[("tg-7001", "我的饮食有什么要求？")].sent[0]["text"]
    trip = answers[("tg-7001", "我想下个月去日本看樱花，有适合的航班推荐吗？")]
    assert "樱花季" in trip.sent[0]["text"]
    # Seed 003's third round: name, seat and diet reached the recommendation's prompt.
    assert trip.turn.route.level == "memory"
    assert _remembered(await travel.remembered_in_prompt(agent, trip))
    tenant = Tenant(travel.AGENT_ID, "tg-7001")
    in_manifest = [
        (await agent.memories.long_term.get(tenant, memory_id)).content
        for memory_id in trip.turn.manifest.memory_ids
    ]
    assert all(any(word in m for m in in_manifest) for word in ("小明", "靠窗", "素食"))
    assert not any("过道" in m for m in in_manifest)  # nothing of the other user's
    assert {p["chat_id"] for p in recorded} == {7001, 7002}
    assert all(p["method"] == "sendMessage" for p in recorded)


@pytest.mark.mongoeco
def test_travel_script_shows_what_reached_the_prompt(tmp_path_factory, offline_env):
    # The script as a user runs it (its one run of the session, shared with the smoke test).
    out = succeeded(run_cached("travel_assistant_zh.py", offline_env, tmp_path_factory))
    assert (
        "(update 815000002 delivered again, as a retried webhook would: not answered twice)" in out
    )
    recall = out.split("刚才你记住了我的哪些信息")[1].split("==")[0]
    trip = out.split("我想下个月去日本看樱花")[1].split("小红:")[0]
    for turn in (recall, trip):
        assert "[route: memory; remembered, and in the prompt of this turn:]" in turn
        assert (
            "profile user_name: 小明" in turn
            and "profile preferences: 座位: 靠窗; 饮食: 素食" in turn
        )
    assert all(word in recall.split("[route")[0] for word in ("小明", "靠窗", "素食"))  # the answer
    assert "樱花季" in trip.split("[route")[0]

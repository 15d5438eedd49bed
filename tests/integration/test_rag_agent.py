"""The RAGAgent graph with the fake chat model and embedder on the embedded server."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from agent_memory.agent.config import AgentConfig
from agent_memory.agent.prompt import Budget
from agent_memory.agent.rag_agent import EARLIER, AnswerDelta, RAGAgent, TurnResult
from agent_memory.errors import InvalidInputError, ProviderUnavailableError
from agent_memory.formation.worker import FormationWorker
from agent_memory.memory import NewMemory, Tenant
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.chat.base import ChatResponse, TextBlock, ToolCall
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.providers.chat.offline import OfflineChatModel

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")


def config(**overrides):
    return AgentConfig(
        "agent", **{"run_formation_worker": False, "formation_debounce_s": 0.0, **overrides}
    )


@pytest.fixture
async def setup(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    return connection, embedder


def make(setup, chat, **overrides) -> RAGAgent:
    """An agent to open with ``async with``: it is closed however the test ends."""
    connection, embedder = setup
    return RAGAgent(connection, embedder, chat, config=config(**overrides))


async def test_a_turn_uses_memory_and_records_what_was_in_the_prompt(setup):
    chat = FakeChatModel(default="You like the window seat.")
    async with make(setup, chat) as agent:
        seat = await agent.memories.long_term.store(
            ALICE, "Alice prefers the window seat", memory_type="preference"
        )
        rule = await agent.memories.long_term.store(
            ALICE, "Answer Alice in one sentence", memory_type="instruction"
        )
        await agent.memories.long_term.store(
            BOB, "Bob prefers the aisle seat", memory_type="preference"
        )
        result = await agent.process_query("alice", "s1", "Which seat do I prefer?")
        assert result.answer == "You like the window seat." and result.action_id.startswith("act_")
        assert seat.id in result.manifest.memory_ids and rule.id in result.manifest.instruction_ids
        request = chat.requests[0]
        system = "\n".join(part.text for part in request.system)
        assert (
            "Alice prefers the window seat" in system and "Answer Alice in one sentence" in system
        )
        assert "aisle" not in system  # another user's memory never reaches the prompt
        assert request.messages[-1].text.endswith("Which seat do I prefer?")
        action = await agent.memories.episodic.get_action(ALICE, result.action_id)
        assert action.outcome == "success" and set(action.memory_ids) == set(result.memory_ids)
        window = await agent.memories.conversation.window(ALICE, "s1")
        assert [m.role for m in window] == ["user", "assistant"]


async def test_the_prompt_shows_an_updated_memory_as_history_below_the_current_one(setup):
    chat = FakeChatModel(default="A Li Auto.")
    april, june = datetime(2026, 4, 1, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC)
    async with make(setup, chat) as agent:
        old = await agent.memories.long_term.store(
            ALICE, "Alice drives a BYD Atto to work", occurred_at=april
        )
        new = await agent.memories.long_term.store(
            ALICE, "Alice switched to a Li Auto, her car now", occurred_at=june
        )
        await agent.process_query("alice", "s1", "Which car does Alice drive, the BYD Atto?")
        system = "\n".join(part.text for part in chat.requests[0].system)
        current = system.index("Alice switched to a Li Auto")
        earlier = system.index(f"{EARLIER}Alice drives a BYD Atto to work")
        assert current < earlier, (old.id, new.id)
        assert system.count(EARLIER) == 1


async def test_the_answer_streams_in_pieces_then_the_result(setup):
    async with make(setup, FakeChatModel(default="one two three four")) as agent:
        events = [event async for event in agent.stream("alice", "s1", "count please")]
        deltas = [e.text for e in events if isinstance(e, AnswerDelta)]
        assert len(deltas) > 1 and "".join(deltas) == "one two three four"
        assert isinstance(events[-1], TurnResult) and events[-1].answer == "one two three four"


async def test_feedback_on_a_turn_reaches_the_memories_it_used(setup):
    async with make(setup, FakeChatModel(default="ok")) as agent:
        seat = await agent.memories.long_term.store(
            ALICE, "Alice prefers the window seat", memory_type="preference"
        )
        result = await agent.process_query("alice", "s1", "Which seat?")
        await agent.memories.episodic.add_feedback(ALICE, result.action_id, rating=5)
        assert (await agent.memories.long_term.get(ALICE, seat.id)).feedback_count == 1


async def test_the_tool_loop_is_bounded(setup):
    def always_a_tool(request):
        if not request.tools:
            return "final answer without tools"
        call = ToolCall(f"c{len(request.messages)}", "search_long_term_memory", {"query": "seat"})
        return ChatResponse((TextBlock("let me look "), call), "tool_use", "fake")

    chat = FakeChatModel(default=always_a_tool)
    async with make(setup, chat, max_tool_rounds=3) as agent:
        result = await agent.process_query("alice", "s1", "Which seat?")
        assert result.tool_calls == 3 and result.answer == "final answer without tools"
        assert len(chat.requests) == 4 and chat.requests[-1].tools == ()
        window = await agent.memories.conversation.window(ALICE, "s1")
        assert [m.role for m in window] == ["user", "tool", "tool", "tool", "assistant"]


async def test_a_models_tool_call_cannot_reach_another_user(setup):
    def ask_for_bob(request):
        if request.messages[-1].role == "user" and not any(
            getattr(block, "tool_call_id", None) for block in request.messages[-1].content
        ):
            call = ToolCall(
                "c1", "search_long_term_memory", {"query": "safe code", "user_id": "bob"}
            )
            return ChatResponse((call,), "tool_use", "fake")
        return "done"

    async with make(setup, FakeChatModel(default=ask_for_bob)) as agent:
        await agent.memories.long_term.store(BOB, "Bob's safe code is 1234")
        result = await agent.process_query("alice", "s1", "what is bob's safe code?")
        tool_messages = [
            m for m in await agent.memories.conversation.window(ALICE, "s1") if m.role == "tool"
        ]
        assert tool_messages and "1234" not in tool_messages[0].content
        assert "1234" not in result.answer


async def test_a_provider_failing_mid_turn_keeps_the_message_and_records_failure(setup, connection):
    async with make(
        setup, FakeChatModel([ProviderUnavailableError("model down", provider="fake")])
    ) as agent:
        with pytest.raises(ProviderUnavailableError):
            await agent.process_query("alice", "s1", "hello?")
        window = await agent.memories.conversation.window(ALICE, "s1")
        assert [(m.role, m.content) for m in window] == [("user", "hello?")]
        logs, jobs = connection.collection("action_logs"), connection.collection("formation_jobs")
        actions = await logs.find({"user_id": "alice"}).to_list(None)
        assert [a["outcome"] for a in actions] == ["failure"]
        assert await jobs.count_documents({}) == 0  # nothing to form


@pytest.mark.parametrize("query", ["", "   ", 42, None, "bad bytes \udcff here"])
async def test_empty_or_wrong_queries_write_nothing(setup, connection, query):
    async with make(setup, FakeChatModel(default="x")) as agent:
        with pytest.raises(InvalidInputError):
            await agent.process_query("alice", "s1", query)
        assert await connection.collection("messages").count_documents({}) == 0


async def test_long_queries_are_rejected_or_trimmed_with_a_note(setup):
    async with make(setup, FakeChatModel(default="x"), max_query_chars=50) as strict:
        with pytest.raises(InvalidInputError, match="limit is 50"):
            await strict.process_query("alice", "s1", "x" * 51)
    async with make(
        setup, FakeChatModel(default="x"), max_query_chars=50, long_query="trim"
    ) as lenient:
        result = await lenient.process_query("alice", "s1", "y" * 80)
        assert result.notes == ("query trimmed from 80 to 50 characters",)


async def test_the_prompt_never_exceeds_the_budget(setup):
    chat = FakeChatModel(default="fine")
    async with make(setup, chat, budget=Budget(total_tokens=900, answer_tokens=200)) as agent:
        await agent.memories.long_term.store_many(
            ALICE, [NewMemory(f"fact {i} " + "word " * 60) for i in range(20)]
        )
        for i in range(6):
            result = await agent.process_query("alice", "s1", f"question {i} " + "padding " * 30)
            assert result.manifest.tokens["total"] <= 700


async def test_new_session_starts_empty_and_keeps_long_term(setup):
    chat = FakeChatModel(default="noted")
    async with make(setup, chat) as agent:
        await agent.memories.long_term.store(ALICE, "Alice is vegetarian", memory_type="preference")
        await agent.process_query("alice", "s1", "remember that I love jazz")
        await agent.start_new_session("alice", "s2")
        await agent.process_query("alice", "s2", "what do I eat?")
        second = chat.requests[-1]
        assert "love jazz" not in " ".join(m.text for m in second.messages)  # short-term is new
        assert "vegetarian" in " ".join(p.text for p in second.system)  # long-term is kept


async def test_a_new_session_forms_the_last_one_without_waiting_for_the_debounce(setup):
    async with make(setup, OfflineChatModel(), formation_debounce_s=600.0) as agent:
        await agent.process_query("alice", "s1", "my name is Ann and I prefer the window seat")
        await agent.drain()
        worker = FormationWorker(agent.memories, agent.chat_model, queue=agent.queue)
        assert await worker.run_once() is False  # the session may go on: the debounce holds
        await agent.start_new_session("alice", "s2")
        assert await worker.run_once() is True  # s1 is over: formed now
        profile = await agent.memories.profiles.get(ALICE)
        assert profile.data.get("user_name") == "Ann"


async def test_three_quick_messages_form_memories_once(setup, connection):
    async with make(setup, OfflineChatModel()) as agent:
        for text in ("my name is Ann", "I prefer the window seat", "and I am vegetarian"):
            await agent.process_query("alice", "s1", text)
        await agent._background.drain()
        jobs = connection.collection("formation_jobs")
        assert await jobs.count_documents({"status": "pending"}) == 1
        worker = FormationWorker(agent.memories, agent.chat_model, queue=agent.queue)
        assert await worker.run_once() is True
        assert await worker.run_once() is False  # nothing left: formed once
        profile = await agent.memories.profiles.get(ALICE)
        assert profile.data["user_name"] == "Ann" and profile.version == 1


async def test_the_agent_closes_its_worker_and_background_writes(setup):
    connection, embedder = setup
    before = {t for t in asyncio.all_tasks() if not t.done()}
    async with RAGAgent(
        connection, embedder, OfflineChatModel(), config=AgentConfig("agent")
    ) as agent:
        await agent.process_query("alice", "s1", "hello there")
    await asyncio.sleep(0)
    left = {t for t in asyncio.all_tasks() if not t.done()} - before - {asyncio.current_task()}
    # The driver reads each reply in a task of its own, beside one that polls for its
    # cancellation: a pair in flight now belongs to a command sent by a task that existed
    # before (the client's heartbeat) and ends by itself (the poller is cancelled once the
    # reply is read, and may still be finishing). A command the agent left behind would leave
    # the task that sent it here as well.
    driver = {"PyMongoProtocol.read", "_poll_cancellation"}
    replies = {t for t in left if t.get_coro().__qualname__ in driver}
    if replies:
        await asyncio.wait(replies, timeout=10)
    assert not {t for t in left if not t.done()}


async def test_the_configured_model_is_asked_for_and_recorded(setup):
    chat = FakeChatModel(default="ok")
    async with make(setup, chat, model="claude-haiku-4-5") as agent:
        result = await agent.process_query("alice", "s-model", "hello?")
        assert chat.requests[0].model == "claude-haiku-4-5"
        action = await agent.memories.episodic.get_action(ALICE, result.action_id)
        assert action.model == "claude-haiku-4-5"
    with pytest.raises(InvalidInputError):
        config(model="  ")


async def test_only_the_users_questions_teach_the_keyword_trust(setup, monkeypatch):
    """Statements and small talk are searched with too, but say nothing about how this user
    asks for what they stored: the agent lets only questions count in the keyword trust."""
    async with make(setup, FakeChatModel(default="ok")) as agent:
        seen: list[tuple[str, bool]] = []
        thresholds: set[float | None] = set()
        retrieve = agent.memories.long_term.retrieve

        async def recording(tenant, query, **kwargs):
            seen.append((query, kwargs.get("learn", True)))
            thresholds.add(kwargs.get("learn_above"))
            return await retrieve(tenant, query, **kwargs)

        monkeypatch.setattr(agent.memories.long_term, "retrieve", recording)
        await agent.process_query("alice", "s1", "We went hiking on Sunday.")
        await agent.process_query("alice", "s1", "Which seat do I prefer?")
        await agent.process_query("alice", "s1", "我住在哪里？")
        assert seen == [
            ("We went hiking on Sunday.", False),
            ("Which seat do I prefer?", True),
            ("我住在哪里？", True),
        ]
        # ... and only those some memory answers strongly (the embedder's strong-match threshold).
        assert thresholds == {setup[1].strong_match_similarity} and None not in thresholds

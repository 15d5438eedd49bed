"""Conversation memory over the wire: sessions, turns, windows, summaries, tenancy, retention."""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import replace
from datetime import timedelta

import pytest
from pymongo.errors import AutoReconnect
from structlog.testing import capture_logs

from agent_memory._tokens import estimate_tokens
from agent_memory.errors import (
    BadResponseError,
    ConfigurationError,
    InvalidInputError,
    NotFoundError,
)
from agent_memory.memory import background
from agent_memory.memory.conversation import queries as q
from agent_memory.memory.conversation.memory import (
    ConversationConfig,
    ConversationMemory,
    NewMessage,
)
from agent_memory.memory.conversation.records import TurnClock
from agent_memory.memory.conversation.render import (
    SUMMARY_HEADING,
    line_cost,
    render_messages,
)
from agent_memory.mongo.connection import connect
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.chat.base import ChatResponse, TextBlock
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.providers.chat.offline import OfflineChatModel
from agent_memory.stamps import utcnow
from agent_memory.tenancy import Tenant

ALICE = Tenant("support-agent", "alice")
BOB = Tenant("support-agent", "bob")
OTHER_AGENT = Tenant("sales-agent", "alice")


@pytest.fixture
async def memory(connection):
    memory = ConversationMemory(connection, chat_model=FakeChatModel(default="a summary"))
    yield memory
    await memory.aclose()


def turn(n: int) -> list[NewMessage]:
    return [NewMessage.user(f"question {n}"), NewMessage.assistant(f"answer {n}")]


async def stored_messages(connection, tenant: Tenant | None = None) -> int:
    return await connection.collection("messages").count_documents(
        {} if tenant is None else tenant.filter()
    )


def stepping_clock(step_ms: int = 5) -> TurnClock:
    """A clock that advances ``step_ms`` per turn from now: distinct, ordered activity times."""
    ticks = itertools.count(time.time_ns() // 1_000_000 + 1_000, step_ms)
    return TurnClock(now_ms=lambda: next(ticks))


# --- sessions -----------------------------------------------------------------------------


async def test_start_session_creates_once_and_is_idempotent(memory):
    first = await memory.start_session(ALICE, "s1", metadata={"context": "support", "tier": 2})
    assert (first.session_id, first.agent_id, first.user_id) == ("s1", "support-agent", "alice")
    assert first.status == "active" and first.summary == "" and first.summary_through is None
    assert first.metadata == {"context": "support", "tier": 2} and first.message_count == 0

    again = await memory.start_session(ALICE, "s1", metadata={"context": "other"})
    assert again == first  # unchanged, the new metadata ignored
    assert await memory.get_session(ALICE, "s1") == first

    made = await memory.start_session(ALICE)
    assert made.session_id.startswith("ses_") and made.session_id != "s1"


async def test_new_session_keeps_nothing_from_the_old_one(memory):
    await memory.start_session(ALICE, "old")
    for n in range(6):
        await memory.append_turn(ALICE, "old", turn(n))
    assert (await memory.refresh_summary(ALICE, "old", force=True)).refreshed

    fresh = await memory.start_session(ALICE, "new")
    assert fresh.summary == "" and fresh.message_count == 0
    assert await memory.window(ALICE, "new") == []
    ctx = await memory.context(ALICE, "new")
    assert ctx.render() == "" and ctx.tokens == 0 and not ctx.needs_summary
    # the old session is untouched (short-term memory is per session, nothing was cleared)
    assert len(await memory.window(ALICE, "old", last_n=100)) == 12
    assert (await memory.get_session(ALICE, "old")).summary == "a summary"


async def test_list_sessions_newest_activity_first(memory):
    memory._clock = stepping_clock()
    for session_id in ("s1", "s2", "s3"):
        await memory.start_session(ALICE, session_id)
    await memory.start_session(BOB, "b1")
    for session_id in ("s2", "s3", "s1"):
        await memory.append_turn(ALICE, session_id, turn(0))
    await memory.drain()  # activity of known sessions is written in the background
    listed = await memory.list_sessions(ALICE)
    assert [s.session_id for s in listed] == ["s1", "s3", "s2"]
    assert [s.message_count for s in listed] == [2, 2, 2]
    assert [s.session_id for s in await memory.list_sessions(ALICE, limit=2)] == ["s1", "s3"]
    with pytest.raises(InvalidInputError):
        await memory.list_sessions(ALICE, limit=0)


# --- appending and windows ----------------------------------------------------------------


async def test_append_turn_stores_messages_in_order_with_tool_records(memory, connection):
    await memory.start_session(ALICE, "s1")
    stored = await memory.append_turn(
        ALICE,
        "s1",
        [
            NewMessage.user("Find flights to Lisbon"),
            NewMessage.tool("flight_search", input={"to": "LIS"}, result={"cheapest": 89}),
            {"role": "assistant", "content": "The cheapest is 89 EUR."},
        ],
    )
    assert [m.role for m in stored] == ["user", "tool", "assistant"]
    assert stored[0].seq < stored[1].seq < stored[2].seq
    assert stored[1].tool.name == "flight_search" and stored[1].tool.result == {"cheapest": 89}
    assert stored[1].content == '{"cheapest":89}'  # a tool message shows its result
    assert all(m.tokens == estimate_tokens(m.content) for m in stored)

    window = await memory.window(ALICE, "s1")
    assert window == stored
    document = await connection.collection("messages").find_one({"_id": stored[1].id})
    assert document["agent_id"] == "support-agent" and document["user_id"] == "alice"
    assert document["session_id"] == "s1" and document["tool"]["input"] == {"to": "LIS"}
    assert render_messages(window).splitlines() == [
        "User: Find flights to Lisbon",
        'Tool flight_search: {"cheapest":89}',
        "Assistant: The cheapest is 89 EUR.",
    ]


async def test_first_append_creates_the_session(memory):
    await memory.append_turn(ALICE, "implicit", turn(1))
    session = await memory.get_session(ALICE, "implicit")
    assert session.status == "active" and session.message_count == 2
    assert session.last_active_at >= session.created_at


async def test_turns_appended_in_the_same_millisecond_keep_their_order(memory):
    memory._clock = TurnClock(now_ms=lambda: 1_767_225_600_000)  # time stands still
    await memory.start_session(ALICE, "s1")
    for n in range(6):
        await memory.append_turn(ALICE, "s1", turn(n))
    window = await memory.window(ALICE, "s1", last_n=12)
    assert [m.content for m in window] == [
        text for n in range(6) for text in (f"question {n}", f"answer {n}")
    ]
    assert len({m.created_at for m in window}) == 1
    assert [m.seq for m in window] == sorted(m.seq for m in window)


async def test_concurrent_appends_all_land_and_turns_stay_together(memory):
    await memory.start_session(ALICE, "s1")
    await asyncio.gather(*(memory.append_turn(ALICE, "s1", turn(n)) for n in range(10)))
    await memory.drain()
    window = await memory.window(ALICE, "s1", last_n=50, max_tokens=10_000)
    assert len(window) == 20
    for question, answer in zip(window[::2], window[1::2], strict=True):
        assert question.content.replace("question", "answer") == answer.content
    assert (await memory.get_session(ALICE, "s1")).message_count == 20


async def test_window_by_count_and_by_token_budget(memory):
    await memory.start_session(ALICE, "s1")
    for n in range(8):
        await memory.append_turn(
            ALICE, "s1", [NewMessage.user(f"q{n} " + "word " * n), NewMessage.assistant(f"a{n}")]
        )
    everything = await memory.window(ALICE, "s1", last_n=100, max_tokens=100_000)
    assert len(everything) == 16
    assert await memory.window(ALICE, "s1", last_n=3) == everything[-3:]
    for budget in (1, 4, 5, 9, 17, 30, 55, 80):
        window = await memory.window(ALICE, "s1", last_n=100, max_tokens=budget)
        assert estimate_tokens(render_messages(window)) <= budget
        assert sum(line_cost(m) for m in window) <= budget or window[0].truncated
        if window and not window[0].truncated:
            # the newest messages, contiguous, and as many as fit
            assert window == everything[-len(window) :]
            if len(window) < 16:
                older = everything[-len(window) - 1]
                assert sum(line_cost(m) for m in window) + line_cost(older) > budget


async def test_a_message_larger_than_the_budget_is_shown_truncated(memory):
    await memory.start_session(ALICE, "s1")
    await memory.append_turn(ALICE, "s1", [NewMessage.user("short one")])
    await memory.append_turn(ALICE, "s1", [NewMessage.assistant("long " * 400)])
    (view,) = await memory.window(ALICE, "s1", max_tokens=50)
    assert view.truncated and view.role == "assistant"
    assert view.content.startswith("long long") and view.content.endswith("…[truncated]")
    assert estimate_tokens(render_messages([view])) <= 50
    assert await memory.window(ALICE, "s1", max_tokens=3) == []  # not even a head fits


async def test_tool_payloads_over_the_cap_are_stored_cut_with_a_marker(connection):
    memory = ConversationMemory(connection, config=ConversationConfig(max_tool_payload_chars=100))
    big = {"rows": [{"id": n, "text": "x" * 20} for n in range(50)]}
    (stored,) = await memory.append_turn(
        ALICE, "s1", [NewMessage.tool("db_query", input={"sql": "select"}, result=big)]
    )
    assert stored.tool.truncated == ("result",) and stored.tool.input == {"sql": "select"}
    assert isinstance(stored.tool.result, str)
    assert stored.tool.result.endswith("characters kept]") and "100 of" in stored.tool.result
    assert stored.content == stored.tool.result
    await memory.aclose()


# --- context and summary ------------------------------------------------------------------


@pytest.fixture
def small_window():
    return ConversationConfig(window_messages=4, window_tokens=500, summary_trigger=3)


async def test_refresh_summarises_only_the_overflow(connection, small_window):
    chat = FakeChatModel(["Alice plans a trip to Lisbon.", "Alice plans a trip; prefers aisle."])
    memory = ConversationMemory(connection, chat_model=chat, config=small_window)
    await memory.start_session(ALICE, "s1")
    for n in range(5):
        await memory.append_turn(ALICE, "s1", turn(n))  # 10 messages, window holds 4

    result = await memory.refresh_summary(ALICE, "s1")
    assert result.refreshed and result.reason == "refreshed" and result.folded == 6
    prompt = chat.requests[0].messages[0].text
    assert "question 2" in prompt and "answer 2" in prompt
    assert "question 3" not in prompt and "answer 4" not in prompt  # still in the window
    instruction = chat.requests[0].system_text
    for word in ("faithful", "compact", "names", "preferences", "decisions", "open questions"):
        assert word in instruction
    session = await memory.get_session(ALICE, "s1")
    window = await memory.window(ALICE, "s1")
    assert session.summary == "Alice plans a trip to Lisbon."
    assert session.summary_through == result.summary_through < window[0].seq

    # Nothing new fell out: no chat call.
    again = await memory.refresh_summary(ALICE, "s1")
    assert (again.refreshed, again.reason, len(chat.requests)) == (False, "nothing_new", 1)
    # Two more fall out: below the trigger of 3, so still no call...
    await memory.append_turn(ALICE, "s1", turn(5))
    below = await memory.refresh_summary(ALICE, "s1")
    assert (below.reason, len(chat.requests)) == ("below_trigger", 1)
    # ...unless forced; the existing summary goes into the prompt.
    forced = await memory.refresh_summary(ALICE, "s1", force=True)
    assert forced.refreshed and forced.folded == 2
    assert "Alice plans a trip to Lisbon." in chat.requests[1].messages[0].text
    assert "question 3" in chat.requests[1].messages[0].text
    assert "question 2" not in chat.requests[1].messages[0].text
    await memory.aclose()


async def test_concurrent_refreshes_do_not_lose_each_others_work(connection, small_window):
    both_asked, release = asyncio.Event(), asyncio.Event()
    replies = iter(["first summary", "second summary"])

    async def slow(request):
        text = next(replies)
        if len(chat.requests) == 2:
            both_asked.set()
        await release.wait()  # both refreshes have read the session before either stores
        return text

    chat = FakeChatModel(default=slow)
    memory = ConversationMemory(connection, chat_model=chat, config=small_window)
    for n in range(5):
        await memory.append_turn(ALICE, "s1", turn(n))
    tasks = [asyncio.ensure_future(memory.refresh_summary(ALICE, "s1")) for _ in range(2)]
    await both_asked.wait()
    release.set()
    results = await asyncio.gather(*tasks)
    assert sorted(r.reason for r in results) == ["lost_race", "refreshed"]
    winner = next(r for r in results if r.refreshed)
    session = await memory.get_session(ALICE, "s1")
    assert session.summary_version == 1 and session.summary_through == winner.summary_through
    assert session.summary in ("first summary", "second summary")
    await memory.aclose()


async def test_clear_during_a_refresh_wins(connection, small_window):
    asked, release = asyncio.Event(), asyncio.Event()

    async def slow(request):
        asked.set()
        await release.wait()
        return "stale summary"

    memory = ConversationMemory(
        connection, chat_model=FakeChatModel(default=slow), config=small_window
    )
    for n in range(5):
        await memory.append_turn(ALICE, "s1", turn(n))
    refresh = asyncio.ensure_future(memory.refresh_summary(ALICE, "s1"))
    await asked.wait()
    await memory.clear_session(ALICE, "s1")
    release.set()
    assert (await refresh).reason == "lost_race"
    assert (await memory.get_session(ALICE, "s1")).summary == ""
    await memory.aclose()


async def test_refresh_needs_a_chat_model_and_a_usable_reply(connection, small_window):
    memory = ConversationMemory(connection, config=small_window)
    await memory.start_session(ALICE, "s1")
    with pytest.raises(ConfigurationError, match="chat model"):
        await memory.refresh_summary(ALICE, "s1")
    empty = ConversationMemory(connection, chat_model=FakeChatModel(["   "]), config=small_window)
    for n in range(5):
        await empty.append_turn(ALICE, "s1", turn(n))
    with pytest.raises(BadResponseError):
        await empty.refresh_summary(ALICE, "s1")
    assert (await empty.get_session(ALICE, "s1")).summary == ""
    await empty.aclose()


async def test_offline_model_gives_a_labelled_extractive_summary(connection, small_window):
    memory = ConversationMemory(connection, chat_model=OfflineChatModel(), config=small_window)
    said = ["My name is Ana and I live in Porto", "I prefer aisle seats on flights"]
    for text in said:
        await memory.append_turn(ALICE, "s1", [NewMessage.user(text), NewMessage.assistant("ok")])
    for n in range(2):
        await memory.append_turn(ALICE, "s1", turn(n))
    assert (await memory.refresh_summary(ALICE, "s1", force=True)).refreshed
    for n in range(2, 4):
        await memory.append_turn(ALICE, "s1", turn(n))
    assert (await memory.refresh_summary(ALICE, "s1", force=True)).refreshed
    summary = (await memory.get_session(ALICE, "s1")).summary
    lines = summary.splitlines()
    assert summary.startswith("[offline model]")  # labelled: nobody mistakes it for a model's
    assert any(said[0] in line for line in lines) and any(said[1] in line for line in lines)
    assert len(lines) == len(set(lines))  # earlier summaries are not quoted back


async def test_an_offline_reply_that_quotes_nothing_adds_nothing_to_the_summary(
    connection, small_window
):
    # The offline model says in its response that it quoted nothing, not a wording to match:
    # its reply to messages that share no words with the summary's question stays out.
    memory = ConversationMemory(connection, chat_model=OfflineChatModel(), config=small_window)
    for n in range(6):
        await memory.append_turn(ALICE, "s1", [NewMessage.assistant(f"Sure, {n}.")])
    result = await memory.refresh_summary(ALICE, "s1", force=True)
    assert result.refreshed and result.folded == 2
    assert (await memory.get_session(ALICE, "s1")).summary == ""
    await memory.aclose()


async def test_any_offline_model_saying_it_found_nothing_adds_nothing_to_the_summary(
    connection, small_window
):
    # The summary reads the response's own flag, whatever the model's class: an extractive
    # model that found nothing leaves the summary as it was; one that quotes adds its quote.
    class Extractive(FakeChatModel):
        offline = True

    said_nothing = ChatResponse((TextBlock("[offline model] Nothing matches."),), "end_turn", "x")
    chat = Extractive(
        [replace(said_nothing, found_nothing=True), "[offline model] Ana lives in Porto."]
    )
    memory = ConversationMemory(connection, chat_model=chat, config=small_window)
    for n in range(6):
        await memory.append_turn(ALICE, "s1", [NewMessage.assistant(f"Sure, {n}.")])
    assert (await memory.refresh_summary(ALICE, "s1", force=True)).refreshed
    assert (await memory.get_session(ALICE, "s1")).summary == ""
    for n in range(6, 9):
        await memory.append_turn(ALICE, "s1", [NewMessage.assistant(f"Sure, {n}.")])
    assert (await memory.refresh_summary(ALICE, "s1", force=True)).refreshed
    assert "Ana lives in Porto" in (await memory.get_session(ALICE, "s1")).summary
    await memory.aclose()


async def test_context_renders_summary_then_window_within_the_budget(connection, small_window):
    chat = FakeChatModel(default="Alice (a nurse in Berlin) is planning a trip. " * 3)
    memory = ConversationMemory(connection, chat_model=chat, config=small_window)
    await memory.append_turn(ALICE, "s1", [NewMessage.user("hi")])
    for n in range(4):
        await memory.append_turn(
            ALICE,
            "s1",
            [
                NewMessage.user(f"question {n}"),
                NewMessage.tool("search", result=f"result {n}"),
                NewMessage.assistant(f"answer {n}"),
            ],
        )
    before = await memory.context(ALICE, "s1")
    assert before.omitted == 9 and before.needs_summary
    await memory.refresh_summary(ALICE, "s1")

    ctx = await memory.context(ALICE, "s1")
    text = ctx.render()
    assert text.startswith(SUMMARY_HEADING + "Alice (a nurse in Berlin)")
    assert text.split("\n\n")[1].splitlines() == [
        "Assistant: answer 2",
        "User: question 3",
        "Tool search: result 3",
        "Assistant: answer 3",
    ]
    assert ctx.tokens == estimate_tokens(text) and ctx.omitted == 0 and not ctx.needs_summary
    for budget in (1, 10, 20, 40, 60, 100, 1000):
        tight = await memory.context(ALICE, "s1", max_tokens=budget)
        assert tight.tokens == estimate_tokens(tight.render()) <= budget
    cut = await memory.context(ALICE, "s1", max_tokens=20)
    assert cut.summary.endswith("…[truncated]") and not cut.messages


@pytest.mark.parametrize("batch", [3, 40], ids=["count-capped", "count-exact"])
async def test_joined_and_separate_reads_see_the_same_conversation(connection, batch):
    """The embedded server reads the session and its messages apart (its ``$lookup`` scans
    the whole collection); a MongoDB server joins them in one aggregate. Same answers."""
    config = ConversationConfig(
        window_messages=4, window_tokens=500, summary_trigger=3, summary_batch_messages=batch
    )
    memory = ConversationMemory(
        connection, chat_model=FakeChatModel(default="a summary"), config=config
    )
    store = memory._store
    await memory.append_turn(BOB, "s1", turn(99))  # another tenant's messages beside them
    seen = []
    for step in range(3):
        for n in range(3):
            await memory.append_turn(ALICE, "s1", turn(10 * step + n))
        await store.background.drain()  # the turns' activity, so both read the same session
        for joined in (True, False):
            store.joined = joined
            context = await memory.context(ALICE, "s1")
            tight = await memory.context(ALICE, "s1", max_tokens=30)
            window = await memory.window(ALICE, "s1", last_n=3)
            seen.append((joined, context, tight, window))
        assert seen[-1][1:] == seen[-2][1:]
        store.joined = step % 2 == 0
        await memory.refresh_summary(ALICE, "s1")  # a summary_through for the next step
    assert seen[-1][1].session.summary_through is not None  # read after a summary too
    store.joined = False
    with pytest.raises(NotFoundError):
        await memory.context(BOB, "s2")
    await memory.aclose()


# --- clearing, deleting, tenancy ----------------------------------------------------------


async def test_clear_session_deletes_messages_and_resets_the_summary(memory, connection):
    await memory.start_session(ALICE, "s1")
    await memory.start_session(BOB, "b1")
    for n in range(4):
        await memory.append_turn(ALICE, "s1", turn(n))
    await memory.append_turn(BOB, "b1", turn(0))
    await memory.refresh_summary(ALICE, "s1", force=True)
    await memory.drain()
    assert await memory.clear_session(ALICE, "s1") == 8
    session = await memory.get_session(ALICE, "s1")
    assert (session.summary, session.summary_through, session.message_count) == ("", None, 0)
    assert await memory.window(ALICE, "s1") == []
    assert await stored_messages(connection, BOB) == 2
    await memory.append_turn(ALICE, "s1", turn(9))  # the session goes on
    assert [m.content for m in await memory.window(ALICE, "s1")] == ["question 9", "answer 9"]


async def test_delete_session_removes_it_and_its_messages(memory, connection):
    await memory.append_turn(ALICE, "s1", turn(0))
    await memory.append_turn(ALICE, "s2", turn(0))
    assert await memory.delete_session(ALICE, "s1") == {"sessions": 1, "messages": 2}
    with pytest.raises(NotFoundError):
        await memory.get_session(ALICE, "s1")
    with pytest.raises(NotFoundError):
        await memory.delete_session(ALICE, "s1")
    assert await stored_messages(connection) == 2


@pytest.mark.parametrize("intruder", [BOB, OTHER_AGENT], ids=["other user", "other agent"])
async def test_another_tenants_session_is_never_read_or_written(memory, connection, intruder):
    await memory.start_session(ALICE, "s1", metadata={"context": "private"})
    await memory.append_turn(ALICE, "s1", turn(0))
    await memory.drain()
    sessions = connection.collection("sessions")
    before = await sessions.find_one({"session_id": "s1", **ALICE.filter()})

    for read in (memory.get_session, memory.window, memory.context, memory.refresh_summary):
        with pytest.raises(NotFoundError, match="no session 's1' for this agent and user"):
            await read(intruder, "s1")
    for write in (memory.clear_session, memory.delete_session):
        with pytest.raises(NotFoundError):
            await write(intruder, "s1")
    assert await memory.list_sessions(intruder) == []

    # The same id is the intruder's own session: nothing of Alice's is seen or changed.
    await memory.append_turn(intruder, "s1", turn(7))
    own = await memory.start_session(intruder, "s1", metadata={"context": "intruder"})
    await memory.drain()
    assert own.metadata == {} and own.message_count == 2
    assert [m.content for m in await memory.window(intruder, "s1")] == ["question 7", "answer 7"]
    assert [m.content for m in await memory.window(ALICE, "s1")] == ["question 0", "answer 0"]
    assert await sessions.find_one({"session_id": "s1", **ALICE.filter()}) == before
    assert await stored_messages(connection, intruder) == 2


@pytest.mark.parametrize("intruder", [BOB, OTHER_AGENT], ids=["other user", "other agent"])
async def test_the_same_answer_whether_or_not_another_tenant_has_the_id(memory, intruder):
    """No call tells a tenant that another tenant uses an id, and nobody can take an id
    first to lock its future owner out."""
    fresh = await memory.start_session(intruder, "unused-id")
    await memory.start_session(ALICE, "taken-id")
    await memory.append_turn(ALICE, "taken-id", turn(0))
    shadow = await memory.start_session(intruder, "taken-id")
    assert (shadow.status, shadow.message_count) == (fresh.status, fresh.message_count)
    # Alice's future session cannot be squatted: the intruder's "future" is its own.
    await memory.start_session(intruder, "alice-next")
    mine = await memory.start_session(ALICE, "alice-next")
    assert (mine.agent_id, mine.user_id) == (ALICE.agent_id, ALICE.user_id)
    await memory.append_turn(ALICE, "alice-next", turn(1))
    await memory.drain()
    assert [m.content for m in await memory.window(intruder, "alice-next")] == []


async def test_sessions_stored_with_a_global_id_are_migrated_by_setup(connection, embedder):
    """Before ids were per tenant, a session's id was its _id alone; `indexes setup` copies
    it to session_id, so the old sessions are found and the unique index can be built."""
    sessions = connection.collection("sessions")
    legacy = {**q.new_session_fields({}, utcnow()), **ALICE.filter(), "_id": "legacy"}
    assert "session_id" not in legacy
    await sessions.insert_one(legacy)
    await IndexManager(connection, embedder.signature).setup()
    memory = ConversationMemory(connection)
    assert (await memory.get_session(ALICE, "legacy")).session_id == "legacy"
    await memory.append_turn(ALICE, "legacy", turn(0))
    assert await sessions.count_documents({}) == 1
    await memory.aclose()


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ([], "at least one message"),
        ("hello", "must be a list"),
        ({"role": "user", "content": "hi"}, "must be a list"),
        ([{"role": "user", "content": ""}], "empty"),
        ([{"role": "user", "content": "  \n\t"}], "empty"),
        ([{"role": "system", "content": "obey"}], "role must be one of"),
        ([{"content": "no role"}], "role must be one of"),
        ([{"role": "user", "content": 42}], "must be a str"),
        ([{"role": "user", "content": {"$ne": None}}], "must be a str"),
        ([{"role": "user", "content": "a\x00b"}], "NUL"),
        ([{"role": "user", "content": "x" * 32_001}], "the limit is 32000"),
        ([{"role": "user", "content": "hi", "$where": "1"}], "unknown keys"),
        ([{"role": "tool", "content": "no name"}], "without a tool name"),
        ([{"role": "tool", "tool": {"name": "s", "input": {"$where": "1"}}}], r"tool\.input"),
        ([{"role": "tool", "tool": {"name": "s", "result": {"a.b": 1}}}], "may not start"),
        ([{"role": "tool", "tool": {"name": "s", "result": float("nan")}}], "NaN"),
        ([{"role": "tool", "tool": {"name": "bad\nname"}}], "control characters"),
        ([NewMessage("assistant", "x", tool_name="s")], "only tool messages"),
        ([NewMessage.user("fine"), NewMessage.user("")], r"messages\[1\]"),
        ([NewMessage.user("x")] * 51, "at most 50 messages"),
        (["just a string"], "NewMessage or a mapping"),
    ],
)
async def test_bad_turns_are_refused_before_anything_is_written(
    memory, connection, messages, match
):
    with pytest.raises(InvalidInputError, match=match):
        await memory.append_turn(ALICE, "s1", messages)
    assert await stored_messages(connection) == 0
    assert await connection.collection("sessions").count_documents({}) == 0


@pytest.mark.parametrize(
    "session_id", [{"$ne": None}, 5, None, "", "   ", "a\nb", "tab\there", "x" * 257]
)
async def test_bad_session_ids_are_refused(memory, connection, session_id):
    operations = [
        memory.get_session(ALICE, session_id),
        memory.window(ALICE, session_id),
        memory.context(ALICE, session_id),
        memory.append_turn(ALICE, session_id, turn(0)),
        memory.clear_session(ALICE, session_id),
        memory.delete_session(ALICE, session_id),
    ]
    if session_id is not None:  # None means "make me an id" when starting
        operations.append(memory.start_session(ALICE, session_id))
    for operation in operations:
        with pytest.raises(InvalidInputError, match="session_id"):
            await operation
    assert await stored_messages(connection) == 0


async def test_operator_shaped_strings_are_plain_values(memory, connection):
    await memory.start_session(BOB, "ordinary")
    await memory.append_turn(BOB, "ordinary", [NewMessage.user("bob's secret")])
    for session_id in ("$ne", "{'$ne': null}", "$where"):
        await memory.append_turn(ALICE, session_id, [NewMessage.user('{"$ne": null}')])
        (message,) = await memory.window(ALICE, session_id)
        assert message.content == '{"$ne": null}' and message.session_id == session_id
    assert await stored_messages(connection, ALICE) == 3


async def test_bad_tenants_metadata_and_limits_are_refused(memory):
    with pytest.raises(InvalidInputError, match="Tenant"):
        await memory.window({"agent_id": "a", "user_id": {"$ne": None}}, "s1")
    with pytest.raises(InvalidInputError):
        Tenant("agent", "user\x00")
    for metadata, match in [
        ({"$set": {"status": "archived"}}, "may not start"),
        ({"a.b": 1}, "may not start"),
        ({"context": 5}, "metadata.context"),
        ({"priority": "high\n"}, "metadata.priority"),
        ("not a mapping", "mapping"),
    ]:
        with pytest.raises(InvalidInputError, match=match):
            await memory.start_session(ALICE, "s1", metadata=metadata)
    await memory.start_session(ALICE, "s1")
    for kwargs in ({"last_n": 0}, {"last_n": True}, {"last_n": 1001}, {"max_tokens": 0}):
        with pytest.raises(InvalidInputError):
            await memory.window(ALICE, "s1", **kwargs)
        with pytest.raises(InvalidInputError):
            await memory.context(ALICE, "s1", **kwargs)


async def test_documents_over_16_mib_are_refused(connection):
    memory = ConversationMemory(connection, config=ConversationConfig(max_message_chars=20_000_000))
    with pytest.raises(InvalidInputError, match="16 MiB"):
        await memory.append_turn(ALICE, "s1", [NewMessage.user("x" * 17_000_000)])
    with pytest.raises(InvalidInputError, match="16 MiB"):
        await memory.start_session(ALICE, "s1", metadata={"blob": "x" * 17_000_000})
    assert await stored_messages(connection) == 0
    assert await connection.collection("sessions").count_documents({}) == 0


# --- retention and forgetting -------------------------------------------------------------


async def _old_and_new_sessions(memory):
    for tenant, session_id in ((ALICE, "a-old"), (BOB, "b-old"), (OTHER_AGENT, "o-old")):
        await memory.append_turn(tenant, session_id, turn(0))
    await memory.append_turn(ALICE, "a-new", turn(1))
    await memory.drain()
    return utcnow() + timedelta(days=91)


async def test_retention_archives_inactive_sessions_and_keeps_messages(connection):
    memory = ConversationMemory(connection)
    memory._clock = stepping_clock()
    await _old_and_new_sessions(memory)
    later = utcnow() + timedelta(days=91)
    # a-new stays active because it was active within the last 90 days of `later`.
    sessions = connection.collection("sessions")
    await sessions.update_one({"session_id": "a-new"}, {"$set": {"last_active_at": later}})

    only_agent = await memory.apply_retention(agent_id="support-agent", now=later)
    assert only_agent["archived"] == 2 and only_agent["sessions_deleted"] == 0
    assert (await memory.get_session(OTHER_AGENT, "o-old")).status == "active"
    everyone = await memory.apply_retention(now=later, batch_size=1)
    assert everyone["archived"] == 1
    assert (await memory.apply_retention(now=later))["archived"] == 0  # idempotent

    assert [s.session_id for s in await memory.list_sessions(ALICE)] == ["a-new"]
    listed = await memory.list_sessions(ALICE, include_archived=True)
    assert {s.session_id: s.status for s in listed} == {"a-new": "active", "a-old": "archived"}
    assert await stored_messages(connection) == 8  # messages kept
    # Talking in an archived session brings it back.
    await memory.append_turn(ALICE, "a-old", turn(2))
    await memory.drain()
    assert (await memory.get_session(ALICE, "a-old")).status == "active"
    await memory.aclose()


async def test_retention_deletes_sessions_and_messages_in_batches(connection):
    memory = ConversationMemory(connection, config=ConversationConfig(retention_mode="delete"))
    memory._clock = stepping_clock()
    await _old_and_new_sessions(memory)
    later = utcnow() + timedelta(days=91)
    await connection.collection("sessions").update_one(
        {"session_id": "a-new"}, {"$set": {"last_active_at": later}}
    )
    # A session with no date of last activity (stored by hand or damaged) is not taken for
    # an idle one: the embedded engine orders null before every date, MongoDB does not.
    await memory.append_turn(BOB, "b-undated", turn(3))
    await memory.drain()
    await connection.collection("sessions").update_one(
        {"session_id": "b-undated"}, {"$set": {"last_active_at": None}}
    )
    counts = await memory.apply_retention(now=later, batch_size=2)
    assert counts == {
        "archived": 0,
        "sessions_deleted": 3,
        "messages_deleted": 6,
        "batches": 2,
    }
    again = await memory.apply_retention(now=later)
    assert (again["sessions_deleted"], again["messages_deleted"]) == (0, 0)
    assert [s.session_id for s in await memory.list_sessions(ALICE)] == ["a-new"]
    assert [s.session_id for s in await memory.list_sessions(BOB)] == ["b-undated"]
    assert await stored_messages(connection) == 4
    with pytest.raises(InvalidInputError):
        await memory.apply_retention(now=later.replace(tzinfo=None))
    await memory.aclose()


async def test_forget_user_deletes_only_that_users_conversations(memory, connection):
    await memory.append_turn(ALICE, "s1", turn(0))
    await memory.append_turn(ALICE, "s2", turn(1) + turn(2))
    await memory.append_turn(BOB, "b1", turn(0))
    await memory.append_turn(OTHER_AGENT, "o1", turn(0))
    assert await memory.forget_user(ALICE) == {"sessions": 2, "messages": 6}
    assert await memory.list_sessions(ALICE) == []
    assert await stored_messages(connection, BOB) == 2
    assert await stored_messages(connection, OTHER_AGENT) == 2
    assert await memory.forget_user(ALICE) == {"sessions": 0, "messages": 0}


# --- round trips, logs, indexes -----------------------------------------------------------


async def test_each_operation_sends_no_more_commands_than_documented(counted, small_window):
    connection, counter = counted
    memory = ConversationMemory(
        connection, chat_model=FakeChatModel(default="sum"), config=small_window
    )

    async def sent(operation) -> list[str]:
        with counter.count() as commands:
            await operation
        return sorted(commands)

    assert await sent(memory.append_turn(ALICE, "fresh", turn(0))) == ["insert", "update"]
    assert await sent(memory.start_session(ALICE, "s1")) == ["findAndModify"]
    assert await sent(memory.append_turn(ALICE, "s1", turn(0))) == ["insert"]  # awaited
    assert await sent(memory.drain()) == ["update"]  # the activity write, not awaited
    for n in range(1, 5):
        await memory.append_turn(ALICE, "s1", turn(n))
    await memory.drain()
    assert await sent(memory.get_session(ALICE, "s1")) == ["find"]
    assert await sent(memory.list_sessions(ALICE)) == ["find"]

    # One aggregate joining the session and its messages; on the embedded engine, whose
    # $lookup reads the whole messages collection, the session and then one find per set of
    # messages read (the window; the window and the oldest unsummarised).
    def read(sets: int) -> list[str]:
        if connection.capabilities.mongoeco:
            return ["find"] * (1 + sets)
        return ["aggregate"]

    assert await sent(memory.window(ALICE, "s1")) == read(1)
    assert await sent(memory.context(ALICE, "s1")) == read(1)
    assert await sent(memory.refresh_summary(ALICE, "s1")) == sorted([*read(2), "update"])
    assert await sent(memory.refresh_summary(ALICE, "s1")) == read(2)
    assert await sent(memory.clear_session(ALICE, "s1")) == ["delete", "update"]
    assert await sent(memory.delete_session(ALICE, "s1")) == ["delete", "delete"]
    assert await sent(memory.forget_user(ALICE)) == ["delete", "delete"]
    await memory.append_turn(BOB, "b1", turn(0))
    later = utcnow() + timedelta(days=91)
    assert await sent(memory.apply_retention(now=later)) == ["find", "update"]
    memory.config = ConversationConfig(retention_mode="delete")
    await memory.apply_retention(now=later + timedelta(days=91))
    assert await sent(memory.apply_retention(now=later)) == ["find"]
    await memory.aclose()


async def test_log_events_carry_counts_never_content(memory):
    with capture_logs() as logs:
        await memory.start_session(ALICE, "s1")
        await memory.append_turn(ALICE, "s1", [NewMessage.user("my card is 4111-1111")])
        await memory.context(ALICE, "s1")
        await memory.clear_session(ALICE, "s1")
    events = {entry["event"]: entry for entry in logs}
    assert events["conversation_turn_appended"]["messages"] == 1
    assert events["conversation_session_cleared"]["messages"] == 1
    assert "conversation_context_read" in events
    assert not any("4111" in repr(entry) for entry in logs)


async def test_index_setup_covers_sessions_and_messages(connection, embedder):
    states = await IndexManager(connection, embedder.signature).setup()
    created = {(s.collection, s.name) for s in states if s.state == "created"}
    assert ("messages", "tenant_session_seq") in created
    assert ("sessions", "tenant_status_activity") in created
    memory = ConversationMemory(connection)
    await memory.append_turn(ALICE, "s1", turn(0))
    assert len(await memory.window(ALICE, "s1")) == 2
    await memory.aclose()


async def test_works_on_a_motor_database_handed_in(settings, embedded_server):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Motor announces its deprecation
        from motor.motor_asyncio import AsyncIOMotorClient

        client = AsyncIOMotorClient(embedded_server.uri)
    try:
        connection = await connect(settings, database=client[settings.database])
        memory = ConversationMemory(connection, chat_model=FakeChatModel(default="sum"))
        await memory.start_session(ALICE, "s1")
        for n in range(7):
            await memory.append_turn(ALICE, "s1", turn(n))
        assert (await memory.refresh_summary(ALICE, "s1", force=True)).refreshed
        ctx = await memory.context(ALICE, "s1")
        assert ctx.summary == "sum" and len(ctx.messages) == 10
        assert [s.session_id for s in await memory.list_sessions(ALICE)] == ["s1"]
        assert await memory.clear_session(ALICE, "s1") == 14
        await memory.aclose()
        await connection.close()
        await client.drop_database(settings.database)
    finally:
        client.close()


async def test_a_turns_activity_is_written_again_after_a_transient_failure(memory, monkeypatch):
    """The session's count and time are written in the background; a write the server could
    not take at that moment is tried again, not dropped."""
    monkeypatch.setattr(background, "RETRY_DELAYS", (0.01, 0.01, 0.01), raising=False)
    await memory.start_session(ALICE, "s1")
    await memory.append_turn(ALICE, "s1", turn(0))
    await memory.drain()
    store = memory._store
    claim = store.claim
    failures = [AutoReconnect("connection reset")]

    async def flaky(*args, **kwargs):
        if failures:
            raise failures.pop()
        return await claim(*args, **kwargs)

    monkeypatch.setattr(store, "claim", flaky)
    with capture_logs() as logs:
        await memory.append_turn(ALICE, "s1", turn(1))
        await memory.drain()
    assert not failures and not [e for e in logs if e["log_level"] == "warning"]
    assert (await memory.get_session(ALICE, "s1")).message_count == 4

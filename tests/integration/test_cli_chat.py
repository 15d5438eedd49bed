"""``agent-memory chat`` driven by a scripted conversation on standard input."""

from __future__ import annotations

import asyncio
import builtins
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from pymongo import MongoClient
from typer.testing import CliRunner

from agent_memory.cli import app

AGENT = "chat"


@pytest.fixture
def chat_env(embedded_server):
    database = f"chat_{uuid.uuid4().hex[:10]}"
    env = {
        "MONGODB_URI": embedded_server.uri,
        "AGENT_MEMORY_DATABASE": database,
        "AGENT_MEMORY_EMBEDDER": "fake",
    }
    setup = CliRunner().invoke(app, ["indexes", "setup"], env=env)
    assert setup.exit_code == 0, setup.output
    with MongoClient(embedded_server.uri) as client:
        yield env, client[database]
        client.drop_database(database)


def chat(env, lines: list[str], *args: str):
    return CliRunner().invoke(
        app, ["chat", *args], input="".join(f"{line}\n" for line in lines), env=env
    )


def answers(output: str) -> list[str]:
    return re.findall(r"agent: (.*)", output)


def test_facts_told_in_one_session_are_remembered_after_new(chat_env):
    env, db = chat_env
    result = chat(
        env,
        [
            "Hi! My name is Ann and I live in Lisbon.",
            "I prefer the aisle seat.",
            "/memories",
            "/new",
            "/memories",
            "Where do I live?",
            "/quit",
            "this line is never read",
        ],
        "--user",
        "ann",
    )
    assert result.exit_code == 0, result.output
    before_new, after_new = result.output.split("/memories shows", 1)[0].split("new session ")
    assert "nothing remembered about ann yet" in before_new
    formed = re.search(r"memories formed from session (\S+): (\d+) new", before_new)
    assert formed and int(formed.group(2)) >= 2
    shown = after_new.split("you> ")[1]
    assert "user_name: Ann" in shown and "home: Lisbon" in shown and "seat: aisle" in shown
    assert "The user lives in Lisbon." in shown
    # recalled in the new session, whose short-term memory is empty
    assert "From long-term memory: The user lives in Lisbon." in answers(result.output)[-1]
    assert "never read" not in result.output
    sessions = db.sessions.distinct("session_id", {"agent_id": AGENT, "user_id": "ann"})
    assert len(sessions) == 2 and formed.group(1) in sessions

    # another run of the command (a new process would do the same) remembers too
    again = chat(env, ["What is my name?"], "--user", "ann")
    assert again.exit_code == 0, again.output
    assert "The user's name is Ann." in answers(again.output)[0]
    # and another user of the same agent sees none of it
    other = chat(env, ["Where do I live?", "/memories"], "--user", "ben")
    assert "Lisbon" not in other.output and "nothing remembered about ben" in other.output


def test_feedback_rates_the_last_answer_and_credits_its_memories(chat_env):
    env, db = chat_env
    result = chat(
        env,
        [
            "My name is Ann and I live in Lisbon.",
            "/new",
            "Where do I live?",
            "/feedback 2",
            "What is my name?",
            "/feedback 5",
            "/feedback 4",  # a change of mind replaces the rating of the same answer
        ],
        "--user",
        "ann",
    )
    assert result.exit_code == 0, result.output
    rated = re.findall(
        r"rated (\d)/5 \(action (act_\w+)\): ([-+][\d.]+) credited to the (\d+)", result.output
    )
    assert [(r[0], r[2]) for r in rated] == [("2", "-0.50"), ("5", "+1.00"), ("4", "+0.50")]
    where, name, again = (r[1] for r in rated)
    assert where != name and name == again

    where_doc = db.action_logs.find_one({"_id": where})
    name_doc = db.action_logs.find_one({"_id": name})
    assert where_doc["content"] == "Where do I live?" and where_doc["feedback"]["rating"] == 2
    assert name_doc["content"] == "What is my name?" and name_doc["feedback"]["rating"] == 4
    assert int(rated[0][3]) == len(where_doc["memory_ids"]) > 0
    unrated = db.action_logs.count_documents(
        {"agent_id": AGENT, "feedback.rating": {"$exists": False}}
    )
    assert unrated == 1  # the first session's turn
    # each memory holds the sum of the ratings of the answers it was in, counted once
    for memory in db.memories.find({"agent_id": AGENT, "user_id": "ann"}):
        expected = [-0.5] * (memory["_id"] in where_doc["memory_ids"]) + [0.5] * (
            memory["_id"] in name_doc["memory_ids"]
        )
        feedback = memory.get("feedback") or {"count": 0, "sum": 0.0}
        assert (feedback["count"], feedback["sum"]) == (len(expected), sum(expected))


def test_bad_input_gets_one_line_and_the_chat_goes_on(chat_env):
    env, db = chat_env
    result = chat(
        env,
        [
            "/feedback 3",
            "",
            "   ",
            "/feedback",
            "/feedback nine",
            "/feedback 9",
            "/feedback 0",
            "/feedback 2.5",
            "/remember everything",
            "/help",
            "Hello there",
            "/feedback 4",
        ],  # then end of input, without /quit
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "nothing to rate yet: ask something first" in out
    assert out.count("(empty message: type something, or /help for the commands)") == 2
    assert out.count("usage: /feedback N, where N is a whole number from 1") == 3
    assert "got 'nine'" in out and "got '2.5'" in out
    assert "a rating is from 1 to 5; got 9" in out and "a rating is from 1 to 5; got 0" in out
    assert "unknown command '/remember'; type /help for the commands" in out
    assert "/feedback N" in out and "/memories" in out and "/quit" in out  # the help
    assert len(answers(out)) == 1 and "rated 4/5" in out
    rated = list(db.action_logs.find({"feedback.rating": {"$exists": True}}))
    assert [doc["feedback"]["rating"] for doc in rated] == [4]
    assert "Traceback" not in out


def test_a_long_message_is_refused_and_nothing_is_stored(chat_env):
    env, db = chat_env
    result = chat(env, ["x" * 9_000, "/feedback 5", "Still there?"])
    assert result.exit_code == 0, result.output
    assert "not answered: the query has 9000 characters; the limit is 8000" in result.output
    assert "nothing to rate yet" in result.output
    assert db.action_logs.count_documents({}) == 1  # only "Still there?"


def test_without_indexes_it_says_what_to_run(embedded_server):
    env = {
        "MONGODB_URI": embedded_server.uri,
        "AGENT_MEMORY_DATABASE": f"chat_{uuid.uuid4().hex[:10]}",
        "AGENT_MEMORY_EMBEDDER": "fake",
    }
    result = chat(env, ["hello"])
    assert result.exit_code == 4
    assert "indexes missing and no embedder recorded yet; run `agent-memory indexes setup`" in (
        result.output
    )
    with MongoClient(embedded_server.uri) as client:
        assert client[env["AGENT_MEMORY_DATABASE"]].action_logs.count_documents({}) == 0
        client.drop_database(env["AGENT_MEMORY_DATABASE"])


def test_bad_options_exit_with_a_clear_line(chat_env):
    env, _ = chat_env
    empty = chat(env, [], "--user", " ")
    assert empty.exit_code == 2 and "user is empty" in empty.output


def test_another_users_session_id_is_a_session_of_ones_own(chat_env):
    """Session ids are per user: Ben naming Ann's session id talks in a session of his own."""
    env, db = chat_env
    assert chat(env, ["my name is Ann"], "--user", "ann", "--session", "shared-id").exit_code == 0
    ben = chat(env, ["hello"], "--user", "ben", "--session", "shared-id")
    assert ben.exit_code == 0 and "Traceback" not in ben.output and "Ann" not in ben.output
    # no conflict to report, so no advice in Python terms (issue 15 item 9: "start_session")
    assert "error" not in ben.output and "start_session" not in ben.output
    owners = db.sessions.find({"session_id": "shared-id"}, {"_id": 0, "user_id": 1})
    assert sorted(row["user_id"] for row in owners) == ["ann", "ben"]


@pytest.mark.mongoeco
def test_undecodable_input_ends_or_skips_with_a_message(chat_env, offline_env, tmp_path):
    env, db = chat_env
    # through CliRunner the bytes fail to decode: the chat ends cleanly, nothing sent
    result = CliRunner().invoke(app, ["chat"], input=b"\xff\xfe bad\nhello\n", env=env)
    assert result.exit_code == 0, result.output
    assert "cannot read standard input (UnicodeDecodeError" in result.output
    assert db.action_logs.count_documents({}) == 0
    # through a real pipe they arrive as lone surrogates: that line is skipped, the next sent
    piped = subprocess.run(
        [sys.executable, "-m", "agent_memory", "chat", "--user", "piper"],
        input=b"\xff\xfe bad\nhello\n",
        capture_output=True,
        env={**offline_env, "AGENT_MEMORY_DATA_DIR": str(tmp_path / "data")},
        timeout=120,
    )
    out = piped.stdout.decode()
    assert piped.returncode == 0, out + piped.stderr.decode()
    assert "that line has bytes that are not valid text" in out
    assert len(answers(out)) == 1 and "Traceback" not in piped.stderr.decode()


def test_a_database_failing_in_a_command_or_a_turn_is_one_line_and_the_chat_goes_on(
    chat_env, monkeypatch
):
    from agent_memory.errors import StorageUnavailableError
    from agent_memory.memory.conversation.memory import ConversationMemory
    from agent_memory.memory.long_term.memory import LongTermMemory

    env, _ = chat_env

    async def down(*args, **kwargs):
        raise StorageUnavailableError("the database cannot be reached (test)")

    monkeypatch.setattr(LongTermMemory, "list_memories", down)  # what /memories lists
    failing_turns = iter([True, False])
    real_context = ConversationMemory.context

    async def context(self, *args, **kwargs):  # what a turn recalls first
        if next(failing_turns, False):
            raise StorageUnavailableError("the database cannot be reached (test)")
        return await real_context(self, *args, **kwargs)

    monkeypatch.setattr(ConversationMemory, "context", context)
    result = chat(env, ["Hello there", "/memories", "My name is Ann", "/feedback 5", "/quit"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "not answered:" in out and "/memories failed:" in out
    # Forming the session's memories at the end fails too: said, and left to the worker.
    assert "memories of this session are not formed" in out
    assert out.count("cannot be reached (test)") == 3
    assert len(answers(out)) == 2 and "rated 5/5" in out  # the chat went on
    assert "Traceback" not in out


def test_one_very_long_word_is_remembered_as_nothing_not_a_crash(chat_env):
    """Issue 35 review: "I work at " and a word as long as a message may be made the offline
    rules raise pydantic's ValidationError, which /memories and the formation at exit showed
    as a traceback."""
    env, db = chat_env
    long_word = "I work at " + "A" * 7_990  # 8,000 characters: the longest message taken
    result = chat(env, [long_word, "/memories", "/quit"], "--user", "ann")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "failed" not in result.output
    assert "(the offline rules caught nothing to remember" in result.output
    assert "nothing new to remember from session" in result.output
    assert db.memories.count_documents({"user_id": "ann"}) == 0


def test_an_unexpected_error_in_a_command_or_at_exit_is_one_line(chat_env, monkeypatch):
    """A defect (anything but the library's own errors) in a slash command or in the formation
    at exit: one line naming its kind, never its text (it may quote what was said), no
    traceback; the conversation goes on."""
    from agent_memory.cli import chat as chat_command

    env, _ = chat_env

    def broken(messages):
        raise RuntimeError("what Ann said: I am allergic to peanuts")

    monkeypatch.setattr(chat_command, "extract_rules", broken)
    result = chat(env, ["I am allergic to peanuts", "/memories", "Hello again", "/quit"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "/memories failed: an unexpected error (RuntimeError; --debug shows its traceback)" in (
        out
    )
    assert len(answers(result.output)) == 2  # the chat went on
    assert (
        "memories of this session are not formed (an unexpected error (RuntimeError; --debug "
        "shows its traceback)); its messages are stored, `agent-memory worker` tries again"
    ) in out
    assert "Traceback" not in result.output and "what Ann said" not in result.output


def test_an_unexpected_error_in_a_turn_is_one_line_and_the_chat_goes_on(chat_env, monkeypatch):
    from agent_memory.agent.rag_agent import RAGAgent

    env, _ = chat_env
    real = RAGAgent.stream
    calls = 0

    def failing_once(self, *args, **kwargs):
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("what Ann said: I am allergic to peanuts")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(RAGAgent, "stream", failing_once)
    result = chat(env, ["I am allergic to peanuts", "Hello again", "/quit"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "not answered: an unexpected error (RuntimeError; --debug shows its traceback)" in out
    assert len(answers(result.output)) == 2  # the chat went on to the next turn
    assert "Traceback" not in result.output and "what Ann said" not in result.output


# --- Ctrl+C --------------------------------------------------------------------------------------


@pytest.fixture
def sigint_as_on_a_terminal():
    """SIGINT at Python's default in this process, as for a command a user runs (a test run
    started as a background job ignores it)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def typed(monkeypatch, lines: list[str]) -> threading.Event:
    """Standard input as a person types it: each line in turn; ``CTRL_C`` presses Ctrl+C at
    the prompt (a real SIGINT to this process) and then waits, as a terminal read does, until
    the returned event is set."""
    pending = iter(lines)
    released = threading.Event()

    def read(prompt: str = "") -> str:
        line = next(pending, None)
        if line == CTRL_C:
            os.kill(os.getpid(), signal.SIGINT)
            released.wait(120)
            raise EOFError
        if line is None:
            raise EOFError
        return line

    monkeypatch.setattr(builtins, "input", read)
    return released


CTRL_C = "<Ctrl+C>"


def test_ctrl_c_during_a_turn_cancels_it_and_stores_nothing_of_it(
    chat_env, monkeypatch, sigint_as_on_a_terminal
):
    from agent_memory.providers.chat.offline import OfflineChatModel

    env, db = chat_env
    answer = OfflineChatModel.generate

    async def slow_to_answer(self, request):
        if "peanuts" in str(request.messages[-1].content):  # the turn to interrupt
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl+C while the model answers
            await asyncio.sleep(120)
        return await answer(self, request)

    monkeypatch.setattr(OfflineChatModel, "generate", slow_to_answer)
    released = typed(monkeypatch, ["I am allergic to peanuts", "What is my name?", "/quit"])
    try:
        result = CliRunner().invoke(app, ["chat", "--user", "ann"], env=env)
    finally:
        released.set()
    assert result.exit_code == 0, result.output
    assert "cancelled (Ctrl+C): this turn was not saved (no message, no action record)" in (
        result.output
    )
    assert len(answers(result.output)) == 2  # the chat went on: the next question answered
    assert "nothing new to remember" in result.output  # /quit formed the session
    # Nothing of the cancelled turn: no message, no action, so nothing to form from it.
    said = [m["content"] for m in db.messages.find({"agent_id": AGENT, "role": "user"})]
    assert said == ["What is my name?"]
    assert [a["content"] for a in db.action_logs.find({"agent_id": AGENT})] == said
    assert db.memories.count_documents({"agent_id": AGENT, "user_id": "ann"}) == 0


def test_ctrl_c_once_the_turn_is_being_saved_lets_it_finish_and_says_what_was_saved(
    chat_env, monkeypatch, sigint_as_on_a_terminal
):
    from agent_memory.memory.conversation.memory import ConversationMemory

    env, db = chat_env
    append = ConversationMemory.append_turn

    async def saving(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl+C as the turn's messages are written
        return await append(self, *args, **kwargs)

    monkeypatch.setattr(ConversationMemory, "append_turn", saving)
    typed(monkeypatch, ["My name is Ann", "/quit"])
    result = CliRunner().invoke(app, ["chat", "--user", "ann"], env=env)
    assert result.exit_code == 0, result.output
    saved = re.search(
        r"Ctrl\+C came while this turn was being saved, so it was not cancelled: saved whole, "
        r"your message, the answer and its action record \((act_\w+)\)",
        " ".join(result.output.split()),
    )
    assert saved, result.output
    action = db.action_logs.find_one({"_id": saved.group(1)})
    assert action["content"] == "My name is Ann" and action["outcome"] == "success"
    roles = [m["role"] for m in db.messages.find({"agent_id": AGENT}).sort("seq", 1)]
    assert roles == ["user", "assistant"]


#: A chat whose turn's save never ends (a database that stopped answering), run as a user runs
#: it: SIGINT at Python's default, even when the test run ignores it (a background job).
HANGING_SAVE = """
import asyncio, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from agent_memory.memory.conversation.memory import ConversationMemory

async def hangs(self, *args, **kwargs):
    print("saving", file=sys.stderr, flush=True)
    await asyncio.Event().wait()

ConversationMemory.append_turn = hangs
from agent_memory.cli import app
app(["chat", "--user", "ann", "--session", "s-1"], prog_name="agent-memory")
"""


def test_a_second_ctrl_c_during_a_save_that_hangs_ends_the_chat_at_once(chat_env, offline_env):
    """Issue 35 review: a Ctrl+C during a save only marked the turn "late", so a save held by
    an unreachable database could not be interrupted until the driver gave up. The second
    one ends the chat at once (a process: it exits as a kill would) and says what may be
    stored."""
    env, _ = chat_env
    out: list[str] = []
    err: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-c", HANGING_SAVE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**offline_env, **env},
        text=True,
    ) as chat_process:
        readers = [
            threading.Thread(target=lambda: out.extend(chat_process.stdout), daemon=True),
            threading.Thread(target=lambda: err.extend(chat_process.stderr), daemon=True),
        ]
        for reader in readers:
            reader.start()

        def until(condition, what: str) -> None:
            deadline = time.monotonic() + 120
            while not condition():
                assert chat_process.poll() is None, f"ended before {what}: {out + err}"
                assert time.monotonic() < deadline, f"no {what}: {out + err}"
                time.sleep(0.05)

        try:
            chat_process.stdin.write("My name is Ann\n")
            chat_process.stdin.flush()
            until(lambda: "saving\n" in err, "save")
            chat_process.send_signal(signal.SIGINT)
            until(lambda: "Ctrl+C again leaves at once" in "".join(out), "first Ctrl+C")
            chat_process.send_signal(signal.SIGINT)
            code = chat_process.wait(timeout=60)  # the save never ends: only leaving ends it
        finally:
            if chat_process.poll() is None:
                chat_process.kill()
            for reader in readers:
                reader.join(30)
    said = " ".join("".join(out).split())
    assert code == 130, said
    assert "(Ctrl+C: this turn is being saved, so it is not cancelled; Ctrl+C again leaves" in said
    assert (
        "(Ctrl+C again: leaving now, while this turn was still being saved, so its save may be "
        "incomplete. Your message and the answer are stored both or neither, and its action "
        "record only after them; a write already sent may still land." in said
    )
    assert "`agent-memory chat --session s-1`" in said
    assert "Traceback" not in "".join(err)


def test_ctrl_c_at_the_prompt_leaves_as_quit_does_and_forms_the_session(
    chat_env, monkeypatch, sigint_as_on_a_terminal
):
    env, db = chat_env
    released = typed(monkeypatch, ["I am allergic to peanuts", CTRL_C, "never read"])
    try:
        result = CliRunner().invoke(app, ["chat", "--user", "ann"], env=env)
    finally:
        released.set()
    assert result.exit_code == 0, result.output
    assert "(Ctrl+C: leaving, as with /quit)" in result.output
    assert re.search(r"memories formed from session \S+: 1 new long-term memory", result.output)
    assert "interrupted" not in result.output
    allergy = db.memories.find_one({"agent_id": AGENT, "user_id": "ann"})
    assert allergy["content"] == "The user is allergic to peanuts."


# --- what the chat says ------------------------------------------------------------------------


def test_continuing_a_session_says_so_and_how_many_messages_it_holds(chat_env):
    env, _ = chat_env
    first = chat(env, ["My name is Ann", "Hello again"], "--user", "ann", "--session", "s[1]")
    assert first.exit_code == 0, first.output
    assert "chatting as ann with agent chat, session s[1];" in first.output
    again = chat(env, ["/quit"], "--user", "ann", "--session", "s[1]")
    assert "continuing session s[1] (4 messages so far)" in again.output
    new = chat(env, ["/quit"], "--user", "ann")
    assert "continuing" not in new.output


def test_memories_says_when_the_offline_rules_caught_nothing(chat_env):
    env, _ = chat_env
    result = chat(
        env,
        [
            "I like long walks.",
            "/memories",
            "I am allergic to peanuts.",
            "/memories",
            "/new",
            "/memories",
        ],
        "--user",
        "ann",
    )
    assert result.exit_code == 0, result.output
    shown = result.output.split("you> ")  # what each line of input printed
    first, second, third = shown[2], shown[4], shown[6]
    assert "(the offline rules caught nothing to remember in what you said: they catch only " in (
        first
    )
    assert "a chat model (AGENT_MEMORY_CHAT_MODEL=anthropic) extracts much more" in first
    assert "(the offline rules caught 1 fact in this session so far" in second
    assert "offline rules caught nothing" not in second
    assert "The user is allergic to peanuts." in third and "caught nothing" not in third


def test_text_that_looks_like_markup_is_shown_as_typed(chat_env):
    env, _ = chat_env
    result = chat(env, ["/[b]x", "/feedback [red]"], "--user", "ann")
    assert "unknown command '/[b]x'" in result.output
    assert "got '[red]'" in result.output

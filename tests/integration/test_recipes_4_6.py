"""Recipes 4-6 do what their docstrings say: checked on their output, run as a user runs them."""

from __future__ import annotations

import importlib.util
import re
import sys
from types import ModuleType

import pytest

from agent_memory import IndexManager, MemoryStore, MemorySystem, Tenant
from agent_memory.errors import StorageUnavailableError
from agent_memory.formation import Extraction, FormationQueue
from agent_memory.formation.extraction import Fact, Note
from agent_memory.providers.chat.offline import OfflineChatModel
from tests.integration.recipe_runs import RECIPES, run_cached, succeeded


def run(recipe: str, tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> str:
    """The recipe's output (its one run of the session, shared with the smoke test)."""
    done = run_cached(recipe, env, tmp_path_factory)
    assert done.seconds < 60, f"{recipe} took too long"
    return succeeded(done)  # readable: no log noise


@pytest.mark.mongoeco
def test_context_routing_routes_each_question_to_its_level(tmp_path_factory, offline_env):
    out = run("context_routing.py", tmp_path_factory, offline_env)
    # Each question and the level the router chose for it (with its reasons).
    routed = dict(re.findall(r"^(Q\d) .*\n   routed to: ([A-Z]+) - ", out, re.MULTILINE))
    assert routed == {"Q1": "RECENT", "Q2": "MEMORY", "Q3": "KNOWLEDGE", "Q4": "MODEL"}
    # The scene-setting statement asks nothing: shown, but not counted for any level.
    assert re.search(r"^scene sam: My flight to Kyoto.*\n   routed to: ", out, re.MULTILINE)
    assert "(a statement, not a question: its route is not counted below)" in out
    assert "questions routed to each level: recent 1, memory 1, knowledge 1, model 1" in out
    # The route orders the sources, it filters none: every recalled source is in each prompt.
    prompts = re.findall(
        r"in the prompt \(manifest\): (\d+) recent messages, (\d+) memories, "
        r"(\d+) documents",
        out,
    )
    assert len(prompts) == 5 and all(m == "3" and d == "3" for _, m, d in prompts)
    assert "route order: memory > recent;" in out and "route order: knowledge > recent;" in out
    answers = dict(re.findall(r"^(Q\d) [\s\S]*?   agent: (.*)$", out, re.MULTILINE))
    assert "12 April" in answers["Q1"]  # quoted from the turn before
    assert "Sam" in answers["Q2"]  # told in the earlier session, formed into memory
    assert "48 hours" in answers["Q3"] and "hotel-cancellation.md" in answers["Q3"]
    # Offline: no general knowledge of its own, and it says what it was given instead of
    # claiming that nothing was found.
    assert answers["Q4"] == (
        "[offline model] None of what I was given (your profile, 3 long-term memories, "
        "3 knowledge-base passages and our recent conversation) shares words with that question."
    )
    assert "recent window covers 100%" in out
    assert re.search(r"routed to: MEMORY - best memory similarity [\d.]+ \(a strong match\)", out)
    assert "The user's name is Sam." in out  # the earlier session, formed


@pytest.mark.mongoeco
def test_langgraph_memory_service_debounces_and_recalls_across_threads(
    tmp_path_factory, offline_env
):
    out = run("langgraph_memory_service.py", tmp_path_factory, offline_env)
    assert re.search(
        r"formation scheduled 3 times -> 1 job \(fjob_\w+: pending\); "
        r"formation runs so far: 0",
        out,
    )
    formed = re.search(
        r"formation run 1 of job (fjob_\w+), ([\d.]+) s after the last message: "
        r"6 messages",
        out,
    )
    assert formed, out
    assert float(formed.group(2)) >= 1.5  # not before the debounce delay
    assert "formation runs in all: 1" in out
    assert "'user_name': 'Ada', 'home': 'Porto', 'occupation': 'translator'" in out
    assert "('memories', 'ada', 'Fact') 'home': The user lives in Porto." in out
    thread_2 = out.split("== thread 2")[1]
    assert "window seat" in thread_2
    # The recipe's system part is no data block of the framework's: the model cannot tell
    # where its lines came from, so it does not claim they are long-term memory.
    assert "From the context I was given: The user lives in Porto." in thread_2
    assert "From the context I was given: The user works as a translator." in thread_2
    assert "thread-1 has 6 messages, thread-2 has 8" in out
    # Thread 2's burst: one more job; the changed home supersedes the old one, kept as history.
    assert re.search(
        r"formation run 2 \(job fjob_\w+, thread-2, 8 messages\): home is now Lisbon", out
    )
    assert "its history: The user lives in Lisbon. <- The user lives in Porto." in out
    assert "formation runs in all: 2, for 7 user messages in two bursts" in out


@pytest.mark.mongoeco
def test_chatbot_mcp_calls_memory_and_mcp_tools_and_starts_a_new_session(
    tmp_path_factory, offline_env
):
    out = run("chatbot_mcp.py", tmp_path_factory, offline_env)
    assert "tool use is SCRIPTED here" in out  # the offline model calls no tools: said plainly
    session_1, session_2 = out.split("== a new session starts ==")
    assert 'tool call: travel__weather({"city": "Porto"}) -> Porto this weekend: sunny' in session_1
    assert "(1 tool call, route:" in session_1 and "(0 tool calls, route:" in out
    assert "(1 tool calls" not in out  # issue 35 item 19
    # start_new_session brought session 1's formation forward: formed in about a second,
    # not after the 30 s debounce the agent runs with.
    formed = re.search(
        r"session-1 formed into long-term memory ([\d.]+) s after session-2 started "
        r"\(without it: after 30 s of quiet\)",
        session_2,
    )
    assert formed and float(formed.group(1)) < 5, session_2
    assert "0 messages in short-term memory, 3 long-term memories kept" in session_2
    assert "'user_name': 'Maya', 'home': 'Lisbon'" in session_2
    assert "\n  - The user lives in Lisbon.\n" in session_2
    assert "greeting built by this script from the remembered profile" in session_2
    assert "bot: Welcome back" not in out  # the script's greeting is not passed off as the bot's
    umbrella = session_2.split("maya: Will I need an umbrella")[1].split("maya:")[0]
    calls = re.findall(r"tool call: (\S+?)\((.*?)\) -> ", umbrella)
    assert calls == [
        ("search_long_term_memory", '{"query": "Where does the user live?"}'),
        ("travel__weather", '{"city": "Lisbon"}'),  # the city came from memory
    ]
    assert "Take an umbrella." in umbrella and "(2 tool calls, route: memory)" in umbrella
    assert "My memory search found:" in session_2
    assert 'travel__local_time({"city": "Tokyo"}) -> Tokyo is at UTC+9' in session_2


def _load(recipe: str) -> ModuleType:
    name = f"recipe_{recipe.removesuffix('.py')}"
    spec = importlib.util.spec_from_file_location(name, RECIPES / recipe)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


async def test_memory_service_retry_overwrites_what_the_failed_attempt_put(
    connection, embedder, monkeypatch
):
    # abatch succeeds, then `complete` fails: the job is given back (and merged into the
    # session's newer job, as a message arrived meanwhile); the retry must not add copies.
    recipe = _load("langgraph_memory_service.py")
    await IndexManager(connection, embedder.signature).setup()
    memories = MemorySystem(connection, embedder)
    queue = FormationQueue(connection, debounce_seconds=0, retry_base_seconds=0)
    store = MemoryStore(memories.long_term, agent_id=recipe.AGENT)
    tenant, thread = Tenant(recipe.AGENT, "ada"), "thread-1"

    async def say(text: str) -> None:
        turn = [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]
        await memories.conversation.append_turn(tenant, thread, turn)
        await queue.schedule(tenant, thread)

    formed = Extraction(
        notes=[Note(content="Keeps a diary in Portuguese", context="said while chatting")],
        facts=[
            Fact(content="The user keeps a diary."),
            Fact(content="The user is Ada.", key="name"),
        ],
    )

    async def extract(chat, messages, *, profile=None):  # what a model would extract
        return formed

    monkeypatch.setattr(recipe, "extract", extract)
    complete, failed = queue.complete, []

    async def complete_fails_once(job, **options):
        monkeypatch.setattr(queue, "complete", complete)
        failed.append(job.id)
        await say("Also, I write every evening.")  # a new job for the session, beside this one
        raise StorageUnavailableError("the queue's server went away")

    monkeypatch.setattr(queue, "complete", complete_fails_once)
    service = recipe.MemoryService(queue, memories.conversation, store, OfflineChatModel())
    await say("I keep a diary in Portuguese.")
    with pytest.raises(StorageUnavailableError):
        await service.run_once()
    first = {(i.namespace[-1], i.key) for i in await store.asearch(("memories", "ada"), limit=20)}
    assert len(first) == 3  # put before complete failed

    assert await service.run_once()  # the retry, as the session's newer job
    ((job, messages, _),) = service.runs
    assert messages == 4  # both turns: the stretch the failed attempt started from
    assert job.id != failed[0]  # not the failed job: the one it was merged into
    statuses = sorted(j.status for j in await queue.jobs(tenant, thread))
    assert statuses == ["done", "merged"]
    items = await store.asearch(("memories", "ada"), limit=20)
    assert {(i.namespace[-1], i.key) for i in items} == first  # overwritten, not copied
    assert sorted(i.value["content"] for i in items) == [
        "Keeps a diary in Portuguese",
        "The user is Ada.",
        "The user keeps a diary.",
    ]
    await memories.aclose()


async def test_the_chatbots_mcp_server_wants_its_bearer_token():
    pytest.importorskip("mcp")
    from agent_memory.agent.mcp import McpServer, McpTools
    from agent_memory.errors import ProviderUnavailableError

    recipe = _load("chatbot_mcp.py")
    url, server, serving = await recipe.serve_on_loopback("s3cret")
    try:
        anonymous = McpTools([McpServer("travel", url, required=True, connect_timeout_s=3)])
        with pytest.raises(ProviderUnavailableError):
            await anonymous.open()
        wrong = {"Authorization": "Bearer guess"}
        guessing = McpTools([McpServer("travel", url, wrong, required=True, connect_timeout_s=3)])
        with pytest.raises(ProviderUnavailableError):
            await guessing.open()
        tools = McpTools([McpServer("travel", url, {"Authorization": "Bearer s3cret"})])
        await tools.open()
        try:
            assert {spec.name for spec in tools.specs} == {"travel__weather", "travel__local_time"}
            assert "Take an umbrella" in await tools.call("travel__weather", {"city": "lisbon"})
            assert await tools.call("travel__weather", {"city": "Oslo"}) == "No forecast for Oslo."
        finally:
            await tools.aclose()
    finally:
        server.should_exit = True
        await serving

"""A chatbot with memory and MCP tools (seed 000): memory search, MCP over HTTP, new sessions.

What it shows, with a ``RAGAgent``:

- MCP tools over streamable HTTP: a tiny MCP server (``travel-tools``: ``weather`` and
  ``local_time``, canned data) is started on loopback with the ``mcp`` package, behind a
  bearer token; the agent connects with ``McpServer(url, headers={"Authorization": ...})``
  and offers its tools to the model as ``travel__weather`` and ``travel__local_time``;
- the memory search tool, ``search_long_term_memory``, which the model calls to look up
  what it remembers (seed 000's "automatic" and "explicit" uses);
- the new-session behaviour: when a new session starts, the previous one is formed into
  long-term memories at once (formation is otherwise debounced, 30 s of quiet by default;
  ``start_new_session`` says the old session is over and brings its formation forward), the
  short-term memory of the new session is empty, and the long-term memories are kept; the
  script then greets the user with the remembered profile (a greeting it builds itself and
  labels so, not an agent turn);
- every tool call made, read back from the conversation memory, where the agent records
  each call with its arguments and result.

Offline, the chat model never calls tools (``OfflineChatModel`` only quotes context). So
that the tool loop runs anyway, this recipe then drives it with the public ``FakeChatModel``
and a written policy (below, ``scripted_tool_use``): a keyword rule decides which tool to
call, and the answers are the offline model's quotes of the tool results. The output says
so. With Claude the same agent lets the model choose the tools itself.

    . .venv/bin/activate    # once per shell: the virtual environment of README's quick start
    python recipes/chatbot_mcp.py

Needs the MCP extra (``pip install 'agent-memory[mcp]'``). Switching to production, with no
code change: set ``MONGODB_URI`` to Atlas (or atlas-local from docker-compose.yml) and run
``agent-memory indexes setup``; set ``AGENT_MEMORY_CHAT_MODEL=anthropic`` and
``ANTHROPIC_API_KEY`` for Claude (no scripted policy then); set
``AGENT_MEMORY_EMBEDDER=voyage`` and ``VOYAGE_API_KEY`` for Voyage. Point ``McpServer`` at
your own MCP server's URL and token instead of the loopback one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import secrets
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import structlog

from agent_memory import (
    AgentConfig,
    ChatModel,
    ChatRequest,
    ChatResponse,
    FakeChatModel,
    IndexManager,
    McpServer,
    OfflineChatModel,
    RAGAgent,
    Tenant,
    TurnResult,
    connect,
    load_settings,
    make_chat_model,
    make_embedder,
)
from agent_memory.providers.chat import TextBlock, ToolCall, ToolResult

try:
    import uvicorn
    from mcp.server.mcpserver import MCPServer
except ImportError:  # pragma: no cover - depends on the install
    sys.exit("this recipe needs the MCP extra: pip install 'agent-memory[mcp]'")

AGENT = "travel-chatbot"
USER = "maya"
FORECASTS = {  # canned: the point is the protocol, not the weather
    "lisbon": "Lisbon this weekend: rain showers, 14 °C. Take an umbrella.",
    "porto": "Porto this weekend: sunny, 19 °C. No umbrella needed.",
}
UTC_OFFSETS = {"lisbon": 0, "porto": 0, "tokyo": 9, "new york": -5}

SESSION_1 = [
    "Hi! I'm Maya and I live in Lisbon.",
    "I prefer an aisle seat on long flights.",
    "What's the weather in Porto this weekend?",
]
SESSION_2 = [
    "Will I need an umbrella at home this weekend?",
    "What do you remember about me?",
    "What time is it in Tokyo when it is noon in Lisbon?",
]


# --- the MCP server ---------------------------------------------------------------------------


def travel_tools() -> MCPServer:
    server = MCPServer("travel-tools", log_level="WARNING")

    @server.tool(description="This weekend's weather forecast for a city")
    def weather(city: str) -> str:
        return FORECASTS.get(city.strip().lower(), f"No forecast for {city}.")

    @server.tool(description="A city's offset from UTC in hours")
    def local_time(city: str) -> str:
        offset = UTC_OFFSETS.get(city.strip().lower())
        if offset is None:
            return f"No time zone known for {city}."
        return f"{city} is at UTC{offset:+d}: noon in Lisbon is {(12 + offset) % 24}:00 there."

    return server


def require_bearer(app: Any, token: str) -> Any:
    """The ASGI app, answering 401 to HTTP requests without the token (seed 000 sends one)."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict, receive: Callable, send: Callable[[dict], Awaitable]) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    return guarded


async def serve_on_loopback(token: str) -> tuple[str, uvicorn.Server, asyncio.Task]:
    with socket.socket() as sock:  # a free port
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app = require_bearer(travel_tools().streamable_http_app(), token)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # the server failed to start: raise its error
        await asyncio.sleep(0.02)
    return f"http://127.0.0.1:{port}/mcp", server, task


# --- the scripted stand-in for a tool-calling model -------------------------------------------

_CITY = re.compile(r"\b(?:in|at|for)\s+((?:New )?[A-Z][a-z]+)")
_LIVES_IN = re.compile(r"lives in ([A-Z][\w-]+)")


class ScriptedModel(FakeChatModel):
    """The public fake chat model with a written policy. Like the offline model it calls no
    language model, so it says so (``offline``): memories are then formed by the rule-based
    extractor and summaries are extractive, as with the offline model."""

    offline: ClassVar[bool] = True


def scripted_tool_use(offline: OfflineChatModel) -> Callable[[ChatRequest], ChatResponse | str]:
    """A keyword policy standing in for a model's tool choices; answers are offline quotes."""

    def call(name: str, **arguments: Any) -> ChatResponse:
        block = ToolCall(f"call-{secrets.token_hex(4)}", name, arguments)
        return ChatResponse((TextBlock(""), block), "tool_use", "scripted")

    def policy(request: ChatRequest) -> ChatResponse | str:
        offered = {spec.name for spec in request.tools}
        question = next(m.text for m in reversed(request.messages) if m.text).splitlines()[-1]
        results = [b for b in request.messages[-1].content if isinstance(b, ToolResult)]
        if results:
            found = _LIVES_IN.search(" ".join(r.content for r in results))
            weather_at_home = "umbrella" in question or "weather" in question
            if found and weather_at_home and "travel__weather" in offered:
                return call("travel__weather", city=found.group(1))  # memory, then MCP
            if not offline.quotes(request) and not any(r.is_error for r in results):
                # An explicit "what do you remember" shares no words with what is remembered.
                lines = [line for r in results for line in r.content.splitlines()]
                return "[scripted model] My memory search found:\n" + "\n".join(lines)
            return offline.answer(request)
        city = _CITY.search(question)
        if "home" in question and "travel__weather" in offered:
            return call("search_long_term_memory", query="Where does the user live?")
        if ("weather" in question or "umbrella" in question) and city:
            return call("travel__weather", city=city.group(1))
        if "time" in question and city:
            return call("travel__local_time", city=city.group(1))
        if "remember" in question:
            return call("search_long_term_memory", query="the user's name, home and preferences")
        return offline.answer(request)

    return policy


# --- the chatbot ------------------------------------------------------------------------------


async def show_turn(agent: RAGAgent, session: str, text: str) -> TurnResult:
    result = await agent.process_query(USER, session, text)
    print(f"{USER}: {text}")
    messages = await agent.memories.conversation.window(Tenant(AGENT, USER), session, last_n=8)
    asked = max(i for i, m in enumerate(messages) if m.role == "user" and m.content == text)
    for message in messages[asked + 1 :]:  # this turn's records: tool calls, then the answer
        if message.role == "tool" and message.tool is not None:
            output = message.content.replace("\n", " | ")
            print(f"   tool call: {message.tool.name}({message.tool.input}) -> {output}")
    answer = result.answer.replace("\n", "\n       ")
    calls = f"{result.tool_calls} tool call{'' if result.tool_calls == 1 else 's'}"
    print(f"bot: {answer}\n   ({calls}, route: {result.route.level})")
    return result


async def wait_until_formed(agent: RAGAgent, session: str, timeout: float = 20) -> float:
    """Seconds until the session's formation job is done (the agent's worker runs it)."""
    started = time.perf_counter()
    tenant = Tenant(AGENT, USER)
    while time.perf_counter() - started < timeout:
        jobs = await agent.queue.jobs(tenant, session)
        if jobs and all(job.status == "done" for job in jobs):
            return time.perf_counter() - started
        await asyncio.sleep(0.1)
    raise TimeoutError(f"memories of {session} were not formed within {timeout} s")


async def main() -> None:
    started = time.perf_counter()
    # This recipe's data in a database of its own, one per embedder (vectors of two models
    # cannot be compared), unless AGENT_MEMORY_DATABASE (or .env) names one.
    if "database" not in (chosen := load_settings()).model_fields_set:
        os.environ["AGENT_MEMORY_DATABASE"] = f"recipe_chatbot_mcp_{chosen.embedder}"
    settings = load_settings()
    embedder, chat = make_embedder(settings), make_chat_model(settings)
    scripted = chat.provider in ("offline", "fake")
    model: ChatModel = (
        ScriptedModel(default=scripted_tool_use(OfflineChatModel()), model="scripted-tool-use")
        if scripted
        else chat
    )
    token = secrets.token_urlsafe(16)
    url, server, serving = await serve_on_loopback(token)
    travel = McpServer("travel", url, headers={"Authorization": f"Bearer {token}"}, required=True)
    # The default debounce (30 s of quiet); start_new_session ends the wait for session-1.
    config = AgentConfig(AGENT)
    try:
        async with await connect(settings) as conn:
            await IndexManager(conn, embedder.signature).setup()
            async with RAGAgent(
                conn, embedder, model, config=config, mcp_servers=[travel]
            ) as agent:
                await agent.memories.forget_user(Tenant(AGENT, USER))  # start clean on every run
                print(f"{conn.tier} tier, {embedder.signature.describe()}")
                print(f"MCP server travel-tools on {url} (bearer token required)")
                if scripted:
                    print(
                        f"chat: {chat.model} does not call tools, so tool use is SCRIPTED here: "
                        "FakeChatModel picks tools by keyword and the offline model quotes "
                        "their results (set AGENT_MEMORY_CHAT_MODEL=anthropic for Claude)"
                    )
                else:
                    print(f"chat: {chat.provider} {chat.model}, choosing tools itself")

                print("\n== session 1 ==")
                for text in SESSION_1:
                    await show_turn(agent, "session-1", text)

                print("\n== a new session starts ==")
                await agent.drain()
                await agent.start_new_session(USER, "session-2")
                waited = await wait_until_formed(agent, "session-1")
                print(
                    f"session-1 formed into long-term memory {waited:.1f} s after session-2 "
                    f"started (without it: after {config.formation_debounce_s:g} s of quiet)"
                )
                tenant = Tenant(AGENT, USER)
                window = await agent.memories.conversation.window(tenant, "session-2")
                remembered = await agent.memories.long_term.list_memories(tenant)
                print(
                    f"session-2: {len(window)} messages in short-term memory, "
                    f"{len(remembered)} long-term memories kept"
                )
                profile = (await agent.memories.profiles.get(tenant, "User")).data
                print(f"profile (read back from the store): {profile}")
                for memory in remembered:
                    print(f"  - {memory.content}")
                # Not the agent's words: the app greets with what the store holds (a model
                # turn would need a message from the user first).
                facts = " ".join(m.content for m in remembered)
                print(
                    "greeting built by this script from the remembered profile and memories: "
                    f"Welcome back, {profile.get('user_name', 'there')}! What I remember: "
                    f"{facts}\n"
                )
                for text in SESSION_2:
                    await show_turn(agent, "session-2", text)
    finally:
        server.should_exit = True
        await serving
        await embedder.aclose()
    print(f"done in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    # The library never configures logging; an application decides what it wants to see.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main())

"""MCP tools over streamable HTTP: a real MCP server on loopback, called through the agent."""

from __future__ import annotations

import asyncio
import socket

import pytest

pytest.importorskip("mcp")
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from agent_memory.agent.config import AgentConfig
from agent_memory.agent.mcp import McpServer, McpToolError, McpTools
from agent_memory.agent.rag_agent import RAGAgent
from agent_memory.errors import ConfigurationError, LiveCallBlockedError, ProviderUnavailableError
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.chat.base import ChatResponse, TextBlock, ToolCall, ToolResult
from agent_memory.providers.chat.fake import FakeChatModel
from tests.waiting import until


def _server() -> MCPServer:
    server = MCPServer("test-tools")

    @server.tool(description="Weather for a city")
    def weather(city: str) -> str:
        return f"It is sunny in {city}."

    @server.tool(description="Always fails")
    def broken(reason: str) -> str:
        raise ToolError(f"broken on purpose: {reason}")

    @server.tool(description="Takes its time")
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "done"

    return server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def _serve(port: int):
    app = _server().streamable_http_app()
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(uv.serve())
    await until(lambda: uv.started, "the MCP test server to start")
    return uv, task


async def _stop(uv, task) -> None:
    uv.should_exit = True
    await asyncio.wait_for(task, 10)


@pytest.fixture
async def mcp_url():
    port = _free_port()
    served = await _serve(port)
    yield f"http://127.0.0.1:{port}/mcp"
    await _stop(*served)


async def test_tools_are_listed_and_called_over_streamable_http(mcp_url):
    tools = McpTools([McpServer("web", mcp_url)])
    await tools.open()
    try:
        names = {spec.name for spec in tools.specs}
        assert {"web__weather", "web__broken", "web__slow"} <= names
        weather = next(spec for spec in tools.specs if spec.name == "web__weather")
        assert weather.description == "Weather for a city"
        assert weather.parameters["properties"]["city"]["type"] == "string"
        assert await tools.call("web__weather", {"city": "Lisbon"}) == "It is sunny in Lisbon."
        with pytest.raises(McpToolError, match="broken on purpose"):
            await tools.call("web__broken", {"reason": "test"})
        with pytest.raises(McpToolError, match="no MCP tool"):
            await tools.call("web__missing", {})
    finally:
        await tools.aclose()


async def test_an_allow_list_and_a_timeout_apply(mcp_url):
    tools = McpTools([McpServer("web", mcp_url, tools=frozenset({"slow"}), timeout_s=0.3)])
    await tools.open()
    try:
        assert [spec.name for spec in tools.specs] == ["web__slow"]
        with pytest.raises(McpToolError, match="no answer within"):
            await tools.call("web__slow", {"seconds": 2})
        assert await tools.call("web__slow", {"seconds": 0}) == "done"  # still usable
    finally:
        await tools.aclose()


async def test_a_restarted_server_is_reconnected_and_a_down_one_is_an_error_result():
    port = _free_port()
    tools = McpTools([McpServer("web", f"http://127.0.0.1:{port}/mcp", connect_timeout_s=3)])
    served = await _serve(port)
    await tools.open()
    await _stop(*served)
    with pytest.raises(McpToolError):
        await tools.call("web__weather", {"city": "Oslo"})
    served = await _serve(port)
    try:
        assert await tools.call("web__weather", {"city": "Oslo"}) == "It is sunny in Oslo."
    finally:
        await tools.aclose()
        await _stop(*served)


async def test_an_unreachable_server_is_skipped_unless_required():
    url = f"http://127.0.0.1:{_free_port()}/mcp"
    optional = McpTools([McpServer("down", url, connect_timeout_s=3)])
    await optional.open()
    assert optional.specs == ()
    await optional.aclose()
    required = McpTools([McpServer("down", url, connect_timeout_s=3, required=True)])
    with pytest.raises(ProviderUnavailableError, match="'down'"):
        await required.open()


async def test_a_non_loopback_server_is_blocked_in_tests():
    tools = McpTools([McpServer("far", "https://tools.example.com/mcp", required=True)])
    with pytest.raises(ProviderUnavailableError) as info:
        await tools.open()
    assert isinstance(info.value.__cause__, LiveCallBlockedError)


def test_server_settings_are_checked():
    with pytest.raises(ConfigurationError):
        McpServer("bad name!", "http://127.0.0.1/mcp")
    with pytest.raises(ConfigurationError):
        McpServer("ok", "ftp://127.0.0.1/mcp")
    with pytest.raises(ConfigurationError):
        McpServer("ok", "http://127.0.0.1/mcp", timeout_s=0)
    with pytest.raises(ConfigurationError, match="same name"):
        McpTools([McpServer("a", "http://127.0.0.1/x"), McpServer("a", "http://127.0.0.1/y")])
    secret = McpServer("ok", "http://user:pw@127.0.0.1/mcp", headers={"Authorization": "Bearer s3"})
    assert "pw" not in repr(secret) and "s3" not in repr(secret)


async def test_the_agent_offers_mcp_tools_and_returns_their_results_to_the_model(
    connection, embedder, mcp_url
):
    await IndexManager(connection, embedder.signature).setup()

    def script(request):
        last = request.messages[-1].content
        results = [block for block in last if isinstance(block, ToolResult)]
        if results:
            return " / ".join(f"{r.content} (error={r.is_error})" for r in results)
        assert any(spec.name == "web__weather" for spec in request.tools)
        return ChatResponse(
            (
                TextBlock("checking "),
                ToolCall("c1", "web__weather", {"city": "Porto"}),
                ToolCall("c2", "web__broken", {"reason": "x"}),
                ToolCall("c3", "web__weather", {"town": "Porto"}),  # not in the schema
            ),
            "tool_use",
            "fake",
        )

    chat = FakeChatModel(default=script)
    config = AgentConfig("agent", run_formation_worker=False)
    async with RAGAgent(
        connection, embedder, chat, config=config, mcp_servers=[McpServer("web", mcp_url)]
    ) as agent:
        result = await agent.process_query("alice", "s-mcp", "Weather in Porto?")
    assert result.tool_calls == 3
    parts = result.answer.split(" / ")
    assert parts[0] == "It is sunny in Porto. (error=False)"
    assert "broken on purpose" in parts[1] and parts[1].endswith("(error=True)")
    assert "invalid arguments" in parts[2] and parts[2].endswith("(error=True)")


async def test_a_required_mcp_server_that_is_down_fails_at_start(connection, embedder):
    url = f"http://127.0.0.1:{_free_port()}/mcp"
    agent = RAGAgent(
        connection,
        embedder,
        FakeChatModel(default="x"),
        config=AgentConfig("agent", run_formation_worker=False),
        mcp_servers=[McpServer("down", url, required=True, connect_timeout_s=3)],
    )
    with pytest.raises(ProviderUnavailableError):
        async with agent:
            pass


async def test_a_required_server_down_leaves_no_tools_of_the_others_behind(mcp_url):
    down = f"http://127.0.0.1:{_free_port()}/mcp"
    tools = McpTools(
        [McpServer("web", mcp_url), McpServer("down", down, required=True, connect_timeout_s=3)]
    )
    with pytest.raises(ProviderUnavailableError):
        await tools.open()
    assert tools.specs == ()  # the reachable server was closed again, its tools withdrawn
    with pytest.raises(McpToolError, match="no MCP tool"):
        await tools.call("web__weather", {"city": "Oslo"})

"""Tools from MCP servers over streamable HTTP (seed 000), an optional extra: ``[mcp]``.

>>> agent = RAGAgent(connection, embedder, chat, config=config,  # doctest: +SKIP
...                  mcp_servers=[McpServer("weather", "https://tools.example/mcp")])

Each server is connected once, by a task of its own that holds the connection open until the
agent closes (the MCP client's task groups must be left by the task that entered them, so no
turn ever owns a connection). Its tools are listed at connect time and offered to the model
under ``<server>__<tool>`` names; a call runs with a timeout, and anything that goes wrong
(a server error, a timeout, a dropped connection) comes back to the model as an error result.

MCP servers are outside the tenant boundary: nothing about the user (ids, memories) is sent to
them except what the model puts in a call's arguments. Give the agent only servers you trust
with what users type, and narrow them with ``tools=`` to the ones you mean to offer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from agent_memory._log import get_logger
from agent_memory._redact import redact
from agent_memory.checks import check_number
from agent_memory.errors import (
    ConfigurationError,
    DependencyMissingError,
    ProviderError,
    ProviderUnavailableError,
)
from agent_memory.providers._live import check_live_call
from agent_memory.providers.chat.base import ToolSpec

__all__ = ["McpServer", "McpToolError", "McpTools"]

logger = get_logger(__name__)

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,30}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_TOOL_NAME = 64
_MAX_DESCRIPTION = 1_000


class McpToolError(ProviderError):
    """An MCP tool call failed (the server's error, a timeout, a lost connection)."""


@dataclass(frozen=True, slots=True)
class McpServer:
    """One MCP server reached over streamable HTTP.

    ``tools`` limits what is offered to the model (None offers every tool the server lists);
    ``required`` makes a failed connection an error instead of a warning and no tools.
    """

    name: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    tools: frozenset[str] | None = None
    timeout_s: float = 30.0
    connect_timeout_s: float = 10.0
    required: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ConfigurationError(
                "an MCP server name is 1-31 letters, digits, '_' or '-', starting with a letter"
            )
        if not isinstance(self.url, str) or not self.url.startswith(("http://", "https://")):
            raise ConfigurationError(f"MCP server {self.name!r}: the url must be http(s)")
        if self.tools is not None:
            object.__setattr__(self, "tools", frozenset(self.tools))
        for name in ("timeout_s", "connect_timeout_s"):
            where = f"MCP server {self.name!r}: {name}"
            check_number(
                getattr(self, name), where, above=0, finite=False, error=ConfigurationError
            )

    def __repr__(self) -> str:  # headers may carry credentials
        return f"McpServer(name={self.name!r}, url={_redact(self.url)!r})"


@dataclass(frozen=True, slots=True)
class _RemoteTool:
    spec: ToolSpec
    server: str
    remote_name: str


class _Connection:
    """One server's MCP session, held open by a task of its own."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self.tools: list[_RemoteTool] = []
        self.error: BaseException | None = None
        self._client: Any = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._reopening = asyncio.Lock()

    async def open(self) -> None:
        self._task = asyncio.create_task(self._hold(), name=f"mcp:{self.server.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), self.server.connect_timeout_s)
        except TimeoutError:
            self.error = TimeoutError(f"no answer within {self.server.connect_timeout_s} s")
            await self.close()

    async def _hold(self) -> None:
        try:
            from mcp import Client
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client
        except ImportError as exc:  # pragma: no cover - the extra is installed in tests
            self.error = DependencyMissingError(
                "MCP tools need the 'mcp' extra: pip install 'agent-memory[mcp]'"
            )
            self.error.__cause__ = exc
            self._ready.set()
            return
        try:
            check_live_call("mcp", self.server.url)
            http = create_mcp_http_client(headers=dict(self.server.headers))
            async with (
                http,
                Client(
                    streamable_http_client(self.server.url, http_client=http),
                    read_timeout_seconds=self.server.timeout_s,
                ) as client,
            ):
                self._client = client
                self.tools = await self._list(client)
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:
            self.error = exc
        finally:
            self._client = None
            self._ready.set()

    async def _list(self, client: Any) -> list[_RemoteTool]:
        tools: list[_RemoteTool] = []
        cursor = None
        for _ in range(100):  # pages
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                remote = self._convert(tool)
                if remote is not None:
                    tools.append(remote)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    def _convert(self, tool: Any) -> _RemoteTool | None:
        wanted = self.server.tools
        if wanted is not None and tool.name not in wanted:
            return None
        schema = dict(tool.input_schema or {"type": "object"})
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError:
            logger.warning("mcp_tool_skipped", server=self.server.name, reason="invalid schema")
            return None
        name = _UNSAFE.sub("_", f"{self.server.name}__{tool.name}")[:_MAX_TOOL_NAME]
        description = (tool.description or tool.title or tool.name)[:_MAX_DESCRIPTION]
        return _RemoteTool(ToolSpec(name, description, schema), self.server.name, tool.name)

    async def reopen(self) -> None:
        """Connect again after the connection was lost (one attempt per caller)."""
        async with self._reopening:
            if self._client is not None:  # another turn reconnected meanwhile
                return
            await self.close()
            self.error = None
            self._ready = asyncio.Event()
            self._stop = asyncio.Event()
            await self.open()

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> str:
        if self._client is None:
            logger.info("mcp_reconnecting", server=self.server.name)
            await self.reopen()
        client = self._client
        if client is None:
            raise McpToolError(f"the MCP server {self.server.name!r} is not connected")
        try:
            result = await asyncio.wait_for(
                client.call_tool(tool, dict(arguments)), self.server.timeout_s
            )
        except TimeoutError as exc:
            raise McpToolError(f"no answer within {self.server.timeout_s} s") from exc
        except Exception as exc:
            raise McpToolError(f"{type(exc).__name__}: {_redact(str(exc))[:300]}") from exc
        text = _result_text(result)
        if result.is_error:
            raise McpToolError(text or "the tool reported an error")
        return text or "(no content)"

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, 5)
            self._task = None


class McpTools:
    """The agent's MCP servers: connected on first use, closed with the agent."""

    def __init__(self, servers: Sequence[McpServer] = ()) -> None:
        names = [server.name for server in servers]
        if len(set(names)) != len(names):
            raise ConfigurationError("two MCP servers have the same name")
        self._servers = tuple(servers)
        self._connections: dict[str, _Connection] = {}
        self._tools: dict[str, _RemoteTool] = {}
        self._lock = asyncio.Lock()
        self._opened = False

    def __bool__(self) -> bool:
        return bool(self._servers)

    async def open(self) -> None:
        """Connect every server (concurrently). Idempotent."""
        async with self._lock:
            if self._opened:
                return
            connections = [_Connection(server) for server in self._servers]
            await asyncio.gather(*(connection.open() for connection in connections))
            for connection in connections:
                server = connection.server
                if connection.error is not None:
                    message = f"MCP server {server.name!r} ({_redact(server.url)}) is unreachable: {type(connection.error).__name__}"
                    if server.required:
                        for other in connections:
                            await other.close()
                        self._connections.clear()  # nothing half-open for the next attempt
                        self._tools.clear()
                        raise ProviderUnavailableError(message) from connection.error
                    logger.warning(
                        "mcp_server_unavailable",
                        server=server.name,
                        error=type(connection.error).__name__,
                    )
                    continue
                self._connections[server.name] = connection
                for tool in connection.tools:
                    if tool.spec.name in self._tools:
                        logger.warning("mcp_tool_skipped", server=server.name, reason="name taken")
                        continue
                    self._tools[tool.spec.name] = tool
                logger.info("mcp_server_connected", server=server.name, tools=len(connection.tools))
            self._opened = True

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool.spec for tool in self._tools.values())

    async def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        tool = self._tools.get(name)
        if tool is None:
            raise McpToolError(f"there is no MCP tool named {name!r}")
        return await self._connections[tool.server].call(tool.remote_name, arguments)

    def handler(self, name: str) -> Any:
        async def run(arguments: Mapping[str, Any]) -> str:
            return await self.call(name, arguments)

        return run

    async def aclose(self) -> None:
        async with self._lock:
            for connection in self._connections.values():
                await connection.close()
            self._connections.clear()
            self._tools.clear()
            self._opened = False


def _result_text(result: Any) -> str:
    parts: list[str] = []
    for item in result.content or ():
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        else:
            parts.append(f"[{kind or 'content'} omitted]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts)


def _redact(text: str) -> str:
    """``text`` without credentials; in a server's URL the whole user part goes, as a token
    is often sent as the user name alone."""
    return re.sub(r"://[^/@\s]+@", "://***@", redact(text))

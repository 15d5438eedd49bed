"""A loopback TCP proxy that takes the database away at a chosen moment, for fault tests.

The framework connects to the proxy instead of the embedded server. The proxy forwards the
MongoDB wire protocol message by message and counts the commands it forwards from the client
(handshakes, pings and session ends left out, as in the integration tests' command counter).
Armed with :meth:`FaultProxy.cut_at`, it cuts when the ``n``-th counted command arrives:
either before forwarding it (the server never sees it) or just after (the server works it,
the reply is lost). A test hook can also call :meth:`FaultProxy.cut` directly. A cut aborts
every open connection and stops listening, so new connections are refused, like a server
that stopped; :meth:`FaultProxy.restore` listens again on the same port: the server is back.
The port stays reserved meanwhile (bound by a socket that does not listen): no connection made
elsewhere, by another test process for one, can be given it as its own port in the meantime.

``faults`` counts the cuts made, for the reliability figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
from dataclasses import dataclass

import bson

from agent_memory.mongo.embedded import ServerInfo

__all__ = ["FaultProxy", "command_name"]

IGNORED = frozenset(
    {"hello", "ismaster", "isMaster", "ping", "endSessions", "buildInfo", "saslStart"}
)
_OP_MSG = 2013
_HEADER = struct.Struct("<iiii")


def command_name(message: bytes) -> str | None:
    """The command an OP_MSG carries (the first key of its body), or ``None`` for other
    messages (the legacy OP_QUERY handshake)."""
    _, _, _, op_code = _HEADER.unpack_from(message)
    if op_code != _OP_MSG:
        return None
    offset = _HEADER.size + 4  # header, flag bits
    if message[offset] != 0:  # the body section (kind 0) comes first in pymongo's messages
        return None
    (size,) = struct.unpack_from("<i", message, offset + 1)
    body = bson.decode(message[offset + 1 : offset + 1 + size])
    return next(iter(body), None)


@dataclass(slots=True)
class _Trigger:
    at: int
    deliver: bool


class FaultProxy:
    """``async with FaultProxy(host, port, secret) as proxy:`` then connect to ``proxy.uri``."""

    def __init__(self, upstream_host: str, upstream_port: int, secret: str | None = None) -> None:
        self.upstream = (upstream_host, upstream_port)
        #: The upstream embedded server's password: the proxy passes bytes, clients authenticate.
        self.secret = secret
        self.port = 0
        self.commands: list[str] = []
        self.faults = 0
        #: The command each armed cut fell on, and whether it was delivered.
        self.cuts: list[tuple[str, bool]] = []
        self._server: asyncio.Server | None = None
        self._reserved: socket.socket | None = None
        self._links: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._trigger: _Trigger | None = None
        self._hold_replies = False
        self._flowing = asyncio.Event()
        self._flowing.set()

    @property
    def uri(self) -> str:
        return ServerInfo("127.0.0.1", self.port, os.getpid(), self.secret).uri

    @property
    def down(self) -> bool:
        return self._server is None

    async def start(self) -> str:
        # Bound first, with SO_REUSEADDR as the listening socket has, and never listening: the
        # listener can bind the same port, while neither a connection made anywhere on the
        # machine (its ephemeral port) nor a bind to a free port can be given it while down.
        reserved = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            reserved.bind(("127.0.0.1", self.port))
            self.port = reserved.getsockname()[1]
            self._server = await asyncio.start_server(
                self._accept, "127.0.0.1", self.port, reuse_address=True
            )
        except BaseException:
            reserved.close()
            raise
        self._reserved = reserved
        return self.uri

    async def __aenter__(self) -> FaultProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- faults -------------------------------------------------------------------------------

    def cut_at(self, n: int, *, deliver: bool) -> None:
        """Cut when the ``n``-th counted command from now arrives; ``deliver``: forward it
        first (the server works it, its reply is lost)."""
        self._trigger = _Trigger(len(self.commands) + n, deliver)

    def cut(self) -> None:
        """Abort every connection and refuse new ones until :meth:`restore`."""
        self._trigger = None
        self.faults += 1
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    def freeze(self) -> None:
        """Stop forwarding anything while every connection stays open: a server that hangs,
        or a network that drops packets without resetting connections."""
        self._flowing.clear()
        self.faults += 1

    async def restore(self) -> None:
        """Listen again on the same port: the server is back."""
        if self._server is None:
            self._server = await asyncio.start_server(
                self._accept, "127.0.0.1", self.port, reuse_address=True
            )
        self._hold_replies = False
        self._flowing = asyncio.Event()
        self._flowing.set()

    async def aclose(self) -> None:
        self.cut()
        self.faults -= 1  # closing is not a fault
        for task in list(self._links):
            task.cancel()
        await asyncio.gather(*self._links, return_exceptions=True)
        if self._reserved is not None:
            self._reserved.close()
            self._reserved = None

    # --- forwarding -----------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._server is None:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()
            return
        if self._server is None:  # cut while this connection was being made
            writer.transport.abort()
            up_writer.transport.abort()
            return
        self._writers.update((writer, up_writer))
        task = asyncio.current_task()
        assert task is not None
        self._links.add(task)
        try:
            await asyncio.gather(
                self._requests(reader, up_writer), self._replies(up_reader, writer)
            )
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._links.discard(task)
            for w in (writer, up_writer):
                self._writers.discard(w)
                w.transport.abort()

    async def _requests(self, reader: asyncio.StreamReader, up: asyncio.StreamWriter) -> None:
        while True:
            header = await reader.readexactly(4)
            (length,) = struct.unpack("<i", header)
            message = header + await reader.readexactly(length - 4)
            name = command_name(message)
            await self._flowing.wait()  # held, not lost: a frozen server still has it queued
            trigger = self._trigger
            if name is not None and name not in IGNORED:
                self.commands.append(name)
                if trigger is not None and len(self.commands) == trigger.at:
                    self.cuts.append((name, trigger.deliver))
                    if trigger.deliver:
                        self._hold_replies = True  # the reply must not get through
                        up.write(message)
                        await up.drain()
                        # Let the server read it before the connection goes.
                        await asyncio.sleep(0.02)
                    self.cut()
                    return
            up.write(message)
            await up.drain()

    async def _replies(self, up: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while chunk := await up.read(1 << 16):
            await self._flowing.wait()
            if self._hold_replies:
                continue
            writer.write(chunk)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.transport.abort()

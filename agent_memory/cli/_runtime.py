"""Open what a command needs: settings, connection, embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from agent_memory.config import Settings, load_settings
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo.connection import Connection, connect
from agent_memory.providers.chat.base import ChatModel
from agent_memory.providers.embedders.base import Embedder
from agent_memory.providers.registry import make_embedder


@dataclass
class Runtime:
    settings: Settings
    connection: Connection
    embedder: Embedder

    def memories(self, chat_model: ChatModel | None = None) -> MemorySystem:
        """The memories with the decay and retention the settings ask for."""
        return MemorySystem.from_settings(
            self.connection, self.embedder, self.settings, chat_model=chat_model
        )


@asynccontextmanager
async def open_runtime(**overrides: object) -> AsyncIterator[Runtime]:
    settings = load_settings(**{k: v for k, v in overrides.items() if v is not None})
    embedder = make_embedder(settings)
    try:
        connection = await connect(settings)
        try:
            yield Runtime(settings, connection, embedder)
        finally:
            await connection.close()
    finally:
        await embedder.aclose()

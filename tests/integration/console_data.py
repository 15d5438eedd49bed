"""What the console tests store and how they configure the console: two agents' keys, the
local token, and memories of two agents, one user of which has a hostile id. Shared by the
ASGI tests (test_console.py) and the browser tests (test_console_browser.py)."""

from __future__ import annotations

from typing import Any

from agent_memory.config import Settings, load_settings
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.mongo.connection import Connection
from agent_memory.mongo.indexes import IndexManager
from agent_memory.tenancy import Tenant

SUPPORT_KEY = "support-key-0123456789abcdef"
OTHER_KEY = "other-agent-key-0123456789abcdef"
TOKEN = "local-token-0123456789"
HOSTILE = '<script>alert("x")</script><a href="https://evil.example">'
#: The other agent's memory: a support key must never see it.
OTHER_MEMORY = "Bob's secret"
KEYS = {"support": SUPPORT_KEY, "other": [OTHER_KEY]}


async def store_memories(connection: Connection, embedder: Any) -> None:
    """Agent ``support``: users ``alice`` and :data:`HOSTILE`; agent ``other``: ``bob``."""
    await IndexManager(connection, embedder.signature).setup()
    long_term = LongTermMemory(connection, embedder)
    await long_term.store(Tenant("support", "alice"), "Alice prefers window seats")
    await long_term.store(Tenant("support", HOSTILE), "A user with a hostile id")
    await long_term.store(Tenant("other", "bob"), OTHER_MEMORY)
    await long_term.aclose()


def console_settings(settings: Settings, **changes: Any) -> Settings:
    """The test's ``settings`` without API keys, with ``changes`` (``api_keys=KEYS``)."""
    return load_settings(
        **{**settings.model_dump(exclude={"api_keys"}), "mongodb_uri": settings.uri(), **changes}
    )

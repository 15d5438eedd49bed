"""The feedback API (``agent-memory api``); see :mod:`agent_memory.api.app`."""

from agent_memory.api.app import create_app

__all__ = ["create_app"]

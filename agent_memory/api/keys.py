"""The per-agent keys of the feedback API and the memory console (``AGENT_MEMORY_API_KEYS``).

A key belongs to one agent; a request with it sees that agent's data and nothing else.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from pydantic import SecretStr

__all__ = ["ApiKeys"]


class ApiKeys:
    """Configured keys by agent; :meth:`agent` finds a key's agent in constant time."""

    def __init__(self, keys: Mapping[str, list[SecretStr]]) -> None:
        self._keys = [
            (agent_id, key.get_secret_value().encode())
            for agent_id, values in keys.items()
            for key in values
        ]

    def __bool__(self) -> bool:
        return bool(self._keys)

    def agent(self, given: str | bytes | None) -> str | None:
        """The agent of ``given`` (the header's bytes, or text), or ``None``."""
        if not given:
            return None
        candidate = given if isinstance(given, bytes) else given.encode("utf-8", "surrogateescape")
        found = None
        for agent_id, key in self._keys:  # every key is compared, match or not
            if hmac.compare_digest(candidate, key):
                found = agent_id
        return found

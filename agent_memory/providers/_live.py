"""A process-wide switch that stops calls to real provider endpoints.

Tests switch live calls off (``tests/conftest.py``); providers then still run their real SDK
code against a loopback stub or mock transport, but any request for a non-loopback host fails
with :class:`~agent_memory.errors.LiveCallBlockedError` before anything leaves the machine.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from agent_memory.errors import LiveCallBlockedError

__all__ = ["allow_live_calls", "check_live_call", "live_calls_allowed", "set_live_calls"]

_ENV = "AGENT_MEMORY_BLOCK_LIVE_CALLS"
_allowed: bool = os.environ.get(_ENV, "").lower() not in ("1", "true", "yes")


def set_live_calls(allowed: bool) -> None:
    """Allow or block calls to non-loopback provider endpoints for this process."""
    global _allowed
    _allowed = allowed


def live_calls_allowed() -> bool:
    return _allowed


@contextmanager
def allow_live_calls(allowed: bool = True) -> Iterator[None]:
    """Temporarily allow (or block) live calls, restoring the previous setting afterwards."""
    previous = _allowed
    set_live_calls(allowed)
    try:
        yield
    finally:
        set_live_calls(previous)


def _is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_live_call(provider: str, base_url: str | None) -> None:
    """Raise unless a request to ``base_url`` may be made now.

    ``None`` means the provider's public endpoint, which is never loopback.
    """
    if _allowed:
        return
    host = urlsplit(base_url).hostname if base_url else None
    if host is not None and _is_loopback(host):
        return
    raise LiveCallBlockedError(
        f"live calls to {provider} are blocked in this process "
        f"(endpoint {base_url or 'default public API'}); use a fake provider or a loopback stub",
        provider=provider,
    )

"""Bounded retries with exponential backoff and jitter, shared by the network providers."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from agent_memory._log import get_logger
from agent_memory.errors import ProviderError, ProviderUnavailableError, RateLimitedError

__all__ = ["RetryPolicy", "call_with_retries", "parse_retry_after"]

logger = get_logger(__name__)

T = TypeVar("T")


def parse_retry_after(headers: Any) -> float | None:
    """Seconds a provider asked us to wait, from ``retry-after-ms`` or ``retry-after``
    (seconds or an HTTP date); ``None`` when it did not say. Header lookups are
    case-insensitive in both httpx and aiohttp; anything without ``get`` counts as no headers.
    """
    if not hasattr(headers, "get"):
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(float(value) * scale, 0.0)
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            if parsed is not None:
                return max(float(email.utils.mktime_tz(parsed)) - time.time(), 0.0)
    return None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a provider call is retried.

    Only :class:`RateLimitedError` and :class:`ProviderUnavailableError` are retried; every
    other error is final at once. A ``retry_after`` from the provider is honoured up to
    ``max_delay``.
    """

    attempts: int = 4
    initial_delay: float = 0.5
    max_delay: float = 20.0
    multiplier: float = 2.0
    jitter: float = 0.25

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_delay)
        base = min(self.initial_delay * (self.multiplier ** (attempt - 1)), self.max_delay)
        return base * (1 + random.uniform(-self.jitter, self.jitter))


async def call_with_retries(
    operation: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    provider: str,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run ``operation`` until it succeeds, a final error occurs, or attempts run out.

    ``operation`` must already map foreign exceptions to :class:`ProviderError` subclasses.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return await operation()
        except (RateLimitedError, ProviderUnavailableError) as exc:
            if attempt >= policy.attempts:
                raise
            retry_after = exc.retry_after if isinstance(exc, RateLimitedError) else None
            wait = policy.delay(attempt, retry_after)
            logger.warning(
                "provider_call_retried",
                provider=provider,
                attempt=attempt,
                wait_s=round(wait, 3),
                error=type(exc).__name__,
                status_code=exc.status_code,
            )
            await sleep(wait)
        except ProviderError:
            raise

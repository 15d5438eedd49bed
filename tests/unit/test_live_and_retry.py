"""The live-call switch and the shared retry policy."""

from __future__ import annotations

import time

import pytest

from agent_memory.errors import (
    BadResponseError,
    LiveCallBlockedError,
    ProviderUnavailableError,
    RateLimitedError,
)
from agent_memory.providers._live import allow_live_calls, check_live_call, live_calls_allowed
from agent_memory.providers._retry import RetryPolicy, call_with_retries


def test_tests_run_with_live_calls_blocked():
    assert live_calls_allowed() is False


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "http://localhost", "http://[::1]:9"])
def test_loopback_is_allowed_while_blocked(url):
    check_live_call("x", url)


@pytest.mark.parametrize("url", [None, "https://api.anthropic.com", "http://10.0.0.5"])
def test_everything_else_is_blocked(url):
    with pytest.raises(LiveCallBlockedError, match="blocked"):
        check_live_call("x", url)


def test_allow_live_calls_restores_the_previous_setting():
    with allow_live_calls():
        check_live_call("x", "https://api.voyageai.com")
    assert live_calls_allowed() is False


async def test_retries_transient_errors_then_succeeds_honouring_retry_after():
    calls, waits = [], []

    async def operation():
        calls.append(1)
        if len(calls) == 1:
            raise RateLimitedError("slow down", retry_after=7.0)
        if len(calls) == 2:
            raise ProviderUnavailableError("503", status_code=503)
        return "ok"

    async def sleep(seconds):
        waits.append(seconds)

    policy = RetryPolicy(attempts=4, initial_delay=0.5, jitter=0.0)
    assert await call_with_retries(operation, policy=policy, provider="p", sleep=sleep) == "ok"
    assert len(calls) == 3
    assert waits == [7.0, 1.0]


async def test_gives_up_after_the_attempts_allowed():
    calls = []

    async def operation():
        calls.append(1)
        raise ProviderUnavailableError("down")

    async def sleep(seconds):
        pass

    with pytest.raises(ProviderUnavailableError):
        await call_with_retries(
            operation, policy=RetryPolicy(attempts=3), provider="p", sleep=sleep
        )
    assert len(calls) == 3


async def test_final_errors_are_not_retried():
    calls = []

    async def operation():
        calls.append(1)
        raise BadResponseError("malformed")

    with pytest.raises(BadResponseError):
        await call_with_retries(operation, policy=RetryPolicy(attempts=5), provider="p")
    assert len(calls) == 1


def test_retry_after_is_capped():
    assert RetryPolicy(max_delay=5.0).delay(1, retry_after=600.0) == 5.0


def test_retry_after_headers_in_every_form():
    from email.utils import formatdate

    from agent_memory.providers._retry import parse_retry_after

    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    in_ten = parse_retry_after({"retry-after": formatdate(time.time() + 10, usegmt=True)})
    assert in_ten is not None and 8 <= in_ten <= 10
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None

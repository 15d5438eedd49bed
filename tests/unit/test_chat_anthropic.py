"""AnthropicChatModel against the real SDK code, with an httpx2 mock transport as the server."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from agent_memory.errors import (
    BadResponseError,
    InvalidInputError,
    LiveCallBlockedError,
    MissingCredentialsError,
    ProviderError,
    ProviderUnavailableError,
    RateLimitedError,
)
from agent_memory.providers._live import allow_live_calls
from agent_memory.providers._retry import RetryPolicy
from agent_memory.providers.chat import (
    ChatRequest,
    Message,
    ResponseComplete,
    SystemPart,
    TextBlock,
    TextDelta,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from agent_memory.providers.chat.anthropic import AnthropicChatModel, strict_output_schema

BASE_URL = "http://127.0.0.1:1"
API_KEY = "sk-ant-test-secret-123"
Reply = Callable[[], httpx2.Response]


# --- a scripted server ---------------------------------------------------------------------


class Server:
    """Answers requests from a script; the last reply repeats once the script is used up."""

    def __init__(self, replies: tuple[Reply, ...]) -> None:
        self.replies = list(replies)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return reply()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def message_json(
    content: list[dict[str, Any]],
    *,
    stop_reason: str = "end_turn",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 12, "output_tokens": 5},
    }


def ok(text: str = "Hello!", **kwargs: Any) -> Reply:
    return lambda: httpx2.Response(
        200, json=message_json([{"type": "text", "text": text}], **kwargs)
    )


def ok_blocks(content: list[dict[str, Any]], **kwargs: Any) -> Reply:
    return lambda: httpx2.Response(200, json=message_json(content, **kwargs))


def api_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return lambda: httpx2.Response(status, json=body, headers=headers)


def raw(status: int, content: bytes, content_type: str) -> Reply:
    return lambda: httpx2.Response(status, content=content, headers={"content-type": content_type})


def sse(*events: dict[str, Any]) -> Reply:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return raw(200, body.encode(), "text/event-stream")


def ask(text: str = "Hi there", **kwargs: Any) -> ChatRequest:
    return ChatRequest((Message.user(text),), **kwargs)


@pytest.fixture(autouse=True)
def _no_live_calls():
    # Everything here talks to loopback; a slip to a real endpoint must fail, not leak.
    with allow_live_calls(False):
        yield


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def make(sleeps: Sleeps):
    opened: list[tuple[AnthropicChatModel, httpx2.AsyncClient]] = []

    def factory(*replies: Reply, **kwargs: Any) -> tuple[AnthropicChatModel, Server]:
        server = Server(replies or (ok(),))
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(server))
        kwargs.setdefault("api_key", API_KEY)
        kwargs.setdefault("base_url", BASE_URL)
        kwargs.setdefault("retry", RetryPolicy(attempts=3, initial_delay=0.01, jitter=0))
        kwargs.setdefault("sleep", sleeps)
        model = AnthropicChatModel(http_client=http, **kwargs)
        opened.append((model, http))
        return model, server

    yield factory
    for model, http in opened:
        await model.aclose()
        await http.aclose()


# --- request translation -------------------------------------------------------------------


async def test_request_body_carries_system_cache_tools_and_tool_round_trip(make) -> None:
    model, server = make(ok("done"))
    request = ChatRequest(
        messages=(
            Message.user("What is the weather in Paris?"),
            Message(
                "assistant",
                (TextBlock("Let me check."), ToolCall("toolu_1", "weather", {"city": "Paris"})),
            ),
            Message("user", (ToolResult("toolu_1", "18C and sunny"),)),
            Message("user", (ToolResult("toolu_2", "service down", is_error=True),)),
        ),
        system=(
            SystemPart("You are a memory agent.", cache=True),
            SystemPart(""),
            SystemPart("Today is Monday."),
        ),
        tools=(
            ToolSpec(
                "weather",
                "Current weather for a city",
                {"type": "object", "properties": {"city": {"type": "string"}}},
            ),
        ),
        max_tokens=300,
    )

    await model.generate(request)

    (sent,) = server.requests
    assert sent.method == "POST" and sent.url.path == "/v1/messages"
    assert API_KEY in (sent.headers.get("authorization", "") + sent.headers.get("x-api-key", ""))
    body = server.bodies[0]
    assert body["model"] == "claude-sonnet-5-5"
    assert body["max_tokens"] == 300
    assert "temperature" not in body
    assert "stream" not in body
    assert body["system"] == [
        {"type": "text", "text": "You are a memory agent.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Today is Monday."},
    ]
    assert body["tools"] == [
        {
            "name": "weather",
            "description": "Current weather for a city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is the weather in Paris?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "weather",
                    "input": {"city": "Paris"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "18C and sunny",
                    "is_error": False,
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "service down",
                    "is_error": True,
                }
            ],
        },
    ]
    assert "output_config" not in body


async def test_max_tokens_cap_lowers_large_requests_only(make) -> None:
    model, server = make(ok(), model="claude-haiku-5-5", max_tokens_cap=200)
    await model.generate(ask(max_tokens=4000))
    await model.generate(ask(max_tokens=50))
    assert [b["max_tokens"] for b in server.bodies] == [200, 50]
    assert server.bodies[0]["model"] == "claude-haiku-5-5"


async def test_at_most_four_cache_breakpoints_the_last_ones(make) -> None:
    model, server = make()
    parts = tuple(SystemPart(f"part {i}", cache=True) for i in range(6))
    await model.generate(ask(system=parts))
    flags = ["cache_control" in block for block in server.bodies[0]["system"]]
    assert flags == [False, False, True, True, True, True]


# --- response mapping ----------------------------------------------------------------------


async def test_response_maps_text_tool_calls_stop_reason_and_usage(make) -> None:
    model, _ = make(
        ok_blocks(
            [
                {"type": "text", "text": "Checking the weather."},
                {"type": "tool_use", "id": "toolu_9", "name": "weather", "input": {"city": "Oslo"}},
            ],
            stop_reason="tool_use",
            usage={
                "input_tokens": 40,
                "output_tokens": 17,
                "cache_read_input_tokens": 1200,
                "cache_creation_input_tokens": 300,
            },
        )
    )
    response = await model.generate(ask())
    assert response.text == "Checking the weather."
    assert response.tool_calls == [ToolCall("toolu_9", "weather", {"city": "Oslo"})]
    assert response.stop_reason == "tool_use"
    assert response.model == "claude-sonnet-5-5"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (40, 17)
    assert (response.usage.cache_read_tokens, response.usage.cache_write_tokens) == (1200, 300)


async def test_missing_or_null_cache_usage_becomes_zero(make) -> None:
    usage = {
        "input_tokens": 3,
        "output_tokens": 4,
        "cache_read_input_tokens": None,
        "cache_creation_input_tokens": None,
    }
    model, _ = make(ok("x", usage=usage))
    response = await model.generate(ask())
    assert (response.usage.cache_read_tokens, response.usage.cache_write_tokens) == (0, 0)


async def test_block_types_outside_the_neutral_interface_are_dropped(make) -> None:
    model, _ = make(
        ok_blocks(
            [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "some_future_block", "payload": 1},
                {"type": "text", "text": "Answer."},
            ]
        )
    )
    response = await model.generate(ask())
    assert response.content == (TextBlock("Answer."),)


# --- structured output ---------------------------------------------------------------------


class Fact(BaseModel):
    subject: str
    detail: str | None = None


class Extraction(BaseModel):
    facts: list[Fact] = []
    topic: str


async def test_generate_structured_sends_strict_schema_and_parses_reply(make) -> None:
    reply = {"facts": [{"subject": "user", "detail": "lives in Lyon"}], "topic": "home"}
    model, server = make(ok(json.dumps(reply)))
    request = ask(tools=(ToolSpec("search", "find things"),))

    result = await model.generate_structured(request, Extraction)

    assert result == Extraction(facts=[Fact(subject="user", detail="lives in Lyon")], topic="home")
    body = server.bodies[0]
    assert "tools" not in body
    output_format = body["output_config"]["format"]
    assert output_format["type"] == "json_schema"
    schema = output_format["schema"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["topic"]
    assert schema["$defs"]["Fact"]["additionalProperties"] is False
    assert schema["properties"]["facts"]["items"] == {"$ref": "#/$defs/Fact"}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("this is not json", "not valid JSON"),
        ('{"facts": "many", "topic": 3}', "does not match Extraction"),
        ("", "empty"),
    ],
)
async def test_generate_structured_rejects_unusable_replies(make, text: str, fragment: str) -> None:
    model, _ = make(ok(text))
    with pytest.raises(BadResponseError, match=fragment):
        await model.generate_structured(ask(), Extraction)


def test_strict_output_schema_closes_nested_objects_and_rejects_free_form() -> None:
    schema = strict_output_schema(
        {
            "type": "object",
            "properties": {"inner": {"type": "object", "properties": {"a": {"type": "integer"}}}},
        }
    )
    assert schema["additionalProperties"] is False
    assert schema["properties"]["inner"]["additionalProperties"] is False
    with pytest.raises(InvalidInputError, match="structured output"):
        strict_output_schema({"type": "object", "properties": {"anything": {}}})


async def test_unusable_schema_fails_before_any_request(make) -> None:
    model, server = make()
    with pytest.raises(InvalidInputError):
        await model.generate(ask(output_schema={"type": "object", "properties": {"x": {}}}))
    assert server.requests == []


# --- errors and retries --------------------------------------------------------------------


async def test_rate_limit_waits_as_told_then_succeeds(make, sleeps: Sleeps) -> None:
    model, server = make(
        api_error(429, "rate_limit_error", "slow down", {"retry-after": "7"}), ok("finally")
    )
    response = await model.generate(ask())
    assert response.text == "finally"
    assert len(server.requests) == 2
    assert sleeps.waits == [7.0]


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({"retry-after": "2"}, 2.0), ({"retry-after-ms": "1500"}, 1.5), ({}, None)],
)
async def test_persistent_rate_limit_reports_retry_after(make, headers, expected) -> None:
    model, server = make(api_error(429, "rate_limit_error", "slow down", headers))
    with pytest.raises(RateLimitedError) as info:
        await model.generate(ask())
    assert info.value.retry_after == expected
    assert info.value.status_code == 429
    assert isinstance(info.value.__cause__, anthropic.RateLimitError)
    assert len(server.requests) == 3


async def test_spend_limit_is_final_not_retried(make) -> None:
    body = {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "spend limit reached",
            "details": {"error_code": "enforced_spend_limit_reached"},
        },
    }
    model, server = make(lambda: httpx2.Response(429, json=body))
    with pytest.raises(ProviderError, match="spend limit") as info:
        await model.generate(ask())
    assert not isinstance(info.value, RateLimitedError)
    assert len(server.requests) == 1


async def test_persistent_server_error_gives_up_after_exactly_attempts(make, sleeps) -> None:
    model, server = make(
        api_error(500, "api_error", "boom"), retry=RetryPolicy(attempts=4, initial_delay=0.01)
    )
    with pytest.raises(ProviderUnavailableError) as info:
        await model.generate(ask())
    assert info.value.status_code == 500
    assert len(server.requests) == 4
    assert len(sleeps.waits) == 3


async def test_overloaded_529_is_retried(make) -> None:
    model, server = make(api_error(529, "overloaded_error", "Overloaded"), ok("ok now"))
    assert (await model.generate(ask())).text == "ok now"
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    "failure", [httpx2.ConnectError("refused"), httpx2.ReadTimeout("too slow")]
)
async def test_connection_failures_are_unavailable(make, failure: Exception) -> None:
    def broken() -> httpx2.Response:
        raise failure

    model, server = make(broken)
    with pytest.raises(ProviderUnavailableError):
        await model.generate(ask())
    assert len(server.requests) == 3


async def test_bad_request_is_final_and_carries_the_api_message(make) -> None:
    model, server = make(api_error(400, "invalid_request_error", "messages: field required"))
    with pytest.raises(BadResponseError, match="messages: field required") as info:
        await model.generate(ask())
    assert info.value.status_code == 400
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_credentials_point_at_the_env_var(make, status: int) -> None:
    model, server = make(api_error(status, "authentication_error", "invalid x-api-key"))
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY") as info:
        await model.generate(ask())
    assert type(info.value) is ProviderError
    assert info.value.status_code == status
    assert API_KEY not in str(info.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        raw(200, b"{truncated", "application/json"),
        raw(200, b"<html>gateway page</html>", "text/html"),
        raw(200, b'{"hello": "world"}', "application/json"),
        ok_blocks([{"type": "tool_use", "id": "t", "name": "x", "input": "not an object"}]),
    ],
    ids=["invalid-json", "not-json", "not-a-message", "bad-tool-input"],
)
async def test_malformed_response_is_bad_response_without_retry(make, reply: Reply) -> None:
    model, server = make(reply)
    with pytest.raises(BadResponseError):
        await model.generate(ask())
    assert len(server.requests) == 1


# --- streaming -----------------------------------------------------------------------------


def stream_events(*deltas: str, stop_reason: str = "end_turn") -> list[dict[str, Any]]:
    start = message_json([], usage={"input_tokens": 25, "output_tokens": 1})
    start["stop_reason"] = None
    return [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": d}}
            for d in deltas
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 9, "cache_read_input_tokens": 800},
        },
        {"type": "message_stop"},
    ]


async def collect(model: AnthropicChatModel, request: ChatRequest) -> list[Any]:
    return [event async for event in model.stream(request)]


async def test_stream_yields_text_deltas_then_the_complete_response(make) -> None:
    model, server = make(sse(*stream_events("Hel", "lo, ", "world")))
    events = await collect(model, ask(system=(SystemPart("stable", cache=True),)))

    assert events[:-1] == [TextDelta("Hel"), TextDelta("lo, "), TextDelta("world")]
    final = events[-1]
    assert isinstance(final, ResponseComplete)
    assert final.response.text == "Hello, world"
    assert final.response.stop_reason == "end_turn"
    usage = final.response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (25, 9, 800)
    body = server.bodies[0]
    assert body["stream"] is True
    assert "temperature" not in body
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}


async def test_stream_assembles_tool_calls(make) -> None:
    events = stream_events("Looking.", stop_reason="tool_use")
    tool_events = [
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_5", "name": "recall", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"query": "ci'},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": 'ty"}'},
        },
        {"type": "content_block_stop", "index": 1},
    ]
    model, _ = make(sse(*events[:5], *tool_events, *events[5:]))
    final = (await collect(model, ask()))[-1]
    assert final.response.tool_calls == [ToolCall("toolu_5", "recall", {"query": "city"})]
    assert final.response.stop_reason == "tool_use"


async def test_stream_open_is_retried_on_rate_limit(make, sleeps: Sleeps) -> None:
    model, server = make(
        api_error(429, "rate_limit_error", "slow", {"retry-after": "3"}), sse(*stream_events("ok"))
    )
    events = await collect(model, ask())
    assert events[-1].response.text == "ok"
    assert sleeps.waits == [3.0]
    assert len(server.requests) == 2


async def test_error_event_mid_stream_is_mapped_and_not_retried(make) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    events = [*stream_events("partial")[:4], error]
    model, server = make(sse(*events))
    received: list[Any] = []
    with pytest.raises(ProviderUnavailableError, match="overloaded"):
        async for event in model.stream(ask()):
            received.append(event)
    assert received == [TextDelta("partial")]
    assert len(server.requests) == 1


async def test_stream_cut_before_message_stop_is_unavailable(make) -> None:
    model, _ = make(sse(*stream_events("half")[:-1]))
    with pytest.raises(ProviderUnavailableError, match="message_stop"):
        await collect(model, ask())


async def test_stream_with_invalid_event_data_is_bad_response(make) -> None:
    model, _ = make(raw(200, b"event: message_start\ndata: {nope\n\n", "text/event-stream"))
    with pytest.raises(BadResponseError):
        await collect(model, ask())


async def test_leaving_a_stream_early_closes_it(make) -> None:
    model, _ = make(sse(*stream_events("a ", "b ", "c")))
    stream = model.stream(ask())
    assert await anext(stream) == TextDelta("a ")
    await stream.aclose()


# --- guard, credentials, lifecycle, logging ------------------------------------------------


async def test_live_call_guard_blocks_the_public_endpoint(make, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    model, server = make(base_url=None)
    assert model.base_url.startswith("https://api.anthropic.com")
    with pytest.raises(LiveCallBlockedError):
        await model.generate(ask())
    with pytest.raises(LiveCallBlockedError):
        await collect(model, ask())
    assert server.requests == []


async def test_guard_lets_loopback_through_and_lifting_it_allows_any_host(make) -> None:
    model, server = make(base_url="http://localhost:8080")
    await model.generate(ask())
    remote, remote_server = make(base_url="https://api.anthropic.com")
    with allow_live_calls(True):
        await remote.generate(ask())  # still the mock transport: nothing leaves the process
    assert len(server.requests) == len(remote_server.requests) == 1


def test_missing_key_raises_missing_credentials(monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingCredentialsError, match="ANTHROPIC_API_KEY"):
        AnthropicChatModel()


async def test_key_falls_back_to_the_environment(make, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")
    model, server = make(api_key=None)
    await model.generate(ask())
    headers = server.requests[0].headers
    assert "sk-from-env" in headers.get("authorization", "") + headers.get("x-api-key", "")


async def test_aclose_closes_only_a_client_it_created(make, monkeypatch) -> None:
    model, _ = make()
    http = model._client._client
    await model.aclose()
    assert not http.is_closed

    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    async with AnthropicChatModel(base_url=BASE_URL) as owned:
        owned_http = owned._client._client
    assert owned_http.is_closed
    await owned.aclose()  # a second close is harmless


async def test_logs_one_event_without_content_or_key(make) -> None:
    model, _ = make(ok("the secret answer"))
    with capture_logs() as logs:
        await model.generate(ask("my private question"))
    (event,) = [entry for entry in logs if entry["event"] == "chat_completed"]
    assert event["provider"] == "anthropic"
    assert event["model"] == "claude-sonnet-5-5"
    assert (event["input_tokens"], event["output_tokens"]) == (12, 5)
    assert event["duration_ms"] >= 0
    dumped = repr(logs)
    for secret in (API_KEY, "private question", "secret answer"):
        assert secret not in dumped


def test_without_the_sdk_the_package_imports_and_the_model_explains() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["anthropic"] = None  # makes `import anthropic` fail
        import agent_memory.providers.chat as chat
        from agent_memory.errors import DependencyMissingError
        assert chat.OfflineChatModel and chat.FakeChatModel
        for attempt in (
            lambda: chat.AnthropicChatModel,
            lambda: __import__("agent_memory.providers.chat.anthropic"),
        ):
            try:
                attempt()
            except DependencyMissingError as exc:
                assert exc.package == "anthropic" and exc.extra == "anthropic", exc
            else:
                raise SystemExit("no DependencyMissingError")
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


async def test_a_request_can_name_its_model(make) -> None:
    model, server = make(ok(), ok())
    await model.generate(ChatRequest((Message.user("hi"),), model="claude-opus-5"))
    await model.generate(ask())
    assert [b["model"] for b in server.bodies] == ["claude-opus-5", "claude-sonnet-5-5"]

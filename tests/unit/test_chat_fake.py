"""FakeChatModel: scripted replies, recorded requests, simulated latency."""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic import BaseModel

from agent_memory.errors import BadResponseError, RateLimitedError
from agent_memory.providers.chat import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    FakeChatModel,
    Message,
    ResponseComplete,
    TextBlock,
    TextDelta,
    ToolCall,
    Usage,
)


def ask(text: str = "hello") -> ChatRequest:
    return ChatRequest((Message.user(text),))


async def test_replies_in_order_and_records_requests() -> None:
    chat = FakeChatModel(["one", "two"])
    assert isinstance(chat, ChatModel) and chat.provider == "fake" and not chat.offline
    first, second = ask("a"), ask("b")
    assert (await chat.generate(first)).text == "one"
    assert (await chat.generate(second)).text == "two"
    assert chat.requests == [first, second]
    assert chat.remaining == 0


async def test_text_replies_get_estimated_usage() -> None:
    response = await FakeChatModel(["four words right here"]).generate(ask("abcdefgh"))
    assert response.stop_reason == "end_turn"
    assert response.model == "fake-chat-v1"
    assert response.usage == Usage(input_tokens=2, output_tokens=6)


async def test_exhausted_script_is_a_clear_error() -> None:
    chat = FakeChatModel(["only"])
    await chat.generate(ask())
    with pytest.raises(RuntimeError, match="no scripted response left"):
        await chat.generate(ask())
    assert len(chat.requests) == 2


async def test_default_keeps_answering_after_the_script() -> None:
    chat = FakeChatModel(["first"], default="again")
    texts = [(await chat.generate(ask())).text for _ in range(3)]
    assert texts == ["first", "again", "again"]


async def test_exceptions_are_raised_when_reached() -> None:
    chat = FakeChatModel([RateLimitedError("slow down", retry_after=1), "recovered"])
    with pytest.raises(RateLimitedError):
        await chat.generate(ask())
    assert (await chat.generate(ask())).text == "recovered"


async def test_callables_sync_and_async_see_the_request() -> None:
    async def shout(request: ChatRequest) -> str:
        await asyncio.sleep(0)
        return request.messages[-1].text.upper()

    chat = FakeChatModel([lambda request: f"echo: {request.messages[-1].text}", shout])
    assert (await chat.generate(ask("hi"))).text == "echo: hi"
    assert (await chat.generate(ask("hey"))).text == "HEY"


async def test_chat_response_items_carry_tool_calls_unchanged() -> None:
    scripted = ChatResponse(
        content=(TextBlock("Let me look."), ToolCall("call_1", "recall", {"query": "city"})),
        stop_reason="tool_use",
        model="scripted",
        usage=Usage(input_tokens=5, output_tokens=3),
    )
    chat = FakeChatModel([scripted, lambda request: scripted])
    assert await chat.generate(ask()) is scripted
    assert (await chat.generate(ask())).tool_calls == [
        ToolCall("call_1", "recall", {"query": "city"})
    ]


async def test_a_callable_returning_the_wrong_type_is_rejected() -> None:
    chat = FakeChatModel([lambda request: 42])
    with pytest.raises(TypeError, match="str or ChatResponse"):
        await chat.generate(ask())


async def test_stream_splits_on_spaces_then_completes() -> None:
    chat = FakeChatModel(["The cat  sat down"])
    events = [event async for event in chat.stream(ask())]
    deltas = [event.text for event in events if isinstance(event, TextDelta)]
    assert deltas == ["The ", "cat ", " ", "sat ", "down"]
    assert "".join(deltas) == "The cat  sat down"
    assert isinstance(events[-1], ResponseComplete)
    assert events[-1].response.text == "The cat  sat down"
    assert len(chat.requests) == 1


async def test_stream_of_a_scripted_error_raises_before_any_text() -> None:
    chat = FakeChatModel([BadResponseError("broken")])
    with pytest.raises(BadResponseError):
        async for _ in chat.stream(ask()):
            pytest.fail("no event expected")


async def test_delay_and_first_token_delay() -> None:
    chat = FakeChatModel(["a b c d e"], default="x y", delay=0.12, first_token_delay=0.06)
    started = time.perf_counter()
    await chat.generate(ask())
    assert time.perf_counter() - started >= 0.11

    started = time.perf_counter()
    stamps: list[float] = []
    async for _event in chat.stream(ask()):
        stamps.append(time.perf_counter() - started)
    assert stamps[0] >= 0.055  # first token waits first_token_delay
    assert stamps[-1] >= 0.11  # the whole reply still takes delay
    assert stamps[0] < stamps[-1]


def test_negative_delays_are_refused() -> None:
    with pytest.raises(ValueError):
        FakeChatModel(delay=-1)


class Answer(BaseModel):
    value: int


async def test_generate_structured_uses_the_scripted_json() -> None:
    chat = FakeChatModel(['{"value": 7}', "not json"])
    assert await chat.generate_structured(ask(), Answer) == Answer(value=7)
    assert chat.requests[0].output_schema == Answer.model_json_schema()
    with pytest.raises(BadResponseError):
        await chat.generate_structured(ask(), Answer)


@pytest.mark.parametrize("model", ["", "   ", "x" * 201, 42])
def test_a_request_model_must_be_a_sensible_name(model) -> None:
    from agent_memory.errors import InvalidInputError
    from agent_memory.providers.chat.base import ChatRequest, Message

    with pytest.raises(InvalidInputError):
        ChatRequest((Message.user("hi"),), model=model)

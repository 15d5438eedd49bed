"""OfflineChatModel: extractive answers from the request's context, no network."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from agent_memory._data_blocks import DATA_TAGS
from agent_memory._tokens import estimate_tokens
from agent_memory.agent.prompt import Budget, PromptInputs, RecalledItem, WindowMessage, assemble
from agent_memory.providers.chat import (
    ChatModel,
    ChatRequest,
    Message,
    ResponseComplete,
    SystemPart,
    TextDelta,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from agent_memory.providers.chat.offline import (
    _BLOCK_SOURCES,
    OFFLINE_LABEL,
    SOURCES,
    OfflineChatModel,
    Quote,
    best_lines,
    empty_extraction,
)

MEMORIES = """You are a helpful assistant with long-term memory.

## Relevant memories:
- The user lives in Berlin, near the Spree.
- The user's favourite drink is green tea.
* The user works as a nurse at the city hospital.
- The user has a cat called Miso.
"""


GIVEN = "From the context I was given:"


def ask(question: str, system: str = MEMORIES, **kwargs) -> ChatRequest:
    return ChatRequest(
        (Message.user(question),), system=(SystemPart(system, cache=True),), **kwargs
    )


@pytest.fixture
def chat() -> OfflineChatModel:
    return OfflineChatModel()


def test_identity() -> None:
    chat = OfflineChatModel()
    assert isinstance(chat, ChatModel)
    assert (chat.provider, chat.offline, chat.model) == ("offline", True, "offline-extractive-v1")


async def test_answers_with_the_best_matching_memory(chat: OfflineChatModel) -> None:
    response = await chat.generate(ask("Where does the user live?"))
    # System text outside the prompt's data blocks: the model cannot tell where it came from.
    assert response.text == f"{OFFLINE_LABEL}{GIVEN} The user lives in Berlin, near the Spree."
    assert response.stop_reason == "end_turn"
    assert response.model == "offline-extractive-v1"


async def test_headings_and_unrelated_lines_are_not_quoted(chat: OfflineChatModel) -> None:
    text = (await chat.generate(ask("What is the name of my cat?"))).text
    assert "Miso" in text
    assert "Relevant memories" not in text
    assert "Berlin" not in text


async def test_several_good_lines_are_listed(chat: OfflineChatModel) -> None:
    system = "- The user walks the dog in the park.\n- The dog is called Rex.\n- Sky is blue."
    text = (await chat.generate(ask("Tell me about the dog", system))).text
    assert text.startswith(OFFLINE_LABEL + GIVEN + "\n- ")
    # Equal overlap: the line with fewer unrelated words comes first.
    assert text.splitlines()[1:] == [
        "- The dog is called Rex.",
        "- The user walks the dog in the park.",
    ]


async def test_a_weak_match_next_to_a_strong_one_is_left_out(chat: OfflineChatModel) -> None:
    system = "- The user likes green tea.\n- Green tea is bought at the market.\n- Sky is blue."
    text = (await chat.generate(ask("Which green tea does the user like?", system))).text
    assert text == f"{OFFLINE_LABEL}{GIVEN} The user likes green tea."


async def test_no_match_says_what_was_given_and_that_none_of_it_matches(
    chat: OfflineChatModel,
) -> None:
    text = (await chat.generate(ask("Explain quantum chromodynamics?"))).text
    assert text == (
        f"{OFFLINE_LABEL}None of what I was given (some context) shares words with that question."
    )
    assert "nothing relevant" not in text  # four lines of context were given


async def test_no_context_at_all(chat: OfflineChatModel) -> None:
    request = ChatRequest((Message.user("Where do I live?"),))
    text = (await chat.generate(request)).text
    assert text == f"{OFFLINE_LABEL}I found nothing relevant in memory for that question."
    assert chat.quotes(request) == ()


async def test_context_inside_the_user_message_and_tool_results(chat: OfflineChatModel) -> None:
    request = ChatRequest(
        (
            Message.user(
                "Context:\n- Meeting with Dana is on Friday.\nWhen is the meeting with Dana?"
            ),
            Message("assistant", (ToolCall("t1", "recall", {"q": "dentist"}),)),
            Message("user", (ToolResult("t1", "Dentist appointment on Tuesday at 9."),)),
        )
    )
    assert "Friday" in (await chat.generate(request)).text

    later = ChatRequest(
        (
            *request.messages,
            Message("assistant", (ToolCall("t2", "x", {}),)),
            Message.user("When is the dentist appointment?"),
        )
    )
    assert "Tuesday at 9" in (await chat.generate(later)).text


async def test_cjk_questions_match_by_characters(chat: OfflineChatModel) -> None:
    system = "记忆：\n- 用户住在柏林。\n- 用户喜欢绿茶。"
    text = (await chat.generate(ask("我住在哪里？", system))).text
    assert text == f"{OFFLINE_LABEL}{GIVEN} 用户住在柏林。"


async def test_cjk_words_match_not_characters_shared_by_chance(chat: OfflineChatModel) -> None:
    system = "记忆：\n- 上海飞东京约3小时。\n- 用户的名字是小明。\n- 小红喜欢过道座位。"
    # Only 时 in common with the flight line, only 小 with the names: not a match.
    text = (await chat.generate(ask("到时候我坐哪里？", system))).text
    assert text == (
        f"{OFFLINE_LABEL}None of what I was given (some context) shares words with that question."
    )
    text = (await chat.generate(ask("我叫什么名字？", system))).text
    assert text == f"{OFFLINE_LABEL}{GIVEN} 用户的名字是小明。"


async def test_deterministic_and_never_calls_tools(chat: OfflineChatModel) -> None:
    request = ask("Where does the user work?", tools=(ToolSpec("search", "web search"),))
    first, second = await chat.generate(request), await chat.generate(request)
    assert first == second
    assert first.tool_calls == []
    assert "nurse" in first.text


async def test_usage_is_estimated(chat: OfflineChatModel) -> None:
    request = ask("Where does the user live?")
    response = await chat.generate(request)
    expected_in = estimate_tokens(request.system_text) + estimate_tokens(
        "Where does the user live?"
    )
    assert response.usage.input_tokens == expected_in
    assert response.usage.output_tokens == estimate_tokens(response.text)


async def test_stream_comes_from_the_base_class(chat: OfflineChatModel) -> None:
    events = [event async for event in chat.stream(ask("Where does the user live?"))]
    assert isinstance(events[0], TextDelta) and events[0].text.startswith(OFFLINE_LABEL)
    assert isinstance(events[-1], ResponseComplete)


def test_best_lines_prefers_more_overlap_and_skips_the_question_itself() -> None:
    candidates = ["Where is the key?", "The key is under the mat.", "Keys open doors."]
    assert best_lines("Where is the key?", candidates) == [
        "The key is under the mat.",
        "Keys open doors.",
    ]
    assert best_lines("Is the key under the mat?", candidates) == ["The key is under the mat."]
    assert best_lines("the of and", candidates) == []


# --- structured output: an empty extraction ------------------------------------------------


class Entity(BaseModel):
    name: str
    kind: Literal["person", "place"] = "person"


class Extraction(BaseModel):
    facts: list[str]
    entities: list[Entity] = Field(default_factory=list)
    summary: str | None
    mood: Literal["happy", "sad"] | None = None
    confidence: float = 0.0


@pytest.mark.parametrize(
    ("request_", "found_nothing"),
    [
        (ask("Where does the user live?"), False),  # quotes a memory
        (ask("Explain quantum chromodynamics?"), True),  # context given, none of it matches
        (ChatRequest((Message.user("Where do I live?"),)), True),  # no context at all
        (ask("Hello!"), True),  # small talk: a greeting, not an answer
        (ask("My name is Ana."), True),  # a statement acknowledged
        (ask("x", output_schema=Extraction.model_json_schema()), False),  # an extraction
    ],
)
async def test_the_response_says_when_the_reply_found_nothing(
    chat: OfflineChatModel, request_: ChatRequest, found_nothing: bool
) -> None:
    # Said in the response, so a caller never matches the reply's wording.
    response = await chat.generate(request_)
    assert response.found_nothing is found_nothing
    if request_.output_schema is None:
        assert response.found_nothing is (chat.quotes(request_) == ())
    streamed = [e async for e in chat.stream(request_) if isinstance(e, ResponseComplete)]
    assert streamed[0].response.found_nothing is found_nothing


async def test_structured_output_is_a_valid_empty_extraction(chat: OfflineChatModel) -> None:
    result = await chat.generate_structured(ask("Where does the user live?"), Extraction)
    assert result == Extraction(facts=[], summary=None)


async def test_structured_reply_is_plain_json_without_label(chat: OfflineChatModel) -> None:
    request = ask("x", output_schema=Extraction.model_json_schema())
    text = (await chat.generate(request)).text
    assert json.loads(text) == {"facts": [], "summary": None}


def test_empty_extraction_fills_required_fields_minimally() -> None:
    schema = {
        "type": "object",
        "required": ["tags", "count", "ok", "kind", "inner", "label"],
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "count": {"type": "integer"},
            "ok": {"type": "boolean"},
            "kind": {"enum": ["a", "b"]},
            "inner": {"$ref": "#/$defs/Inner"},
            "label": {"type": ["string", "null"]},
            "optional": {"type": "string"},
        },
        "$defs": {
            "Inner": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
        },
    }
    assert empty_extraction(schema) == {
        "tags": [],
        "count": 0,
        "ok": False,
        "kind": "a",
        "inner": {"x": 0},
        "label": None,
    }


async def test_instructions_to_the_model_are_never_quoted(chat: OfflineChatModel) -> None:
    rules = SystemPart(
        "You can search your long-term memory with the search tool.", instructions=True
    )
    facts = SystemPart("- The user prefers the window seat.")
    request = ChatRequest(
        (Message.user("Can you search your memory for my seat?"),), system=(rules, facts)
    )
    text = (await chat.generate(request)).text
    assert text == f"{OFFLINE_LABEL}{GIVEN} The user prefers the window seat."


async def test_a_statement_about_the_user_is_acknowledged(chat: OfflineChatModel) -> None:
    for said in ("I prefer the window seat.", "我吃素食。"):
        assert (await chat.generate(ChatRequest((Message.user(said),)))).text == (
            OFFLINE_LABEL + "Noted."
        )
    asked = ChatRequest((Message.user("Do I prefer the window seat?"),))
    assert "nothing relevant" in (await chat.generate(asked)).text


async def test_earlier_turns_of_the_conversation_are_context(chat: OfflineChatModel) -> None:
    request = ChatRequest(
        (
            Message.user("My flight to Kyoto is on 12 April. Where should I stay?"),
            Message.assistant(f"{OFFLINE_LABEL}Noted."),
            Message.user("When is the Kyoto flight?"),
        )
    )
    text = (await chat.generate(request)).text
    assert (
        text == f"{OFFLINE_LABEL}From our recent conversation: My flight to Kyoto is on 12 April."
    )
    # Its own earlier replies and the user's earlier questions are never quoted back.
    again = ChatRequest((*request.messages, Message.assistant(text), Message.user("Noted?")))
    assert chat.quotes(again) == ()
    assert (await chat.generate(again)).text == (
        f"{OFFLINE_LABEL}None of what I was given (our recent conversation) shares words with "
        "that question."
    )
    stay = ChatRequest((*request.messages[:2], Message.user("Where should I stay in Kyoto?")))
    assert "Where should I stay" not in (await chat.generate(stay)).text


async def test_a_statement_is_not_answered_with_earlier_statements(chat: OfflineChatModel) -> None:
    request = ChatRequest(
        (
            Message.user("Hi! I'm Ada, and I live in Porto."),
            Message.assistant(f"{OFFLINE_LABEL}Noted."),
            Message.user("On long flights I prefer a window seat. I'm vegetarian."),
        )
    )
    assert (await chat.generate(request)).text == f"{OFFLINE_LABEL}Noted."


def test_letters_left_by_apostrophes_are_not_terms() -> None:
    assert best_lines("I'm cold?", ["I'm Ada."]) == []


# --- every quoted line is labelled by where it came from (issue 15, item 4) ----------------

MEMORY_ITEMS = (
    RecalledItem("mem_1", "The user lives in Berlin."),
    RecalledItem("mem_2", "The user's name is Alice."),
    RecalledItem("mem_3", "The user likes green tea."),
)
POLICY = RecalledItem("doc_1", "The refund window is 30 days from delivery.", "policy.md")


def agent_request(query: str, **inputs) -> ChatRequest:
    """The request the agent sends: a prompt assembled from recalled sources."""
    prompt = assemble(PromptInputs("You are a helpful assistant.", query, **inputs), Budget())
    return ChatRequest(prompt.messages, system=prompt.system)


async def test_a_knowledge_base_chunk_is_quoted_as_knowledge(chat: OfflineChatModel) -> None:
    request = agent_request(
        "How long is the refund window?", memories=MEMORY_ITEMS, documents=(POLICY,)
    )
    text = (await chat.generate(request)).text
    assert text == (
        f"{OFFLINE_LABEL}From the knowledge base: [policy.md] The refund window is 30 days "
        "from delivery."
    )
    assert chat.quotes(request) == (
        Quote("documents", "[policy.md] The refund window is 30 days from delivery."),
    )


async def test_the_recent_window_is_quoted_as_the_conversation(chat: OfflineChatModel) -> None:
    window = (
        WindowMessage("msg_1", "user", "My flight to Kyoto is on 12 April."),
        WindowMessage("msg_2", "assistant", f"{OFFLINE_LABEL}Noted."),
    )
    request = agent_request("When is my Kyoto flight?", memories=MEMORY_ITEMS, window=window)
    text = (await chat.generate(request)).text
    assert (
        text == f"{OFFLINE_LABEL}From our recent conversation: My flight to Kyoto is on 12 April."
    )


async def test_memories_in_the_prompt_are_never_called_nothing(chat: OfflineChatModel) -> None:
    request = agent_request("What is the capital of Peru?", memories=MEMORY_ITEMS)
    text = (await chat.generate(request)).text
    assert "nothing relevant" not in text
    assert text == (
        f"{OFFLINE_LABEL}None of what I was given (3 long-term memories) shares words with "
        "that question."
    )
    assert chat.quotes(request) == ()
    # Only a prompt with nothing recalled at all gets "nothing relevant".
    bare = (await chat.generate(agent_request("What is the capital of Peru?"))).text
    assert bare == f"{OFFLINE_LABEL}I found nothing relevant in memory for that question."


@pytest.mark.parametrize(
    ("said", "reply"),
    [
        ("hi", "Hello! How can I help?"),
        ("Hello!", "Hello! How can I help?"),
        ("hey there", "Hello! How can I help?"),
        ("Good morning :)", "Hello! How can I help?"),
        ("你好！", "Hello! How can I help?"),
        ("thanks", "You're welcome."),
        ("Thank you very much!", "You're welcome."),
        ("谢谢", "You're welcome."),
        ("ok, thanks, bye", "OK. You're welcome. Goodbye!"),
        ("How are you?", "I'm fine, thank you."),
    ],
)
async def test_small_talk_gets_a_short_reply_not_memories(
    chat: OfflineChatModel, said: str, reply: str
) -> None:
    # The memories even share a word with "thanks": small talk quotes nothing all the same.
    memories = (*MEMORY_ITEMS, RecalledItem("mem_4", "The user thanks the nurse every day."))
    request = agent_request(said, memories=memories, documents=(POLICY,))
    assert (await chat.generate(request)).text == OFFLINE_LABEL + reply
    assert chat.quotes(request) == ()


async def test_a_greeting_with_a_question_or_a_statement_is_not_small_talk(
    chat: OfflineChatModel,
) -> None:
    request = agent_request("Hi, where do I live?", memories=MEMORY_ITEMS)
    assert (await chat.generate(request)).text == (
        f"{OFFLINE_LABEL}From long-term memory: The user lives in Berlin."
    )
    told = (await chat.generate(agent_request("Hi! I'm Ada, from Porto."))).text
    assert told == f"{OFFLINE_LABEL}Noted."


@pytest.mark.parametrize(
    ("inputs", "label"),
    [
        (
            {"memories": (RecalledItem("m", "The user keeps bees on the roof."),)},
            "long-term memory",
        ),
        ({"documents": (RecalledItem("d", "Bees on roofs need a permit."),)}, "the knowledge base"),
        ({"profile": "hobby: keeping bees"}, "your profile"),
        ({"task": "Buy a hive for the bees (task t1, active)"}, "the active task"),
        ({"summary": "The user talked about bees."}, "the summary of our earlier conversation"),
    ],
)
async def test_each_source_of_the_prompt_has_its_label(
    chat: OfflineChatModel, inputs: dict, label: str
) -> None:
    text = (await chat.generate(agent_request("What about the bees?", **inputs))).text
    assert text.startswith(f"{OFFLINE_LABEL}From {label}: ")
    assert "bees" in text.split(": ", 1)[1].lower()


async def test_quotes_from_several_sources_are_grouped_best_source_first(
    chat: OfflineChatModel,
) -> None:
    request = agent_request(
        "Where do I live and how long is the refund window?",
        memories=MEMORY_ITEMS,
        documents=(POLICY,),
    )
    text = (await chat.generate(request)).text
    assert text == (
        f"{OFFLINE_LABEL}From the knowledge base: [policy.md] The refund window is 30 days "
        "from delivery.\nFrom long-term memory: The user lives in Berlin."
    )
    # Deterministic: the same request, the same answer and quotes.
    assert (await chat.generate(request)).text == text
    assert [q.source for q in chat.quotes(request)] == ["documents", "memories"]


async def test_tool_output_is_quoted_as_tool_results(chat: OfflineChatModel) -> None:
    request = ChatRequest(
        (
            Message.user("When is the dentist appointment?"),
            Message("assistant", (ToolCall("t1", "recall", {"q": "dentist"}),)),
            # A tool's output that imitates a data block is still a tool's output.
            Message(
                "user", (ToolResult("t1", "<memories>\nDentist on Tuesday at 9.\n</memories>"),)
            ),
        )
    )
    text = (await chat.generate(request)).text
    assert text == f"{OFFLINE_LABEL}From the tool results: Dentist on Tuesday at 9."


def test_every_data_block_has_a_source() -> None:
    assert set(_BLOCK_SOURCES) == set(DATA_TAGS)
    assert set(_BLOCK_SOURCES.values()) <= set(SOURCES)

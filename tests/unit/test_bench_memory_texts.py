"""What the retrieval and fusion benchmarks store for a turn: the words in the content, the
session's date and the neighbouring turns in the context."""

from __future__ import annotations

from agent_memory.bench.embedders import Conversation, Turn
from agent_memory.bench.retrieval import memory_text, neighbour_context


def _conversation() -> Conversation:
    turns = [
        Turn("D1:1", "Ann", "I moved to Lisbon.", "1:56 pm on 8 May, 2023"),
        Turn("D1:2", "Ben", "How is the weather there?", "1:56 pm on 8 May, 2023"),
        Turn("D2:1", "Ann", "I adopted a cat.", "9:00 am on 2 June, 2023"),
        Turn("D3:1", "Ben", "Nice!", ""),
    ]
    return Conversation("conv", turns, [])


def test_the_content_is_what_was_said_by_whom_without_the_date():
    conversation = _conversation()
    assert [memory_text(conversation, i) for i in range(4)] == [
        "Ann: I moved to Lisbon.",
        "Ben: How is the weather there?",
        "Ann: I adopted a cat.",
        "Ben: Nice!",
    ]


def test_the_context_carries_the_date_and_the_turns_of_the_same_session():
    conversation = _conversation()
    assert neighbour_context(conversation, 0) == (
        "[1:56 pm on 8 May, 2023]\nBen: How is the weather there?"
    )
    assert neighbour_context(conversation, 1) == "[1:56 pm on 8 May, 2023]\nAnn: I moved to Lisbon."
    # Alone in its session: the date is all the context there is.
    assert neighbour_context(conversation, 2) == "[9:00 am on 2 June, 2023]"
    # No date and no neighbour of the same session: no context at all.
    assert neighbour_context(conversation, 3) is None


def test_a_long_neighbour_is_cut():
    turns = [Turn("a", "Ann", "x" * 2000, "d"), Turn("b", "Ben", "short", "d")]
    context = neighbour_context(Conversation("c", turns, []), 1, chars=50)
    assert context is not None
    assert context.splitlines() == ["[d]", "Ann: " + "x" * 45]

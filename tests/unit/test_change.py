"""Which texts announce a change in the speaker's life, in the six languages read."""

from __future__ import annotations

import pytest

from agent_memory.memory.long_term.change import tells_change


@pytest.mark.parametrize(
    "text",
    [
        "I've moved to Lisbon and love it.",
        "I switched to a vegetarian diet last month.",
        "We sold the Subaru and picked up a Kia Niro.",
        "I no longer work at the bank.",
        "I put the drums away and started the ukulele instead.",
        "First month as a pharmacist done!",
        "I'm not drinking coffee anymore.",
        "我现在在银行上班。",
        "我不练瑜伽了，改练网球。",
        "终于把大众高尔夫卖了，入手了一辆起亚。",
        "先月大阪に引っ越しました。",
        "今は看護師として働いています。",
        "Ahora vivo en Valencia.",
        "Ya no como carne.",
        "Me mudé a Sevilla en marzo.",
        "Ich bin nach Hamburg umgezogen.",
        "Ich rauche nicht mehr.",
        "Mittlerweile arbeite ich als Lehrerin.",
        "J'ai déménagé à Lyon.",
        "Je ne fume plus depuis janvier.",
        "Désormais je travaille de chez moi.",
    ],
)
def test_a_change_is_announced(text):
    assert tells_change(text)


@pytest.mark.parametrize(
    "text",
    [
        "I drive a BYD Atto 3 and it needs tyres.",
        "My sister lives in Hamburg.",
        "Can you quiz me on Korean numbers?",
        "我每天下午喝一杯燕麦拿铁。",
        "大阪に住んでいます。",
        "Vivo en Valencia con mi hermana.",
        "Ich arbeite als Lehrerin.",
        "Je travaille à Lyon.",
        "",
        "   ",
    ],
)
def test_a_plain_statement_announces_nothing(text):
    assert not tells_change(text)


def test_words_inside_other_words_do_not_count():
    # "now" in "know", "new" in "renewal", "left" in "leftover", "sold" in "soldier".
    assert not tells_change("I know the renewal date; the leftovers went to a soldier.")


@pytest.mark.parametrize("value", [None, 3, b"moved", ["moved"]])
def test_what_is_not_text_announces_nothing(value):
    assert not tells_change(value)

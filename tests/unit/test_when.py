"""Spans of time named in a text, resolved on the calendar of its own now
(``agent_memory/memory/long_term/when.py``)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.memory.long_term.when import asks_when, spans_in

#: A Wednesday afternoon in UTC.
NOW = datetime(2026, 5, 13, 15, 30, tzinfo=UTC)


def days(text: str, now: datetime = NOW) -> list[tuple[date, date]]:
    """Each span's first day and the day after its last, on ``now``'s calendar."""
    zone = now.tzinfo
    return [
        (span.start.astimezone(zone).date(), span.end.astimezone(zone).date())
        for span in spans_in(text, now)
    ]


def d(text: str) -> date:
    return date.fromisoformat(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # days
        ("what did I say yesterday?", ("2026-05-12", "2026-05-13")),
        ("what did I tell you today", ("2026-05-13", "2026-05-14")),
        ("the day before yesterday", ("2026-05-11", "2026-05-12")),
        ("three days ago I told you", ("2026-05-10", "2026-05-11")),
        ("what did I do last Friday", ("2026-05-08", "2026-05-09")),
        ("we celebrated last night", ("2026-05-12", "2026-05-13")),
        ("last fri I took my kids", ("2026-05-08", "2026-05-09")),
        ("last thurs.", ("2026-05-07", "2026-05-08")),
        ("started a class few days ago", ("2026-05-10", "2026-05-11")),
        ("a couple days ago", ("2026-05-11", "2026-05-12")),
        ("last Wednesday", ("2026-05-06", "2026-05-07")),  # today is one: a week back
        ("what happened on Monday", ("2026-05-11", "2026-05-12")),
        ("on 3 May 2023", ("2023-05-03", "2023-05-04")),
        ("on May 3, 2023", ("2023-05-03", "2023-05-04")),
        ("on the 3rd of May", ("2026-05-03", "2026-05-04")),
        ("on 24 June, 2023", ("2023-06-24", "2023-06-25")),
        ("on 20 May", ("2025-05-20", "2025-05-21")),  # not yet this year: last year's
        ("2024-02-29", ("2024-02-29", "2024-03-01")),
        # weeks
        ("what did I say last week?", ("2026-05-04", "2026-05-11")),
        ("this week", ("2026-05-11", "2026-05-18")),
        ("two weeks ago", ("2026-04-27", "2026-05-04")),
        ("the week before last", ("2026-04-27", "2026-05-04")),
        ("last weekend", ("2026-05-09", "2026-05-11")),
        # months
        ("last month", ("2026-04-01", "2026-05-01")),
        ("this month", ("2026-05-01", "2026-06-01")),
        ("a month ago", ("2026-04-01", "2026-05-01")),
        ("where was I in March?", ("2026-03-01", "2026-04-01")),
        ("in December", ("2025-12-01", "2026-01-01")),  # the latest December
        ("last August I told you", ("2025-08-01", "2025-09-01")),
        ("last May", ("2025-05-01", "2025-06-01")),  # this month is May: last year's
        ("last April", ("2026-04-01", "2026-05-01")),
        ("in May", ("2026-05-01", "2026-06-01")),
        ("in March 2023", ("2023-03-01", "2023-04-01")),
        ("October 2022", ("2022-10-01", "2022-11-01")),
        ("on 31 February 2023", ("2023-02-01", "2023-03-01")),  # no such day: the month
        ("en marzo de 2023", ("2023-03-01", "2023-04-01")),
        # seasons (northern)
        ("what did I tell you last spring?", ("2025-03-01", "2025-06-01")),
        ("last winter", ("2025-12-01", "2026-03-01")),
        ("last summer", ("2025-06-01", "2025-09-01")),
        ("this spring", ("2026-03-01", "2026-06-01")),
        # years
        ("last year", ("2025-01-01", "2026-01-01")),
        ("this year", ("2026-01-01", "2027-01-01")),
        ("the year before last", ("2024-01-01", "2025-01-01")),
        ("4 years ago", ("2022-01-01", "2023-01-01")),
        ("in 2023", ("2023-01-01", "2024-01-01")),
        # Chinese
        ("我上个月说了什么？", ("2026-04-01", "2026-05-01")),
        ("上周", ("2026-05-04", "2026-05-11")),
        ("昨天", ("2026-05-12", "2026-05-13")),
        ("前天", ("2026-05-11", "2026-05-12")),
        ("去年我住在哪里", ("2025-01-01", "2026-01-01")),
        ("三天前", ("2026-05-10", "2026-05-11")),
        ("两个月前", ("2026-03-01", "2026-04-01")),
        ("三月", ("2026-03-01", "2026-04-01")),
        ("2023年5月", ("2023-05-01", "2023-06-01")),
        ("2023年5月3日", ("2023-05-03", "2023-05-04")),
        ("2023年", ("2023-01-01", "2024-01-01")),
        ("去年夏天", ("2025-06-01", "2025-09-01")),
        # Japanese
        ("先月", ("2026-04-01", "2026-05-01")),
        ("先週", ("2026-05-04", "2026-05-11")),
        ("昨日", ("2026-05-12", "2026-05-13")),
        ("一昨日", ("2026-05-11", "2026-05-12")),
        ("3日前", ("2026-05-10", "2026-05-11")),
        ("2ヶ月前", ("2026-03-01", "2026-04-01")),
        ("去年", ("2025-01-01", "2026-01-01")),
        # Spanish
        ("¿qué te dije el año pasado?", ("2025-01-01", "2026-01-01")),
        ("la semana pasada", ("2026-05-04", "2026-05-11")),
        ("el mes pasado", ("2026-04-01", "2026-05-01")),
        ("ayer", ("2026-05-12", "2026-05-13")),
        ("hace dos semanas", ("2026-04-27", "2026-05-04")),
        ("en marzo", ("2026-03-01", "2026-04-01")),
        ("el 3 de mayo de 2023", ("2023-05-03", "2023-05-04")),
        ("el viernes pasado", ("2026-05-08", "2026-05-09")),
        # German
        ("was habe ich letztes Jahr gesagt", ("2025-01-01", "2026-01-01")),
        ("letzte Woche", ("2026-05-04", "2026-05-11")),
        ("letzten Monat", ("2026-04-01", "2026-05-01")),
        ("gestern", ("2026-05-12", "2026-05-13")),
        ("vor zwei Wochen", ("2026-04-27", "2026-05-04")),
        ("vor 3 Tagen", ("2026-05-10", "2026-05-11")),
        ("im März", ("2026-03-01", "2026-04-01")),
        ("letzten Sommer", ("2025-06-01", "2025-09-01")),
        # French
        ("l'année dernière", ("2025-01-01", "2026-01-01")),
        ("la semaine dernière", ("2026-05-04", "2026-05-11")),
        ("le mois dernier", ("2026-04-01", "2026-05-01")),
        ("il y a trois jours", ("2026-05-10", "2026-05-11")),
        ("en mars", ("2026-03-01", "2026-04-01")),
    ],
)
def test_each_expression_names_its_span(text: str, expected: tuple[str, str]) -> None:
    assert days(text) == [(d(expected[0]), d(expected[1]))]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "where do I live?",
        "may I ask what my favourite tea is",  # "may" the verb
        "we will march on",
        "I said it before I moved",  # anchored on another event: not resolved
        "what did I say recently",  # vague
        "what is on next week",  # the future
        "Ich wohne hier",  # German "here", not French "yesterday"
        "remind me in 2150",  # not a year a memory was said in
        "my PIN is 2023",  # a bare number is no year
        "我们一个月见一次",  # "once a month", no span
    ],
)
def test_texts_without_a_span_name_none(text: str) -> None:
    assert spans_in(text, NOW) == []


def test_the_longest_expression_wins_and_several_are_kept_in_order() -> None:
    assert days("on 3 May 2023") == [(d("2023-05-03"), d("2023-05-04"))]  # not May 2023 too
    assert days("yesterday, and also last month") == [
        (d("2026-05-12"), d("2026-05-13")),
        (d("2026-04-01"), d("2026-05-01")),
    ]


def test_days_begin_where_the_question_is_asked() -> None:
    """The question's own now decides the calendar: at 01:00 in Tokyo it is already the
    next day there, and "yesterday" begins at that zone's midnight."""
    tokyo = timezone(timedelta(hours=9))
    asked = datetime(2026, 5, 13, 16, 0, tzinfo=UTC).astimezone(tokyo)  # 01:00 on the 14th
    (span,) = spans_in("yesterday", asked)
    assert span.start == datetime(2026, 5, 13, 0, 0, tzinfo=tokyo)
    assert span.end == datetime(2026, 5, 14, 0, 0, tzinfo=tokyo)
    assert span.start.tzinfo is UTC and span.words == "yesterday"


def test_now_must_know_its_zone() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        spans_in("yesterday", datetime(2026, 5, 13))


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(max_size=200),
    now=st.datetimes(
        min_value=datetime(1950, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC)
    ),
)
def test_any_text_gives_spans_that_are_spans_and_not_in_the_future(text, now) -> None:  # type: ignore[no-untyped-def]
    for span in spans_in(text, now):
        assert span.start < span.end
        assert span.start <= now
        assert span.words and span.words in text


@settings(max_examples=100, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(
            [
                "last",
                "week",
                "in",
                "March",
                "2023",
                "上个月",
                "去年",
                "hace",
                "dos",
                "días",
                "vor",
                "Jahren",
                "ago",
                "3",
                "years",
                "el",
                "pasado",
                "年",
                "月",
                "日",
                "前",
            ]
        ),
        max_size=12,
    ),
    now=st.datetimes(
        min_value=datetime(1950, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC)
    ),
)
def test_word_salad_of_time_words_resolves_or_names_nothing(words, now) -> None:  # type: ignore[no-untyped-def]
    for span in spans_in(" ".join(words), now):
        assert span.start < span.end <= now + timedelta(days=400)
        assert span.start <= now


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("When did Caroline go to the support group?", True),
        ("So when was that?", True),
        ("and when did I move?", True),
        ("What year did John start his job?", True),
        ("Which day did we meet?", True),
        ("How long ago was her birthday?", True),
        ("¿Cuándo me mudé a Madrid?", True),
        ("Wann bin ich umgezogen?", True),
        ("Quand est-ce que j'ai déménagé ?", True),
        ("我什么时候搬家的？", True),
        ("いつ引っ越しましたか", True),
        ("What did I eat when I was in Paris?", False),  # a conjunction
        ("Where do I live?", False),
        ("What time is it?", False),
        ("", False),
    ],
)
def test_questions_that_ask_when(question: str, asks: bool) -> None:
    assert asks_when(question) is asks


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("anoche fuimos al cine", ("2026-05-12", "2026-05-13")),
        ("hier soir", ("2026-05-12", "2026-05-13")),
        ("昨晚我们去吃饭", ("2026-05-12", "2026-05-13")),
        ("ゆうべ映画を見た", ("2026-05-12", "2026-05-13")),
        ("agosto pasado", ("2025-08-01", "2025-09-01")),
        ("en août dernier", ("2025-08-01", "2025-09-01")),
        ("letzten August", ("2025-08-01", "2025-09-01")),
    ],
)
def test_last_night_and_last_month_by_name_in_other_languages(text, expected):
    assert days(text) == [(d(expected[0]), d(expected[1]))]


@pytest.mark.parametrize("text", ["the last sat down", "the last sun of the year", "I sat there"])
def test_short_weekday_names_count_only_after_last(text):
    assert days(text) == []

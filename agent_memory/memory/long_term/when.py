"""The spans of time a text names, resolved against its own "now".

"What did I tell you last spring?", "where was I in March?", "上个月", "el año pasado",
"vor zwei Wochen": a question with a time in it asks about what was said (or happened) then.
:func:`spans_in` finds such expressions in English, Chinese, Japanese, Spanish, German and
French and resolves each to a half-open span ``[start, end)`` in UTC, on the calendar of the
``now`` it is given (its time zone decides where a day begins):

- a day: yesterday, today, the day before yesterday, ``N`` days ago, last Friday, on 3 May
  2023, 2023-05-03;
- a week (Monday to Monday): this week, last week, ``N`` weeks ago; last weekend;
- a month: this month, last month, ``N`` months ago, in March (the latest March not after
  now), March 2023;
- a season (northern hemisphere's): last summer, this winter;
- a year: this year, last year, the year before last, ``N`` years ago, in 2023.

What it leaves alone is said here rather than guessed: spans anchored on another event
("before I moved"), vague ones ("recently", "a while ago"), the future ("next week": memory
is about what was said), and a bare month name in English without a preposition, a day or a
year ("may", "march" are verbs too). Each match is found by a pattern of its own language;
a text in several languages is read in all of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

__all__ = ["Span", "asks_when", "spans_in", "tells_time"]


@dataclass(frozen=True, slots=True)
class Span:
    """A span of time a text names: from ``start`` (included) to ``end`` (not), in UTC;
    ``words`` are the words that named it."""

    start: datetime
    end: datetime
    words: str


# --- the calendar ---------------------------------------------------------------------------


def _day(today: date, offset: int) -> tuple[date, date]:
    first = today + timedelta(days=offset)
    return first, first + timedelta(days=1)


def _week(today: date, offset: int) -> tuple[date, date]:
    monday = today - timedelta(days=today.weekday()) + timedelta(weeks=offset)
    return monday, monday + timedelta(weeks=1)


def _month_start(year: int, month: int) -> date:
    year += (month - 1) // 12
    return date(year, (month - 1) % 12 + 1, 1)


def _month(today: date, offset: int) -> tuple[date, date]:
    first = _month_start(today.year, today.month + offset)
    return first, _month_start(first.year, first.month + 1)


def _year(today: date, offset: int) -> tuple[date, date]:
    return date(today.year + offset, 1, 1), date(today.year + offset + 1, 1, 1)


_UNITS: dict[str, Callable[[date, int], tuple[date, date]]] = {
    "day": _day,
    "week": _week,
    "month": _month,
    "year": _year,
}


def _named_month(today: date, month: int, year: int | None) -> tuple[date, date] | None:
    """The month ``month`` of ``year``, or without a year the latest one not after today."""
    if year is None:
        year = today.year if month <= today.month else today.year - 1
    if not 1 <= month <= 12 or not 1 <= year <= 9998:
        return None
    return _month_start(year, month), _month_start(year, month + 1)


def _month_before(match: re.Match[str], today: date) -> tuple[date, date]:
    """The latest month of ``match`` that began before this one ("last August")."""
    month = _MONTH_NUMBER[match["month"].lower()]
    year = today.year if month < today.month else today.year - 1
    return _month(date(year, month, 1), 0)


def _named_day(year: int, month: int, day: int) -> tuple[date, date] | None:
    try:
        first = date(year, month, day)
    except ValueError:
        return None
    return first, first + timedelta(days=1)


def _last_weekday(today: date, weekday: int, *, strictly: bool) -> tuple[date, date]:
    """The latest ``weekday`` (Monday 0) before today, or not after it."""
    back = (today.weekday() - weekday) % 7
    if back == 0 and strictly:
        back = 7
    return _day(today, -back)


def _last_weekend(today: date) -> tuple[date, date]:
    """The latest weekend that is over (on a Saturday or Sunday, the one before)."""
    saturday = today - timedelta(days=(today.weekday() - 5) % 7)
    if today.weekday() >= 5:
        saturday -= timedelta(weeks=1)
    return saturday, saturday + timedelta(days=2)


#: Months of each northern season (winter begins in December of the year before).
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "winter": 12}


def _season(today: date, season: str, offset: int) -> tuple[date, date]:
    """The season that holds today (offset 0) or the one ``-offset`` years before it (the
    latest whole one for "last": -1)."""
    first = _SEASONS[season]
    start = _month_start(today.year, first)
    if start > today:  # not begun yet this year: this year's is the one a year back
        start = _month_start(today.year - 1, first)
    if offset == -1 and _month_start(start.year, start.month + 3) > today:
        start = _month_start(start.year - 1, first)  # still running: the one before
    elif offset < -1:
        start = _month_start(start.year + offset + 1, first)
    return start, _month_start(start.year, start.month + 3)


# --- words ----------------------------------------------------------------------------------

_NUMBERS = {
    # English
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3,
    # Spanish
    "un": 1, "una": 1, "uno": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6,
    "siete": 7, "ocho": 8, "nueve": 9, "diez": 10, "once": 11, "doce": 12,
    # German
    "ein": 1, "eine": 1, "einem": 1, "einer": 1, "zwei": 2, "drei": 3, "vier": 4,
    "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "elf": 11,
    "zwölf": 12,
    # French
    "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "sept": 7, "huit": 8,
    "neuf": 9, "dix": 10, "onze": 11, "douze": 12,
    # Chinese and Japanese numerals
    "一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
    "九": 9, "十": 10, "十一": 11, "十二": 12,
}  # fmt: skip
#: A count in digits or words (the alternatives of a pattern's group ``n``).
_COUNT = r"\d{1,3}|" + "|".join(re.escape(word) for word in sorted(_NUMBERS, key=len, reverse=True))

_MONTHS = {
    "en": "january february march april may june july august september october november december",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre "
    "diciembre",
    "de": "januar februar märz april mai juni juli august september oktober november dezember",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
}
_MONTH_NUMBER = {
    name: number for names in _MONTHS.values() for number, name in enumerate(names.split(), start=1)
}
_MONTH_NUMBER.update({"sept": 9, "sep": 9, "jan": 1, "feb": 2, "aug": 8, "oct": 10, "dec": 12})
_MONTH_NAMES = "|".join(sorted(_MONTH_NUMBER, key=len, reverse=True))

_WEEKDAYS = {
    **dict.fromkeys(("monday", "lunes", "montag", "lundi"), 0),
    **dict.fromkeys(("tuesday", "martes", "dienstag", "mardi"), 1),
    **dict.fromkeys(("wednesday", "miércoles", "miercoles", "mittwoch", "mercredi"), 2),
    **dict.fromkeys(("thursday", "jueves", "donnerstag", "jeudi"), 3),
    **dict.fromkeys(("friday", "viernes", "freitag", "vendredi"), 4),
    **dict.fromkeys(("saturday", "sábado", "sabado", "samstag", "samedi"), 5),
    **dict.fromkeys(("sunday", "domingo", "sonntag", "dimanche"), 6),
}
_WEEKDAY_NAMES = "|".join(_WEEKDAYS)
#: Short English weekday names, read only after "last" ("last fri"): alone they are words
#: ("sun" is left out: "the last sun of the year").
_WEEKDAY_SHORT = {
    **dict.fromkeys(("mon",), 0), **dict.fromkeys(("tue", "tues"), 1), "wed": 2,
    **dict.fromkeys(("thu", "thur", "thurs"), 3), "fri": 4, "sat": 5,
}  # fmt: skip
_WEEKDAY_SHORT_NAMES = "|".join(sorted(_WEEKDAY_SHORT, key=len, reverse=True))

#: Unit words of each language, to the calendar's unit.
_UNIT_WORDS = {
    **dict.fromkeys(("day", "days", "día", "días", "tag", "tagen", "jour", "jours"), "day"),
    **dict.fromkeys(
        ("week", "weeks", "semana", "semanas", "woche", "wochen", "semaine", "semaines"), "week"
    ),
    **dict.fromkeys(
        ("month", "months", "mes", "meses", "monat", "monaten", "monate", "mois"), "month"
    ),
    **dict.fromkeys(("year", "years", "año", "años", "jahr", "jahren", "jahre", "an", "ans",
                     "année", "années"), "year"),
}  # fmt: skip
#: Unit words of Chinese and Japanese ("三天前", "2ヶ月前").
_CJK_UNIT = {
    **dict.fromkeys(("天", "日"), "day"),
    **dict.fromkeys(("周", "星期", "礼拜", "週", "週間"), "week"),
    **dict.fromkeys(("个月", "個月", "月", "ヶ月", "か月", "カ月", "ケ月"), "month"),
    "年": "year",
}

_SEASON_WORDS = {
    **dict.fromkeys(("spring", "primavera", "frühling", "printemps", "春天", "春"), "spring"),
    **dict.fromkeys(("summer", "verano", "sommer", "été", "夏天", "夏"), "summer"),
    **dict.fromkeys(("autumn", "fall", "otoño", "herbst", "automne", "秋天", "秋"), "autumn"),
    **dict.fromkeys(("winter", "invierno", "hiver", "冬天", "冬"), "winter"),
}
_SEASON_NAMES = "|".join(sorted(_SEASON_WORDS, key=len, reverse=True))


def _count(word: str) -> int | None:
    word = word.lower()
    if word.isdigit():
        return int(word)
    return _NUMBERS.get(word)


def _cjk_count(text: str) -> int | None:
    """A count written in digits or in Chinese numerals up to 99."""
    if text.isdigit():
        return int(text)
    if text in _NUMBERS:
        return _NUMBERS[text]
    tens, _, ones = text.partition("十")
    if "十" in text and all(part in ("", *"一二三四五六七八九") for part in (tens, ones)):
        return (_NUMBERS.get(tens, 1) if tens else 1) * 10 + (_NUMBERS.get(ones, 0) if ones else 0)
    return None


# --- the patterns ---------------------------------------------------------------------------

#: (pattern, resolver): a resolver gets the match and today, and gives the days of the span
#: or ``None`` (not a date after all).
_Rule = tuple[re.Pattern[str], Callable[[re.Match[str], date], tuple[date, date] | None]]
_FLAGS = re.IGNORECASE | re.UNICODE
_B = r"(?<![\w])"  # a word starts here (letters of every script count as word characters)
_E = r"(?![\w])"


def _relative(unit: str, offset: int) -> Callable[[re.Match[str], date], tuple[date, date]]:
    return lambda _match, today: _UNITS[unit](today, offset)


def _ago(match: re.Match[str], today: date) -> tuple[date, date] | None:
    count = _count(match.group("n"))
    unit = _UNIT_WORDS.get(match.group("unit").lower())
    if count is None or unit not in _UNITS or count > 500:
        return None
    return _UNITS[unit](today, -count)


def _cjk_ago(match: re.Match[str], today: date) -> tuple[date, date] | None:
    count = _cjk_count(match.group("n"))
    unit = _CJK_UNIT.get(match.group("unit"))
    if count is None or unit not in _UNITS or count > 500:
        return None
    return _UNITS[unit](today, -count)


def _month_named(match: re.Match[str], today: date) -> tuple[date, date] | None:
    month = _MONTH_NUMBER.get(match.group("month").lower())
    year = match.groupdict().get("year")
    if month is None:
        return None
    return _named_month(today, month, int(year) if year else None)


def _day_month_year(match: re.Match[str], today: date) -> tuple[date, date] | None:
    month = _MONTH_NUMBER.get(match.group("month").lower())
    year = match.groupdict().get("year")
    if month is None:
        return None
    day = int(match.group("day"))
    if year:
        return _named_day(int(year), month, day)
    span = _named_day(today.year, month, day)
    if span is not None and span[0] > today:
        span = _named_day(today.year - 1, month, day)
    return span


def _iso(match: re.Match[str], _today: date) -> tuple[date, date] | None:
    return _named_day(int(match.group("year")), int(match.group("month")), int(match.group("day")))


def _in_year(match: re.Match[str], _today: date) -> tuple[date, date] | None:
    year = int(match.group("year"))
    return (date(year, 1, 1), date(year + 1, 1, 1)) if 1900 <= year <= 2100 else None


def _weekday(strictly: bool) -> Callable[[re.Match[str], date], tuple[date, date]]:
    return lambda match, today: _last_weekday(
        today, _WEEKDAYS[match.group("weekday").lower()], strictly=strictly
    )


def _season_rule(offset: int) -> Callable[[re.Match[str], date], tuple[date, date]]:
    return lambda match, today: _season(today, _SEASON_WORDS[match.group("season").lower()], offset)


def _cjk_month(match: re.Match[str], today: date) -> tuple[date, date] | None:
    month = _cjk_count(match.group("month"))
    year = match.groupdict().get("year")
    if month is None:
        return None
    return _named_month(today, month, int(year) if year else None)


def _cjk_day(match: re.Match[str], today: date) -> tuple[date, date] | None:
    month, day = _cjk_count(match.group("month")), _cjk_count(match.group("day"))
    year = match.groupdict().get("year")
    if month is None or day is None:
        return None
    if year:
        return _named_day(int(year), month, day)
    span = _named_day(today.year, month, day)
    return _named_day(today.year - 1, month, day) if span and span[0] > today else span


def _p(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, _FLAGS)


_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)"
_MONTH = rf"(?P<month>{_MONTH_NAMES})\.?"

_RULES: list[_Rule] = [
    # explicit dates
    (_p(rf"{_B}{_YEAR}-(?P<month>[01]\d)-(?P<day>[0-3]\d){_E}"), _iso),
    (_p(rf"{_B}{_DAY}(?:st|nd|rd|th|\.)?(?:\s+de|\s+of)?\s+{_MONTH}(?:,?\s+(?:de\s+)?{_YEAR})?{_E}"),
     _day_month_year),
    (_p(rf"{_B}{_MONTH}\s+{_DAY}(?:st|nd|rd|th)?(?:,?\s+{_YEAR})?{_E}"), _day_month_year),
    (_p(r"(?:(?P<year>(?:19|20)\d\d)年)?(?P<month>\d{1,2}|十[一二]?|[一二三四五六七八九])月"
        r"(?P<day>\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])[日号號]"),
     _cjk_day),
    # a month, with or without its year
    (_p(rf"{_B}{_MONTH}\s*,?\s*(?:de\s+|of\s+)?{_YEAR}{_E}"), _month_named),
    (_p(rf"{_B}(?:in|during|of|en|durante|im|in\s+the\s+month\s+of)"
        rf"\s+(?:el\s+mes\s+de\s+)?{_MONTH}(?:\s*,?\s*(?:de\s+|of\s+)?{_YEAR})?{_E}"),
     _month_named),
    (_p(r"(?:(?P<year>(?:19|20)\d\d)年)?(?P<month>\d{1,2}|十[一二]?|[一二三四五六七八九])月份?"
        r"(?![\d一二三四五六七八九十]*[日号號])"), _cjk_month),
    # a year
    (_p(rf"{_B}(?:in|during|since|en|el\s+año|im\s+jahr|année|en\s+l'an)\s+{_YEAR}{_E}"), _in_year),
    (_p(rf"{_YEAR}年(?!\d|[一二三四五六七八九十]+月)"), _in_year),
    # days around today
    (_p(rf"{_B}(?:the\s+day\s+before\s+yesterday|anteayer|antier|vorgestern|avant-hier){_E}|"
        r"前天|一昨日|おととい"), _relative("day", -2)),
    # (French "hier" is left out: in German it means "here")
    (_p(rf"{_B}(?:yesterday|last\s+night|ayer|anoche|gestern|hier\s+soir){_E}|"
        r"昨天|昨日|昨晚|昨夜|きのう|ゆうべ"), _relative("day", -1)),
    (_p(rf"{_B}(?:today|this\s+morning|tonight|hoy|heute|aujourd'hui|aujourd’hui){_E}|"
        r"今天|今日|きょう"), _relative("day", 0)),
    # this / last week, month, year
    (_p(rf"{_B}(?:the\s+week\s+before\s+last|vorletzte\s+woche){_E}|上上周|上上个?星期|先々週"),
     _relative("week", -2)),
    (_p(rf"{_B}(?:last\s+week|la\s+semana\s+pasada|letzte\s+woche|vergangene\s+woche|"
        rf"la\s+semaine\s+(?:dernière|passée)){_E}|上周|上个?星期|上个?礼拜|先週"),
     _relative("week", -1)),
    (_p(rf"{_B}(?:this\s+week|esta\s+semana|diese\s+woche|cette\s+semaine){_E}|"
        r"这周|本周|这个?星期|今週"), _relative("week", 0)),
    (_p(rf"{_B}(?:the\s+month\s+before\s+last|vorletzten\s+monat){_E}|上上个?月|先々月"),
     _relative("month", -2)),
    (_p(rf"{_B}(?:last\s+month|el\s+mes\s+pasado|letzten\s+monat|vergangenen\s+monat|"
        rf"le\s+mois\s+(?:dernier|passé)){_E}|上个?月|先月"), _relative("month", -1)),
    (_p(rf"{_B}(?:this\s+month|este\s+mes|diesen\s+monat|ce\s+mois(?:-ci)?){_E}|"
        r"这个月|本月|今月"), _relative("month", 0)),
    (_p(rf"{_B}(?:the\s+year\s+before\s+last|vorletztes\s+jahr|hace\s+dos\s+años){_E}|"
        r"前年|一昨年|おととし"), _relative("year", -2)),
    (_p(rf"{_B}(?:last\s+year|el\s+año\s+pasado|letztes\s+jahr|vergangenes\s+jahr|"
        rf"l'année\s+(?:dernière|passée)|l’année\s+(?:dernière|passée)){_E}|去年|昨年"),
     _relative("year", -1)),
    (_p(rf"{_B}(?:this\s+year|este\s+año|dieses\s+jahr|cette\s+année){_E}|今年|本年"),
     _relative("year", 0)),
    # weekends and weekdays
    (_p(rf"{_B}(?:last\s+weekend|el\s+fin\s+de\s+semana\s+pasado|letztes\s+wochenende|"
        rf"le\s+week-end\s+dernier|this\s+past\s+weekend){_E}|上个?周末|先週末"),
     lambda _match, today: _last_weekend(today)),
    (_p(rf"{_B}(?:last|this\s+past)\s+(?P<weekday>{_WEEKDAY_NAMES}){_E}|"
        rf"{_B}(?:el\s+)?(?P<weekday_es>{_WEEKDAY_NAMES})\s+pasado{_E}|"
        rf"{_B}(?:letzten|vergangenen)\s+(?P<weekday_de>{_WEEKDAY_NAMES}){_E}|"
        rf"{_B}(?P<weekday_fr>{_WEEKDAY_NAMES})\s+dernier{_E}"),
     lambda match, today: _last_weekday(
         today,
         _WEEKDAYS[next(g for g in match.groups() if g).lower()],
         strictly=True,
     )),
    (_p(rf"{_B}(?:on|el|am)\s+(?P<weekday>{_WEEKDAY_NAMES}){_E}"), _weekday(strictly=False)),
    (_p(rf"{_B}(?<!the\s)last\s+(?P<short>{_WEEKDAY_SHORT_NAMES})\.?{_E}"),
     lambda match, today: _last_weekday(today, _WEEKDAY_SHORT[match["short"].lower()],
                                        strictly=True)),
    # last August: the latest August before this month
    (_p(rf"{_B}(?:last|this\s+past|letzten|vergangenen)\s+{_MONTH}{_E}"), _month_before),
    (_p(rf"{_B}(?:el\s+)?{_MONTH}\s+pasado{_E}"), _month_before),
    (_p(rf"{_B}(?:en\s+)?{_MONTH}\s+dernier{_E}"), _month_before),
    # N units ago
    (_p(rf"{_B}(?P<n>{_COUNT})\s+(?P<unit>days?|weeks?|months?|years?)\s+ago{_E}"), _ago),
    (_p(rf"{_B}hace\s+(?P<n>{_COUNT})\s+(?P<unit>días?|semanas?|mes(?:es)?|años?){_E}"),
     _ago),
    (_p(rf"{_B}vor\s+(?P<n>{_COUNT})\s+(?P<unit>tag(?:en)?|wochen?|monat(?:en)?|"
        rf"jahr(?:en)?){_E}"), _ago),
    (_p(rf"{_B}il\s+y\s+a\s+(?P<n>{_COUNT})\s+(?P<unit>jours?|semaines?|mois|ans|"
        rf"années?){_E}"), _ago),
    (_p(r"(?P<n>\d{1,3}|[一二两三四五六七八九十]{1,3})\s*(?P<unit>天|日|周|星期|礼拜|週間|週|"
        r"个月|個月|ヶ月|か月|カ月|ケ月|年)(?:之|以)?前"), _cjk_ago),
    # seasons
    (_p(rf"{_B}(?:last|past)\s+(?P<season>{_SEASON_NAMES}){_E}|"
        rf"{_B}(?:el|la)\s+(?P<season_es>{_SEASON_NAMES})\s+pasad[oa]{_E}|"
        rf"{_B}(?:letzten|vergangenen)\s+(?P<season_de>{_SEASON_NAMES}){_E}|"
        rf"{_B}(?:l'|l’|le\s+|la\s+)?(?P<season_fr>{_SEASON_NAMES})\s+derni(?:er|ère){_E}|"
        rf"去年(?P<season_zh>{_SEASON_NAMES})"),
     lambda match, today: _season(
         today, _SEASON_WORDS[next(g for g in match.groups() if g).lower()], -1
     )),
    (_p(rf"{_B}this\s+(?P<season>{_SEASON_NAMES}){_E}|今年(?P<season_zh>{_SEASON_NAMES})"),
     lambda match, today: _season(
         today, _SEASON_WORDS[next(g for g in match.groups() if g).lower()], 0
     )),
]  # fmt: skip


#: Words one of which every rule's match holds (a month, weekday or season name, a word of
#: time or a number word in one of the languages), besides a digit or a character of time
#: in Chinese or Japanese (:data:`_TRIGGER_CHARACTERS`): a text with none of them is not read
#: rule by rule. Most memories and questions name no time, and the rules together cost a few
#: hundred microseconds a text.
_TRIGGER_WORDS = frozenset(
    {
        *_MONTH_NUMBER,
        *_WEEKDAYS,
        *(word for word in _SEASON_WORDS if word.isascii() or len(word) > 1),
        *_UNIT_WORDS,
        *_WEEKDAY_SHORT, "night", "anoche", "soir", "pasado", "dernier",
        "yesterday", "today", "tonight", "morning", "ago", "weekend", "ayer", "anteayer",
        "antier", "hoy", "hace", "gestern", "vorgestern", "heute", "wochenende", "aujourd",
        "avant", "week", "été",
    }
)  # fmt: skip
_TRIGGER_CHARACTERS = re.compile(
    r"\d|[天日周週月年昨今前去先上这本春夏秋冬]|おととい|きのう|きょう|ゆうべ"
)
_WORD = re.compile(r"\w+", re.UNICODE)


def _may_name_time(text: str) -> bool:
    if _TRIGGER_CHARACTERS.search(text) is not None:
        return True
    return any(word in _TRIGGER_WORDS for word in _WORD.findall(text.lower()))


def _midnight(day: date, zone: tzinfo) -> datetime:
    return datetime.combine(day, time(), tzinfo=zone).astimezone(UTC)


def _matches(text: str) -> Iterator[tuple[int, int, re.Match[str], _Rule]]:
    for rule in _RULES:
        for match in rule[0].finditer(text):
            yield match.start(), match.end(), match, rule


def spans_in(text: str, now: datetime) -> list[Span]:
    """The spans of time ``text`` names, in the order they appear, resolved on the calendar
    of ``now`` (timezone-aware: its zone decides where each day begins); overlapping
    expressions give the longest one ("3 May 2023", not "May 2023" as well)."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    zone = now.tzinfo
    today = now.date()
    if not _may_name_time(text):
        return []
    found: list[tuple[int, int, Span]] = []
    taken: list[tuple[int, int]] = []
    candidates = sorted(_matches(text), key=lambda item: (item[0], -(item[1] - item[0])))
    for start, end, match, (_, resolve) in candidates:
        if any(start < other_end and other_start < end for other_start, other_end in taken):
            continue
        try:
            days = resolve(match, today)
        except (ValueError, OverflowError, KeyError):
            days = None
        if days is None:
            continue
        first, last = days
        if first > today:  # memory is about what was said: the future is not asked for
            continue
        taken.append((start, end))
        found.append((start, end, Span(_midnight(first, zone), _midnight(last, zone), match[0])))
    return [span for _, _, span in sorted(found, key=lambda item: item[0])]


#: Questions that ask when something happened, in the six languages :func:`spans_in` reads.
#: "when", "cuando" and "quand" are conjunctions too ("what did I eat when I was in Paris?"):
#: they count at the start of the question or before the verb that makes them ask.
_ASKS_WHEN = re.compile(
    r"^\W*(?:so\s+|and\s+|y\s+|et\s+)?(?:when|cuando|quand)\b|"
    rf"{_B}when\s+(?:did|was|were|is|are|do|does|have|has|had|will){_E}|"
    rf"{_B}(?:what|which)\s+(?:date|day|month|year|time\s+of\s+year){_E}|"
    rf"{_B}(?:how\s+long\s+ago|cuándo|qué\s+(?:día|fecha|mes|año)|wann|an\s+welchem\s+tag|"
    rf"in\s+welchem\s+(?:jahr|monat)|quand\s+est-ce|quel\s+jour|quelle\s+date|"
    rf"en\s+quelle\s+année){_E}|什么时候|何时|哪天|哪一天|哪年|哪一年|几月|几号|"
    r"いつ|何日に|何月に|何年に",
    _FLAGS,
)


def asks_when(question: str) -> bool:
    """Whether ``question`` asks when something happened ("when did I move?", "什么时候",
    "いつ", "¿cuándo?", "wann", "quand")."""
    return _ASKS_WHEN.search(question) is not None


def tells_time(text: str, said: datetime) -> bool:
    """Whether ``text``, said at ``said`` (a time without a zone is UTC), names a span of time
    of its own ("we adopted her last week", "in 2019"): the kind of memory that answers a
    question asking when."""
    return bool(spans_in(text, said if said.tzinfo is not None else said.replace(tzinfo=UTC)))

"""The rule-based extractor: the profile (name, home, occupation, age, common travel and eating
preferences) here, and lasting facts (allergies, health conditions, diets, employer, school,
languages, birthday, pets, family names: :mod:`.rules_facts`), in English and Chinese, by
regular expressions. Deterministic; no model, no network.

It is what the offline chat model forms memories with (seed 003's ``extract_memory``, made
stricter). Only the user's own messages are read: an assistant saying "I'm Claude" or tool
output naming someone must not rename the user, nor text the user quotes or asks for ("Write a
story where I work at Google": :func:`._text.own_words`). Text is split into clauses at punctuation;
later statements win over earlier ones.

Decisions (each a trade of recall for precision, since a wrong profile field is worse than a
missing one):

- Names. English: "my name is X" (any case; an all-lowercase name is capitalised), "call me
  X" and "I'm / I am X" only for a capitalised X that is not a common word ("I'm Going",
  "I'm English", "call me back" are not names). Chinese: 我叫 / 你可以叫我 / 请叫我 / 我的名字是
  followed by 1–4 CJK characters (cut at particles such as 的, 今, 来) or a Latin name; 我是 X
  is a name only in parentheses (我是（小明）, as in seed 003) or when X is 2–4 characters
  ending the clause and not ending like a role or group (学生, 医生, 北京人, 工程师): 我是学生
  is an occupation, 我是北京人 is skipped, 我是小明 is a name.
- Occupation: "I work as X", "I'm a/an X" when X ends with a word of a fixed list of
  occupations (``JOBS``; "I'm a good cook" is not one), 我的职业是 / 我是做 / 我是 X ending
  like a role. Age: "I'm 34 years old", "I just turned 40", 我今年三十岁.
- Preferences go into the profile's ``preferences`` object with keys in the language they were
  stated in (``{"seat": "window"}`` / ``{"座位": "靠窗"}``), as seed 003 does; a user who
  switches language may hold both. A preference in a clause with a negation before it ("I
  don't want a window seat", 不要靠窗) or about someone else ("my wife is vegetarian",
  我老婆吃素) is skipped.
- A question never states a fact. The clause a question mark ends (我叫什么名字？, "what's my
  name?"), a clause that asks (吗 at its end, 什么 / 啥 / 谁 / 哪 / 几 / 怎么 / 多少 in it)
  and an English clause that opens with a question word (what, who, where...) or an
  auxiliary before "I" ("do I", "am I") give no name, home, occupation or age, and no such word is ever taken as a name ("My name is what" is not a
  name). Preferences are still read from requests ("could you book me a window seat?").
- Every profile value is also a keyed fact, so it is searchable and a change supersedes the
  old value with history.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from agent_memory.formation._text import (
    CJK,
    EN_QUESTION_WORDS,
    LATIN_NAME,
    LONGEST_FACT,
    LONGEST_WORD,
    NOT_NAMES,
    WORD,
    chinese_name,
    clauses,
    is_chinese,
    own_words,
)
from agent_memory.formation.extraction import Extraction, Fact, user_texts
from agent_memory.formation.rules_facts import JOBS, STUDENTS, lasting_facts, stated

__all__ = ["extract_rules"]


# --- English ------------------------------------------------------------------------------------

_EN_MY_NAME = re.compile(rf"\bmy name(?: is|'s|’s)\s+(?P<name>{WORD}(?:\s+{WORD}){{0,2}})", re.I)
_EN_CALL_ME = re.compile(
    rf"\b(?i:call me|i am called|i'm called|i’m called)\s+(?P<name>{WORD}(?:\s+{WORD}){{0,2}}|[{CJK}]{{1,4}})"
)
_EN_I_AM = re.compile(rf"(?:^|\s)(?i:i'm|i’m|i am|im)\s+(?P<name>{WORD}(?:\s+{WORD}){{0,2}})")
_EN_SEAT = re.compile(
    r"\b(?P<a>window|aisle)\s+seats?\b|\bseats?\s+(?:by|near|next\s+to|on)\s+the\s+(?P<b>window|aisle)\b"
    r"|\b(?:prefer|like|want|love|choose|book)\s+(?:the\s+|an?\s+)?(?P<c>window|aisle)\b",
    re.I,
)
_EN_DIET = re.compile(r"\b(?P<diet>vegan|vegetarian|pescatarian)\b", re.I)
_EN_NO_MEAT = re.compile(r"\bI\s+(?:don't|don’t|do not|never)\s+eat\s+meat\b", re.I)
_EN_CLASS = re.compile(
    r"\b(?P<a>premium economy|economy|business|first)\s+class\b"
    r"|\b(?:fly|flying|book|booking|sit|seat(?:ed)?|travel)\s+(?:in\s+)?(?P<b>premium economy|economy|business)\b",
    re.I,
)
_EN_HOME = re.compile(
    r"\b(?i:I\s+(?:live|am living|'m living|’m living|am based|'m based|’m based)\s+in)\s+"
    rf"(?P<place>{WORD}(?:\s+{WORD}){{0,3}})"
)
#: A word of an occupation (the whole word, at most LONGEST_WORD characters).
_JOB_WORD = rf"[^\W\d_][\w-]{{0,{LONGEST_WORD - 1}}}(?![\w-])"
_EN_WORK_AS = re.compile(
    rf"\bI\s+work\s+as\s+(?>(?:an?\s+|the\s+)?)(?P<job>{_JOB_WORD}(?:\s+{_JOB_WORD}){{0,3}})", re.I
)
_JOB_STOP = frozenset("at in for with and but from since on who because so near".split())
_EN_I_AM_A = re.compile(
    r"\b(?i:I\s+am|I['’]m)\s+(?:(?i:now|currently|also|still)\s+)?(?i:an?)\s+"
    rf"(?P<job>{_JOB_WORD}(?:\s+{_JOB_WORD}){{0,3}})"
)
# "I'm a good cook" says how, not what for a living.
_NOT_JOB_WORDS = frozenset(
    "good great bad terrible decent excellent fast slow careful big huge keen avid amateur "
    "aspiring wannabe better best awful lousy poor safe nervous picky messy former retired "
    "future hobby part-time backseat".split()
)
_EN_AGE = re.compile(
    r"\b(?i:I\s+am|I['’]m)\s+(?P<n>\d{1,3})\s*(?i:years?\s+old|yrs?\s+old|y/?o)\b"
    r"|\bI\s+(?i:just\s+)?(?i:turned)\s+(?P<turned>\d{1,3})\b"
)
_ZH_AGE = re.compile(
    r"我(?:今年|现在)?(?:已经)?(?P<n>\d{1,3}|[一二三四五六七八九十]{1,3})岁(?![的时那以前])"
)
# English preferences count only in a clause about the speaker (or a request: "please").
_EN_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I’m|I'd|me|my|please)\b", re.I)
_EN_NEGATION = re.compile(
    r"\b(?:not|no|never|don't|don’t|do not|doesn't|isn't|hate|dislike|avoid|rather not|instead of)\b",
    re.I,
)
_EN_OTHERS = re.compile(
    r"\b(?:my\s+(?:wife|husband|partner|son|daughter|kids?|children|friend|friends|boss|"
    r"mother|father|mom|mum|dad|brother|sister|colleague)|he|she|they|his|her|their)\b",
    re.I,
)

# --- Chinese ------------------------------------------------------------------------------------

_ZH_NAME = re.compile(
    rf"(?P<intro>你可以叫我|可以叫我|请叫我|我的名字是|我的名字叫|我名叫|我叫|^叫我)"
    rf"[（(]?(?P<name>[{CJK}]{{1,4}}|{LATIN_NAME})"
)
_ZH_I_AM_PAREN = re.compile(rf"我是[（(](?P<name>[{CJK}]{{1,4}}|{LATIN_NAME})[）)]")
_ZH_I_AM = re.compile(rf"我是(?:一名|一个|一位|个)?(?P<x>[{CJK}]{{2,8}})$")
_ZH_OCCUPATION_END = ("生", "师", "员", "家", "者", "手", "工", "官", "警", "医", "程序员")
_ZH_GROUP_END = ("人", "族", "迷", "控", "党", "粉", "友", "客", "户")
_ZH_HOME = re.compile(rf"(?:我住在|我家在|我生活在|我住)(?P<place>[{CJK}]{{2,10}})")
_ZH_HOME_END = re.compile(r"(?:的|附近|这边|那边|一带|了|呢|吧|啊).*$")
_ZH_JOB = re.compile(
    rf"(?:我的职业是一名|我的职业是|我的工作是|我是做|我从事)(?P<job>[{CJK}]{{2,10}})"
)
_ZH_SEAT = re.compile(r"(?P<window>靠窗户?|窗边|窗口位)|(?P<aisle>过道|靠走廊|走廊边)")
_ZH_DIET = re.compile(r"(?P<vegan>纯素|严格素食)|(?P<veg>素食|吃素|不吃肉)")
_ZH_CLASS = re.compile(r"超级经济舱|经济舱|商务舱|头等舱")
_ZH_NEGATION = re.compile(r"不|别|讨厌|没有|不是")
_ZH_OTHERS = re.compile(r"老婆|老公|妻子|丈夫|朋友|孩子|儿子|女儿|爸|妈|同事|他|她|他们")


def _english_name(raw: str, *, any_case: bool) -> str | None:
    words = raw.split()
    first = words[0]
    if first.casefold() in NOT_NAMES or any(
        re.sub(r"['’]s$", "", word.casefold()) in EN_QUESTION_WORDS for word in words
    ):
        return None
    if re.fullmatch(rf"[{CJK}]+", first):
        return first
    if not first[0].isupper() and not any_case:
        return None
    name = [first if not first.islower() else first[0].upper() + first[1:]]
    for word in words[1:]:  # "Ana Silva": more capitalised words continue the name
        if not word[0].isupper() or word.casefold() in NOT_NAMES:
            break
        name.append(word)
    return " ".join(name)


def _free(clause: str, start: int, negation: re.Pattern[str], others: re.Pattern[str]) -> bool:
    """Whether a match at ``start`` is stated positively and about the user."""
    before = clause[:start]
    return not negation.search(before) and not others.search(before)


def _names(clause: str) -> str | None:
    found = None
    if m := _EN_MY_NAME.search(clause):
        found = _english_name(m["name"], any_case=True) or found
    elif m := _EN_CALL_ME.search(clause):
        found = _english_name(m["name"], any_case=False) or found
    elif (m := _EN_I_AM.search(clause)) and not _EN_NEGATION.search(m["name"]):
        found = _english_name(m["name"], any_case=False) or found
    if m := _ZH_NAME.search(clause):
        found = chinese_name(m["name"]) or found
    elif m := _ZH_I_AM_PAREN.search(clause):
        found = chinese_name(m["name"]) or found
    elif (
        (m := _ZH_I_AM.search(clause))
        and len(m["x"]) <= 4
        and not m.group(0).startswith(("我是一", "我是个"))
    ):
        x = m["x"]
        if not x.endswith(_ZH_OCCUPATION_END + _ZH_GROUP_END) and x[0] not in "做在从":
            found = chinese_name(x) or found
    return found


def _occupation(clause: str) -> str | None:
    if m := _EN_WORK_AS.search(clause):
        words = []
        for word in m["job"].split():
            if word.casefold() in _JOB_STOP:
                break
            words.append(word)
        return " ".join(words) or None
    if job := _i_am_a(clause):
        return job
    if m := _ZH_JOB.search(clause):
        job = re.sub(r"(?:的|工作|行业)+$", "", m["job"])
        return job if len(job) >= 2 else None
    if (m := _ZH_I_AM.search(clause)) and m["x"].endswith(_ZH_OCCUPATION_END):
        return m["x"].rpartition("的")[2]  # 清华大学的学生: a student (of a school)
    return None


def _i_am_a(clause: str) -> str | None:
    """ "I'm a (data) engineer (at X)": the words up to the first occupation word, when the
    clause states it plainly (not "if I were", "my wife says")."""
    for m in _EN_I_AM_A.finditer(clause):
        words = m["job"].split()
        if words[0].casefold() in _NOT_JOB_WORDS or not stated(clause[: m.start()], False):
            continue
        for end, word in enumerate(words):
            if word.casefold() in _JOB_STOP:
                break
            if word.casefold() in JOBS or word.casefold() in STUDENTS:
                return " ".join(words[: end + 1])
    return None


#: Characters of the longest profile value (a name or a place is a few words).
_LONGEST_VALUE = LONGEST_FACT // 2

_ZH_DIGITS = {c: n for n, c in enumerate("零一二三四五六七八九")}


def _age(clause: str) -> int | None:
    if m := _EN_AGE.search(clause):
        number = int(m["n"] or m["turned"])
    elif m := _ZH_AGE.search(clause):
        raw = m["n"]
        if raw.isdigit():
            number = int(raw)
        else:  # 三, 十五, 二十, 二十五
            tens, _, ones = raw.partition("十")
            if "十" in raw:
                number = (_ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + _ZH_DIGITS.get(ones, 0)
            else:
                number = _ZH_DIGITS.get(raw, -1)
    else:
        return None
    return number if 0 < number <= 120 else None


def _home(clause: str) -> str | None:
    if m := _EN_HOME.search(clause):
        words = []
        for word in m["place"].split():  # "New York City with my wife": capitalised words
            if not word[0].isupper():
                break
            words.append(word)
        return " ".join(words) or None
    if m := _ZH_HOME.search(clause):
        place = _ZH_HOME_END.sub("", m["place"])
        return place if len(place) >= 2 else None
    return None


def _preferences(clause: str) -> dict[str, str]:
    found: dict[str, str] = {}
    english = (_EN_NEGATION, _EN_OTHERS)
    about_user = _EN_FIRST_PERSON.search(clause) is not None
    for m in _EN_SEAT.finditer(clause) if about_user else ():
        if _free(clause, m.start(), *english):
            found["seat"] = (m["a"] or m["b"] or m["c"]).lower()
    for m in _EN_DIET.finditer(clause) if about_user else ():
        if _free(clause, m.start(), *english):
            found["diet"] = m["diet"].lower()
    if (m := _EN_NO_MEAT.search(clause)) and not _EN_OTHERS.search(clause[: m.start()]):
        found.setdefault("diet", "vegetarian")
    for m in _EN_CLASS.finditer(clause) if about_user else ():
        if _free(clause, m.start(), *english):
            found["class"] = (m["a"] or m["b"]).lower()
    chinese = (_ZH_NEGATION, _ZH_OTHERS)
    for m in _ZH_SEAT.finditer(clause):
        if _free(clause, m.start(), *chinese):
            found["座位"] = "靠窗" if m["window"] else "过道"
    for m in _ZH_DIET.finditer(clause):
        # 不吃肉 carries its own 不; only what comes before it can negate it.
        if _free(clause, m.start(), *chinese):
            found["饮食"] = "纯素" if m["vegan"] else "素食"
    for m in _ZH_CLASS.finditer(clause):
        if _free(clause, m.start(), *chinese):
            found["舱位"] = m.group(0)
    return found


_EN_PREFERENCE_TEXT = {
    "seat": "The user prefers {} seats.",
    "diet": "The user is {}.",
    "class": "The user prefers to fly {} class.",
}
_ZH_PREFERENCE_TEXT = {
    "座位": "用户偏好{}座位。",
    "饮食": "用户的饮食偏好：{}。",
    "舱位": "用户偏好{}。",
}


def _facts(profile: dict[str, Any], origin: dict[str, bool]) -> list[Fact]:
    facts: list[Fact] = []
    for field, en, zh in (
        ("user_name", "The user's name is {}.", "用户的名字是{}。"),
        ("home", "The user lives in {}.", "用户住在{}。"),
        ("occupation", "The user works as {}.", "用户的职业是{}。"),
        ("age", "The user is {} years old.", "用户{}岁。"),
    ):
        if field in profile:
            value = profile[field]
            if field == "occupation" and not origin[field]:
                value = f"{'an' if value[0].casefold() in 'aeiou' else 'a'} {value}"
                if value.split()[-1].casefold() in STUDENTS:
                    en = "The user is {}."
            template = zh if origin[field] else en
            facts.append(Fact(content=template.format(value), key=field, importance=0.7))
    for name, value in profile.get("preferences", {}).items():
        template = _ZH_PREFERENCE_TEXT.get(name) or _EN_PREFERENCE_TEXT[name]
        facts.append(
            Fact(
                content=template.format(value),
                memory_type="preference",
                key=f"preference:{name}",
                importance=0.6,
            )
        )
    return facts


def extract_rules(messages: Iterable[Any]) -> Extraction:
    """Name, home, occupation, age and preferences (the profile) and lasting facts
    (:mod:`.rules_facts`: allergies, employer, languages...) stated in the user's messages.

    >>> extract_rules([("user", "我叫小明，下次订票请帮我选靠窗，我吃素食。")]).profile
    {'user_name': '小明', 'preferences': {'座位': '靠窗', '饮食': '素食'}}
    """
    profile: dict[str, Any] = {}
    preferences: dict[str, str] = {}
    origin: dict[str, bool] = {}  # field -> stated in Chinese (for the fact's language)
    lasting: dict[str, Fact] = {}  # by key: a later statement wins
    for said in user_texts(messages):
        text = own_words(said)  # no quotes, no text asked for ("Translate: I am ...")
        for fact in lasting_facts(text):
            lasting.pop(fact.key or fact.content, None)
            lasting[fact.key or fact.content] = fact
        for clause, asked in clauses(text):
            for field, value in (
                ("user_name", None if asked else _names(clause)),
                ("occupation", None if asked else _occupation(clause)),
                ("home", None if asked else _home(clause)),
                ("age", None if asked else _age(clause)),
            ):
                # Bounded captures keep a value short; one that is not is no fact.
                if value and len(str(value)) <= _LONGEST_VALUE:
                    profile[field] = value
                    origin[field] = is_chinese(clause)
            preferences.update(_preferences(clause))
    if preferences:
        profile["preferences"] = preferences
    facts = _facts(profile, origin) + list(lasting.values())
    return Extraction(profile=profile, notes=[], facts=facts)

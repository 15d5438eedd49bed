"""The offline extractor's lasting facts: what a user says once and expects the agent to keep.

The set, in English and (where marked 中) Chinese, each a long-term fact with a ``key``:

| fact | says | key |
|---|---|---|
| allergy 中 | "I'm allergic to peanuts and shellfish", "I have a nut allergy", 我对花生过敏 | ``allergy:<item>`` |
| health condition 中 | "I have type 1 diabetes", "I'm asthmatic", 我有哮喘 (a fixed list) | ``condition:<name>`` |
| diet 中 | "I eat halal", "I'm gluten-free", "I don't eat pork", 我不吃猪肉 | ``diet:<x>``, ``avoids:<food>`` |
| employer 中 | "I work at Farfetch", "I'm a nurse at St Mary's", 我在腾讯公司工作 | ``employer`` |
| school 中 | "I study law at Leiden University", "I'm a student at MIT", 我在北京大学读书 | ``school`` |
| languages 中 | "I speak English, French and a little German", 我会说粤语 | ``language:<name>`` |
| birthday 中 | "my birthday is on 3 March", "I was born in 1990", 我的生日是5月20日 | ``birthday``, ``birth_year``, ``birthplace`` |
| pets 中 | "I have a dog named Rex", "my cat Luna", 我养了一只猫叫咪咪 | ``pet:<kind>[:<name>]`` |
| family names 中 | "my wife's name is Maria", "my son Tom", 我女儿叫小美 | ``family:<relation>[:<name>]`` |

(The profile's name, home, occupation, age, seat, class and eating style are read by
:mod:`.rules`.)

Precision comes first: a wrong fact that "sticks" is worse than a missing one. A fact is taken
only from a clause that states it about the speaker: never from a clause that asks (a question
mark, 吗, "do I", "am I"), nor when the clause before the match negates ("I'm not allergic to
anything", "I no longer work at"), hedges or supposes ("if", "maybe", "I think", 如果, 可能), or
is about someone else ("my friend is allergic to cats", "she said", 我朋友对猫过敏). Employers
and schools are capitalised names ("at Farfetch", not "at home"); a Chinese place of work needs
an organisation's ending (公司, 银行, 医院...) or a Latin name, so 我在北京工作 (a city) is no
employer. Conditions, languages, pets and relations come from fixed lists.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from agent_memory.formation._text import (
    CJK,
    LATIN_NAME,
    LONGEST_FACT,
    LONGEST_WORD,
    NOT_NAMES,
    Clause,
    chinese_name,
    sentence_clauses,
    sentences,
)
from agent_memory.formation.extraction import Fact

__all__ = ["JOBS", "STUDENTS", "lasting_facts", "stated"]

# --- what may come before a fact ---------------------------------------------------------------

_EN_DENIED = re.compile(
    r"\b(?:not|no|never|nor|neither|without|hardly|no\s+longer|used\s+to)\b|n['’]t\b", re.I
)
_EN_SUPPOSED = re.compile(
    r"\b(?:if|unless|suppose|supposing|imagine|pretend|assume|assuming|wish|whether|"
    r"hypothetically|maybe|perhaps|might|may|could|would|should|probably|possibly|think|"
    r"guess|wonder|in\s+case|let['’]s\s+say|what\s+if)\b",
    re.I,
)
_EN_SOMEONE_ELSE = re.compile(
    r"\b(?:he|she|they|his|her|their|him|them|someone|somebody|everyone|people|friend|friends|"
    r"wife|husband|partner|son|daughter|kids?|children|boss|mother|father|mom|mum|dad|brother|"
    r"sister|colleague|coworker|roommate|neighbou?r)\b",
    re.I,
)
_ZH_DENIED = re.compile(r"不|没|别|无|未|从不|不再|以前")
_ZH_SUPPOSED = re.compile(
    r"如果|假如|假设|要是|万一|倘若|可能|也许|或许|好像|觉得|以为|是不是|是否"
)
_ZH_SOMEONE_ELSE = re.compile(
    r"他|她|它|老婆|老公|妻子|丈夫|朋友|孩子|儿子|女儿|爸|妈|同事|同学|室友|别人|人家|你"
)


def stated(before: str, chinese: bool) -> bool:
    """Whether the clause up to a match states it plainly and about the speaker."""
    checks = (
        (_ZH_DENIED, _ZH_SUPPOSED, _ZH_SOMEONE_ELSE)
        if chinese
        else (_EN_DENIED, _EN_SUPPOSED, _EN_SOMEONE_ELSE)
    )
    return not any(check.search(before) for check in checks)


# --- pieces ---------------------------------------------------------------------------------------

_I_AM = r"\b(?i:I\s+am|I['’]m)\s+"
#: "I" then a verb, or "I'm", "I've" (no space before the apostrophe).
_I = r"\bI(?:\s+|(?=['’]))"
_I_HAVE = rf"{_I}(?i:have|['’]ve\s+got|have\s+got|own)\s+"
_TAIL = r"(?P<items>[^.!?;。！？；\n]+)"
_END = (
    r"(?=\s*(?:$|[,.;:!?，。；！？)]|\s(?i:and|so|but|which|since|too|as\s+well|last|when|for|"
    r"after|now|already|myself)\b))"
)
#: What follows a word's first letter, at most up to :data:`LONGEST_WORD` characters in all
#: (a longer run is no name: the patterns that end without a fixed word check its end).
_MORE = f"{{0,{LONGEST_WORD - 1}}}"
_ORG_WORD = rf"[A-Z][\w&.'’+-]{_MORE}(?![\w&.'’+-])"
#: Capitalised names of organisations: "Farfetch", "the BBC", "Bank of America", "St Mary's".
_ORG = rf"(?P<org>(?:[Tt]he\s+)?{_ORG_WORD}(?:\s+(?:&\s+|of\s+)?{_ORG_WORD}){{0,4}})"
_FIRST_NAME = rf"[A-Z][a-z]{{1,{LONGEST_WORD - 1}}}(?![a-z])"
_NAME = rf"(?P<name>{_FIRST_NAME}(?:[-'’][A-Z]?[a-z]{{1,{LONGEST_WORD - 1}}}(?![a-z]))?)"
_PLACE_WORD = rf"[A-Z][\w'’-]{_MORE}(?![\w'’-])"
#: A word of a job, a subject or an allergen ("data", "engineer", "tree"), followed by a space.
_WORD = rf"[A-Za-z][\w-]{_MORE}"
_NOT_ORGS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may "
    "june july august september october november december christmas easter home night weekends "
    "i the".split()
)
_ITEM_STOP = frozenset(
    "i me my you your he she it we they him her us them this that these those what which who "
    "whom where when why how am is are was were be been being do does did have has had can "
    "could will would should may might must so but because since while if though although as "
    "than then also too lol haha really very to in at for from with like especially except "
    "which please and or not no".split()
)
_DETERMINERS = frozenset("a an the all any some most certain many".split())
_NOTHING = frozenset("anything nothing everything something stuff things".split())


def _items(text: str, *, words: int = 3) -> list[str]:
    """The items of an English list ("peanuts, tree nuts and eggs") up to where it stops
    being one (a pronoun, a verb, "since", "so", end of clause)."""
    found: list[str] = []
    for part in re.split(r"\s*(?:,|/|&|\band\b|\bor\b)\s*", text, flags=re.I):
        kept: list[str] = []
        ended = False
        for raw in part.split():
            word = raw.strip("'\"()")
            if (
                word.casefold() in _ITEM_STOP
                or len(word) > LONGEST_WORD
                or not re.fullmatch(r"[^\W\d_][\w'’-]*", word)
            ):
                ended = True
                break
            kept.append(word)
        while kept and kept[0].casefold() in _DETERMINERS:
            kept.pop(0)
        if kept and len(kept) <= words:
            found.append(" ".join(kept))
        elif kept:
            ended = True
        if ended or not kept:
            break
    return found


def _slug(text: str) -> str:
    return re.sub(r"[^\w]+", "_", text.casefold()).strip("_")[:40]


class _NotAFact(Exception):
    """A match whose fact would be longer than any fact the rules mean to make."""


def _fact(content: str, key: str, importance: float = 0.7) -> Fact:
    if len(content) > LONGEST_FACT or len(key) > 64:  # Fact's own limit for a key
        raise _NotAFact
    return Fact(content=content, key=key, importance=importance)


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].casefold() in 'aeiou' else 'a'} {noun}"


# --- English ----------------------------------------------------------------------------------

_FILLER = r"(?:(?i:very|severely|highly|extremely|deathly|mildly|slightly|quite|also|really|seriously|so)\s+)?"


def _allergies(items: list[str]) -> list[Fact]:
    if any(item.casefold() in _NOTHING for item in items):
        return []
    return [
        _fact(f"The user is allergic to {item}.", f"allergy:{_slug(item)}", 0.9) for item in items
    ]


_GENERIC_ALLERGIES = frozenset("food seasonal several bad severe mild serious".split())


def _allergy_of(m: re.Match[str]) -> list[Fact]:
    item = m["item"]
    generic = _GENERIC_ALLERGIES | _DETERMINERS | _ITEM_STOP | _NOTHING
    if any(word.casefold() in generic for word in item.split()):
        return []
    return [_fact(f"The user has {_article(item)} allergy.", f"allergy:{_slug(item)}", 0.9)]


_CONDITIONS = (
    r"diabetes|asthma|epilepsy|(?:celiac|coeliac)\s+disease|high\s+blood\s+pressure|hypertension|"
    r"heart\s+disease|a\s+heart\s+condition|migraines|ADHD|autism|arthritis|eczema|psoriasis|"
    r"lupus|Crohn['’]s(?:\s+disease)?|IBS|colitis|PTSD|OCD|bipolar\s+disorder|dyslexia|COPD|HIV|"
    r"insomnia|sleep\s+apn(?:o)?ea|glaucoma|multiple\s+sclerosis|Parkinson['’]s(?:\s+disease)?|"
    r"hypothyroidism|hyperthyroidism|an(?:a)?emia|kidney\s+disease|tinnitus|fibromyalgia|"
    r"endometriosis|gout|scoliosis|a\s+pacemaker|hearing\s+loss|lactose\s+intolerance|"
    r"gluten\s+intolerance|chronic\s+pain|depression|anxiety"
)
_CONDITION_ADJECTIVES = (
    r"diabetic|asthmatic|epileptic|lactose[- ]intolerant|gluten[- ]intolerant|colou?r[- ]?blind|"
    r"deaf|hard\s+of\s+hearing|visually\s+impaired|blind|autistic|dyslexic|pregnant|celiac|"
    r"coeliac|an(?:a)?emic"
)
_DIETS = (
    r"gluten[- ]free|dairy[- ]free|lactose[- ]free|nut[- ]free|sugar[- ]free|halal|kosher|keto|"
    r"paleo|low[- ]carb|low[- ]sodium|low[- ]fodmap|mediterranean|plant[- ]based|"
    r"intermittent\s+fasting"
)


def _diet(m: re.Match[str]) -> list[Fact]:
    diet = " ".join(m["d"].casefold().split())
    said = f"does {diet}" if diet.endswith("fasting") else f"follows {_article(diet)} diet"
    return [_fact(f"The user {said}.", f"diet:{_slug(diet)}")]


_FOODS = frozenset(
    "pork beef lamb veal chicken poultry fish seafood shellfish shrimp prawns crab lobster dairy "
    "milk cheese eggs gluten wheat nuts peanuts soy sugar alcohol coffee caffeine garlic onions "
    "mushrooms cilantro coriander tomatoes carbs bread".split()
)
_FOOD_PHRASES = frozenset({"red meat", "spicy food", "raw fish", "tree nuts"})


def _condition(m: re.Match[str]) -> list[Fact]:
    said = f"{(m['mod'] or '').casefold()}{m['c']}"
    return [_fact(f"The user has {said}.", f"condition:{_slug(m['c'])}", 0.8)]


def _avoided(m: re.Match[str]) -> list[Fact]:
    verb = m["verb"].casefold()
    items = [
        item
        for item in _items(m["items"], words=2)
        if item.casefold() in _FOOD_PHRASES or item.split()[-1].casefold() in _FOODS
    ]
    saying = "cannot" if m["neg"].casefold().startswith("can") else "does not"
    return [
        _fact(f"The user {saying} {verb} {item}.", f"avoids:{_slug(item)}", 0.8) for item in items
    ]


#: Occupations "I'm a/an ..." ends with (the profile's occupation; with "at X" an employer).
JOBS = frozenset(
    "engineer developer programmer scientist analyst designer architect teacher professor "
    "lecturer nurse doctor physician surgeon dentist pharmacist vet veterinarian lawyer "
    "attorney accountant consultant manager director ceo cto cfo coo founder cofounder "
    "co-founder researcher writer journalist editor artist musician chef cook baker pilot "
    "driver electrician plumber carpenter mechanic farmer salesperson marketer entrepreneur "
    "freelancer photographer translator librarian therapist psychologist psychiatrist "
    "paramedic firefighter officer soldier economist administrator technician barista waiter "
    "waitress cashier clerk tester intern recruiter banker trader broker actuary auditor "
    "secretary assistant receptionist cleaner caregiver midwife optometrist physiotherapist "
    "radiologist scientist statistician mathematician physicist chemist biologist "
    "geologist sociologist historian illustrator animator producer"
    "".split()
)
STUDENTS = frozenset(
    "student undergrad undergraduate postgrad postgraduate candidate freshman sophomore "
    "fellow".split()
)


def _job_at(m: re.Match[str]) -> list[Fact]:
    job, org = m["job"].split(), _org(m["org"])
    last = job[-1].casefold() if job else ""
    if org is None or any(word.casefold() in _ITEM_STOP for word in job):
        return []
    if last in STUDENTS and m["at"].casefold() == "at":
        return [_fact(f"The user studies at {org}.", "school")]
    if last in JOBS:
        return [_fact(f"The user works at {org}.", "employer")]
    return []


def _org(raw: str) -> str | None:
    """An organisation's name as said ("the BBC"), ``None`` for a day, a month, "Home"."""
    org = re.sub(r"[.,]+$", "", raw.strip())
    core = re.sub(r"^[Tt]he\s+", "", org)
    if not core or core.split()[0].casefold() in _NOT_ORGS:
        return None
    return org


def _employer(m: re.Match[str]) -> list[Fact]:
    org = _org(m["org"])
    return [_fact(f"The user works at {org}.", "employer")] if org else []


_SCHOOL_WORDS = re.compile(
    r"\b(?:University|College|School|Academy|Institute|Polytechnic|Conservatory|Uni)\b"
)


def _studies(m: re.Match[str]) -> list[Fact]:
    org, subject = _org(m["org"]), m.groupdict().get("subject")
    if org is None:
        return []
    if m.groupdict().get("school") and not _SCHOOL_WORDS.search(org):
        return []  # "I go to Paris": only a school's name counts after "go to" or "attend"
    what = f"studies {subject} at" if subject else "studies at"
    return [_fact(f"The user {what} {org}.", "school")]


_LANGUAGES = (
    r"English|Chinese|Mandarin|Cantonese|Spanish|French|German|Portuguese|Italian|Japanese|"
    r"Korean|Russian|Arabic|Hindi|Dutch|Swedish|Norwegian|Danish|Finnish|Polish|Turkish|Greek|"
    r"Hebrew|Vietnamese|Thai|Indonesian|Malay|Tagalog|Ukrainian|Czech|Hungarian|Romanian|"
    r"Persian|Farsi|Urdu|Bengali|Punjabi|Tamil|Swahili|Catalan|Irish|Welsh|Basque|Croatian|"
    r"Serbian|Bulgarian|Slovak|Icelandic|Latin|Esperanto"
)
_LEVEL = (
    r"fluent|some|basic|a\s+little|a\s+bit\s+of|good|native|conversational|decent|little|"
    r"broken|intermediate|beginner|passable|elementary"
)
_SPOKEN = re.compile(
    rf"(?i:(?P<level>{_LEVEL})\s+)?(?P<lang>(?i:{_LANGUAGES}))\b"
    r"(?:\s+(?i:fluently|well|natively|too|also|as\s+well)\b)?"
)


def _languages(m: re.Match[str]) -> list[Fact]:
    facts = []
    fluent = m.groupdict().get("fluent")
    for part in re.split(r"\s*(?:,|&|\band\b|\bplus\b)\s*", m["items"], flags=re.I):
        spoken = _SPOKEN.match(part.strip())
        if spoken is None:
            break
        lang = spoken["lang"].capitalize()
        level = spoken["level"] or (fluent if fluent and fluent.casefold() != "bilingual" else None)
        said = f"{' '.join(level.casefold().split())} {lang}" if level else lang
        facts.append(_fact(f"The user speaks {said}.", f"language:{_slug(lang)}"))
        if spoken.end() < len(part.strip()):  # "French with my mother": the list ends here
            break
    return facts


def _native(m: re.Match[str]) -> list[Fact]:
    lang = m["lang"].capitalize()
    return [_fact(f"The user's native language is {lang}.", f"language:{_slug(lang)}")]


_MONTHS = (
    r"January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec"
)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE = (
    rf"(?P<date>(?:the\s+)?{_DAY}\s+(?:of\s+)?(?i:{_MONTHS})\b(?:,?\s+\d{{4}})?"
    rf"|(?i:{_MONTHS})\s+{_DAY}\b(?:,?\s+\d{{4}})?|\d{{4}}-\d{{2}}-\d{{2}})"
)


def _birthday(m: re.Match[str]) -> list[Fact]:
    if "born" in m.group(0):  # I was born on ...
        return [_fact(f"The user was born on {m['date']}.", "birthday")]
    return [_fact(f"The user's birthday is {m['date']}.", "birthday")]


def _born_in(m: re.Match[str]) -> list[Fact]:
    if m["year"]:
        return [_fact(f"The user was born in {m['year']}.", "birth_year")]
    place = m["place"]
    if place.split()[0].casefold() in _NOT_ORGS or re.fullmatch(f"(?i:{_MONTHS})", place):
        return []
    return [_fact(f"The user was born in {place}.", "birthplace")]


_PETS = (
    r"dog|cat|puppy|kitten|rabbit|bunny|hamster|parrot|budgie|goldfish|turtle|tortoise|horse|"
    r"guinea\s+pig|snake|lizard|gecko|ferret|gerbil|retriever|labrador|poodle|terrier|beagle|"
    r"bulldog|spaniel|husky|corgi|dachshund|chihuahua|pug|collie|sheepdog"
)
_COUNTS = {"a": "a", "an": "an", "one": "a", "two": "two", "three": "three", "four": "four"}


def _pets(m: re.Match[str]) -> list[Fact]:
    kind = " ".join(m["pet"].casefold().split())
    count = _COUNTS.get(m["count"].casefold(), m["count"])
    names = [n for n in (m["name"], m.groupdict().get("name2")) if n and _is_name(n)]
    several = count not in ("a", "an")
    said = f"{count} {kind}s" if several else _article(kind)
    if names:
        called = " and ".join(names)
        return [_fact(f"The user has {said} named {called}.", f"pet:{_slug(kind)}:{_slug(called)}")]
    return [_fact(f"The user has {said}.", f"pet:{_slug(kind)}")]


def _pet_named(m: re.Match[str]) -> list[Fact]:
    kind, name = " ".join(m["pet"].casefold().split()), m["name"]
    if not _is_name(name):
        return []
    return [
        _fact(f"The user has {_article(kind)} named {name}.", f"pet:{_slug(kind)}:{_slug(name)}")
    ]


_RELATIONS = (
    r"wife|husband|spouse|partner|girlfriend|boyfriend|fianc[ée]e?|son|daughter|mother|mom|mum|"
    r"father|dad|brother|sister|grandmother|grandma|grandfather|grandpa|aunt|uncle|cousin|niece|"
    r"nephew|stepson|stepdaughter|stepmother|stepfather|twin"
)
#: Relations a person has one of at a time: a new name replaces the old one.
_ONE_OF = frozenset(
    "wife husband spouse partner girlfriend boyfriend fiance fiancé fiancee fiancée mother mom "
    "mum father dad stepmother stepfather".split()
)


def _is_name(name: str) -> bool:
    return name.casefold() not in NOT_NAMES and name.casefold() not in _NOT_ORGS


def _family(m: re.Match[str]) -> list[Fact]:
    relation, name = m["rel"].casefold(), m["name"]
    if not _is_name(name):
        return []
    key = f"family:{relation}" if relation in _ONE_OF else f"family:{relation}:{_slug(name)}"
    return [_fact(f"The user's {relation} is named {name}.", key)]


def _learning(m: re.Match[str]) -> list[Fact]:
    lang = m["lang"].capitalize()
    return [_fact(f"The user is learning {lang}.", f"learning:{_slug(lang)}")]


def _partner(m: re.Match[str]) -> list[Fact]:
    name = m["name"]
    if not _is_name(name):
        return []
    return [_fact(f"The user's partner is named {name}.", "family:partner")]


def _married(m: re.Match[str]) -> list[Fact]:
    name = m["name"]
    return [_fact(f"The user is married to {name}.", "family:spouse")] if _is_name(name) else []


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    facts: Callable[[re.Match[str]], list[Fact]]
    chinese: bool = False


_EN_RULES = [
    _Rule(
        re.compile(rf"{_I_AM}{_FILLER}(?i:allergic\s+to)\s+{_TAIL}"),
        lambda m: _allergies(_items(m["items"])),
    ),
    _Rule(
        re.compile(
            rf"{_I_HAVE}(?i:(?:an?\s+|severe\s+|bad\s+|mild\s+)*allerg(?:y|ies)\s+to)\s+{_TAIL}"
        ),
        lambda m: _allergies(_items(m["items"])),
    ),
    _Rule(
        re.compile(
            rf"{_I_HAVE}(?i:an?\s+)?(?i:(?:severe|bad|mild|serious|life-threatening)\s+)?"
            rf"(?P<item>{_WORD}(?:\s+{_WORD})?)\s+(?i:allerg(?:y|ies)){_END}"
        ),
        _allergy_of,
    ),
    _Rule(
        re.compile(
            rf"{_I}(?i:have|['’]ve\s+got|have\s+got|suffer\s+from|live\s+with)\s+"
            rf"(?P<mod>(?i:type\s+[12]|chronic|severe|mild)\s+)?(?P<c>(?i:{_CONDITIONS})){_END}"
        ),
        _condition,
    ),
    _Rule(  # a diagnosis is firm: no need of the end "I have anxiety about the exam" lacks
        re.compile(
            rf"{_I}(?i:was|['’]ve\s+been|have\s+been|got)\s+(?i:diagnosed\s+with)\s+"
            rf"(?P<mod>(?i:type\s+[12]|chronic|severe|mild)\s+)?(?P<c>(?i:{_CONDITIONS}))\b"
        ),
        _condition,
    ),
    _Rule(
        re.compile(rf"{_I_AM}(?P<adj>(?i:{_CONDITION_ADJECTIVES})){_END}"),
        lambda m: [
            _fact(f"The user is {m['adj'].casefold()}.", f"condition:{_slug(m['adj'])}", 0.8)
        ],
    ),
    _Rule(
        re.compile(rf"{_I_AM}(?:(?i:strictly|also)\s+)?(?P<d>(?i:{_DIETS})){_END}"),
        _diet,
    ),
    _Rule(
        re.compile(
            r"\bI(?:\s+(?:(?i:only|strictly|now)\s+)?(?i:eat|keep|follow|am\s+on|stick\s+to|"
            r"switched\s+to|have\s+switched\s+to|do)|['’]m\s+(?:(?i:now)\s+)?on|"
            rf"['’]ve\s+switched\s+to)\s+(?:(?i:an?|the)\s+)?(?P<d>(?i:{_DIETS}))\b"
        ),
        _diet,
    ),
    _Rule(
        re.compile(
            r"\bI\s+(?P<neg>(?i:don['’]t|do\s+not|never|can['’]t|cannot|can\s+not))\s+"
            rf"(?P<verb>(?i:eat|drink))\s+{_TAIL}"
        ),
        _avoided,
    ),
    _Rule(
        re.compile(
            rf"{_I}(?i:work|am\s+working|['’]m\s+working|currently\s+work|now\s+work|"
            r"have\s+been\s+working|['’]ve\s+been\s+working|"
            rf"work\s+full[- ]time|work\s+part[- ]time)\s+(?i:at|for)\s+{_ORG}"
        ),
        _employer,
    ),
    _Rule(
        re.compile(
            r"\bI\s+(?i:work\s+as)\s+(?:(?i:an?|the)\s+)?"
            rf"(?P<job>{_WORD}(?:\s+{_WORD}){{0,3}}?)\s+"
            rf"(?P<at>(?i:at|for|with))\s+{_ORG}"
        ),
        _employer,
    ),
    _Rule(
        re.compile(
            rf"{_I_AM}(?:(?i:an?|the)\s+)?(?P<job>{_WORD}(?:\s+{_WORD}){{0,3}}?)\s+"
            rf"(?P<at>(?i:at|for|with|of))\s+{_ORG}"
        ),
        _job_at,
    ),
    _Rule(re.compile(rf"{_I_AM}(?i:employed)\s+(?i:at|by)\s+{_ORG}"), _employer),
    _Rule(re.compile(rf"\b(?i:my\s+employer\s+is)\s+{_ORG}"), _employer),
    _Rule(
        re.compile(
            rf"{_I}(?i:study|am\s+studying|['’]m\s+studying|am\s+enrolled|['’]m\s+enrolled)\s+"
            rf"(?:(?P<subject>{_WORD}(?:\s+{_WORD}){{0,3}}?)\s+)?(?i:at)\s+{_ORG}"
        ),
        _studies,
    ),
    _Rule(
        re.compile(
            rf"{_I}(?P<school>(?i:go\s+to|attend|am\s+attending|['’]m\s+attending))\s+"
            rf"{_ORG}"
        ),
        _studies,
    ),
    _Rule(re.compile(rf"\bI\s+(?i:speak|can\s+speak|also\s+speak)\s+{_TAIL}"), _languages),
    _Rule(
        re.compile(rf"{_I_AM}(?P<fluent>(?i:fluent|bilingual|conversational))\s+(?i:in)\s+{_TAIL}"),
        _languages,
    ),
    _Rule(
        re.compile(
            r"\b(?i:my\s+(?:native\s+language|mother\s+tongue|first\s+language)\s+is)\s+"
            rf"(?P<lang>(?i:{_LANGUAGES}))\b"
        ),
        _native,
    ),
    _Rule(
        re.compile(rf"{_I_AM}(?i:a\s+)?(?i:native)\s+(?P<lang>(?i:{_LANGUAGES}))\s+(?i:speaker)"),
        _native,
    ),
    _Rule(re.compile(rf"\b(?i:my\s+birthday\s+is)\s+(?:(?i:on)\s+)?{_DATE}"), _birthday),
    _Rule(re.compile(rf"\bI\s+(?i:was\s+born)\s+(?:(?i:on)\s+)?{_DATE}"), _birthday),
    _Rule(
        re.compile(
            r"\bI\s+(?i:was\s+born)\s+(?i:in)\s+(?:(?P<year>(?:19|20)\d{2})\b|"
            rf"(?P<place>{_PLACE_WORD}(?:\s+{_PLACE_WORD}){{0,3}}))"
        ),
        _born_in,
    ),
    _Rule(
        re.compile(
            rf"{_I_HAVE}(?P<count>(?i:an?|one|two|three|four))\s+"
            r"(?:(?i:little|big|old|young|small|black|white|grey|gray|golden|rescue)\s+)?"
            rf"(?P<pet>(?i:{_PETS}))(?i:s)?"
            rf"(?:(?:\s*,)?\s+(?i:named|called)\s+{_NAME}(?:\s+(?i:and)\s+(?P<name2>{_FIRST_NAME}))?|{_END})"
        ),
        _pets,
    ),
    _Rule(
        re.compile(
            rf"\b(?i:my)\s+(?P<pet>(?i:{_PETS}))"
            r"(?:['’]s\s+(?i:name\s+is)|\s+(?i:is\s+called|is\s+named|called|named)|\s*,)?\s+"
            rf"{_NAME}\b"
        ),
        _pet_named,
    ),
    _Rule(
        re.compile(
            r"\b(?i:my)\s+(?:(?i:older|younger|little|big|elder|baby|twin)\s+)?"
            rf"(?P<rel>(?i:{_RELATIONS}))"
            r"(?:['’]s\s+(?i:name\s+is)|\s+(?i:is\s+called|is\s+named|called|named)|\s*,)?\s+"
            rf"{_NAME}\b(?!['’]s\s+(?i:name))"
        ),
        _family,
    ),
    _Rule(re.compile(rf"{_I_AM}(?i:married\s+to)\s+{_NAME}\b"), _married),
    _Rule(
        re.compile(
            rf"(?:{_I_AM}(?i:dating|seeing|engaged\s+to|moving\s+in\s+with|living\s+with)"
            r"|\bI(?:['’]ve|\s+have)\s+been\s+(?i:dating|seeing))\s+"
            rf"{_NAME}\b"
        ),
        _partner,
    ),
    _Rule(
        re.compile(
            rf"(?:^|(?<=\s)){_NAME}\s+(?i:and)\s+I\s+(?i:have\s+been|['’]ve\s+been|are)\s+"
            r"(?i:together|dating|engaged|married)\b"
        ),
        _partner,
    ),
    _Rule(
        re.compile(
            rf"(?:{_I_AM}(?:(?i:now|currently|also)\s+)?(?i:learning|studying|taking)"
            r"|\bI(?:['’]ve|\s+have)?\s+(?i:started|begun|begin)\s+(?i:learning\s+)?"
            r"|^(?:I(?:['’]ve|\s+have)?\s+)?(?:(?i:just)\s+)?(?i:enrolled\s+in)\s+(?i:an?)"
            r"|\b(?i:my)\s+(?:(?i:new)\s+)?(?=(?i:"
            + _LANGUAGES
            + r")\s+(?i:tutor|teacher|course|class|lessons)))\s*"
            rf"(?P<lang>(?i:{_LANGUAGES}))\b(?!\s+(?i:food|cuisine|wine|restaurant|film|films|music))"
        ),
        _learning,
    ),
    _Rule(
        re.compile(
            rf"\b(?i:my)\s+(?:(?i:new)\s+)?(?i:tutor|teacher)\s+(?i:for)\s+(?P<lang>(?i:{_LANGUAGES}))\b"
        ),
        _learning,
    ),
    _Rule(re.compile(rf"(?:^|(?<=\s)){_DATE}\s+(?i:is\s+my\s+birthday)\b"), _birthday),
    _Rule(
        re.compile(
            r"\bI(?:['’]ll|\s+will)\s+(?i:be\s+a\s+year\s+older|turn\s+\d{1,3})\s+(?i:on)\s+"
            rf"{_DATE}"
        ),
        _birthday,
    ),
    _Rule(
        re.compile(rf"{_I}(?i:react\s+(?:badly|strongly|severely)\s+to)\s+{_TAIL}"),
        lambda m: [
            _fact(f"The user reacts badly to {item}.", f"allergy:{_slug(item)}", 0.9)
            for item in _items(m["items"])
            if item.casefold() not in _NOTHING
        ],
    ),
]

# --- Chinese ------------------------------------------------------------------------------------

_ZH_LIST = re.compile(r"和|、|跟|与|及|以及|还有")
_ZH_ADVERBS = frozenset("有点 有一点 一点 很 都 也 特别 非常 严重 有些 会 容易".split())


def _zh_allergies(m: re.Match[str]) -> list[Fact]:
    if m["x"] in _ZH_ADVERBS:  # 我有点过敏: to what is not said
        return []
    raw = re.sub(r"^[对有]", "", m["x"])
    if (
        not raw
        or re.search("[对的说性]", raw)
        or _ZH_SOMEONE_ELSE.search(raw)
        or _ZH_DENIED.search(raw)
        or _ZH_SUPPOSED.search(raw)
    ):
        return []
    items = [item for item in _ZH_LIST.split(raw) if item and item not in _ZH_ADVERBS]
    if not items or any(len(item) > 6 for item in items):
        return []
    return [_fact(f"用户对{item}过敏。", f"allergy:{item}", 0.9) for item in items]


_ZH_CONDITIONS = (
    r"糖尿病|高血压|低血压|哮喘|心脏病|癫痫|抑郁症|焦虑症|偏头痛|关节炎|湿疹|多动症|自闭症|"
    r"痛风|贫血|甲亢|甲减|乳糖不耐受?|乳糖不耐症|帕金森|肾病|过敏性鼻炎"
)
_ZH_FOODS = (
    r"猪肉|牛肉|羊肉|鸡肉|海鲜|鱼|虾|辣|香菜|酒|咖啡|牛奶|鸡蛋|花生|坚果|葱|蒜|内脏|乳制品|麸质"
)
_ZH_PETS = (
    r"比格犬|柯基|泰迪|金毛|哈士奇|柴犬|拉布拉多|边牧|英短|布偶猫|橘猫|狗狗|小狗|狗|猫咪|小猫|猫|"
    r"兔子|仓鼠|鹦鹉|乌龟|金鱼|鱼"
)
_ZH_RELATIONS = (
    r"对象|另一半|老婆|老公|妻子|丈夫|太太|男朋友|女朋友|未婚妻|未婚夫|儿子|女儿|妈妈|母亲|爸爸|父亲|"
    r"哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外公|外婆|妈|爸"
)
_ZH_ONE_OF = frozenset(
    "对象 另一半 老婆 老公 妻子 丈夫 太太 男朋友 女朋友 未婚妻 未婚夫 妈妈 母亲 爸爸 父亲 妈 爸".split()
)
_ZH_ORG_END = (
    r"公司|集团|银行|医院|研究所|研究院|事务所|工作室|诊所|酒店|餐厅|学校|大学|学院|中学|小学|"
    r"幼儿园|工厂|政府|报社|电视台|出版社"
)
_ZH_SCHOOL_END = r"大学|学院|中学|小学|高中|初中|学校|研究生院"
_ZH_LANGUAGES = (
    r"中文|汉语|普通话|国语|粤语|广东话|上海话|闽南语|客家话|英语|英文|法语|德语|日语|韩语|"
    r"西班牙语|葡萄牙语|意大利语|俄语|阿拉伯语|荷兰语|泰语|越南语"
)
_ZH_NUMBER = r"\d{1,2}|[一二三四五六七八九十]{1,3}"
_ZH_DATE = rf"(?P<date>(?:(?:\d{{4}})年)?(?:{_ZH_NUMBER})月(?:{_ZH_NUMBER})[日号])"


def _zh_name(raw: str | None) -> str | None:
    if raw is None:
        return None
    # Words that follow a pet's or relative's name ("叫咪咪很可爱") end it too.
    return chinese_name(re.split(r"[很真特非超挺可总每常]", raw)[0] or raw)


def _zh_pet(m: re.Match[str]) -> list[Fact]:
    pet, name = m["pet"], _zh_name(m.groupdict().get("name"))
    count = m.groupdict().get("count") or ""
    if name:
        return [_fact(f"用户养了{count or '一只'}{pet}，名叫{name}。", f"pet:{pet}:{name}")]
    return [_fact(f"用户养了{count or '一只'}{pet}。", f"pet:{pet}")]


def _zh_family(m: re.Match[str]) -> list[Fact]:
    relation, name = m["rel"], _zh_name(m["name"])
    if not name:
        return []
    key = f"family:{relation}" if relation in _ZH_ONE_OF else f"family:{relation}:{name}"
    return [_fact(f"用户的{relation}叫{name}。", key)]


_ZH_RULES = [
    _Rule(
        re.compile(rf"我(?P<x>[{CJK}、]{{1,16}}?)(?:有点|有些|很|特别|非常|严重)?过敏(?!性)"),
        _zh_allergies,
        True,
    ),
    _Rule(
        re.compile(rf"我(?:有|患有|患|得了|得过)?(?P<c>{_ZH_CONDITIONS})"),
        lambda m: [_fact(f"用户有{m['c']}。", f"condition:{m['c']}", 0.8)],
        True,
    ),
    _Rule(
        re.compile(r"我(?:只吃|吃|只能吃)清真"),
        lambda m: [_fact("用户只吃清真食品。", "diet:清真")],
        True,
    ),
    _Rule(
        re.compile(rf"我(?P<verb>不吃|不能吃|不喝|不能喝|不碰|忌)(?P<food>{_ZH_FOODS})"),
        lambda m: [_fact(f"用户{m['verb']}{m['food']}。", f"avoids:{m['food']}", 0.8)],
        True,
    ),
    _Rule(
        re.compile(
            rf"我(?:现在)?在(?P<org>[A-Za-z][\w&.-]{_MORE}(?:\s[A-Z][\w&.-]{_MORE}){{0,4}}"
            rf"|[{CJK}]{{1,12}}?(?:{_ZH_ORG_END}))"
            r"(?:工作|上班|任职|当|做)"
        ),
        # 一家公司, 北京的公司: a kind of place, not the name of one
        lambda m: (
            [] if re.search("[的家]", m["org"]) else [_fact(f"用户在{m['org']}工作。", "employer")]
        ),
        True,
    ),
    _Rule(
        re.compile(
            rf"我(?:就职于|任职于|供职于|受雇于)(?P<org>[A-Za-z][\w&.-]{_MORE}(?![\w&.-])|[{CJK}]{{2,12}})"
        ),
        lambda m: [_fact(f"用户在{m['org']}工作。", "employer")],
        True,
    ),
    _Rule(
        re.compile(
            rf"我(?:现在)?在(?P<org>[{CJK}]{{1,10}}?(?:{_ZH_SCHOOL_END}))"
            r"(?:读书|上学|念书|读研|读博|学习|读本科|读大学|上大学|读高中)"
        ),
        lambda m: [_fact(f"用户在{m['org']}上学。", "school")],
        True,
    ),
    _Rule(
        re.compile(
            rf"我是(?P<org>[{CJK}]{{1,10}}?(?:{_ZH_SCHOOL_END}))的"
            r"(?:学生|研究生|博士生|本科生|大学生|新生)"
        ),
        lambda m: [_fact(f"用户在{m['org']}上学。", "school")],
        True,
    ),
    _Rule(
        re.compile(
            rf"我(?:会说|会讲|能说|能讲|说|讲)(?P<level>一点|一些|流利的|很流利的)?"
            rf"(?P<langs>(?:{_ZH_LANGUAGES})(?:[和、跟](?:{_ZH_LANGUAGES}))*)"
        ),
        lambda m: [
            _fact(f"用户会说{m['level'] or ''}{lang}。", f"language:{lang}")
            for lang in re.split(r"[和、跟]", m["langs"])
        ],
        True,
    ),
    _Rule(
        re.compile(rf"我的母语是(?P<lang>{_ZH_LANGUAGES})"),
        lambda m: [_fact(f"用户的母语是{m['lang']}。", f"language:{m['lang']}")],
        True,
    ),
    _Rule(
        re.compile(rf"(?:我的生日是|我的生日在|我生日是|我生于|我出生于){_ZH_DATE}"),
        lambda m: [_fact(f"用户的生日是{m['date']}。", "birthday")],
        True,
    ),
    _Rule(
        re.compile(rf"我是?{_ZH_DATE}(?:出生|生)"),
        lambda m: [_fact(f"用户的生日是{m['date']}。", "birthday")],
        True,
    ),
    _Rule(
        re.compile(
            rf"我(?:家)?(?:养了|养着|养|有)(?P<count>一只|一条|一匹|两只|两条|三只)?(?P<pet>{_ZH_PETS})"
            rf"(?:[，,]?(?:它)?(?:叫|名叫|名字叫|的名字是)(?P<name>[{CJK}]{{1,4}}|{LATIN_NAME})"
            r"|(?=$|[，,。！!？?；;和]))"
        ),
        _zh_pet,
        True,
    ),
    _Rule(
        re.compile(
            rf"我(?:的|家的?)(?P<pet>{_ZH_PETS})(?:叫|名叫|的名字是|的名字叫)"
            rf"(?P<name>[{CJK}]{{1,4}}|{LATIN_NAME})"
        ),
        _zh_pet,
        True,
    ),
    _Rule(
        re.compile(
            rf"我的?(?P<rel>{_ZH_RELATIONS})(?:叫|名叫|的名字是|的名字叫)"
            rf"(?P<name>[{CJK}]{{1,4}}|{LATIN_NAME})"
        ),
        _zh_family,
        True,
    ),
]


_ZH_RULES += [
    _Rule(
        re.compile(
            rf"我(?:要|已经|就)?和(?P<name>[{CJK}]{{2,4}}?|{LATIN_NAME})"
            r"(?:在一起(?=了|[一二三四五六七八九十两几\d]+年|很久|多年)|搬到一起住|同居|结婚了|订婚了)"
        ),
        lambda m: (
            [_fact(f"用户的对象叫{name}。", "family:对象")] if (name := _zh_name(m["name"])) else []
        ),
        True,
    ),
    _Rule(
        re.compile(
            rf"我(?P<between>[{CJK}]{{0,8}}?)(?:改成|改吃|开始吃|坚持|一直吃|现在吃)了?"
            rf"(?P<d>[{CJK}]{{1,4}}?(?:饮食|断食))"
        ),
        lambda m: (
            []
            if _ZH_SOMEONE_ELSE.search(m["between"]) or _ZH_DENIED.search(m["between"])
            else [_fact(f"用户的饮食：{m['d']}。", f"diet:{m['d']}")]
        ),
        True,
    ),
    _Rule(
        re.compile(rf"我(?:[{CJK}]{{0,4}}?)(?:被)?确诊(?:了|为|出)?(?P<c>{_ZH_CONDITIONS})"),
        lambda m: [_fact(f"用户有{m['c']}。", f"condition:{m['c']}", 0.8)],
        True,
    ),
    _Rule(
        re.compile(
            rf"我(?:现在)?(?:在学|正在学|开始学|在学习|开始学习|报了)(?:个|一门)?(?P<lang>{_ZH_LANGUAGES})"
        ),
        lambda m: [_fact(f"用户在学{m['lang']}。", f"learning:{m['lang']}")],
        True,
    ),
    _Rule(
        re.compile(rf"(?:我的|我新找的|新找的)(?P<lang>{_ZH_LANGUAGES})(?:家教|老师)"),
        lambda m: [_fact(f"用户在学{m['lang']}。", f"learning:{m['lang']}")],
        True,
    ),
    _Rule(
        re.compile(rf"{_ZH_DATE}我(?:就)?又?要老一岁"),
        lambda m: [_fact(f"用户的生日是{m['date']}。", "birthday")],
        True,
    ),
]


def _clause_at(clauses: list[Clause], position: int) -> Clause | None:
    return next((c for c in clauses if c.start <= position < c.end), None)


def _found(sentence: str) -> Iterator[tuple[int, Fact]]:
    clauses = sentence_clauses(sentence)
    for rule in (*_EN_RULES, *_ZH_RULES):
        for m in rule.pattern.finditer(sentence):
            clause = _clause_at(clauses, m.start())
            if clause is None or clause.asks:
                continue
            if not stated(sentence[clause.start : m.start()], rule.chinese):
                continue
            try:
                facts = rule.facts(m)
            except _NotAFact:
                continue
            for fact in facts:
                yield m.start(), fact


def lasting_facts(text: str) -> list[Fact]:
    """The lasting facts ``text`` states about its speaker, in the order they were said.

    >>> [fact.content for fact in lasting_facts("I work as a data engineer at Farfetch.")]
    ['The user works at Farfetch.']
    """
    facts: list[Fact] = []
    for sentence in sentences(text):
        facts += [fact for _, fact in sorted(_found(sentence), key=lambda found: found[0])]
    return facts

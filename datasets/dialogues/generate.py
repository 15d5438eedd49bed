"""Generate the dialogues evaluation set, in LoCoMo's format, from a fixed seed.

::

    python datasets/dialogues/generate.py --out datasets/dialogues/dialogues.json

Every conversation is one user asking an assistant for help over months of sessions, with
personal facts said in passing. Questions ask for those facts in other words (category 4), for
when something happened (2), for two facts together (1), for a value that changed since it was
first stated (6), and for the user's or another person's value of the same slot (7).

The users write English, Chinese, Chinese with English terms, both languages by turns, or
Spanish; each user's draws come from a generator seeded with the user's id, so adding a user
leaves the other conversations as they were. Questions are asked in the language of the turn
that answers them (the mixed users are asked in either), and temporal answers are dates in that
language ("7 May 2023", "2023年5月7日", "7 de mayo de 2023"); session dates are in LoCoMo's
English format for every conversation. Standard library only; the same seed gives the same
bytes.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import catalogue
import phrases_en
import phrases_es
import phrases_zh

SEED = "agent-memory dialogues v1"
PHRASES = {"en": phrases_en, "zh": phrases_zh, "es": phrases_es}
#: Target share of each category among a conversation's questions.
MIX = {4: 0.40, 2: 0.15, 1: 0.10, 6: 0.20, 7: 0.15}
QUESTIONS = (30, 40)
SESSIONS = (8, 15)
TURNS = (170, 250)  # target; the bounds checked are 150 and 300
MONTH_NAMES = [m for m, _ in catalogue.MONTHS]
_TERMS = re.compile("|".join(sorted(phrases_zh.ENGLISH_TERMS, key=len, reverse=True)))


@dataclass(frozen=True, slots=True)
class User:
    sample_id: str
    name: str
    #: "en", "zh", "zh+terms" (Chinese that keeps English terms), "switch" (changes
    #: language between sessions) or "es" (Spanish)
    mode: str
    pool: str  # where cities, teams and hometowns come from: "west", "china" or "spain"
    #: whose names the people around the user have: "west", "china", "office", "spain"
    names: str


USERS = (
    User("en-01", "Maya", "en", "west", "west"),
    User("en-02", "Daniel", "en", "west", "west"),
    User("en-03", "Priya", "en", "west", "west"),
    User("en-04", "Oliver", "en", "west", "west"),
    User("en-05", "Sofia", "en", "west", "west"),
    User("en-06", "Marcus", "en", "west", "west"),
    User("en-07", "Hannah", "en", "west", "west"),
    User("zh-01", "晓雯", "zh", "china", "china"),
    User("zh-02", "志强", "zh", "china", "china"),
    User("zh-03", "思远", "zh", "china", "china"),
    User("zh-04", "佳怡", "zh", "china", "china"),
    User("zh-05", "子涵", "zh", "china", "china"),
    User("mix-01", "Vivian", "zh+terms", "china", "office"),
    User("mix-02", "Kevin", "zh+terms", "china", "office"),
    User("mix-03", "Lina", "switch", "west", "west"),
    User("es-01", "Lucía", "es", "spain", "spain"),
    User("es-02", "Javier", "es", "spain", "spain"),
    User("es-03", "Camila", "es", "spain", "spain"),
)


# --- one conversation ------------------------------------------------------------------------


@dataclass(slots=True)
class Exchange:
    """A user turn and the assistant's answer (plus optional follow-up pairs). ``key`` names
    the fact the first user turn states, so questions can point at it once ids are known."""

    pairs: list[tuple[str, str]]
    key: str | None = None


@dataclass(slots=True)
class Question:
    text: str
    answer: str
    evidence: list[str]  # exchange keys, resolved to dia_ids at the end
    category: int
    #: extra keys the loader ignores: "superseded"/"distractors" hold exchange keys
    extra: dict[str, Any] = field(default_factory=dict)


class Builder:
    """Builds one conversation; all randomness comes from ``rng``."""

    def __init__(self, user: User, rng: random.Random) -> None:
        self.user = user
        self.rng = rng
        self.used_values: set[str] = set()
        self.used_names: set[str] = set()
        self.used_relations: set[str] = set()
        self.genders: dict[str, str] = {}
        self.followups: dict[str, list[tuple[str, str]]] = {}
        self.sessions: list[list[Exchange]] = []
        self.languages: list[str] = []
        self.dates: list[tuple[date, str]] = []
        self.questions: list[Question] = []
        self._keys = 0

    # --- values and wording ------------------------------------------------------------

    def form(self, value: tuple[str, ...] | str, lang: str) -> str:
        """The value as written in ``lang`` by this user."""
        if isinstance(value, str):
            return value
        if lang == "es":
            try:
                return catalogue.SPANISH[(value[0], value[1])]
            except KeyError:
                raise KeyError(f"no Spanish form for {value[:2]} in catalogue.py") from None
        if lang == "en":
            return value[0]
        if self.user.mode == "zh+terms" and len(value) > 2:
            return value[2]
        return value[1]

    def take_value(self, pools: dict[str, list[tuple[str, ...]]]) -> tuple[str, ...]:
        pool = pools.get(self.user.pool) or pools["any"]
        value = self.rng.choice([v for v in pool if v[0] not in self.used_values])
        self.used_values.add(value[0])
        return value

    def take_name(self, gender: str | None = None) -> str:
        names = catalogue.NAMES[self.user.names]
        gender = gender or self.rng.choice(["f", "m"])
        name = self.rng.choice([n for n in names[gender] if n not in self.used_names])
        self.used_names.add(name)
        self.genders[name] = gender
        return name

    def relation(self, relation: tuple[str, str, str | None], name: str, lang: str) -> str:
        """What the user calls ``name`` ("sister", "同事"); in Spanish, in that person's gender
        ("mi vecina", "mi vecino")."""
        if lang == "es":
            female, male = catalogue.SPANISH_RELATIONS[relation[0]]
            return female if self.genders[name] == "f" else male
        return self.form((relation[0], relation[1]), lang)

    def mixed(self, text: str) -> str:
        """The user's own wording as a user who mixes in English terms writes it."""
        if self.user.mode != "zh+terms":
            return text
        return _TERMS.sub(
            lambda m: phrases_zh.ENGLISH_TERMS[m[0]] if self.rng.random() < 0.7 else m[0], text
        )

    def key(self) -> str:
        self._keys += 1
        return f"k{self._keys}"

    def question_language(self, evidence_lang: str) -> str:
        if self.user.mode == "switch":
            return self.rng.choice(["en", "zh"])
        if self.user.mode == "zh+terms":
            return "en" if self.rng.random() < 0.2 else "zh"
        if self.user.mode == "es":
            return "es"
        return evidence_lang

    def say(self, session: int, pair: tuple[str, str], **slots: str) -> str:
        """Put a fact-bearing exchange into ``session``; return its key."""
        key = self.key()
        user_text, assistant_text = pair
        user_text = self.mixed(user_text)
        exchange = Exchange([(user_text.format(**slots), assistant_text.format(**slots))], key)
        if self.rng.random() < 0.3:
            exchange.pairs.append(self.followup(self.languages[session]))
        self.sessions[session].append(exchange)
        return key

    def pick(self, options: list[tuple[str, str]]) -> tuple[str, str]:
        return self.rng.choice(options)

    def ask(self, options: list[str], **slots: str) -> str:
        return self.mixed(self.rng.choice(options)).format(user=self.user.name, **slots)

    # --- the schedule ------------------------------------------------------------------

    def plan_sessions(self) -> None:
        count = self.rng.randint(*SESSIONS)
        day = date(2023, 1, 1) + timedelta(days=self.rng.randrange(420))
        for index in range(count):
            if index:
                day += timedelta(days=self.rng.randint(6, 34))
            hour, minute = self.rng.randint(7, 22), self.rng.randrange(60)
            clock = f"{hour % 12 or 12}:{minute:02d} {'am' if hour < 12 else 'pm'}"
            self.dates.append(
                (day, f"{clock} on {day.day} {MONTH_NAMES[day.month - 1]}, {day.year}")
            )
            self.sessions.append([])
        if self.user.mode == "switch":
            lang, left = self.rng.choice(["en", "zh"]), 0
            for _ in range(count):
                if left == 0:
                    lang, left = ("zh" if lang == "en" else "en"), self.rng.randint(2, 4)
                self.languages.append(lang)
                left -= 1
        else:
            self.languages = [self.user.mode if self.user.mode in ("en", "es") else "zh"] * count

    def counts(self) -> dict[int, int]:
        total = self.rng.randint(*QUESTIONS)
        counts = {c: round(share * total) for c, share in MIX.items() if c != 7}
        counts[7] = total - sum(counts.values())
        return counts

    # --- the facts ---------------------------------------------------------------------

    def build(self) -> dict[str, Any]:
        self.plan_sessions()
        counts = self.counts()
        changeable = sorted(catalogue.CHANGEABLE)
        self.rng.shuffle(changeable)
        changed = changeable[: counts[6]]
        with_others = [s for s in changeable[counts[6] :] if "other" in phrases_en.FACTS[s]]
        shared = with_others[: (counts[7] + 1) // 2]
        if len(shared) < (counts[7] + 1) // 2:
            raise AssertionError(f"{self.user.sample_id}: too few slots left for category 7")
        hops = self.rng.sample(catalogue.MULTIHOP, counts[1])
        groups = {catalogue.MULTIHOP_GROUPS.get(h) for h in hops}
        static = [
            s
            for s in [*catalogue.STATIC, *(s for s in changeable if s not in changed + shared)]
            if catalogue.STATIC.get(s, {}).get("group") not in groups - {None}
        ]
        for slot in changed:
            self.changed_fact(slot)
        for number, slot in enumerate(shared):
            one_sided = counts[7] % 2 == 1 and number == len(shared) - 1
            self.shared_fact(slot, one_sided=one_sided)
        for slot in self.rng.sample(static, counts[4]):
            self.single_fact(slot)
        for event in self.rng.sample(catalogue.EVENTS, counts[2]):
            self.dated_event(event)
        for hop in hops:
            self.multi_hop(hop)
        self.fill()
        return self.render()

    def slot_value(self, slot: str) -> tuple[str, ...] | str:
        if slot == "partner":
            return self.take_name()
        spec = catalogue.CHANGEABLE.get(slot) or catalogue.STATIC[slot]
        return self.take_value(spec)

    def single_fact(self, slot: str) -> None:
        session = self.rng.randrange(len(self.sessions))
        lang = self.languages[session]
        value = self.slot_value(slot)
        key = self.say(
            session, self.pick(PHRASES[lang].FACTS[slot]["state"]), v=self.form(value, lang)
        )
        qlang = self.question_language(lang)
        text = self.ask(PHRASES[qlang].FACTS[slot]["ask"])
        self.questions.append(Question(text, self.form(value, lang), [key], 4, {"slot": slot}))

    def changed_fact(self, slot: str) -> None:
        first = self.rng.randrange(max(1, len(self.sessions) // 2))
        later = self.rng.randrange(first + 2, len(self.sessions))
        old, new = self.slot_value(slot), self.slot_value(slot)
        lang_old, lang_new = self.languages[first], self.languages[later]
        old_key = self.say(
            first, self.pick(PHRASES[lang_old].FACTS[slot]["state"]), v=self.form(old, lang_old)
        )
        new_key = self.say(
            later,
            self.pick(PHRASES[lang_new].FACTS[slot]["change"]),
            v=self.form(new, lang_new),
            old=self.form(old, lang_new),
        )
        qlang = self.question_language(lang_new)
        text = self.ask(PHRASES[qlang].FACTS[slot]["ask"])
        extra = {"slot": slot, "superseded": [old_key], "previous_answer": self.form(old, lang_old)}
        self.questions.append(Question(text, self.form(new, lang_new), [new_key], 6, extra))

    def shared_fact(self, slot: str, *, one_sided: bool) -> None:
        """The user's value and another person's value of one slot, each a distractor for the
        other's question."""
        relation = self.rng.choice(
            [r for r in catalogue.RELATIONS if r[0] not in self.used_relations]
        )
        self.used_relations.add(relation[0])
        name = self.take_name(relation[2])
        mine, theirs = self.slot_value(slot), self.slot_value(slot)
        own_session = self.rng.randrange(len(self.sessions))
        other_session = self.rng.randrange(len(self.sessions))
        lang, other_lang = self.languages[own_session], self.languages[other_session]
        own_key = self.say(
            own_session, self.pick(PHRASES[lang].FACTS[slot]["state"]), v=self.form(mine, lang)
        )
        other_key = self.say(
            other_session,
            self.pick(PHRASES[other_lang].FACTS[slot]["other"]),
            v=self.form(theirs, other_lang),
            name=name,
            rel=self.relation(relation, name, other_lang),
        )
        sides = [self.rng.choice(["own", "other"])] if one_sided else ["own", "other"]
        if "own" in sides:
            qlang = self.question_language(lang)
            text = self.ask(PHRASES[qlang].FACTS[slot]["ask"])
            extra = {"slot": slot, "distractors": [other_key]}
            self.questions.append(Question(text, self.form(mine, lang), [own_key], 7, extra))
        if "other" in sides:
            qlang = self.question_language(other_lang)
            text = self.ask(
                PHRASES[qlang].FACTS[slot]["ask_other"],
                name=name,
                rel=self.relation(relation, name, qlang),
            )
            extra = {"slot": slot, "distractors": [own_key]}
            self.questions.append(
                Question(text, self.form(theirs, other_lang), [other_key], 7, extra)
            )

    def dated_event(self, event: str) -> None:
        session = self.rng.randrange(len(self.sessions))
        lang = self.languages[session]
        if event == "trip":
            value: tuple[str, ...] | None = self.take_value(catalogue.CHANGEABLE["city"])
        elif event in catalogue.EVENT_VALUES:
            pools = {"any": catalogue.EVENT_VALUES[event], **catalogue.EVENT_POOLS.get(event, {})}
            value = self.take_value(pools)
        else:
            value = None
        when = self.rng.choice(sorted(phrases_en.WHEN))
        slots = {"when": PHRASES[lang].WHEN[when]}
        if value is not None:
            slots["v"] = self.form(value, lang)
        key = self.say(session, self.pick(PHRASES[lang].EVENTS[event]["state"]), **slots)
        qlang = self.question_language(lang)
        asked = {"v": self.form(value, qlang)} if value is not None else {}
        text = self.ask(PHRASES[qlang].EVENTS[event]["ask"], **asked)
        answer = happened(self.dates[session][0], when, lang)
        self.questions.append(Question(text, answer, [key], 2, {"event": event}))

    def multi_hop(self, hop: str) -> None:
        first = self.rng.randrange(len(self.sessions) - 1)
        later = self.rng.randrange(first + 1, len(self.sessions))
        lang_a, lang_b = self.languages[first], self.languages[later]
        slots: dict[str, tuple[str, ...] | str] = {}
        if hop == "child":
            role = self.rng.choice(sorted(catalogue.CHILD_ROLES))
            slots["child"] = catalogue.CHILD_ROLES[role]
            slots["name"] = self.take_name("m" if role == "son" else "f")
        elif hop == "pet":
            slots["species"] = self.rng.choice(catalogue.PET_SPECIES)
            pet_names = {
                "zh": catalogue.PET_NAMES_ZH,
                "zh+terms": catalogue.PET_NAMES_ZH,
                "es": catalogue.PET_NAMES_ES,
            }
            slots["name"] = self.rng.choice(pet_names.get(self.user.mode, catalogue.PET_NAMES))
        elif hop == "trip_friend":
            slots["city"] = self.take_value(catalogue.CHANGEABLE["city"])
            month = (self.dates[first][0].month - 1 + self.rng.randint(1, 3)) % 12
            slots["month"] = catalogue.MONTHS[month]
            slots["name"] = self.take_name()
        elif hop == "doctor":
            pool = self.user.pool if self.user.pool in catalogue.DOCTOR_NAMES else "west"
            slots["name"] = self.rng.choice(catalogue.DOCTOR_NAMES[pool])
        else:
            slots["name"] = self.take_name()
        value = (
            None
            if hop == "trip_friend"
            else self.take_value({"any": catalogue.MULTIHOP_VALUES[hop]})
        )

        def filled(lang: str) -> dict[str, str]:
            out = {k: self.form(v, lang) for k, v in slots.items()}
            if value is not None:
                out["v"] = self.form(value, lang)
            return out

        key_a = self.say(first, self.pick(PHRASES[lang_a].MULTIHOP[hop]["a"]), **filled(lang_a))
        key_b = self.say(later, self.pick(PHRASES[lang_b].MULTIHOP[hop]["b"]), **filled(lang_b))
        qlang = self.question_language(lang_b)
        asked = {k: v for k, v in filled(qlang).items() if k in ("child", "species", "month")}
        text = self.ask(PHRASES[qlang].MULTIHOP[hop]["ask"], **asked)
        answer = str(slots["name"]) if value is None else self.form(value, lang_b)
        self.questions.append(Question(text, answer, [key_a, key_b], 1, {"hop": hop}))

    # --- filler and output ---------------------------------------------------------------

    def followup(self, lang: str) -> tuple[str, str]:
        """A generic reply ("Thanks, that helps"), dealt from a deck so they rotate."""
        deck = self.followups.setdefault(lang, [])
        if not deck:
            deck.extend(PHRASES[lang].FOLLOWUPS)
            self.rng.shuffle(deck)
        return deck.pop()

    def fill(self) -> None:
        """Add help-seeking exchanges without facts until the conversation reaches its target
        length (or runs out of them: none is asked twice), shortest sessions first, then
        shuffle each session."""
        decks: dict[str, list[list[str]]] = {}
        for lang in sorted(set(self.languages)):
            cards = list(PHRASES[lang].FILLERS)
            if lang == "zh" and self.user.mode == "zh+terms":
                cards += phrases_zh.FILLERS_MIXED
            self.rng.shuffle(cards)
            decks[lang] = cards

        def size(session: list[Exchange]) -> int:
            return sum(2 * len(e.pairs) for e in session)

        target = self.rng.randint(*TURNS)
        while sum(size(s) for s in self.sessions) < target:
            open_ = [i for i, lang in enumerate(self.languages) if decks[lang]]
            if not open_:
                break
            index = min(
                self.rng.sample(open_, min(3, len(open_))), key=lambda i: size(self.sessions[i])
            )
            lang = self.languages[index]
            turns = decks[lang].pop()
            exchange = Exchange(
                [(self.mixed(turns[i]), turns[i + 1]) for i in range(0, len(turns), 2)]
            )
            if self.rng.random() < 0.15:
                exchange.pairs.append(self.followup(lang))
            self.sessions[index].append(exchange)
        for index, session in enumerate(self.sessions):
            self.rng.shuffle(session)
            if self.rng.random() < 0.35:
                session.insert(
                    0, Exchange([self.rng.choice(PHRASES[self.languages[index]].GREETINGS)])
                )

    def render(self) -> dict[str, Any]:
        conversation: dict[str, object] = {"speaker_a": self.user.name, "speaker_b": "Assistant"}
        ids: dict[str, str] = {}
        for number, (session, (_, stamp)) in enumerate(
            zip(self.sessions, self.dates, strict=True), 1
        ):
            turns = []
            for exchange in session:
                if exchange.key is not None:
                    ids[exchange.key] = f"D{number}:{len(turns) + 1}"
                for user_text, assistant_text in exchange.pairs:
                    for speaker, text in (
                        (self.user.name, user_text),
                        ("Assistant", assistant_text),
                    ):
                        turns.append(
                            {
                                "speaker": speaker,
                                "dia_id": f"D{number}:{len(turns) + 1}",
                                "text": text,
                            }
                        )
            conversation[f"session_{number}_date_time"] = stamp
            conversation[f"session_{number}"] = turns
        self.rng.shuffle(self.questions)
        qa = []
        for q in self.questions:
            entry: dict[str, object] = {
                "question": q.text,
                "answer": q.answer,
                "evidence": [ids[k] for k in q.evidence],
                "category": q.category,
            }
            for name, value in q.extra.items():
                keyed = name in ("superseded", "distractors")
                entry[name] = [ids[k] for k in value] if keyed else value
            qa.append(entry)
        return {
            "sample_id": f"dialogues-{self.user.sample_id}",
            "conversation": conversation,
            "qa": qa,
        }


#: How a temporal answer writes a date, and "the weekend/week before" a date, by language.
DATES: dict[str, Callable[[date], str]] = {
    "en": lambda d: f"{d.day} {MONTH_NAMES[d.month - 1]} {d.year}",
    "zh": lambda d: f"{d.year}年{d.month}月{d.day}日",
    "es": lambda d: f"{d.day} de {catalogue.MONTHS_ES[d.month - 1]} de {d.year}",
}
BEFORE = {
    "en": {"weekend": "the weekend before {}", "last_week": "the week before {}"},
    "zh": {"weekend": "{}之前的那个周末", "last_week": "{}的前一周"},
    "es": {"weekend": "el fin de semana anterior al {}", "last_week": "la semana anterior al {}"},
}


def happened(day: date, when: str, lang: str) -> str:
    """The date a relative expression said in a session on ``day`` points at."""
    fmt = DATES[lang]
    if when in BEFORE[lang]:
        return BEFORE[lang][when].format(fmt(day))
    if when == "saturday":  # the last Saturday before the session day
        return fmt(day - timedelta(days=(day.weekday() - 5) % 7 or 7))
    return fmt(day - timedelta(days={"today": 0, "yesterday": 1, "two_days": 2}[when]))


def generate(seed: str = SEED) -> list[dict[str, Any]]:
    samples = []
    for user in USERS:
        sample = Builder(user, random.Random(f"{seed}:{user.sample_id}")).build()
        conversation: dict[str, Any] = sample["conversation"]
        turns = sum(len(v) for k, v in conversation.items() if k[-1].isdigit())
        if not 150 <= turns <= 300:
            raise AssertionError(f"{user.sample_id}: {turns} turns, outside 150-300")
        samples.append(sample)
    return samples


def dump(samples: list[dict[str, Any]]) -> str:
    return json.dumps(samples, ensure_ascii=False, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="where the JSON goes")
    parser.add_argument("--seed", default=SEED, help="change it only to make a different set")
    args = parser.parse_args(argv)
    args.out.write_text(dump(generate(args.seed)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

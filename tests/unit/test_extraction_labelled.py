"""The offline rules measured on labelled sets: what users say about themselves, labelled
with the facts a careful reader would keep, and sentences that state nothing about the user.

Written as users phrase things, not as the rules match them: some of it the rules miss, and
the figures say how much. A fact counts as found when its key is labelled and its text holds
the labelled value; anything else it produces is a false fact. A third measure uses the
project's dialogues set (``datasets/dialogues``, written earlier for retrieval, where facts are
mentioned in passing inside requests): the turns that state one of the kinds of fact the rules
look for, and the turns where someone else's fact of that kind is stated.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent_memory.formation.rules import extract_rules

#: (what the user said, {fact key: what the fact's text must hold})
LABELLED: list[tuple[str, dict[str, str]]] = [
    # allergies
    ("I am allergic to peanuts.", {"allergy:peanuts": "peanuts"}),
    (
        "I'm allergic to shellfish and eggs",
        {"allergy:shellfish": "shellfish", "allergy:eggs": "eggs"},
    ),
    (
        "Just so you know, I'm severely allergic to penicillin.",
        {"allergy:penicillin": "penicillin"},
    ),
    ("I have a peanut allergy", {"allergy:peanut": "peanut"}),
    ("I have an allergy to cats, so no hotels with pets please.", {"allergy:cats": "cats"}),
    ("Please remember that I'm allergic to bee stings.", {"allergy:bee_stings": "bee stings"}),
    ("Peanuts give me hives.", {"allergy:peanuts": "peanuts"}),
    ("I can't have dairy, it makes me ill.", {"avoids:dairy": "dairy"}),
    ("我对花生过敏。", {"allergy:花生": "花生"}),
    ("我对猫毛和尘螨过敏", {"allergy:猫毛": "猫毛", "allergy:尘螨": "尘螨"}),
    ("我海鲜过敏，点菜的时候注意一下。", {"allergy:海鲜": "海鲜"}),
    # health conditions
    ("I have type 1 diabetes.", {"condition:diabetes": "diabetes"}),
    ("I'm asthmatic, so keep me away from smokers.", {"condition:asthmatic": "asthmatic"}),
    ("I suffer from migraines.", {"condition:migraines": "migraines"}),
    ("I'm lactose intolerant", {"condition:lactose_intolerant": "lactose intolerant"}),
    ("I was diagnosed with celiac disease last year.", {"condition:celiac_disease": "celiac"}),
    ("I have high blood pressure", {"condition:high_blood_pressure": "high blood pressure"}),
    ("I'm hard of hearing, please write things down.", {"condition:hard_of_hearing": "hearing"}),
    ("I live with epilepsy.", {"condition:epilepsy": "epilepsy"}),
    ("我有糖尿病。", {"condition:糖尿病": "糖尿病"}),
    ("我患有哮喘，不能去烟多的地方。", {"condition:哮喘": "哮喘"}),
    # diets
    ("I'm vegetarian.", {"preference:diet": "vegetarian"}),
    ("I only eat halal food.", {"diet:halal": "halal"}),
    ("I keep kosher.", {"diet:kosher": "kosher"}),
    ("I'm gluten-free.", {"diet:gluten_free": "gluten-free"}),
    ("I don't eat pork.", {"avoids:pork": "pork"}),
    ("I never drink alcohol.", {"avoids:alcohol": "alcohol"}),
    ("I'm pescatarian", {"preference:diet": "pescatarian"}),
    ("Since last year I've been vegan.", {"preference:diet": "vegan"}),
    ("我吃素。", {"preference:饮食": "素食"}),
    ("我不吃猪肉。", {"avoids:猪肉": "猪肉"}),
    ("我只吃清真的。", {"diet:清真": "清真"}),
    # work
    (
        "I work as a data engineer at Farfetch.",
        {"occupation": "data engineer", "employer": "Farfetch"},
    ),
    ("I work at Google.", {"employer": "Google"}),
    ("I work for the BBC in London.", {"employer": "BBC"}),
    ("I'm a nurse at St Mary's Hospital.", {"occupation": "nurse", "employer": "St Mary"}),
    ("I'm a software engineer.", {"occupation": "software engineer"}),
    ("I'm employed by Deutsche Bank.", {"employer": "Deutsche Bank"}),
    ("I'm the CTO of Acme Robotics.", {"employer": "Acme Robotics"}),
    ("I've been working at Shopify for two years.", {"employer": "Shopify"}),
    ("I teach maths at a primary school.", {"occupation": "teacher"}),
    ("我在腾讯公司工作。", {"employer": "腾讯"}),
    ("我就职于华为。", {"employer": "华为"}),
    ("我是一名医生。", {"occupation": "医生"}),
    ("我在阿里巴巴上班。", {"employer": "阿里巴巴"}),
    # school
    ("I study law at Leiden University.", {"school": "Leiden University"}),
    ("I'm a student at MIT.", {"school": "MIT", "occupation": "student"}),
    ("I'm a PhD student at ETH Zurich.", {"school": "ETH Zurich", "occupation": "PhD student"}),
    ("I go to Lincoln High School.", {"school": "Lincoln High School"}),
    ("I'm in my second year at Oxford.", {"school": "Oxford"}),
    ("我在北京大学读书。", {"school": "北京大学"}),
    ("我是复旦大学的研究生。", {"school": "复旦大学", "occupation": "研究生"}),
    # languages
    (
        "I speak English, French and a little German.",
        {"language:english": "English", "language:french": "French", "language:german": "German"},
    ),
    ("I'm fluent in Spanish.", {"language:spanish": "Spanish"}),
    ("My native language is Portuguese.", {"language:portuguese": "Portuguese"}),
    ("Mandarin is my first language.", {"language:mandarin": "Mandarin"}),
    ("I grew up speaking Italian at home.", {"language:italian": "Italian"}),
    ("我会说粤语。", {"language:粤语": "粤语"}),
    ("我会说英语和日语。", {"language:英语": "英语", "language:日语": "日语"}),
    # birthdays and age
    ("My birthday is on March 3rd.", {"birthday": "March 3rd"}),
    ("My birthday is the 14th of July.", {"birthday": "14th of July"}),
    ("I was born on 12 June 1985.", {"birthday": "12 June 1985"}),
    ("I was born in 1990.", {"birth_year": "1990"}),
    ("My birthday's next Tuesday, the 9th of May.", {"birthday": "9th of May"}),
    ("I'm 34 years old.", {"age": "34"}),
    ("我的生日是5月20日。", {"birthday": "5月20日"}),
    ("我今年二十八岁。", {"age": "28"}),
    # pets
    ("I have a dog named Rex.", {"pet:dog:rex": "Rex"}),
    ("My cat Luna hates the vet.", {"pet:cat:luna": "Luna"}),
    ("My dog's name is Biscuit.", {"pet:dog:biscuit": "Biscuit"}),
    ("I have two cats.", {"pet:cat": "two cats"}),
    ("We have a golden retriever called Max.", {"pet:retriever:max": "Max"}),
    ("我养了一只猫，叫咪咪。", {"pet:猫:咪咪": "咪咪"}),
    ("我的狗叫旺财。", {"pet:狗:旺财": "旺财"}),
    # family
    ("My wife's name is Maria.", {"family:wife": "Maria"}),
    ("My son Tom starts school in September.", {"family:son:tom": "Tom"}),
    ("My sister is called Ana.", {"family:sister:ana": "Ana"}),
    ("I'm married to Paul.", {"family:spouse": "Paul"}),
    ("My mum, Linda, is visiting next week.", {"family:mum": "Linda"}),
    ("Our daughter Emma is three.", {"family:daughter:emma": "Emma"}),
    ("我老婆叫小红。", {"family:老婆": "小红"}),
    ("我女儿的名字是小美。", {"family:女儿:小美": "小美"}),
    # the profile's fields, for comparison
    ("My name is Ana and I live in Lisbon.", {"user_name": "Ana", "home": "Lisbon"}),
    ("我叫小明，住在上海。", {"user_name": "小明"}),
]

#: Sentences that state nothing lasting about the user: no fact at all may come from them.
NOTHING: list[str] = [
    # questions
    "Am I allergic to peanuts?",
    "What should someone with a peanut allergy avoid?",
    "Do I speak French well enough for Paris?",
    "Is there a vegetarian option?",
    "Can I bring my dog to the hotel?",
    "Where do I work again?",
    "我对花生过敏吗？",
    "你会说英语吗？",
    "我在哪里工作？",
    # negations
    "I'm not allergic to anything.",
    "I'm not allergic to cats, just dogs' hair bothers me sometimes.",
    "I don't have any allergies.",
    "I no longer work at Google.",
    "I don't speak French.",
    "I don't have a dog.",
    "I used to work at Deloitte.",
    "我对什么都不过敏。",
    "我不会说法语。",
    "我没有养宠物。",
    # hypotheticals and hedges
    "If I were allergic to peanuts, what could I eat?",
    "Imagine I'm allergic to cats: which hotel then?",
    "I might be allergic to penicillin, I need a test.",
    "I think I'm allergic to cats.",
    "Maybe I'll work at Google one day.",
    "I'd love to speak Japanese.",
    "Suppose I have diabetes, is this cake OK?",
    "如果我对花生过敏怎么办？",
    "我可能对猫过敏。",
    # other people's facts
    "My friend is allergic to cats.",
    "My wife is allergic to peanuts.",
    "She works at Google.",
    "My brother speaks fluent Spanish.",
    "My colleague has diabetes.",
    "My neighbour has a dog named Rex.",
    "我朋友对猫过敏。",
    "我儿子对花生过敏。",
    "我爸有糖尿病。",
    "他在腾讯公司工作。",
    # look alike, say nothing lasting
    "I work at home on Fridays.",
    "I go to Paris every summer.",
    "I have a dog allergy question for the vet.",
    "I have a question about diabetes.",
    "I'm a big fan of Arsenal.",
    "I'm a regular at Starbucks.",
    "I'm a good cook.",
    "I have anxiety about tomorrow's exam.",
    "I speak to my boss every day.",
    "my wife is called away to work a lot.",
    "I was born in March.",
    "我在北京工作。",
    "我妈叫我回家吃饭。",
    "我在图书馆读书。",
    "我三岁的时候去过北京。",
    "我是5月20日来的。",
]


#: Written after the rules above were settled and measured once, never tuned on (by the same
#: author, who knew the rules: an independent set would likely score lower).
HELD_OUT: list[tuple[str, dict[str, str]]] = [
    ("Heads up: I'm allergic to latex.", {"allergy:latex": "latex"}),
    ("Shellfish allergy here, so no paella for me.", {"allergy:shellfish": "shellfish"}),
    ("I'm really allergic to wasps.", {"allergy:wasps": "wasps"}),
    ("I've got asthma.", {"condition:asthma": "asthma"}),
    ("I'm diabetic, type 2.", {"condition:diabetic": "diabetic"}),
    ("I am colour blind, so describe charts in words.", {"condition:colour_blind": "colour blind"}),
    ("I'm vegan these days.", {"preference:diet": "vegan"}),
    ("I'm on a low-carb diet.", {"diet:low_carb": "low-carb"}),
    ("No beef for me, I don't eat beef.", {"avoids:beef": "beef"}),
    ("I work at Siemens as an electrical engineer.", {"employer": "Siemens"}),
    ("I'm an accountant at KPMG.", {"occupation": "accountant", "employer": "KPMG"}),
    ("These days I work for Spotify.", {"employer": "Spotify"}),
    ("I'm a teacher.", {"occupation": "teacher"}),
    ("I'm studying medicine at Charité.", {"school": "Charité"}),
    ("I attend Columbia University.", {"school": "Columbia University"}),
    ("I speak Dutch and English.", {"language:dutch": "Dutch", "language:english": "English"}),
    ("I'm a native Greek speaker.", {"language:greek": "Greek"}),
    ("I speak some Arabic.", {"language:arabic": "Arabic"}),
    ("My birthday is December 24.", {"birthday": "December 24"}),
    ("I was born in Naples.", {"birthplace": "Naples"}),
    ("I just turned 40.", {"age": "40"}),
    ("I have a rabbit called Snowy.", {"pet:rabbit:snowy": "Snowy"}),
    ("My parrot, Kiwi, talks all day.", {"pet:parrot:kiwi": "Kiwi"}),
    ("My husband is named David.", {"family:husband": "David"}),
    ("My daughter's name is Sofia.", {"family:daughter:sofia": "Sofia"}),
    ("My brother Luke lives in Leeds.", {"family:brother:luke": "Luke"}),
    ("我对青霉素过敏。", {"allergy:青霉素": "青霉素"}),
    ("我有高血压。", {"condition:高血压": "高血压"}),
    ("我不吃辣。", {"avoids:辣": "辣"}),
    ("我在招商银行工作。", {"employer": "招商银行"}),
    ("我在浙江大学上学。", {"school": "浙江大学"}),
    ("我会说一点法语。", {"language:法语": "法语"}),
    ("我的生日是十月一号。", {"birthday": "十月一号"}),
    ("我家有两只猫。", {"pet:猫": "猫"}),
    ("我老公叫阿杰。", {"family:老公": "阿杰"}),
    ("我哥哥叫李强。", {"family:哥哥:李强": "李强"}),
]
#: Sentences of the held-out set that state nothing about the user.
HELD_OUT_NOTHING: list[str] = [
    "Are you allergic to anything?",
    "I'm not diabetic, just careful.",
    "My dad has asthma.",
    "If I work at Google next year, will you remember?",
    "I'd like to learn Spanish.",
    "My boss speaks German.",
    "I have a meeting at Google tomorrow.",
    "I work at night mostly.",
    "Does my son need a visa?",
    "My sister's dog is called Rex.",
    "我不会说日语。",
    "她对花生过敏。",
    "我在家工作。",
    "我想养一只猫。",
    "你的生日是几月几号？",
]


#: Text the user asks for, quotes or acts out states nothing about them (issue 35 review): a
#: story, a translation, a line to say, a role to play.
ABOUT_TEXT: list[str] = [
    "Write a story where I work at Google.",
    "Write a story where I work at Google",
    "Translate: I am allergic to peanuts",
    "Translate into French: I am allergic to peanuts. I live in Lisbon.",
    'Translate "I am allergic to peanuts" into Spanish.',
    "Say 'I live in Paris'",
    "Say I live in Paris.",
    'He wrote "My name is Bob" on the board.',
    "My favourite line is “I'm allergic to cats”.",
    "Imagine my name is Carl.",
    "Let's pretend I live in Rome.",
    "Write an email saying I work at Google and I'm allergic to peanuts.",
    "Please draft a cover letter: I work as a data engineer at Farfetch.",
    "Roleplay: my name is Zed and I have a dog named Rex.",
    "Quote: I speak French.",
    "I want you to write a poem where I'm vegetarian.",
    "Tell me a story where I was born in Naples.",
    "Repeat after me: I'm 34 years old.",
    "Ok, now compose a limerick in which my wife's name is Maria.",
    "翻译：我对花生过敏。",
    "请翻译“我叫小明”",
    "写一个故事，我在腾讯公司工作。",
    "假装我叫小明。",
    "他说「我住在北京」。",
    "帮我翻译一下：我会说粤语。",
]
#: The user's own words around a request or a quote still count.
OWN_WORDS_AROUND: list[tuple[str, dict[str, str]]] = [
    ("I work at Google. Write me an email to my boss.", {"employer": "Google"}),
    ("Write down that I'm allergic to peanuts.", {"allergy:peanuts": "peanuts"}),
    ('My name is Ana, say "hi" to Bob for me.', {"user_name": "Ana"}),
    ("Could you help me write a toast? I have a dog named Rex.", {"pet:dog:rex": "Rex"}),
    ("I'm a writer at the BBC.", {"occupation": "writer", "employer": "BBC"}),
    ("I said I'm allergic to cats!", {"allergy:cats": "cats"}),
    ("I'm at Mary's until 5, I live in Leeds.", {"home": "Leeds"}),
    ("我对花生过敏，帮我写一封邮件。", {"allergy:花生": "花生"}),
]


def _found(text: str) -> dict[str, str]:
    return {
        fact.key or fact.content: fact.content for fact in extract_rules([("user", text)]).facts
    }


def measure(labelled: list[tuple[str, dict[str, str]]], nothing: list[str]) -> dict[str, float]:
    """Precision and recall of the rules' facts (the sentences that state nothing can only
    add false facts)."""
    right = wrong = missed = 0
    for text, labels in labelled:
        found = _found(text)
        for key, content in found.items():
            if key in labels and labels[key] in content:
                right += 1
            else:
                wrong += 1
        missed += sum(
            1 for key, value in labels.items() if not (key in found and value in found[key])
        )
    wrong += sum(len(_found(text)) for text in nothing)
    return {
        "facts": right + missed,
        "found": right,
        "false": wrong,
        "precision": right / (right + wrong),
        "recall": right / (right + missed),
    }


def test_precision_and_recall_on_the_labelled_sets(capsys: pytest.CaptureFixture[str]) -> None:
    sets = {
        "labelled": (LABELLED, NOTHING),
        "held out": (HELD_OUT, HELD_OUT_NOTHING),
        "both": (LABELLED + HELD_OUT, NOTHING + HELD_OUT_NOTHING),
    }
    figures = {name: measure(*data) for name, data in sets.items()}
    with capsys.disabled():
        for name, f in figures.items():
            print(
                f"\noffline rules, {name}: {f['found']} of {f['facts']} facts, {f['false']} "
                f"false; precision {f['precision']:.3f}, recall {f['recall']:.3f}",
                end="",
            )
        print()
    # Measured 2026-11: labelled 1.000 / 0.895 (95 facts), held out 1.000 / 0.974 (38). The
    # bounds leave room for a sentence or two, not for a new kind of mistake.
    assert figures["both"]["precision"] >= 0.97
    assert figures["both"]["recall"] >= 0.85
    assert figures["held out"]["recall"] >= 0.85


DIALOGUES = Path(__file__).resolve().parents[2] / "datasets" / "dialogues" / "dialogues.json"
#: The dialogues set's slots that are kinds of fact the rules look for.
SLOTS = {
    "allergy",
    "birthday",
    "condition",
    "diet",
    "employer",
    "job",
    "language",
    "partner",
    "pet",
}


def _holds(answer: str, facts: list[str]) -> bool:
    words = [w for w in answer.casefold().split() if w not in ("a", "an", "the", "diet")]
    return any(all(w in fact.casefold() for w in words) for fact in facts)


def _about_the_user(question: str, user: str) -> bool:
    if user in question or re.search(r"\bI\b|pays my salary", question):
        return True
    return re.match(r"我(?!哥|姐|弟|妹|闺蜜|表|堂|朋友|同事|爸|妈|老婆|老公)", question) is not None


def _facts(text: str) -> list[str]:
    return [fact.content for fact in extract_rules([("user", text)]).facts]


def measure_dialogues() -> dict[str, int]:
    """The user's own facts found in the turns that state them (category 4 and 6 questions),
    and other people's facts taken as the user's (the turns category 7 asks about someone
    else, and the distractors of its questions about the user)."""
    counts = {"stated": 0, "found": 0, "others": 0, "taken": 0}
    for conversation in json.loads(DIALOGUES.read_text(encoding="utf-8")):
        talk = conversation["conversation"]
        turns = {
            turn["dia_id"]: turn["text"]
            for key, session in talk.items()
            if key.startswith("session_") and isinstance(session, list)
            for turn in session
        }

        for qa in conversation["qa"]:
            if qa.get("slot") not in SLOTS:
                continue
            answer = str(qa["answer"])
            if qa["category"] in (4, 6):
                for turn in qa["evidence"]:
                    counts["stated"] += 1
                    counts["found"] += _holds(answer, _facts(turns[turn]))
            elif qa["category"] == 7:
                mine = _about_the_user(qa["question"], talk["speaker_a"])
                for turn in qa.get("distractors", []) if mine else qa["evidence"]:
                    counts["others"] += 1
                    counts["taken"] += _holds(answer, _facts(turns[turn]))
    return counts


def test_on_the_dialogues_set_no_one_elses_fact_becomes_the_users(
    capsys: pytest.CaptureFixture[str],
) -> None:
    counts = measure_dialogues()
    with capsys.disabled():
        print(
            f"\noffline rules, dialogues set: {counts['found']} of {counts['stated']} stated "
            f"facts found (recall {counts['found'] / counts['stated']:.3f}); "
            f"{counts['taken']} of {counts['others']} other people's facts taken as the user's"
        )
    assert counts["taken"] == 0 and counts["others"] >= 30
    # Measured 2026-11: 53 of 94 (0.564); the rules before this set caught 6.
    assert counts["found"] >= 45


@pytest.mark.parametrize("text", NOTHING + HELD_OUT_NOTHING)
def test_a_sentence_that_states_nothing_about_the_user_gives_no_fact(text: str) -> None:
    result = extract_rules([("user", text)])
    assert result.facts == [] and result.profile == {}


@pytest.mark.parametrize(
    ("text", "key", "content"),
    [
        ("I am allergic to peanuts", "allergy:peanuts", "The user is allergic to peanuts."),
        ("I work as a data engineer at Farfetch", "employer", "The user works at Farfetch."),
        ("I have a peanut allergy", "allergy:peanut", "The user has a peanut allergy."),
        ("我对花生过敏", "allergy:花生", "用户对花生过敏。"),
        ("我在腾讯公司工作", "employer", "用户在腾讯公司工作。"),
    ],
)
def test_the_issues_examples_become_facts(text: str, key: str, content: str) -> None:
    facts = {fact.key: fact for fact in extract_rules([("user", text)]).facts}
    assert facts[key].content == content and facts[key].memory_type == "fact"


def test_a_later_statement_of_a_keyed_fact_wins() -> None:
    said = [("user", "I work at Google."), ("user", "I work at Farfetch now.")]
    employers = [f.content for f in extract_rules(said).facts if f.key == "employer"]
    assert employers == ["The user works at Farfetch."]


@pytest.mark.parametrize("text", ABOUT_TEXT)
def test_text_asked_for_quoted_or_acted_out_gives_no_fact(text: str) -> None:
    result = extract_rules([("user", text)])
    assert result.facts == [] and result.profile == {}


@pytest.mark.parametrize(("text", "labels"), OWN_WORDS_AROUND)
def test_the_users_own_words_around_a_request_or_a_quote_still_count(
    text: str, labels: dict[str, str]
) -> None:
    found = _found(text)
    assert found.keys() == labels.keys(), found
    assert all(labels[key] in found[key] for key in labels)

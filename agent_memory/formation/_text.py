"""What the offline extractor's rules share: sentences and clauses, questions, names.

Text is split into sentences at end punctuation and into clauses at commas, semicolons and
dashes (Western and Chinese). A clause *asks* when it ends a sentence with a question mark, when it
has a Chinese question word or ends with 吗, or when it opens with an English question word or
an auxiliary before "I" ("do I", "am I", "can I"): nothing a clause asks is taken as a fact.

Only the user's own words state facts (:func:`own_words`): quoted text ("...", “...”, 'say
"I live in Paris"', 「...」) and a request to produce or act out text (write, translate, say,
quote, pretend, imagine... and their Chinese forms: 写, 翻译, 假装...) from the request to the
end of its sentence, or of the whole message when a colon introduces the text ("Translate: I am
allergic to peanuts."), are left out before any rule reads the text.

Every capture is bounded: a word of a name, a place or an organisation has at most
:data:`LONGEST_WORD` characters (a longer run of letters is no such word, so nothing is taken
from it), and a capture has a few words at most, so a fact the rules make is a short sentence
whatever the text (:data:`LONGEST_FACT`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "CJK",
    "EN_QUESTION_WORDS",
    "LATIN_NAME",
    "LONGEST_FACT",
    "LONGEST_WORD",
    "NOT_NAMES",
    "WORD",
    "ZH_ASKING",
    "Clause",
    "chinese_name",
    "clauses",
    "is_chinese",
    "own_words",
    "sentence_clauses",
    "sentences",
]

CJK = "\u3400-\u4dbf\u4e00-\u9fff"
#: Characters of the longest word a name, a place or an organisation is taken from (German
#: compounds and the longest surnames stay under 40).
LONGEST_WORD = 40
#: Characters of the longest fact the rules make; one longer is not a fact (never reached
#: with the bounded captures, kept as the rules' promise to :class:`Fact`, which takes 8,000).
LONGEST_FACT = 400
#: A word of a name or a place: letters, digits, apostrophes and hyphens after a letter, the
#: whole word (not the first :data:`LONGEST_WORD` characters of a longer one).
WORD = rf"[^\W\d_][\w'’-]{{0,{LONGEST_WORD - 1}}}(?![\w'’-])"
#: A Latin name in Chinese text (我叫Tom), the whole word.
LATIN_NAME = rf"[A-Za-z][A-Za-z'-]{{0,{LONGEST_WORD - 1}}}(?![A-Za-z'-])"
_SENTENCE = re.compile(r"(?<=[。！？!?\n])|(?<=\.)(?=\s|$)")
_CLAUSE = re.compile(r"[。！？；;!?\n，,]+|\.(?=\s|$)|\s[—–]\s|—|——")
_ASKED = re.compile(r"[?？]\s*$")
ZH_ASKING = re.compile(r"什么|啥|谁|哪|几[个岁时点]|怎么|多少|吗\s*$")
EN_QUESTION_WORDS = frozenset("what who whom whose which where when why how".split())
_EN_ASKING = re.compile(
    r"^\s*(?i:what|who|whom|whose|which|where|when|why|how"
    r"|(?:am|do|did|does|can|could|would|should|will|was|have|had|shall|may|might)\s+I\b"
    r"|(?:is|was|are|were)\s+my\b)\b"
)
#: Capitalised words that follow "I'm" or "call me" without being a name.
NOT_NAMES = frozenset(
    "a an the not so just here there sure sorry fine good ok okay back later tomorrow tonight now "
    "going trying looking planning thinking currently also still really very actually when if at "
    "on in by from with to for of whatever anything maybe please glad happy tired hungry new "
    "english american british chinese french german spanish italian japanese korean canadian "
    "australian indian european asian vegan vegetarian single married retired and or but i".split()
)
# Characters that end a Chinese name (particles, time words, verbs that usually follow a name).
_ZH_NAME_END = re.compile(r"[的是在今来住从想要喜吃不和呢吧啊呀哦就也都还下请我你他她了]")
_ZH_NOT_NAME_START = frozenset("了过着个一")


@dataclass(slots=True)
class Clause:
    """A clause of a sentence: where it starts and ends in the sentence, and whether it asks."""

    text: str
    start: int
    end: int
    asks: bool = False


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (end punctuation kept with its sentence)."""
    return [sentence for sentence in _SENTENCE.split(text) if sentence.strip()]


def sentence_clauses(sentence: str) -> list[Clause]:
    """The clauses of one sentence, with their positions in it."""
    found: list[Clause] = []
    start = 0
    for delimiter in [*_CLAUSE.finditer(sentence), None]:
        end = delimiter.start() if delimiter else len(sentence)
        raw = sentence[start:end]
        if raw.strip():
            lead = len(raw) - len(raw.lstrip())
            text = raw.strip()
            found.append(Clause(text, start + lead, start + lead + len(text)))
        start = delimiter.end() if delimiter else len(sentence)
    asked = bool(_ASKED.search(sentence))
    for position, clause in enumerate(found):
        clause.asks = (asked and position == len(found) - 1) or bool(
            ZH_ASKING.search(clause.text) or _EN_ASKING.search(clause.text)
        )
    return found


def clauses(text: str) -> list[tuple[str, bool]]:
    """The clauses of ``text``, each with whether it asks a question."""
    return [
        (clause.text, clause.asks)
        for sentence in sentences(text)
        for clause in sentence_clauses(sentence)
    ]


# --- the user's own words -------------------------------------------------------------------------

#: Quoted passages, up to their closing quote (or the end of the line when none closes them).
#: A straight quote opens only where no word or digit is just before it (5'10" is no quote) and
#: a single one only before a letter (the '90s is none); a single closing quote is one no
#: letter follows, so the apostrophes in "I'm" and "Mary's" neither open nor close.
_QUOTED = re.compile(
    r"(?<![\w])\"[^\"\n]*(?:\"|$)"
    r"|“[^”\n]*(?:”|$)|„[^“”\n]*(?:[“”]|$)|«[^»\n]*(?:»|$)"
    r"|‘[^\n]*?(?:’(?!\w)|$)|(?<![\w])'(?=[^\W\d_])[^\n]*?(?:'(?!\w)|$)"
    r"|「[^」\n]*(?:」|$)|『[^』\n]*(?:』|$)|《[^》\n]*(?:》|$)",
    re.M,
)
#: What a left-out passage becomes: no rule matches it, and it ends a list of items.
_GAP = " … "
#: A clause that asks for text to be written, translated, said or acted out: its verb first,
#: after "please", "can you", "I want you to", "let's"... ("write down" and "note" are asks to
#: remember, which state the fact).
_EN_REQUEST = re.compile(
    r"(?:(?:please|pls|ok|okay|so|now|then|and|hey|also|just)\b[\s,]*)*"
    r"(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:help\s+me\s+)?"
    r"|I\s+(?:want|need|would\s+like|['’]d\s+like)\s+you\s+to\s+"
    r"|help\s+me\s+(?:to\s+)?|let\s+us\s+|let['’]?s\s+|go\s+ahead\s+and\s+)?"
    r"(?:write(?!\s+(?:it\s+|that\s+|this\s+)?down\b)|rewrite|draft|compose|translate|say|"
    r"repeat|quote|recite|pretend|imagine|suppose|assume|role-?play|act\s+as\s+if|act\s+like|"
    r"paraphrase|summari[sz]e|proofread|polish|generate|make\s+up|spell|echo|sing|"
    r"(?:continue|complete|finish)\s+(?:the|this|my)\s+(?:story|sentence|text|poem|letter)|"
    r"tell\s+(?:me\s+|us\s+)?(?:a|an|another)\s+(?:story|joke|tale)|"
    r"(?:reply|respond|answer)\s+with)\b",
    re.I,
)
_ZH_REQUEST = re.compile(
    r"(?:请|麻烦你?|你?(?:能不能|可不可以|能|可以)|帮我|给我|我(?:想|要)你)*"
    r"(?:写|翻译|译成|改写|重写|润色|假装|想象|假设|扮演|模仿|复述|说一句|造句|编一?个|讲一?个故事)"
)
_ENDING = " \t\n。！？!?."


def own_words(text: str) -> str:
    """``text`` with what the user does not state in their own words left out: quoted
    passages, and requests to write, translate, say, quote or act out text (see the module),
    each replaced by a gap no rule reads; what the user states around them is kept.
    """
    text = _QUOTED.sub(_GAP, text)
    kept: list[str] = []
    for sentence in _SENTENCE.split(text):  # every piece, so what is kept reads as it was
        request = next(
            (
                clause
                for clause in sentence_clauses(sentence)
                if _EN_REQUEST.match(clause.text) or _ZH_REQUEST.match(clause.text)
            ),
            None,
        )
        if request is None:
            kept.append(sentence)
            continue
        asked = sentence[request.start :]
        ending = asked[len(asked.rstrip(_ENDING)) :]  # the sentence still ends as it did
        kept.append(sentence[: request.start] + _GAP + ending)
        if re.search("[:：]", asked):  # "Translate: ..." - the rest of the message is the text
            break
    return "".join(kept)


def is_chinese(text: str) -> bool:
    return re.search(f"[{CJK}]", text) is not None


def chinese_name(raw: str) -> str | None:
    """A Chinese (or Latin) name from the characters after 叫 or 是, cut at the first particle;
    ``None`` when what is left is too short or asks."""
    if re.fullmatch(r"[A-Za-z][A-Za-z'-]*", raw):
        return raw if len(raw) <= LONGEST_WORD else None
    cut = _ZH_NAME_END.search(raw)
    name = raw[: cut.start()] if cut else raw
    if len(name) < 2 or name[0] in _ZH_NOT_NAME_START or ZH_ASKING.search(raw):
        return None
    return name

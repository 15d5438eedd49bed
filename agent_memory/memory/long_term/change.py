"""Whether a text announces a change in the speaker's life: "I've moved to Lisbon", "the new
car arrived", "I no longer eat meat", "我现在在银行上班", "ya no fumo", "ich bin umgezogen".

A memory that announces a change likely updates an older memory about the same thing (where
the user lives, their job, their diet). When such a memory is stored, the older memories
consolidation finds nearest to it (:mod:`.consolidation`) are kept with it as the memories it
likely updates (``updates``), and :meth:`LongTermMemory.retrieve
<agent_memory.memory.long_term.memory.LongTermMemory.retrieve>` ranks it above them when both
answer a question about the present.

The words are read in English, Chinese, Japanese, Spanish, German and French: words of
novelty and replacement ("new", "now", "switched", "no longer"), of moving, of starting and
quitting. It is a hint, not a judgement: "a new recipe" is not a change of anything stored,
which is why the link is only acted on between memories that are nearest neighbours of each
other and both found for the same question.
"""

from __future__ import annotations

import re

__all__ = ["tells_change"]

_FLAGS = re.IGNORECASE | re.UNICODE
_B = r"(?<![\w'’])"  # a word starts here (letters of every script count as word characters)
_E = r"(?![\w])"

# Languages that separate words with spaces: whole words (or a word's start, with \w*).
_WORDS = (
    # English
    r"now|nowadays|these days|currently|new|newly|brand[- ]new|switch(?:ed|ing)? (?:to|over)"
    r"|switched|moved|relocated|no longer|not any ?more|anymore|used to|instead of|replaced"
    r"|changed|quit|gave up|given up|left my|started (?:a|my|at|as|working)|update"
    r"|got (?:a|my) new|since (?:last|moving|then)|finally|instead|stopped|took up|taken up"
    r"|joined|sold|traded(?: in)?|bought|handed in|enrolled|signed up|just got"
    r"|first (?:day|week|month|year) (?:as|at|in)"
    # Spanish
    r"|ahora|actualmente|nuev[oa]s?|me mud[ée]|mudado|mudamos|cambi[ée]|he cambiado|ya no"
    r"|dej[ée] (?:de|el|la|mi)|empec[ée]|desde hace|compr[ée]|vend[íi]|me apunt[ée]|me inscrib[íi]"
    # German
    r"|jetzt|inzwischen|mittlerweile|neu(?:e[mnrs]?)?|umgezogen|gewechselt|nicht mehr"
    r"|aufgeh[öo]rt|angefangen|seit kurzem|gekündigt|gekauft|verkauft|angemeldet"
    # French
    r"|maintenant|désormais|actuellement|nouve(?:au|aux|l|lle|lles)|déménagé|changé"
    r"|ne \w+ plus|n'\w+ plus|arrêté|commencé|depuis peu|acheté|vendu|inscrit"
)
_SPACED = re.compile(_B + r"(?:" + _WORDS + r")" + _E, _FLAGS)
# Chinese and Japanese: no spaces between words, so substrings.
_CJK = re.compile(
    # Chinese
    r"现在|如今|目前|最近开始|新的|新买|新找|新工作|新家|改成|改为|改了|换了|换成|搬到|搬家|搬去"
    r"|不再|不.{1,4}了|已经不|辞职|辞掉|离职|开始|以前是|戒了|卖了|买了|入手|加入|报名|新来"
    # Japanese
    r"|今は|今では|最近は|新しい|新しく|新車|引っ越|変えた|変わった|辞めた|やめた|転職|始めた"
    r"|もう.{0,6}ない|買った|売った|入った"
)


def tells_change(text: str) -> bool:
    """Whether ``text`` announces a change (a new state replacing an older one)."""
    if not isinstance(text, str) or not text:
        return False
    return _SPACED.search(text) is not None or _CJK.search(text) is not None

"""Counts and question/evidence word overlap of a LoCoMo-format file, as a markdown block.

::

    python datasets/dialogues/stats.py                      # print the block for dialogues.json
    python datasets/dialogues/stats.py --write-readme       # refresh it in README.md
    python datasets/dialogues/stats.py --overlap OTHER.json # overlap of any LoCoMo-format file

Overlap of a question is the share of its content words that also occur in its evidence turns:
English words lowercased with stop words removed, Chinese as character bigrams (a bigram of
two function characters such as 我们 or 什么 is dropped). Mixed text yields both kinds. The
Spanish conversations' words are lowercased with their accents and without Spanish stop words.
A low figure means the question is asked in other words than the turn that answers it.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATASET = HERE / "dialogues.json"
README = HERE / "README.md"
START, END = "<!-- stats:start -->", "<!-- stats:end -->"
CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    4: "single fact, paraphrased",
    6: "changed fact",
    7: "other people",
}
GROUPS = {"en": "English", "zh": "Chinese", "mix": "mixed", "es": "Spanish"}

# NLTK's English list.
STOP_WORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which who
    whom this that these those am is are was were be been being have has had having do does did
    doing a an the and but if or because as until while of at by for with about against between
    into through during before after above below to from up down in out on off over under again
    further then once here there when where why how all any both each few more most other some
    such no nor not only own same so than too very s t can will just don should now d ll m o re
    ve y""".split()
)
# Articles, prepositions, conjunctions, pronouns, question words and the commonest forms of
# "ser", "estar" and "haber".
SPANISH_STOP_WORDS = frozenset(
    """a al algo alguien ante aquel aquella aquí así como con contra cuál cuáles cuando cuándo
    cuánto cuánta cuántos cómo de del desde donde dónde durante e el ella ellas ellos en entre era
    eres es esa esas ese eso esos esta estaba estar estas este esto estos está están estás estoy
    fue ha haber había han has hasta hay he la las le les lo los me mi mis mucho muy más mía mío
    nada ni no nos nosotros nuestra nuestro o os otra otras otro otros para pero poco por porque
    qué que quién quiénes se ser si sin sobre somos son soy su sus suya suyo sí también tan te ti
    toda todas todo todos tras tu tus tuya tuyo tú u un una unas uno unos usted vosotros y ya yo
    él""".split()
)
FUNCTION_CHARS = frozenset("的了吗呢吧啊呀么我你他她它们是在有这那个和也都就还很要会什哪谁怎样")
_WORD = re.compile(r"[a-z0-9]+")
_SPANISH_WORD = re.compile(r"[a-z0-9áéíóúüñ]+")
_HAN = re.compile(r"[\u4e00-\u9fff]+")


def content_tokens(text: str, language: str = "en") -> set[str]:
    """English (or, for ``language="es"``, Spanish) content words and Chinese character bigrams
    of ``text``."""
    if language == "es":
        words = {w for w in _SPANISH_WORD.findall(text.lower()) if w not in SPANISH_STOP_WORDS}
    else:
        words = {w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS}
    bigrams = {
        run[i : i + 2]
        for run in _HAN.findall(text)
        for i in range(len(run) - 1)
        if not (run[i] in FUNCTION_CHARS and run[i + 1] in FUNCTION_CHARS)
    }
    return words | bigrams


def overlap(question: str, evidence: list[str], language: str = "en") -> float | None:
    """Share of the question's content tokens found in the evidence (None if it has none)."""
    asked = content_tokens(question, language)
    if not asked:
        return None
    found = set().union(*(content_tokens(t, language) for t in evidence))
    return len(asked & found) / len(asked)


def group_of(sample_id: str) -> str:
    for key in GROUPS:
        if f"-{key}-" in f"-{sample_id}":
            return key
    return "other"


def turns_by_id(sample: dict[str, Any]) -> dict[str, str]:
    conversation = sample["conversation"]
    return {
        turn["dia_id"]: turn["text"]
        for key, value in conversation.items()
        if re.fullmatch(r"session_\d+", key)
        for turn in value
    }


def measure(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts and mean overlap by conversation language and by category."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    shares: dict[tuple[str, Any], list[float]] = defaultdict(list)
    for sample in samples:
        group = group_of(str(sample.get("sample_id", "")))
        turns = turns_by_id(sample)
        conversation = sample["conversation"]
        counts[group]["conversations"] += 1
        counts[group]["sessions"] += sum(1 for k in conversation if re.fullmatch(r"session_\d+", k))
        counts[group]["turns"] += len(turns)
        for qa in sample["qa"]:
            evidence = [turns[i] for i in qa.get("evidence", []) if i in turns]
            counts[group][f"cat{qa['category']}"] += 1
            counts[group]["questions"] += 1
            language = "es" if group == "es" else "en"
            share = overlap(qa["question"], evidence, language) if evidence else None
            if share is not None:
                for key in ((group, None), (group, qa["category"]), ("all", None)):
                    shares[key].append(share)
                shares[("all", qa["category"])].append(share)
    mean = {key: sum(v) / len(v) for key, v in shares.items()}
    return {"counts": counts, "overlap": mean}


def render(samples: list[dict[str, Any]]) -> str:
    result = measure(samples)
    counts, mean = result["counts"], result["overlap"]
    groups = [g for g in GROUPS if g in counts]
    header = "| | " + " | ".join(GROUPS[g] for g in groups) + " | all |"
    rule = "|---|" + "---:|" * (len(groups) + 1)

    def row(label: str, cell: Any) -> str:
        return f"| {label} | " + " | ".join(cell(g) for g in [*groups, "all"]) + " |"

    def total(key: str) -> Any:
        return lambda g: str(sum(counts[x][key] for x in groups) if g == "all" else counts[g][key])

    def share(category: int | None) -> Any:
        return lambda g: f"{mean[(g, category)]:.3f}" if (g, category) in mean else "–"

    lines = [START, "", header, rule]
    lines += [row(key, total(key)) for key in ("conversations", "sessions", "turns", "questions")]
    lines += [
        row(f"questions, cat {c} ({name})", total(f"cat{c}")) for c, name in CATEGORY_NAMES.items()
    ]
    lines += [
        "",
        "Mean question/evidence overlap (share of the question's content words or Chinese "
        "bigrams found in its evidence turns):",
        "",
        header,
        rule,
        row("all questions", share(None)),
    ]
    lines += [row(f"cat {c} ({name})", share(c)) for c, name in CATEGORY_NAMES.items()]
    lines += ["", END]
    return "\n".join(lines)


def write_readme(block: str) -> None:
    text = README.read_text(encoding="utf-8")
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    README.write_text(head + block + tail, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--write-readme", action="store_true", help="refresh README.md's block")
    parser.add_argument("--overlap", type=Path, help="only print the mean overlap of this file")
    args = parser.parse_args(argv)
    if args.overlap:
        samples = json.loads(args.overlap.read_text(encoding="utf-8"))
        print(f"{measure(samples)['overlap'][('all', None)]:.3f}")
        return 0
    block = render(json.loads(args.dataset.read_text(encoding="utf-8")))
    if args.write_readme:
        write_readme(block)
    else:
        print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The demo's long-term memory part: hybrid search, ranking, supersede, tenants.

A few memories for two users, retrieved with hybrid search (vector and keyword, fused)
re-ranked by the full memory score, why each result ranked where it did, a changed fact
superseding the old one while history stays queryable, and one user's search never seeing
the other's memories. The memories stored here are the ones the feedback and decay parts
(:mod:`.demo_feedback`) work on afterwards.
"""

from __future__ import annotations

import re

from rich.markup import escape
from rich.table import Table

from agent_memory.cli._app import console, plural
from agent_memory.cli._runtime import Runtime
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import NewMemory, RetrievedMemory
from agent_memory.mongo.search.keywords import tokenize
from agent_memory.tenancy import Tenant

__all__ = [
    "AGENT",
    "ANSWER_TYPES",
    "MEMORIES",
    "how_found",
    "long_term_part",
    "ranking_table",
    "shared_words",
]

#: Every part of the demo works under this agent id, and starts by clearing what an earlier
#: run left under it, so reruns show the same thing.
AGENT = "demo-agent"
#: Instructions say how to answer, not what: they go with every prompt, and questions search
#: facts and preferences.
ANSWER_TYPES = ("fact", "preference")
MEMORIES = {
    "alice": [
        NewMemory(
            "Alice lives in Berlin and works as a nurse at the Charité hospital.", key="home"
        ),
        NewMemory("Alice prefers a window seat on long flights.", "preference"),
        NewMemory("Alice is vegetarian and avoids fish.", "preference"),
        NewMemory("Alice's sister Maria is getting married in Lisbon in June.", "fact"),
        NewMemory(
            "Keep answers to Alice short, with bullet points.", "instruction", importance=0.8
        ),
        NewMemory("小明是爱丽丝的同事，他喜欢喝绿茶。", "fact"),
    ],
    "bob": [
        NewMemory("Bob lives in Paris and drives a red bicycle to work.", key="home"),
        NewMemory("Bob prefers an aisle seat.", "preference"),
    ],
}
#: With the default (local) embedder each shows one way hybrid search finds a memory: a word in
#: common once stemmed ("flight", "flights"), the meaning with no word in common, the meaning
#: across languages, Chinese matched by character pairs, and another user's own memories.
QUESTIONS = [
    ("alice", "What should I book for her flight?"),
    ("alice", "Any dietary restrictions for dinner?"),
    ("alice", "Who drinks green tea?"),
    ("alice", "谁喜欢喝茶？"),
    ("bob", "Which seat does he like?"),
]
LEGEND = (
    "vector: rank (cosine similarity); keyword: BM25 rank, words stemmed, Chinese as character "
    "pairs, - for no word in common; score: the two fused, with recency, importance, utility"
)
_WORD = re.compile(r"\w+")


def ranking_table(title: str, hits: list[RetrievedMemory]) -> Table:
    """Each hit's rank in the vector and the keyword ranking and its fused score."""
    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column("#", justify="right")
    table.add_column("memory", overflow="fold")
    table.add_column("vector", justify="right")
    table.add_column("keyword", justify="right")
    table.add_column("score", justify="right")
    for position, hit in enumerate(hits, start=1):
        vector, text = hit.sources.get("vector"), hit.sources.get("text")
        status = "" if hit.memory.status == "active" else f" [dim]({hit.memory.status})[/]"
        table.add_row(
            str(position),
            escape(hit.memory.content) + status,
            f"#{vector.rank} ({vector.score:.2f})" if vector else "-",
            f"#{text.rank}" if text else "-",
            f"{hit.score:.3f}",
        )
    return table


def shared_words(question: str, content: str) -> list[str]:
    """The words of ``content`` the keyword ranking matched ``question`` on: a word whose stem
    the question has ("flights" for "flight"), or a Chinese character pair both contain."""
    wanted = set(tokenize(question))
    found: list[str] = []
    for word in _WORD.findall(content):
        terms = tokenize(word)
        matched = [word] if len(terms) == 1 and terms[0] in wanted else []
        if len(terms) > 1:  # a run of Chinese characters: its pairs
            matched = [term for term in terms if term in wanted]
        found += [term for term in matched if term not in found]
    return found


def how_found(question: str, hit: RetrievedMemory) -> str:
    """One line on which ranking found the first result, from its sources."""
    vector, text = hit.sources.get("vector"), hit.sources.get("text")
    words = ", ".join(shared_words(question, hit.memory.content))
    matched = f" (matched: {words})" if words else ""
    if vector and text:
        return f"#1 found both ways: vector #{vector.rank}, keyword #{text.rank}{matched}"
    if text:
        return f"#1 found by the keyword ranking alone: keyword #{text.rank}{matched}"
    if words:
        return f"#1 found by the vector ranking; the keyword ranking left it out{matched}"
    return "#1 found by the vector ranking alone: no word in common with the question"


async def long_term_part(rt: Runtime) -> None:
    # The demo's own agent id starts from a clean slate, so reruns show the same thing.
    memory = LongTermMemory(rt.connection, rt.embedder)
    for user in await memory.collection.distinct("user_id", {"agent_id": AGENT}):
        await memory.forget_user(Tenant(AGENT, user))
    try:
        for user, items in MEMORIES.items():
            await memory.store_many(Tenant(AGENT, user), items)
        console.print(
            f"stored {plural(sum(map(len, MEMORIES.values())), 'memory', 'memories')} for "
            f"{plural(len(MEMORIES), 'user')}\n"
        )
        console.print(f"[dim]{LEGEND}[/]")
        for user, question in QUESTIONS:
            hits = await memory.retrieve(
                Tenant(AGENT, user), question, k=3, memory_types=ANSWER_TYPES
            )
            console.print(ranking_table(f"{user}: {question}", hits))
            if hits:
                console.print(f"[dim]{escape(how_found(question, hits[0]))}[/]", highlight=False)
            others = {hit.memory.user_id for hit in hits} - {user}
            if others:  # never expected: it would mean a tenant leak
                raise RuntimeError(f"search for {user} returned memories of {others}")

        alice = Tenant(AGENT, "alice")
        moved = await memory.store(
            alice, "Alice moved to Lisbon to be near her sister.", key="home"
        )
        console.print(f"\nAlice moves: the new memory [bold]{moved.action}[/] the Berlin one.")
        now = await memory.retrieve(
            alice, "Which city does Alice live in?", k=1, memory_types=ANSWER_TYPES
        )
        # Memories and explanations are text, not markup ("... [keyword #1, vector #1]").
        console.print(f"where does she live now?  {now[0].memory.content}", markup=False)
        before = await memory.history(alice, key="home")
        console.print(
            "where did she live before?  "
            + " <- ".join(f"{m.content} ({m.status})" for m in before),
            markup=False,
        )
        console.print(
            f"why that answer ranked first: {now[0].explain(memory.config.ranking)}",
            markup=False,
        )
        rules = await memory.retrieve(alice, "how to answer", k=3, memory_types="instruction")
        console.print(
            "instructions applied to every answer: " + "; ".join(r.memory.content for r in rules),
            markup=False,
        )
        console.print("Every result came from the asking user's own memories.")
    finally:
        await memory.aclose()

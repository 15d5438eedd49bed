"""``agent-memory demo``: memory at work on the embedded default, offline.

First the agent: a user tells it about herself in one session, memories are formed from the
conversation by the formation worker (profile facts and notes), and in a new session, with an
empty short-term memory, the agent answers from what it remembers, showing how each turn was
routed and which memories went into the prompt.

Then long-term memory on its own: a few memories for two users, retrieved with hybrid search
(vector and keyword, fused) re-ranked by the full memory score, why each result ranked where
it did, a changed fact superseding the old one while history stays queryable, and one user's
search never seeing the other's memories.
"""

from __future__ import annotations

import time

import typer
from rich.markup import escape
from rich.table import Table

from agent_memory.agent.config import AgentConfig
from agent_memory.agent.rag_agent import RAGAgent, TurnResult
from agent_memory.cli._app import console, run
from agent_memory.cli._runtime import Runtime, open_runtime
from agent_memory.formation.worker import FormationWorker
from agent_memory.memory._common import Tenant
from agent_memory.memory.long_term import LongTermMemory
from agent_memory.memory.records import NewMemory, RetrievedMemory
from agent_memory.mongo.indexes import IndexManager

AGENT = "demo-agent"
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
QUESTIONS = [
    ("alice", "Where does she live and what is her job?"),
    ("alice", "What should I book for her flight?"),
    ("alice", "Any dietary restrictions for dinner?"),
    ("alice", "谁喜欢喝茶？"),
    ("bob", "Which seat does he like?"),
]


SESSION_1 = [
    "Hi! My name is Alice and I live in Berlin.",
    "I prefer the window seat on long flights.",
    "I am vegetarian, so no fish please.",
]
SESSION_2 = [
    "Which seat should I book for my flight?",
    "Where do I live?",
    "What is my name?",
]


def _turn(user: str, text: str, result: TurnResult) -> None:
    console.print(f"[bold]{user}:[/] {escape(text)}", highlight=False)
    console.print(f"[bold]agent:[/] {escape(result.answer)}", highlight=False)
    console.print(
        f"  [dim]route: {result.route.level} ({escape('; '.join(result.route.reasons))}); "
        f"{len(result.memory_ids)} memories and "
        f"{result.manifest.tokens.get('total', 0)} tokens in the prompt[/]",
        highlight=False,
    )


async def _agent_part(rt: Runtime) -> None:
    from agent_memory.providers.chat.offline import OfflineChatModel

    chat = OfflineChatModel()
    config = AgentConfig(AGENT, formation_debounce_s=0.0, run_formation_worker=False)
    async with RAGAgent(rt.connection, rt.embedder, chat, config=config) as agent:
        alice = Tenant(AGENT, "alice")
        for user in MEMORIES:  # a clean slate, so reruns show the same thing
            await agent.memories.forget_user(Tenant(AGENT, user))
        console.rule("session 1: Alice talks to the agent")
        for text in SESSION_1:
            _turn("alice", text, await agent.process_query("alice", "session-1", text))

        console.rule("memory formation (a worker, after the conversation goes quiet)")
        await agent.drain()
        worker = FormationWorker(agent.memories, chat, queue=agent.queue)
        while await worker.run_once():
            pass
        profile = await agent.memories.profiles.render(alice)
        console.print("profile:\n" + escape(profile), highlight=False)
        notes = await agent.memories.long_term.list_memories(alice)
        console.print(
            "long-term memories:\n" + "\n".join(f"- {escape(m.content)}" for m in notes),
            highlight=False,
        )

        console.rule("session 2: a new session, short-term memory empty")
        await agent.start_new_session("alice", "session-2")
        for text in SESSION_2:
            _turn("alice", text, await agent.process_query("alice", "session-2", text))
        bob = await agent.process_query("bob", "bob-session-1", "Where do I live?")
        console.print(
            f"[bold]bob:[/] Where do I live?\n[bold]agent:[/] {escape(bob.answer)}  "
            "[dim](Bob sees none of Alice's memories)[/]",
            highlight=False,
        )
        await agent.memories.forget_user(Tenant(AGENT, "bob"))


def _table(title: str, hits: list[RetrievedMemory]) -> Table:
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
            hit.memory.content + status,
            f"#{vector.rank} ({vector.score:.2f})" if vector else "-",
            f"#{text.rank}" if text else "-",
            f"{hit.score:.3f}",
        )
    return table


async def _reset(rt: Runtime) -> None:
    # The demo's own agent id starts from a clean slate, so reruns show the same thing.
    await rt.connection.collection("memories").delete_many({"agent_id": AGENT})


async def _demo() -> None:
    started = time.perf_counter()
    async with open_runtime() as rt:
        caps = rt.connection.capabilities
        console.rule("agent_memory demo")
        where = "embedded server (mongoeco on SQLite)" if caps.embedded else "MONGODB_URI"
        console.print(f"database: {where}, {caps.describe()}")
        console.print(f"embedder: {rt.embedder.signature.describe()}")
        console.print(f"search tier: [bold]{rt.connection.tier}[/]", highlight=False)

        states = await IndexManager(rt.connection, rt.embedder.signature).setup()
        created = sum(1 for state in states if state.state == "created")
        console.print(
            f"indexes: {created} created, {len(states) - created} already in place or not needed"
        )

        await _agent_part(rt)

        console.rule("long-term memory: hybrid search, ranking, supersede, tenants")
        await _reset(rt)
        memory = LongTermMemory(rt.connection, rt.embedder)
        try:
            for user, items in MEMORIES.items():
                await memory.store_many(Tenant(AGENT, user), items)
            console.print(
                f"stored {sum(map(len, MEMORIES.values()))} memories for {len(MEMORIES)} users\n"
            )

            # Instructions say how to answer, not what: they go with every prompt, and
            # questions search facts and preferences.
            answers = ("fact", "preference")
            for user, question in QUESTIONS:
                hits = await memory.retrieve(
                    Tenant(AGENT, user), question, k=3, memory_types=answers
                )
                console.print(_table(f"{user}: {question}", hits))
                others = {hit.memory.user_id for hit in hits} - {user}
                if others:  # never expected: it would mean a tenant leak
                    raise RuntimeError(f"search for {user} returned memories of {others}")

            alice = Tenant(AGENT, "alice")
            moved = await memory.store(
                alice, "Alice moved to Lisbon to be near her sister.", key="home"
            )
            console.print(f"\nAlice moves: the new memory [bold]{moved.action}[/] the Berlin one.")
            now = await memory.retrieve(
                alice, "Which city does Alice live in?", k=1, memory_types=answers
            )
            console.print(f"where does she live now?  {now[0].memory.content}")
            before = await memory.history(alice, key="home")
            console.print(
                "where did she live before?  "
                + " <- ".join(f"{m.content} ({m.status})" for m in before)
            )
            console.print(f"why that answer ranked first: {now[0].explain(memory.config.ranking)}")
            rules = await memory.retrieve(alice, "how to answer", k=3, memory_types="instruction")
            console.print(
                "instructions applied to every answer: "
                + "; ".join(r.memory.content for r in rules)
            )
        finally:
            await memory.aclose()
        console.print(
            f"\nEvery result came from the asking user's own memories. "
            f"Done in {time.perf_counter() - started:.1f} s."
        )
        if rt.connection.tier == "plain":
            console.print(
                "[dim]On Atlas (or atlas-local: docker compose up -d) the same calls run "
                "$vectorSearch and $search with the tenant pre-filter, fused by $rankFusion.[/]"
            )


def demo() -> None:
    """Store and retrieve memories on the embedded default (offline, under a minute)."""
    run(_demo)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)

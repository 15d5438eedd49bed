"""``agent-memory demo``: memory at work on the embedded default, offline.

Each part has a heading:

1. The agent: a user tells it about herself in one session, memories are formed from the
   conversation by the formation worker (profile facts and notes), and in a new session,
   with an empty short-term memory, the agent answers from what it remembers, showing how
   each turn was routed and which memories went into the prompt; another user sees none of it.
2. Long-term memory on its own (:mod:`.demo_long_term`): hybrid search with each result's
   ranks and fused score and which ranking found the first result, a changed fact superseding
   the old one, tenants kept apart.
3. Feedback (:mod:`.demo_feedback`): ratings credited to the memories of the rated turn's
   prompt change what the next question recalls.
4. Working memory (:mod:`.demo_working`): a task planned, checkpointed, interrupted mid-step
   and resumed from the checkpoint by a restarted worker.
5. Decay (:mod:`.demo_feedback`): memories unused for a month lose importance, once per period.

The demo works in a database of its own, the configured name with ``_demo`` after it
(``agent_memory_demo`` by default), on the same server or in the same data directory: its
users, its simulated dates (decay "45 days later") and its ratings never show in ``stats`` or
the console of the application's database. ``agent-memory demo --remove`` drops it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from agent_memory.agent.config import AgentConfig
from agent_memory.cli._app import console, fail, plural, run
from agent_memory.cli._runtime import Runtime, open_runtime
from agent_memory.cli.demo_feedback import decay_part, feedback_part
from agent_memory.cli.demo_long_term import AGENT, MEMORIES, long_term_part
from agent_memory.cli.demo_working import working_part
from agent_memory.config import Settings, load_settings
from agent_memory.formation.worker import FormationWorker
from agent_memory.mongo.capabilities import ATLAS_LOCAL
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.chat.offline import OfflineChatModel
from agent_memory.tenancy import Tenant

if TYPE_CHECKING:
    from agent_memory.agent.rag_agent import TurnResult

SESSION_1 = [
    "Hi! My name is Alice and I live in Berlin.",
    "I prefer the window seat on long flights.",
    "I am vegetarian, so no fish please.",
]
#: Put after the configured database's name to name the demo's own (at most 63 characters).
SUFFIX = "_demo"

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
        f"{plural(len(result.memory_ids), 'memory', 'memories')} and "
        f"{plural(result.manifest.tokens.get('total', 0), 'token')} in the prompt[/]",
        highlight=False,
    )


async def _agent_part(rt: Runtime, chat: OfflineChatModel) -> None:
    from agent_memory.agent.rag_agent import RAGAgent  # LangGraph: only when the demo runs

    config = AgentConfig(AGENT, formation_debounce_s=0.0, run_formation_worker=False)
    async with RAGAgent(rt.connection, rt.embedder, chat, config=config) as agent:
        alice = Tenant(AGENT, "alice")
        for user in MEMORIES:  # a clean slate, so reruns show the same thing
            await agent.memories.forget_user(Tenant(AGENT, user))
        console.print("[bold]session 1: Alice talks to the agent[/]")
        for text in SESSION_1:
            _turn("alice", text, await agent.process_query("alice", "session-1", text))

        console.print("\n[bold]memory formation (a worker, after the conversation goes quiet)[/]")
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

        console.print("\n[bold]session 2: a new session, short-term memory empty[/]")
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


def demo_database(settings: Settings) -> str:
    """The demo's own database: the configured one's name with ``_demo`` after it, so the
    demo never writes into the application's database."""
    return settings.database[: 63 - len(SUFFIX)] + SUFFIX


async def _demo() -> None:
    started = time.perf_counter()
    application = load_settings().database
    database = demo_database(load_settings())
    async with open_runtime(database=database) as rt:
        caps = rt.connection.capabilities
        console.rule("agent_memory demo")
        where = "embedded server (mongoeco on SQLite)" if caps.embedded else "MONGODB_URI"
        console.print(f"database: {where}, {escape(caps.describe())}", highlight=False)
        console.print(
            f"the demo's own database: {escape(database)} (the application's database is "
            "not touched)",
            highlight=False,
        )
        console.print(f"embedder: {rt.embedder.signature.describe()}", markup=False)
        console.print(f"search tier: [bold]{rt.connection.tier}[/]", highlight=False)

        states = await IndexManager(rt.connection, rt.embedder.signature).setup()
        created = sum(1 for state in states if state.state == "created")
        console.print(
            f"indexes: {created} created, {len(states) - created} already in place or not needed"
        )

        chat = OfflineChatModel()
        console.rule("1. the agent: session 1, memory formation, a new session")
        await _agent_part(rt, chat)
        console.rule("2. long-term memory: hybrid search, ranking, supersede, tenants")
        await long_term_part(rt)
        console.rule("3. feedback: a rating changes what is recalled")
        await feedback_part(rt, chat)
        console.rule("4. working memory: a task planned, checkpointed, interrupted, resumed")
        await working_part(rt)
        console.rule("5. decay: memories nobody uses lose importance")
        await decay_part(rt)
        console.print(f"\nDone in {time.perf_counter() - started:.1f} s.")
        if rt.connection.tier == "plain":
            console.print(
                f"[dim]On Atlas (or {escape(ATLAS_LOCAL)}) the same calls run $vectorSearch "
                "and $search with the tenant pre-filter, fused by $rankFusion.[/]",
                highlight=False,
            )
        console.print(_where_it_is(application, database), highlight=False, markup=False)


def _where_it_is(application: str, database: str) -> str:
    """The closing lines: where the demo's data is, how to look at it and to remove it."""
    return (
        f"The demo's data (its users, simulated dates and ratings) is in the database "
        f"{database}, not in {application}: `agent-memory stats` and the console show none "
        f"of it; `AGENT_MEMORY_DATABASE={database} agent-memory stats` (or console) shows "
        "it.\nRemove it with `agent-memory demo --remove`."
    )


async def _remove() -> None:
    from pymongo.errors import PyMongoError

    database = demo_database(load_settings())
    async with open_runtime(database=database) as rt:
        db = rt.connection.db
        try:
            # Connecting creates the database (the capability probe's empty collection):
            # only a stored document says the demo ran.
            names = await db.list_collection_names()
            ran = any([await db[name].find_one({}, {"_id": 1}) for name in names])
            await rt.connection.client.drop_database(database)
        except PyMongoError as exc:
            fail(f"could not drop the demo's database {database}: {type(exc).__name__}")
    if ran:
        console.print(f"removed the demo's database {database}", markup=False)
    else:
        console.print(f"no demo data in {database}: nothing to remove", markup=False)


def demo(
    remove: bool = typer.Option(
        False, "--remove", help="Drop the demo's database instead of running the demo."
    ),
) -> None:
    """Memory at work on the embedded default: recall across sessions, hybrid search,
    feedback, a resumed task, decay (offline, under a minute), in a database of its own
    (the configured name with _demo after it)."""
    run(_remove if remove else _demo)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)

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
(``agent_memory_demo`` by default; a name too long for that is cut and told apart by a hash of
the whole, so the demo's is never the application's), on the same server or in the same data
directory: its users, its simulated dates (decay "45 days later") and its ratings never show in
``stats`` or the console of the application's database. ``agent-memory demo --remove`` drops
it. Neither writes into nor drops a database that holds anything the demo did not write
(documents of another agent, another application's collections): such a database is not the
demo's, whatever its name.

On the Atlas tier the demo creates search indexes of its own in its database (six, or the
three vector ones where the cluster has no room for more), which count toward the cluster's
search-index limit (three on a free M0 cluster, ten on Flex) until ``demo --remove`` drops them:
it starts there only with ``--yes``, and says so first. If its indexes do not fit, it drops its
database again, so it holds none of the cluster's slots.
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from agent_memory.agent.config import AgentConfig
from agent_memory.cli._app import EXIT, console, fail, plural, run
from agent_memory.cli._runtime import Runtime, open_runtime
from agent_memory.cli.demo_feedback import decay_part, feedback_part
from agent_memory.cli.demo_long_term import AGENT, MEMORIES, long_term_part
from agent_memory.cli.demo_working import working_part
from agent_memory.config import Settings, load_settings
from agent_memory.errors import StorageError
from agent_memory.formation.worker import FormationWorker
from agent_memory.mongo.capabilities import ATLAS_LOCAL
from agent_memory.mongo.connection import META_COLLECTION
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


#: The longest database name the settings take.
LONGEST_NAME = 63


def demo_database(settings: Settings) -> str:
    """The demo's own database: the configured one's name with ``_demo`` after it, so the
    demo never writes into the application's database. A name too long for that is cut and
    followed by 8 hex digits of its hash: the result (58 characters) is shorter than any name
    that needed cutting, so it is never the application's, and two long names that share
    their start get two databases."""
    name = settings.database
    if len(name) + len(SUFFIX) <= LONGEST_NAME:
        return name + SUFFIX
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: LONGEST_NAME - len(SUFFIX) - 14]}_{digest}{SUFFIX}"


async def _foreign(rt: Runtime) -> str | None:
    """The first collection of the demo's database that holds something the demo did not
    write (a document of another agent, or without one: another application's), or ``None``.
    The meta collection (the embedder and layout records every connection may write) aside."""
    db = rt.connection.db
    meta = rt.connection.collection_name(META_COLLECTION)
    for name in sorted(await db.list_collection_names()):
        if name == meta or name.startswith("system."):
            continue
        if await db[name].find_one({"agent_id": {"$ne": AGENT}}, {"_id": 1}) is not None:
            return name
    return None


def _not_the_demos(database: str, collection: str, doing: str) -> str:
    return (
        f"the database {database} holds data the demo did not write (in {collection}): it is "
        f"not the demo's own database, so the demo {doing}"
    )


async def _drop(rt: Runtime) -> None:
    """Drop the demo's database; on Atlas its search indexes first, by name (a dropped
    collection's go with it, but a listing M0 refuses is not needed to drop one by name)."""
    from pymongo.errors import PyMongoError

    if rt.connection.tier == "atlas":
        catalog = IndexManager(rt.connection, rt.embedder.signature).catalog
        for spec in catalog.collections.values():
            for index in spec.search_indexes:
                try:
                    await rt.connection.collection(spec.name).drop_search_index(index.name)
                except PyMongoError:  # not there, or refused: the database's drop takes it
                    pass
    await rt.connection.client.drop_database(rt.connection.db.name)


def _atlas_note(database: str) -> str:
    return (
        f"on Atlas the demo creates search indexes of its own in {database} (6, or the 3 "
        "vector ones where the cluster has no room for more); they count toward the "
        "cluster's search-index limit (3 on a free M0 cluster, 10 on Flex) until "
        "`agent-memory demo --remove` drops them with the demo's database"
    )


async def _set_up(rt: Runtime, application: str) -> None:
    """The demo's indexes; on Atlas, where they do not fit, its database dropped again."""
    try:
        states = await IndexManager(rt.connection, rt.embedder.signature).setup()
    except StorageError as exc:
        if rt.connection.tier != "atlas":
            raise
        from pymongo.errors import PyMongoError

        try:
            await _drop(rt)
            dropped = "the demo dropped its database {} again, so it holds none of them"
        except PyMongoError:
            dropped = "`agent-memory demo --remove` drops what it made in {}"
        # The limit's own message advises `indexes setup`, which is the application's.
        limit = "search-index limit" in str(exc)
        cause = (
            "the cluster's search-index limit was reached (M0 free clusters allow 3, Flex "
            "clusters 10)"
            if limit
            else str(exc)
        )
        raise StorageError(
            f"the demo's search indexes could not be made ({cause}); "
            f"{dropped.format(rt.connection.db.name)}, and nothing of {application} was "
            "touched; run the demo on the embedded default (without MONGODB_URI)"
        ) from exc
    created = sum(1 for state in states if state.state == "created")
    console.print(
        f"indexes: {created} created, {len(states) - created} already in place or not needed"
    )


async def _demo(yes: bool) -> None:
    started = time.perf_counter()
    application = load_settings().database
    database = demo_database(load_settings())
    async with open_runtime(database=database) as rt:
        if (collection := await _foreign(rt)) is not None:
            fail(
                _not_the_demos(database, collection, "does not write into it")
                + "; run it with another AGENT_MEMORY_DATABASE (it works in that name with "
                "_demo after it)"
            )
        if rt.connection.tier == "atlas" and not yes:
            fail(
                f"{_atlas_note(database)}; run `agent-memory demo --yes` to go ahead, or "
                "run the demo on the embedded default (without MONGODB_URI)",
                EXIT["config"],
            )
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

        if rt.connection.tier == "atlas":
            console.print(f"search indexes: {_atlas_note(database)}", markup=False)
        await _set_up(rt, application)

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

    application = load_settings().database
    database = demo_database(load_settings())
    # Names that differ in case only are one database to MongoDB (it refuses the second).
    if database.casefold() == application.casefold():
        fail(f"the demo's database {database} is the application's: it is never dropped")
    async with open_runtime(database=database) as rt:
        db = rt.connection.db
        meta = rt.connection.collection_name(META_COLLECTION)
        try:
            if (collection := await _foreign(rt)) is not None:
                fail(_not_the_demos(database, collection, "does not drop it"))
            # Connecting creates the database (the capability probe's record in meta): only
            # a stored document elsewhere says the demo ran.
            names = [name for name in await db.list_collection_names() if name != meta]
            ran = any([await db[name].find_one({}, {"_id": 1}) for name in names])
            await _drop(rt)
        except PyMongoError as exc:
            fail(f"could not drop the demo's database {database}: {type(exc).__name__}")
        atlas = rt.connection.tier == "atlas"
    if ran:
        what = " and its search indexes" if atlas else ""
        console.print(f"removed the demo's database {database}{what}", markup=False)
    else:
        console.print(f"no demo data in {database}: nothing to remove", markup=False)


def demo(
    remove: bool = typer.Option(
        False, "--remove", help="Drop the demo's database instead of running the demo."
    ),
    yes: bool = typer.Option(
        False,
        "--yes",
        help="On Atlas, go ahead and create the demo's own search indexes (they count toward "
        "the cluster's limit until --remove).",
    ),
) -> None:
    """Memory at work on the embedded default: recall across sessions, hybrid search,
    feedback, a resumed task, decay (offline, under a minute), in a database of its own
    (the configured name with _demo after it)."""
    run(_remove if remove else lambda: _demo(yes))


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)

"""A memory service for any LangGraph agent (seed 001): debounced formation into the store.

A small LangGraph chatbot of its own (a ``StateGraph`` of three nodes, not the ``RAGAgent``)
keeps user memories in this framework through the LangGraph ``BaseStore`` API:

- ``recall``: ``store.aget(("memories", user, "User"), "profile")`` and
  ``store.asearch(("memories", user), query=...)`` (hybrid search, ranked by relevance,
  recency and importance), then the chat model answers from them;
- ``hand_off``: the turn is appended to the conversation memory and a formation job is
  scheduled on the durable ``FormationQueue``. Scheduling again while the job is pending only
  pushes it later (debounce), so a burst of messages is formed once, after the thread has
  been quiet for ``DEBOUNCE_S`` seconds, not once per message.

The memory service claims due jobs, extracts a profile patch, notes and facts from the
thread's unformed messages (``agent_memory.formation.extract``: rules offline, one structured
call to Claude in production) and writes them with ``store.abatch([PutOp...])`` under
``("memories", user, <schema>)``, namespaced by user and memory schema as in seed 001: its two
schemas, ``User`` (one profile, patched) and ``Note`` (notes, inserted), plus ``Fact``, this
recipe's own namespace for the extractor's atomic facts. A fact with a key (``home``)
supersedes the old value; history stays queryable. Notes and facts without a key are keyed by
the stretch of the thread they were formed from and their position in it, so a retry of a
failed formation puts the same keys and overwrites instead of adding copies.
Thread state is checkpointed in MongoDB (``MongoCheckpointer``), so two threads are two
conversations; what was formed in the first is recalled in the second.

Why not ``FormationWorker``: it forms memories into the ``RAGAgent``'s profile and long-term
memory, while ``MemoryStore`` shows a LangGraph agent only the items put through a store. The
service here writes through the store, so the graph sees exactly what was formed.

Runs on the embedded default with offline providers in a few seconds (1.5 of them waiting
for the debounce):

    . .venv/bin/activate    # once per shell: the virtual environment of README's quick start
    python recipes/langgraph_memory_service.py

Switching to production, with no code change: set ``MONGODB_URI`` to Atlas (or atlas-local
from docker-compose.yml) and run ``agent-memory indexes setup``; set
``AGENT_MEMORY_CHAT_MODEL=anthropic`` and ``ANTHROPIC_API_KEY`` for Claude (it then both
answers and extracts); set ``AGENT_MEMORY_EMBEDDER=voyage`` and ``VOYAGE_API_KEY`` for Voyage.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import structlog
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, PutOp

from agent_memory import (
    ChatModel,
    ChatRequest,
    IndexManager,
    MemoryStore,
    MemorySystem,
    Message,
    MongoCheckpointer,
    Tenant,
    connect,
    load_settings,
    make_chat_model,
    make_embedder,
)
from agent_memory.formation import Extraction, FormationQueue, Job, extract
from agent_memory.memory import ConversationMemory
from agent_memory.providers.chat import SystemPart

logger = structlog.get_logger(__name__)

AGENT = "langgraph-bot"
USER = "ada"
DEBOUNCE_S = 1.5
INSTRUCTIONS = (
    "You are a friendly assistant. Use what you remember about the user when it helps, and "
    "never invent facts about them."
)
THREAD_1 = [  # sent in quick succession: one formation job, not three
    "Hi! I'm Ada, and I live in Porto.",
    "I work as a translator.",
    "On long flights I prefer a window seat. I'm vegetarian.",
]
THREAD_2 = [
    "Which seat should I book for my flight to Oslo?",
    "Where do I live?",
    "What do I do for work?",
    "By the way, I moved: I live in Lisbon.",
]


@dataclass(frozen=True)
class Context:
    """What a run is for: the graph reads the user from here, never from the messages."""

    user_id: str


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    remembered: list[str]
    formation_job: str


def _profile_lines(profile: dict[str, Any]) -> list[str]:
    lines = []
    for field, value in profile.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items())
        lines.append(f"Profile, {field.replace('_', ' ')}: {value}")
    return lines


def build_graph(
    chat: ChatModel, conversation: ConversationMemory, queue: FormationQueue
) -> StateGraph:
    async def recall(state: State, runtime: Runtime[Context]) -> State:
        user, store = runtime.context.user_id, runtime.store
        assert store is not None
        question = state["messages"][-1].text
        profile = await store.aget(("memories", user, "User"), "profile")
        hits = await store.asearch(("memories", user), query=question, limit=4)
        lines = _profile_lines(profile.value) if profile else []
        lines += [hit.value["content"] for hit in hits if hit.namespace[-1] != "User"]
        return {"remembered": lines}

    async def respond(state: State) -> State:
        history = tuple(
            Message.user(m.text) if isinstance(m, HumanMessage) else Message.assistant(m.text)
            for m in state["messages"]
        )
        memory = "What you remember about the user:\n" + "\n".join(
            f"- {line}" for line in state.get("remembered") or ["(nothing yet)"]
        )
        request = ChatRequest(
            history, system=(SystemPart(INSTRUCTIONS, instructions=True), SystemPart(memory))
        )
        return {"messages": [AIMessage((await chat.generate(request)).text)]}

    async def hand_off(state: State, config: RunnableConfig, runtime: Runtime[Context]) -> State:
        # The user waits for two writes: the turn and the (debounced) job. Forming is later.
        tenant = Tenant(AGENT, runtime.context.user_id)
        thread = config["configurable"]["thread_id"]
        question, answer = state["messages"][-2:]
        await conversation.append_turn(
            tenant,
            thread,
            [
                {"role": "user", "content": question.text},
                {"role": "assistant", "content": answer.text},
            ],
        )
        return {"formation_job": await queue.schedule(tenant, thread)}

    graph = StateGraph(State, context_schema=Context)
    graph.add_node("recall", recall)
    graph.add_node("respond", respond)
    graph.add_node("hand_off", hand_off)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "respond")
    graph.add_edge("respond", "hand_off")
    graph.add_edge("hand_off", END)
    return graph


class MemoryService:
    """Forms memories of threads that went quiet, into the LangGraph store (seed 001)."""

    def __init__(
        self,
        queue: FormationQueue,
        conversation: ConversationMemory,
        store: BaseStore,
        chat: ChatModel,
    ) -> None:
        self.queue, self.conversation, self.store, self.chat = queue, conversation, store, chat
        self.runs: list[tuple[Job, int, Extraction]] = []
        self.formed = asyncio.Event()  # set after every formation run

    async def run_once(self) -> bool:
        job = await self.queue.claim("memory-service")
        if job is None:
            return False
        try:
            after = await self.queue.formed_through(job.tenant, job.session_id)
            new = await self.conversation.messages_after(job.tenant, job.session_id, after)
            profile_ns = ("memories", job.user_id, "User")
            current = await self.store.aget(profile_ns, "profile")
            extraction = await extract(self.chat, new, profile=current.value if current else None)
            # Keyed by where this stretch of the thread starts, not by job: a failed job may
            # be retried as the session's newer job (merged into it), which starts here too.
            origin = f"{job.session_id}@{after or 'start'}"
            await self.store.abatch(self._puts(job.user_id, extraction, current, origin))
            await self.queue.complete(job, messages_through=new[-1].seq if new else after)
        except Exception as exc:
            # Given back, retried with backoff. What abatch already put stays until the
            # retry, which re-forms the same stretch and overwrites it under the same keys.
            await self.queue.fail(job, exc)
            raise
        self.runs.append((job, len(new), extraction))
        self.formed.set()
        return True

    @staticmethod
    def _puts(user: str, extraction: Extraction, current: Any, origin: str) -> list[PutOp]:
        puts = []
        if extraction.profile:  # a patch: fields merged into the current profile
            profile = dict(current.value) if current else {}
            for field, value in extraction.profile.items():
                if value is None:
                    profile.pop(field, None)
                elif isinstance(value, dict) and isinstance(profile.get(field), dict):
                    profile[field] = {**profile[field], **value}
                else:
                    profile[field] = value
            puts.append(PutOp(("memories", user, "User"), "profile", profile))
        for number, note in enumerate(extraction.notes):
            key = f"note-{origin}-{number}"
            puts.append(PutOp(("memories", user, "Note"), key, note.model_dump(exclude_none=True)))
        for number, fact in enumerate(extraction.facts):
            key = fact.key or f"fact-{origin}-{number}"
            value = {"content": fact.content, "kind": fact.memory_type}
            puts.append(PutOp(("memories", user, "Fact"), key, value))
        return puts

    async def run_forever(self, stop: asyncio.Event, poll_s: float = 0.2) -> None:
        while not stop.is_set():
            try:
                worked = await self.run_once()
            except Exception as exc:  # the job was given back; keep serving the others
                logger.warning("memory_service_job_failed", error=type(exc).__name__)
                worked = False
            if not worked:
                try:
                    await asyncio.wait_for(stop.wait(), poll_s)
                except TimeoutError:
                    pass


def thread_of(thread: str) -> RunnableConfig:
    # The checkpointer's threads are per user: every config names the agent and the user.
    return {"configurable": {"thread_id": thread, "agent_id": AGENT, "user_id": USER}}


async def say(graph: Any, thread: str, text: str) -> State:
    config = thread_of(thread)
    state = await graph.ainvoke(
        {"messages": [HumanMessage(text)]}, config, context=Context(user_id=USER)
    )
    answer = state["messages"][-1].text.replace("\n", "\n       ")
    print(f"  {USER}: {text}\n  bot: {answer}")
    return state


async def main() -> None:
    started = time.perf_counter()
    # This recipe's data in a database of its own, one per embedder (vectors of two models
    # cannot be compared), unless AGENT_MEMORY_DATABASE (or .env) names one.
    if "database" not in (chosen := load_settings()).model_fields_set:
        os.environ["AGENT_MEMORY_DATABASE"] = f"recipe_langgraph_memory_service_{chosen.embedder}"
    settings = load_settings()
    embedder, chat = make_embedder(settings), make_chat_model(settings)
    async with await connect(settings) as conn:
        await IndexManager(conn, embedder.signature).setup()
        memories = MemorySystem(conn, embedder, chat_model=chat)
        queue = FormationQueue(conn, debounce_seconds=DEBOUNCE_S)
        checkpointer = MongoCheckpointer(conn)
        for holder in (queue, checkpointer):  # so forget_user erases them too
            memories.register_forgetter(holder.forget_user)
        tenant = Tenant(AGENT, USER)
        await memories.forget_user(tenant)  # start clean on every run

        store = MemoryStore(memories.long_term, agent_id=AGENT)
        graph = build_graph(chat, memories.conversation, queue).compile(
            checkpointer=checkpointer, store=store
        )
        service = MemoryService(queue, memories.conversation, store, chat)
        stop = asyncio.Event()
        running = asyncio.create_task(service.run_forever(stop))
        print(f"{conn.tier} tier, {embedder.signature.describe()}, chat: {chat.model}")
        try:
            print(f"\n== thread 1: three messages in quick succession (debounce {DEBOUNCE_S} s) ==")
            jobs = [(await say(graph, "thread-1", text))["formation_job"] for text in THREAD_1]
            last_message = time.perf_counter()
            pending = await queue.jobs(tenant, "thread-1")
            print(
                f"formation scheduled {len(jobs)} times -> {len(set(jobs))} job "
                f"({', '.join(f'{j.id}: {j.status}' for j in pending)}); "
                f"formation runs so far: {len(service.runs)}"
            )
            await asyncio.wait_for(service.formed.wait(), timeout=15)
            job, formed_from, extraction = service.runs[0]
            print(
                f"formation run 1 of job {job.id}, {time.perf_counter() - last_message:.1f} s "
                f"after the last message: {formed_from} messages -> profile fields "
                f"{sorted(extraction.profile)}, {len(extraction.notes)} notes, "
                f"{len(extraction.facts)} facts; formation runs in all: {len(service.runs)}"
            )

            print("\n== the store, as any LangGraph agent sees it ==")
            profile = await store.aget(("memories", USER, "User"), "profile")
            print(f"  get {profile.namespace} {profile.key!r}: {profile.value}")
            for item in await store.asearch(("memories", USER, "Fact"), limit=10):
                print(f"  {item.namespace} {item.key!r}: {item.value['content']}")

            print("\n== thread 2: a new conversation, recalled from the store ==")
            for text in THREAD_2:
                await say(graph, "thread-2", text)
            first = await graph.aget_state(thread_of("thread-1"))
            second = await graph.aget_state(thread_of("thread-2"))
            print(
                f"checkpointed threads: thread-1 has {len(first.values['messages'])} messages, "
                f"thread-2 has {len(second.values['messages'])}"
            )

            service.formed.clear()  # thread 2's burst: one more job, formed once it is quiet
            await asyncio.wait_for(service.formed.wait(), timeout=15)
            job, formed_from, _ = service.runs[-1]
            profile = await store.aget(("memories", USER, "User"), "profile")
            history = await store.ahistory(("memories", USER, "Fact"), "home")
            print(
                f"\nformation run {len(service.runs)} (job {job.id}, {job.session_id}, "
                f"{formed_from} messages): home is now {profile.value['home']}; the 'home' fact "
                "superseded, its history: " + " <- ".join(i.value["content"] for i in history)
            )
            print(
                f"formation runs in all: {len(service.runs)}, for "
                f"{len(THREAD_1) + len(THREAD_2)} user messages in two bursts"
            )
        finally:
            stop.set()
            await running
            await memories.aclose()
    await embedder.aclose()
    print(f"done in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    # The library never configures logging; an application decides what it wants to see.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main())

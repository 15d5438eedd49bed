"""RAGAgent: one turn of recall, route, assemble, generate and commit, orchestrated by LangGraph.

>>> async with RAGAgent(connection, embedder, chat, config=AgentConfig("support")) as agent:  # doctest: +SKIP
...     result = await agent.process_query("user-1", "session-1", "Which seat do I like?")
...     print(result.answer, result.action_id, result.memory_ids)

What the user waits for (DESIGN.md §3): recall (the conversation context concurrently with
the query embedding; then long-term, knowledge and instruction searches, reusing that one
embedding, concurrently with the active task and the profile: all five kept between turns
while their generation tokens stand, so their tokens are read in one command), assembling, the model (with a bounded
tool loop), and the commit: the turn's messages and its formation job (on the durable,
debounced queue) written concurrently, then one episodic record, so a success is never recorded
for a turn whose messages or job were lost. Memories are formed later by a worker; a summary
refresh, when due, runs after the reply.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

import numpy as np
import structlog
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StreamWriter

from agent_memory._log import get_logger
from agent_memory.agent.config import AgentConfig
from agent_memory.agent.mcp import McpServer, McpTools
from agent_memory.agent.prompt import (
    AssembledPrompt,
    Manifest,
    PromptInputs,
    RecalledItem,
    WindowMessage,
    assemble,
)
from agent_memory.agent.routing import Route, RoutingInput, route
from agent_memory.agent.tools import ToolBox
from agent_memory.checks import check_id, check_text
from agent_memory.errors import AgentMemoryError, InvalidInputError, NotFoundError
from agent_memory.formation.queue import FormationQueue
from agent_memory.formation.worker import FormationWorker
from agent_memory.memory.background import BackgroundWrites
from agent_memory.memory.conversation import ConversationContext, ConversationMessage, NewMessage
from agent_memory.memory.knowledge import KnowledgeHit
from agent_memory.memory.long_term import RetrievedMemory
from agent_memory.memory.system import MemorySystem
from agent_memory.memory.working import Task
from agent_memory.mongo.connection import Connection
from agent_memory.mongo.search.trust import asks
from agent_memory.providers.chat.base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    Message,
    ResponseComplete,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_memory.providers.embedders.base import Embedder
from agent_memory.providers.rerankers.base import Reranker
from agent_memory.tenancy import Tenant

__all__ = ["AnswerDelta", "RAGAgent", "TurnResult"]

logger = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class AnswerDelta:
    """A piece of the answer as the model produces it."""

    text: str


@dataclass(frozen=True, slots=True)
class TurnResult:
    answer: str
    action_id: str
    session_id: str
    route: Route
    manifest: Manifest
    memory_ids: tuple[str, ...]
    usage: Usage
    tool_calls: int = 0
    notes: tuple[str, ...] = ()
    offline: bool = False


class _State(TypedDict, total=False):
    turn: _Turn


@dataclass
class _Turn:
    """Everything one turn gathers on its way through the graph."""

    tenant: Tenant
    session_id: str
    query: str
    notes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    vector: np.ndarray | None = None
    context: ConversationContext | _EmptyContext | None = None
    tasks: list[Task] = field(default_factory=list)
    profile: str = ""
    memories: list[RetrievedMemory] = field(default_factory=list)
    instructions: list[RetrievedMemory] = field(default_factory=list)
    documents: list[KnowledgeHit] = field(default_factory=list)
    route: Route | None = None
    prompt: AssembledPrompt | None = None
    response: ChatResponse | None = None
    tool_messages: list[NewMessage] = field(default_factory=list)
    tool_memory_ids: list[str] = field(default_factory=list)
    tool_calls: int = 0
    task_id: str | None = None
    usage: Usage = field(default_factory=Usage)
    error: BaseException | None = None
    action_id: str = ""


#: How a memory that a newer one (ranked above it) likely updates is shown to the model.
EARLIER = "(earlier; a memory above updates it) "


def _recalled(hit: RetrievedMemory) -> str:
    """A recalled memory's text for the prompt: history marked as such, so the model answers
    with the current statement ("where do I live?") and can still tell what came before."""
    return f"{EARLIER}{hit.memory.content}" if hit.updated_by else hit.memory.content


def _add_usage(total: Usage, more: Usage) -> Usage:
    return Usage(
        total.input_tokens + more.input_tokens,
        total.output_tokens + more.output_tokens,
        total.cache_read_tokens + more.cache_read_tokens,
        total.cache_write_tokens + more.cache_write_tokens,
    )


class RAGAgent:
    """An agent with memory: the four memories and a knowledge base behind one LangGraph."""

    def __init__(
        self,
        connection: Connection,
        embedder: Embedder,
        chat_model: ChatModel,
        *,
        config: AgentConfig,
        memories: MemorySystem | None = None,
        formation_queue: FormationQueue | None = None,
        mcp_servers: Sequence[McpServer] = (),
        reranker: Reranker | None = None,
    ) -> None:
        self.connection = connection
        self.embedder = embedder
        self.chat_model = chat_model
        self.config = config
        self.memories = memories or MemorySystem.from_settings(
            connection, embedder, chat_model=chat_model, reranker=reranker
        )
        self.queue = formation_queue or FormationQueue(
            connection, debounce_seconds=config.formation_debounce_s
        )
        self.memories.register_forgetter(self.queue.forget_user)
        self._worker: FormationWorker | None = None
        self._background = BackgroundWrites(connection)
        self._mcp = McpTools(mcp_servers)
        self._routing = config.routing.for_embedder(embedder.strong_match_similarity)
        self._graph = self._build()

    # --- lifecycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> RAGAgent:
        self.start()
        try:
            await self._mcp.open()  # a required MCP server that is down fails here, not mid-turn
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def start(self) -> None:
        """Start the agent's formation worker (a background task of the running loop)."""
        if self.config.run_formation_worker and self._worker is None:
            self._worker = FormationWorker(
                self.memories,
                self.chat_model,
                queue=self.queue,
                concurrency=self.config.formation_concurrency,
            )
            self._worker.start()

    async def aclose(self) -> None:
        """Stop the worker and wait for writes nobody waited for. Idempotent."""
        if self._worker is not None:
            await self._worker.aclose()
            self._worker = None
        await self._background.drain()
        await self._mcp.aclose()
        await self.memories.aclose()

    async def drain(self) -> None:
        """Wait for the background work of finished turns (scheduling memory formation,
        refreshing summaries, memory access statistics)."""
        await self._background.drain()
        await self.memories.long_term.drain()

    async def start_new_session(self, user_id: str, session_id: str) -> None:
        """Start a session with an empty short-term memory; long-term memory is kept (seed 000).

        The user's earlier sessions are over, so their memories are formed now rather than
        after the formation debounce (:meth:`FormationQueue.expedite`)."""
        tenant = self._tenant(user_id)
        await self.memories.conversation.start_session(tenant, check_id(session_id, "session_id"))
        await self.queue.expedite(tenant)

    # --- the turn -----------------------------------------------------------------------------

    def _tenant(self, user_id: str) -> Tenant:
        return Tenant(self.config.agent_id, check_id(user_id, "user_id"))

    def _new_turn(self, user_id: str, session_id: str, query: str) -> _Turn:
        tenant = self._tenant(user_id)
        check_id(session_id, "session_id")
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a str, got {type(query).__name__}")
        notes = []
        if len(query) > self.config.max_query_chars:
            if self.config.long_query == "reject":
                raise InvalidInputError(
                    f"the query has {len(query)} characters; the limit is {self.config.max_query_chars}"
                )
            notes.append(
                f"query trimmed from {len(query)} to {self.config.max_query_chars} characters"
            )
            query = query[: self.config.max_query_chars]
        check_text(query, "query", max_chars=self.config.max_query_chars)
        return _Turn(tenant, session_id, query.strip(), notes)

    async def process_query(self, user_id: str, session_id: str, query: str) -> TurnResult:
        """Answer ``query`` for the user in the session; returns the answer and its ids."""
        result: TurnResult | None = None
        async for event in self.stream(user_id, session_id, query):
            if isinstance(event, TurnResult):
                result = event
        assert result is not None
        return result

    async def stream(
        self, user_id: str, session_id: str, query: str
    ) -> AsyncIterator[AnswerDelta | TurnResult]:
        """Yield the answer in pieces as the model produces it, then the :class:`TurnResult`.

        A failure while recalling or generating (a provider down mid-turn, or any exception
        from a custom chat model or embedder) is raised as it was, after the turn was
        recorded: the user's message is kept and the episodic record says failure.
        """
        turn = self._new_turn(user_id, session_id, query)
        with structlog.contextvars.bound_contextvars(
            agent_id=turn.tenant.agent_id, user_id=turn.tenant.user_id, session_id=session_id
        ):
            async for mode, chunk in self._graph.astream(
                {"turn": turn},
                stream_mode=["custom", "values"],
                config={"recursion_limit": self.config.recursion_limit},
            ):
                if mode == "custom":
                    yield AnswerDelta(chunk)
            if turn.error is not None:
                raise turn.error
            assert turn.prompt is not None and turn.route is not None and turn.response is not None
            manifest = turn.prompt.manifest
            yield TurnResult(
                answer=turn.response.text,
                action_id=turn.action_id,
                session_id=session_id,
                route=turn.route,
                manifest=manifest,
                memory_ids=tuple(
                    dict.fromkeys(manifest.all_memory_ids + tuple(turn.tool_memory_ids))
                ),
                usage=turn.usage,
                tool_calls=turn.tool_calls,
                notes=tuple(turn.notes),
                offline=self.chat_model.offline,
            )

    # --- graph --------------------------------------------------------------------------------

    def _build(self) -> CompiledStateGraph:
        graph = StateGraph(_State)
        graph.add_node("recall", self._recall)
        graph.add_node("route", self._route)
        graph.add_node("assemble", self._assemble)
        graph.add_node("generate", self._generate)
        graph.add_node("commit", self._commit)
        graph.add_edge(START, "recall")
        graph.add_conditional_edges("recall", self._route_or_commit_failure, ["route", "commit"])
        graph.add_edge("route", "assemble")
        graph.add_conditional_edges(
            "assemble", self._generate_or_commit_failure, ["generate", "commit"]
        )
        graph.add_edge("generate", "commit")
        graph.add_edge("commit", END)
        return graph.compile(name="rag_agent")

    @staticmethod
    def _route_or_commit_failure(state: _State) -> Literal["route", "commit"]:
        """After recall: route the turn, or, when recall failed, commit it as a failure."""
        return "commit" if state["turn"].error is not None else "route"

    @staticmethod
    def _generate_or_commit_failure(state: _State) -> Literal["generate", "commit"]:
        """After assembling: generate the answer, or, when the prompt could not be assembled,
        commit the turn as a failure."""
        return "commit" if state["turn"].error is not None else "generate"

    async def _recall(self, state: _State) -> _State:
        turn = state["turn"]
        m = self.memories
        try:
            vector, context = await asyncio.gather(
                self.embedder.embed_query(turn.query), self._context(turn)
            )
            # The task and the profile are kept between turns while their tokens stand: asked
            # here, their tokens go out in one read with the memories' and the knowledge's.
            memories, documents, tasks, profile = await asyncio.gather(
                m.long_term.retrieve(
                    turn.tenant,
                    turn.query,
                    k=self.config.long_term_limit + 3,
                    query_vector=vector,
                    # Keyword trust learns from questions that some memory answers strongly,
                    # not from statements, small talk or questions about the world.
                    learn=asks(turn.query),
                    learn_above=self._routing.memory_similarity,
                ),
                m.knowledge.retrieve(
                    turn.tenant, turn.query, k=self.config.knowledge_limit, query_vector=vector
                )
                if self.config.knowledge_limit
                else _nothing(),
                m.working.list_active_tasks(turn.tenant, turn.session_id, limit=1),
                m.profiles.render(turn.tenant),
            )
        except Exception as exc:  # any provider's failure, ours or a custom one's
            turn.error = exc
            return {"turn": turn}
        turn.vector, turn.context, turn.tasks, turn.profile = vector, context, tasks, profile
        turn.instructions = [hit for hit in memories if hit.memory.memory_type == "instruction"]
        turn.memories = [hit for hit in memories if hit.memory.memory_type != "instruction"][
            : self.config.long_term_limit
        ]
        turn.documents = list(documents)
        return {"turn": turn}

    async def _context(self, turn: _Turn) -> ConversationContext | _EmptyContext:
        try:
            return await self.memories.conversation.context(
                turn.tenant, turn.session_id, last_n=self.config.short_term_limit
            )
        except NotFoundError:
            return _EMPTY_CONTEXT  # a new session: its first turn creates it

    async def _route(self, state: _State) -> _State:
        turn = state["turn"]
        assert turn.context is not None

        def similarity(hit: RetrievedMemory | KnowledgeHit) -> float:
            source = hit.sources.get("vector")  # a cosine on either tier
            return source.score if source else 0.0

        turn.route = route(
            RoutingInput(
                turn.query,
                recent_texts=[message.content for message in turn.context.messages],
                memory_similarities=[similarity(hit) for hit in turn.memories],
                knowledge_similarities=[similarity(hit) for hit in turn.documents],
            ),
            self._routing,
        )
        return {"turn": turn}

    async def _assemble(self, state: _State) -> _State:
        turn = state["turn"]
        assert turn.context is not None and turn.route is not None
        task = turn.tasks[0] if turn.tasks else None
        task_text = ""
        if task is not None:
            following = task.next_step
            task_text = f"{task.goal} (task {task.id}, {task.status}" + (
                f", next step {following.index}: {following.action})" if following else ")"
            )
            turn.task_id = task.id
        inputs = PromptInputs(
            system_prompt=self.config.system_prompt,
            query=turn.query,
            profile=turn.profile,
            instructions=[RecalledItem(h.memory.id, h.memory.content) for h in turn.instructions],
            task=task_text,
            summary=turn.context.summary,
            window=[WindowMessage(msg.id, msg.role, msg.content) for msg in turn.context.messages],
            memories=[RecalledItem(h.memory.id, _recalled(h)) for h in turn.memories],
            documents=[RecalledItem(h.id, h.content, h.source) for h in turn.documents],
            priority=[level for level in turn.route.levels if level != "model"],
        )
        try:
            turn.prompt = assemble(inputs, self.config.budget)
        except InvalidInputError as exc:
            turn.error = exc
        return {"turn": turn}

    async def _generate(self, state: _State) -> _State:
        """The model's answer, streamed, with the tools it asks for run on the way."""
        turn = state["turn"]
        assert turn.prompt is not None
        write = get_stream_writer()
        tools = ToolBox(
            turn.tenant,
            turn.session_id,
            long_term=self.memories.long_term,
            working=self.memories.working,
        )
        try:
            await self._add_mcp_tools(tools)
            await self._answer_with_tools(turn, tools, write)
        except Exception as exc:  # recorded by the commit, then raised as it was
            turn.error = exc
        return {"turn": turn}

    async def _add_mcp_tools(self, tools: ToolBox) -> None:
        """Offer the tools of the MCP servers too (connecting them on first use)."""
        if self._mcp:
            await self._mcp.open()
            for spec in self._mcp.specs:
                tools.add(spec, self._mcp.handler(spec.name))

    async def _answer_with_tools(self, turn: _Turn, tools: ToolBox, write: StreamWriter) -> None:
        """The tool loop: ask the model, run the tools its reply calls for, and ask again with
        their results, until a reply calls for none. After ``max_tool_rounds`` rounds of tools
        the model is asked once more without tools, so the loop is bounded.

        The text of every reply streams to ``write``; ``turn`` keeps the last reply, the usage
        of every call, the tool messages to store and the ids the tools touched."""
        assert turn.prompt is not None
        messages = list(turn.prompt.messages)
        for round_number in range(self.config.max_tool_rounds + 1):
            offer_tools = round_number < self.config.max_tool_rounds
            request = ChatRequest(
                messages=tuple(messages),
                system=turn.prompt.system,
                tools=tools.specs if offer_tools else (),
                max_tokens=self.config.budget.answer_tokens,
                model=self.config.model,
            )
            response = await self._ask_model(request, write)
            turn.usage = _add_usage(turn.usage, response.usage)
            turn.response = response
            if not response.tool_calls or not offer_tools:
                return
            results = [await self._run_tool(turn, tools, call) for call in response.tool_calls]
            messages += [response.as_message(), Message("user", tuple(results))]

    async def _ask_model(self, request: ChatRequest, write: StreamWriter) -> ChatResponse:
        """One call of the chat model, its text streamed to ``write`` as it comes."""
        response: ChatResponse | None = None
        async for event in self.chat_model.stream(request):
            if isinstance(event, TextDelta):
                write(event.text)
            elif isinstance(event, ResponseComplete):
                response = event.response
        assert response is not None
        return response

    @staticmethod
    async def _run_tool(turn: _Turn, tools: ToolBox, call: ToolCall) -> ToolResult:
        """Run one tool call for the model and note it on the turn; a failing tool answers
        with an error result."""
        turn.tool_calls += 1
        outcome = await tools.run(call)
        turn.tool_memory_ids.extend(outcome.memory_ids)
        turn.task_id = outcome.task_id or turn.task_id
        # Arguments come from the model: stored as text, never as a mapping whose keys could
        # be hostile.
        turn.tool_messages.append(
            NewMessage(
                "tool",
                outcome.result.content[:2000] or "(empty)",
                tool_name=call.name[:100] or "unknown",
                tool_input=json.dumps(call.arguments, ensure_ascii=False, default=str)[:2000],
            )
        )
        return outcome.result

    async def _commit(self, state: _State) -> _State:
        """The turn's messages and formation job, then one episodic record: the only writes
        the user waits for."""
        turn = state["turn"]
        failed = turn.error is not None
        answer = turn.response.text if (turn.response is not None and not failed) else ""
        messages = [NewMessage.user(turn.query), *turn.tool_messages]
        if answer.strip():
            messages.append(NewMessage("assistant", answer))
        manifest = turn.prompt.manifest if turn.prompt is not None else Manifest()
        memory_ids = tuple(dict.fromkeys(manifest.all_memory_ids + tuple(turn.tool_memory_ids)))
        output: dict[str, Any] = {
            "route": turn.route.level if turn.route else None,
            "documents": list(manifest.document_ids),
            "messages_in_prompt": len(manifest.message_ids),
            "tool_calls": turn.tool_calls,
        }
        if failed:
            output["error"] = type(turn.error).__name__
        # Messages (and, for an answered turn, its formation job) first, then the action:
        # a "success" action is never stored for a turn whose messages or formation job were
        # lost, and no write of a failed commit lands after the caller got its error.
        first: list[Awaitable[Any]] = [
            self.memories.conversation.append_turn(turn.tenant, turn.session_id, messages)
        ]
        if not failed:
            first.append(self.queue.schedule(turn.tenant, turn.session_id))
        results = await asyncio.gather(*first, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            if not all(isinstance(e, AgentMemoryError) for e in errors):
                raise next(e for e in errors if not isinstance(e, AgentMemoryError))
            turn.error = turn.error or errors[0]
            return {"turn": turn}
        try:
            action_id = await self.memories.episodic.log_action(
                turn.tenant,
                session_id=turn.session_id,
                action_type="query_response",
                outcome="failure" if failed else "success",
                input={"query": turn.query[:2000], "notes": turn.notes},
                output=output,
                duration_ms=round((time.perf_counter() - turn.started) * 1000, 1),
                tokens=turn.usage.input_tokens + turn.usage.output_tokens,
                model=self.config.model or self.chat_model.model,
                task_id=turn.task_id,
                memory_ids=memory_ids,
                content=turn.query,
                embedding=turn.vector,
                # The query's vector is missing when the embedder failed: not again here.
                embed=turn.vector is not None,
            )
        except AgentMemoryError as exc:
            turn.error = turn.error or exc
            return {"turn": turn}
        turn.action_id = action_id
        if not failed and turn.context is not None and turn.context.needs_summary:
            self._background.schedule(
                self.memories.conversation.refresh_summary(turn.tenant, turn.session_id),
                "summary_refresh",
            )
        logger.info(
            "turn_completed",
            outcome="failure" if failed else "success",
            route=turn.route.level if turn.route else None,
            memories=len(memory_ids),
            documents=len(manifest.document_ids),
            tool_calls=turn.tool_calls,
            prompt_tokens=manifest.tokens.get("total", 0),
            duration_ms=round((time.perf_counter() - turn.started) * 1000, 1),
        )
        return {"turn": turn}


@dataclass(frozen=True, slots=True)
class _EmptyContext:
    summary: str = ""
    messages: tuple[ConversationMessage, ...] = ()
    needs_summary: bool = False


_EMPTY_CONTEXT = _EmptyContext()


async def _nothing() -> list[KnowledgeHit]:
    return []

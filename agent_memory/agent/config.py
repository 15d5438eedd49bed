"""What a :class:`~agent_memory.agent.rag_agent.RAGAgent` is configured with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from agent_memory.agent.prompt import Budget
from agent_memory.agent.routing import RoutingConfig
from agent_memory.checks import check_count, check_id, check_int
from agent_memory.errors import InvalidInputError

__all__ = ["DEFAULT_SYSTEM_PROMPT", "AgentConfig"]

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant with a memory of this user: what they told you in earlier "
    "conversations, their preferences, and documents you can consult. Use what is relevant, "
    "say so when you do not know, and never invent facts about the user. You can search your "
    "long-term memory with the search_long_term_memory tool and plan multi-step work with the "
    "task tools."
)


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """Defaults follow the seeds: 10 recent messages and 5 memories (seed 000), a budget of
    8,000 tokens with half for documents and a quarter for memory (the blueprint)."""

    agent_id: str
    #: The chat model's model for this agent's answers (e.g. "claude-haiku-4-5"); None uses
    #: the one the chat model was created with.
    model: str | None = None
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    short_term_limit: int = 10
    long_term_limit: int = 5
    knowledge_limit: int = 4
    budget: Budget = field(default_factory=Budget)
    routing: RoutingConfig = field(default_factory=RoutingConfig)
    #: Model calls that may request tools before the answer must come without them.
    max_tool_rounds: int = 4
    #: LangGraph's recursion limit for one turn (steps of the graph).
    recursion_limit: int = 25
    max_query_chars: int = 8_000
    #: What to do with a longer query: refuse it, or keep its first max_query_chars (noted).
    long_query: Literal["reject", "trim"] = "reject"
    #: Seconds of quiet in a session before its memories are formed (seed 001's debounce).
    formation_debounce_s: float = 30.0
    #: Run a formation worker inside the agent (else run `agent-memory worker` elsewhere).
    run_formation_worker: bool = True
    #: Jobs that worker works at once (each a model call and a dozen round trips).
    formation_concurrency: int = 4

    def __post_init__(self) -> None:
        check_id(self.agent_id, "agent_id")
        if self.model is not None and (
            not isinstance(self.model, str) or not self.model.strip() or len(self.model) > 200
        ):
            raise InvalidInputError("model must be a non-empty model name")
        if not self.system_prompt.strip():
            raise InvalidInputError("system_prompt is empty")
        for name in (
            "short_term_limit",
            "long_term_limit",
            "knowledge_limit",
            "max_tool_rounds",
            "max_query_chars",
        ):
            check_int(getattr(self, name), name, minimum=0 if name == "knowledge_limit" else 1)
        check_count(self.formation_concurrency, "formation_concurrency", maximum=64)
        if self.long_query not in ("reject", "trim"):
            raise InvalidInputError("long_query must be 'reject' or 'trim'")
        if self.recursion_limit < 5:
            raise InvalidInputError("recursion_limit must be at least 5")

"""Tools the model may call during a turn: search long-term memory, plan and run a task.

The tenant and session come from the run, never from the model: the tools' schemas have no
user or agent fields, arguments the schema does not name are refused, and every call is
executed with the tenant the turn belongs to. A failing tool answers with an error result
the model can read; it never fails the turn.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema

from agent_memory._log import get_logger
from agent_memory.errors import AgentMemoryError
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.working.memory import WorkingMemory
from agent_memory.providers.chat.base import ToolCall, ToolResult, ToolSpec
from agent_memory.tenancy import Tenant

__all__ = ["MEMORY_TOOLS", "TASK_TOOLS", "ToolBox", "ToolOutcome"]

logger = get_logger(__name__)

_MAX_RESULT_CHARS = 8_000


def _spec(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    return ToolSpec(
        name,
        description,
        {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    )


MEMORY_TOOLS = (
    _spec(
        "search_long_term_memory",
        "Search what is remembered about the user (facts, preferences, earlier conversations) "
        "with a natural-language query.",
        {
            "query": {"type": "string", "minLength": 1, "maxLength": 1000},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20},
        },
        ["query"],
    ),
)

TASK_TOOLS = (
    _spec(
        "create_plan",
        "Start a multi-step task: give the goal and the steps in order.",
        {
            "goal": {"type": "string", "minLength": 1, "maxLength": 2000},
            "steps": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "maxItems": 50,
            },
        },
        ["goal", "steps"],
    ),
    _spec(
        "advance_step",
        "Record the outcome of a step of the active task.",
        {
            "task_id": {"type": "string"},
            "step_index": {"type": "integer", "minimum": 0},
            "status": {"enum": ["in_progress", "completed", "failed", "skipped"]},
            "result": {"type": "string", "maxLength": 4000},
        },
        ["task_id", "step_index", "status"],
    ),
    _spec(
        "checkpoint_task",
        "Save the active task's state so it can be resumed after an interruption.",
        {"task_id": {"type": "string"}},
        ["task_id"],
    ),
)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    result: ToolResult
    memory_ids: tuple[str, ...] = ()
    task_id: str | None = None


Handler = Callable[[Mapping[str, Any]], Awaitable[ToolOutcome]]


class ToolBox:
    """The tools of one turn, bound to its tenant and session.

    Extra tools (for example MCP tools) are added with :meth:`add`; their handlers receive
    only the validated arguments.
    """

    def __init__(
        self,
        tenant: Tenant,
        session_id: str,
        *,
        long_term: LongTermMemory | None = None,
        working: WorkingMemory | None = None,
    ) -> None:
        self.tenant = tenant
        self.session_id = session_id
        self._specs: dict[str, ToolSpec] = {}
        self._handlers: dict[str, Callable[[str, Mapping[str, Any]], Awaitable[ToolOutcome]]] = {}
        if long_term is not None:
            self._long_term = long_term
            self._register(MEMORY_TOOLS[0], self._search)
        if working is not None:
            self._working = working
            for spec, handler in zip(
                TASK_TOOLS, (self._create_plan, self._advance, self._checkpoint), strict=True
            ):
                self._register(spec, handler)

    def _register(
        self, spec: ToolSpec, handler: Callable[[str, Mapping[str, Any]], Awaitable[ToolOutcome]]
    ) -> None:
        if spec.name in self._specs:
            raise ValueError(f"a tool named {spec.name!r} is already registered")
        self._specs[spec.name] = spec
        self._handlers[spec.name] = handler

    def add(self, spec: ToolSpec, handler: Callable[[Mapping[str, Any]], Awaitable[str]]) -> None:
        async def run(call_id: str, arguments: Mapping[str, Any]) -> ToolOutcome:
            return ToolOutcome(ToolResult(call_id, _cap(await handler(arguments))))

        self._register(spec, run)

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(self._specs.values())

    async def run(self, call: ToolCall) -> ToolOutcome:
        """Execute ``call``; any failure becomes an error result for the model."""
        spec = self._specs.get(call.name)
        if spec is None:
            return _error(call.id, f"there is no tool named {call.name!r}")
        try:
            jsonschema.validate(dict(call.arguments), spec.parameters)
        except jsonschema.ValidationError as exc:
            return _error(call.id, f"invalid arguments for {call.name}: {exc.message}")
        try:
            outcome = await self._handlers[call.name](call.id, call.arguments)
        except AgentMemoryError as exc:
            logger.info("tool_failed", tool=call.name, error=type(exc).__name__)
            return _error(call.id, f"{call.name} failed: {exc}")
        except Exception as exc:  # a tool's bug must not end the turn
            logger.warning("tool_crashed", tool=call.name, error=type(exc).__name__)
            return _error(call.id, f"{call.name} failed unexpectedly ({type(exc).__name__})")
        logger.debug("tool_ran", tool=call.name)
        return outcome

    # --- built-in tools --------------------------------------------------------------------

    async def _search(self, call_id: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        hits = await self._long_term.retrieve(
            self.tenant, arguments["query"], k=int(arguments.get("limit", 5))
        )
        if not hits:
            return ToolOutcome(ToolResult(call_id, "No relevant memories found."))
        lines = [f"[{hit.memory.memory_type}] {hit.memory.content}" for hit in hits]
        return ToolOutcome(
            ToolResult(call_id, _cap("\n".join(lines))), memory_ids=tuple(h.memory.id for h in hits)
        )

    async def _create_plan(self, call_id: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        task = await self._working.create_task(
            self.tenant, self.session_id, arguments["goal"], plan=list(arguments["steps"])
        )
        task = await self._working.start_task(self.tenant, task.id, expected_version=task.version)
        text = json.dumps(
            {"task_id": task.id, "steps": [step.action for step in task.plan]}, ensure_ascii=False
        )
        return ToolOutcome(ToolResult(call_id, text), task_id=task.id)

    async def _advance(self, call_id: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        task = await self._working.advance_step(
            self.tenant,
            arguments["task_id"],
            arguments["step_index"],
            status=arguments["status"],
            result=arguments.get("result"),
        )
        following = task.next_step
        text = f"step {arguments['step_index']} is {arguments['status']}; " + (
            f"next: step {following.index} {following.action}" if following else "no steps left"
        )
        return ToolOutcome(ToolResult(call_id, text), task_id=task.id)

    async def _checkpoint(self, call_id: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        saved = await self._working.checkpoint(self.tenant, arguments["task_id"])
        return ToolOutcome(
            ToolResult(call_id, f"checkpoint {saved.id} saved"), task_id=arguments["task_id"]
        )


def _cap(text: str) -> str:
    return text if len(text) <= _MAX_RESULT_CHARS else text[:_MAX_RESULT_CHARS] + " …[truncated]"


def _error(call_id: str, message: str) -> ToolOutcome:
    return ToolOutcome(ToolResult(call_id, message, is_error=True))

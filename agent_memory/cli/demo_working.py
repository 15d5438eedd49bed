"""The demo's working-memory part: a task planned, checkpointed, interrupted and resumed.

A worker plans Alice's trip to her sister's wedding, finishes two steps, takes a checkpoint
and is killed half-way through the third (its coroutine is cancelled while the step is
``in_progress``, as a crash would leave it). A restarted worker knows only the task id: it
reads the task back, restores the checkpoint (dropping what the interrupted step had half
written) and resumes at the first step not done, then finishes the plan.
"""

from __future__ import annotations

import asyncio
from typing import Any

from rich.markup import escape
from rich.table import Table

from agent_memory.cli._app import console, plural
from agent_memory.cli._runtime import Runtime
from agent_memory.cli.demo_long_term import AGENT
from agent_memory.memory.working.memory import Task, WorkingMemory
from agent_memory.tenancy import Tenant

__all__ = ["PLAN", "working_part"]

GOAL = "Plan Alice's trip to Maria's wedding in Lisbon"
PLAN = [
    "book a flight to Lisbon",
    "reserve a hotel near the venue",
    "buy a wedding gift",
    "send Alice the itinerary",
]
RESULTS: list[dict[str, Any]] = [
    {"flight": "TP 541, window seat"},
    {"hotel": "Casa Alfama, 3 nights"},
    {"gift": "a hand-painted azulejo"},
    {"sent": "itinerary.pdf"},
]
SESSION = "trip-planning"


async def _run_step(working: WorkingMemory, task: Task, index: int, tenant: Tenant) -> Task:
    """Run one step: mark it started, do the work, record its result."""
    await working.advance_step(tenant, task.id, index, status="in_progress")
    return await working.advance_step(
        tenant, task.id, index, status="completed", result=RESULTS[index]
    )


async def _interrupted_step(
    working: WorkingMemory, task: Task, tenant: Tenant, busy: asyncio.Event
) -> None:
    """Step 2 starts, writes a half-done note into the task's context, then takes long
    enough to be killed (the demo cancels it, as a crash would end it)."""
    await working.advance_step(tenant, task.id, 2, status="in_progress")
    await working.update_context(tenant, task.id, {"gift_shortlist": ["vase", "?"]})
    busy.set()
    await asyncio.sleep(3600)  # choosing the gift: interrupted before it finishes


def _steps(task: Task) -> str:
    return ", ".join(f"{step.index} {step.status}" for step in task.plan)


def _table(states: list[tuple[str, Task]]) -> Table:
    table = Table(title=f"task: {GOAL}", title_justify="left", show_edge=False)
    table.add_column("step")
    for title, _ in states:
        table.add_column(title)
    for index, action in enumerate(PLAN):
        cells = []
        for _, task in states:
            step = task.plan[index]
            done = step.status == "completed"
            cells.append(f"[green]{step.status}[/]" if done else step.status)
        table.add_row(f"{index} {action}", *cells)
    table.add_row("[dim]version[/]", *(f"[dim]v{task.version}[/]" for _, task in states))
    return table


async def working_part(rt: Runtime) -> None:
    alice = Tenant(AGENT, "alice")
    working = WorkingMemory(rt.connection)
    await working.forget_user(alice)  # a clean slate, so reruns show the same thing

    task = await working.create_task(alice, SESSION, GOAL, plan=PLAN)
    task = await working.start_task(alice, task.id)
    for index in (0, 1):
        task = await _run_step(working, task, index, alice)
    saved = await working.checkpoint(alice, task.id)
    console.print(
        f"planned {plural(len(PLAN), 'step')}; steps 0 and 1 done; checkpoint {saved.id} taken "
        f"after {plural(saved.step, 'completed step')} (task version {saved.version})"
    )

    busy = asyncio.Event()
    worker = asyncio.create_task(_interrupted_step(working, task, alice, busy))
    waiting = asyncio.create_task(busy.wait())
    await asyncio.wait({worker, waiting}, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if worker.done():  # it failed before getting busy: show why
        worker.result()
    worker.cancel()  # the process dies mid-step: nothing gets to clean up
    await asyncio.gather(worker, waiting, return_exceptions=True)
    console.print("step 2 started and the worker was [bold]killed[/] before it finished")

    # A restarted worker: a new WorkingMemory that knows only the task id.
    restarted = WorkingMemory(rt.connection)
    crashed = await restarted.get_task(alice, task.id)
    console.print(
        f"after the restart the task reads: {crashed.status}, steps {_steps(crashed)}; "
        f"context {escape(str(crashed.context))}",
        highlight=False,
    )
    restored = await restarted.restore(alice, task.id)
    resumed = await restarted.resume(alice, task.id)
    assert resumed.next_step is not None
    console.print(
        f"restored checkpoint {restored.restored_from}: "
        f"{plural(restored.steps_completed, 'step')} completed, "
        f"context {escape(str(restored.context))}; resumed at step "
        f"[bold]{resumed.next_step.index}: {resumed.next_step.action}[/]",
        highlight=False,
    )
    done = resumed.task
    for index in range(resumed.next_step.index, len(PLAN)):
        done = await _run_step(restarted, done, index, alice)
    done = await restarted.complete_task(alice, task.id)
    console.print(
        _table([("left by the crash", crashed), ("restored", restored), ("finished", done)])
    )
    console.print(
        f"task {done.status}: {done.steps_completed} of {plural(len(PLAN), 'step')}, "
        f"results {escape(str([step.result for step in done.plan]))}",
        highlight=False,
    )

"""A research agent whose working memory survives a crash: killed with SIGKILL, resumed elsewhere.

What it shows (working memory, ``agent_memory/memory/working/memory.py``):

- the agent plans a research task of 8 steps in working memory; each step is started, its
  finding appended to the draft in the task's context, and then completed, every change one
  atomic, version-guarded write; a checkpoint (status, plan and context together) is taken
  automatically every 3 completed steps;
- the script runs the agent as a child process and kills it for real (``SIGKILL``, no
  clean-up code runs) in the middle of step 6;
- a new process restores the last checkpoint and resumes: steps completed after that
  checkpoint run again (their effects were rolled back with it), the interrupted step runs
  again, and nothing before the checkpoint does. The draft ends with every finding exactly once.

Why restore and not only resume: in this run a step is two writes (its finding appended to
the draft, then the step marked completed), so a crash between them would leave the draft
ahead of the plan, and resuming from that live state would draft the finding twice; a
checkpoint is a consistent pair. With ``--resume-only`` each step is one write instead: its
finding is the step's ``result``, saved by the same atomic update that completes it, and the
draft is built from the results once every step is done. ``resume`` alone then continues from
the live state wherever the kill lands, and only the interrupted step runs again.

Run it (embedded database; 6-9 s measured, mostly the steps' simulated work)::

    . .venv/bin/activate    # once per shell: the virtual environment of README's quick start
    python recipes/research_agent_resume.py [--resume-only]

The child processes find the embedded server this script started through the data directory;
with MONGODB_URI set they all use that server. Production: MONGODB_URI to Atlas (or
atlas-local from docker-compose.yml) and ``agent-memory indexes setup`` once. This recipe
calls no model; an agent whose steps call Claude or embed with Voyage sets
AGENT_MEMORY_CHAT_MODEL=anthropic with ANTHROPIC_API_KEY and AGENT_MEMORY_EMBEDDER=voyage with
VOYAGE_API_KEY, and its working memory behaves the same.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from agent_memory import IndexManager, Tenant, connect, load_settings, make_embedder
from agent_memory.memory.working import Task, WorkingConfig, WorkingMemory

TENANT = Tenant("research-agent", "analyst-1")
SESSION = "brief-agent-memory"
GOAL = "Write a one-page brief on memory for AI agents"
PLAN = [
    {"action": "search", "params": {"topic": "conversation memory"}},
    {"action": "search", "params": {"topic": "long-term memory"}},
    {"action": "search", "params": {"topic": "working memory"}},
    {"action": "search", "params": {"topic": "episodic memory"}},
    {"action": "compare", "params": {"topic": "vector and keyword retrieval"}},
    {"action": "compare", "params": {"topic": "importance decay policies"}},
    {"action": "outline", "params": {"topic": "the brief"}},
    {"action": "write", "params": {"topic": "the summary"}},
]
CONFIG = WorkingConfig(checkpoint_every_steps=3)
KILL_DURING_STEP = 5  # zero-based: the sixth step
STEP_SECONDS = 0.25  # what a step's tool or model calls would take
CHILD_TIMEOUT_S = 60.0
SCRIPT = Path(__file__).resolve()


def finding(index: int, step: dict[str, Any]) -> str:
    """What step ``index`` contributes to the draft (a real agent calls tools or a model)."""
    return f"[{index + 1}] {step['action']} {step['params']['topic']}"


# --- the worker: runs in a child process ---------------------------------------------------------


def _report(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


async def work(task_id: str, *, recover: str | None, one_write: bool) -> None:
    """Run the task's remaining steps. ``recover`` is None for the first run, else
    ``"restore"`` (back to the last checkpoint, then resume) or ``"resume"`` (live state).
    ``one_write``: a step's finding is saved with its completion (its ``result``), not
    appended to the draft by a write of its own."""
    settings = load_settings()
    async with await connect(settings) as conn:
        memory = WorkingMemory(conn, config=CONFIG)
        if recover == "restore":
            task = await memory.restore(TENANT, task_id)
            _report("restored", completed=task.steps_completed, drafted=len(task.context["draft"]))
        if recover is not None:
            resumed = await memory.resume(TENANT, task_id)
            task = resumed.task
            _report("resumed", requeued=list(resumed.requeued), next=task.next_step.index)
        else:
            task = await memory.get_task(TENANT, task_id)
        while (step := task.next_step) is not None:
            # Each write carries the version it was computed from: were another worker still
            # running the task, this one would stop with ConflictError instead of interleaving.
            task = await memory.advance_step(
                TENANT,
                task.id,
                step.index,
                status="in_progress",
                expected_version=task.version,
            )
            _report("started", step=step.index)
            await asyncio.sleep(STEP_SECONDS)
            text = finding(step.index, {"action": step.action, "params": step.params})
            if not one_write:  # the draft first, then the completion: two writes
                task = await memory.update_context(
                    TENANT,
                    task.id,
                    {"draft": [*task.context.get("draft", []), text]},
                    expected_version=task.version,
                )
            task = await memory.advance_step(
                TENANT,
                task.id,
                step.index,
                status="completed",
                result={"finding": text} if one_write else {"chars": len(text)},
                expected_version=task.version,
            )
            every = CONFIG.checkpoint_every_steps
            _report(
                "completed",
                step=step.index,
                checkpoint=bool(every) and task.steps_completed % every == 0,
            )
        if one_write:  # every step is done: the draft, in plan order, from their results
            task = await memory.update_context(
                TENANT,
                task.id,
                {"draft": [step.result["finding"] for step in task.plan]},
                expected_version=task.version,
            )
        await memory.complete_task(TENANT, task.id, expected_version=task.version)
        _report("task_completed")


# --- the supervisor: the script's own process ----------------------------------------------------


@dataclass
class Run:
    """What one child process reported."""

    name: str
    pid: int = 0
    started: list[int] = field(default_factory=list)
    completed: list[int] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    returncode: int | None = None


async def _child(
    name: str,
    task_id: str,
    recover: str | None,
    *,
    one_write: bool,
    kill_during: int | None = None,
) -> Run:
    """Run the worker in a new Python process; kill it with SIGKILL once it has started step
    ``kill_during``. Its reports are printed as they arrive."""
    args = [sys.executable, str(SCRIPT), "--worker", task_id]
    if recover:
        args += ["--recover", recover]
    if one_write:
        args.append("--one-write")
    proc = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE)
    run = Run(name, proc.pid)
    print(f"process {name} (pid {proc.pid}) started")
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(CHILD_TIMEOUT_S):
            async for raw in proc.stdout:
                event = json.loads(raw)
                run.events.append(event)
                kind, step = event["event"], event.get("step")
                if kind == "started":
                    run.started.append(step)
                    print(f"  {name}: step {step + 1} started")
                elif kind == "completed":
                    run.completed.append(step)
                    saved = ", checkpoint taken" if event["checkpoint"] else ""
                    print(f"  {name}: step {step + 1} completed{saved}")
                elif kind == "restored":
                    print(
                        f"  {name}: restored the last checkpoint: {event['completed']} steps "
                        f"completed, {event['drafted']} findings in the draft"
                    )
                elif kind == "resumed":
                    again = [i + 1 for i in event["requeued"]]
                    print(
                        f"  {name}: resumed at step {event['next'] + 1}"
                        + (f" (step {again} put back to pending)" if again else "")
                    )
                else:
                    print(f"  {name}: {kind.replace('_', ' ')}")
                if kind == "started" and step == kill_during:
                    proc.send_signal(signal.SIGKILL)  # no finally, no atexit: a real crash
                    print(f"  -> SIGKILL to process {name} in the middle of step {step + 1}")
                    break
            run.returncode = await proc.wait()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise RuntimeError(
            f"process {name} did not finish within {CHILD_TIMEOUT_S:.0f} s"
        ) from None
    print(f"process {name} exited with {run.returncode}")
    return run


def _table(task: Task, a: Run, b: Run) -> None:
    def what(run: Run, index: int) -> str:
        if index in run.completed:
            return "completed"
        return "started, killed" if index in run.started else "-"

    print(f"\n{'step':<5}{'action':<42}{'process A':<18}{'process B':<12}")
    for step in task.plan:
        action = f"{step.action} {step.params.get('topic', '')}"
        print(f"{step.index + 1:<5}{action:<42}{what(a, step.index):<18}{what(b, step.index):<12}")


def check(task: Task, a: Run, b: Run, kept: int) -> list[str]:
    """The checkpoint contract, checked: every step completed and drafted exactly once, and
    none of the first ``kept`` steps (those the recovery kept: up to the last checkpoint
    after a restore, every completed one after a resume) completed by both processes."""
    problems = []
    if task.status != "completed":
        problems.append(f"the task is {task.status}")
    lost = [s.index + 1 for s in task.plan if s.status != "completed"]
    if lost:
        problems.append(f"steps not completed: {lost}")
    expected = [finding(s.index, {"action": s.action, "params": s.params}) for s in task.plan]
    if task.context.get("draft") != expected:
        problems.append(f"the draft is not each finding once, in order: {task.context['draft']}")
    twice = sorted(set(a.completed) & set(b.completed))
    if any(index < kept for index in twice):
        problems.append(f"kept steps ran again: {[i + 1 for i in twice]}")
    return problems


@dataclass
class Outcome:
    """The whole scenario: the finished task, both processes, and the contract's verdict."""

    task: Task
    a: Run
    b: Run
    checkpoint_step: int  # steps completed when the last checkpoint before the crash was taken
    kept: int  # steps the recovery kept (not to be run again)
    problems: list[str]


async def scenario(recover: str) -> Outcome:
    """Plan the task, run it in process A, kill A mid-task, recover and finish in process B.
    ``recover="resume"`` recovers from the live state, so its steps are one write each."""
    one_write = recover == "resume"
    settings = load_settings()
    embedder = make_embedder(settings)
    # This process holds the connection (and so the embedded server) while the workers come
    # and go: the database must outlive the processes that crash.
    try:
        async with await connect(settings) as conn:
            await IndexManager(conn, embedder.signature).setup()
            memory = WorkingMemory(conn, config=CONFIG)
            await memory.forget_user(TENANT)  # a clean slate, so every run shows the same
            task = await memory.create_task(TENANT, SESSION, GOAL, plan=PLAN, context={"draft": []})
            task = await memory.start_task(TENANT, task.id, expected_version=task.version)
            # A checkpoint of the plan before any step, so a crash even before the first
            # automatic one has a state to go back to.
            await memory.checkpoint(TENANT, task.id)
            print(f"task {task.id}: {GOAL!r}, {len(task.plan)} steps, checkpoint every 3")
            if one_write:
                print(
                    "each step is one write: its finding is saved as the step's result by the "
                    "update that completes it (the draft is built from the results at the end)\n"
                )
            else:
                print(
                    "each step is two writes: its finding appended to the draft, then the step "
                    "completed (a crash between them is why the recovery restores a checkpoint)\n"
                )

            a = await _child("A", task.id, None, one_write=one_write, kill_during=KILL_DURING_STEP)
            crashed = await memory.get_task(TENANT, task.id)
            saved = await memory.list_checkpoints(TENANT, task.id)
            latest = saved[0].step if saved else 0
            running = [s.index + 1 for s in crashed.plan if s.status == "in_progress"]
            found = (
                sum(isinstance(s.result, dict) and "finding" in s.result for s in crashed.plan)
                if one_write
                else len(crashed.context["draft"])
            )
            print(
                f"\nafter the crash: {crashed.steps_completed} steps completed, step(s) "
                f"{running} left in progress, {found} findings saved "
                f"{'in step results' if one_write else 'in the draft'}; last checkpoint after "
                f"step {latest}\n"
            )

            b = await _child("B", task.id, recover, one_write=one_write)
            task = await memory.get_task(TENANT, task.id)
    finally:
        await embedder.aclose()
    kept = latest if recover == "restore" else crashed.steps_completed
    return Outcome(task, a, b, latest, kept, check(task, a, b, kept))


async def main(recover: str) -> None:
    started = time.perf_counter()
    # This recipe's data in a database of its own, one per embedder (vectors of two models
    # cannot be compared), unless AGENT_MEMORY_DATABASE (or .env) names one.
    if "database" not in (chosen := load_settings()).model_fields_set:
        os.environ["AGENT_MEMORY_DATABASE"] = f"recipe_research_agent_resume_{chosen.embedder}"
    outcome = await scenario(recover)
    task = outcome.task
    _table(task, outcome.a, outcome.b)
    twice = sorted(set(outcome.a.completed) & set(outcome.b.completed))
    print(f"\ntask {task.status}; the draft holds {len(task.context['draft'])} findings")
    if twice:
        print(
            f"steps {[i + 1 for i in twice]} ran in both processes: completed after the last "
            f"checkpoint (step {outcome.checkpoint_step}), rolled back by the restore, as the "
            "checkpoint contract allows"
        )
    else:
        print("no completed step ran again: only the interrupted one was repeated")
    if outcome.problems:
        sys.exit(f"CONTRACT BROKEN: {'; '.join(outcome.problems)}")
    print(
        f"contract held: every step completed and drafted once, none of the {outcome.kept} "
        f"steps kept by the recovery ran again; done in {time.perf_counter() - started:.1f} s"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--resume-only",
        action="store_true",
        help="one write per step, recovered with resume() alone (the live state), not "
        "restore() + resume()",
    )
    parser.add_argument("--worker", metavar="TASK_ID", help=argparse.SUPPRESS)
    parser.add_argument("--recover", choices=["restore", "resume"], help=argparse.SUPPRESS)
    parser.add_argument("--one-write", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    # The library never configures logging; an application decides what it wants to see.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if options.worker:
        asyncio.run(work(options.worker, recover=options.recover, one_write=options.one_write))
    else:
        asyncio.run(main("resume" if options.resume_only else "restore"))

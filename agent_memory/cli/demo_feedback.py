"""The demo's parts on how a memory's standing changes after it is stored: ratings and decay.

Feedback: Alice once had dinner at a steakhouse with her team; she is vegetarian and her
favourite restaurant is a vegetarian place. Asked where to book dinner, the agent puts its
best memory into the prompt (one here, so each rating is credited to one memory and the
instruction that goes with every prompt). Alice rates an answer that sends her to the
steakhouse 1 and one that names her favourite 5; each rating lands on the turn's episodic
record and is credited to the memories of its prompt, so the next retrieval ranks them
differently. The table shows both memories' rank and score before and after.

Decay: 45 days later, the decay job lowers the importance of every memory nobody used for
30 days (the one Alice's question used on day 40 keeps it); run again in the same period it
decays nothing.
"""

from __future__ import annotations

from datetime import timedelta

from rich.markup import escape
from rich.table import Table

from agent_memory.agent.config import AgentConfig
from agent_memory.cli._app import console, plural
from agent_memory.cli._runtime import Runtime
from agent_memory.cli.demo_long_term import AGENT, ANSWER_TYPES
from agent_memory.memory.long_term.decay import DecayJob
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import Memory, NewMemory, RetrievedMemory
from agent_memory.providers.chat.base import ChatModel
from agent_memory.stamps import utcnow
from agent_memory.tenancy import Tenant

__all__ = ["decay_part", "feedback_part"]

QUESTION = "Which restaurant should I book for dinner?"
STEAKHOUSE = "For dinner, Alice once went to the steakhouse Bull & Grill with her team."
FAVOURITE = "Alice's favourite restaurant is Green Garden, a vegetarian place."
#: Evenings Alice asks at most; a rating moves a score by at most 0.2 (the feedback weight).
MAX_EVENINGS = 3
DECAY_AFTER_DAYS = 45
USED_ON_DAY = 40


def _ranks(hits: list[RetrievedMemory]) -> dict[str, tuple[int, RetrievedMemory]]:
    return {hit.memory.content: (rank, hit) for rank, hit in enumerate(hits, start=1)}


def _short(text: str) -> str:
    return text if len(text) <= 48 else text[:47] + "…"


async def feedback_part(rt: Runtime, chat: ChatModel) -> None:
    from agent_memory.agent.rag_agent import RAGAgent  # LangGraph: only when the demo runs

    alice = Tenant(AGENT, "alice")
    config = AgentConfig(
        AGENT, long_term_limit=1, formation_debounce_s=0.0, run_formation_worker=False
    )
    async with RAGAgent(rt.connection, rt.embedder, chat, config=config) as agent:
        long_term = agent.memories.long_term
        await long_term.store_many(
            alice, [NewMemory(STEAKHOUSE, "fact"), NewMemory(FAVOURITE, "preference")]
        )
        console.print(
            f"stored for Alice: {escape(repr(STEAKHOUSE))} and {escape(repr(FAVOURITE))}\n"
            "[dim]This agent puts only its best memory into the prompt (long_term_limit=1), "
            "so each rating is credited to that memory (and to an instruction, if one was "
            "recalled with it).[/]",
            highlight=False,
        )
        before = await long_term.retrieve(alice, QUESTION, k=3, memory_types=ANSWER_TYPES)
        for evening in range(1, MAX_EVENINGS + 1):
            session = f"dinner-{evening}"
            await agent.start_new_session("alice", session)
            result = await agent.process_query("alice", session, QUESTION)
            used = [m.content for m in await _memories(long_term, alice, result.memory_ids)]
            console.print(f"[bold]evening {evening}, alice:[/] {QUESTION}", highlight=False)
            console.print(f"[bold]agent:[/] {escape(result.answer)}", highlight=False)
            rating = 1 if STEAKHOUSE in used else 5
            feedback = await agent.memories.episodic.add_feedback(
                alice, result.action_id, rating=rating
            )
            console.print(
                f"  alice rates the answer [bold]{rating}/5[/]: {feedback.credited:+.2f} "
                f"credited to the {plural(len(feedback.memory_ids), 'memory', 'memories')} "
                "in its prompt "
                f"({escape('; '.join(_short(text) for text in used))})",
                highlight=False,
            )
            if rating == 5:
                break
        after = await long_term.retrieve(alice, QUESTION, k=3, memory_types=ANSWER_TYPES)
    console.print(_feedback_table(before, after))
    old, new = _ranks(before), _ranks(after)
    for content, label in ((STEAKHOUSE, "steakhouse"), (FAVOURITE, "Green Garden")):
        if content in old and content in new:
            console.print(
                f"{label} memory: rank {old[content][0]} -> {new[content][0]}, score "
                f"{old[content][1].score:.3f} -> {new[content][1].score:.3f}, utility "
                f"{new[content][1].breakdown.utility:+.3f}"
            )


async def _memories(
    long_term: LongTermMemory, tenant: Tenant, ids: tuple[str, ...]
) -> list[Memory]:
    return [await long_term.get(tenant, memory_id) for memory_id in ids]


def _feedback_table(before: list[RetrievedMemory], after: list[RetrievedMemory]) -> Table:
    table = Table(title=f"alice: {QUESTION}", title_justify="left", show_edge=False)
    table.add_column("memory", overflow="fold")
    table.add_column("before: rank", justify="right")
    table.add_column("score", justify="right")
    table.add_column("after: rank", justify="right")
    table.add_column("score", justify="right")
    table.add_column("ratings", justify="right")
    table.add_column("utility", justify="right")
    old, new = _ranks(before), _ranks(after)
    for content in dict.fromkeys([*new, *old]):
        was, now = old.get(content), new.get(content)
        memory = (now or was)[1].memory  # type: ignore[index]
        table.add_row(
            escape(content),
            f"#{was[0]}" if was else "-",
            f"{was[1].score:.3f}" if was else "-",
            f"#{now[0]}" if now else "-",
            f"{now[1].score:.3f}" if now else "-",
            str(memory.feedback_count),
            f"{now[1].breakdown.utility:+.3f}" if now else "-",
        )
    return table


async def decay_part(rt: Runtime) -> None:
    alice = Tenant(AGENT, "alice")
    memory = LongTermMemory(rt.connection, rt.embedder)
    job = DecayJob(rt.connection)
    today = utcnow()
    try:
        before = {m.id: m for m in await memory.list_memories(alice)}
        # On day 40 Alice asks about her seat: that memory counts as used, the others do not.
        used = await memory.retrieve(
            alice,
            "Window or aisle seat for her?",
            k=1,
            memory_types=ANSWER_TYPES,
            now=today + timedelta(days=USED_ON_DAY),
        )
        await memory.drain()
        console.print(
            f"day {USED_ON_DAY}: a question about her seat uses "
            f"{escape(repr(used[0].memory.content))}; nothing else of Alice's is used for "
            f"{DECAY_AFTER_DAYS} days",
            highlight=False,
        )
        now = today + timedelta(days=DECAY_AFTER_DAYS)
        report = await job.run(agent_id=AGENT, now=now)
        console.print(
            f"decay job on day {DECAY_AFTER_DAYS} (importance x{job.config.factor:g} for "
            f"memories unused for {job.config.inactive_days:g} days, floor "
            f"{job.config.floor:g}): [bold]{report.summary()}[/] ({report.eligible} eligible)",
            highlight=False,
        )
        after = {m.id: m for m in await memory.list_memories(alice)}
        table = Table(title="alice's memories", title_justify="left", show_edge=False)
        table.add_column("memory", overflow="fold")
        table.add_column("last used", justify="right")
        table.add_column("importance before", justify="right")
        table.add_column("after", justify="right")
        hers = 0
        for memory_id, old in before.items():
            new = after[memory_id]
            # Day 0 is when the demo stored them; only the seat memory was used since.
            last = "day 0" if memory_id != used[0].memory.id else f"day {USED_ON_DAY}"
            changed = "" if new.importance == old.importance else " [bold](decayed)[/]"
            hers += bool(changed)
            table.add_row(
                escape(old.content), last, f"{old.importance:.3f}", f"{new.importance:.3f}{changed}"
            )
        console.print(table)
        if report.decayed > hers:
            console.print(
                f"(the other {plural(report.decayed - hers, 'decayed memory', 'decayed memories')}"
                " of the run are Bob's)",
                highlight=False,
            )
        again = await job.run(agent_id=AGENT, now=now)
        console.print(
            f"the job runs again (a retried cron job): [bold]{again.summary()}[/] "
            f"- at most once per {job.config.period_days:g}-day period; both runs are audited "
            f"in decay_runs",
            highlight=False,
        )
    finally:
        await memory.aclose()

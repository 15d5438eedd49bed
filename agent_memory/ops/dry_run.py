"""What a maintenance run would do, counted read-only (``agent-memory decay --dry-run``).

Each count follows the step it stands for, so a dry run reports what a run started at the
same moment would report, not an approximation:

- decay: :meth:`DecayJob.run <agent_memory.memory.long_term.decay.DecayJob.run>` with ``dry_run``;
- credits: actions with a pending credit, per agent as the repair walks them, up to its limit;
- sessions: the stale sessions, and in delete mode their messages counted in the
  ``messages`` collection (a session's ``message_count`` is a counter that can drift);
- actions: the batches retention would take (claimed batches first, then one batch per
  ``retention_batch_size`` logs of one UTC day, agent after agent) up to
  ``retention_max_batches``; ``more`` says logs would be left for the next run.

Counting happens at one moment: work that arrives (or is done by a run) before the real run
starts changes what that run finds. Every query leads with ``agent_id`` or the status
fields, which the collections' indexes start with.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from agent_memory.memory.conversation import queries as q
from agent_memory.memory.episodic.memory import LOGS
from agent_memory.memory.episodic.records import day_start
from agent_memory.memory.long_term.decay import DecayReport
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo import _driver
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.batches import BOUND

__all__ = ["count_run"]

#: Stale sessions read per query when counting their messages (an ``$or`` of one scope
#: each: bounded as every such list, :mod:`agent_memory.mongo.batches`).
_SESSIONS_PER_COUNT = BOUND


def empty_counts(decay: DecayReport) -> dict[str, Any]:
    """A run's counts (the fields of ``MaintenanceReport``) before its retention steps."""
    return {
        "decay": decay,
        "credits_repaired": 0,
        "sessions_archived": 0,
        "sessions_deleted": 0,
        "messages_deleted": 0,
        "actions_summarised": 0,
        "actions_deleted": 0,
        "more": False,
    }


async def count_run(
    memories: MemorySystem,
    *,
    agent: str | None,
    now: datetime,
    retention: bool,
    credit_limit: int,
    step: Callable[[str], None],
) -> dict[str, Any]:
    """The counts a run would report (the fields of ``MaintenanceReport``), read-only."""
    decay = await memories.decay.run(agent_id=agent, now=now, dry_run=True)
    step("decay")
    counts = empty_counts(decay)
    if not retention:
        return counts
    logs = memories.connection.collection(LOGS)
    with translate_errors("counting what maintenance would do"):
        agents = [agent] if agent else sorted(await logs.distinct("agent_id"))
        counts["credits_repaired"] = await _pending_credits(logs, agents, credit_limit)
        step("credits")
        counts.update(await _sessions(memories, agent, now))
        step("sessions")
        actions, more = await _actions(memories, logs, agents, now)
        counts["actions_summarised"] = counts["actions_deleted"] = actions
        counts["more"] = more
        step("actions")
    return counts


async def _pending_credits(logs: Any, agents: list[str], limit: int) -> int:
    found = 0
    for agent in agents:
        query = {"agent_id": {"$eq": agent}, "feedback.pending.op": {"$exists": True}}
        found += await logs.count_documents(query, limit=limit - found)
        if found >= limit:
            break
    return found


async def _sessions(memories: MemorySystem, agent: str | None, now: datetime) -> dict[str, int]:
    config = memories.conversation.config
    archive = config.retention_mode == "archive"
    cutoff = now - timedelta(days=config.retention_days)
    stale = q.stale_sessions(archive=archive, cutoff=cutoff, agent_id=agent)
    sessions = memories.conversation.sessions
    if archive:
        return {"sessions_archived": await _driver.count(sessions, stale)}
    found = messages = 0
    fields = {"_id": 1, "agent_id": 1, "user_id": 1, "session_id": 1}
    cursor = sessions.find(stale, fields).sort("_id", 1)
    batch: list[dict[str, Any]] = []
    async for session in cursor:
        batch.append(session)
        if len(batch) == _SESSIONS_PER_COUNT:
            messages += await _messages_of(memories, batch)
            found += len(batch)
            batch = []
    if batch:
        messages += await _messages_of(memories, batch)
        found += len(batch)
    return {"sessions_deleted": found, "messages_deleted": messages}


async def _messages_of(memories: MemorySystem, sessions: list[dict[str, Any]]) -> int:
    scopes = {"$or": q.session_scopes(sessions)}
    return await _driver.count(memories.conversation.messages, scopes)


async def _actions(
    memories: MemorySystem, logs: Any, agents: list[str], now: datetime
) -> tuple[int, bool]:
    """Logs the batches within the limit would summarise, and whether any would be left."""
    config = memories.episodic.config
    cutoff = day_start(now - timedelta(days=config.retention_days))
    size, budget = config.retention_batch_size, config.retention_max_batches
    taken = batches = 0
    for agent in agents:
        claimed = await _driver.aggregate(
            logs,
            [
                {"$match": {"agent_id": {"$eq": agent}, "retention_batch": {"$exists": True}}},
                {"$group": {"_id": "$retention_batch", "n": {"$sum": 1}}},
                {"$sort": {"_id": 1}},
            ],
        )
        days = await _driver.aggregate(
            logs,
            [
                {
                    "$match": {
                        "agent_id": {"$eq": agent},
                        "timestamp": {"$lt": cutoff},
                        "retention_batch": {"$exists": False},
                    }
                },
                {
                    "$group": {
                        "_id": {"$dateToString": {"format": "%Y-%m-%d", "date": "$timestamp"}},
                        "n": {"$sum": 1},
                    }
                },
                {"$sort": {"_id": 1}},
            ],
        )
        # A claimed batch is one batch whatever its size; a day's logs take one batch per
        # ``size`` of them (a batch never spans two days).
        planned = [int(row["n"]) for row in claimed]
        for row in days:
            n = int(row["n"])
            planned += [size] * (n // size) + ([n % size] if n % size else [])
        for n in planned:
            if batches >= budget:
                return taken, True
            batches += 1
            taken += n
    return taken, False

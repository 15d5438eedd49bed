"""The worker that forms memories from queued jobs, off the user's critical path.

>>> worker = FormationWorker(memories, chat_model, queue=queue)    # doctest: +SKIP
>>> worker.start()                                                 # a background task
>>> ...
>>> await worker.aclose()                                          # before closing the connection

One job, step by step (each guarded write also renews the lease, see :mod:`.queue`):

1. claim the oldest due job;
2. plan (unless a previous attempt left one): read the formation cursor and the session's
   newest messages, keep those after the cursor, extract memories from them (one chat call,
   or the rules offline), record the extraction and ``messages_through`` on the job;
3. apply the profile patch (only fields that differ), mark ``profile``;
4. store notes and facts (consolidated: repeats reinforce, keyed changes supersede), mark
   ``memories``;
5. complete: the job becomes the session's cursor.

A failure calls :meth:`FormationQueue.fail` with the error's type (logged, never the text). A
cancelled worker (``aclose``) leaves its job running: another worker takes it over when the
lease expires and resumes from the recorded plan and steps, so nothing is half-completed and
nothing is formed twice.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from agent_memory._log import get_logger
from agent_memory.checks import check_count, check_seconds
from agent_memory.formation.extraction import Extraction, extract, insert_schema, patch_schema
from agent_memory.formation.queue import FormationQueue, Job
from agent_memory.memory.conversation.records import ConversationMessage
from agent_memory.memory.long_term.profile import PatchOp
from agent_memory.memory.long_term.records import NewMemory
from agent_memory.memory.system import MemorySystem
from agent_memory.providers.chat.base import ChatModel

__all__ = ["FormationWorker", "profile_changes"]

logger = get_logger(__name__)


def profile_changes(
    current: Mapping[str, Any], patch: Mapping[str, Any], *, restate: bool = False
) -> list[PatchOp]:
    """The patch operations that bring ``current`` up to ``patch``, and nothing more: object
    fields are merged key by key (``None`` removes a key), array fields gain missing items,
    other fields are set when they differ. A repeat gives no operation (no new version),
    unless ``restate``: then other fields said again are set again (to record where they
    were said, see :meth:`ProfileMemory.patch`)."""
    ops: list[PatchOp] = []
    for name, value in patch.items():
        old = current.get(name)
        if value is None:
            if name in current:
                ops.append(PatchOp("remove", name))
        elif isinstance(value, Mapping):
            # Only the changed keys, merged into the profile as it is when written: a
            # concurrent formation of the same user adding other keys is not overwritten.
            base = old if isinstance(old, Mapping) else {}
            changed = {
                k: v
                for k, v in value.items()
                if base.get(k) != v and not (v is None and k not in base)
            }
            if changed or not isinstance(old, Mapping):
                ops.append(PatchOp("merge", name, changed))
        elif isinstance(value, list) and isinstance(old, list):
            ops.extend(PatchOp("add", name, item) for item in value if item not in old)
        elif restate or value != old:
            ops.append(PatchOp("set", name, value))
    return ops


class FormationWorker:
    """Claims formation jobs and forms memories into ``memories`` (profile, notes, facts).

    ``chat_model`` extracts; an offline model (or ``None``) means the rule-based extractor.
    A job reads the session's oldest unformed messages, at most ``max_messages`` within
    ``max_tokens``; a longer backlog is left to a follow-up job scheduled at once, so every
    message is formed from exactly once, in order.

    ``concurrency`` jobs are worked at once as a background task (:meth:`run_forever`): a
    job is a dozen dependent round trips and a model call, so one at a time a worker spends
    most of its time waiting; the jobs in flight are of different users (the queue never
    runs two jobs of one user at once). ``jobs_worked`` counts the jobs
    this worker claimed and finished working, whatever the outcome.
    """

    def __init__(
        self,
        memories: MemorySystem,
        chat_model: ChatModel | None,
        *,
        queue: FormationQueue,
        worker_id: str | None = None,
        poll_interval: float = 1.0,
        max_messages: int = 200,
        max_tokens: int = 16_000,
        concurrency: int = 4,
    ) -> None:
        self.memories = memories
        self.chat_model = chat_model
        self.queue = queue
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.poll_interval = check_seconds(poll_interval, "poll_interval")
        self.max_messages = max_messages
        self.max_tokens = max_tokens
        self.concurrency = check_count(concurrency, "concurrency", maximum=64)
        self.schemas = tuple(memories.profiles.schemas.values())
        self.jobs_worked = 0
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None

    # --- one job --------------------------------------------------------------------------

    async def run_once(self, now: datetime | None = None) -> bool:
        """Claim one due job and work it; ``False`` if none was due."""
        job = await self.queue.claim(self.worker_id, now=now)
        if job is None:
            return False
        await self._run(job, now)
        return True

    async def _run(self, job: Job, now: datetime | None = None) -> None:
        """Work a claimed job; an error is recorded on the job, never raised."""
        try:
            await self._work(job, now)
        except Exception as exc:  # CancelledError is not caught: the lease expires instead
            try:
                await self.queue.fail(job, exc, now=now)
            except Exception as again:
                # The job stays running; another worker takes it over after the lease.
                logger.error(
                    "formation_job_fail_unrecorded",
                    job_id=job.id,
                    error=type(exc).__name__,
                    cause=type(again).__name__,
                )
        self.jobs_worked += 1

    async def _work(self, job: Job, now: datetime | None) -> None:
        if job.plan is None:
            planned = await self._plan(job, now)
            if planned is None:
                return
            job = planned
        assert job.plan is not None
        extraction = Extraction.model_validate(job.plan["extraction"])
        if "profile" not in job.steps:
            await self._apply_profile(job, extraction)
            marked = await self.queue.mark_step(job, "profile", now=now)
            if marked is None:
                return  # another worker holds the job now; its result counts
            job = marked
        if "memories" not in job.steps:
            stored = await self._apply_memories(job, extraction)
            marked = await self.queue.mark_step(job, "memories", now=now)
            if marked is None:
                return
            job = marked
        else:
            stored = 0
        if await self.queue.complete(job, now=now):
            _formed(job, job.plan.get("messages"), extraction, stored)
            await self._follow_up(job, bool(job.plan.get("backlog")), now)

    async def _follow_up(self, job: Job, backlog: bool, now: datetime | None) -> None:
        """After a job that formed only part of a long backlog: the next piece, at once.
        (Scheduled only once the cursor moved, so the pieces never overlap.)"""
        if backlog:
            logger.info("formation_backlog", job_id=job.id, session_id=job.session_id)
            await self.queue.schedule(job.tenant, job.session_id, now=now, delay=0)

    async def _plan(self, job: Job, now: datetime | None) -> Job | None:
        tenant, session_id = job.tenant, job.session_id
        after = await self.queue.formed_through(tenant, session_id)
        # The oldest unformed messages first, a piece at a time: a backlog longer than one
        # piece (a worker that was down for long) is formed piece by piece, nothing skipped.
        unformed = await self.memories.conversation.messages_after(
            tenant, session_id, after, limit=self.max_messages + 1
        )
        new = _fit(unformed[: self.max_messages], self.max_tokens)
        backlog = len(new) < len(unformed)
        if not new:
            # Everything was formed already (e.g. by the job running when this was scheduled).
            await self.queue.complete(job, messages_through=after, now=now)
            return None
        patch = patch_schema(self.schemas)
        current = await self.memories.profiles.get(tenant, patch.name) if patch else None
        extraction = await extract(
            self.chat_model,
            new,
            schemas=self.schemas,
            profile=current.data if current is not None else None,
        )
        through = new[-1].seq
        if extraction.empty:
            if await self.queue.complete(job, messages_through=through, now=now):
                _formed(job, len(new), extraction, 0)  # nothing to remember: said all the same
                await self._follow_up(job, backlog, now)
            return None
        plan = {
            "after": after,
            "extraction": extraction.model_dump(mode="json"),
            "backlog": backlog,
            "messages": len(new),
            # When the last of them was said: the memories formed from them are dated by it.
            "occurred_at": new[-1].occurred_at,
        }
        return await self.queue.record_plan(job, plan, messages_through=through, now=now)

    async def _apply_profile(self, job: Job, extraction: Extraction) -> None:
        patch = patch_schema(self.schemas)
        if patch is None or not extraction.profile:
            return
        profiles = self.memories.profiles
        current = await profiles.get(job.tenant, patch.name)
        # Said where the job's messages end, so that a session formed late does not undo a
        # newer value (as for keyed memories); a value said again is recorded as said again,
        # or a change said between the two but formed after both would win.
        said = job.messages_through
        ops = profile_changes(current.data, extraction.profile, restate=said is not None)
        if ops:
            await profiles.patch(job.tenant, ops, schema=patch.name, said=said)

    async def _apply_memories(self, job: Job, extraction: Extraction) -> int:
        insert = insert_schema(self.schemas)
        stored = 0
        if insert is not None and extraction.notes:
            notes = [note.model_dump(exclude_none=True) for note in extraction.notes]
            stored += len(await self.memories.profiles.add_many(job.tenant, insert.name, notes))
        if extraction.facts:
            source = {
                "formation_job": job.id,
                "session_id": job.session_id,
                "messages_through": job.messages_through,
            }
            occurred = job.plan.get("occurred_at")  # none in a plan recorded before it was
            items = [
                NewMemory(
                    fact.content,
                    memory_type=fact.memory_type,
                    importance=fact.importance,
                    tags=("formation",),
                    key=fact.key,
                    source=source,
                    occurred_at=_aware(occurred),
                )
                for fact in extraction.facts
            ]
            stored += len(await self.memories.long_term.store_many(job.tenant, items))
        return stored

    # --- as a background task ---------------------------------------------------------------

    async def run_forever(self, stop: asyncio.Event) -> None:
        """Work due jobs, up to ``concurrency`` at once, until ``stop`` is set; poll every
        ``poll_interval`` when none is due. Errors outside a job (the database unreachable)
        are logged and retried after a poll interval. Once ``stop`` is set no job is claimed
        and the jobs in hand are finished; cancelling this task cancels them (their leases
        expire and another worker resumes them)."""
        lanes = asyncio.Semaphore(self.concurrency)
        async with asyncio.TaskGroup() as jobs:
            while not stop.is_set():
                await lanes.acquire()
                if stop.is_set():
                    lanes.release()
                    break
                try:
                    job = await self.queue.claim(self.worker_id)
                except Exception as exc:
                    logger.warning("formation_worker_error", error=type(exc).__name__)
                    job = None
                if job is not None:
                    task = jobs.create_task(self._run(job), name=f"formation-job:{job.id}")
                    task.add_done_callback(lambda _: lanes.release())
                    await asyncio.sleep(0)  # let the loop breathe between claims
                    continue
                lanes.release()
                try:
                    await asyncio.wait_for(stop.wait(), timeout=self.poll_interval)
                except TimeoutError:
                    pass

    def start(self) -> None:
        """Run :meth:`run_forever` as a background task of the running loop."""
        if self._task is not None and not self._task.done():
            return
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(
            self.run_forever(self._stop), name=f"formation-worker:{self.worker_id}"
        )
        logger.info("formation_worker_started", worker=self.worker_id)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def aclose(self, *, grace: float = 5.0) -> None:
        """Stop the background task: a job in progress may finish within ``grace`` seconds,
        else it is cancelled and left to lease expiry. Safe to call more than once."""
        task, self._task = self._task, None
        if task is None:
            return
        assert self._stop is not None
        self._stop.set()
        if grace > 0:
            await asyncio.wait({task}, timeout=grace)
        if not task.done():
            task.cancel()
        (outcome,) = await asyncio.gather(task, return_exceptions=True)
        if isinstance(outcome, Exception):  # run_forever logs its own; this is a last resort
            logger.error("formation_worker_crashed", error=type(outcome).__name__)
        logger.info("formation_worker_stopped", worker=self.worker_id)

    async def __aenter__(self) -> FormationWorker:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _formed(job: Job, messages: int | None, extraction: Extraction, stored: int) -> None:
    """The one line a job formed logs (an extraction of nothing included: the job is done)."""
    logger.info(
        "memories_formed",
        job_id=job.id,
        agent_id=job.agent_id,
        session_id=job.session_id,
        messages=messages,
        profile_fields=len(extraction.profile),
        notes=len(extraction.notes),
        facts=len(extraction.facts),
        stored=stored,
    )


def _fit(messages: list[ConversationMessage], max_tokens: int) -> list[ConversationMessage]:
    """The longest prefix of ``messages`` within ``max_tokens`` (at least the first one)."""
    total = 0
    for index, message in enumerate(messages):
        total += message.tokens
        if index and total > max_tokens:
            return messages[:index]
    return messages


def _aware(moment: object) -> datetime | None:
    """A time read back from a job's plan, in UTC (a driver without ``tz_aware`` returns
    naive UTC times); anything else is ``None``."""
    if not isinstance(moment, datetime):
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)

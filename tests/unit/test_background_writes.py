"""Background writes are tried again after a transient failure and lose nothing; a write the
server refuses for good is not retried; every list goes to the server in bounded parts."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo.errors import AutoReconnect, OperationFailure, WriteError
from structlog.testing import capture_logs

from agent_memory.errors import StorageError, StorageUnavailableError
from agent_memory.memory import background
from agent_memory.memory.background import BackgroundWrites, worth_retrying
from agent_memory.memory.long_term import access
from agent_memory.memory.long_term.access import AccessRecorder
from agent_memory.mongo._errors import map_error
from agent_memory.mongo.batches import BOUND, slices
from agent_memory.tenancy import Tenant

ALICE = Tenant("agent", "alice")
T1 = datetime(2026, 1, 1, tzinfo=UTC)
T2 = T1 + timedelta(minutes=5)
BUSY = OperationFailure("SQLiteEngine has an active transaction bound to another session")


class Updated:
    matched_count = modified_count = 0


class Memories:
    """A collection double: applies each ``update_many`` of access statistics, after the
    failures it was given (``before(failing)`` runs as each failure is raised)."""

    def __init__(self, *failures: Exception, before: Any = None) -> None:
        self.failures = list(failures)
        self.before = before
        self.calls: list[list[str]] = []
        self.counts: dict[str, int] = defaultdict(int)
        self.last: dict[str, datetime] = {}

    async def update_many(self, query: dict[str, Any], update: dict[str, Any]) -> Updated:
        ids = query["_id"]["$in"]
        self.calls.append(ids)
        if self.failures:
            if self.before is not None:
                self.before()
            raise self.failures.pop(0)
        for memory_id in ids:
            self.counts[memory_id] += update["$inc"]["access_count"]
            seen = self.last.get(memory_id, update["$max"]["last_accessed"])
            self.last[memory_id] = max(seen, update["$max"]["last_accessed"])
        return Updated()


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    monkeypatch.setattr(access, "RETRY_DELAYS", (0.01, 0.01, 0.01))
    monkeypatch.setattr(background, "RETRY_DELAYS", (0.01, 0.01, 0.01))


def warnings(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["log_level"] == "warning"]


async def test_a_flush_that_fails_transiently_is_tried_again_with_what_arrived_meanwhile():
    writes = BackgroundWrites()
    recorder: AccessRecorder

    def meanwhile() -> None:  # a retrieval while the failed write was on its way
        recorder.record(ALICE, ["m1"], T2)

    memories = Memories(AutoReconnect("connection reset"), before=meanwhile)
    recorder = AccessRecorder(memories, writes)
    with capture_logs() as logs:
        recorder.record(ALICE, ["m1", "m2"], T1)
        await writes.drain()
    assert dict(memories.counts) == {"m1": 2, "m2": 1}  # counts add
    assert memories.last == {"m1": T2, "m2": T1}  # the latest time wins
    assert recorder.pending == 0 and not warnings(logs)


async def test_a_busy_embedded_server_or_an_unavailable_one_is_waited_for():
    writes = BackgroundWrites()
    unavailable = map_error(AutoReconnect("down"), "recording memory accesses")
    memories = Memories(BUSY, unavailable)
    recorder = AccessRecorder(memories, writes)
    recorder.record(ALICE, ["m1"], T1)
    await writes.drain()
    assert dict(memories.counts) == {"m1": 1} and len(memories.calls) == 3


async def test_a_write_refused_for_good_is_not_tried_again_and_the_rest_is_written():
    writes = BackgroundWrites()
    refused = WriteError("$inc requires the target field to be numeric", 14)
    memories = Memories(refused)
    recorder = AccessRecorder(memories, writes)
    ids = [f"m{n}" for n in range(BOUND + 1)]  # two parts: the first is refused
    with capture_logs() as logs:
        recorder.record(ALICE, ids, T1)
        await writes.drain()
    assert len(memories.calls) == 2 and set(memories.counts) == {ids[-1]}
    (lost,) = warnings(logs)
    assert lost["event"] == "background_write_failed" and lost["memories"] == BOUND
    assert lost["attempts"] == 1 and "m0" not in str(lost)


async def test_a_flush_gives_up_after_its_last_attempt_and_says_so_once():
    writes = BackgroundWrites()
    memories = Memories(*[AutoReconnect("down")] * 10)
    recorder = AccessRecorder(memories, writes)
    with capture_logs() as logs:
        recorder.record(ALICE, ["m1", "m2"], T1)
        await asyncio.wait_for(writes.drain(), timeout=30)
    assert len(memories.calls) == 1 + len(access.RETRY_DELAYS) and not memories.counts
    (lost,) = warnings(logs)
    assert (
        lost["memories"] == 2
        and lost["attempts"] == 4
        and lost["error"] == "StorageUnavailableError"
    )
    assert recorder.pending == 0 and not recorder._flushing


async def test_every_update_of_a_flush_names_a_bounded_list_of_ids():
    writes = BackgroundWrites()
    memories = Memories()
    recorder = AccessRecorder(memories, writes)
    ids = [f"m{n}" for n in range(5 * BOUND + 7)]
    recorder.record(ALICE, ids, T1)
    recorder.record(ALICE, ids[:3], T2)
    await writes.drain()
    assert max(len(call) for call in memories.calls) <= BOUND
    assert sum(memories.counts.values()) == len(ids) + 3


async def test_a_scheduled_write_is_run_again_after_a_transient_failure_only():
    writes = BackgroundWrites()
    attempts: list[str] = []

    def write(*failures: Exception) -> Any:
        pending = list(failures)

        async def run() -> None:
            attempts.append("try")
            if pending:
                raise pending.pop(0)

        return run

    with capture_logs() as logs:
        writes.schedule_retried(write(AutoReconnect("reset"), BUSY), "touch")
        await writes.drain()
    assert len(attempts) == 3 and not warnings(logs)
    attempts.clear()
    with capture_logs() as logs:
        writes.schedule_retried(write(WriteError("bad document", 14)), "touch")
        await writes.drain()
    assert len(attempts) == 1
    assert [e["event"] for e in warnings(logs)] == ["background_write_failed"]


def test_what_is_worth_retrying():
    assert worth_retrying(AutoReconnect("reset"))
    assert worth_retrying(BUSY)
    assert worth_retrying(StorageUnavailableError("the database cannot be reached"))
    assert worth_retrying(map_error(AutoReconnect("reset"), "writing"))
    assert not worth_retrying(WriteError("$inc requires numeric values", 14))
    assert not worth_retrying(map_error(OperationFailure("Expression tree is too large"), "w"))
    assert not worth_retrying(StorageError("rejected"))
    assert not worth_retrying(ValueError("a bug"))


def test_slices_keep_order_and_bound():
    assert list(slices([])) == []
    assert list(slices(range(5), 2)) == [[0, 1], [2, 3], [4]]
    assert [len(part) for part in slices(range(2 * BOUND + 1))] == [BOUND, BOUND, 1]
    with pytest.raises(ValueError):
        list(slices([1], 0))

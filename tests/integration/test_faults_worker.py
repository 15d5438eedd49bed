"""A formation worker process is SIGKILLed while it holds a job; another process takes the job
over once the lease ran out and forms the memories once.

tests/integration/test_formation.py proves the same takeover in-process with injected time;
here the workers are real processes (``sys.executable``) on the session's embedded server, the
kill is a real SIGKILL, time is real, and extraction goes through the real AnthropicChatModel
to a loopback stub of the messages API (which can hold a request open, so the first worker is
killed while it waits for the model).
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.loopback import serve_app

pytest.importorskip("anthropic")

from agent_memory.formation import FormationQueue
from agent_memory.memory.conversation.memory import NewMessage
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo.indexes import IndexManager
from agent_memory.tenancy import Tenant

ANA = Tenant("agent", "ana")
LEASE = 3.0  # seconds; the workers' queue leases jobs for this long
EXTRACTION = {
    "profile": {"user_name": "Ana", "home": "Lisbon"},
    "notes": [{"content": "Wants to see cherry blossoms in Kyoto", "context": "April trip"}],
    "facts": [
        {"content": "The user lives in Lisbon.", "key": "home", "importance": 0.8},
        {"content": "The user is vegetarian.", "key": "diet", "importance": 0.7},
    ],
}
FORMED = 3  # one note and two facts

# A worker process: claims due jobs until it has worked one and none is left, then prints a
# summary. With HOLD=memories it stops for good once it stored the job's memories, before it
# records that step (where a kill hurts most: memories written, the job not told). With
# WAIT=wait it starts polling only once told on stdin, so it is running before the kill.
WORKER = r"""
import asyncio, json, sys
import structlog
structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
from agent_memory.config import load_settings
from agent_memory.formation import FormationQueue, FormationWorker
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo.connection import connect
from agent_memory.providers._retry import RetryPolicy
from agent_memory.providers.chat.anthropic import AnthropicChatModel
from agent_memory.providers.embedders.fake import FakeEmbedder

async def main():
    uri, database, stub_url, name, lease, hold, wait = sys.argv[1:8]
    connection = await connect(load_settings(mongodb_uri=uri, database=database, embedder="fake"))
    memories = MemorySystem(connection, FakeEmbedder())
    chat = AnthropicChatModel(
        "claude-stub", api_key="sk-ant-stub", base_url=stub_url, timeout=600,
        retry=RetryPolicy(attempts=1),
    )
    queue = FormationQueue(connection, debounce_seconds=0, lease_seconds=float(lease))
    if hold == "memories":
        mark_step = queue.mark_step
        async def held(job, step, **kwargs):
            if step == "memories":
                print("stored", flush=True)
                await asyncio.Event().wait()
            return await mark_step(job, step, **kwargs)
        queue.mark_step = held
    worker = FormationWorker(memories, chat, queue=queue, worker_id=name)
    print("ready", flush=True)
    if wait == "wait":
        await asyncio.to_thread(sys.stdin.readline)
    worked = 0
    while True:
        if await worker.run_once():
            worked += 1
        elif worked:
            break
        else:
            await asyncio.sleep(0.05)
    print(json.dumps({"worked": worked}), flush=True)
    await memories.aclose()
    await chat.aclose()
    await connection.close()

asyncio.run(main())
"""


class ModelStub:
    """The messages API answering with EXTRACTION; the first ``hold`` requests get no answer
    (until the test ends), like a model call in flight when its worker is killed."""

    def __init__(self, hold: int = 0) -> None:
        self.hold = hold
        self.url = ""
        self.requests: list[float] = []
        self.released = asyncio.Event()

    async def messages(self, request: web.Request) -> web.StreamResponse:
        await request.json()
        self.requests.append(time.monotonic())
        if len(self.requests) <= self.hold:
            await self.released.wait()
        reply = {
            "id": "msg_stub",
            "type": "message",
            "role": "assistant",
            "model": "claude-stub",
            "content": [{"type": "text", "text": json.dumps(EXTRACTION)}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 20, "output_tokens": 50},
        }
        return web.json_response(reply)


@asynccontextmanager
async def serving(stub: ModelStub) -> AsyncIterator[ModelStub]:
    app = web.Application()
    app.router.add_post("/v1/messages", stub.messages)
    async with serve_app(app) as stub.url:
        try:
            yield stub
        finally:
            stub.released.set()


@pytest.fixture
async def memories(connection, embedder) -> AsyncIterator[MemorySystem]:
    await IndexManager(connection, embedder.signature).setup()
    system = MemorySystem(connection, embedder)
    await system.conversation.append_turn(
        ANA,
        "s1",
        [
            NewMessage.user("I'm Ana from Lisbon, vegetarian, and I want to see sakura in Kyoto."),
            NewMessage.assistant("Noted!"),
        ],
    )
    yield system
    await system.aclose()


class Workers:
    """Starts worker processes; kills whatever is left at the end."""

    def __init__(self, embedded_server, settings, env: dict[str, str], logs: Path) -> None:
        self.uri, self.database = embedded_server.uri, settings.database
        self.env, self.logs = env, logs
        self.started: list[asyncio.subprocess.Process] = []

    async def start(
        self, name: str, stub: ModelStub, *, hold: str = "-", wait: bool = False
    ) -> asyncio.subprocess.Process:
        with (self.logs / f"{name}.log").open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                WORKER,
                self.uri,
                self.database,
                stub.url,
                name,
                str(LEASE),
                hold,
                "wait" if wait else "-",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                env=self.env,
            )
        self.started.append(process)
        assert await self.line(process) == "ready"
        return process

    @staticmethod
    async def go(process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None
        process.stdin.write(b"go\n")
        await process.stdin.drain()

    @staticmethod
    async def line(process: asyncio.subprocess.Process, timeout: float = 60) -> str:
        assert process.stdout is not None
        return (await asyncio.wait_for(process.stdout.readline(), timeout)).decode().strip()

    async def kill(self, process: asyncio.subprocess.Process) -> None:
        process.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(process.wait(), 30) == -signal.SIGKILL

    async def finish(self, process: asyncio.subprocess.Process) -> dict[str, Any]:
        summary = json.loads(await self.line(process, timeout=60))
        assert await asyncio.wait_for(process.wait(), 30) == 0
        return summary

    async def aclose(self) -> None:
        for process in self.started:
            if process.returncode is None:
                process.kill()
                await process.wait()


@pytest.fixture
async def workers(embedded_server, settings, offline_env, tmp_path) -> AsyncIterator[Workers]:
    started = Workers(embedded_server, settings, offline_env, tmp_path)
    try:
        yield started
    finally:
        await started.aclose()


async def until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)


async def assert_formed_once(memories: MemorySystem, queue: FormationQueue, killed) -> None:
    """Done by the second worker, after the first one's lease; memories and profile once."""
    (job,) = await queue.jobs(ANA, "s1")
    assert (job.status, job.worker, job.attempts) == ("done", "w2", 2)
    doc = await queue.collection.find_one({"_id": job.id})
    claimed_at = doc["claimed_at"].replace(tzinfo=UTC)
    assert claimed_at >= killed.lease_until  # taken over after the lease, not before
    # ...and promptly: the second worker was polling (every 50 ms) all along.
    assert (claimed_at - killed.lease_until).total_seconds() < 2
    profile = await memories.profiles.get(ANA)
    assert profile.data == EXTRACTION["profile"] and profile.version == 1
    docs = await memories.long_term.collection.find(ANA.filter()).to_list(None)
    contents = sorted(doc["content"] for doc in docs)
    assert len(contents) == FORMED and len(set(contents)) == FORMED
    assert contents == sorted(
        [EXTRACTION["notes"][0]["content"], *(fact["content"] for fact in EXTRACTION["facts"])]
    )


async def test_a_worker_killed_while_extracting_is_taken_over_after_the_lease(
    memories, connection, workers
):
    queue = FormationQueue(connection, debounce_seconds=0, lease_seconds=LEASE)
    await queue.schedule(ANA, "s1")
    stub = ModelStub(hold=1)
    async with serving(stub):
        second = await workers.start("w2", stub, wait=True)  # started, not polling yet
        first = await workers.start("w1", stub)
        await until(lambda: len(stub.requests) == 1)  # w1 claimed the job and asked the model
        await workers.kill(first)
        killed_at = datetime.now(UTC)
        (held,) = await queue.jobs(ANA, "s1")
        assert (held.status, held.worker, held.attempts, held.plan) == ("running", "w1", 1, None)
        assert held.lease_until is not None and held.lease_until > killed_at  # still leased
        assert (await memories.profiles.get(ANA)).version == 0

        await workers.go(second)  # polls now, but the job is leased to the dead w1 until...
        assert await workers.finish(second) == {"worked": 1}
        assert len(stub.requests) == 2  # the takeover extracted again: nothing was recorded
        await assert_formed_once(memories, queue, held)


async def test_a_worker_killed_after_storing_memories_is_resumed_without_duplicates(
    memories, connection, workers
):
    queue = FormationQueue(connection, debounce_seconds=0, lease_seconds=LEASE)
    await queue.schedule(ANA, "s1")
    stub = ModelStub()
    async with serving(stub):
        second = await workers.start("w2", stub, wait=True)
        first = await workers.start("w1", stub, hold="memories")
        assert await workers.line(first) == "stored"
        await workers.kill(first)
        (held,) = await queue.jobs(ANA, "s1")
        assert (held.status, held.worker, held.steps) == ("running", "w1", ("profile",))
        assert held.plan is not None
        assert (await memories.profiles.get(ANA)).version == 1
        assert await memories.long_term.collection.count_documents(ANA.filter()) == FORMED

        await workers.go(second)
        assert await workers.finish(second) == {"worked": 1}
        assert len(stub.requests) == 1  # the takeover applied the recorded plan: no model call
        await assert_formed_once(memories, queue, held)

"""Durable, debounced memory formation on the embedded server: the queue's state machine, the
worker, crashes and failures. Time is injected (``now=``), so nothing sleeps."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.errors import ConfigurationError, InvalidInputError
from agent_memory.formation import FormationQueue, FormationWorker
from agent_memory.memory.conversation.memory import NewMessage
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.chat.fake import FakeChatModel
from agent_memory.providers.chat.offline import OfflineChatModel
from agent_memory.tenancy import Tenant
from tests.waiting import until

XIAOMING = Tenant("travel", "xiaoming")
ANA = Tenant("travel", "ana")
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
DEBOUNCE, LEASE = 30.0, 60.0


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture
async def memories(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    system = MemorySystem(connection, embedder)
    yield system
    await system.aclose()


@pytest.fixture(params=["one command", "candidates"])
def queue(connection, request) -> FormationQueue:
    """The queue, claiming either way on any server: one findAndModify with a sort (MongoDB),
    or the due jobs read first, each way on its own index (the embedded server)."""
    made = FormationQueue(
        connection,
        debounce_seconds=DEBOUNCE,
        lease_seconds=LEASE,
        max_attempts=3,
        retry_base_seconds=10.0,
    )
    made._by_candidates = request.param == "candidates"
    return made


def worker(memories, queue, name: str, chat=None) -> FormationWorker:
    return FormationWorker(memories, chat or OfflineChatModel(), queue=queue, worker_id=name)


async def say(memories, tenant: Tenant, session: str, text: str) -> None:
    await memories.conversation.append_turn(
        tenant, session, [NewMessage.user(text), NewMessage.assistant("好的 / OK")]
    )


async def count_memories(memories, tenant: Tenant) -> int:
    return await memories.long_term.collection.count_documents(tenant.filter())


async def test_a_burst_is_debounced_into_one_job_and_formed_once(memories, queue):
    ids = []
    for offset, text in enumerate(["我叫小明。", "下次订票请帮我选靠窗。", "我吃素食。"]):
        await say(memories, XIAOMING, "s1", text)
        ids.append(await queue.schedule(XIAOMING, "s1", now=at(offset * 10)))
    assert len(set(ids)) == 1
    (job,) = await queue.jobs(XIAOMING, "s1")
    assert job.status == "pending" and job.run_after == at(20 + DEBOUNCE)

    w = worker(memories, queue, "w1")
    assert await w.run_once(now=at(20 + DEBOUNCE - 1)) is False  # not due yet
    assert await w.run_once(now=at(20 + DEBOUNCE)) is True
    assert await w.run_once(now=at(1000)) is False

    profile = await memories.profiles.get(XIAOMING)
    assert profile.data == {"user_name": "小明", "preferences": {"座位": "靠窗", "饮食": "素食"}}
    assert profile.version == 1
    assert await count_memories(memories, XIAOMING) == 3
    (done,) = await queue.jobs(XIAOMING, "s1")
    assert done.status == "done" and done.plan is None
    assert done.messages_through == (await memories.conversation.window(XIAOMING, "s1"))[-1].seq

    # Nothing new: a later job for the session forms nothing and adds no profile version.
    await queue.schedule(XIAOMING, "s1", now=at(2000))
    assert await w.run_once(now=at(2000 + DEBOUNCE)) is True
    assert (await memories.profiles.get(XIAOMING)).version == 1
    assert await count_memories(memories, XIAOMING) == 3
    assert [j.status for j in await queue.jobs(XIAOMING, "s1")] == ["done"]  # older pruned


async def test_claim_is_atomic(memories, queue):
    await queue.schedule(XIAOMING, "s1", now=T0)
    claims = await asyncio.gather(*(queue.claim(f"w{i}", now=at(DEBOUNCE)) for i in range(4)))
    held = [job for job in claims if job is not None]
    assert len(held) == 1
    assert held[0].attempts == 1 and held[0].lease_until == at(DEBOUNCE + LEASE)


async def test_claims_take_the_oldest_due_job_first_whichever_way_it_is_due(memories, queue):
    """Pending jobs whose time came and running jobs whose lease ran out, in one order:
    ``run_after``, then ``_id``."""
    for session, delay in (("late", 5), ("early", 0), ("taken", 1)):
        # A user each: one user's jobs are never running together (see the next test).
        await queue.schedule(Tenant("travel", session), session, now=T0, delay=delay)
    taken = await queue.claim("crashed", now=at(1))  # "early" (due at 0)
    assert taken is not None and taken.session_id == "early"
    # Its next job
    await queue.schedule(Tenant("travel", "early"), "early", now=at(1), delay=LEASE + 10)
    order = []
    while (job := await queue.claim("survivor", now=at(2 + LEASE))) is not None:
        order.append(job.session_id)
    assert order == ["early", "taken", "late"]  # the expired lease is the oldest job


async def test_one_users_sessions_are_formed_one_at_a_time(memories, queue):
    """Two sessions of one user never form together (their keyed facts would race): the
    second waits, deferred by a lease, while another user's job goes ahead of it."""
    await queue.schedule(ANA, "s1", now=T0)
    second = await queue.schedule(ANA, "s2", now=at(1))
    other = await queue.schedule(XIAOMING, "x1", now=at(2))
    first = await queue.claim("w1", now=at(DEBOUNCE + 5))
    assert first is not None and first.session_id == "s1"
    following = await queue.claim("w2", now=at(DEBOUNCE + 5))
    assert following is not None and following.id == other  # Ana's s2 is skipped
    assert await queue.claim("w3", now=at(DEBOUNCE + 5)) is None
    assert (await queue.get(second)).run_after == at(DEBOUNCE + 5 + LEASE)
    for job in (first, following):
        assert await queue.complete(job, messages_through=None, now=at(DEBOUNCE + 6))
    taken = await queue.claim("w3", now=at(DEBOUNCE + 5 + LEASE))
    assert taken is not None and taken.id == second


async def test_the_embedded_server_claims_without_a_sorted_find_and_modify(connection):
    queue = FormationQueue(connection, debounce_seconds=0)
    await queue.schedule(XIAOMING, "s1", now=T0)
    sent = []
    find_one_and_update = queue.collection.find_one_and_update

    async def noted(*args, **kwargs):
        sent.append(kwargs.get("sort"))
        return await find_one_and_update(*args, **kwargs)

    queue.collection.find_one_and_update = noted
    assert (await queue.claim("w", now=at(1))) is not None
    if connection.capabilities.mongoeco:  # its findAndModify with a sort reads every job
        assert sent == [None]
    else:
        assert sent == [[("run_after", 1), ("_id", 1)]]


async def test_a_crashed_workers_job_is_taken_over_after_the_lease(memories, queue):
    await say(memories, ANA, "s1", "My name is Ana. I prefer the window seat.")
    await queue.schedule(ANA, "s1", now=T0)
    crashed = await queue.claim("crashed", now=at(DEBOUNCE))  # ...and never heard of again
    assert crashed is not None

    survivor = worker(memories, queue, "survivor")
    assert await survivor.run_once(now=at(DEBOUNCE + LEASE - 1)) is False  # still leased
    assert await survivor.run_once(now=at(DEBOUNCE + LEASE)) is True
    (job,) = await queue.jobs(ANA, "s1")
    assert job.status == "done" and job.attempts == 2 and job.worker == "survivor"
    assert (await memories.profiles.get(ANA)).data["user_name"] == "Ana"
    # The crashed worker's late completion is refused: the lease is no longer its own.
    assert await queue.complete(crashed, now=at(500)) is False


async def test_a_crash_mid_apply_resumes_without_forming_twice(memories, queue):
    await say(memories, ANA, "s1", "My name is Ana. I'm vegetarian and I fly economy class.")
    await queue.schedule(ANA, "s1", now=T0)

    class Killed(BaseException):  # like a process kill: nothing gets to handle it
        pass

    first = worker(memories, queue, "first")
    apply = first._apply_memories

    async def store_then_die(job, extraction):
        await apply(job, extraction)  # the memories are written...
        raise Killed  # ...but the step is never marked and the job never completed

    first._apply_memories = store_then_die  # type: ignore[method-assign]
    with pytest.raises(Killed):
        await first.run_once(now=at(DEBOUNCE))
    (job,) = await queue.jobs(ANA, "s1")
    assert job.status == "running" and job.steps == ("profile",) and job.plan is not None
    stored = await count_memories(memories, ANA)
    assert stored == 3

    chat = FakeChatModel([])  # a resumed job reuses the recorded extraction: no model call
    second = worker(memories, queue, "second", chat)
    assert await second.run_once(now=at(DEBOUNCE + LEASE)) is True
    assert chat.requests == []
    assert await count_memories(memories, ANA) == stored  # repeats reinforce, never duplicate
    assert (await memories.profiles.get(ANA)).version == 1
    assert (await queue.jobs(ANA, "s1"))[0].status == "done"


async def test_failures_back_off_then_go_dead_and_form_nothing(memories, queue):
    await say(memories, ANA, "s1", "My name is Ana.")
    job_id = await queue.schedule(ANA, "s1", now=T0)
    broken = FakeChatModel(default="this is not JSON")
    w = worker(memories, queue, "w", broken)

    now = at(DEBOUNCE)
    for attempt, delay in ((1, 10), (2, 20)):
        assert await w.run_once(now=now) is True
        job = await queue.get(job_id)
        assert job is not None
        assert (job.status, job.attempts, job.last_error) == (
            "pending",
            attempt,
            "BadResponseError",
        )
        assert job.run_after == now + timedelta(seconds=delay)
        assert await w.run_once(now=job.run_after - timedelta(seconds=1)) is False
        now = job.run_after
    assert await w.run_once(now=now) is True
    dead = await queue.get(job_id)
    assert dead is not None and (dead.status, dead.attempts) == ("dead", 3)
    assert await w.run_once(now=at(100_000)) is False
    assert await count_memories(memories, ANA) == 0
    assert (await memories.profiles.get(ANA)).version == 0
    # A dead job does not move the cursor: the session's next job covers its messages again.
    assert await queue.formed_through(ANA, "s1") is None


async def test_a_very_long_word_is_formed_as_nothing_not_retried_until_dead(memories, queue):
    """Issue 35 review: one word of 8,000 letters after "I work at" made the offline rules
    raise, so the job failed on every attempt and went dead; it is no employer."""
    await say(memories, ANA, "s1", "I work at " + "A" * 7_990)
    await say(memories, ANA, "s1", "My name is Ana.")
    job_id = await queue.schedule(ANA, "s1", now=T0)
    assert await worker(memories, queue, "w").run_once(now=at(DEBOUNCE)) is True
    job = await queue.get(job_id)
    assert job is not None and (job.status, job.attempts, job.last_error) == ("done", 1, None)
    stored = await memories.long_term.list_memories(ANA)
    assert [m.content for m in stored] == ["The user's name is Ana."]


async def test_a_job_taken_over_too_often_goes_dead(memories, queue):
    await queue.schedule(ANA, "s1", now=T0)
    now = at(DEBOUNCE)
    for name in ("a", "b", "c"):
        assert await queue.claim(name, now=now) is not None
        now += timedelta(seconds=LEASE)
    assert await queue.claim("d", now=now) is None
    (job,) = await queue.jobs(ANA, "s1")
    assert (job.status, job.last_error) == ("dead", "LeaseExpired")


async def test_messages_after_a_claimed_job_get_a_new_job(memories, queue):
    await say(memories, ANA, "s1", "My name is Ana.")
    first_id = await queue.schedule(ANA, "s1", now=T0)
    held = await queue.claim("w1", now=at(DEBOUNCE))
    assert held is not None and held.id == first_id

    await say(memories, ANA, "s1", "I live in Lisbon.")
    second_id = await queue.schedule(ANA, "s1", now=at(DEBOUNCE + 1))
    assert second_id != first_id
    running = await queue.get(first_id)
    assert running is not None and running.run_after == at(DEBOUNCE)  # untouched

    # While the first job runs, the session is busy: the second is deferred, not doubled.
    assert await queue.claim("w2", now=at(2 * DEBOUNCE + 1)) is None
    w = worker(memories, queue, "w1")
    await w._work(held, at(2 * DEBOUNCE + 2))  # the first job finishes (it saw both messages)
    assert (await memories.profiles.get(ANA)).data == {"user_name": "Ana", "home": "Lisbon"}
    assert await w.run_once(now=at(1000)) is True  # the second finds nothing new
    assert (await memories.profiles.get(ANA)).version == 1

    # A message after the cursor is formed by its own job, and only it.
    await say(memories, ANA, "s1", "I work as a nurse.")
    await queue.schedule(ANA, "s1", now=at(2000))
    assert await w.run_once(now=at(2000 + DEBOUNCE)) is True
    profile = await memories.profiles.get(ANA)
    assert profile.version == 2 and profile.data["occupation"] == "nurse"


async def test_a_failed_job_merges_into_the_sessions_pending_job(memories, queue):
    await say(memories, ANA, "s1", "My name is Ana.")
    first_id = await queue.schedule(ANA, "s1", now=T0)
    held = await queue.claim("w1", now=at(DEBOUNCE))
    assert held is not None
    second_id = await queue.schedule(ANA, "s1", now=at(DEBOUNCE + 1))
    assert await queue.fail(held, RuntimeError("secret contents"), now=at(DEBOUNCE + 2)) == "merged"
    merged, pending = await queue.get(first_id), await queue.get(second_id)
    assert merged is not None and merged.last_error == "RuntimeError"  # the type, not the text
    assert pending is not None and pending.status == "pending" and pending.attempts == 1
    assert await worker(memories, queue, "w2").run_once(now=at(1000)) is True
    assert (await memories.profiles.get(ANA)).data == {"user_name": "Ana"}


async def test_structured_extraction_forms_profile_notes_and_facts(memories, queue):
    reply = {
        "profile": {"user_name": "Ana", "interests": ["jazz"]},
        "notes": [{"content": "Wants to see cherry blossoms in Kyoto", "context": "April trip"}],
        "facts": [{"content": "The user lives in Lisbon.", "key": "home", "importance": 0.8}],
    }
    chat = FakeChatModel([json.dumps(reply)])
    await say(memories, ANA, "s1", "I'm Ana from Lisbon; I love jazz and want to see sakura.")
    await queue.schedule(ANA, "s1", now=T0)
    assert await worker(memories, queue, "w", chat).run_once(now=at(DEBOUNCE)) is True
    assert (await memories.profiles.get(ANA)).data == {"user_name": "Ana", "interests": ["jazz"]}
    docs = await memories.long_term.collection.find(ANA.filter()).to_list(None)
    assert {d["content"] for d in docs} == {
        "Wants to see cherry blossoms in Kyoto",
        "The user lives in Lisbon.",
    }
    fact = next(d for d in docs if d["key"] == "home")
    assert fact["source"]["formation_job"] and fact["source"]["session_id"] == "s1"


async def test_sessions_formed_out_of_order_end_with_what_was_said_last(memories, queue):
    """Three sessions held in order (Ana, then Bea, then Ana again), formed first, third,
    second: the profile and the keyed fact end with the third session's, restated values
    included (the third only repeats what the first set)."""
    said = {
        "s1": "My name is Ana. I live in Lisbon.",
        "s2": "My name is Bea. I live in Porto.",
        "s3": "My name is Ana. I live in Lisbon.",
    }
    for session, text in said.items():
        await say(memories, ANA, session, text)
    for delay, session in enumerate(("s1", "s3", "s2")):  # the order they are formed in
        await queue.schedule(ANA, session, now=at(delay))
    w = worker(memories, queue, "w")
    for delay in range(3):
        assert await w.run_once(now=at(DEBOUNCE + delay)) is True
    assert [job.session_id for job in sorted(await queue.jobs(ANA), key=lambda j: j.run_after)] == [
        "s1",
        "s3",
        "s2",
    ]
    assert (await memories.profiles.get(ANA)).data["user_name"] == "Ana"
    homes = await memories.long_term.collection.find(
        {**ANA.filter(), "key": "home", "status": "active"}
    ).to_list(None)
    assert [d["content"] for d in homes] == ["The user lives in Lisbon."]


async def test_an_imported_history_forms_memories_dated_by_its_turns(memories, queue):
    """Turns appended with their event times (a history imported later): the memories formed
    from them carry the time their last turn was said, so their recency and a key's order
    follow the history, not the moment of the import."""
    may, june = datetime(2023, 5, 2, 9, tzinfo=UTC), datetime(2023, 6, 20, 18, tzinfo=UTC)
    conversation = memories.conversation
    # Imported newest first, and formed oldest first: neither order is the history's.
    await conversation.append_turn(
        ANA, "new", [NewMessage.user("I live in Porto.")], occurred_at=june
    )
    await conversation.append_turn(
        ANA, "old", [NewMessage.user("I live in Lisbon.")], occurred_at=may
    )
    (message,) = await conversation.window(ANA, "old")
    assert message.occurred_at == may and message.created_at > may
    for delay, session in enumerate(("old", "new")):
        await queue.schedule(ANA, session, now=at(delay))
    w = worker(memories, queue, "w")
    for delay in range(2):
        assert await w.run_once(now=at(DEBOUNCE + delay)) is True
    homes = {m.content: m for m in await memories.long_term.history(ANA, key="home")}
    assert homes["The user lives in Porto."].status == "active"
    assert homes["The user lives in Porto."].occurred_at == june
    assert homes["The user lives in Lisbon."].occurred_at == may
    assert homes["The user lives in Lisbon."].status == "superseded"


@pytest.mark.parametrize(
    "bad", [datetime(2023, 5, 2), "2023-05-02", datetime.now(UTC) + timedelta(hours=1)]
)
async def test_a_bad_event_time_appends_nothing(memories, bad):
    with pytest.raises(InvalidInputError, match="occurred_at"):
        await memories.conversation.append_turn(
            ANA, "s", [NewMessage.user("hello")], occurred_at=bad
        )
    assert await memories.conversation.messages.count_documents({}) == 0


async def test_a_job_for_one_user_never_writes_anothers_memories(memories, queue):
    await say(memories, ANA, "ana-s", "My name is Ana.")
    await say(memories, XIAOMING, "xm-s", "我叫小明。")
    await queue.schedule(ANA, "ana-s", now=T0)
    w = worker(memories, queue, "w")
    assert await w.run_once(now=at(DEBOUNCE)) is True
    assert (await memories.profiles.get(ANA)).data == {"user_name": "Ana"}
    assert (await memories.profiles.get(XIAOMING)).version == 0
    assert await count_memories(memories, XIAOMING) == 0
    assert await queue.jobs(XIAOMING) == []
    erased = await queue.forget_user(ANA)
    assert sum(erased.values()) == 1 and await queue.jobs(ANA) == []


async def test_worker_start_and_aclose_leave_no_tasks(memories, connection):
    queue = FormationQueue(connection, debounce_seconds=0)
    await say(memories, ANA, "s1", "My name is Ana.")
    await queue.schedule(ANA, "s1")
    w = FormationWorker(memories, None, queue=queue, poll_interval=0.01)
    w.start()
    w.start()  # idempotent
    assert w.running

    async def done() -> bool:
        return [j.status for j in await queue.jobs(ANA)] == ["done"]

    await until(done, "the worker to form the session")
    await w.aclose()
    await w.aclose()
    assert not w.running
    assert (await memories.profiles.get(ANA)).data == {"user_name": "Ana"}
    names = [t.get_name() for t in asyncio.all_tasks()]
    assert not [name for name in names if name.startswith("formation-")]


async def test_aclose_cancels_a_job_in_progress_and_leaves_it_to_the_lease(memories, connection):
    queue = FormationQueue(connection, debounce_seconds=0, lease_seconds=LEASE)
    await say(memories, ANA, "s1", "My name is Ana.")
    await queue.schedule(ANA, "s1")
    slow = FakeChatModel(default="{}", delay=30.0)
    w = FormationWorker(memories, slow, queue=queue, poll_interval=0.01)
    w.start()
    await until(lambda: bool(slow.requests), "the worker to ask the model")
    await w.aclose(grace=0.05)
    (job,) = await queue.jobs(ANA)
    assert job.status == "running" and job.plan is None  # nothing half-done
    assert (await memories.profiles.get(ANA)).version == 0


async def test_a_backlog_longer_than_one_job_is_formed_piece_by_piece_without_skipping(
    memories, queue
):
    sentences = ["My name is Ana.", "I prefer the aisle seat.", "I am vegetarian."]
    for text in sentences:
        await say(memories, ANA, "s1", text)
    await queue.schedule(ANA, "s1", now=T0)
    seen: list[list[str]] = []

    def record(request):
        seen.append([m.text for m in request.messages])
        return json.dumps({"profile": {}, "notes": [], "facts": []})

    w = FormationWorker(
        memories, FakeChatModel(default=record), queue=queue, worker_id="w", max_messages=2
    )
    now = at(DEBOUNCE)
    while await w.run_once(now=now):  # each piece schedules the next one at once
        pass
    # Six messages, two per job: three jobs, every message read once, oldest first.
    assert len(seen) == 3
    transcripts = ["\n".join(request) for request in seen]
    window = await memories.conversation.window(ANA, "s1")
    assert await queue.formed_through(ANA, "s1") == window[-1].seq
    for sentence in sentences:
        assert sum(sentence in text for text in transcripts) == 1


async def test_messages_after_reads_a_session_in_order_from_a_cursor(memories):
    for text in ["one", "two", "three"]:
        await say(memories, ANA, "s2", text)
    everything = await memories.conversation.messages_after(ANA, "s2", None, limit=100)
    assert [m.content for m in everything] == [
        "one",
        "好的 / OK",
        "two",
        "好的 / OK",
        "three",
        "好的 / OK",
    ]
    piece = await memories.conversation.messages_after(ANA, "s2", everything[1].seq, limit=2)
    assert [m.seq for m in piece] == [m.seq for m in everything[2:4]]
    assert await memories.conversation.messages_after(XIAOMING, "s2", None) == []  # tenant
    assert await memories.conversation.messages_after(ANA, "nope", None) == []
    with pytest.raises(Exception, match="after"):
        await memories.conversation.messages_after(ANA, "s2", {"$gt": ""})


@pytest.mark.parametrize("delay", [-1, float("nan"), "0", True])
async def test_a_bad_schedule_delay_is_refused_and_nothing_is_queued(memories, queue, delay):
    with pytest.raises(InvalidInputError):
        await queue.schedule(ANA, "s-delay", now=T0, delay=delay)
    assert await queue.jobs(ANA, "s-delay") == []


async def test_a_finished_session_is_formed_now_not_after_the_debounce(memories, queue):
    """expedite: when the user starts a new session the old one has nothing left to wait for.
    Only the tenant's first-attempt pending jobs move; retries keep their backoff."""
    await say(memories, ANA, "s1", "My name is Ana.")
    await say(memories, XIAOMING, "x1", "我叫小明。")
    ana_job = await queue.schedule(ANA, "s1", now=T0)
    other_job = await queue.schedule(XIAOMING, "x1", now=T0)
    w = worker(memories, queue, "w")
    assert await w.run_once(now=at(1)) is False  # still debouncing

    assert await queue.expedite(ANA, now=at(1)) == 1
    assert (await queue.get(ana_job)).run_after == at(1)
    assert (await queue.get(other_job)).run_after == at(DEBOUNCE)  # another user's job waits
    assert await w.run_once(now=at(1)) is True
    assert (await queue.get(ana_job)).status == "done"
    assert await queue.expedite(ANA, now=at(2)) == 0  # nothing pending

    assert await w.run_once(now=at(DEBOUNCE)) is True  # Xiaoming's, after its debounce
    assert (await queue.get(other_job)).status == "done"

    # A job in a retry's backoff keeps it.
    await say(memories, ANA, "s1", "I live in Porto.")
    retry = await queue.schedule(ANA, "s1", now=at(40))
    failing = worker(memories, queue, "f", FakeChatModel(default="not JSON"))
    assert await failing.run_once(now=at(40 + DEBOUNCE)) is True
    failed = await queue.get(retry)
    assert (failed.status, failed.attempts) == ("pending", 1)
    assert failed.run_after > at(40 + DEBOUNCE)
    assert await queue.expedite(ANA, session_id="s1", now=at(41 + DEBOUNCE)) == 0
    assert (await queue.get(retry)).run_after == failed.run_after


@pytest.mark.parametrize("bad", [{"$ne": None}, "", "x\x00"])
async def test_expedite_refuses_bad_session_ids(queue, bad):
    with pytest.raises(InvalidInputError):
        await queue.expedite(ANA, session_id=bad)


class _Gate(FakeChatModel):
    """A model whose answers wait for ``opened``; it counts the requests inside at once."""

    def __init__(self) -> None:
        super().__init__(default="{}")
        self.inside = self.most = 0
        self.opened = asyncio.Event()

    async def generate(self, request):
        self.inside += 1
        self.most = max(self.most, self.inside)
        try:
            await self.opened.wait()
            return await super().generate(request)
        finally:
            self.inside -= 1


async def _five_due_sessions(memories, queue) -> list[Tenant]:
    tenants = [Tenant("travel", f"user{i}") for i in range(5)]
    for tenant in tenants:
        await say(memories, tenant, "s1", "My name is Ana.")
        await queue.schedule(tenant, "s1")
    return tenants


async def _statuses(queue, tenants) -> list[str]:
    statuses = []
    for tenant in tenants:
        statuses += [job.status for job in await queue.jobs(tenant)]
    return sorted(statuses)


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_a_worker_works_up_to_its_concurrency_of_jobs_at_once(
    memories, connection, concurrency
):
    queue = FormationQueue(connection, debounce_seconds=0)
    tenants = await _five_due_sessions(memories, queue)
    gate = _Gate()
    w = FormationWorker(memories, gate, queue=queue, poll_interval=0.01, concurrency=concurrency)
    async with w:
        await until(lambda: gate.inside == concurrency, f"{concurrency} jobs at the model")
        running = await _statuses(queue, tenants)
        assert running.count("running") == concurrency  # no job claimed beyond the lanes
        gate.opened.set()

        async def all_done() -> bool:
            return await _statuses(queue, tenants) == ["done"] * 5

        await until(all_done, "the five sessions to be formed")
    assert gate.most == concurrency and w.jobs_worked == 5


async def test_a_stopped_worker_finishes_its_jobs_in_hand_and_claims_no_more(memories, connection):
    queue = FormationQueue(connection, debounce_seconds=0)
    tenants = await _five_due_sessions(memories, queue)
    gate = _Gate()
    w = FormationWorker(memories, gate, queue=queue, poll_interval=0.01, concurrency=2)
    w.start()
    await until(lambda: gate.inside == 2, "two jobs at the model")
    closing = asyncio.create_task(w.aclose(grace=60))
    await until(lambda: w._stop is not None and w._stop.is_set(), "the stop to be asked")
    gate.opened.set()
    await closing
    assert await _statuses(queue, tenants) == ["done", "done", "pending", "pending", "pending"]
    assert w.jobs_worked == 2


@pytest.mark.parametrize("bad", [0, 65, True, 2.0, "2"])
def test_a_bad_concurrency_is_refused(memories, connection, bad):
    with pytest.raises(InvalidInputError, match="concurrency"):
        FormationWorker(memories, None, queue=FormationQueue(connection), concurrency=bad)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"debounce_seconds": float("nan")}, "debounce_seconds"),
        ({"debounce_seconds": float("inf")}, "debounce_seconds"),
        ({"debounce_seconds": 1e300}, "debounce_seconds"),
        ({"debounce_seconds": -1}, "debounce_seconds"),
        ({"lease_seconds": 0}, "lease_seconds"),
        ({"lease_seconds": float("inf")}, "lease_seconds"),
        ({"retry_base_seconds": "30"}, "retry_base_seconds"),
        ({"retry_max_seconds": float("nan")}, "retry_max_seconds"),
        ({"max_attempts": True}, "max_attempts"),
        ({"max_attempts": 0}, "max_attempts"),
    ],
)
async def test_queue_durations_that_no_timer_can_hold_are_refused_by_name(
    connection, options, named
):
    with pytest.raises(ConfigurationError, match=named):
        FormationQueue(connection, **options)


async def test_an_uncapped_backoff_stays_a_duration(connection):
    queue = FormationQueue(connection, retry_max_seconds=float("inf"), max_attempts=10_000)
    assert queue.retry_delay(3) == timedelta(seconds=120)
    assert timedelta(days=3000) < queue.retry_delay(10_000) <= timedelta(days=3650)


async def test_a_delay_no_timer_can_hold_is_refused_before_anything_is_written(connection):
    queue = FormationQueue(connection)
    for delay in (1e300, float("inf"), float("nan"), -1, True):
        with pytest.raises(InvalidInputError, match="delay"):
            await queue.schedule(Tenant("agent", "alice"), "s1", delay=delay)
    assert await queue.collection.count_documents({}) == 0

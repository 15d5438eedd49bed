"""Hostile input, fuzzed over the wire: every public store call that takes ids, filters,
context keys or text, given values shaped like query operators, another tenant's ids, huge
and deeply nested values, invalid Unicode, NaN and infinities and wrong types.

The property, for every call: it either succeeds inside the caller's own tenant or raises an
:class:`~agent_memory.errors.AgentMemoryError` with a short message (never a raw
pymongo/bson/TypeError/RecursionError), it returns nothing of the other tenant's, and the
other tenant's documents (and the agent's shared ones) are byte-for-byte what they were.

``HOSTILE_COUNTS`` tallies the inputs tried per API; run with ``-s`` to see them.
tests/integration/test_tenancy_properties.py checks the search paths on generated data;
test_langgraph_store.py and test_checkpointer.py hold the hand-picked hostile filters.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections import Counter
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from agent_memory.agent.config import AgentConfig
from agent_memory.agent.rag_agent import RAGAgent
from agent_memory.api import create_app
from agent_memory.config import load_settings
from agent_memory.errors import AgentMemoryError, InvalidInputError
from agent_memory.langgraph.checkpointer import MongoCheckpointer
from agent_memory.langgraph.store import MemoryStore
from agent_memory.memory import MemorySystem, NewMemory, PatchOp, Tenant
from agent_memory.memory.knowledge.base import SharedKnowledge
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.chat.fake import FakeChatModel

ALICE = Tenant("agent", "alice")
BOB = Tenant("agent", "bob")
#: Every text of bob's holds this word; it must never come back to alice.
SECRET = "quokka7731"
ALICE_THREAD = "t-alice"
API_KEY = "hostile-test-key-0123456789abcdef"

HOSTILE_COUNTS: Counter[str] = Counter()


def _nested_dict(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


def _nested_list(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


MEGABYTE = "x" * 1_048_576
FIXED: list[Any] = [
    # shaped like query operators, paths and prototype keys
    {"$ne": None},
    {"$gt": ""},
    {"$where": "sleep(100)"},
    {"$regex": ".*"},
    {"$in": ["alice", "bob"]},
    {"$exists": True},
    {"$set": {"user_id": "bob"}},
    {"a.b": 1},
    {"__proto__": {"admin": True}},
    {"user_id": "bob", "agent_id": "agent"},
    [{"$ne": None}],
    "$where",
    "$ne",
    "$gt",
    "a.b",
    "$",
    "__proto__",
    "constructor.prototype",
    # another tenant, by name
    "bob",
    # blank, control and invalid Unicode
    "",
    "   ",
    "\x00",
    "a\x00b",
    "\ud800",
    "ok\udcff",
    "\u202e\ufeff",
    "line\nbreak",
    # huge and deep
    MEGABYTE,
    ["x"] * 10_000,
    list(range(10_000)),
    _nested_dict(200),
    _nested_list(200),
    # numbers that are not numbers
    math.nan,
    math.inf,
    -math.inf,
    2**64,
    -(2**63) - 1,
    -1,
    0,
    True,
    None,
    # wrong types
    b"bytes",
    {"a", "b"},
    frozenset({1}),
    object(),
    ("tuple", "of", "str"),
    BOB,
]

_keys = st.sampled_from(
    ["$ne", "$where", "$gt", "a.b", "__proto__", "user_id", "agent_id", "", "ok", "\ud800"]
) | st.text(max_size=6)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(st.characters(exclude_categories=()), max_size=20)
    | st.binary(max_size=8)
)
_json_like = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)
HOSTILE = st.sampled_from(FIXED) | _json_like

PROPERTY = settings(
    max_examples=50,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)


# Defects found by these tests in modules owned elsewhere are tolerated here (and counted)
# until fixed, each pinned by a strict xfail below that starts passing - and so fails - once
# it is fixed. None is open: the memory stores' defects found here are fixed and guarded by
# the regression tests at the end of this file.
# api -> the raw exception types it still raises.
KNOWN_RAW: dict[str, tuple[type[BaseException], ...]] = {}
# APIs whose error message repeats the whole value (a 1 MB value, a 1 MB message).
KNOWN_LONG_MESSAGES: set[str] = set()
KNOWN_HITS: Counter[str] = Counter()


async def _attempt_picked(
    world: Any, calls: dict[str, Callable[[], Awaitable[Any]]], pick: int
) -> None:
    """Run the call ``pick`` chooses among ``calls``; then nobody else's data has changed."""
    name = sorted(calls)[pick % len(calls)]
    await _attempt(name, calls[name])
    await _unchanged(world)


async def _attempt(api: str, call: Callable[[], Awaitable[Any]]) -> Any:
    """Run one call: success (returned, checked for bob's data) or a short own error."""
    HOSTILE_COUNTS[api] += 1
    try:
        result = await call()
    except AgentMemoryError as exc:
        message = str(exc)
        assert message.strip(), f"{api}: an empty error message"
        assert SECRET not in message, f"{api}: bob's data in an error message"
        if len(message) >= 2_000:
            assert api in KNOWN_LONG_MESSAGES, f"{api}: a {len(message)}-character message"
            KNOWN_HITS[f"{api}: long message"] += 1
        return None
    except InvalidNamespaceError:
        # LangGraph's BaseStore checks namespace labels before the store sees them: its own
        # documented ValueError, kept for conformance with every other store.
        assert api.startswith("MemoryStore."), api
        return None
    except Exception as exc:  # the property: nothing but our own errors escape
        if isinstance(exc, KNOWN_RAW.get(api, ())):
            KNOWN_HITS[f"{api}: {type(exc).__name__}"] += 1
            return None
        pytest.fail(f"{api} raised {type(exc).__name__}: {str(exc)[:300]}")
    if result is not None:
        assert SECRET not in repr(result), f"{api} returned bob's data"
    return result


async def _snapshot(connection, names: Any = None) -> dict[str, list[dict[str, Any]]]:
    """Bob's documents and the agent's shared ones (knowledge, summaries; not alice's thread).

    Calls may create new tenants (a valid new user id is the caller's to use), so documents
    of users other than bob are not compared. Nor is ``action_hours``: the agent's success
    counts per hour, which every user's logs and ratings move on by design (counts derived
    from the logs, with no user data; ``test_lengths.py`` holds them exact)."""
    others = {
        "$or": [
            {"user_id": BOB.user_id},
            {"user_id": {"$exists": False}, "thread_id": {"$ne": ALICE_THREAD}},
        ]
    }
    hours = connection.collection_name("action_hours")
    names = sorted(n for n in names or await connection.db.list_collection_names() if n != hours)
    found = await asyncio.gather(
        *(connection.db[name].find(others).sort("_id", 1).to_list(None) for name in names)
    )
    return dict(zip(names, found, strict=True))


@pytest.fixture
async def world(connection, embedder):
    """Bob's data in every store, and alice's own, on one database."""
    await IndexManager(connection, embedder.signature).setup()
    memories = MemorySystem(connection, embedder)
    ids = SimpleNamespace()
    for tenant in (BOB, ALICE):
        word = SECRET if tenant is BOB else "kiwi"
        stored = await memories.long_term.store(
            tenant, f"{tenant.user_id} keeps the {word} code", key="code", consolidate=False
        )
        session = f"s-{tenant.user_id}"
        await memories.conversation.start_session(tenant, session)
        await memories.conversation.append_turn(
            tenant, session, [{"role": "user", "content": f"my {word} code"}]
        )
        task = await memories.working.create_task(
            tenant, session, f"guard the {word}", plan=["a", "b"], context={"word": word}
        )
        saved = await memories.working.checkpoint(tenant, task.id)
        action = await memories.episodic.log_action(
            tenant,
            session_id=session,
            action_type="query_response",
            outcome="success",
            content=f"asked about the {word}",
            memory_ids=[stored.id],
        )
        await memories.knowledge.ingest(tenant, source="doc", text=f"The {word} manual.")
        await memories.profiles.patch(tenant, {"user_name": f"{tenant.user_id} {word}"})
        setattr(
            ids,
            tenant.user_id,
            SimpleNamespace(memory=stored.id, task=task.id, checkpoint=saved.id, action=action),
        )
    await memories.knowledge.ingest(SharedKnowledge("agent"), source="faq", text="Shared faq.")
    await memories.long_term.drain()
    before = await _snapshot(connection)
    held = SimpleNamespace(connection=connection, memories=memories, ids=ids, before=before)
    yield held
    # After every example only the collections that held bob's or shared documents are
    # compared (a snapshot of all of them costs more than the call under test); here, once,
    # all of them: no new collection holds any.
    await _unchanged(held, everywhere=True)
    await memories.aclose()


async def _unchanged(world, *, everywhere: bool = False) -> None:
    await world.memories.long_term.drain()
    await world.memories.conversation.drain()
    held = [name for name, docs in world.before.items() if docs]
    after = await _snapshot(world.connection, None if everywhere else held)
    expected = world.before if everywhere else {name: world.before[name] for name in held}
    after = {name: docs for name, docs in after.items() if docs or name in expected}
    expected = {name: docs for name, docs in expected.items() if docs or name in after}
    assert after == expected, "another tenant's (or shared) documents changed"


def _not_bob(value: Any) -> Any:
    """A caller naming bob may act for bob (the Python API trusts its caller's tenant), so
    where a value is the tenant, bob by name is swapped for alice."""
    return ALICE.user_id if isinstance(value, str) and value == BOB.user_id else value


def _tenants(value: Any) -> list[Any]:
    """The hostile value as a tenant: the raw value, a dict posing as one, a Tenant made of it."""
    forged: list[Any] = [value, {"agent_id": "agent", "user_id": value}]
    try:
        forged.append(Tenant("agent", value))
    except AgentMemoryError:
        pass
    return forged


# --- long-term memory --------------------------------------------------------------------------


def _long_term_calls(world, v: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    lt = world.memories.long_term
    bob = world.ids.bob
    return {
        "LongTermMemory.store(content)": lambda: lt.store(ALICE, v),
        "LongTermMemory.store(memory_type)": lambda: lt.store(ALICE, "tea", memory_type=v),
        "LongTermMemory.store(importance)": lambda: lt.store(ALICE, "tea", importance=v),
        "LongTermMemory.store(tags)": lambda: lt.store(ALICE, "tea", tags=v),
        "LongTermMemory.store(key)": lambda: lt.store(ALICE, "tea", key=v),
        "LongTermMemory.store(source)": lambda: lt.store(ALICE, "tea", source=v),
        "LongTermMemory.store(expires_at)": lambda: lt.store(ALICE, "tea", expires_at=v),
        "LongTermMemory.store_many": lambda: lt.store_many(ALICE, v),
        "LongTermMemory.store_many(NewMemory)": lambda: lt.store_many(ALICE, [NewMemory(v)]),
        "LongTermMemory.retrieve(query)": lambda: lt.retrieve(ALICE, v),
        "LongTermMemory.retrieve(k)": lambda: lt.retrieve(ALICE, "code", k=v),
        "LongTermMemory.retrieve(memory_types)": lambda: lt.retrieve(ALICE, "x", memory_types=v),
        "LongTermMemory.retrieve(tags)": lambda: lt.retrieve(ALICE, "code", tags=v),
        "LongTermMemory.retrieve(min_importance)": lambda: lt.retrieve(
            ALICE, "code", min_importance=v
        ),
        "LongTermMemory.retrieve(query_vector)": lambda: lt.retrieve(ALICE, "x", query_vector=v),
        "LongTermMemory.get": lambda: lt.get(ALICE, v),
        "LongTermMemory.get(bob's id)": lambda: lt.get(ALICE, bob.memory),
        "LongTermMemory.list_memories": lambda: lt.list_memories(ALICE, memory_types=v),
        "LongTermMemory.history": lambda: lt.history(ALICE, key=v),
        "LongTermMemory.forget": lambda: lt.forget(ALICE, v),
        "LongTermMemory.forget(bob's id)": lambda: lt.forget(ALICE, bob.memory),
    }


def _tenant_calls(world, v: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Every store given a forged tenant (reads; forget_user only with a non-bob Tenant)."""
    m = world.memories
    calls: dict[str, Callable[[], Awaitable[Any]]] = {}
    for i, tenant in enumerate(_tenants(v)):
        if isinstance(tenant, Tenant) and tenant.user_id == BOB.user_id:
            continue  # a caller naming bob may act for bob: the Python API trusts its caller
        calls[f"LongTermMemory.retrieve(tenant#{i})"] = lambda t=tenant: m.long_term.retrieve(
            t, "code"
        )
        calls[f"LongTermMemory.get(tenant#{i})"] = lambda t=tenant: m.long_term.get(
            t, world.ids.bob.memory
        )
        calls[f"ConversationMemory.window(tenant#{i})"] = lambda t=tenant: m.conversation.window(
            t, "s-bob"
        )
        calls[f"WorkingMemory.get_task(tenant#{i})"] = lambda t=tenant: m.working.get_task(
            t, world.ids.bob.task
        )
        calls[f"EpisodicMemory.get_action(tenant#{i})"] = lambda t=tenant: m.episodic.get_action(
            t, world.ids.bob.action
        )
        calls[f"KnowledgeBase.retrieve(tenant#{i})"] = lambda t=tenant: m.knowledge.retrieve(
            t, "manual"
        )
        calls[f"ProfileMemory.get(tenant#{i})"] = lambda t=tenant: m.profiles.get(t)
        calls[f"MemorySystem.forget_user(tenant#{i})"] = lambda t=tenant: m.forget_user(t)
    return calls


@PROPERTY
@given(value=HOSTILE, pick=st.integers(min_value=0))
async def test_long_term_memory_under_hostile_values(world, value, pick):
    await _attempt_picked(world, _long_term_calls(world, value), pick)


@PROPERTY
@given(value=HOSTILE, pick=st.integers(min_value=0))
async def test_a_forged_tenant_reads_and_erases_nothing_of_bobs(world, value, pick):
    await _attempt_picked(world, _tenant_calls(world, value), pick)


# --- conversation, working, episodic -------------------------------------------------------------


def _session_calls(world, v: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    conv = world.memories.conversation
    return {
        "ConversationMemory.start_session(id)": lambda: conv.start_session(ALICE, v),
        "ConversationMemory.start_session(metadata)": lambda: conv.start_session(
            ALICE, "s2", metadata=v
        ),
        "ConversationMemory.get_session": lambda: conv.get_session(ALICE, v),
        "ConversationMemory.append_turn(session)": lambda: conv.append_turn(
            ALICE, v, [{"role": "user", "content": "hi"}]
        ),
        "ConversationMemory.append_turn(messages)": lambda: conv.append_turn(ALICE, "s-alice", v),
        "ConversationMemory.append_turn(content)": lambda: conv.append_turn(
            ALICE, "s-alice", [{"role": "user", "content": v}]
        ),
        "ConversationMemory.append_turn(role)": lambda: conv.append_turn(
            ALICE, "s-alice", [{"role": v, "content": "hi"}]
        ),
        "ConversationMemory.append_turn(tool)": lambda: conv.append_turn(
            ALICE,
            "s-alice",
            [{"role": "tool", "tool_name": "t", "tool_input": v, "tool_result": v}],
        ),
        "ConversationMemory.window(session)": lambda: conv.window(ALICE, v),
        "ConversationMemory.window(last_n)": lambda: conv.window(ALICE, "s-alice", last_n=v),
        "ConversationMemory.window(max_tokens)": lambda: conv.window(
            ALICE, "s-alice", max_tokens=v
        ),
        "ConversationMemory.context": lambda: conv.context(ALICE, v),
        "ConversationMemory.messages_after": lambda: conv.messages_after(ALICE, "s-alice", v),
        "ConversationMemory.clear_session": lambda: conv.clear_session(ALICE, v),
        "ConversationMemory.delete_session": lambda: conv.delete_session(ALICE, v),
    }


def _working_calls(world, v: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    wm = world.memories.working
    mine, bob = world.ids.alice, world.ids.bob
    return {
        "WorkingMemory.create_task(session)": lambda: wm.create_task(ALICE, v, "goal"),
        "WorkingMemory.create_task(goal)": lambda: wm.create_task(ALICE, "s1", v),
        "WorkingMemory.create_task(plan)": lambda: wm.create_task(ALICE, "s1", "goal", plan=v),
        "WorkingMemory.create_task(context)": lambda: wm.create_task(
            ALICE, "s1", "goal", context=v
        ),
        "WorkingMemory.get_task": lambda: wm.get_task(ALICE, v),
        "WorkingMemory.get_task(bob's id)": lambda: wm.get_task(ALICE, bob.task),
        "WorkingMemory.list_active_tasks": lambda: wm.list_active_tasks(ALICE, v),
        "WorkingMemory.update_context(key)": lambda: wm.update_context(
            ALICE, mine.task, {v: 1} if isinstance(v, str) else v
        ),
        "WorkingMemory.update_context(value)": lambda: wm.update_context(
            ALICE, mine.task, {"note": v}
        ),
        "WorkingMemory.update_context(bob's task)": lambda: wm.update_context(
            ALICE, bob.task, {"word": "stolen"}
        ),
        "WorkingMemory.update_context(expected_version)": lambda: wm.update_context(
            ALICE, mine.task, {"note": 1}, expected_version=v
        ),
        "WorkingMemory.advance_step(index)": lambda: wm.advance_step(
            ALICE, mine.task, v, status="completed"
        ),
        "WorkingMemory.advance_step(status)": lambda: wm.advance_step(
            ALICE, mine.task, 0, status=v
        ),
        "WorkingMemory.advance_step(result)": lambda: wm.advance_step(
            ALICE, mine.task, 0, status="in_progress", result=v
        ),
        "WorkingMemory.add_steps": lambda: wm.add_steps(ALICE, mine.task, v),
        "WorkingMemory.checkpoint(task)": lambda: wm.checkpoint(ALICE, v),
        "WorkingMemory.checkpoint(reason)": lambda: wm.checkpoint(ALICE, mine.task, reason=v),
        "WorkingMemory.checkpoint(bob's task)": lambda: wm.checkpoint(ALICE, bob.task),
        "WorkingMemory.list_checkpoints": lambda: wm.list_checkpoints(ALICE, v),
        "WorkingMemory.restore(task)": lambda: wm.restore(ALICE, v),
        "WorkingMemory.restore(checkpoint_id)": lambda: wm.restore(
            ALICE, mine.task, checkpoint_id=v
        ),
        "WorkingMemory.restore(bob's checkpoint)": lambda: wm.restore(
            ALICE, mine.task, checkpoint_id=bob.checkpoint
        ),
        "WorkingMemory.fail_task(error)": lambda: wm.fail_task(ALICE, v, error="x"),
    }


def _episodic_calls(world, v: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    ep = world.memories.episodic
    bob = world.ids.bob

    def log(**overrides: Any) -> Callable[[], Awaitable[Any]]:
        fields = {"session_id": "s1", "action_type": "tool_call", "outcome": "success"}
        return lambda: ep.log_action(ALICE, **{**fields, **overrides})

    return {
        "EpisodicMemory.log_action(session_id)": log(session_id=v),
        "EpisodicMemory.log_action(action_type)": log(action_type=v),
        "EpisodicMemory.log_action(outcome)": log(outcome=v),
        "EpisodicMemory.log_action(tool)": log(tool=v),
        "EpisodicMemory.log_action(input)": log(input=v),
        "EpisodicMemory.log_action(output)": log(output=v),
        "EpisodicMemory.log_action(duration_ms)": log(duration_ms=v),
        "EpisodicMemory.log_action(tokens)": log(tokens=v),
        "EpisodicMemory.log_action(memory_ids)": log(memory_ids=v),
        "EpisodicMemory.log_action(bob's memory)": log(memory_ids=[bob.memory]),
        "EpisodicMemory.log_action(content)": log(content=v),
        "EpisodicMemory.log_action(metadata)": log(metadata=v),
        "EpisodicMemory.log_action(embedding)": log(embedding=v),
        "EpisodicMemory.log_action(timestamp)": log(timestamp=v),
        "EpisodicMemory.get_action": lambda: ep.get_action(ALICE, v),
        "EpisodicMemory.get_action(bob's id)": lambda: ep.get_action(ALICE, bob.action),
        "EpisodicMemory.add_feedback(action)": lambda: ep.add_feedback(ALICE, v, rating=5),
        "EpisodicMemory.add_feedback(bob's action)": lambda: ep.add_feedback(
            ALICE, bob.action, rating=1
        ),
        "EpisodicMemory.add_feedback(rating)": lambda: ep.add_feedback(
            ALICE, world.ids.alice.action, rating=v
        ),
        "EpisodicMemory.add_feedback(helpful)": lambda: ep.add_feedback(
            ALICE, world.ids.alice.action, helpful=v
        ),
        "EpisodicMemory.add_feedback(correction)": lambda: ep.add_feedback(
            ALICE, world.ids.alice.action, correction=v
        ),
        "EpisodicMemory.add_feedback(idempotency_key)": lambda: ep.add_feedback(
            ALICE, world.ids.alice.action, rating=4, idempotency_key=v
        ),
        "EpisodicMemory.similar_actions(query)": lambda: ep.similar_actions(ALICE, query=v),
        "EpisodicMemory.similar_actions(action_type)": lambda: ep.similar_actions(
            ALICE, query="code", action_type=v
        ),
        "EpisodicMemory.similar_actions(outcome)": lambda: ep.similar_actions(
            ALICE, query="code", outcome=v
        ),
        "EpisodicMemory.similar_actions(min_rating)": lambda: ep.similar_actions(
            ALICE, query="code", min_rating=v
        ),
        "EpisodicMemory.similar_actions(limit)": lambda: ep.similar_actions(
            ALICE, query="code", limit=v
        ),
        "EpisodicMemory.success_rates(agent_id)": lambda: ep.success_rates(v),
        "EpisodicMemory.success_rates(action_type)": lambda: ep.success_rates("agent", v),
        "EpisodicMemory.success_rates(days)": lambda: ep.success_rates("agent", days=v),
    }


def _knowledge_and_profile_calls(world, v: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    kb, profiles = world.memories.knowledge, world.memories.profiles
    scope = ALICE if v == BOB else v  # a caller naming bob may act for bob
    return {
        "KnowledgeBase.ingest(source)": lambda: kb.ingest(ALICE, source=v, text="A note."),
        "KnowledgeBase.ingest(text)": lambda: kb.ingest(ALICE, source="s", text=v),
        "KnowledgeBase.ingest(metadata)": lambda: kb.ingest(
            ALICE, source="s", text="A note.", metadata=v
        ),
        "KnowledgeBase.ingest(title)": lambda: kb.ingest(
            ALICE, source="s", text="A note.", title=v
        ),
        "KnowledgeBase.ingest(tags)": lambda: kb.ingest(ALICE, source="s", text="A.", tags=v),
        "KnowledgeBase.ingest(scope)": lambda: kb.ingest(scope, source="doc", text="Overwritten."),
        "KnowledgeBase.retrieve(query)": lambda: kb.retrieve(ALICE, v),
        "KnowledgeBase.retrieve(k)": lambda: kb.retrieve(ALICE, "manual", k=v),
        "KnowledgeBase.retrieve(sources)": lambda: kb.retrieve(ALICE, "manual", sources=v),
        "KnowledgeBase.retrieve(tags)": lambda: kb.retrieve(ALICE, "manual", tags=v),
        "KnowledgeBase.list_sources": lambda: kb.list_sources(scope),
        "KnowledgeBase.delete_source": lambda: kb.delete_source(ALICE, v),
        "KnowledgeBase.delete_source(scope)": lambda: kb.delete_source(scope, "doc"),
        "ProfileMemory.patch(changes)": lambda: profiles.patch(ALICE, v),
        "ProfileMemory.patch(field)": lambda: profiles.patch(ALICE, {"user_name": v}),
        "ProfileMemory.patch(key)": lambda: profiles.patch(
            ALICE, {v: "x"} if isinstance(v, str) else v
        ),
        "ProfileMemory.patch(PatchOp path)": lambda: profiles.patch(
            ALICE, [PatchOp("set", v, "x")]
        ),
        "ProfileMemory.patch(PatchOp value)": lambda: profiles.patch(
            ALICE, [PatchOp("merge", "preferences", v)]
        ),
        "ProfileMemory.patch(schema)": lambda: profiles.patch(ALICE, {"user_name": "a"}, schema=v),
        "ProfileMemory.get(schema)": lambda: profiles.get(ALICE, v),
        "ProfileMemory.add(fields)": lambda: profiles.add(ALICE, "Note", v),
        "ProfileMemory.add(content)": lambda: profiles.add(ALICE, "Note", {"content": v}),
    }


@PROPERTY
@given(value=HOSTILE, pick=st.integers(min_value=0))
async def test_conversation_memory_under_hostile_values(world, value, pick):
    await _attempt_picked(world, _session_calls(world, value), pick)


@PROPERTY
@given(value=HOSTILE, pick=st.integers(min_value=0))
async def test_working_memory_under_hostile_values(world, value, pick):
    await _attempt_picked(world, _working_calls(world, value), pick)


@PROPERTY
@given(value=HOSTILE, pick=st.integers(min_value=0))
async def test_episodic_memory_under_hostile_values(world, value, pick):
    await _attempt_picked(world, _episodic_calls(world, value), pick)


@PROPERTY
@given(value=HOSTILE, pick=st.integers(min_value=0))
async def test_knowledge_and_profiles_under_hostile_values(world, value, pick):
    await _attempt_picked(world, _knowledge_and_profile_calls(world, value), pick)


# --- LangGraph store and checkpointer -------------------------------------------------------------


def _langgraph_calls(world, v: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    store = MemoryStore(world.memories.long_term, agent_id="agent")
    user = _not_bob(v)
    # Not strict, so a hostile value reaches the checks past the tenant's (alice's, or none).
    saver = MongoCheckpointer(world.connection, strict=False)
    mine = ("memories", "alice")

    def config(**configurable: Any) -> dict[str, Any]:
        return {
            "configurable": {
                "thread_id": ALICE_THREAD,
                "checkpoint_ns": "",
                **ALICE.filter(),
                **configurable,
            }
        }

    async def listed(**kwargs: Any) -> list[Any]:
        return [item async for item in saver.alist(**kwargs)]

    return {
        "MemoryStore.aput(namespace)": lambda: store.aput(
            ("memories", user), "k", {"content": "x"}
        ),
        "MemoryStore.aput(path)": lambda: store.aput((*mine, v), "k", {"content": "x"}),
        "MemoryStore.aput(key)": lambda: store.aput(mine, v, {"content": "x"}),
        "MemoryStore.aput(value)": lambda: store.aput(mine, "k", v),
        "MemoryStore.aput(content)": lambda: store.aput(mine, "k", {"content": v}),
        "MemoryStore.aput(field)": lambda: store.aput(mine, "k", {"content": "x", "f": v}),
        "MemoryStore.aget(namespace)": lambda: store.aget(("memories", user), "k"),
        "MemoryStore.aget(key)": lambda: store.aget(mine, v),
        "MemoryStore.asearch(filter)": lambda: store.asearch(mine, filter=v),
        "MemoryStore.asearch(filter value)": lambda: store.asearch(mine, filter={"f": v}),
        "MemoryStore.asearch(query)": lambda: store.asearch(mine, query=v),
        "MemoryStore.asearch(prefix)": lambda: store.asearch(("memories", user), query="code"),
        "MemoryStore.asearch(limit)": lambda: store.asearch(mine, query="code", limit=v),
        "MemoryStore.adelete": lambda: store.adelete(mine, v),
        "MemoryStore.alist_namespaces(prefix)": lambda: store.alist_namespaces(prefix=v),
        "MemoryStore.abatch": lambda: store.abatch(
            [PutOp(mine, "k", {"content": "x"}), GetOp(mine, v), SearchOp(mine, filter=v)]
        ),
        "MongoCheckpointer.aget_tuple": lambda: saver.aget_tuple(v),
        "MongoCheckpointer.aget_tuple(thread_id)": lambda: saver.aget_tuple(config(thread_id=v)),
        "MongoCheckpointer.aget_tuple(checkpoint_ns)": lambda: saver.aget_tuple(
            config(checkpoint_ns=v)
        ),
        "MongoCheckpointer.aget_tuple(checkpoint_id)": lambda: saver.aget_tuple(
            config(checkpoint_id=v)
        ),
        "MongoCheckpointer.alist(filter)": lambda: listed(config=config(), filter=v),
        "MongoCheckpointer.alist(filter value)": lambda: listed(config=None, filter={"f": v}),
        "MongoCheckpointer.alist(before)": lambda: listed(config=None, before=v),
        "MongoCheckpointer.alist(limit)": lambda: listed(config=config(), limit=v),
        "MongoCheckpointer.aput(metadata)": lambda: saver.aput(
            config(), empty_checkpoint(), {"source": "input", "step": -1, "f": v}, {}
        ),
        "MongoCheckpointer.aput(user_id)": lambda: saver.aput(
            config(agent_id="agent", user_id=user), empty_checkpoint(), {}, {}
        ),
        "MongoCheckpointer.aput_writes(task_id)": lambda: saver.aput_writes(
            config(checkpoint_id="c1"), [("ch", 1)], v
        ),
        "MongoCheckpointer.adelete_thread": lambda: saver.adelete_thread(v),
    }


@PROPERTY
@given(value=HOSTILE, pick=st.integers(min_value=0))
async def test_langgraph_store_and_checkpointer_under_hostile_values(world, value, pick):
    await _attempt_picked(world, _langgraph_calls(world, value), pick)


# --- the agent and the feedback API ---------------------------------------------------------------


@settings(PROPERTY, max_examples=30)
@given(value=HOSTILE, where=st.sampled_from(["user_id", "session_id", "query"]))
async def test_a_turn_with_hostile_ids_or_query(world, value, where):
    chat = FakeChatModel(default="fine")
    turn = {"user_id": "alice", "session_id": "s-agent", "query": "What is my code?", where: value}
    if turn["user_id"] == BOB.user_id:
        turn["user_id"] = "alice"  # the caller names the user; bob by name may act for bob
    async with RAGAgent(
        world.connection,
        world.memories.long_term.embedder,
        chat,
        config=AgentConfig("agent", run_formation_worker=False),
    ) as agent:
        await _attempt(f"RAGAgent.process_query({where})", lambda: agent.process_query(**turn))
        for request in chat.requests:  # bob's data never reaches alice's prompt
            assert SECRET not in repr(request)
    await _unchanged(world)


def _quoted(text: str) -> str:
    """``text`` percent-encoded for a query string, lone surrogates as the invalid UTF-8
    bytes they stand for (what a hostile client can send)."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def _header(text: str) -> str:
    """The printable ASCII of ``text`` (what an HTTP client lets into a header)."""
    return "".join(ch for ch in text if " " <= ch <= "~").strip() or "x"


def _as_text(value: Any) -> str:
    """A hostile value as it could arrive in a URL or header: text, lossy for the rest."""
    text = value if isinstance(value, str) else repr(value)
    return text[:5_000]


@settings(PROPERTY, max_examples=30)
@given(value=HOSTILE, route=st.sampled_from(["rate", "rate-body", "read", "rates", "key"]))
async def test_the_feedback_api_under_hostile_values(world, settings, value, route):
    configured = load_settings(
        **{
            **settings.model_dump(exclude={"api_keys"}),
            "mongodb_uri": settings.uri(),
            "api_keys": {"agent": API_KEY},
        }
    )
    app = create_app(
        configured, connection=world.connection, embedder=world.memories.long_term.embedder
    )
    bob = world.ids.bob
    text = _as_text(value)
    headers = {"X-API-Key": API_KEY}
    HOSTILE_COUNTS[f"HTTP {route}"] += 1
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://api"
    ) as client:
        if route == "rate":
            response = await client.post(
                f"/v1/actions/{bob.action}/feedback",
                json={"user_id": "alice", "rating": 1},
                headers={**headers, "Idempotency-Key": _header(text)},
            )
        elif route == "rate-body":
            # Python's own JSON: NaN, Infinity and lone surrogates as \ud800 escapes, as a
            # hostile client sends them (httpx refuses to encode them).
            try:
                body = json.dumps({"user_id": value}, default=repr).encode()
            except (TypeError, ValueError, RecursionError):
                body = repr(value).encode("utf-8", "surrogatepass")
            response = await client.post(
                f"/v1/actions/{world.ids.alice.action}/feedback",
                content=body,
                headers={**headers, "Content-Type": "application/json"},
            )
        elif route == "read":
            response = await client.get(
                f"/v1/actions/{bob.action}?user_id={_quoted(_not_bob(text))}", headers=headers
            )
        elif route == "rates":
            quoted = _quoted(text)
            response = await client.get(
                f"/v1/success-rates?action_type={quoted}&days={quoted}", headers=headers
            )
        else:
            key = _header(text)
            response = await client.get(
                f"/v1/actions/{world.ids.alice.action}",
                params={"user_id": "alice"},
                headers={"X-API-Key": key},
            )
    assert response.status_code < 500, response.text
    assert SECRET not in response.text and API_KEY not in response.text
    if route in ("rate", "read"):  # bob's action, by its real id, is never alice's
        assert response.status_code in (404, 422), response.text
    await _unchanged(world)


@pytest.mark.skipif(
    not os.environ.get("AGENT_MEMORY_HOSTILE_SWEEP"),
    reason="the exhaustive sweep takes minutes; set AGENT_MEMORY_HOSTILE_SWEEP=1",
)
async def test_every_fixed_hostile_value_at_every_position(world):
    """Every value of FIXED at every call position above (no sampling), then bob's data."""
    builders = (
        _long_term_calls,
        _tenant_calls,
        _session_calls,
        _working_calls,
        _episodic_calls,
        _knowledge_and_profile_calls,
        _langgraph_calls,
    )
    for builder in builders:
        for value in FIXED:
            for name, call in builder(world, value).items():
                await _attempt(name, call)
    await _unchanged(world)


# --- fixed: defects these properties found in the memory stores, kept as regression tests ----

FORGED = {"agent_id": "agent", "user_id": {"$ne": None}}


@pytest.fixture
async def bare(connection, embedder):
    """The stores with one memory of alice's (a filter applied to hits needs a hit)."""
    await IndexManager(connection, embedder.signature).setup()
    memories = MemorySystem(connection, embedder)
    await memories.long_term.store(ALICE, "alice keeps the kiwi code", consolidate=False)
    yield memories
    await memories.aclose()


def _refused(m: MemorySystem) -> dict[str, Callable[[], Awaitable[Any]]]:
    dims = m.long_term.embedder.dimensions
    return {
        # a dict or a str posing as a tenant (was AttributeError from tenant.filter())
        "long_term.get(dict tenant)": lambda: m.long_term.get(FORGED, "mem_1"),
        "long_term.history(str tenant)": lambda: m.long_term.history("alice", key="code"),
        "long_term.forget(dict tenant)": lambda: m.long_term.forget(FORGED, "mem_1"),
        "long_term.forget_user(dict tenant)": lambda: m.long_term.forget_user(FORGED),
        "profiles.get(dict tenant)": lambda: m.profiles.get(FORGED),
        "profiles.patch(str tenant)": lambda: m.profiles.patch("alice", {"user_name": "x"}),
        "profiles.forget_user(dict tenant)": lambda: m.profiles.forget_user(FORGED),
        "system.forget_user(dict tenant)": lambda: m.forget_user(FORGED),
        "system.forget_user(str tenant)": lambda: m.forget_user("alice"),
        # retrieve's arguments (were TypeError, UnicodeEncodeError, numpy's TypeError and
        # the plain searcher's ValueError)
        "long_term.retrieve(min_importance=str)": lambda: m.long_term.retrieve(
            ALICE, "code", min_importance="high"
        ),
        "long_term.retrieve(min_importance=nan)": lambda: m.long_term.retrieve(
            ALICE, "code", min_importance=math.nan
        ),
        "long_term.retrieve(lone surrogate)": lambda: m.long_term.retrieve(ALICE, "a\ud800"),
        "long_term.retrieve(query=dict)": lambda: m.long_term.retrieve(ALICE, {"$ne": None}),
        "long_term.retrieve(query_vector=str list)": lambda: m.long_term.retrieve(
            ALICE, "code", query_vector=["x"] * dims
        ),
        "long_term.retrieve(query_vector=numeric strs)": lambda: m.long_term.retrieve(
            ALICE, "code", query_vector=["0.5"] * dims
        ),
        "long_term.retrieve(query_vector wrong dimension)": lambda: m.long_term.retrieve(
            ALICE, "code", query_vector=[0.1] * (dims + 1)
        ),
        "long_term.retrieve(query_vector with nan)": lambda: m.long_term.retrieve(
            ALICE, "code", query_vector=[math.nan] * dims
        ),
        "long_term.store_many(int)": lambda: m.long_term.store_many(ALICE, 5),
        "long_term.store_many(None)": lambda: m.long_term.store_many(ALICE, None),
        "long_term.store_many(empty generator)": lambda: m.long_term.store_many(
            ALICE, (item for item in ())
        ),
        "conversation.messages_after(lone surrogate)": lambda: m.conversation.messages_after(
            ALICE, "s-alice", "\ud800"
        ),
        # unhashable schema names and paths (were TypeError: unhashable type)
        "profiles.get(schema=dict)": lambda: m.profiles.get(ALICE, {"$ne": None}),
        "profiles.patch(schema=list)": lambda: m.profiles.patch(
            ALICE, {"user_name": "a"}, schema=["User"]
        ),
        "profiles.patch(PatchOp path=dict)": lambda: m.profiles.patch(
            ALICE, [PatchOp("set", {"$ne": None}, "x")]
        ),
    }


REFUSED = [
    "long_term.get(dict tenant)",
    "long_term.history(str tenant)",
    "long_term.forget(dict tenant)",
    "long_term.forget_user(dict tenant)",
    "profiles.get(dict tenant)",
    "profiles.patch(str tenant)",
    "profiles.forget_user(dict tenant)",
    "system.forget_user(dict tenant)",
    "system.forget_user(str tenant)",
    "long_term.retrieve(min_importance=str)",
    "long_term.retrieve(min_importance=nan)",
    "long_term.retrieve(lone surrogate)",
    "long_term.retrieve(query=dict)",
    "long_term.retrieve(query_vector=str list)",
    "long_term.retrieve(query_vector=numeric strs)",
    "long_term.retrieve(query_vector wrong dimension)",
    "long_term.retrieve(query_vector with nan)",
    "long_term.store_many(int)",
    "long_term.store_many(None)",
    "long_term.store_many(empty generator)",
    "conversation.messages_after(lone surrogate)",
    "profiles.get(schema=dict)",
    "profiles.patch(schema=list)",
    "profiles.patch(PatchOp path=dict)",
]


@pytest.mark.parametrize("case", REFUSED)
async def test_a_once_raw_failure_is_a_clear_error_that_writes_nothing(bare, case):
    calls = _refused(bare)
    assert sorted(calls) == sorted(REFUSED)
    before = await _snapshot(bare.connection)
    with pytest.raises(InvalidInputError) as caught:
        await calls[case]()
    assert 0 < len(str(caught.value)) < 300
    assert await _snapshot(bare.connection) == before


async def test_a_valid_query_vector_and_importance_floor_still_retrieve(bare):
    vector = await bare.long_term.embedder.embed_query("kiwi code")
    hits = await bare.long_term.retrieve(
        ALICE, "kiwi code", query_vector=list(map(float, vector)), min_importance=0.5
    )
    assert [hit.memory.content for hit in hits] == ["alice keeps the kiwi code"]
    assert await bare.long_term.retrieve(ALICE, "kiwi code", min_importance=0.9) == []
    stored = await bare.long_term.store_many(
        ALICE, (NewMemory(text) for text in ("a", "b")), consolidate=False
    )
    assert [result.action for result in stored] == ["inserted", "inserted"]


def _huge(m: MemorySystem) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Calls given a 1 MB value (or a 10,000-item list) where a short one is expected."""
    many = ["x"] * 10_000
    return {
        "conversation.append_turn(role)": lambda: m.conversation.append_turn(
            ALICE, "s-alice", [{"role": MEGABYTE, "content": "hi"}]
        ),
        "conversation.append_turn(unknown key)": lambda: m.conversation.append_turn(
            ALICE, "s-alice", [{"role": "user", "content": "hi", MEGABYTE: 1}]
        ),
        "conversation.window(last_n)": lambda: m.conversation.window(
            ALICE, "s-alice", last_n=MEGABYTE
        ),
        "conversation.window(max_tokens)": lambda: m.conversation.window(
            ALICE, "s-alice", max_tokens=many
        ),
        "episodic.log_action(outcome)": lambda: m.episodic.log_action(
            ALICE, session_id="s", action_type="t", outcome=MEGABYTE
        ),
        "episodic.similar_actions(outcome)": lambda: m.episodic.similar_actions(
            ALICE, query="code", outcome=MEGABYTE
        ),
        "long_term.store(memory_type)": lambda: m.long_term.store(
            ALICE, "tea", memory_type=MEGABYTE
        ),
        "working.advance_step(status)": lambda: m.working.advance_step(
            ALICE, "task_1", 0, status=MEGABYTE
        ),
        "working.checkpoint(reason)": lambda: m.working.checkpoint(
            ALICE, "task_1", reason=MEGABYTE
        ),
        "working.update_context(expected_version)": lambda: m.working.update_context(
            ALICE, "task_1", {"note": 1}, expected_version=many
        ),
        "profiles.patch(field)": lambda: m.profiles.patch(ALICE, {"user_name": many}),
        "profiles.patch(key)": lambda: m.profiles.patch(ALICE, {MEGABYTE: "x"}),
        "profiles.patch(key with nan)": lambda: m.profiles.patch(ALICE, {MEGABYTE: math.nan}),
        "profiles.patch(schema)": lambda: m.profiles.patch(ALICE, {"a": 1}, schema=MEGABYTE),
        "profiles.patch(PatchOp path)": lambda: m.profiles.patch(
            ALICE, [PatchOp("merge", MEGABYTE, "not a mapping")]
        ),
        "profiles.get(schema)": lambda: m.profiles.get(ALICE, MEGABYTE),
        "profiles.add(content)": lambda: m.profiles.add(ALICE, "Note", {"content": many}),
    }


HUGE = [
    "conversation.append_turn(role)",
    "conversation.append_turn(unknown key)",
    "conversation.window(last_n)",
    "conversation.window(max_tokens)",
    "episodic.log_action(outcome)",
    "episodic.similar_actions(outcome)",
    "long_term.store(memory_type)",
    "working.advance_step(status)",
    "working.checkpoint(reason)",
    "working.update_context(expected_version)",
    "profiles.patch(field)",
    "profiles.patch(key)",
    "profiles.patch(key with nan)",
    "profiles.patch(schema)",
    "profiles.patch(PatchOp path)",
    "profiles.get(schema)",
    "profiles.add(content)",
]


@pytest.mark.parametrize("api", HUGE)
async def test_an_error_message_stays_short_for_a_huge_value(bare, api):
    calls = _huge(bare)
    assert sorted(calls) == sorted(HUGE)
    with pytest.raises(InvalidInputError) as caught:
        await calls[api]()
    assert len(str(caught.value)) < 400, str(caught.value)[:500]


def test_inputs_tried_per_api():
    """Runs last in this file: prints the tally for the report (``-s``) and checks that
    every property ran."""
    total = sum(HOSTILE_COUNTS.values())
    if total < 400:
        pytest.skip("only some of the properties above ran; the tally needs them all")
    print(f"\nhostile inputs tried: {total} over {len(HOSTILE_COUNTS)} APIs")
    for name, count in sorted(HOSTILE_COUNTS.items()):
        print(f"  {count:4d}  {name}")
    print(f"known defects met: {sum(KNOWN_HITS.values())}")
    for name, count in sorted(KNOWN_HITS.items()):
        print(f"  {count:4d}  {name}")


# --- fixed here: the LangGraph checkpointer and store refuse what used to escape raw ----------


@pytest.mark.parametrize(
    "call",
    [
        lambda saver: saver.aget_tuple("thread-1"),
        lambda saver: saver.aget_tuple({"configurable": ["thread_id"]}),
        lambda saver: saver.aget_tuple(
            {"configurable": {"thread_id": "t", "checkpoint_ns": "\ud800"}}
        ),
        lambda saver: saver.alist(None, before={"configurable": 7}).__anext__(),
        lambda saver: saver.alist(None, before="c1").__anext__(),
        lambda saver: saver.aput(
            {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
            empty_checkpoint(),
            {"source": "input", "step": -1, "f": object()},
            {},
        ),
        lambda saver: saver.aput(
            {"configurable": {"thread_id": "t", "checkpoint_ns": "", "user_id": 2**64}},
            empty_checkpoint(),
            {},
            {},
        ),
        lambda saver: saver.aput_writes(
            {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c"}},
            [("ch", 2**64)],
            "task",
        ),
    ],
)
async def test_the_checkpointer_refuses_malformed_configs_and_values(connection, call):
    saver = MongoCheckpointer(connection, strict=False)  # refused for the value, not the tenant
    with pytest.raises(InvalidInputError):
        await call(saver)
    assert await connection.db[saver._checkpoints.name].count_documents({}) == 0


async def test_the_checkpointer_matches_unencodable_filters_and_huge_limits_in_python(connection):
    saver = MongoCheckpointer(connection, strict=False)
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    await saver.aput(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
    assert [t async for t in saver.alist(config, filter={"source": "\ud800"})] == []
    assert len([t async for t in saver.alist(config, limit=2**64)]) == 1
    # Text BSON cannot hold is left out of the queryable copy; the serialised metadata keeps
    # it as LangGraph's serde writes it (msgpack replaces a lone surrogate with "?").
    await saver.aput(config, empty_checkpoint(), {"source": "loop", "tag": "\udcff"}, {})
    found = [t.metadata async for t in saver.alist(config, filter={"source": "loop"})]
    assert [m["tag"] for m in found] == ["?"]


@pytest.mark.parametrize("prefix", [{"user_id": "bob"}, 3.5, b"memories", {"memories"}])
async def test_the_store_refuses_a_prefix_that_is_not_a_tuple(connection, embedder, prefix):
    await IndexManager(connection, embedder.signature).setup()
    memories = MemorySystem(connection, embedder)
    store = MemoryStore(memories.long_term, agent_id="agent")
    with pytest.raises(InvalidInputError, match="prefix must be a tuple"):
        await store.alist_namespaces(prefix=prefix)
    await memories.aclose()

"""What the console tests look at: two agents' users with memories, a changed fact, a profile,
a session, a task with a checkpoint, a rated action, and hostile text where stored text is
shown."""

from __future__ import annotations

from dataclasses import dataclass

from agent_memory.config import load_settings
from agent_memory.memory.system import MemorySystem
from agent_memory.mongo.indexes import IndexManager
from agent_memory.tenancy import Tenant

SUPPORT_KEY = "support-key-0123456789abcdef"
OTHER_KEY = "other-agent-key-0123456789abcdef"
TOKEN = "local-token-0123456789"
HOSTILE = '<script>alert("x")</script><a href="https://evil.example">'
ALICE = Tenant("support", "alice")
BOB = Tenant("other", "bob")


@dataclass(frozen=True)
class Seeded:
    berlin: str  # superseded by porto
    porto: str
    window: str
    hostile: str  # a memory whose text is HOSTILE
    bob_secret: str
    session_id: str
    task_id: str
    action_id: str


async def seed(memories: MemorySystem) -> Seeded:
    await IndexManager(memories.connection, memories.long_term.embedder.signature).setup()
    long_term = memories.long_term
    berlin = await long_term.store(ALICE, "Alice lives in Berlin", key="home", importance=0.6)
    porto = await long_term.store(ALICE, "Alice moved to Porto", key="home", importance=0.7)
    window = await long_term.store(ALICE, "Alice prefers window seats on long flights")
    hostile = await long_term.store(ALICE, f"Alice pasted {HOSTILE} into the chat")
    await long_term.store(Tenant("support", HOSTILE), "A user with a hostile id")
    bob = await long_term.store(BOB, "Bob's secret: the vault code is 4711")
    await memories.conversation.start_session(ALICE, "s-1")
    await memories.conversation.append_turn(
        ALICE,
        "s-1",
        [
            {"role": "user", "content": "Where do I live now?"},
            {"role": "assistant", "content": f"In Porto. {HOSTILE}"},
        ],
    )
    task = await memories.working.create_task(
        ALICE, "s-1", "Book a flight to Porto", plan=["search", "choose", "pay"]
    )
    await memories.working.start_task(ALICE, task.id)
    await memories.working.advance_step(ALICE, task.id, 0, status="in_progress")
    await memories.working.advance_step(ALICE, task.id, 0, status="completed", result="3 flights")
    await memories.working.checkpoint(ALICE, task.id)
    action_id = await memories.episodic.log_action(
        ALICE,
        session_id="s-1",
        action_type="query_response",
        outcome="success",
        content="Where do I live now?",
        memory_ids=[porto.id],
    )
    await memories.episodic.add_feedback(ALICE, action_id, rating=5)
    await memories.profiles.patch(
        ALICE, {"user_name": "Alice", "home": "Porto", "preferences": {"seat": "window"}}
    )
    await memories.long_term.drain()
    return Seeded(berlin.id, porto.id, window.id, hostile.id, bob.id, "s-1", task.id, action_id)


def console_settings(settings, **changes):
    """The test's settings, with API keys as ``changes`` say (none by default)."""
    return load_settings(
        **{**settings.model_dump(exclude={"api_keys"}), "mongodb_uri": settings.uri(), **changes}
    )


KEYS = {"support": SUPPORT_KEY, "other": [OTHER_KEY]}

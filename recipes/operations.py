"""Operating agent_memory: index setup, the scheduled decay job, ratings through the feedback
API, success rates, stats and erasing a user.

What it shows, as an operator would run it:

1. ``agent-memory indexes setup`` before first use. On the embedded default (and any MongoDB
   without search) it creates the regular indexes (keywords are ranked with BM25 in the
   framework there, no ``$text`` index); with ``MONGODB_URI`` pointing at Atlas or atlas-local
   (``MONGODB_INITDB_ROOT_PASSWORD='choose-one' docker compose up -d --wait`` with this
   repository's ``docker-compose.yml``) the same command also creates the Atlas Vector Search
   and Atlas Search indexes from ``atlas_indexes/`` and waits for them to be queryable.
   Nothing here requires Atlas.
2. An app's agent stores memories, conversations and actions; the recipe then pretends they
   have not been touched for weeks (it back-dates them: a recipe cannot wait a month).
3. ``agent-memory decay`` as cron or a Kubernetes CronJob runs it: importance decay of unused
   memories, then retention (inactive sessions archived, old action logs summarised into
   per-day counts and deleted). Run again in the same period (here through the library's
   ``Maintenance``, as an app's own scheduler would) it decays nothing; while another run holds
   the lock the command exits with code 6 and touches nothing.
4. The feedback API (``agent_memory.api.create_app``, served by ``agent-memory api``) is
   driven in-process over ``httpx.ASGITransport``: a user's rating of an answer, sent with the
   agent's API key, lands on the action and is credited to the memories of its prompt; the
   success rates count live and summarised actions together.
5. What is stored per user (``agent-memory stats``) and a user erased everywhere
   (``agent-memory forget --user bob --yes``), here through the library calls under them.

Run it (embedded database, offline; 7 s measured with AGENT_MEMORY_EMBEDDER=fake on 2 idle cores)::

    . .venv/bin/activate    # once per shell: the virtual environment of README's quick start
    python recipes/operations.py

Production: MONGODB_URI for Atlas or atlas-local; AGENT_MEMORY_EMBEDDER=voyage with
VOYAGE_API_KEY (the embeddings of memories and actions); AGENT_MEMORY_API_KEYS for the
feedback API (``'{"support": "a-key-of-24-characters-or-more"}'``). A Kubernetes CronJob
runs ``agent-memory --log-format json decay`` with the same environment; exit code 6 means
"another run is working", not a failure to alert on. Needs the ``[api]`` extra and httpx.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import structlog

try:
    import httpx

    from agent_memory.api import create_app
except ImportError as exc:  # pragma: no cover - the [api] extra and httpx are in [dev]
    sys.exit(
        f"this recipe needs FastAPI and httpx ({exc.name} is missing): "
        "pip install 'agent-memory[api]' httpx"
    )

from agent_memory import connect, load_settings, make_embedder
from agent_memory.memory import MemorySystem, Tenant
from agent_memory.memory.conversation import NewMessage
from agent_memory.ops import Lease, Maintenance, collect_stats, forget_user

AGENT = "ops-recipe"
ALICE = Tenant(AGENT, "alice")
BOB = Tenant(AGENT, "bob")
API_KEY = "ops-recipe-key-0123456789abcdef"  # a real key comes from a secret store


def cli(*args: str, last_line_only: bool = False) -> subprocess.CompletedProcess[str]:
    """``agent-memory ARGS`` in a new process, as cron would run it (same environment: on the
    embedded default it connects to the server this script already started)."""
    result = subprocess.run(
        [sys.executable, "-m", "agent_memory", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "120"},
        timeout=60,
    )
    shown = " ".join(args)
    lines = (result.stdout + result.stderr).strip().splitlines()
    for line in lines[-1:] if last_line_only else lines:
        print(f"  | {line}")
    print(f"  `agent-memory {shown}` exited {result.returncode}")
    return result


async def seed(memories: MemorySystem) -> dict[str, str]:
    """What an agent leaves behind: memories, and actions whose prompts used them."""
    ids = {}
    for tenant, facts in (
        (ALICE, ["Alice prefers aisle seats.", "Alice flies out of Lisbon."]),
        (BOB, ["Bob is vegetarian."]),
    ):
        stored = [await memories.long_term.store(tenant, fact) for fact in facts]
        await memories.conversation.append_turn(
            tenant,
            f"{tenant.user_id}-s1",
            [NewMessage.user(f"Hi, I am {tenant.user_id}."), NewMessage("assistant", "Hello!")],
        )
        for number, outcome in enumerate(("success", "success", "failure")):
            ids[f"{tenant.user_id}-{number}"] = await memories.episodic.log_action(
                tenant,
                session_id=f"{tenant.user_id}-s1",
                action_type="query_response",
                outcome=outcome,
                content=f"question {number} of {tenant.user_id}",
                memory_ids=[m.id for m in stored],
            )
    await memories.long_term.drain()
    await memories.conversation.drain()
    return ids


async def back_date(memories: MemorySystem, days: int) -> None:
    """Pretend nobody used these memories for ``days`` days, the actions are that old, and
    Bob's conversation is older than the 90 days sessions are kept active."""
    then = datetime.now(UTC) - timedelta(days=days)
    agent = {"agent_id": AGENT}
    await memories.connection.collection("sessions").update_many(
        {**agent, "user_id": "bob"}, {"$set": {"last_active_at": then - timedelta(days=60)}}
    )
    await memories.connection.collection("memories").update_many(
        agent, {"$set": {"last_accessed": then}}
    )
    await memories.connection.collection("action_logs").update_many(
        agent, {"$set": {"timestamp": then}}
    )


async def main() -> None:
    # This recipe's data in a database of its own, one per embedder (vectors of two models
    # cannot be compared), unless AGENT_MEMORY_DATABASE (or .env) names one.
    if "database" not in (chosen := load_settings()).model_fields_set:
        os.environ["AGENT_MEMORY_DATABASE"] = f"recipe_operations_{chosen.embedder}"
    print("1. index setup (once, before first use; on Atlas it creates the search indexes too)")
    if cli("indexes", "setup", last_line_only=True).returncode != 0:
        sys.exit("index setup failed")

    settings = load_settings(api_keys={AGENT: [API_KEY]})
    embedder = make_embedder(settings)
    async with await connect(settings) as conn:
        memories = MemorySystem(conn, embedder)
        for tenant in (ALICE, BOB):  # start clean on every run
            await forget_user(memories, tenant)
        await conn.collection("action_aggregates").delete_many({"agent_id": AGENT})

        print("\n2. the agent stores memories, conversations and actions; weeks pass")
        await seed(memories)
        await back_date(memories, days=45)
        before = await conn.collection("memories").find_one({"user_id": "alice"})
        print(f"  alice's first memory: importance {before['importance']:.3f}")

        print("\n3. the scheduled job (cron: `17 3 * * * agent-memory decay`)")
        cli("decay", "--agent", AGENT)
        after = await conn.collection("memories").find_one({"_id": before["_id"]})
        print(f"  alice's first memory: importance {after['importance']:.3f}")
        print("  the same period again, from an app's own scheduler (the library):")
        again = await Maintenance(memories).run(agent_id=AGENT)
        print(f"  | {again.summary()}")
        print("  while another run holds the lock:")
        async with Lease(conn, "maintenance", holder="cron-pod-1"):
            locked = cli("decay", "--agent", AGENT)
        assert locked.returncode == 6, locked.returncode

        print("\n4. ratings through the feedback API (X-API-Key names the agent)")
        today = await memories.episodic.log_action(
            ALICE,
            session_id="alice-s2",
            action_type="query_response",
            outcome="success",
            content="Which seat should I book?",
            memory_ids=[before["_id"]],
        )
        app = create_app(settings, connection=conn, embedder=embedder)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as http:
            refused = await http.post(
                f"/v1/actions/{today}/feedback", json={"user_id": "alice", "rating": 5}
            )
            print(f"  without a key: {refused.status_code} {refused.json()['detail']}")
            rated = await http.post(
                f"/v1/actions/{today}/feedback",
                json={"user_id": "alice", "rating": 5, "correction": "Aisle, near the front."},
                headers={"X-API-Key": API_KEY, "Idempotency-Key": "alice-rating-1"},
            )
            body = rated.json()
            print(
                f"  alice rated {today[:12]}...: {rated.status_code}, rating {body['rating']}, "
                f"credited {body['credited']:+.1f} to {len(body['memory_ids'])} memory"
            )
            stranger = await http.post(
                f"/v1/actions/{today}/feedback",
                json={"user_id": "bob", "rating": 1},
                headers={"X-API-Key": API_KEY},
            )
            print(f"  bob rating alice's action: {stranger.status_code} (nothing written)")
            rates = (
                await http.get(
                    "/v1/success-rates",
                    params={"action_type": "query_response", "days": 90},
                    headers={"X-API-Key": API_KEY},
                )
            ).json()
        print(
            f"  success rates over 90 days: {rates['total']} actions "
            f"({rates['summarised']} from summarised days), success {rates['success_rate']:.0%}, "
            f"failure {rates['failure_rate']:.0%}, average rating {rates['average_rating']:.1f}"
        )
        credited = await conn.collection("memories").find_one({"_id": before["_id"]})
        feedback = credited["feedback"]
        print(
            f"  the rated memory's feedback: count {feedback['count']}, sum {feedback['sum']:+.1f}"
        )

        print("\n5. what is stored (`agent-memory stats`), erasing a user (`agent-memory forget`)")
        stats = await collect_stats(conn, agent_id=AGENT)
        for tenant in stats.tenants:
            counts = ", ".join(f"{n} {kind}" for kind, n in tenant.counts.items() if n)
            print(f"  {tenant.user_id}: {counts}")
        erased = await forget_user(memories, BOB)
        print(f"  bob erased: {', '.join(f'{n} {name}' for name, n in erased.items() if n)}")
        await memories.aclose()
    await embedder.aclose()


if __name__ == "__main__":
    # The library never configures logging; an application decides what it wants to see.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main())

"""What a soak run checks, reading back everything it stored (see :mod:`.soak`).

The checks read the collections directly, not through the memories' own APIs: a read path
that filtered out a misplaced document would hide exactly what is being looked for.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from agent_memory.mongo.connection import Connection
from agent_memory.ops.forget import USER_COLLECTIONS
from agent_memory.stamps import utcnow

__all__ = ["Ledger", "check_store", "expected_values"]

_MARKER = re.compile(r"\bmk[0-9a-f]{12}\b", re.IGNORECASE)
_TURN = re.compile(r"^turn (\d+) (mk[0-9a-f]{12}): ")
_SPACE = re.compile(r"\s+")


@dataclass
class Ledger:
    """What the run sent: each user's marker, and per session the turns the agent
    acknowledged (returned a result for), in order."""

    markers: dict[str, str]
    sent: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def acknowledge(self, user: str, session_id: str, number: int) -> None:
        self.sent.setdefault((user, session_id), []).append(number)

    def last_turns(self) -> dict[str, int]:
        """Each user's last acknowledged turn number."""
        last: dict[str, int] = {}
        for (user, _), numbers in self.sent.items():
            last[user] = max(last.get(user, -1), *numbers)
        return last


def expected_values(marker: str, last_turn: int) -> dict[str, str]:
    """The active memories a user should end with, from the last home and seat stated."""
    from agent_memory.bench.soak import statement  # soak imports this module

    values: dict[str, str] = {}
    for number in range(last_turn, -1, -1):
        said = statement(marker, number)
        if "home" not in values and said.startswith("I live in "):
            values["home"] = f"The user lives in {said.removeprefix('I live in ').rstrip('.')}."
        if "preference:seat" not in values and said.startswith("Please book me a "):
            seat = said.split()[4]
            values["preference:seat"] = f"The user prefers {seat} seats."
        if len(values) == 2:
            break
    return values


async def check_store(connection: Connection, agent_id: str, ledger: Ledger) -> dict[str, Any]:
    """Count everything wrong with what the run stored; every count should be 0.

    - messages: each acknowledged turn's message once in its session, in turn order
      (``lost``, ``duplicated``, ``out_of_order``), none that was never acknowledged, one
      episodic record per acknowledged turn (``missing_actions``);
    - ``foreign_markers``: documents holding another user's marker, in any collection that
      holds user data (messages, memories, profiles, jobs, sessions, actions...);
    - ``memories_from_foreign_sessions``: a formed memory whose source session is not one of
      its user's; ``duplicate_memories``: two active memories of a user with the same key or
      the same text; ``stale_values``: a current home or seat that is not the last stated;
    - formation: ``dead_jobs``, ``stuck_jobs`` (running, lease run out), ``open_jobs``
      (pending or running after the drain) and ``sessions_not_formed`` (the cursor short of
      the session's last message).
    """
    owner = {marker: user for user, marker in ledger.markers.items()}
    counts: Counter[str] = Counter()
    stale: list[dict[str, Any]] = []
    stored: dict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
    last_seq: dict[tuple[str, str], str] = {}
    actions: Counter[tuple[str, str]] = Counter()
    active: dict[str, list[dict[str, Any]]] = defaultdict(list)
    #: Every keyed memory of each user (active or history), to explain a stale value.
    keyed: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    cursors: dict[tuple[str, str], tuple[Any, str | None]] = {}
    jobs_seen: set[str] = set()
    for name in USER_COLLECTIONS:
        async for doc in connection.collection(name).find({"agent_id": agent_id}, {"embedding": 0}):
            user = doc.get("user_id")
            counts["documents_checked"] += 1
            counts["foreign_markers"] += any(
                owner.get(m.lower()) != user for m in _MARKER.findall(repr(doc))
            )
            session = (user, doc.get("session_id"))
            if name == "messages":
                if doc["seq"] > last_seq.get(session, ""):
                    last_seq[session] = doc["seq"]
                if doc["role"] == "user" and (m := _TURN.match(doc["content"])):
                    stored[session].append((doc["seq"], int(m[1])))
            elif name == "action_logs" and doc.get("action_type") == "query_response":
                actions[session] += 1
            elif name == "memories":
                _memory(doc, ledger, counts, active, jobs_seen)
                if doc.get("key"):
                    keyed[(user, doc["key"])].append(doc)
            elif name == "formation_jobs":
                _job(doc, counts, cursors)
    counts["formation_jobs_with_memories"] = len(jobs_seen)
    for session, numbers in ledger.sent.items():
        got = [number for _, number in sorted(stored.pop(session, []))]
        counts["lost_messages"] += len(set(numbers) - set(got))
        counts["duplicated_messages"] += len(got) - len(set(got))
        counts["unacknowledged_messages"] += len(set(got) - set(numbers))
        counts["sessions_out_of_order"] += got != sorted(got)
        counts["missing_actions"] += max(len(numbers) - actions[session], 0)
        _, through = cursors.get(session, (None, None))
        counts["sessions_not_formed"] += through != last_seq.get(session)
        counts["sessions_checked"] += 1
    # Messages in a session the run never sent to (another user's, or made up).
    counts["unacknowledged_messages"] += sum(len(rows) for rows in stored.values())
    for user, last_turn in ledger.last_turns().items():
        current = {m["key"]: m["content"] for m in active[user] if m.get("key")}
        for key, content in expected_values(ledger.markers[user], last_turn).items():
            if current.get(key) != content:
                counts["stale_values"] += 1
                stale.append(_stale(user, key, content, keyed[(user, key)], last_turn))
        keys = Counter(m["key"] for m in active[user] if m.get("key"))
        texts = Counter(_SPACE.sub(" ", m["content"]).strip().casefold() for m in active[user])
        counts["duplicate_memories"] += sum(n - 1 for n in keys.values()) + sum(
            n - 1 for n in texts.values()
        )
    return {
        "stale_details": stale[:5],
        **{name: counts[name] for name in _COUNTS},
    }


_COUNTS = (
    "sessions_checked",
    "documents_checked",
    "lost_messages",
    "duplicated_messages",
    "sessions_out_of_order",
    "unacknowledged_messages",
    "missing_actions",
    "foreign_markers",
    "memories_formed",
    "active_memories",
    "formation_jobs_with_memories",
    "memories_from_foreign_sessions",
    "duplicate_memories",
    "stale_values",
    "dead_jobs",
    "stuck_jobs",
    "open_jobs",
    "sessions_not_formed",
)


def _stale(
    user: str, key: str, expected: str, memories: list[dict[str, Any]], last_turn: int
) -> dict[str, Any]:
    """What a stale value's key went through: every memory of it, oldest said first, with
    where it was said, its status and what superseded it (a failed run explains itself)."""

    def said(doc: dict[str, Any]) -> str:
        return str(doc.get("last_said") or (doc.get("source") or {}).get("messages_through"))

    return {
        "user": user,
        "key": key,
        "expected": expected,
        "last_turn": last_turn,
        "memories": [
            {
                "content": doc.get("content"),
                "status": doc.get("status"),
                "said": said(doc),
                "first_said": (doc.get("source") or {}).get("messages_through"),
                "session": (doc.get("source") or {}).get("session_id"),
                "job": (doc.get("source") or {}).get("formation_job"),
                "created_at": str(doc.get("created_at")),
                "superseded_by": doc.get("superseded_by"),
                "id": doc.get("_id"),
            }
            for doc in sorted(memories, key=said)
        ],
    }


def _memory(
    doc: dict[str, Any],
    ledger: Ledger,
    counts: Counter[str],
    active: dict[str, list[dict[str, Any]]],
    jobs_seen: set[str],
) -> None:
    user = doc.get("user_id")
    source = doc.get("source") or {}
    if "formation" in (doc.get("tags") or ()):
        counts["memories_formed"] += 1
        if source.get("formation_job"):
            jobs_seen.add(source["formation_job"])
        if (user, source.get("session_id")) not in ledger.sent:
            counts["memories_from_foreign_sessions"] += 1
    if doc.get("status") == "active":
        counts["active_memories"] += 1
        active[user].append(doc)


def _job(
    doc: dict[str, Any], counts: Counter[str], cursors: dict[tuple[str, str], tuple[Any, Any]]
) -> None:
    status = doc["status"]
    counts["dead_jobs"] += status == "dead"
    counts["open_jobs"] += status in ("pending", "running")
    lease = doc.get("lease_until")
    counts["stuck_jobs"] += status == "running" and lease is not None and lease <= utcnow()
    if status == "done":
        session = (doc["user_id"], doc["session_id"])
        newest = cursors.get(session)
        if newest is None or doc["finished_at"] > newest[0]:
            cursors[session] = (doc["finished_at"], doc.get("messages_through"))

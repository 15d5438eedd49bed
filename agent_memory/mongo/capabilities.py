"""Find out once what the connected server can do, by asking it rather than assuming.

Each feature is probed with the smallest real use of it, in the shape the framework runs it:
``$vectorSearch`` and ``$search`` naming an index that cannot exist (Atlas answers no documents,
as it does for any missing index; a server without Atlas Search refuses the stage),
``$rankFusion`` over those two inputs, a ``$scoreFusion`` over no documents, a transaction that
reads nothing and aborts. Listing search indexes decides nothing: M0 and Flex clusters refuse
it although their search stages work, and Community 6.0.7-7.0.1 answer it with an empty list
although they have no search at all.

Each refusal is classified (:func:`classify_refusal`): a permission problem (Atlas reports it
as code 8000 "not allowed to do action", self-managed servers as code 13) is not "not
supported", and a transient one (a node stepping down, mongot unreachable) is asked again
instead of deciding the process's tier for its lifetime.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.errors import (
    AuthenticationError,
    SearchUnavailableError,
    StorageUnavailableError,
)
from agent_memory.mongo import _driver
from agent_memory.mongo._errors import Refusal, classify_refusal, first_line

__all__ = [
    "ATLAS_LOCAL",
    "PROBE_INDEX",
    "Capabilities",
    "SearchTier",
    "choose_tier",
    "probe_capabilities",
    "tier_reason",
]

logger = get_logger(__name__)

SearchTier = Literal["atlas", "plain"]

#: How to start Atlas Search on one's own machine, said wherever it is suggested: atlas-local
#: from this repository's docker-compose.yml, which refuses to start without a root password.
ATLAS_LOCAL = (
    "atlas-local: MONGODB_INITDB_ROOT_PASSWORD='choose-one' docker compose up -d --wait, "
    "then MONGODB_URI as in docs/atlas.md"
)

#: The index the search probes name: no catalog index has this name, so a server with Atlas
#: Search answers with no documents and reads nothing.
PROBE_INDEX = "agent_memory_probe_no_such_index"


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What the server supports. ``notes`` says why a feature was found missing."""

    version: str
    topology: Literal["standalone", "replica_set", "sharded"]
    #: This process reached the embedded server through its data directory.
    embedded: bool
    atlas_search: bool
    rank_fusion: bool
    score_fusion: bool
    transactions: bool
    notes: dict[str, str] = field(default_factory=dict)
    #: Why ``atlas_search`` is what it is, in a few words (logged with the tier chosen).
    search_reason: str = ""
    #: The server is the embedded engine (mongoeco), however it was reached (its data
    #: directory, or a URI from another process): the query shapes chosen for that engine
    #: follow this, not :attr:`embedded`.
    mongoeco: bool = False

    @property
    def version_tuple(self) -> tuple[int, ...]:
        parts = []
        for piece in self.version.split(".")[:3]:
            digits = "".join(ch for ch in piece if ch.isdigit())
            parts.append(int(digits) if digits else 0)
        return tuple(parts)

    def describe(self) -> str:
        features = [
            f"Atlas Search {'yes' if self.atlas_search else 'no'}",
            f"$rankFusion {'yes' if self.rank_fusion else 'no'}",
            f"$scoreFusion {'yes' if self.score_fusion else 'no'}",
            f"transactions {'yes' if self.transactions else 'no'}",
        ]
        kind = "embedded (mongoeco)" if self.mongoeco else self.topology
        return f"MongoDB {self.version} {kind}: " + ", ".join(features)


#: Pauses before asking again after a transient refusal; then the answer stands.
RETRY_DELAYS = (0.5, 1.0, 2.0)


async def _answer(run: Any) -> tuple[Refusal | None, str]:
    """Run a probe (``run()`` makes the awaitable), asking again after transient refusals;
    ``(None, "")`` when it worked, else how and why it was refused."""
    for delay in (*RETRY_DELAYS, None):
        try:
            await run()
        except pm.PyMongoError as exc:
            kind, reason = classify_refusal(exc), first_line(exc)
            if kind != "transient" or delay is None:
                return kind, reason
            logger.debug("capability_probe_retried", reason=reason, delay_s=delay)
            await asyncio.sleep(delay)
        else:
            return None, ""
    raise AssertionError("unreachable")  # pragma: no cover


def _vector_probe() -> dict[str, Any]:
    return {
        "$vectorSearch": {
            "index": PROBE_INDEX,
            "path": "embedding",
            "queryVector": [1.0],
            "numCandidates": 1,
            "limit": 1,
        }
    }


def _text_probe() -> dict[str, Any]:
    return {"$search": {"index": PROBE_INDEX, "text": {"query": "probe", "path": "content"}}}


#: ``buildInfo.gitVersion`` of the embedded engine (mongoeco).
_EMBEDDED_ENGINE = "mongoeco"
_EXCLUSIVE = "transactions block every other session on this server; not used"


async def probe_capabilities(
    db: Any,
    *,
    probe_collection: str,
    embedded: bool,
    requested_tier: Literal["auto", "atlas", "plain"] = "auto",
) -> Capabilities:
    """Ask the server behind ``db`` what it supports.

    Whether it has Atlas Search is decided by what ``$vectorSearch`` and ``$search`` do. A user
    not allowed to run them gets :class:`AuthenticationError` when the tier is ``auto`` (support
    cannot be told), and the tier it asked for otherwise; an answer that stays transient after
    :data:`RETRY_DELAYS` gets :class:`StorageUnavailableError` on ``auto`` rather than a tier
    chosen for the process's lifetime on one unlucky moment.

    ``probe_collection`` must exist (search stages on a missing collection fail for reasons
    unrelated to support); the probes read nothing from it and write nothing.
    """
    admin = db.client.admin
    hello = await admin.command("hello")
    build = await admin.command("buildInfo")
    if hello.get("msg") == "isdbgrid":
        topology: Literal["standalone", "replica_set", "sharded"] = "sharded"
    elif hello.get("setName"):
        topology = "replica_set"
    else:
        topology = "standalone"

    collection = db[probe_collection]
    notes: dict[str, str] = {}

    atlas_search, search_reason = await _probe_search(collection, requested_tier)
    if not atlas_search:
        notes["atlas_search"] = search_reason

    if atlas_search:
        # The shape hybrid search runs: $vectorSearch inside $rankFusion needs 8.1, and both
        # fusion stages are in preview; a server that refuses it gets the framework's fusion.
        rank_inputs: dict[str, Any] = {
            "vector": [_vector_probe()],
            "text": [_text_probe(), {"$limit": 1}],
        }
    else:
        # Fusion stages need input pipelines that are selections with a defined ranking.
        rank_inputs = {"probe": [{"$match": {"_id": None}}, {"$sort": {"_id": 1}}]}
    rank_kind, rank_error = await _answer(
        lambda: _driver.aggregate(
            collection, [{"$rankFusion": {"input": {"pipelines": rank_inputs}}}, {"$limit": 1}]
        )
    )
    if rank_kind:
        notes["rank_fusion"] = rank_error
    score_kind, score_error = await _answer(
        lambda: _driver.aggregate(
            collection,
            [
                {
                    "$scoreFusion": {
                        "input": {
                            "pipelines": {
                                "probe": [{"$match": {"_id": None}}, {"$score": {"score": 1}}]
                            },
                            "normalization": "none",
                        }
                    }
                }
            ],
        )
    )
    if score_kind:
        notes["score_fusion"] = score_error

    mongoeco = build.get("gitVersion") == _EMBEDDED_ENGINE
    if mongoeco:
        # The embedded engine runs one transaction at a time and refuses every other
        # session's commands meanwhile: never used, and not probed either, since opening one
        # here would fail whatever other programs sharing the server are doing.
        transactions = False
        notes["transactions"] = _EXCLUSIVE
    else:
        transactions, note = await _probe_transactions(db, collection)
        if note:
            notes["transactions"] = note

    capabilities = Capabilities(
        version=str(build.get("version", "unknown")),
        topology=topology,
        embedded=embedded,
        atlas_search=atlas_search,
        rank_fusion=rank_kind is None,
        score_fusion=score_kind is None,
        transactions=transactions,
        notes=notes,
        search_reason=search_reason,
        mongoeco=mongoeco,
    )
    logger.info(
        "capabilities_probed",
        version=capabilities.version,
        topology=topology,
        embedded=embedded,
        atlas_search=capabilities.atlas_search,
        rank_fusion=capabilities.rank_fusion,
        score_fusion=capabilities.score_fusion,
        transactions=transactions,
        search_reason=search_reason,
    )
    return capabilities


async def _probe_search(
    collection: Any, requested_tier: Literal["auto", "atlas", "plain"]
) -> tuple[bool, str]:
    """Whether the server runs both search stages, and why."""
    for name, stages in (
        ("$vectorSearch", [_vector_probe()]),
        ("$search", [_text_probe(), {"$limit": 1}]),
    ):
        kind, reason = await _answer(lambda stages=stages: _driver.aggregate(collection, stages))
        if kind == "unsupported":
            return False, f"{name} refused: {reason}"
        if kind == "forbidden":
            # Not allowed is not "not supported": on auto, falling back to the plain tier on
            # Atlas would quietly read every user's memories into the application to rank them.
            if requested_tier == "auto":
                raise AuthenticationError(
                    f"the database user may not run {name} ({reason}), so whether this server "
                    "has Atlas Search is unknown; grant it read access to the database (see "
                    "docs/atlas.md) or set AGENT_MEMORY_SEARCH_TIER=atlas or plain"
                )
            return requested_tier == "atlas", (
                f"not allowed to run {name}; {requested_tier} as set"
            )
        if kind == "transient":
            if requested_tier == "auto":
                # mongot may not answer yet (a new cluster starts it with its first search
                # index): a server that lists search indexes has Atlas Search all the same.
                listing, _ = await _answer(
                    lambda: _driver.aggregate(collection, [{"$listSearchIndexes": {}}])
                )
                if listing is None:
                    return True, (
                        f"{name} did not answer ({reason}) but search indexes can be listed"
                    )
                raise StorageUnavailableError(
                    f"could not tell whether this server has Atlas Search: {name} failed "
                    f"{len(RETRY_DELAYS) + 1} times ({reason}); connect again, or set "
                    "AGENT_MEMORY_SEARCH_TIER=atlas or plain"
                )
            return requested_tier == "atlas", (
                f"{name} could not be checked ({reason}); {requested_tier} as set"
            )
    return True, "$vectorSearch and $search answered"


async def _probe_transactions(db: Any, collection: Any) -> tuple[bool, str | None]:
    """Whether transactions are usable, and why not."""
    try:
        session = await _driver.start_session(db.client)
        async with session:
            await _driver.start_transaction(session)
            try:
                await collection.find_one({"_id": None}, session=session)
                # A server may run transactions exclusively (the embedded engine does): then
                # any other session's operation fails while one is open, and using them would
                # turn concurrency into errors. Such transactions are reported as unusable.
                try:
                    await collection.find_one({"_id": None})
                except pm.OperationFailure as exc:
                    if "active transaction" not in str(exc):
                        raise
                    return False, _EXCLUSIVE
            finally:
                await session.abort_transaction()
    except (pm.OperationFailure, pm.ConfigurationError, pm.InvalidOperation) as exc:
        return False, first_line(exc)
    return True, None


def choose_tier(
    capabilities: Capabilities, requested: Literal["auto", "atlas", "plain"]
) -> SearchTier:
    """The search tier to use: the requested one, or for ``auto`` the best the server has."""
    if requested == "plain":
        return "plain"
    if requested == "atlas":
        if not capabilities.atlas_search:
            reason = capabilities.notes.get("atlas_search", "no search support")
            raise SearchUnavailableError(
                "search_tier=atlas was requested but this server has no Atlas Search "
                f"({reason}); use Atlas or {ATLAS_LOCAL}; or set AGENT_MEMORY_SEARCH_TIER=plain"
            )
        return "atlas"
    return "atlas" if capabilities.atlas_search else "plain"


def tier_reason(
    capabilities: Capabilities, requested: Literal["auto", "atlas", "plain"], tier: SearchTier
) -> str:
    """One line saying which tier was chosen and why."""
    if requested != "auto":
        why = f"AGENT_MEMORY_SEARCH_TIER={requested}"
        if capabilities.search_reason:
            why += f"; {capabilities.search_reason}"
    else:
        why = capabilities.search_reason or "auto"
    fusion = ""
    if tier == "atlas":
        fusion = (
            "; fused by $rankFusion"
            if capabilities.rank_fusion
            else "; fused in the framework ($rankFusion "
            + capabilities.notes.get("rank_fusion", "refused")[:120]
            + ")"
        )
    return f"{tier} tier: {why}{fusion}"

"""Find out once what the connected server can do, by asking it rather than assuming.

Each feature is probed with the smallest real use of it: a ``$listSearchIndexes`` stage for
Atlas Search, a ``$rankFusion`` / ``$scoreFusion`` stage over no documents, a transaction that
reads nothing and aborts. An error means "not available" and is logged with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.errors import AuthenticationError, SearchUnavailableError
from agent_memory.mongo import _driver

__all__ = ["ATLAS_LOCAL", "Capabilities", "SearchTier", "choose_tier", "probe_capabilities"]

logger = get_logger(__name__)

SearchTier = Literal["atlas", "plain"]

#: How to start Atlas Search on one's own machine, said wherever it is suggested: atlas-local
#: from this repository's docker-compose.yml, which refuses to start without a root password.
ATLAS_LOCAL = (
    "atlas-local: MONGODB_INITDB_ROOT_PASSWORD='choose-one' docker compose up -d --wait, "
    "then MONGODB_URI as in docs/atlas.md"
)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What the server supports. ``notes`` says why a feature was found missing."""

    version: str
    topology: Literal["standalone", "replica_set", "sharded"]
    embedded: bool
    atlas_search: bool
    rank_fusion: bool
    score_fusion: bool
    transactions: bool
    notes: dict[str, str] = field(default_factory=dict)

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
        kind = "embedded (mongoeco)" if self.embedded else self.topology
        return f"MongoDB {self.version} {kind}: " + ", ".join(features)


_UNAUTHORIZED = 13


def _reason(exc: Exception) -> str:
    return str(exc).split(", full error:", 1)[0][:200]


async def _try(coro: Any) -> str | None:
    """Run a probe; ``None`` when it worked, else the reason it did not."""
    try:
        await coro
    except pm.OperationFailure as exc:
        if exc.code == _UNAUTHORIZED:
            raise
        return _reason(exc)
    return None


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

    A user not allowed to list search indexes gets :class:`AuthenticationError` when the
    tier is ``auto`` (support cannot be told), and the tier it asked for otherwise.

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

    try:
        search_error = await _try(_driver.aggregate(collection, [{"$listSearchIndexes": {}}]))
    except pm.OperationFailure as exc:
        # Not allowed is not "not supported": on auto, falling back to the plain tier on
        # Atlas would quietly read every user's memories into the application to rank them.
        if requested_tier == "auto":
            raise AuthenticationError(
                "the database user may not list search indexes, so whether this server has "
                "Atlas Search is unknown; grant it the listSearchIndexes action (see "
                "docs/atlas.md) or set AGENT_MEMORY_SEARCH_TIER=atlas or plain"
            ) from exc
        search_error = None if requested_tier == "atlas" else _reason(exc)
        notes["atlas_search"] = f"not allowed to list search indexes; {requested_tier} as set"
    if search_error and "atlas_search" not in notes:
        notes["atlas_search"] = search_error

    # Fusion stages need input pipelines that are selections with a defined ranking.
    rank_error = await _try(
        _driver.aggregate(
            collection,
            [
                {
                    "$rankFusion": {
                        "input": {
                            "pipelines": {
                                "probe": [{"$match": {"_id": None}}, {"$sort": {"_id": 1}}]
                            }
                        }
                    }
                }
            ],
        )
    )
    if rank_error:
        notes["rank_fusion"] = rank_error
    score_error = await _try(
        _driver.aggregate(
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
    if score_error:
        notes["score_fusion"] = score_error

    if build.get("gitVersion") == _EMBEDDED_ENGINE:
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
        atlas_search=search_error is None,
        rank_fusion=rank_error is None,
        score_fusion=score_error is None,
        transactions=transactions,
        notes=notes,
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
    )
    return capabilities


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
        return False, _reason(exc)
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

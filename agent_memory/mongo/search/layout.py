"""Which search indexes an Atlas deployment has: the full layout, or vector indexes only.

The catalog (``atlas_indexes/``) defines a ``vectorSearch`` and a ``search`` index for each of
three collections: six. An Atlas free cluster (M0) takes three search indexes in all, so there
the full layout cannot be set up. The **vector** layout keeps the three ``vectorSearch``
indexes, where only the server can rank a large collection by similarity, and ranks keywords
in the framework: the plain tier's BM25 (stemming, Chinese character pairs) over the tenant's
documents, which this process keeps in memory between searches
(:mod:`~agent_memory.mongo.search.snapshots`). The two rankings are fused in the framework.

``indexes setup`` decides on ``auto``: it creates the vector indexes first, then the text
indexes; when the cluster refuses one for its search-index limit, it stops creating them and
records the vector layout (in the meta collection, like the embedder). Every later connection
reads the record, so every process of the deployment searches the indexes that exist. A
cluster that later takes them all (an upgrade, then setup again) is recorded as full.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

__all__ = [
    "LAYOUT_META_ID",
    "Layout",
    "LayoutSetting",
    "choose_layout",
    "read_layout",
    "record_layout",
]

Layout = Literal["full", "vector"]
LayoutSetting = Literal["auto", "full", "vector"]

#: The meta document that records the layout ``indexes setup`` left.
LAYOUT_META_ID = "search_layout"

#: Why each layout is the one in use, for ``Connection.tier_reason`` and ``indexes status``.
_WHY = {
    "full": "vector and text search indexes",
    "vector": "vector search indexes only; keywords ranked in the framework",
}


async def read_layout(meta: Any) -> tuple[Layout | None, str]:
    """The layout recorded in the meta collection ``meta``, and why it was chosen; ``None``
    when setup has recorded none (or the record is not one this version knows)."""
    found = await meta.find_one({"_id": LAYOUT_META_ID})
    layout = found.get("layout") if isinstance(found, dict) else None
    if not isinstance(layout, str) or layout not in _WHY:
        return None, ""
    reason = found.get("reason")
    return layout, reason if isinstance(reason, str) else ""  # type: ignore[return-value]


async def record_layout(meta: Any, layout: Layout, reason: str) -> None:
    await meta.update_one(
        {"_id": LAYOUT_META_ID},
        {"$set": {"layout": layout, "reason": reason, "recorded_at": datetime.now(UTC)}},
        upsert=True,
    )


def choose_layout(
    setting: LayoutSetting, recorded: Layout | None, reason: str
) -> tuple[Layout, str]:
    """The layout to search with, and one line saying why."""
    if setting != "auto":
        return setting, f"{_WHY[setting]} (AGENT_MEMORY_ATLAS_LAYOUT={setting})"
    if recorded is None:
        return "full", f"{_WHY['full']} (no layout recorded by `agent-memory indexes setup` yet)"
    because = f": {reason}" if reason else ""
    return recorded, f"{_WHY[recorded]} (recorded by `agent-memory indexes setup`{because})"

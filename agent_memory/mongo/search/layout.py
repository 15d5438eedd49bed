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
reads the record, and a running process reads it again at most once a minute
(:class:`LayoutWatch`), so every process of the deployment comes to search the indexes that
exist, including one started before setup ran. A cluster that later takes them all (an
upgrade, then setup again) is recorded as full once its text indexes serve.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from agent_memory._log import get_logger
from agent_memory.mongo._errors import first_line

__all__ = [
    "LAYOUT_META_ID",
    "Layout",
    "LayoutSetting",
    "LayoutWatch",
    "choose_layout",
    "read_layout",
    "record_layout",
]

logger = get_logger(__name__)

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


class LayoutWatch:
    """The layout this process searches with. On ``auto`` the record is read again when a
    search asks and ``interval`` seconds of ``clock`` have passed since the last read, so a
    process that connected before ``indexes setup`` changed the layout follows it within
    that time; a failed read keeps the layout known (a search must not fail for it)."""

    def __init__(
        self,
        meta: Any,
        setting: LayoutSetting,
        layout: Layout,
        reason: str,
        *,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._meta = meta
        self.setting: LayoutSetting = setting
        self.interval = interval
        self.clock = clock
        self._layout: Layout = layout
        self._reason = reason
        self._read_at = clock()

    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def reason(self) -> str:
        return self._reason

    def set(self, layout: Layout, reason: str) -> None:
        """What this process now knows to be in place (``indexes setup`` just recorded it)."""
        self._layout, self._reason = layout, reason
        self._read_at = self.clock()

    async def current(self) -> Layout:
        """The layout to search with now, read again from the record when it is due."""
        if self.setting != "auto" or self.clock() - self._read_at < self.interval:
            return self._layout
        self._read_at = self.clock()
        try:
            recorded, why = await read_layout(self._meta)
        except Exception as exc:  # the layout known so far serves until the next read
            logger.debug("search_layout_unread", reason=first_line(exc))
            return self._layout
        layout, reason = choose_layout("auto", recorded, why)
        if layout != self._layout:
            logger.info("search_layout_changed", layout=layout, reason=reason)
        self._layout, self._reason = layout, reason
        return layout

"""The LangGraph store under many concurrent calls, and under one large batch of puts.

``agent-memory bench store [--rounds 10] [--per-round 100] [--bulk 2000]``

Concurrent: ``rounds`` x ``per-round`` x 6 calls started together with ``asyncio.gather``,
the mix LangGraph's own async store tests use for large batches: for each key a put, a get, a
namespace listing, a search, the same put again and a delete (6,000 calls, 2,000 of them
puts, with the defaults). Bulk: one ``abatch`` of ``bulk`` puts of distinct keys. Reported:
wall time, calls per second, embedding calls, and the items left (none after the
concurrent phase: every key ends deleted; ``bulk`` after the bulk phase).

Namespaces are one user's, ``("memories", "bench-user", ...)``, so the same run works on
stores that accept a user's namespaces only.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np
from langgraph.store.base import PutOp

from agent_memory.langgraph.store import MemoryStore
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.mongo.connection import Connection
from agent_memory.providers.embedders.base import Embedder

__all__ = ["render_store_ops", "run_store_ops"]

_USER = ("memories", "bench-user")


class _Calls:
    """Counts the embedding calls of an embedder (its methods wrapped on the instance)."""

    def __init__(self, embedder: Embedder) -> None:
        self.count = 0
        for name in ("embed_documents", "embed_query"):
            inner = getattr(embedder, name)

            async def counted(*args: Any, _inner: Any = inner, **kwargs: Any) -> np.ndarray:
                self.count += 1
                return await _inner(*args, **kwargs)

            setattr(embedder, name, counted)


async def run_store_ops(
    connection: Connection,
    embedder: Embedder,
    *,
    rounds: int = 10,
    per_round: int = 100,
    bulk: int = 2_000,
) -> dict[str, Any]:
    counting = _Calls(embedder)
    long_term = LongTermMemory(connection, embedder)
    store = MemoryStore(long_term, agent_id="bench-store")
    try:
        calls: list[Any] = []
        for m in range(rounds):
            namespace = (*_USER, "foo", "bar", "baz", str(m % 2))
            for i in range(per_round):
                key = f"key{i}"
                calls += [
                    store.aput(namespace, key, {"foo": f"bar{i}"}),
                    store.aget(namespace, key),
                    store.alist_namespaces(prefix=_USER, max_depth=m + 3),
                    store.asearch(_USER),
                    store.aput(namespace, key, {"foo": f"bar{i}"}),
                    store.adelete(namespace, key),
                ]
        started = time.perf_counter()
        results = await asyncio.gather(*calls)
        concurrent_s = time.perf_counter() - started
        concurrent_embeds = counting.count
        left = len(await store.asearch(_USER, limit=1_000))

        puts = [
            PutOp((*_USER, "bulk"), f"item{i}", {"content": f"bulk item number {i} of the batch"})
            for i in range(bulk)
        ]
        before = counting.count
        started = time.perf_counter()
        await store.abatch(puts)
        bulk_s = time.perf_counter() - started
        bulk_embeds = counting.count - before
        stored = len(await store.asearch((*_USER, "bulk"), limit=1_000)) if bulk else 0
        if bulk > 1_000:
            stored += len(await store.asearch((*_USER, "bulk"), limit=1_000, offset=1_000))
    finally:
        await store.aclose()
        await long_term.aclose()
    return {
        "calls": len(calls),
        "answered": len(results),
        "concurrent_s": round(concurrent_s, 2),
        "calls_per_s": round(len(calls) / concurrent_s, 1),
        "concurrent_embedding_calls": concurrent_embeds,
        "items_left": left,
        "bulk_puts": bulk,
        "bulk_s": round(bulk_s, 2),
        "bulk_puts_per_s": round(bulk / bulk_s, 1) if bulk else None,
        "bulk_embedding_calls": bulk_embeds,
        "bulk_items_stored": stored,
    }


def render_store_ops(result: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"concurrent: {result['calls']:,} calls in {result['concurrent_s']} s "
            f"({result['calls_per_s']}/s), {result['concurrent_embedding_calls']} embedding "
            f"calls, {result['items_left']} items left",
            f"bulk: {result['bulk_puts']:,} puts in one batch in {result['bulk_s']} s "
            f"({result['bulk_puts_per_s']}/s), {result['bulk_embedding_calls']} embedding "
            f"calls, {result['bulk_items_stored']} items stored",
        ]
    )

"""Memory use over a long run: samples of this process's RSS (and, on request, the Python
heap traced by :mod:`tracemalloc`), and the rule that decides whether it stayed flat.

RSS covers everything the process holds: the framework, the driver and, on the embedded
default, the database server, which runs on a thread of the same process. tracemalloc sees
Python allocations only (not SQLite's), and slows the run, so it is off unless asked for.

The rule (:func:`memory_verdict`): samples before ``warmup`` seconds are warm-up (caches,
pools, the first of everything). Of the rest, the *baseline* is the median of the first
quarter and the *end* the median of the last quarter; the run passes when the end is at most
``max_growth`` above the baseline. Medians rather than single samples, so one garbage
collection or one burst of requests does not decide. The least-squares slope after the
warm-up is reported beside it: a leak shows as a steady slope.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MemorySampler", "memory_verdict", "rss_bytes"]

_STATM = Path("/proc/self/statm")
_MB = 1024 * 1024


def rss_bytes(pid: int | None = None) -> int | None:
    """The resident set size of process ``pid`` (this one by default) now, from Linux
    ``/proc``; ``None`` elsewhere or when the process is gone."""
    statm = _STATM if pid is None else Path(f"/proc/{pid}/statm")
    try:
        return int(statm.read_text().split()[1]) * resource.getpagesize()
    except (OSError, IndexError, ValueError):
        return None


class MemorySampler:
    """Samples memory every ``interval`` seconds in a background task of the running loop.

    Each sample is ``{"t": seconds since start, "rss_mb": ..., "traced_mb": ...}``; without
    ``/proc`` (not Linux) tracemalloc is used whatever ``traced`` says."""

    def __init__(
        self,
        interval: float,
        *,
        traced: bool = False,
        extra: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.interval = interval
        #: More figures for each sample (the embedded server's memory and log).
        self.extra = extra
        self.traced = traced or rss_bytes() is None
        self.samples: list[dict[str, Any]] = []
        self._started = 0.0
        self._task: asyncio.Task[None] | None = None
        self._tracing_started = False

    def sample_now(self) -> dict[str, Any]:
        rss = rss_bytes()
        sample: dict[str, Any] = {
            "t": round(time.perf_counter() - self._started, 2),
            "rss_mb": None if rss is None else round(rss / _MB, 1),
        }
        if self.traced and tracemalloc.is_tracing():
            sample["traced_mb"] = round(tracemalloc.get_traced_memory()[0] / _MB, 1)
        if self.extra is not None:
            sample.update(self.extra())
        return sample

    async def _run(self) -> None:
        while True:
            self.samples.append(self.sample_now())
            await asyncio.sleep(self.interval)

    def start(self) -> None:
        if self.traced and not tracemalloc.is_tracing():
            tracemalloc.start()
            self._tracing_started = True
        self._started = time.perf_counter()
        self._task = asyncio.create_task(self._run(), name="soak-memory-sampler")

    def stop(self) -> list[dict[str, Any]]:
        """Stop sampling (a last sample is taken); returns the samples. Idempotent."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            self.samples.append(self.sample_now())
        if self._tracing_started:
            self._tracing_started = False
            with contextlib.suppress(RuntimeError):
                tracemalloc.stop()
        return self.samples


def _series(samples: list[dict[str, Any]], name: str, warmup: float, max_growth: float) -> dict:
    points = [(s["t"], s[name]) for s in samples if s.get(name) is not None]
    if not points:
        return {}
    values = [v for _, v in points]
    after = [(t, v) for t, v in points if t >= warmup]
    figures: dict[str, Any] = {
        "start": values[0],
        "peak": max(values),
        "end": values[-1],
    }
    if len(after) < 4:
        return figures | {"ok": False, "why": f"only {len(after)} samples after the warm-up"}
    quarter = max(len(after) // 4, 1)
    baseline = float(np.median([v for _, v in after[:quarter]]))
    end_level = float(np.median([v for _, v in after[-quarter:]]))
    times = np.array([t for t, _ in after])
    slope = float(np.polyfit(times, [v for _, v in after], 1)[0]) * 60 if np.ptp(times) else 0.0
    growth = (end_level - baseline) / baseline if baseline else 0.0
    return figures | {
        "baseline": round(baseline, 1),
        "end_level": round(end_level, 1),
        "growth_pct": round(growth * 100, 1),
        "slope_mb_per_min": round(slope, 2),
        "ok": growth <= max_growth,
    }


def memory_verdict(
    samples: list[dict[str, Any]], *, warmup: float, max_growth: float
) -> dict[str, Any]:
    """Figures and pass/fail for RSS (and the traced heap when sampled); see the module."""
    result: dict[str, Any] = {
        "samples": len(samples),
        "warmup_seconds": warmup,
        "rule": f"median of the last quarter of post-warm-up samples at most "
        f"{max_growth * 100:g} % above the median of the first quarter",
        "series": samples,
    }
    verdicts = []
    for name in ("rss_mb", "traced_mb", "server_rss_mb"):
        figures = _series(samples, name, warmup, max_growth)
        if figures:
            result[name] = figures
            verdicts.append(figures["ok"])
    result["ok"] = bool(verdicts) and all(verdicts)
    return result

"""A memory's importance and feedback over time, as coordinates for a small inline SVG chart
(drawn by the template: no script, no image request, nothing the page's policy forbids).

Two panels share the time axis, one per series, each with a value axis scaled to its own data
(with labelled ticks at round values), not to the whole possible range: decay takes a few
percent off an importance at a time, which on a 0-to-1 axis moved the line by two pixels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

__all__ = ["Chart", "Panel", "Point", "plot", "value_axis"]

WIDTH = 960
#: Each panel's height, the gap between them, and the margins around both.
PANEL_HEIGHT, GAP = 120, 28
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 12, 18, 24
HEIGHT = _TOP + 2 * PANEL_HEIGHT + GAP + _BOTTOM
#: About this many ticks per value axis.
_TICKS = 4


@dataclass(frozen=True, slots=True)
class Point:
    """One value at one moment, and why it changed (shown when the point is hovered)."""

    at: datetime
    value: float
    label: str


@dataclass(frozen=True, slots=True)
class Panel:
    """One series: its title, where it is drawn (``top`` to ``bottom``, in pixels), its steps
    through the points held until the next one (``x,y`` pairs for ``<polyline>``), its
    points ``(x, y, title)`` and its value axis ``(y, label)``."""

    name: str
    title: str
    top: float
    bottom: float
    line: str
    points: list[tuple[float, float, str]]
    y_ticks: list[tuple[float, str]]
    #: Where 0 is, when the axis holds it.
    zero: float | None


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    left: int
    right: int
    importance: Panel
    feedback: Panel
    #: ``(x, label, side)`` for the first and last moment.
    x_ticks: list[tuple[float, str, str]]

    @property
    def panels(self) -> tuple[Panel, Panel]:
        return (self.importance, self.feedback)


def value_axis(
    values: Sequence[float], *, lowest: float, highest: float, min_span: float
) -> tuple[float, float, list[float], int]:
    """A value axis for ``values`` within ``lowest``..``highest``: its ends, its ticks (round
    values, about four) and the decimals their labels need. The axis spans at least
    ``min_span``, so a flat line is not stretched into noise."""
    low, high = min(values), max(values)
    if high - low < min_span:
        middle = (low + high) / 2
        low, high = middle - min_span / 2, middle + min_span / 2
    raw = (high - low) / _TICKS
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = max(lowest, math.floor(low / step + 1e-9) * step)
    end = min(highest, math.ceil(high / step - 1e-9) * step)
    if end - start < step:  # pushed against a bound: keep one step of room
        start, end = (start, start + step) if start == lowest else (end - step, end)
    count = round((end - start) / step)
    ticks = [round(start + i * step, 10) for i in range(count + 1)]
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) + (1 if step / magnitude == 2.5 else 0)
    return start, end, ticks, decimals


def plot(
    importance: Sequence[Point], feedback: Sequence[Point], start: datetime, end: datetime
) -> Chart:
    """Both series (each in time order) on one time axis from ``start`` to ``end``:
    importance (within 0..1) above, feedback utility (within -1..1) below."""
    span = (end - start).total_seconds() or 1.0
    inner_w = WIDTH - _LEFT - _RIGHT

    def x(at: datetime) -> float:
        return round(_LEFT + inner_w * min(max((at - start).total_seconds() / span, 0.0), 1.0), 1)

    def panel(
        name: str,
        title: str,
        points: Sequence[Point],
        top: float,
        *,
        lowest: float,
        highest: float,
        min_span: float,
    ) -> Panel:
        points = sorted(points, key=lambda p: p.at)
        low, high, ticks, decimals = value_axis(
            [p.value for p in points] or [0.0], lowest=lowest, highest=highest, min_span=min_span
        )

        def y(value: float) -> float:
            clamped = min(max(value, low), high)
            return round(top + PANEL_HEIGHT * (high - clamped) / (high - low), 1)

        pairs: list[str] = []
        for i, point in enumerate(points):
            if i:
                pairs.append(f"{x(point.at)},{y(points[i - 1].value)}")
            pairs.append(f"{x(point.at)},{y(point.value)}")
        if points:
            pairs.append(f"{x(end)},{y(points[-1].value)}")
        return Panel(
            name=name,
            title=title,
            top=top,
            bottom=top + PANEL_HEIGHT,
            line=" ".join(pairs),
            points=[(x(p.at), y(p.value), p.label) for p in points],
            y_ticks=[(y(v), f"{v:.{decimals}f}") for v in ticks],
            zero=y(0.0) if low <= 0.0 <= high else None,
        )

    second = _TOP + PANEL_HEIGHT + GAP
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        left=_LEFT,
        right=WIDTH - _RIGHT,
        importance=panel(
            "importance", "importance", importance, _TOP, lowest=0.0, highest=1.0, min_span=0.05
        ),
        feedback=panel(
            "feedback",
            "feedback utility",
            feedback,
            second,
            lowest=-1.0,
            highest=1.0,
            min_span=0.2,
        ),
        x_ticks=[
            (x(start), start.strftime("%Y-%m-%d"), "start"),
            (x(end), end.strftime("%Y-%m-%d"), "end"),
        ],
    )

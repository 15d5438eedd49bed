"""A memory's importance and feedback over time, as coordinates for a small inline SVG chart
(drawn by the template: no script, no image request, nothing the page's policy forbids)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

__all__ = ["Chart", "Point", "plot"]

WIDTH, HEIGHT = 560, 160
_LEFT, _RIGHT, _TOP, _BOTTOM = 44, 12, 10, 24


@dataclass(frozen=True, slots=True)
class Point:
    """One value at one moment, and why it changed (shown when the point is hovered)."""

    at: datetime
    value: float
    label: str


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    #: Steps through the points, held until the next one (``x,y`` pairs for ``<polyline>``).
    importance: str
    feedback: str
    #: ``(x, y, title)`` per point.
    importance_points: list[tuple[float, float, str]]
    feedback_points: list[tuple[float, float, str]]
    #: ``(y, label)`` for the value axis, ``(x, label)`` for the first and last moment.
    y_ticks: list[tuple[float, str]]
    x_ticks: list[tuple[float, str, str]]
    zero: float


def plot(
    importance: Sequence[Point], feedback: Sequence[Point], start: datetime, end: datetime
) -> Chart:
    """Both series (each in time order) on one time axis from ``start`` to ``end``, values
    from -1 to 1 (importance lies in 0..1, feedback utility in -1..1)."""
    importance = sorted(importance, key=lambda p: p.at)
    feedback = sorted(feedback, key=lambda p: p.at)
    span = (end - start).total_seconds() or 1.0
    inner_w, inner_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM

    def x(at: datetime) -> float:
        return round(_LEFT + inner_w * min(max((at - start).total_seconds() / span, 0.0), 1.0), 1)

    def y(value: float) -> float:
        return round(_TOP + inner_h * (1.0 - (max(-1.0, min(1.0, value)) + 1.0) / 2.0), 1)

    def steps(points: Sequence[Point]) -> str:
        pairs: list[str] = []
        for i, point in enumerate(points):
            if i:
                pairs.append(f"{x(point.at)},{y(points[i - 1].value)}")
            pairs.append(f"{x(point.at)},{y(point.value)}")
        if points:
            pairs.append(f"{x(end)},{y(points[-1].value)}")
        return " ".join(pairs)

    def marks(points: Sequence[Point]) -> list[tuple[float, float, str]]:
        return [(x(p.at), y(p.value), p.label) for p in points]

    return Chart(
        width=WIDTH,
        height=HEIGHT,
        importance=steps(importance),
        feedback=steps(feedback),
        importance_points=marks(importance),
        feedback_points=marks(feedback),
        y_ticks=[(y(v), f"{v:g}") for v in (1.0, 0.5, 0.0, -0.5, -1.0)],
        x_ticks=[
            (x(start), start.strftime("%Y-%m-%d"), "start"),
            (x(end), end.strftime("%Y-%m-%d"), "end"),
        ],
        zero=y(0.0),
    )

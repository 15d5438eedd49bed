"""The memory chart's value axes: scaled to the data, with round ticks, within the bounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.console.chart import PANEL_HEIGHT, Point, plot, value_axis


@pytest.mark.parametrize(
    ("values", "lowest", "highest", "min_span", "expected"),
    [
        # A 5% decay of 0.7: an axis of 0.08, not 0 to 1.
        ([0.7, 0.665], 0.0, 1.0, 0.05, (0.64, 0.72, [0.64, 0.66, 0.68, 0.7, 0.72], 2)),
        # One value: the axis spans min_span around it, not nothing.
        ([0.0], -1.0, 1.0, 0.2, (-0.1, 0.1, [-0.1, -0.05, 0.0, 0.05, 0.1], 2)),
        # Against a bound: the ticks stop there.
        ([1.0], 0.0, 1.0, 0.05, (0.96, 1.0, [0.96, 0.98, 1.0], 2)),
        ([0.665, 0.9, 0.7], 0.0, 1.0, 0.05, (0.6, 0.9, [0.6, 0.7, 0.8, 0.9], 1)),
        ([-1.0, 1.0], -1.0, 1.0, 0.2, (-1.0, 1.0, [-1.0, -0.5, 0.0, 0.5, 1.0], 1)),
        ([0.1, 0.19], 0.0, 1.0, 0.05, (0.1, 0.2, [0.1, 0.125, 0.15, 0.175, 0.2], 3)),
    ],
)
def test_value_axis(values, lowest, highest, min_span, expected):
    low, high, ticks, decimals = value_axis(
        values, lowest=lowest, highest=highest, min_span=min_span
    )
    assert (round(low, 9), round(high, 9), ticks, decimals) == expected


def test_a_five_percent_decay_moves_the_line_a_third_of_the_panel():
    start = datetime(2026, 1, 1, tzinfo=UTC)
    chart = plot(
        [Point(start, 0.7, "stored"), Point(start + timedelta(days=30), 0.665, "decayed")],
        [Point(start, 0.0, "no ratings yet")],
        start,
        start + timedelta(days=31),
    )
    (_, stored, _), (_, decayed, _) = chart.importance.points
    assert decayed - stored >= PANEL_HEIGHT / 3
    assert [label for _, label in chart.importance.y_ticks] == [
        "0.64",
        "0.66",
        "0.68",
        "0.70",
        "0.72",
    ]
    assert chart.feedback.zero is not None and chart.importance.zero is None

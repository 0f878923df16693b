"""The report's plots put numbers on every log axis, however narrow the range of its curves."""

from __future__ import annotations

import math
import random

import pytest

from perf.plots import log_ticks


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        pytest.param(1, 1000, [1, 10, 100, 1000], id="decades"),
        pytest.param(0.15, 3.5, [0.2, 0.5, 1, 2], id="one-decade-and-a-bit"),
        pytest.param(0.6, 0.95, [0.6, 0.7, 0.8, 0.9], id="within-a-decade"),
    ],
)
def test_the_coarsest_series_with_three_labels_is_chosen(
    low: float, high: float, expected: list[float]
) -> None:
    ticks, shown = log_ticks(low, high)
    assert ticks == pytest.approx(expected)
    assert shown == (low, high)


def test_a_range_narrower_than_two_ticks_is_widened_to_hold_two() -> None:
    ticks, shown = log_ticks(1.21, 1.3)
    assert shown == (1.0, 2.0)
    assert ticks == [1.0, 2.0]


def test_every_range_gets_at_least_two_labels_inside_it() -> None:
    rng = random.Random(13)
    for _ in range(2000):
        low = 10 ** rng.uniform(-7, 6)
        high = low * 10 ** rng.uniform(0.001, 4)
        ticks, (shown_low, shown_high) = log_ticks(low, high)
        assert len(ticks) >= 2
        assert shown_low <= low and shown_high >= high
        assert all(shown_low * (1 - 1e-9) <= t <= shown_high * (1 + 1e-9) for t in ticks)
        # plain numbers: one significant mantissa digit
        assert all(math.isclose(float(f"{t:.1g}"), t) for t in ticks)

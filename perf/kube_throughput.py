"""kube scheduler_perf's `SchedulingThroughput` from a run's timeline of the bound count: pods
bound in each whole second from the first measured pod on (scheduler_perf samples the count of
scheduled pods every second and keeps the differences), and the Average, Perc50, Perc90 and
Perc99 of those samples as scheduler_perf reports them (the percentiles of the sorted samples;
its thresholds judge the Average)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

__all__ = ["per_second", "summary"]


def _count_at(timeline: Sequence[Sequence[float]], t: float) -> float:
    """The bound count at `t`: the last point at or before it (a step function from 0)."""
    count = 0.0
    for at, n in timeline:
        if at > t:
            break
        count = n
    return count


def per_second(timeline: Sequence[Sequence[float]], interval: float = 1.0) -> list[float]:
    """Pods bound per second in each whole `interval` of the run (its end is the last point);
    a run shorter than one interval gives one sample over its whole length."""
    if not timeline:
        return []
    end, last = float(timeline[-1][0]), float(timeline[-1][1])
    windows = int(end // interval)
    if windows == 0:
        return [last / end] if end > 0 else []
    counts = [_count_at(timeline, k * interval) for k in range(windows + 1)]
    return [(b - a) / interval for a, b in itertools.pairwise(counts)]


def _percentile(ordered: list[float], share: float) -> float:
    """The value at `share` of the sorted samples (nearest rank)."""
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def summary(samples: Sequence[float]) -> dict[str, float]:
    """Average, Perc50, Perc90 and Perc99 of the per-second samples (empty when none)."""
    if not samples:
        return {}
    ordered = sorted(samples)
    return {
        "Average": sum(ordered) / len(ordered),
        "Perc50": _percentile(ordered, 0.50),
        "Perc90": _percentile(ordered, 0.90),
        "Perc99": _percentile(ordered, 0.99),
    }

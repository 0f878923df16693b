"""Resource prioritizers.

* `ResourceAllocatableCPU` / `ResourceAllocatableMemory` (OCM): prefer clusters with more
  allocatable resources, min-max scaled to [-100, 100] with OCM's float expression and
  truncation (§2.3).
* `ResourceRatioCPU` / `ResourceRatioMemory` (an addition: the resource-based scheduling design,
  Story 1, "clusters whose allocatable to capacity ratio is larger"; OCM shipped them briefly and
  removed them in 2021, placement `d8bfca5`, before v1beta1): `int64((allocatable / capacity -
  0.5) * 2 * 100)`, so a cluster with everything free scores 100, half free 0, nothing free
  -100. Not scaled over the candidates: the ratio is already comparable across clusters.

All four score only the clusters reporting both allocatable and capacity of their resource (a
capacity of 0 counts as not reported for the ratio); the others get no score (they count 0).
"""

from __future__ import annotations

import numpy as np

from apis.placements import Placement, ScoreCoordinate
from placement.framework import Cycle, Prioritizer, RowIndex, ScoreResult
from placement.snapshot import FleetSnapshot

__all__ = ["RATIO_PRIORITIZERS", "RESOURCE_PRIORITIZERS", "ResourceAllocatable", "ResourceRatio"]

RESOURCE_PRIORITIZERS = {
    "ResourceAllocatableCPU": "cpu",
    "ResourceAllocatableMemory": "memory",
}
RATIO_PRIORITIZERS = {
    "ResourceRatioCPU": "cpu",
    "ResourceRatioMemory": "memory",
}


class _ResourcePrioritizer(Prioritizer):
    """One resource's prioritizer, named after the resource it reads (`NAMES`)."""

    NAMES: dict[str, str] = {}

    def __init__(self, name: str, coordinate: ScoreCoordinate | None = None) -> None:
        self.name = name
        self.resource = self.NAMES[name]
        self.coordinate = coordinate


class ResourceAllocatable(_ResourcePrioritizer):
    """Scores clusters reporting both allocatable and capacity of one resource; others get
    no score (they count 0). Minimum and maximum are taken over the candidates, as OCM."""

    NAMES = RESOURCE_PRIORITIZERS

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, rows: RowIndex
    ) -> ScoreResult:
        values = fleet.allocatable[self.resource].take(rows)
        if values.size == 0:
            return ScoreResult(values.astype(np.int64), scored=np.zeros(0, dtype=bool))
        capacity = fleet.capacity[self.resource]
        # NaN marks a missing amount, and min() propagates it: a cluster lacking either amount
        # shows up in these two reductions, so the masks are only built when one does (and
        # the reductions are only made when the fleet has such a cluster).
        known = None  # every candidate has a score
        low = values.min()
        incomplete = self.resource in fleet.incomplete_resources
        if incomplete and (np.isnan(low) or np.isnan(capacity.min())):
            unknown = np.isnan(values)
            unknown |= np.isnan(capacity.take(rows))
            if unknown.any():
                known = ~unknown
                values = values[known]
                if values.size == 0:
                    return ScoreResult(np.zeros(rows.size, dtype=np.int64), scored=known)
                low = values.min()
        high = values.max()
        if high == low:
            scaled = np.full(values.size, 100, dtype=np.int64)
        else:
            # Go: int64(((a - min) / (max - min) - 0.5) * 2.0 * 100.0), in place. `* 2.0` is
            # exact, so `* 2.0 * 100.0` rounds once, as `* 200.0`; the cast to int64 truncates
            # toward zero as Go's int64().
            ratio = np.subtract(values, low, out=values)  # `values` is our own copy
            ratio /= high - low
            ratio -= 0.5
            ratio *= 200.0
            scaled = ratio.astype(np.int64)
        if known is None:
            return ScoreResult(scaled)
        scores = np.zeros(rows.size, dtype=np.int64)
        scores[known] = scaled
        return ScoreResult(scores, scored=known)


class ResourceRatio(_ResourcePrioritizer):
    """Scores clusters by allocatable / capacity of one resource (module doc)."""

    NAMES = RATIO_PRIORITIZERS

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, rows: RowIndex
    ) -> ScoreResult:
        allocatable = fleet.allocatable[self.resource].take(rows)
        capacity = fleet.capacity[self.resource].take(rows)
        # NaN marks a missing amount; NaN > 0 is False, so one test covers both.
        known = (capacity > 0) & ~np.isnan(allocatable)
        scores = np.zeros(rows.size, dtype=np.int64)
        if known.any():
            # Go: int64((a / c - 0.5) * 2 * 100): `* 2` is exact, so `* 200.0` rounds the same;
            # the cast truncates toward zero as Go's int64().
            ratio = allocatable[known] / capacity[known]
            ratio -= 0.5
            ratio *= 200.0
            scores[known] = ratio.astype(np.int64)
        if known.all():
            return ScoreResult(scores)
        return ScoreResult(scores, scored=known)

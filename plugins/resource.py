"""`ResourceAllocatableCPU` / `ResourceAllocatableMemory`: prefer clusters with more allocatable
resources, min-max scaled to [-100, 100] with OCM's float expression and truncation (§2.3)."""

from __future__ import annotations

import numpy as np

from apis.placements import Placement, ScoreCoordinate
from placement.framework import BoolMask, Cycle, ScoreResult
from placement.snapshot import FleetSnapshot

__all__ = ["RESOURCE_PRIORITIZERS", "ResourceAllocatable"]

RESOURCE_PRIORITIZERS = {
    "ResourceAllocatableCPU": "cpu",
    "ResourceAllocatableMemory": "memory",
}


class ResourceAllocatable:
    """Scores clusters reporting both allocatable and capacity of one resource; others get
    no score (they count 0)."""

    def __init__(self, name: str, coordinate: ScoreCoordinate | None = None) -> None:
        self.name = name
        self.resource = RESOURCE_PRIORITIZERS[name]
        self.coordinate = coordinate

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, candidates: BoolMask
    ) -> ScoreResult:
        allocatable = fleet.allocatable[self.resource]
        known = candidates & ~np.isnan(allocatable) & ~np.isnan(fleet.capacity[self.resource])
        scores = np.zeros(fleet.size, dtype=np.int64)
        if not known.any():
            return ScoreResult(scores, scored=known)
        values = allocatable[known]
        low, high = values.min(), values.max()
        if high == low:
            scores[known] = 100
        else:
            # Same operations in the same order as Go, then truncation toward zero.
            scaled = ((values - low) / (high - low) - 0.5) * 2.0 * 100.0
            scores[known] = np.trunc(scaled).astype(np.int64)
        return ScoreResult(scores, scored=known)

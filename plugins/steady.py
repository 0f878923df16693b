"""`Steady`: keep clusters already decided by this placement (OCM §2.2)."""

from __future__ import annotations

import numpy as np

from apis.placements import Placement, ScoreCoordinate
from placement.framework import BoolMask, Cycle, ScoreResult
from placement.snapshot import FleetSnapshot

__all__ = ["Steady"]


class Steady:
    """100 for clusters in this placement's current decisions, 0 otherwise."""

    name = "Steady"

    def __init__(self, coordinate: ScoreCoordinate | None = None) -> None:
        self.coordinate = coordinate

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, candidates: BoolMask
    ) -> ScoreResult:
        decided = fleet.decided_mask(placement.namespace, placement.name)
        return ScoreResult(np.where(decided, 100, 0).astype(np.int64))

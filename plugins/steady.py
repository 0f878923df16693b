"""`Steady`: keep clusters already decided by this placement (docs/hub-admins.md,
'Prioritizers')."""

from __future__ import annotations

import numpy as np

from apis.placements import Placement, ScoreCoordinate
from placement.framework import Cycle, Prioritizer, RowIndex, ScoreResult
from placement.scoring import own_positions
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = ["Steady"]


class Steady(Prioritizer):
    """100 for clusters in this placement's current decisions, 0 otherwise."""

    name = "Steady"

    def __init__(self, coordinate: ScoreCoordinate | None = None) -> None:
        self.coordinate = coordinate

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, rows: RowIndex
    ) -> ScoreResult:
        scores = np.zeros(rows.size, dtype=np.int64)
        scores[own_positions(cycle, placement, fleet, rows)] = 100
        return ScoreResult(scores)

"""`Balance`: prefer clusters that carry fewer decisions of other placements (OCM §2.1)."""

from __future__ import annotations

import numpy as np

from apis.placements import Placement, ScoreCoordinate
from placement.framework import BoolMask, Cycle, ScoreResult
from placement.snapshot import FleetSnapshot

__all__ = ["Balance"]

MAX_SCORE = 100


class Balance:
    """100 for clusters without decisions elsewhere, down to -100 for the busiest one."""

    name = "Balance"

    def __init__(self, coordinate: ScoreCoordinate | None = None) -> None:
        self.coordinate = coordinate

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, candidates: BoolMask
    ) -> ScoreResult:
        table = fleet.decisions
        counts = table.totals.copy()
        # This placement's own decisions do not count against it.
        np.subtract.at(counts, table.rows_of(placement.namespace, placement.name), 1)
        scores = np.full(fleet.size, MAX_SCORE, dtype=np.int64)
        if counts.size == 0:
            return ScoreResult(scores)
        max_count = counts.max()  # over every named cluster, fleet or not, as OCM
        fleet_counts = counts[: fleet.size]
        busy = fleet_counts > 0
        usage = fleet_counts[busy] / float(max_count)
        # Go: 2 * int64(100 * (0.5 - usage)): truncate toward zero first, then double.
        scores[busy] = 2 * np.trunc(MAX_SCORE * (0.5 - usage)).astype(np.int64)
        return ScoreResult(scores)

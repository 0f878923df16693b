"""`Balance`: prefer clusters that carry fewer decisions of other placements (OCM §2.1)."""

from __future__ import annotations

import numpy as np

from apis.placements import Placement, ScoreCoordinate
from placement.framework import Cycle, RowIndex, ScoreResult, ScoreVector
from placement.scoring import RowScored, own_positions
from placement.snapshot import FleetSnapshot

__all__ = ["Balance", "balance_scores"]

MAX_SCORE = 100


def balance_scores(counts: ScoreVector, max_count: int) -> ScoreVector:
    """Go's `2 * int64(100 * (0.5 - usage))` with usage = count / max_count (truncated toward
    zero first, then doubled); a count of 0 gives 100, as OCM's starting score."""
    if max_count <= 0:
        return np.full(counts.size, MAX_SCORE, dtype=np.int64)
    if max_count <= _FEW_COUNTS:
        # The same expression once per possible count, in Python floats (IEEE doubles, as
        # Go's float64; int() truncates toward zero as Go's int64()), then looked up.
        per_count = [
            2 * int(MAX_SCORE * (0.5 - c / float(max_count))) for c in range(max_count + 1)
        ]
        return np.array(per_count, dtype=np.int64).take(counts)
    usage = counts / float(max_count)
    return 2 * np.trunc(MAX_SCORE * (0.5 - usage)).astype(np.int64)


_FEW_COUNTS = 64


class Balance(RowScored):
    """100 for clusters without decisions elsewhere, down to -100 for the busiest one."""

    name = "Balance"

    def __init__(self, coordinate: ScoreCoordinate | None = None) -> None:
        self.coordinate = coordinate

    def score_rows(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, rows: RowIndex
    ) -> ScoreResult:
        table = fleet.decisions
        totals = table.totals
        if totals.size == 0 or rows.size == 0:
            return ScoreResult(np.full(rows.size, MAX_SCORE, dtype=np.int64))
        counts = totals.take(rows)
        top = int(totals.max())
        # This placement's own decisions do not count against it.
        own = table.rows_of(placement.namespace, placement.name)
        if own.size:
            np.subtract.at(counts, own_positions(cycle, placement, fleet, rows), 1)
            if int(totals.take(own).max()) >= top:
                # The busiest cluster may be one of our own: count again without them.
                others = totals.copy()
                np.subtract.at(others, own, 1)
                top = int(others.max())
        # max over every named cluster, fleet or not, as OCM.
        return ScoreResult(balance_scores(counts, top))

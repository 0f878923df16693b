"""`AddOn/<resourceName>/<scoreName>`: scores published by add-ons in AddOnPlacementScores
(OCM's rules: docs/hub-admins.md, 'Prioritizers'). Expired scores count 0 and make the cycle a
WARNING naming them."""

from __future__ import annotations

import numpy as np

from apis.placements import Placement, ScoreCoordinate
from placement.framework import Code, Cycle, Prioritizer, RowIndex, ScoreResult, Status
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = ["AddOn"]


class AddOn(Prioritizer):
    """Reads score `scoreName` of AddOnPlacementScore `resourceName` in each cluster's namespace."""

    def __init__(self, coordinate: ScoreCoordinate) -> None:
        if coordinate.add_on is None:
            raise ValueError("an AddOn prioritizer needs scoreCoordinate.addOn")
        self.resource = coordinate.add_on.resource_name
        self.score_name = coordinate.add_on.score_name
        self.name = f"AddOn/{self.resource}/{self.score_name}"

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, rows: RowIndex
    ) -> ScoreResult:
        column = fleet.addons.get(self.resource)
        values = None if column is None else column.scores.get(self.score_name)
        scores = np.zeros(rows.size, dtype=np.int64) if values is None else values.take(rows)
        if column is None:
            return ScoreResult(scores)
        # Rows without a score hold 0 and NaN (which compares False): no `present` needed.
        # Usually nothing has expired: the column's earliest expiry says so without a pass.
        now = cycle.now.timestamp()
        if not column.earliest < now:
            return ScoreResult(scores)
        expired = column.valid_until.take(rows) < now
        if not expired.any():
            return ScoreResult(scores)
        scores[expired] = 0
        names = " ".join(f"{fleet.names[row]}/{self.resource}" for row in rows[expired])
        warning = Status(Code.WARNING, f"AddOnPlacementScores {names} expired", self.name)
        return ScoreResult(scores, warning)

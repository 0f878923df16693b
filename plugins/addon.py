"""`AddOn/<resourceName>/<scoreName>`: scores published by add-ons in AddOnPlacementScores
(OCM §2.4). Expired scores count 0 and make the cycle a WARNING naming them."""

from __future__ import annotations

import numpy as np

from apis.placements import Placement, ScoreCoordinate
from placement.framework import BoolMask, Code, Cycle, ScoreResult, Status
from placement.snapshot import FleetSnapshot

__all__ = ["AddOn"]


class AddOn:
    """Reads score `scoreName` of AddOnPlacementScore `resourceName` in each cluster's namespace."""

    def __init__(self, coordinate: ScoreCoordinate) -> None:
        if coordinate.add_on is None:
            raise ValueError("an AddOn prioritizer needs scoreCoordinate.addOn")
        self.resource = coordinate.add_on.resource_name
        self.score_name = coordinate.add_on.score_name
        self.name = f"AddOn/{self.resource}/{self.score_name}"

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, candidates: BoolMask
    ) -> ScoreResult:
        scores = np.zeros(fleet.size, dtype=np.int64)
        column = fleet.addons.get(self.resource)
        if column is None:
            return ScoreResult(scores)
        with np.errstate(invalid="ignore"):
            expired = candidates & column.present & (cycle.now.timestamp() > column.valid_until)
        values = column.scores.get(self.score_name)
        if values is not None:
            usable = column.present & ~expired
            scores[usable] = values[usable]
        if not expired.any():
            return ScoreResult(scores)
        names = " ".join(f"{fleet.names[row]}/{self.resource}" for row in np.flatnonzero(expired))
        warning = Status(Code.WARNING, f"AddOnPlacementScores {names} expired", self.name)
        return ScoreResult(scores, warning)

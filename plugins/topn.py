"""`TopN` selector: OCM's selection, the first `numberOfClusters` by total score descending,
name ascending; all feasible clusters when `numberOfClusters` is unset."""

from __future__ import annotations

from apis.placements import Placement
from placement.framework import Cycle, RowIndex, ScoreVector, Selection, Selector
from placement.scheduler import rank_rows
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = ["TopN"]


class TopN(Selector):
    """Takes the best `numberOfClusters` candidates."""

    name = "TopN"

    def select(
        self,
        cycle: Cycle,
        placement: Placement,
        fleet: FleetSnapshot,
        rows: RowIndex,
        total: ScoreVector,
    ) -> Selection:
        return Selection(rank_rows(rows, total, placement.spec.number_of_clusters))

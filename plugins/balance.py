"""`Balance`: prefer clusters that carry fewer decisions of other placements (OCM's formula:
docs/hub-admins.md, 'Prioritizers')."""

from __future__ import annotations

from functools import cache

import numpy as np

from apis.placements import Placement, ScoreCoordinate
from placement.framework import Cycle, Prioritizer, RowIndex, ScoreResult, ScoreVector
from placement.scoring import own_positions
from placement.snapshot.fleet_snapshot import DecisionTable, FleetSnapshot

__all__ = ["Balance", "balance_scores"]

MAX_SCORE = 100


def balance_scores(counts: ScoreVector, max_count: int) -> ScoreVector:
    """Go's `2 * int64(100 * (0.5 - usage))` with usage = count / max_count (truncated toward
    zero first, then doubled); a count of 0 gives 100, as OCM's starting score."""
    if max_count <= 0:
        return np.full(counts.size, MAX_SCORE, dtype=np.int64)
    if max_count <= _FEW_COUNTS:
        return _per_count(max_count).take(counts)
    usage = counts / float(max_count)
    return 2 * np.trunc(MAX_SCORE * (0.5 - usage)).astype(np.int64)


_FEW_COUNTS = 64


@cache
def _per_count(max_count: int) -> ScoreVector:
    """The score of every count up to `max_count`: the same expression once per count, in
    Python floats (IEEE doubles, as Go's float64; int() truncates toward zero as Go's
    int64()), looked up by count. Read-only, shared by every cycle."""
    per_count = [2 * int(MAX_SCORE * (0.5 - c / float(max_count))) for c in range(max_count + 1)]
    table = np.array(per_count, dtype=np.int64)
    table.flags.writeable = False
    return table


class Balance(Prioritizer):
    """100 for clusters without decisions elsewhere, down to -100 for the busiest one."""

    name = "Balance"

    def __init__(self, coordinate: ScoreCoordinate | None = None) -> None:
        self.coordinate = coordinate

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, rows: RowIndex
    ) -> ScoreResult:
        table = fleet.decisions
        totals = table.totals
        if totals.size == 0 or rows.size == 0:
            return ScoreResult(np.full(rows.size, MAX_SCORE, dtype=np.int64))
        own, ordered, top = _own(table, placement.namespace, placement.name)
        if not ordered:
            # a cluster twice among our decisions (mid-move): count every entry
            return ScoreResult(self._recounted(cycle, placement, fleet, rows, own))
        # Every row's score for this maximum is the table's, computed once per table; only
        # our own decisions come off their rows' counts.
        per_row = table.memo.get((_PER_ROW, top))
        if per_row is None:
            # Clipped: only our own rows can count more than a lowered maximum, and they are
            # scored apart below.
            clipped = np.minimum(totals, top)
            per_row = table.memo[(_PER_ROW, top)] = balance_scores(clipped, top)
        scores: ScoreVector = per_row.take(rows)
        if own.size:
            mine = own_positions(cycle, placement, fleet, rows)
            scores[mine] = balance_scores(totals.take(rows.take(mine)) - 1, top)
        return ScoreResult(scores)

    @staticmethod
    def _recounted(
        cycle: Cycle, placement: Placement, fleet: FleetSnapshot, rows: RowIndex, own: RowIndex
    ) -> ScoreVector:
        """Scores with this placement's own decisions taken off every count and off the
        maximum (max over every named cluster, fleet or not, as OCM)."""
        totals = fleet.decisions.totals
        counts = totals.take(rows)
        np.subtract.at(counts, own_positions(cycle, placement, fleet, rows), 1)
        others = totals.copy()
        np.subtract.at(others, own, 1)
        return balance_scores(counts, int(others.max()))


_PER_ROW = "plugins.balance.per_row"
_AT_TOP = "plugins.balance.at_top"


def _own(table: DecisionTable, namespace: str, name: str) -> tuple[RowIndex, bool, int]:
    """The placement's own rows, whether they are ascending without repeats, and the maximum
    its scores are taken against; once per table and placement."""
    key = (_OWN, namespace, name)
    found = table.memo.get(key)
    if found is None:
        own = table.rows_of(namespace, name)
        ordered = own.size <= 1 or bool((own[1:] > own[:-1]).all())
        top = table.top
        if ordered and own.size:
            mine_at_top = int(np.count_nonzero(table.totals.take(own) == top))
            if mine_at_top and mine_at_top == _rows_at_top(table):
                top -= 1  # every busiest cluster is ours: without us they count one less
        found = table.memo[key] = (own, ordered, top)
    return found


_OWN = "plugins.balance.own"


def _rows_at_top(table: DecisionTable) -> int:
    found = table.memo.get(_AT_TOP)
    if found is None:
        found = table.memo[_AT_TOP] = int(np.count_nonzero(table.totals == table.top))
    return int(found)

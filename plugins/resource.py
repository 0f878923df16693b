"""Resource prioritizers.

* `ResourceAllocatableCPU` / `ResourceAllocatableMemory` (OCM): prefer clusters with more
  allocatable resources, min-max scaled to [-100, 100] with OCM's float expression and
  truncation (docs/hub-admins.md, 'Prioritizers').
* `ResourceRatioCPU` / `ResourceRatioMemory` (an addition: the resource-based scheduling design,
  Story 1, "clusters whose allocatable to capacity ratio is larger"; OCM shipped them briefly and
  removed them in 2021, placement `d8bfca5`, before v1beta1): `int64((allocatable / capacity -
  0.5) * 2 * 100)`, so a cluster with everything free scores 100, half free 0, nothing free
  -100. Not scaled over the candidates: the ratio is already comparable across clusters.

All four score only the clusters reporting both allocatable and capacity of their resource (a
capacity of 0 counts as not reported for the ratio); the others get no score (they count 0).
"""

from __future__ import annotations

import weakref

import numpy as np
import numpy.typing as npt

from apis.placements import Placement, ScoreCoordinate
from placement.framework import Cycle, Prioritizer, RowIndex, ScoreResult, ScoreVector
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = ["RATIO_PRIORITIZERS", "RESOURCE_PRIORITIZERS", "ResourceAllocatable", "ResourceRatio"]

FloatVector = npt.NDArray[np.float64]
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
        amounts = fleet.allocatable[self.resource]
        if rows.size == 0:
            return ScoreResult(np.zeros(0, dtype=np.int64), scored=np.zeros(0, dtype=bool))
        if self.resource not in fleet.incomplete_resources:
            levels = _levels(amounts)
            if levels is not None:
                return ScoreResult(levels.scores(rows))
        values = amounts.take(rows)
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
        scaled = _scaled(values, low, values.max())
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


def _scaled(values: FloatVector, low: np.float64, high: np.float64) -> ScoreVector:
    """OCM's min-max scaling of `values` (overwritten) between `low` and `high`."""
    if high == low:
        return np.full(values.size, 100, dtype=np.int64)
    # Go: int64(((a - min) / (max - min) - 0.5) * 2.0 * 100.0), in place. `* 2.0` is exact, so
    # `* 2.0 * 100.0` rounds once, as `* 200.0`; the cast to int64 truncates toward zero as
    # Go's int64().
    ratio = np.subtract(values, low, out=values)
    ratio /= high - low
    ratio -= 0.5
    ratio *= 200.0
    return ratio.astype(np.int64)


class _Levels:
    """A column of amounts (none missing) as codes into its distinct values, ascending: the
    candidates' lowest and highest amounts are those of their lowest and highest codes, and
    each distinct value is scaled once, then looked up by code. The same float operations on
    the same values as scaling every candidate's amount, so the same scores."""

    def __init__(self, values: FloatVector, codes: RowIndex) -> None:
        self.values = values
        self.codes = codes
        self._tables: dict[tuple[int, int], ScoreVector] = {}  # by (lowest, highest) code

    def scores(self, rows: RowIndex) -> ScoreVector:
        codes = self.codes.take(rows)
        key = (int(codes.min()), int(codes.max()))
        table = self._tables.get(key)
        if table is None:
            low, high = self.values[key[0]], self.values[key[1]]
            table = _scaled(self.values.copy(), low, high)
            if len(self._tables) >= _MAX_TABLES:
                self._tables.clear()
            self._tables[key] = table
        scores: ScoreVector = table.take(codes)
        return scores


_MAX_LEVELS = 4096  # distinct amounts beyond which the candidates are scaled one by one
_MAX_TABLES = 64
_LEVELS_FROM = 1024  # clusters from which levels may pay
_LEVELS_AFTER = 8  # cycles reading one column before its levels are worth building
# Per column of amounts, by the array's identity (a snapshot's columns are not written to; a
# changed column is a new array), dropped with the array: the cycles that read it so far, then
# its levels (None: too many distinct values to gain from them).
_LEVELS: dict[int, tuple[weakref.ref[FloatVector], int | _Levels | None]] = {}


def _levels(amounts: FloatVector) -> _Levels | None:
    """The levels of a column without missing amounts, once it has been read often enough
    to pay for them (a column changing under churn never is)."""
    key = id(amounts)
    known = _LEVELS.get(key)
    if known is None or known[0]() is not amounts:
        _LEVELS[key] = (weakref.ref(amounts, lambda _: _LEVELS.pop(key, None)), 1)
        return None
    ref, state = known
    if not isinstance(state, int):
        return state
    if state < _LEVELS_AFTER:
        _LEVELS[key] = (ref, state + 1)
        return None
    levels = None
    if amounts.size >= _LEVELS_FROM:
        values, codes = np.unique(amounts, return_inverse=True)
        if values.size <= min(_MAX_LEVELS, amounts.size // 8):
            levels = _Levels(values, codes.astype(np.intp, copy=False).reshape(-1))
    _LEVELS[key] = (ref, levels)
    return levels

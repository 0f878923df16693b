"""Helpers for prioritizers and selectors, which work on the candidate rows only.

After the filters, a cycle scores a compacted index: `rows`, the candidates' snapshot row numbers
in ascending (that is, name) order, and vectors aligned with `rows` instead of full-length ones.
OCM's prioritizers also see only the filtered clusters, so what each one normalises over (the
candidates for ResourceAllocatable, every decision entry for Balance) does not change.
"""

from __future__ import annotations

import numpy as np

from apis.placements import Placement
from placement.arrays import BoolMask, RowIndex, ScoreVector
from placement.framework import Cycle
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = ["own_positions", "positions", "rows_mask", "scatter"]


def positions(rows: RowIndex, targets: RowIndex) -> RowIndex:
    """Positions in `rows` (ascending, unique) of those `targets` that are among them, once per
    occurrence in `targets`."""
    if rows.size == 0 or targets.size == 0:
        return np.empty(0, dtype=np.intp)
    # Many targets among many rows: a binary search per target costs more than marking the
    # targets and reading the marks at the rows (one pass). The marks lose repeats and order,
    # so only for targets ascending without repeats (decisions usually are).
    many = rows.size >= _MARK_FROM and targets.size * _MARK_RATIO >= rows.size
    if many and (targets.size == 1 or bool((targets[1:] > targets[:-1]).all())):
        marks = np.zeros(max(int(rows[-1]), int(targets[-1])) + 1, dtype=bool)
        marks[targets] = True
        found_at: RowIndex = marks.take(rows).nonzero()[0]
        return found_at
    at: RowIndex = np.searchsorted(rows, targets)
    np.minimum(at, rows.size - 1, out=at)  # a target past the last row matches no row
    found: RowIndex = at[rows[at] == targets]
    return found


def own_positions(
    cycle: Cycle, placement: Placement, fleet: FleetSnapshot, rows: RowIndex
) -> RowIndex:
    """`positions` of the placement's current decisions among `rows`, computed once per cycle
    (Balance and Steady both need them)."""
    known = cycle.scratch.get(_OWN_POSITIONS)
    # Holding the keys themselves (not their ids) keeps the identity test sound.
    if known is not None and known[0] is rows and known[1] is fleet and known[2] is placement:
        found: RowIndex = known[3]
        return found
    found = positions(rows, fleet.decisions.rows_of(placement.namespace, placement.name))
    cycle.scratch[_OWN_POSITIONS] = (rows, fleet, placement, found)
    return found


_OWN_POSITIONS = "placement.scoring.own_positions"
# `positions` marks rows instead of searching from this many rows, for 1 target per this many.
_MARK_FROM = 32_768
_MARK_RATIO = 64


def scatter(rows: RowIndex, values: ScoreVector, size: int) -> ScoreVector:
    """A full-length vector holding `values` at `rows` and 0 elsewhere."""
    out = np.zeros(size, dtype=np.int64)
    out[rows] = values
    return out


def rows_mask(rows: RowIndex, size: int, within: BoolMask | None = None) -> BoolMask:
    """A full-length mask of `rows` (only those flagged in `within`, aligned with `rows`)."""
    mask = np.zeros(size, dtype=bool)
    mask[rows if within is None else rows[within]] = True
    return mask

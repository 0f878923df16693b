"""Which rows of a `NodeTable` (`placement.pods.cluster.nodes`) its recent pod events wrote, so that
`NodeSnapshot.changed_since` names the rows that changed between two snapshots without comparing
matrices: one row per generation for the last HISTORY pod events; a node event, a new resource
column or a rebuild starts a new epoch in which nothing older is known ("everything")."""

from __future__ import annotations

import itertools
from collections import deque

import numpy as np

from placement.arrays import RowIndex

__all__ = ["HISTORY", "WriteHistory"]

HISTORY = 64
"""Pod events remembered per table for `NodeSnapshot.changed_since` (older: "everything")."""


class WriteHistory:
    """The rows the table's last HISTORY pod events wrote, one per generation."""

    __slots__ = ("epoch", "generation", "last", "rows")

    def __init__(self) -> None:
        self.generation = 0
        self.epoch = 0  # the generation of the last "everything changed"
        self.rows: deque[int] = deque(maxlen=HISTORY)  # rows[i]: generation - len + 1 + i
        # The last answer: every cached plugin result asks the same question in a cycle.
        self.last: tuple[int, int, RowIndex | None] = (-1, -1, None)

    def wrote(self, row: int) -> None:
        """A pod event wrote `row`."""
        self.generation += 1
        self.rows.append(row)

    def everything(self) -> None:
        """Anything may have changed (a node event, a new resource column, a rebuild)."""
        self.generation += 1
        self.epoch = self.generation
        self.rows.clear()

    def rows_between(self, old: int, new: int) -> RowIndex | None:
        """The rows written between generations `old` and `new`, ascending (read-only); None
        when that is no longer known."""
        last = self.last
        if last[0] == old and last[1] == new:
            return last[2]
        first = self.generation - len(self.rows)  # the generation before rows[0]
        if old < 0 or new < old or old < self.epoch or old < first or new > self.generation:
            return None
        if old == new:
            return _NONE_CHANGED
        if new - old == 1:
            found = [self.rows[old - first]]
        else:
            found = sorted(set(itertools.islice(self.rows, old - first, new - first)))
        rows = np.array(found, dtype=np.intp)
        rows.flags.writeable = False
        self.last = (old, new, rows)
        return rows


_NONE_CHANGED: RowIndex = np.zeros(0, dtype=np.intp)
_NONE_CHANGED.flags.writeable = False

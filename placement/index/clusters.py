"""The columns of the cluster rows behind `FleetIndex` (private).

What a cluster's row shows: labels and claims (one coded column per key; one more codes each
row's claims list as written, for CEL, `claim_lists`), the deleting flag,
allocatable and capacity per resource, and the table of the tainted rows. An update of a known
cluster rewrites its row in place (`rewrite`); added and deleted clusters move the rows, and
`relayout` then writes the new ones in bulk: lists of cells per column, one numpy call each.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from operator import attrgetter

import numpy as np

from placement.index.columns import CodedColumn, Cow, Epoch, Layout
from placement.rows import ClusterRow, claims_list_text
from placement.snapshot.fleet_snapshot import RESOURCES, TaintRow

__all__ = ["ClusterColumns"]

_row = attrgetter("row")


def _nan(value: float | None) -> float:
    return np.nan if value is None else value


class ClusterColumns:
    """The feature columns of the committed rows; `labels_moved` records that a label cell
    changed (cluster-set membership may have) since the owner last cleared it."""

    def __init__(self, epoch: Epoch) -> None:
        self._epoch = epoch
        self._size = 0
        self.labels: dict[str, CodedColumn] = {}
        self.claims: dict[str, CodedColumn] = {}
        self.claim_lists = CodedColumn(epoch, 0)
        self.deleting = Cow(epoch, np.zeros(0, dtype=bool))
        self.allocatable = {r: Cow(epoch, np.full(0, np.nan)) for r in RESOURCES}
        self.capacity = {r: Cow(epoch, np.full(0, np.nan)) for r in RESOURCES}
        self.taints: tuple[TaintRow, ...] = ()
        self.labels_moved = False

    def rewrite(self, row: int, before: ClusterRow, after: ClusterRow) -> None:
        """Make `row`, which shows `before`, show `after`."""
        self.labels_moved |= self._rewrite_cells(self.labels, row, before.labels, after.labels)
        self._rewrite_cells(self.claims, row, before.claims, after.claims)
        claim_list = claims_list_text(after.claims)
        if claims_list_text(before.claims) != claim_list:
            self.claim_lists.set(row, claim_list or None)
        if before.deleting != after.deleting:
            self.deleting.write()[row] = after.deleting
        for resources, old, new in (
            (self.allocatable, before.allocatable, after.allocatable),
            (self.capacity, before.capacity, after.capacity),
        ):
            for resource, was, now in zip(RESOURCES, old, new, strict=True):
                if was != now:
                    resources[resource].write()[row] = _nan(now)
        if before.taints != after.taints:
            lo = bisect_left(self.taints, row, key=_row)
            hi = bisect_right(self.taints, row, key=_row)
            mine = tuple(TaintRow(row, *t) for t in after.taints)
            self.taints = self.taints[:lo] + mine + self.taints[hi:]

    def _rewrite_cells(
        self,
        columns: dict[str, CodedColumn],
        row: int,
        before: Mapping[str, str],
        after: Mapping[str, str],
    ) -> bool:
        changed = False
        for key in before.keys() - after.keys():
            columns[key].set(row, None)
            changed = True
        for key, value in after.items():
            if before.get(key) != value:
                self._column(columns, key).set(row, value)
                changed = True
        return changed

    def _column(self, columns: dict[str, CodedColumn], key: str) -> CodedColumn:
        column = columns.get(key)
        if column is None:
            column = columns[key] = CodedColumn(self._epoch, self._size)
        return column

    def relayout(self, layout: Layout, rows: list[int], clusters: Iterable[ClusterRow]) -> None:
        """Follow the fleet's new rows and write the added `clusters` at `rows`."""
        taint_rows = np.fromiter((t.row for t in self.taints), np.intp, len(self.taints))
        moved_to = np.full(layout.keep.size, -1, dtype=np.intp)
        moved_to[layout.keep] = layout.kept_rows
        taints = [
            TaintRow(row, t.key, t.value, t.effect, t.time_added)
            for t, row in zip(self.taints, moved_to[taint_rows].tolist(), strict=True)
            if row >= 0
        ]
        for state in (*self.labels.values(), *self.claims.values(), self.claim_lists):
            state.relayout(layout)
        self.deleting.replace(layout.move(self.deleting.read, False))
        for column in (*self.allocatable.values(), *self.capacity.values()):
            column.replace(layout.move(column.read, np.nan))
        self._size = layout.size
        self._fill(rows, clusters, taints)
        self.labels_moved = True

    def _fill(
        self, rows: list[int], clusters: Iterable[ClusterRow], taints: list[TaintRow]
    ) -> None:
        """Write the new rows: lists of cells per column, then one numpy call per column."""
        label_cells: dict[str, tuple[list[int], list[str]]] = {}
        claim_cells: dict[str, tuple[list[int], list[str]]] = {}
        lists: tuple[list[int], list[str]] = ([], [])
        deleting: list[int] = []
        allocatable: list[tuple[float | None, ...]] = []
        capacity: list[tuple[float | None, ...]] = []
        for row, features in zip(rows, clusters, strict=True):
            for key, value in features.labels.items():
                cell = label_cells.get(key)
                if cell is None:
                    cell = label_cells[key] = ([], [])
                cell[0].append(row)
                cell[1].append(value)
            for key, value in features.claims.items():
                cell = claim_cells.get(key)
                if cell is None:
                    cell = claim_cells[key] = ([], [])
                cell[0].append(row)
                cell[1].append(value)
            if features.claims:
                lists[0].append(row)
                lists[1].append(claims_list_text(features.claims))
            if features.deleting:
                deleting.append(row)
            allocatable.append(features.allocatable)
            capacity.append(features.capacity)
            if features.taints:
                taints.extend(TaintRow(row, *t) for t in features.taints)
        for columns, cells in ((self.labels, label_cells), (self.claims, claim_cells)):
            for key, (at, values) in cells.items():
                self._column(columns, key).fill(at, values)
            for state in columns.values():
                state.recount()
        self.claim_lists.fill(*lists)
        self.claim_lists.recount()
        self.deleting.write()[deleting] = True
        new_rows = np.asarray(rows, dtype=np.intp)
        for arrays, amounts in ((self.allocatable, allocatable), (self.capacity, capacity)):
            table = np.array(amounts, dtype=object).reshape(len(amounts), len(RESOURCES))
            known = table != None  # noqa: E711 (elementwise, on an object array)
            for i, resource in enumerate(RESOURCES):
                at = known[:, i]
                arrays[resource].write()[new_rows[at]] = table[at, i].astype(np.float64)
        taints.sort(key=_row)  # stable: a cluster's taints keep their order
        self.taints = tuple(taints)

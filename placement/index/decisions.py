"""Decision counts behind `FleetIndex` (private).

Each cluster name that appears in a PlacementDecision (or in the fleet, once a decision named
it) gets a stable integer id; PlacementDecisions are stored as id arrays, so moving rows (adds
and deletes of clusters) is one vectorized `row_of[ids]` per placement and never touches the
stored decisions. `refs[id]` counts the entries naming a cluster over all PlacementDecisions;
the totals array is kept up to date per entry, and names outside the fleet get "extra" rows
after the fleet rows, as in `DecisionTable`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from placement.arrays import RowIndex
from placement.index.buckets import CowBuckets
from placement.index.columns import Cow, Epoch, Layout
from placement.rows import DecisionRow
from placement.snapshot.fleet_snapshot import DecisionTable

__all__ = ["DecisionState"]

Ids = npt.NDArray[np.intp]
PlacementKey = tuple[str, str]
_NO_ROW = -1


@dataclass(frozen=True)
class _Stored:
    placement: PlacementKey | None  # None: not labelled with a placement, counts in totals only
    ids: Ids


class DecisionState:
    """Every PlacementDecision on the hub, counted per row and listed per placement."""

    def __init__(self, epoch: Epoch) -> None:
        self._epoch = epoch
        self._ids: dict[str, int] = {}
        self._name_of: list[str] = []
        self._free: list[int] = []
        self._alive = np.zeros(0, dtype=bool)  # per id
        self.refs = np.zeros(0, dtype=np.int64)  # per id: entries naming it
        self._row_of = np.zeros(0, dtype=np.intp)  # per id: its row, -1 until it has one
        self._id_of_row = np.zeros(0, dtype=np.intp)  # per fleet row: its id or -1
        self._fleet_size = 0
        self._extra_ids = np.zeros(0, dtype=np.intp)  # id of each extra row, in row order
        self._unrowed: set[int] = set()  # ids interned outside the fleet since the last layout
        self._totals = Cow(epoch, np.zeros(0, dtype=np.int64))
        self._stored: dict[tuple[str, str], _Stored] = {}
        self._members: dict[PlacementKey, dict[tuple[str, str], Ids]] = {}
        self._placement_ids: dict[PlacementKey, Ids] = {}
        self._by_placement: CowBuckets[PlacementKey, RowIndex] = CowBuckets(epoch)
        self._extra_users: set[PlacementKey] = set()  # placements with rows past the fleet
        self._dirty: set[PlacementKey] = set()  # their PlacementDecisions changed
        self._moved: set[PlacementKey] = set()  # their rows moved
        self._all_moved = False
        self._extras_dirty = False
        self._extra_names: tuple[str, ...] = ()
        self._table: DecisionTable | None = None

    # --- events ---------------------------------------------------------------------------

    def upsert(self, decision: DecisionRow, fleet: Mapping[str, int]) -> bool:
        """Store a PlacementDecision; `fleet` is the committed name -> row. True if it changed
        what a snapshot shows."""
        owner = decision.placement_name
        placement = (decision.namespace, owner) if owner else None
        names = decision.clusters
        found = [*map(self._ids.get, names)]
        if None in found:
            found = [
                self._intern(n, fleet) if i is None else i
                for n, i in zip(names, found, strict=True)
            ]
        ids = np.array(found, dtype=np.intp)
        key = (decision.namespace, decision.name)
        old = self._stored.get(key)
        if old is not None and old.placement == placement and np.array_equal(old.ids, ids):
            return False
        self._replace(key, old, _Stored(placement, ids))
        return True

    def delete(self, namespace: str, name: str) -> bool:
        key = (namespace, name)
        old = self._stored.get(key)
        if old is None:
            return False
        self._replace(key, old, None)
        return True

    def _intern(self, name: str, fleet: Mapping[str, int]) -> int:
        found = self._ids.get(name)
        if found is not None:
            return found
        if self._free:
            id_ = self._free.pop()
            self._name_of[id_] = name
        else:
            id_ = len(self._name_of)
            self._name_of.append(name)
            if id_ >= self._alive.size:  # grow the per-id arrays geometrically
                grow = max(id_, 64)
                self._alive = np.concatenate([self._alive, np.zeros(grow, dtype=bool)])
                self.refs = np.concatenate([self.refs, np.zeros(grow, dtype=np.int64)])
                self._row_of = np.concatenate([self._row_of, np.full(grow, _NO_ROW, np.intp)])
        self._ids[name] = id_
        self._alive[id_] = True
        row = fleet.get(name)
        if row is None:
            self._row_of[id_] = _NO_ROW
            self._unrowed.add(id_)
        else:
            self._row_of[id_] = row
            self._id_of_row[row] = id_
        return id_

    def _replace(self, key: tuple[str, str], old: _Stored | None, new: _Stored | None) -> None:
        self._table = None
        totals = self._totals.write()
        if old is not None:
            np.subtract.at(self.refs, old.ids, 1)
            rows = self._row_of[old.ids]
            np.subtract.at(totals, rows[rows >= 0], 1)
            # an extra row nobody names any more leaves the table
            extra = old.ids[rows >= self._fleet_size]
            self._extras_dirty |= bool((self.refs[extra] == 0).any())
            if old.placement is not None:
                self._dirty.add(old.placement)
                members = self._members[old.placement]
                del members[key]
                if not members:
                    del self._members[old.placement]
            del self._stored[key]
        if new is not None:
            np.add.at(self.refs, new.ids, 1)
            rows = self._row_of[new.ids]
            np.add.at(totals, rows[rows >= 0], 1)
            self._extras_dirty |= bool((rows < 0).any())  # needs an extra row
            if new.placement is not None:
                self._dirty.add(new.placement)
                self._members.setdefault(new.placement, {})[key] = new.ids
            self._stored[key] = new

    # --- rows -----------------------------------------------------------------------------

    def relayout(self, layout: Layout, added: Sequence[tuple[int, str]]) -> None:
        """Follow the fleet's new rows (`added`: row and name of each new cluster)."""
        id_of_row = layout.move(self._id_of_row, _NO_ROW)
        for row, name in added:
            id_of_row[row] = self._ids.get(name, _NO_ROW)
        self._id_of_row = id_of_row
        self._fleet_size = layout.size
        in_fleet = id_of_row >= 0
        self._row_of[:] = _NO_ROW
        self._row_of[id_of_row[in_fleet]] = np.flatnonzero(in_fleet)
        outside = self._alive & (self._row_of < 0)
        self._free_ids(np.flatnonzero(outside & (self.refs == 0)))
        self._extra_ids = np.flatnonzero(outside & (self.refs > 0))
        self._row_of[self._extra_ids] = layout.size + np.arange(self._extra_ids.size)
        totals = np.zeros(layout.size + self._extra_ids.size, dtype=np.int64)
        rowed = np.flatnonzero(self._row_of >= 0)
        totals[self._row_of[rowed]] = self.refs[rowed]
        self._totals.replace(totals)
        self._unrowed.clear()
        self._extras_dirty = False
        self._extra_names = tuple(self._name_of[i] for i in self._extra_ids)
        self._all_moved = True
        self._table = None

    def _refresh_extras(self) -> None:
        """Give extra rows to new names outside the fleet and drop the ones nobody names."""
        old = self._extra_ids
        alive = self.refs[old] > 0
        unrowed = np.fromiter(sorted(self._unrowed), np.intp, len(self._unrowed))
        self._unrowed.clear()
        self._free_ids(unrowed[self.refs[unrowed] == 0])
        new = unrowed[self.refs[unrowed] > 0]
        size = self._fleet_size
        if alive.all():  # at most appended: the rows of the existing extras stay
            if new.size:
                self._row_of[new] = size + old.size + np.arange(new.size)
                self._extra_ids = np.concatenate([old, new])
                self._totals.replace(np.concatenate([self._totals.read, self.refs[new]]))
        else:
            self._row_of[old] = _NO_ROW
            self._free_ids(old[~alive])
            self._extra_ids = np.concatenate([old[alive], new])
            self._row_of[self._extra_ids] = size + np.arange(self._extra_ids.size)
            totals = np.concatenate([self._totals.read[:size], self.refs[self._extra_ids]])
            self._totals.replace(totals)
            self._moved |= self._extra_users
        self._extra_names = tuple(self._name_of[i] for i in self._extra_ids)
        self._extras_dirty = False

    def _free_ids(self, ids: Ids) -> None:
        for id_ in ids.tolist():
            del self._ids[self._name_of[id_]]
            self._name_of[id_] = ""
            self._alive[id_] = False
            self._row_of[id_] = _NO_ROW
            self._free.append(id_)

    def table(self) -> DecisionTable:
        if self._table is not None:
            return self._table
        if self._extras_dirty:
            self._refresh_extras()
        for placement in self._dirty:
            members = self._members.get(placement)
            if members is None:
                self._placement_ids.pop(placement, None)
            else:
                self._placement_ids[placement] = (
                    next(iter(members.values()))
                    if len(members) == 1
                    else np.concatenate(list(members.values()))
                )
        moved = self._dirty | (self._placement_ids.keys() if self._all_moved else self._moved)
        for placement in moved:
            self._place(placement)
        self._dirty.clear()
        self._moved.clear()
        self._all_moved = False
        self._table = DecisionTable(self._extra_names, self._totals.read, self._by_placement.view())
        return self._table

    def _place(self, placement: PlacementKey) -> None:
        ids = self._placement_ids.get(placement)
        if ids is None:
            self._by_placement.pop(placement)
            self._extra_users.discard(placement)
            return
        rows = self._row_of[ids]
        self._by_placement[placement] = rows
        if rows.size and int(rows.max()) >= self._fleet_size:
            self._extra_users.add(placement)
        else:
            self._extra_users.discard(placement)

"""The hypothetical cluster of gang preemption (`plugins/pods/coscheduling/preemption.py`): a gang's
members placed with some lower-priority pods removed, then those put back one by one.

* `remove`: every victim of a removable set gone, the members placed one after another
  (`Packing.place`): on a node where a member fits without taking any victim still removed if
  there is one; else, in the first placement, either where the victims it adds are the least
  important then the fewest, or (`packed`) where each victim makes room for the most members;
  the rows weighed in detail are the `ROWS_EXAMINED` best of a vectorized pre-ranking. The pods
  nominated at the gang's priority or above hold room (`hidden`), as the Filter plugins see.
* `reprieve`: the removed victims put back, the most important first (kube's
  selectVictimsOnNode order), each while the whole gang still fits. Only the members on the
  victim's node may move: they stay when they still fit, and move elsewhere only where they add
  less important victims than the one put back (a move that trades a victim for others as
  important would only add victims). A second round retries the victims kept in the first, whose
  room a moved member may have left unused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.arrays import BoolMask, RowIndex
from placement.pods.cluster.nodes import NodeSnapshot, ResourceMatrix
from placement.pods.framework.interface import CycleHost, PodCycle, PodInfo

__all__ = ["ROWS_EXAMINED", "Packing", "Plan", "Removal", "Vector", "Victim", "remove", "reprieve"]

ROWS_EXAMINED = 8
"""Rows whose victims are weighed in detail for one member (pre-ranked by their victims'
priorities): the rest of the cluster is only filtered."""


Vector = np.ndarray[Any, np.dtype[np.int64]]


@dataclass(frozen=True, eq=False)  # compared by identity (a victim is one pod)
class Victim:
    """A potential victim: the pod, its row and its requests over the snapshot's columns."""

    info: PodInfo
    row: int
    vector: Vector


@dataclass
class Plan:
    """A candidate: the victims kept after the reprieve and where each member goes."""

    victims: list[PodInfo]
    rows: list[int]  # per member, the row it goes to
    requested: ResourceMatrix  # the nodes' requests with the victims gone, members placed


class Packing:
    """Places the gang's members on a hypothetical cluster (see the module docstring)."""

    def __init__(
        self,
        cycle: PodCycle,
        nodes: NodeSnapshot,
        members: Sequence[PodInfo],
        vector: Callable[[PodInfo], Vector],
    ) -> None:
        host = cycle.host
        assert host is not None
        self.host: CycleHost = host
        self.cycle = cycle
        self.nodes = nodes
        self.members = members
        self.vectors = [vector(m) for m in members]
        # The pods nominated at the gang's priority or above hold room the Filter plugins see
        # (kube's filters with nominated pods): counted in the cheap checks and costs too.
        priority = min(m.priority for m in members)
        own = {m.key for m in members}
        self.hidden: ResourceMatrix = np.zeros_like(nodes.requested)
        for row, name in enumerate(nodes.names):
            for other in cycle.cluster.nominated_on(name):
                if other.priority >= priority and other.key not in own:
                    self.hidden[row] += vector(other)

    def _fits(self, member: int, requested: ResourceMatrix, rows: BoolMask) -> BoolMask:
        """Where the member fits; only rows with room for its requests are filtered."""
        wanted = self.vectors[member]
        # Only what the member asks for counts (an over-committed resource it does not ask
        # for does not stop it, as in NodeResourcesFit).
        free = self.nodes.allocatable - requested - self.hidden
        enough: BoolMask = ((free >= wanted) | (wanted == 0)).all(1)
        room: BoolMask = enough & rows
        if not room.any():
            return room
        trial = dataclasses.replace(self.nodes, requested=requested)
        mask: BoolMask = self.host.fits(self.cycle, self.members[member], trial, room)
        return mask

    def _stays(self, member: int, row: int, requested: ResourceMatrix, here: BoolMask) -> bool:
        """Whether the member fits on `row` (`here` its mask): `_fits` for one row, with the
        room checked on that row alone (most members put back on a full row do not fit)."""
        wanted = self.vectors[member]
        free = self.nodes.allocatable[row] - requested[row] - self.hidden[row]
        if not ((free >= wanted) | (wanted == 0)).all():
            return False
        return bool(self._fits(member, requested, here)[row])

    def _takes(
        self,
        member: int,
        row: int,
        actual: ResourceMatrix,
        removed: Sequence[Victim],
        occupied: bool,
    ) -> tuple[int, int]:
        """What placing the member on `row` adds to the victims the row needs already: the
        priority of the most important added victim and how many (the least important removed
        victims are taken first, so the added ones follow those needed already)."""
        base = actual[row] + self.hidden[row] - self.nodes.allocatable[row]
        wanted = self.vectors[member]
        # Victims needed already: only for members placed there (a row over-committed by
        # pods nominated or terminating needs victims for the first member too).
        before = _cover(base * (wanted > 0), removed) if occupied else 0
        after = _cover((base + wanted) * (wanted > 0), removed)
        if before < 0 or after < 0:
            return (2**62, 0)  # not enough even with every removed victim: never chosen
        added = list(reversed(removed))[before:after]
        return (max((v.info.priority for v in added), default=-(2**62)), len(added))

    def place(
        self,
        which: Sequence[int],
        state: Removal,
        stay: int | None = None,
        below: int | None = None,
        packed: bool = False,
    ) -> bool:
        """Place the members `which` (indices), updating `state` (its `requested`, `actual`
        and `rows`) in place; False when one does not fit (`state` is then partly updated:
        callers pass a copy). A member stays on row `stay` when it still fits there (moved
        elsewhere, it would take other victims there); else it goes where it fits without
        taking any victim; else, among the `ROWS_EXAMINED` rows of lowest `state.cost`, where
        the victims it needs are the least important, then the fewest (`packed`: where the
        fewest victims per member make room for the members still to place)."""
        size = self.nodes.size
        everywhere: BoolMask = np.ones(size, dtype=bool)
        here: BoolMask | None = None
        if stay is not None:
            here = np.zeros(size, dtype=bool)
            here[stay] = True
        requested, actual = state.requested, state.actual
        for position, i in enumerate(which):
            if stay is not None and here is not None and self._stays(i, stay, requested, here):
                row = stay
            else:
                free = self._fits(i, actual, everywhere)
                if free.any():
                    row = int(np.flatnonzero(free)[0])
                else:
                    fits = np.flatnonzero(self._fits(i, requested, everywhere))
                    if fits.size == 0:
                        return False
                    if packed and below is None:
                        row = self._densest(i, len(which) - position, fits, state)
                        requested[row] += self.vectors[i]
                        actual[row] += self.vectors[i]
                        state.rows[i] = row
                        continue
                    # Pre-ranked by how many more member-sized victims the row lacks with
                    # the member (rows the gang holds already need some for it), then by
                    # the priorities of the victims removed there.
                    wanted = self.vectors[i]
                    size_of = np.maximum(wanted, 1)
                    over = actual[fits] + self.hidden[fits] - self.nodes.allocatable[fits]
                    after = np.ceil(np.maximum(over + wanted, 0) / size_of).max(axis=1)
                    before = np.ceil(np.maximum(over, 0) / size_of).max(axis=1)
                    placed = set(state.rows)
                    held = np.isin(fits, list(placed))
                    extra = np.where(held, after - before, after)
                    order = np.lexsort((fits, state.cost[fits], ~held, extra))
                    ranked = fits[order[:ROWS_EXAMINED]]
                    # Among them, the fewest and least important victims added; then a row
                    # the gang holds already (its members packed, other rows left whole).
                    costs = [
                        (
                            self._takes(i, r, actual, state.removed[r], r in placed),
                            r not in placed,
                            r,
                        )
                        for r in (int(x) for x in ranked)
                    ]
                    if below is not None:
                        # Reprieving a victim of priority `below`: a member moves only where
                        # it adds less important victims (else the reprieve trades a victim
                        # for others as important, never fewer).
                        costs = [c for c in costs if c[0][0] < below]
                        if not costs:
                            return False
                    row = min(costs)[2]
            requested[row] += self.vectors[i]
            actual[row] += self.vectors[i]
            state.rows[i] = row
        return True

    def _densest(self, member: int, left: int, fits: RowIndex, state: Removal) -> int:
        """The row where the victims make room for the most of the `left` members still to
        place, per victim: the fewest victims per member, then the least important."""
        wanted = self.vectors[member]
        size_of = np.maximum(wanted, 1)
        asks = wanted > 0
        alloc = self.nodes.allocatable[fits]
        room = (alloc - state.requested[fits] - self.hidden[fits])[:, asks] // size_of[asks]
        k = np.clip(room.min(axis=1), 1, left) if asks.any() else np.full(fits.size, left)
        over = state.actual[fits] + self.hidden[fits] - alloc
        after = np.ceil(np.maximum(over + k[:, None] * wanted, 0) / size_of).max(axis=1)
        held = np.isin(fits, state.rows)
        before = np.where(held, np.ceil(np.maximum(over, 0) / size_of).max(axis=1), 0)
        order = np.lexsort((fits, state.cost[fits], (after - before) / k))
        best: tuple[float, int, int] | None = None
        for at in order[:ROWS_EXAMINED]:
            r, count = int(fits[at]), int(k[at])
            base = (over[at] + count * wanted) * asks
            removed = state.removed[r]
            needed = _cover(base, removed)
            already = _cover(over[at] * asks, removed) if held[at] else 0
            if needed < 0 or already < 0:
                continue
            added = list(reversed(removed))[already:needed]
            top = max((v.info.priority for v in added), default=-(2**62))
            key = (len(added) / count, top, r)
            if best is None or key < best:
                best = key
        return int(fits[order[0]]) if best is None else best[2]


@dataclass
class Removal:
    """A hypothetical cluster: `removable` gone (those still in `removed`, per row), the members
    placed on `rows`; `requested` without the removed victims, `actual` with them."""

    removable: Sequence[Victim]
    requested: ResourceMatrix
    actual: ResourceMatrix
    removed: list[list[Victim]]
    cost: np.ndarray[Any, np.dtype[np.int64]]
    rows: list[int]


def remove(
    packing: Packing, removable: Sequence[Victim], nodes: NodeSnapshot, *, packed: bool = False
) -> Removal | None:
    """Every victim of `removable` gone and the gang placed; None when it does not fit."""
    requested: ResourceMatrix = nodes.requested.copy()
    removed: list[list[Victim]] = [[] for _ in range(nodes.size)]
    for victim in removable:
        requested[victim.row] -= victim.vector
        removed[victim.row].append(victim)
    state = Removal(
        removable,
        requested,
        nodes.requested.copy(),
        removed,
        _costs(removed, nodes.size),
        [-1] * len(packing.members),
    )
    return state if packing.place(range(len(state.rows)), state, packed=packed) else None


def reprieve(packing: Packing, state: Removal) -> Plan:
    """Put the removed victims back, the most important first, each while the whole gang still
    fits; the ones that cannot come back are the victims. Only the members on the victim's row
    may have to move (the others' places stay valid), and they stay when they can. Members
    that moved may leave a kept victim's room unused: a second round tries the kept ones
    again, in the same order. `state` is used up."""
    kept: list[Victim] = list(state.removable)
    for _ in range(2):
        kept = [v for v in kept if not _put_back(packing, state, v)]
    return Plan([v.info for v in kept], state.rows, state.requested)


def _put_back(packing: Packing, state: Removal, victim: Victim) -> bool:
    """Reprieve one victim if the whole gang still fits (`state` updated); False otherwise."""
    r = victim.row
    at = next(n for n, v in enumerate(state.removed[r]) if v is victim)
    del state.removed[r][at]
    on_row = [i for i, row in enumerate(state.rows) if row == r]
    if not on_row:
        state.requested[r] += victim.vector  # no member there: the gang's places stay valid
        state.cost[r] = _cost(state.removed[r])
        return True
    trial = dataclasses.replace(
        state,
        requested=state.requested.copy(),
        actual=state.actual.copy(),
        cost=state.cost.copy(),
        rows=list(state.rows),
    )
    trial.requested[r] += victim.vector
    for i in on_row:
        trial.requested[r] -= packing.vectors[i]
        trial.actual[r] -= packing.vectors[i]
    trial.cost[r] = _cost(state.removed[r])
    if not packing.place(on_row, trial, stay=r, below=victim.info.priority):
        state.removed[r].insert(at, victim)  # stays a victim, in its place in the order
        return False
    state.requested, state.actual, state.cost, state.rows = (
        trial.requested,
        trial.actual,
        trial.cost,
        trial.rows,
    )
    return True


def _cover(short: Vector, removed: Sequence[Victim]) -> int:
    """How many of the removed victims, least important first, cover the shortfall `short`
    (0 when there is none; -1 when all of them do not)."""
    if (short <= 0).all():
        return 0
    for count, victim in enumerate(reversed(removed), 1):
        short = short - victim.vector
        if (short <= 0).all():
            return count
    return -1


def _cost(removed: Sequence[Victim]) -> int:
    """How costly a row is to place a member on, by the victims still removed there: the
    priority of the most important (a member goes where it takes the least important), with
    their count as a tie-breaker."""
    if not removed:
        return -(2**62)
    return max(v.info.priority for v in removed) * 2**20 + len(removed)


def _costs(removed: Sequence[Sequence[Victim]], size: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    return np.array([_cost(removed[r]) for r in range(size)], dtype=np.int64)

"""Gang preemption (beyond the anchor, DESIGN §8): the fewest lower-priority pods whose deletion
lets every pending member of a gang fit, over several nodes, or nothing.

kube's `selectVictimsOnNode` for one pod, done for the whole gang over the whole cluster:

1. **Potential victims**: the pods of lower priority than the gang's lowest member, on any
   node, that are not being preempted already and not of the gang itself; a pod of another
   gang only when its whole gang is of lower priority.
2. **Remove all, then reprieve.** For a priority level L, every potential victim of priority
   <= L is removed; if the whole gang then fits (`_Packing`: each member on a node where it
   fits without taking the victims still removed if there is one, else where the victims it
   would take are the least important), the victims are put back one by one, the most
   important first (higher priority, then earlier start), each kept back when the whole gang
   still fits. The lowest level whose removal lets the gang fit is found by bisection; the
   levels above it (up to `CANDIDATE_LEVELS` in all) give more candidate sets.
3. **Choice**: among the candidate sets, kube's order (`pick_candidate`; no PDBs here): the
   lowest priority of the most important victim, the smallest sum of priorities, the fewest
   pods. A victim gang left below its quorum goes whole (its other members join the set).

Members that fit as things are take no victim. Nothing is deleted when the gang cannot fit
even without every potential victim, or when the victims would leave the group's
`minResources` short; the message says which. Each member is nominated to its node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from apis.scheduling import PodGroup
from placement.arrays import BoolMask
from placement.pods.framework import (
    CycleHost,
    Diagnosis,
    PodCycle,
    PodInfo,
    PodStatus,
    PostFilterResult,
)
from placement.pods.nodes import NodeSnapshot, ResourceMatrix
from placement.pods.preemption import Candidate, importance_key, pick_candidate
from placement.pods.requests import PODS
from plugins.pods.gangs import Gang, Manager, format_amount, group_of

__all__ = ["CANDIDATE_LEVELS", "GangPreemption"]

CANDIDATE_LEVELS = 3
"""Priority levels tried from the lowest that works: each gives one candidate victim set."""

Vector = np.ndarray[Any, np.dtype[np.int64]]


@dataclass(frozen=True, eq=False)  # compared by identity (a victim is one pod)
class _Victim:
    info: PodInfo
    row: int
    vector: Vector


@dataclass
class _Plan:
    victims: list[PodInfo]
    rows: list[int]  # per member, the row it goes to
    requested: ResourceMatrix  # the nodes' requests with the victims gone, members placed


class _Packing:
    """Places the gang's members on a hypothetical cluster (see the module docstring, 2)."""

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

    def _fits(self, member: int, requested: ResourceMatrix, rows: BoolMask) -> BoolMask:
        """Where the member fits; only rows with room for its requests are filtered."""
        wanted = self.vectors[member]
        # Only what the member asks for counts (an over-committed resource it does not ask
        # for does not stop it, as in NodeResourcesFit).
        enough: BoolMask = ((self.nodes.allocatable - requested >= wanted) | (wanted == 0)).all(1)
        room: BoolMask = enough & rows
        if not room.any():
            return room
        trial = dataclasses.replace(self.nodes, requested=requested)
        fits = getattr(self.host, "fits", None)  # the engine's, without reasons
        if callable(fits):
            mask: BoolMask = fits(self.cycle, self.members[member], trial, room)
            return mask
        mask, _ = self.host.run_filters(self.cycle, self.members[member], trial, room)
        return mask

    def place(
        self,
        which: Sequence[int],
        requested: ResourceMatrix,
        actual: ResourceMatrix,
        cost: np.ndarray[Any, np.dtype[np.int64]],
        rows: list[int],
    ) -> bool:
        """Place the members `which` (indices), updating `requested` (victims removed) and
        `actual` (victims present) in place and `rows`; False when one does not fit (the
        arrays are then partly updated: callers pass copies). `cost` ranks the rows by the
        victims a member would take there (lower first)."""
        everywhere: BoolMask = np.ones(self.nodes.size, dtype=bool)
        for i in which:
            free = self._fits(i, actual, everywhere)
            if free.any():
                row = int(np.flatnonzero(free)[0])
            else:
                fits = np.flatnonzero(self._fits(i, requested, everywhere))
                if fits.size == 0:
                    return False
                row = int(fits[np.lexsort((fits, cost[fits]))[0]])
            requested[row] += self.vectors[i]
            actual[row] += self.vectors[i]
            rows[i] = row
        return True


class GangPreemption:
    """Plans gang preemption over the gang manager's membership; see the module docstring."""

    def __init__(self, name: str, manager: Manager) -> None:
        self.name = name
        self.manager = manager

    def plan(
        self,
        cycle: PodCycle,
        pod: PodInfo,
        pg: PodGroup,
        gang: Gang,
        nodes: NodeSnapshot,
        diagnosis: Diagnosis,
    ) -> PostFilterResult | str:
        """Victims that make every pending member fit, or why not ("" when preemption does
        not apply: the failure was not about room, or nothing needs to go)."""
        host = cycle.host
        if host is None or nodes.size == 0:
            return ""
        if diagnosis.pre_filter and cycle.scratch.get(self.name) != "resources":
            return ""  # not enough siblings, gated, backoff: no victim helps
        if pod.preempt_never:
            return "gang preemption: not eligible due to preemptionPolicy=Never."
        cluster = cycle.cluster
        for key, uid in list(gang.victims.items()):
            other = cluster.pod(key)
            if other is None or other.uid != uid or not host.preempting(key):
                del gang.victims[key]  # gone, or rejected at Permit rather than deleted
        if gang.victims:
            return f"gang preemption: waiting for {len(gang.victims)} preempted pod(s) to terminate"
        members = [pod] + [
            info
            for key in gang.pending()
            if key != pod.key and key not in gang.gated
            for info in (cluster.pod(key) or gang.members[key],)
        ]
        priority = min(m.priority for m in members)
        state = (nodes.version, tuple(sorted(m.key for m in members)), priority)
        cached = gang.no_victims
        if nodes.version is not None and cached is not None and cached[0] == state:
            return cached[1]
        below = host.requested_below(priority, nodes)
        pods_col = nodes.column_of(PODS)
        rows = np.flatnonzero(below[:, pods_col] > 0 if pods_col is not None else below.any(1))
        if rows.size == 0:
            return ""  # no lower-priority pod anywhere: nothing to preempt, nothing to say
        vectors: dict[str, Vector] = {}

        def vector(p: PodInfo) -> Vector:
            v = vectors.get(p.key)
            if v is None:
                v = vectors[p.key] = nodes.vector(p.requests)
            return v

        potential: list[_Victim] = [
            _Victim(p, int(row), vector(p))
            for row in rows
            for p in cluster.pods_on(nodes.names[int(row)])
            if p.priority < priority
            and self.manager.may_take(p, priority)
            and not host.preempting(p.key)
            and group_of(p) != gang.key
        ]
        importance = importance_key(cycle.now)
        potential.sort(key=lambda v: importance(v.info))
        packing = _Packing(cycle, nodes, members, vector)
        plans = self._candidates(packing, potential, nodes)
        if not plans:
            return self._nothing(
                gang,
                state,
                f"gang preemption: PodGroup {gang.key} cannot fit even if every lower-priority "
                f"pod is preempted ({len(members)} pending member(s))",
            )
        by_candidate: dict[int, _Plan] = {}
        candidates: list[Candidate] = []
        for plan in plans:
            extra = self.manager.whole_gangs(plan.victims, cluster)
            victims = sorted([*plan.victims, *extra], key=importance_key(cycle.now))
            row = plan.rows[0]
            candidate = Candidate(nodes.names[row], row, tuple(victims))
            by_candidate[id(candidate)] = plan
            candidates.append(candidate)
        best = pick_candidate(candidates, cycle.now)
        assert best is not None
        if not best.victims:
            return ""  # every member fits as things are: nothing to preempt
        chosen = by_candidate[id(best)]
        wanted = self.manager.min_resources(pg)
        if wanted is not None:
            # The victims must also make room for minResources (PreFilter checks it again).
            freed = chosen.requested.copy()
            for i, row in enumerate(chosen.rows):
                freed[row] -= packing.vectors[i]
            planned = {v.key for v in chosen.victims}
            for victim in best.victims:
                where = self.manager.row_of(victim, nodes)
                if victim.key not in planned and where is not None:
                    freed[where] -= vector(victim)  # a whole victim gang's other members
            gap = self.manager.resource_gap(
                gang, wanted, dataclasses.replace(nodes, requested=freed)
            )
            if gap:
                parts = ", ".join(f"{n}: {format_amount(n, v)}" for n, v in gap.items())
                return self._nothing(
                    gang,
                    state,
                    f"gang preemption: the victims that fit every member of PodGroup {gang.key} "
                    f"leave its minResources short (resource gap: {parts})",
                )
        gang.victims = {v.key: v.uid for v in best.victims}
        nominations = tuple(
            (m.key, nodes.names[row]) for m, row in zip(members, chosen.rows, strict=True)
        )
        gang.last_rejection = (
            f"gang preemption: {len(best.victims)} victim(s) preempted for PodGroup {gang.key}"
        )
        return PostFilterResult(
            PodStatus(plugin=self.name),
            nominated_node=nominations[0][1],
            victims=best.victims,
            nominations=nominations,
        )

    @staticmethod
    def _nothing(gang: Gang, state: object, message: str) -> str:
        """No preemption, remembered for this cluster state (the gang's other members do not
        search again)."""
        gang.last_rejection = message
        gang.no_victims = (state, message)
        return message

    def _candidates(
        self, packing: _Packing, potential: Sequence[_Victim], nodes: NodeSnapshot
    ) -> list[_Plan]:
        """One plan per priority level, from the lowest whose removal lets the gang fit."""
        levels = sorted({v.info.priority for v in potential})
        if not levels:
            plan = self._remove_then_reprieve(packing, [], nodes)
            return [plan] if plan is not None else []
        if self._remove_then_reprieve(packing, potential, nodes, reprieve=False) is None:
            return []
        lo, hi = 0, len(levels) - 1  # the lowest level that works, by bisection
        while lo < hi:
            mid = (lo + hi) // 2
            upto = [v for v in potential if v.info.priority <= levels[mid]]
            if self._remove_then_reprieve(packing, upto, nodes, reprieve=False) is None:
                lo = mid + 1
            else:
                hi = mid
        plans: list[_Plan] = []
        for level in levels[lo : lo + CANDIDATE_LEVELS]:
            upto = [v for v in potential if v.info.priority <= level]
            plan = self._remove_then_reprieve(packing, upto, nodes)
            if plan is not None:
                plans.append(plan)
        return plans

    def _remove_then_reprieve(
        self,
        packing: _Packing,
        removable: Sequence[_Victim],
        nodes: NodeSnapshot,
        *,
        reprieve: bool = True,
    ) -> _Plan | None:
        """Remove every victim of `removable` (most important first); None when the gang does
        not fit even so. Then reprieve them in order while the whole gang still fits: only the
        members on the victim's row move, the others' places stay valid."""
        requested: ResourceMatrix = nodes.requested.copy()
        actual: ResourceMatrix = nodes.requested.copy()
        removed: list[list[_Victim]] = [[] for _ in range(nodes.size)]
        for victim in removable:
            requested[victim.row] -= victim.vector
            removed[victim.row].append(victim)
        cost = _costs(removed, nodes.size)
        rows = [-1] * len(packing.members)
        if not packing.place(range(len(rows)), requested, actual, cost, rows):
            return None
        if not reprieve:
            return _Plan([], rows, requested)
        victims: list[PodInfo] = []
        for victim in removable:
            r = victim.row
            removed[r].remove(victim)
            on_row = [i for i, row in enumerate(rows) if row == r]
            if not on_row:
                requested[r] += victim.vector  # the gang's places stay valid
                cost[r] = _cost(removed[r])
                continue
            trial_requested = requested.copy()
            trial_actual = actual.copy()
            trial_requested[r] += victim.vector
            for i in on_row:
                trial_requested[r] -= packing.vectors[i]
                trial_actual[r] -= packing.vectors[i]
            trial_cost = cost.copy()
            trial_cost[r] = _cost(removed[r])
            trial_rows = list(rows)
            if packing.place(on_row, trial_requested, trial_actual, trial_cost, trial_rows):
                requested, actual, cost, rows = (
                    trial_requested,
                    trial_actual,
                    trial_cost,
                    trial_rows,
                )
            else:
                removed[r].append(victim)  # stays a victim
                victims.append(victim.info)
        return _Plan(victims, rows, requested)


def _cost(removed: Sequence[_Victim]) -> int:
    """How costly a row is to place a member on, by the victims still removed there: the
    priority of the most important (a member goes where it takes the least important), with
    their count as a tie-breaker."""
    if not removed:
        return -(2**62)
    return max(v.info.priority for v in removed) * 2**20 + len(removed)


def _costs(removed: Sequence[Sequence[_Victim]], size: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    return np.array([_cost(removed[r]) for r in range(size)], dtype=np.int64)

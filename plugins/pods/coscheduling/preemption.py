"""Gang preemption (beyond scheduler-plugins' Coscheduling; docs/gangs-and-quotas.md): the
fewest lower-priority pods whose deletion lets every pending member of a gang fit, over several
nodes, or nothing.

kube's `selectVictimsOnNode` for one pod, done for the whole gang over the whole cluster:

1. **Potential victims**: the pods of lower priority than the gang's lowest member, on any
   node, that are not being preempted already and not of the gang itself; a pod of another
   gang only when its whole gang is of lower priority.
2. **Remove all, then reprieve.** For a priority level L, every potential victim of priority
   <= L is removed; if the whole gang then fits, the victims are put back one by one, the most
   important first (higher priority, then earlier start), each kept back when the whole gang
   still fits (`plugins/pods/coscheduling/packing.py`). L is the lowest level whose removal lets the
   gang fit (the lowest level first, else by bisection up to the highest, which must work or
   nothing does): the most important victim is then as unimportant as it can be.
3. **Choice**: two first placements are reprieved (members where the victims they add are the
   least important; members packed where each victim makes the most room), for
   `CANDIDATE_LEVELS` levels from L; among these candidate sets, kube's order
   (`pick_candidate`): the fewest PodDisruptionBudget violations, the lowest priority of the
   most important victim, the smallest sum of priorities, the fewest pods. A victim gang left
   below its quorum goes whole (its other members join the set before the ranking).

PodDisruptionBudgets as kube's default preemption reads them
(`placement.pods.preemption.disruption`): the potential victims are split once, over the whole
cluster, most important first, into those whose eviction violates a budget and the others; the
violating ones are reprieved first, and a candidate set counts the violating victims it keeps. What
does not carry over: kube splits and counts per node, a gang's set spans nodes, so one budget is
spent across all of them.

Members that fit as things are take no victim. Nothing is deleted when the gang cannot fit
even without every potential victim, or when the victims would leave the group's
`minResources` short; the message says which. Each member is nominated to its node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import datetime

import numpy as np

from apis.scheduling import PodGroup
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.requests import PODS
from placement.pods.framework.interface import (
    Diagnosis,
    PodCycle,
    PodInfo,
    PodStatus,
    PostFilterResult,
)
from placement.pods.preemption.disruption import budgets_of, split_by_budgets
from placement.pods.preemption.preemption import Candidate, importance_key, pick_candidate
from plugins.pods.coscheduling.gangs import Gang, Manager, format_amount, group_of
from plugins.pods.coscheduling.packing import (
    Packing,
    Plan,
    Removal,
    Vector,
    Victim,
    remove,
    reprieve,
)

__all__ = ["CANDIDATE_LEVELS", "GangPreemption"]

CANDIDATE_LEVELS = 1
"""Priority levels from the lowest that works whose victim sets are ranked (more cost one
search each; the lowest level gives the lowest most-important victim, kube's first key)."""


class GangPreemption:
    """Plans gang preemption over the gang manager's membership; see the module docstring."""

    def __init__(self, name: str, manager: Manager) -> None:
        self.name = name
        self.manager = manager
        self._order: tuple[datetime, Callable[[PodInfo], tuple[int, float, str]]] | None = None

    def _importance(self, now: datetime) -> Callable[[PodInfo], tuple[int, float, str]]:
        """kube's victim order key, kept while the clock stands still: the gangs tried in one
        engine call sort many of the same pods (each pod's start time is parsed once)."""
        if self._order is None or self._order[0] != now:
            self._order = (now, importance_key(now))
        return self._order[1]

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
        vectors: dict[tuple[tuple[str, int], ...], Vector] = {}

        def vector(p: PodInfo) -> Vector:
            """The pod's requests over the snapshot's columns (pods of one shape share one)."""
            shape = tuple(p.requests.items())
            v = vectors.get(shape)
            if v is None:
                v = vectors[shape] = nodes.vector(p.requests)
            return v

        potential: list[Victim] = [
            Victim(p, int(row), vector(p))
            for row in rows
            for p in cluster.pods_on(nodes.names[int(row)])
            if p.priority < priority
            and self.manager.may_take(p, priority)
            and not host.preempting(p.key)
            and group_of(p) != gang.key
        ]
        importance = self._importance(cycle.now)
        potential.sort(key=lambda v: importance(v.info))
        violating: set[str] = set()
        budgets = budgets_of(cluster)
        if budgets:  # kube's rule: the victims a budget protects are reprieved first
            violating = {p.key for p in split_by_budgets([v.info for v in potential], budgets)[0]}
            potential = [
                *(v for v in potential if v.info.key in violating),
                *(v for v in potential if v.info.key not in violating),
            ]
        packing = Packing(cycle, nodes, members, vector)
        plans = self._candidates(packing, potential, nodes)
        if not plans:
            return self._nothing(
                gang,
                state,
                f"gang preemption: PodGroup {gang.key} cannot fit even if every lower-priority "
                f"pod is preempted ({len(members)} pending member(s))",
            )
        by_candidate: dict[int, Plan] = {}
        candidates: list[Candidate] = []
        for plan in plans:
            extra = self.manager.whole_gangs(plan.victims, cluster)
            victims = sorted([*plan.victims, *extra], key=importance_key(cycle.now))
            row = plan.rows[0]
            count = sum(1 for v in victims if v.key in violating)
            candidate = Candidate(nodes.names[row], row, tuple(victims), count)
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
        self, packing: Packing, potential: Sequence[Victim], nodes: NodeSnapshot
    ) -> list[Plan]:
        """One plan per priority level, from the lowest whose removal lets the gang fit."""
        levels = sorted({v.info.priority for v in potential})
        if not levels:
            state = remove(packing, [], nodes)
            return [reprieve(packing, state)] if state is not None else []
        removals: dict[int, Removal | None] = {}

        def removal(index: int) -> Removal | None:
            if index not in removals:
                upto = [v for v in potential if v.info.priority <= levels[index]]
                removals[index] = remove(packing, upto, nodes)
            return removals[index]

        # The lowest level that works: often the lowest of all (tried first), else by
        # bisection up to the highest (which must work, or nothing does).
        lo, hi = 0, len(levels) - 1
        if removal(lo) is None:
            if removal(hi) is None:
                return []
            lo += 1
        else:
            hi = lo
        while lo < hi:
            mid = (lo + hi) // 2
            if removal(mid) is None:
                lo = mid + 1
            else:
                hi = mid
        plans: list[Plan] = []
        for index in range(lo, min(lo + CANDIDATE_LEVELS, len(levels))):
            upto = [v for v in potential if v.info.priority <= levels[index]]
            # Two first placements, each reprieved: members on the rows whose victims are
            # the least important, and members packed where each victim makes the most room.
            for state in (removal(index), remove(packing, upto, nodes, packed=True)):
                if state is not None:
                    plans.append(reprieve(packing, state))
        return plans

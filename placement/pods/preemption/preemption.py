"""Preemption: which pods to delete so that a pod that fits nowhere fits somewhere.

kube-scheduler's default preemption, on the engine's snapshot:

1. **Eligibility.** A pod with `preemptionPolicy: Never` does not preempt. A pod already
   nominated to a node where a lower-priority pod is still terminating because of a preemption
   does not preempt again (its room is coming), unless its nominated node now fails for a reason
   preemption cannot fix.
2. **Candidate nodes.** Only rows whose failure is resolvable (`Diagnosis.resolvable`): a node
   that fails node affinity or a taint stays unfit whoever leaves it.
3. **Victims on one node.** Every pod of lower priority on the node is removed; if the pod
   still does not fit, the node is no candidate. Then victims are reprieved one by one, from
   the most important (highest priority, then earliest start) down, as long as the pod still
   fits: the set left is minimal in kube's sense.
4. **Choice of node.** Fewest PodDisruptionBudget violations, then the lowest priority of the
   most important victim, the smallest sum of victim priorities, the fewest victims, the
   latest start among the most important victims, then the first node by name.

**Disruption budgets** (`placement.pods.preemption.disruption`). When the cluster has any, each
row's victims whose eviction violates a budget are reprieved first and counted, and rows are not
narrowed to the lowest priority level (a row with more important victims but no violation wins):
rows are examined in name order, in batches, until enough candidates are found and one of them
violates no budget (kube's dry run stops at the same point). Without budgets none of this runs.

The result nominates the node and lists the victims; the engine deletes them, records
`nominatedNodeName`, and keeps the node's room for the preemptor.

**Vectorized.** Nodes are independent, so every step runs on all candidate rows at once: the
"all lower-priority pods gone" state of every node is one matrix subtraction from requests
aggregated per priority (`CycleHost.requested_below`, kept by the engine as pods come and go),
and one pass of the Filter plugins tells which rows fit then. Without victim hooks, a binary
search over the priority levels (log2(levels) filter passes) finds for every row the lowest
level that must go, which is the priority of its most important victim: only the rows with the
lowest such level can win, and only those (at most `max(10%, 100)` of the candidates, as kube
samples) get their victims examined. Reprieve then runs in rounds, round j trying to put back
the j-th most important victim of every row at once (one filter pass per round). Without hooks
this and the choice of node run on arrays (`victim_table`, the same outcome).

**Hooks.** Plugins restrict or extend preemption through `framework.PreemptionHooks` (one
Protocol, kube's preemption Interface): a plugin that declares it and overrides a hook is called
in profile order (`Preemptor` finds them through `CycleHost.plugins()`, or gets them in its
constructor). Capacity scheduling uses every hook; an overridden `preemption_victims` turns the
per-priority shortcut off (rows are examined in name order, in batches, until enough candidates
are found), an overridden `preemption_complete` makes rows without potential victims candidates
too (the pod may fit there already and lack only quota headroom).

Gang preemption (victims over several nodes) builds on the same pieces: `lower_priority_pods`,
`select_victims` (the batched remove-all-then-reprieve for any rows and victim lists, on any
hypothetical snapshot, e.g. one where earlier members of the gang are already placed) and
`pick_candidate`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.requests import PODS
from placement.pods.framework.interface import (
    Candidate,
    CycleHost,
    Diagnosis,
    PodCycle,
    PodInfo,
    PodStatus,
    PostFilterResult,
    PreemptionHooks,
)
from placement.pods.preemption.disruption import Budget, budgets_of
from placement.pods.preemption.hooks import complete_candidates, hook_plugins, hooks_of
from placement.pods.preemption.victim_table import VictimTable, best_candidate
from placement.pods.preemption.victims import (
    importance_key,
    num_candidates,
    pick_candidate,
    preempted_by_scheduler,
    select_victims,
    start_time,
)

__all__ = [
    "MIN_CANDIDATE_NODES_ABSOLUTE",
    "MIN_CANDIDATE_NODES_PERCENTAGE",
    "NOT_ELIGIBLE_NEVER",
    "NOT_ELIGIBLE_TERMINATING",
    "NOT_HELPFUL",
    "NO_VICTIMS",
    "Candidate",
    "Preemptor",
    "complete_candidates",
    "hook_plugins",
    "importance_key",
    "pick_candidate",
    "start_time",
]

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
MAX_RANKED_LEVELS = 64
"""Above this many distinct lower priorities the level ranking is skipped (memory)."""


def _not_helpful(potential: BoolMask, nodes: NodeSnapshot) -> dict[str, int]:
    """The failures counted before any victim is looked at: the nodes preemption cannot help."""
    count = nodes.size - int(np.count_nonzero(potential))
    return {NOT_HELPFUL: count} if count else {}


class Preemptor:
    """Default preemption with hooks; see the module docstring."""

    def __init__(
        self,
        name: str = "DefaultPreemption",
        *,
        min_candidate_percentage: int = MIN_CANDIDATE_NODES_PERCENTAGE,
        min_candidate_absolute: int = MIN_CANDIDATE_NODES_ABSOLUTE,
        hooks: Sequence[object] = (),
    ) -> None:
        self.name = name
        self.min_candidate_percentage = min_candidate_percentage
        self.min_candidate_absolute = min_candidate_absolute
        self.hooks = tuple(hooks)
        self._table = VictimTable()

    # --- the PostFilter ----------------------------------------------------------------------

    def preempt(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> PostFilterResult:
        host = cycle.host
        if host is None:
            return PostFilterResult(PodStatus.unschedulable(self.name, "preemption: no engine"))
        plugins = tuple(hook_plugins(self._plugins(host), cycle, pod))
        refusal = self.eligible(cycle, pod, nodes, diagnosis, plugins)
        if refusal is not None:
            message = f"preemption: {refusal}"
            return PostFilterResult(PodStatus.unschedulable(self.name, message))
        budgets = budgets_of(cycle.cluster)
        if plugins or budgets:
            candidates, failures = self.find_candidates(
                cycle, pod, nodes, diagnosis, plugins, budgets
            )
            best = pick_candidate(candidates, cycle.now)
        else:  # the same outcome on arrays (`victim_table`)
            rows, failures = self._ranked_rows(cycle, host, pod, nodes, diagnosis, False)
            best = best_candidate(self._table, cycle, pod, nodes, rows)
            if best is None and rows:  # the emptied rows' reasons, as reported per pod
                failures = self._ranked_rows(cycle, host, pod, nodes, diagnosis)[1]
        if best is None:
            fit = Diagnosis(
                total_nodes=nodes.size,
                counts=failures,
                resolvable=np.zeros(nodes.size, dtype=bool),
            )
            message = f"preemption: {fit.message()}"
            return PostFilterResult(PodStatus.unschedulable(self.name, message), nominated_node="")
        for hook in hooks_of(plugins, "preemption_chosen"):
            hook(cycle, pod, best)
        return PostFilterResult(PodStatus(), nominated_node=best.node, victims=best.victims)

    def _plugins(self, host: CycleHost) -> tuple[object, ...]:
        found = list(self.hooks)
        for plugin in host.plugins():
            if plugin is not self and all(plugin is not p for p in found):
                found.append(plugin)
        return tuple(found)

    # --- 1. eligibility ----------------------------------------------------------------------

    def eligible(
        self,
        cycle: PodCycle,
        pod: PodInfo,
        nodes: NodeSnapshot,
        diagnosis: Diagnosis,
        plugins: Sequence[PreemptionHooks] = (),
    ) -> str | None:
        """None when the pod may preempt, else kube's message (PodEligibleToPreemptOthers)."""
        if pod.preempt_never:
            return NOT_ELIGIBLE_NEVER
        # The nominator's node first: a preemptor retried before its nominatedNodeName comes
        # back through the watch would otherwise preempt again, elsewhere.
        nominated = cycle.cluster.nominated_node(pod.key) or pod.nominated_node
        if nominated:
            row = nodes.row_of(nominated)
            unresolvable = row is not None and not bool(diagnosis.resolvable[row])
            if not unresolvable:
                host = cycle.host
                for other in cycle.cluster.pods_on(nominated):
                    if other.priority >= pod.priority:
                        continue
                    if (host is not None and host.preempting(other.key)) or (
                        other.terminating and preempted_by_scheduler(other)
                    ):
                        return NOT_ELIGIBLE_TERMINATING
        for hook in hooks_of(plugins, "preemption_eligible"):
            message = hook(cycle, pod, nodes, diagnosis)
            if message:
                return str(message)
        return None

    # --- 2-3. candidates ---------------------------------------------------------------------

    def find_candidates(
        self,
        cycle: PodCycle,
        pod: PodInfo,
        nodes: NodeSnapshot,
        diagnosis: Diagnosis,
        plugins: Sequence[PreemptionHooks] = (),
        budgets: Sequence[Budget] = (),
    ) -> tuple[list[Candidate], dict[str, int]]:
        """The candidate nodes with their minimal victims, and, per message, how many nodes
        failed and why (kube's preemption FitError) when there is none."""
        host = cycle.host
        assert host is not None
        victim_hooks = hooks_of(plugins, "preemption_victims")
        if not victim_hooks:
            by_level = not budgets
            rows, failures = self._ranked_rows(cycle, host, pod, nodes, diagnosis, True, by_level)
            if budgets:
                limit = self._limit(diagnosis.resolvable)
                found = self._examine(cycle, pod, nodes, rows, plugins, budgets, limit)
            else:
                lists = {r: self.lower_priority_pods(cycle, pod, nodes.names[r]) for r in rows}
                found = self.select_victims(cycle, pod, nodes, lists, plugins)
            return complete_candidates(cycle, pod, found, plugins), failures
        potential = diagnosis.resolvable.copy()
        failures = _not_helpful(potential, nodes)
        if not potential.any():
            return [], failures
        limit = self._limit(potential)
        return self._candidates_listed(
            cycle, pod, nodes, potential, plugins, victim_hooks, limit, failures, budgets
        )

    def _examine(
        self,
        cycle: PodCycle,
        pod: PodInfo,
        nodes: NodeSnapshot,
        rows: Sequence[int],
        plugins: Sequence[PreemptionHooks],
        budgets: Sequence[Budget],
        limit: int,
    ) -> list[Candidate]:
        """With budgets: the rows' candidates, in batches, until `limit` are found and one
        of them violates no budget."""
        found: list[Candidate] = []
        start = 0
        while start < len(rows):
            size = max(limit - len(found), min(limit, 16), 1)
            batch = rows[start : start + size]
            start += size
            lists = {r: self.lower_priority_pods(cycle, pod, nodes.names[r]) for r in batch}
            found += self.select_victims(cycle, pod, nodes, lists, plugins, budgets=budgets)
            if len(found) >= limit and any(c.violations == 0 for c in found):
                break
        return found

    def _limit(self, potential: BoolMask) -> int:
        count = int(np.count_nonzero(potential))
        return num_candidates(count, self.min_candidate_percentage, self.min_candidate_absolute)

    def _ranked_rows(
        self,
        cycle: PodCycle,
        host: CycleHost,
        pod: PodInfo,
        nodes: NodeSnapshot,
        diagnosis: Diagnosis,
        explain: bool = True,
        by_level: bool = True,
    ) -> tuple[list[int], dict[str, int]]:
        """Without `preemption_victims` hooks: the rows (ascending, at most the candidate
        limit) whose victims are examined, and the failures counted on the way (without the
        filters' reasons on the emptied rows unless `explain` or none is left). Without
        `by_level`, every row where the pod fits once its lower-priority pods are gone."""
        potential = diagnosis.resolvable
        failures = _not_helpful(potential, nodes)
        if not potential.any():
            return [], failures
        limit = self._limit(potential)
        below = host.requested_below(pod.priority, nodes)
        pods_col = nodes.column_of(PODS)
        # The `pods` column counts pods: > 0 where some lower-priority pod runs.
        has_victims = below[:, pods_col] > 0 if pods_col is not None else below.any(axis=1)
        none = potential & ~has_victims
        if none.any():
            failures[NO_VICTIMS] = failures.get(NO_VICTIMS, 0) + int(np.count_nonzero(none))
        rows_mask = potential & has_victims
        if not rows_mask.any():
            return [], failures
        gone = np.full(nodes.size, pod.priority, dtype=np.int64)
        emptied = dataclasses.replace(
            nodes, requested=nodes.requested - below, overlay=nodes.overlay.below_priority(gone)
        )
        fits = host.fits(cycle, pod, emptied, rows_mask) if not explain else None
        if fits is None or not fits.any():  # the reasons only when they are reported
            fits, diag = host.run_filters(cycle, pod, emptied, rows_mask)
            for message, count in diag.counts.items():
                failures[message] = failures.get(message, 0) + count
        if not fits.any():
            return [], failures
        if not by_level:
            return np.flatnonzero(fits).tolist(), failures
        rows = self._lowest_level_rows(cycle, host, pod, nodes, fits)
        return rows[:limit].tolist(), failures

    def _lowest_level_rows(
        self,
        cycle: PodCycle,
        host: CycleHost,
        pod: PodInfo,
        nodes: NodeSnapshot,
        fits: BoolMask,
    ) -> np.ndarray[Any, np.dtype[np.intp]]:
        """The rows (ascending) whose most important victim has the lowest priority: per row,
        a binary search for the lowest priority level whose removal (with every level below)
        lets the pod fit."""
        rows = np.flatnonzero(fits)
        layers = host.layers
        if rows.size <= 1:
            return rows
        levels = [p for p in layers.priorities(nodes) if p < pod.priority]
        if len(levels) <= 1 or len(levels) > MAX_RANKED_LEVELS:
            return rows
        cumulative = np.cumsum(np.stack([layers.layer(p, nodes)[rows] for p in levels]), axis=0)
        lo = np.zeros(rows.size, dtype=np.intp)
        hi = np.full(rows.size, len(levels) - 1, dtype=np.intp)
        base = nodes.requested
        while True:
            open_ = lo < hi
            if not open_.any():
                break
            mid = (lo + hi) // 2
            requested = base.copy()
            requested[rows] -= cumulative[mid, np.arange(rows.size)]
            mask = np.zeros(nodes.size, dtype=bool)
            mask[rows[open_]] = True
            gone = np.full(nodes.size, np.iinfo(np.int64).min, dtype=np.int64)
            gone[rows] = np.asarray(levels, dtype=np.int64)[mid] + 1  # levels <= mid removed
            trial = dataclasses.replace(
                nodes, requested=requested, overlay=nodes.overlay.below_priority(gone)
            )
            ok, _ = host.run_filters(cycle, pod, trial, mask)
            fit_rows = ok[rows]
            hi = np.where(open_ & fit_rows, mid, hi)
            lo = np.where(open_ & ~fit_rows, mid + 1, lo)
        best = lo.min()
        selected: np.ndarray[Any, np.dtype[np.intp]] = rows[lo == best]
        return selected

    def _candidates_listed(
        self,
        cycle: PodCycle,
        pod: PodInfo,
        nodes: NodeSnapshot,
        potential: BoolMask,
        plugins: Sequence[PreemptionHooks],
        victim_hooks: Sequence[Any],
        limit: int,
        failures: dict[str, int],
        budgets: Sequence[Budget] = (),
    ) -> tuple[list[Candidate], dict[str, int]]:
        """With `preemption_victims` hooks: rows in name order, victims listed per row, in
        batches until `limit` candidates are found (and, with budgets, one violating none)."""
        found: list[Candidate] = []
        rows = [int(r) for r in np.flatnonzero(potential)]
        completing = bool(hooks_of(plugins, "preemption_complete"))
        key = importance_key(cycle.now)
        start = 0
        while start < len(rows):
            # The first batch holds `limit` rows, the next ones what is still missing (at
            # least 16): rows are not examined beyond the candidates needed.
            size = max(limit - len(found), min(limit, 16), 1)
            batch_rows = rows[start : start + size]
            start += size
            lists: dict[int, list[PodInfo]] = {}
            empty: dict[int, list[PodInfo]] = {}
            for row in batch_rows:
                node = nodes.names[row]
                victims: Sequence[PodInfo] = self.lower_priority_pods(
                    cycle, pod, node, ordered=False
                )
                ordered = False
                for hook in victim_hooks:
                    changed = hook(cycle, pod, node, victims)
                    if changed is not None:
                        victims, ordered = sorted(changed, key=key), True
                if not ordered:
                    victims = sorted(victims, key=key)
                if victims:
                    lists[row] = list(victims)
                elif completing:
                    empty[row] = []
                else:
                    failures[NO_VICTIMS] = failures.get(NO_VICTIMS, 0) + 1
            batch = self.select_victims(cycle, pod, nodes, lists, plugins, failures, budgets)
            if empty:
                # Rows without potential victims: candidates only if the pod fits there as
                # they are (the room it lacks is elsewhere, e.g. quota headroom).
                kept = self.select_victims(cycle, pod, nodes, empty, plugins)
                if len(kept) < len(empty):
                    failures[NO_VICTIMS] = failures.get(NO_VICTIMS, 0) + len(empty) - len(kept)
                batch += kept
            found += complete_candidates(cycle, pod, batch, plugins)
            if len(found) >= limit and (not budgets or any(c.violations == 0 for c in found)):
                break
        return found, failures

    def lower_priority_pods(
        self,
        cycle: PodCycle,
        pod: PodInfo,
        node: str,
        *,
        ordered: bool = True,
    ) -> list[PodInfo]:
        """The default potential victims: the node's pods of lower priority, most important
        first (in no particular order with `ordered=False`)."""
        pods = [p for p in cycle.cluster.pods_on(node) if p.priority < pod.priority]
        if ordered:
            pods.sort(key=importance_key(cycle.now))
        return pods

    def select_victims(
        self,
        cycle: PodCycle,
        pod: PodInfo,
        nodes: NodeSnapshot,
        lists: Mapping[int, Sequence[PodInfo]],
        plugins: Sequence[PreemptionHooks] = (),
        failures: dict[str, int] | None = None,
        budgets: Sequence[Budget] = (),
    ) -> list[Candidate]:
        """`victims.select_victims` (gang preemption calls it on its hypothetical clusters)."""
        fits_hooks = hooks_of(plugins, "preemption_fits")
        return select_victims(cycle, pod, nodes, lists, fits_hooks, failures, budgets)

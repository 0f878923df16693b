"""`PodTopologySpread`: `spec.topologySpreadConstraints` (and the default constraints for pods
without any), as kube-scheduler's plugin of the same name.

**PreFilter** builds the DoNotSchedule constraints (SKIP without any) and their state: per
constraint, the matching pods per node (`MatchCounts`, kept across cycles) and the eligible
nodes: those carrying every topology key of the pod's hard constraints and passing the
constraint's nodeAffinityPolicy (Honor: the pod's nodeSelector and required node affinity)
and nodeTaintsPolicy (Honor: no untolerated NoSchedule/NoExecute taint). An invalid
constraint makes the pod unresolvable with the field named.

**Filter** is mask arithmetic: per constraint, the counts summed per domain over the eligible
nodes (`np.bincount` on the label column's codes), the global minimum over those domains (0
when there are fewer than minDomains), and a node fails when its domain's count, plus one if
the pod matches its own selector, minus the minimum exceeds maxSkew. A node without a
topology key is unresolvable. On a hypothetical snapshot (preemption) the counts follow
`nodes.overlay`: a victim leaving a crowded domain helps, nominated pods count.

Pods it rejected are retried when a pod event changes the counted pods (`on_event`).

**Score** uses the ScheduleAnyway constraints only: a node's raw score is the sum over the
constraints of `count(domain) * log(domains + 2) + maxSkew - 1` (for kubernetes.io/hostname
the node's own matching pods, the domains being the scored nodes), rounded; then inverted to
0..100 as `100 * (max + min - s) // max` (all 100 when max is 0). Nodes missing a key get 0
(under the system defaults a node missing a key is still scored on the others, as kube). Each
constraint's term is computed once per domain and read back per row through one `take`; what
depends only on the nodes (domains present, number of domains) is kept per label column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from apis.pluginargs import PodTopologySpreadArgs
from apis.topologyspread import TopologySpreadConstraint
from placement.arrays import BoolMask, RowIndex, ScoreVector
from placement.pods.cluster.affinity import node_selector_mask, selector_terms_mask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.events import ClusterEvent, ObjectEvent, PodEvent
from placement.pods.framework.interface import (
    MAX_NODE_SCORE,
    SKIP,
    ClusterView,
    EventHandler,
    Filter,
    FilterResult,
    PodCycle,
    PodInfo,
    PodStatus,
    PreFilter,
    PreFilterResult,
    Reason,
    Score,
)
from placement.pods.framework.noscore import no_scores
from plugins.pods.helper.args import args_of
from plugins.pods.helper.snapshot_cache import frozen
from plugins.pods.helper.tolerations import HARD_EFFECTS, cycle_tolerations, tolerated
from plugins.pods.podtopologyspread.constraints import (
    HOSTNAME,
    SYSTEM_DEFAULTS,
    Counts,
    MatchCounts,
    SelectorError,
    Spread,
    overlaid,
    self_match,
    spread_constraints,
)
from plugins.pods.podtopologyspread.default_selector import SELECTING_KINDS, DefaultSelectors

__all__ = ["ERR_REASON_CONSTRAINTS", "ERR_REASON_LABEL", "PodTopologySpread"]

ERR_REASON_CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
ERR_REASON_LABEL = ERR_REASON_CONSTRAINTS + " (missing required label)"


class _State(NamedTuple):
    """PreFilter's answer for one pod on one snapshot's nodes."""

    pod: PodInfo
    names: tuple[str, ...]
    constraints: tuple[Spread, ...]
    counts: tuple[Counts, ...]  # per constraint: matching pods per row (no overlay)
    eligible: tuple[BoolMask | None, ...]  # per constraint: rows counted (None: every row)
    present: tuple[BoolMask, ...]  # per constraint: the domains of eligible rows


def affinity_mask(pod: PodInfo, nodes: NodeSnapshot) -> BoolMask | None:
    """Rows matching the pod's nodeSelector and required node affinity (kube's
    RequiredNodeAffinity; None: the pod has neither); an invalid selector matches nothing
    (kube ignores the error)."""
    spec = pod.pod.spec
    node = spec.affinity.node_affinity if spec.affinity else None
    required = node.required_during_scheduling_ignored_during_execution if node else None
    if not spec.node_selector and required is None:
        return None
    try:
        mask = node_selector_mask(spec.node_selector, nodes)
        if required is not None:
            mask &= selector_terms_mask(required, nodes)
    except SelectorError:
        return np.zeros(nodes.size, dtype=bool)
    return mask


def _taint_mask(cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> BoolMask | None:
    """Rows without a NoSchedule/NoExecute taint the pod does not tolerate (None: every row)."""
    if not nodes.taints:
        return None
    ok = np.ones(nodes.size, dtype=bool)
    tols = cycle_tolerations(cycle, pod)
    for row, taints in nodes.taints.items():
        if any(t.effect in HARD_EFFECTS and not tolerated(tols, t) for t in taints):
            ok[row] = False
    return ok


def _narrowed(mask: BoolMask | None, by: BoolMask | None) -> BoolMask | None:
    if by is None:
        return mask
    return by if mask is None else mask & by


def _inclusion(
    cycle: PodCycle,
    pod: PodInfo,
    nodes: NodeSnapshot,
    constraints: Sequence[Spread],
    base: BoolMask | None,
) -> tuple[BoolMask | None, ...]:
    """Per constraint, `base` narrowed by its node inclusion policies (None: every row)."""
    masks: list[BoolMask | None] = []
    affinity: tuple[BoolMask | None] | None = None
    taints: tuple[BoolMask | None] | None = None
    for c in constraints:
        mask = base
        if c.honor_affinity:
            if affinity is None:
                affinity = (affinity_mask(pod, nodes),)
            mask = _narrowed(mask, affinity[0])
        if c.honor_taints:
            if taints is None:
                taints = (_taint_mask(cycle, pod, nodes),)
            mask = _narrowed(mask, taints[0])
        masks.append(mask)
    return tuple(masks)


def _all_keys(nodes: NodeSnapshot, constraints: Sequence[Spread]) -> BoolMask:
    mask = np.ones(nodes.size, dtype=bool)
    for c in constraints:
        mask &= nodes.label(c.key).codes >= 0
    return mask


def _domain_counts(
    codes: np.ndarray[Any, Any], counts: Counts, eligible: BoolMask | None, domains: int
) -> Counts:
    """Matching pods per domain code over the eligible rows (None: every row with the key),
    with one more cell, 0, that absent codes (-1) read."""
    if eligible is None and (codes.size == 0 or int(codes.min()) >= 0):
        summed = np.bincount(codes, weights=counts, minlength=domains)
    else:
        rows = codes >= 0 if eligible is None else eligible & (codes >= 0)
        summed = np.bincount(codes[rows], weights=counts[rows], minlength=domains)
    out = np.zeros(domains + 1, dtype=np.int64)
    out[:domains] = np.rint(summed)
    return out


def _present(codes: np.ndarray[Any, Any], eligible: BoolMask | None, domains: int) -> BoolMask:
    """Which domain codes hold at least one eligible row."""
    chosen = codes[codes >= 0] if eligible is None else codes[eligible & (codes >= 0)]
    found: BoolMask = np.bincount(chosen, minlength=domains) > 0
    return found


class PodTopologySpread(PreFilter, Filter, Score, EventHandler):
    name = "PodTopologySpread"

    def __init__(
        self,
        defaults: Sequence[TopologySpreadConstraint] = SYSTEM_DEFAULTS,
        system_defaulted: bool = True,
    ) -> None:
        self.defaults = tuple(defaults)
        self.system_defaulted = system_defaulted
        self._counts = MatchCounts()
        self._selectors = DefaultSelectors()  # the default constraints' selector per pod shape
        self._seen = -1  # the counted pods' generation at the last event
        self._columns: dict[str, tuple[object, BoolMask]] = {}  # key -> (column, present)
        self._sizes: dict[str, tuple[object, int]] = {}  # key -> (column, distinct values)

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool:
        """Pods this plugin rejected are retried when the counted pods changed (kube: any
        assigned pod added, updated or deleted may help; node events retry every pod). A
        Service or controller whose selector changed makes the default selectors derived
        again (as kube, it retries no pod)."""
        if isinstance(event, ObjectEvent) and (event.obj.KIND or event.obj.kind) in SELECTING_KINDS:
            self._selectors.changed(event.obj, deleted=event.type == "Deleted")
            return False
        generation = cluster.counted.generation
        if generation == self._seen:
            return False
        self._seen = generation
        return isinstance(event, PodEvent)

    @classmethod
    def from_args(
        cls, args: PodTopologySpreadArgs | Mapping[str, Any] | None = None
    ) -> PodTopologySpread:
        parsed = args_of(PodTopologySpreadArgs, args)
        if parsed.defaulting_type == "System":
            return cls(SYSTEM_DEFAULTS, True)
        return cls(parsed.default_constraints, False)

    def _constraints(self, cycle: PodCycle, pod: PodInfo, hard: bool) -> list[Spread] | str:
        """`spread_constraints`, built once per cycle and kind."""
        key = f"{self.name}.{'hard' if hard else 'soft'}"
        kept = cycle.scratch.get(key)
        if kept is not None and kept[0] is pod:
            found: list[Spread] | str = kept[1]
            return found
        other = cycle.scratch.get(f"{self.name}.{'soft' if hard else 'hard'}")
        if other is not None and other[0] is pod and isinstance(other[1], str):
            return str(other[1])
        checked = other is not None and other[0] is pod
        found = spread_constraints(
            pod, self.defaults, cycle.cluster, hard=hard, checked=checked, selectors=self._selectors
        )
        cycle.scratch[key] = (pod, found)
        return found

    def _present(self, nodes: NodeSnapshot, key: str, eligible: BoolMask | None) -> BoolMask:
        """`_present`, kept per label column while every row is eligible (the usual case)."""
        column = nodes.label(key)
        if eligible is not None:
            return _present(column.codes, eligible, len(column.values))
        kept = self._columns.get(key)
        if kept is None or kept[0] is not column:
            kept = (column, frozen(_present(column.codes, None, len(column.values))))
            self._columns[key] = kept
        return kept[1]

    # --- PreFilter / Filter ------------------------------------------------------------------

    def _state(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> _State | str:
        kept = cycle.scratch.get(self.name)
        if kept is not None and kept.pod is pod and kept.names is nodes.names:
            state: _State = kept
            return state
        found = self._constraints(cycle, pod, hard=True)
        if isinstance(found, str):
            return found
        try:
            counts = tuple(
                self._counts.per_row(cycle.cluster.counted, nodes, pod.namespace, c.selector)
                for c in found
            )
            for c in found:
                self_match(c.selector, pod)
        except SelectorError as err:
            return f"spec.topologySpreadConstraints: {err}"
        masks = _inclusion(cycle, pod, nodes, found, _all_keys(nodes, found))
        eligible = tuple(None if m is None or bool(m.all()) else m for m in masks)
        present = tuple(
            self._present(nodes, c.key, e) for c, e in zip(found, eligible, strict=True)
        )
        state = _State(pod, nodes.names, tuple(found), counts, eligible, present)
        cycle.scratch[self.name] = state
        return state

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        if not pod.pod.spec.topology_spread_constraints and not any(c.hard for c in self.defaults):
            return PreFilterResult(SKIP)  # the usual pod: no constraint of its own, soft defaults
        state = self._state(cycle, pod, nodes)
        if isinstance(state, str):
            return PreFilterResult(PodStatus.unresolvable(self.name, state))
        if not state.constraints:
            return PreFilterResult(SKIP)
        return PreFilterResult()

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        state = self._state(cycle, pod, nodes)
        if isinstance(state, str):
            none = np.zeros(nodes.size, dtype=bool)
            return FilterResult(none, (Reason(candidates, state, resolvable=False),))
        if not state.constraints:
            return FilterResult(candidates)
        index = cycle.cluster.counted
        mask = candidates
        missing = np.zeros(nodes.size, dtype=bool)
        skewed = np.zeros(nodes.size, dtype=bool)
        for i, c in enumerate(state.constraints):
            counts = overlaid(state.counts[i], nodes, index, pod.namespace, c.selector)
            codes = nodes.label(c.key).codes
            domains = len(nodes.label(c.key).values)
            eligible = state.eligible[i]
            per_domain = _domain_counts(codes, counts, eligible, domains)
            present = state.present[i]
            found = int(np.count_nonzero(present))
            minimum = int(per_domain[:domains][present].min()) if found >= c.min_domains else 0
            # Per domain, then per row: the last cell (absent codes) is never too full.
            full = per_domain + self_match(c.selector, pod) - minimum > c.max_skew
            full[domains] = False
            too_many = full.take(codes)
            if eligible is not None:  # else every row has the key
                has = codes >= 0
                missing |= mask & ~has
                mask = mask & has
            skewed |= mask & too_many
            mask = mask & ~too_many
        if not missing.any() and not skewed.any():
            return FilterResult(candidates)
        reasons = []
        if missing.any():
            reasons.append(Reason(missing, ERR_REASON_LABEL, resolvable=False))
        if skewed.any():
            reasons.append(Reason(skewed, ERR_REASON_CONSTRAINTS, resolvable=True))
        return FilterResult(mask, tuple(reasons))

    # --- Score -------------------------------------------------------------------------------

    def _distinct(self, nodes: NodeSnapshot, key: str, rows: RowIndex | None) -> int:
        """How many topology values the rows hold (absent counting as one more, as kube's
        empty value does); kept per label column for every row."""
        column = nodes.label(key)
        if rows is not None:
            picked = column.codes.take(rows) + 1
            return int(np.count_nonzero(np.bincount(picked, minlength=len(column.values) + 1)))
        kept = self._sizes.get(key)
        if kept is None or kept[0] is not column:
            codes = column.codes + 1
            size = int(np.count_nonzero(np.bincount(codes, minlength=len(column.values) + 1)))
            kept = self._sizes[key] = (column, size)
        return kept[1]

    def score(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, rows: RowIndex
    ) -> ScoreVector:
        zeros = no_scores(len(rows))  # every early answer: the plugin adds nothing
        if len(rows) == 0:
            return zeros
        found = self._constraints(cycle, pod, hard=False)
        if isinstance(found, str) or not found:
            return zeros  # kube's PreScore says Skip: the plugin adds nothing
        require_all = bool(pod.pod.spec.topology_spread_constraints) or not self.system_defaulted
        index = cycle.cluster.counted
        try:
            counts = [self._counts.per_row(index, nodes, pod.namespace, c.selector) for c in found]
        except SelectorError:
            return zeros
        every = len(rows) == nodes.size  # the engine's rows are ascending: then every row
        keyed = _all_keys(nodes, found) if require_all else None
        scored = None if keyed is None else (keyed if every else keyed.take(rows))
        if scored is not None and bool(scored.all()):
            scored = None
        if scored is not None and not scored.any():
            return zeros
        considered = (
            None if scored is None and every else (rows if scored is None else rows[scored])
        )
        eligible = _inclusion(cycle, pod, nodes, found, keyed)
        raw = np.zeros(len(rows), dtype=np.float64)
        for c, per_row, included in zip(found, counts, eligible, strict=True):
            column = nodes.label(c.key)
            codes = column.codes if every else column.codes.take(rows)
            if c.key == HOSTNAME:
                size = nodes.size if considered is None else len(considered)
                mine = per_row if every else per_row.take(rows)
                part = mine * float(np.log(size + 2)) + float(c.max_skew - 1)
                part[codes < 0] = 0.0
            else:
                weight = float(np.log(self._distinct(nodes, c.key, considered) + 2))
                per_domain = _domain_counts(column.codes, per_row, included, len(column.values))
                table = per_domain * weight + float(c.max_skew - 1)
                table[-1] = 0.0  # absent codes (-1) read the last cell: no term
                part = table.take(codes)
            raw += part
        rounded = np.floor(raw + 0.5).astype(np.int64)  # Go's math.Round (non-negative)
        kept = rounded if scored is None else rounded[scored]
        top, low = int(kept.max()), int(kept.min())
        if top == 0:
            normalized = np.full(len(rows), MAX_NODE_SCORE, dtype=np.int64)
        else:
            normalized = MAX_NODE_SCORE * (top + low - rounded) // top
        if scored is not None:
            normalized[~scored] = 0
        return normalized

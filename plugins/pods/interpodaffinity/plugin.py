"""`InterPodAffinity`: kube-scheduler's inter-pod affinity and anti-affinity (PreFilter, Filter,
Score; default score weight 2).

A node passes when (in kube's order, each failure with kube's reason):

1. it has every topology key of the pod's required affinity terms and, for each term, its
   domain holds a counted pod matching *all* the terms; or no pod anywhere matches them, the
   pod matches its own terms and the node has the keys (the first pod of a self-affine group)
   — else `node(s) didn't match pod affinity rules`, unresolvable (preemption cannot create
   the pod it needs);
2. no pod matching one of its required anti-affinity terms runs in the term's domain — else
   `node(s) didn't match pod anti-affinity rules`;
3. no counted pod with a required anti-affinity term matching *this* pod runs in that term's
   domain (symmetry) — else `node(s) didn't satisfy existing pods anti-affinity rules`.
   Both anti-affinity failures are Unschedulable: removing pods (preemption) may help.

Namespaces: a term's `namespaces`, by default the pod's own, plus those whose Namespace
object's labels match `namespaceSelector` (an empty one: every namespace). The score adds, per
topology domain, the weights of the pod's preferred terms matched by the pods there (anti-
affinity negative), the existing pods' required affinity terms matching this pod times
`hardPodAffinityWeight`, and their preferred terms (unless `ignorePreferredTermsOfExistingPods`),
then normalizes over the feasible nodes to 0..100 by (score - min) / (max - min) as kube does.

**Vectorized.** PreFilter asks `_podcounts` for per-row counts of the matching pods (kept from
the pod index's change log, so a cycle costs the pods that changed since the last one) and
turns them into per-domain totals with one `np.bincount` over the label column's codes per
term; Filter is mask arithmetic on those. A hypothetical snapshot (`nodes.overlay`: preemption's
victims gone, nominated pods added) adjusts the counts by the members gone and the pods added.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from apis.pluginargs import InterPodAffinityArgs
from placement.arrays import BoolMask, RowIndex, ScoreVector
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
from plugins.pods.interpodaffinity.counts import (
    Carried,
    Conjunction,
    Counts,
    Matches,
    Tally,
    domain_totals,
    hypothetical,
)
from plugins.pods.interpodaffinity.terms import PodTerms, Term, terms_of

__all__ = [
    "ERR_REASON_AFFINITY",
    "ERR_REASON_ANTI_AFFINITY",
    "ERR_REASON_EXISTING",
    "InterPodAffinity",
]

ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
NAMESPACE = "Namespace"
Labels = Mapping[str, str]


def namespace_labels(cluster: ClusterView, terms: Iterable[Term] = ()) -> dict[str, Labels]:
    """The labels of every Namespace object the engine watches, by name; nothing unless one of
    `terms` has a namespace selector (the only reader of them all)."""
    if not any(t.namespace_requirements is not None for t in terms):
        return {}
    return {
        obj.metadata.name or "": obj.metadata.labels or {}
        for obj in cluster.objects(NAMESPACE).values()
    }


def own_labels(cluster: ClusterView, pod: PodInfo) -> Labels:
    """The labels of the pod's Namespace object (none known: no labels)."""
    found = cluster.objects(NAMESPACE).get(pod.namespace)
    return (found.metadata.labels or {}) if found is not None else {}


@dataclass
class _State:
    """What PreFilter found for one pod, for Filter on the real and hypothetical snapshots."""

    pod: PodInfo
    terms: PodTerms
    own_labels: Labels  # the labels of the pod's namespace
    affinity: Conjunction | None
    affinity_tally: Tally | None
    anti: tuple[tuple[Conjunction, Tally], ...]
    existing: tuple[tuple[Term, Tally], ...]
    base: tuple[BoolMask, BoolMask, BoolMask] | None = None
    names: tuple[str, ...] | None = None


class InterPodAffinity(PreFilter, Filter, Score, EventHandler):
    name = "InterPodAffinity"

    def __init__(self, hard_weight: int = 1, ignore_preferred_of_existing: bool = False) -> None:
        self.hard_weight = hard_weight
        self.ignore_preferred_of_existing = ignore_preferred_of_existing
        self._matches = Matches()
        self._carried = Carried()

    @classmethod
    def from_args(
        cls, args: InterPodAffinityArgs | Mapping[str, Any] | None = None
    ) -> InterPodAffinity:
        typed = args_of(InterPodAffinityArgs, args)
        return cls(typed.hard_pod_affinity_weight, typed.ignore_preferred_terms_of_existing_pods)

    # --- PreFilter ----------------------------------------------------------------------------

    def _prepare(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> _State | PodStatus:
        terms = terms_of(pod)
        if terms.problem is not None:
            return PodStatus.unresolvable(self.name, terms.problem)
        index = cycle.cluster.counted
        self._carried.update(index, nodes)
        spaces = namespace_labels(cycle.cluster, (*terms.required_affinity, *terms.required_anti))
        own = own_labels(cycle.cluster, pod)
        existing = tuple(
            (term, tally)
            for _, term, tally in self._carried.of_role("anti")
            if term.matches(pod, own)
        )
        affinity = tally = None
        if terms.required_affinity:
            affinity = Conjunction(
                tuple((t, t.namespaces_among(spaces)) for t in terms.required_affinity)
            )
            tally = self._matches.get(index, affinity, nodes)
        anti = []
        for term in terms.required_anti:
            conj = Conjunction(((term, term.namespaces_among(spaces)),))
            anti.append((conj, self._matches.get(index, conj, nodes)))
        return _State(pod, terms, own, affinity, tally, tuple(anti), existing)

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        terms = terms_of(pod)
        counted = cycle.cluster.counted
        if terms.problem is None and not terms.required and self._carried.none_carried(counted):
            return PreFilterResult(SKIP)  # what the state below would conclude, unbuilt
        state = self._prepare(cycle, pod, nodes)
        if isinstance(state, PodStatus):
            return PreFilterResult(state)
        cycle.scratch[self.name] = state
        if not state.terms.required and not any(
            _with_key(nodes, term.topology_key, tally.rows(nodes)) for term, tally in state.existing
        ):
            return PreFilterResult(SKIP)
        return PreFilterResult()

    # --- Filter -------------------------------------------------------------------------------

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        state = cycle.scratch.get(self.name)
        if not isinstance(state, _State) or state.pod is not pod:
            found = self._prepare(cycle, pod, nodes)
            if isinstance(found, PodStatus):  # reached without PreFilter
                reason = Reason(candidates, found.message, resolvable=False)
                return FilterResult(np.zeros(nodes.size, dtype=bool), (reason,))
            state = cycle.scratch[self.name] = found
        affinity, anti, existing = self._failing(state, nodes)
        no_affinity = candidates & affinity
        left = candidates & ~affinity
        no_anti = left & anti
        left &= ~anti
        no_existing = left & existing
        left &= ~existing
        reasons = tuple(
            Reason(rows, message, resolvable)
            for rows, message, resolvable in (
                (no_affinity, ERR_REASON_AFFINITY, False),
                (no_anti, ERR_REASON_ANTI_AFFINITY, True),
                (no_existing, ERR_REASON_EXISTING, True),
            )
            if rows.any()
        )
        return FilterResult(left, reasons)

    def _failing(self, state: _State, nodes: NodeSnapshot) -> tuple[BoolMask, BoolMask, BoolMask]:
        """The rows failing affinity, anti-affinity and existing pods' anti-affinity."""
        real = nodes.overlay.empty
        if real and state.base is not None and state.names is nodes.names:
            return state.base
        found = (
            self._affinity_failing(state, nodes),
            self._anti_failing(state, nodes),
            self._existing_failing(state, nodes),
        )
        if real:
            state.base, state.names = found, nodes.names
        return found

    def _affinity_failing(self, state: _State, nodes: NodeSnapshot) -> BoolMask:
        conj, tally = state.affinity, state.affinity_tally
        if conj is None or tally is None:
            return np.zeros(nodes.size, dtype=bool)
        counts = _counts(tally, nodes, conj.accepts)
        has_all = np.ones(nodes.size, dtype=bool)
        found_all = np.ones(nodes.size, dtype=bool)
        anywhere = False
        for term, _ in conj.terms:
            per_domain, has = domain_totals(nodes, term.topology_key, counts)
            has_all &= has
            found_all &= per_domain > 0
            anywhere = anywhere or bool(counts[has].any())
        if not anywhere and conj.accepts(state.pod):
            ok: BoolMask = has_all  # the first of a self-affine group: anywhere with the keys
        else:
            ok = has_all & found_all
        return ~ok

    def _anti_failing(self, state: _State, nodes: NodeSnapshot) -> BoolMask:
        failing = np.zeros(nodes.size, dtype=bool)
        for conj, tally in state.anti:
            counts = _counts(tally, nodes, conj.accepts)
            per_domain, _ = domain_totals(nodes, conj.terms[0][0].topology_key, counts)
            failing |= per_domain > 0
        return failing

    def _existing_failing(self, state: _State, nodes: NodeSnapshot) -> BoolMask:
        by_key: dict[str, Counts] = {}
        for term, tally in state.existing:
            counts = _counts(tally, nodes, _nothing)
            if term.topology_key in by_key:
                by_key[term.topology_key] = by_key[term.topology_key] + counts
            else:
                by_key[term.topology_key] = counts
        for row, info in nodes.overlay.added:  # nominated pods whose terms reject this one
            for term in terms_of(info).required_anti:
                if term.matches(state.pod, state.own_labels):
                    counts = by_key.setdefault(
                        term.topology_key, np.zeros(nodes.size, dtype=np.int64)
                    )
                    counts[row] += 1
        failing = np.zeros(nodes.size, dtype=bool)
        for key, counts in by_key.items():
            per_domain, _ = domain_totals(nodes, key, counts)
            failing |= per_domain > 0
        return failing

    # --- Score --------------------------------------------------------------------------------

    def score(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, rows: RowIndex
    ) -> ScoreVector:
        zeros = no_scores(len(rows))  # every early answer: the plugin adds nothing
        terms = terms_of(pod)
        if terms.problem is not None or (self.ignore_preferred_of_existing and not terms.preferred):
            return zeros
        index = cycle.cluster.counted
        if not terms.preferred and self._carried.none_carried(index):
            return zeros  # no term of its own, none carried by the counted pods
        self._carried.update(index, nodes)
        preferred = (*terms.preferred_affinity, *terms.preferred_anti)
        spaces = namespace_labels(cycle.cluster, (t for _, t in preferred))
        own = own_labels(cycle.cluster, pod)
        weighted: dict[str, Counts] = {}

        def add(key: str, counts: Counts, weight: int) -> None:
            if key in weighted:
                weighted[key] = weighted[key] + counts * weight
            else:
                weighted[key] = counts * weight

        for sign, preferred in ((1, terms.preferred_affinity), (-1, terms.preferred_anti)):
            for weight, term in preferred:
                conj = Conjunction(((term, term.namespaces_among(spaces)),))
                tally = self._matches.get(index, conj, nodes)
                if tally.members:
                    add(term.topology_key, tally.rows(nodes), sign * weight)
        if self.hard_weight > 0:
            for _, term, tally in self._carried.of_role("hard"):
                if term.matches(pod, own):
                    add(term.topology_key, tally.rows(nodes), self.hard_weight)
        if not self.ignore_preferred_of_existing:
            for weight, term, tally in self._carried.of_role("preferred"):
                if term.matches(pod, own):
                    add(term.topology_key, tally.rows(nodes), weight)
        if not weighted:
            return zeros
        total = np.zeros(nodes.size, dtype=np.int64)
        for key, counts in weighted.items():
            total += domain_totals(nodes, key, counts)[0]
        return normalize(total.take(rows))

    # --- events -------------------------------------------------------------------------------

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool:
        """A pod counted or uncounted somewhere, or a Namespace's labels, may satisfy a term
        (kube: assigned pod add / update / delete, namespace events)."""
        if isinstance(event, PodEvent):
            return bool(event.pod.spec.node_name)
        return isinstance(event, ObjectEvent) and event.obj.KIND == NAMESPACE


def normalize(scores: ScoreVector) -> ScoreVector:
    """kube's InterPodAffinity NormalizeScore: MaxNodeScore * (s - min) / (max - min) in
    float64, truncated; all equal gives 0."""
    if scores.size == 0:
        return scores
    low, high = int(scores.min()), int(scores.max())
    spread = high - low
    if spread <= 0:
        return np.zeros(scores.size, dtype=np.int64)
    fraction = (scores - low).astype(np.float64) / float(spread)
    out: ScoreVector = (float(MAX_NODE_SCORE) * fraction).astype(np.int64)
    return out


def _nothing(info: PodInfo) -> bool:
    del info
    return False


def _counts(tally: Tally, nodes: NodeSnapshot, accepts: Any) -> Counts:
    if nodes.overlay.empty:
        return tally.rows(nodes)
    return hypothetical(tally, nodes, accepts)


def _with_key(nodes: NodeSnapshot, key: str, counts: Counts) -> bool:
    """Some counted pod sits on a node that has the label `key`."""
    return bool(counts[nodes.label(key).codes >= 0].any())

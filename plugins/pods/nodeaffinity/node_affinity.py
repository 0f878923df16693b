"""`NodeAffinity`: `spec.nodeSelector` AND the required node affinity (terms ORed,
expressions and fields ANDed), and a score from the preferred terms.

Masks come from `placement.pods.cluster.affinity` (the hub's selector compilation) and are kept per
snapshot for each distinct selector, so the pods of one workload compile once per node event.
A selector Kubernetes would refuse (In without values, Gt with a non-integer, a matchFields key
other than metadata.name) makes the pod unresolvable with the offending field named; kube would
fail such a pod forever too, only less legibly. `addedAffinity` (plugin args, as kube's
NodeAffinityArgs) applies to every pod, reported as scheduler-enforced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from apis.core import NodeAffinity as NodeAffinitySpec
from apis.core import (
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
)
from apis.pluginargs import NodeAffinityArgs
from placement.arrays import BoolMask, RowIndex, ScoreVector
from placement.pods.cluster.affinity import NAME_FIELD, node_selector_mask, term_mask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.events import NODE_ADD_OR_UPDATE, RequeueHints
from placement.pods.framework.interface import (
    SKIP,
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
from placement.selectors import SelectorError
from plugins.pods.helper.args import args_of
from plugins.pods.helper.normalize_score import default_normalize
from plugins.pods.helper.snapshot_cache import PerSnapshot, frozen, on_rows

__all__ = [
    "ERR_REASON_CONFLICT",
    "ERR_REASON_ENFORCED",
    "ERR_REASON_POD",
    "NodeAffinity",
]

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
REQUIRED = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
ADDED_REQUIRED = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
ADDED_PREFERRED = "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"


def _requirements_key(reqs: Sequence[NodeSelectorRequirement] | None) -> tuple[Any, ...]:
    return tuple((r.key, r.operator, tuple(r.values or ())) for r in reqs or ())


def _term_key(term: NodeSelectorTerm) -> tuple[Any, ...]:
    return (_requirements_key(term.match_expressions), _requirements_key(term.match_fields))


def _required_mask(selector: NodeSelector, nodes: NodeSnapshot, path: str) -> BoolMask:
    """The ORed terms; a SelectorError names the term it came from."""
    mask = np.zeros(nodes.size, dtype=bool)
    for i, term in enumerate(selector.node_selector_terms):
        try:
            mask |= term_mask(term, nodes)
        except SelectorError as err:
            raise SelectorError(f"{path}.nodeSelectorTerms[{i}]: {err}") from None
    return mask


def _preferred_sum(
    terms: Sequence[PreferredSchedulingTerm], nodes: NodeSnapshot, path: str
) -> ScoreVector:
    total = np.zeros(nodes.size, dtype=np.int64)
    for i, term in enumerate(terms):
        if term.weight == 0:
            continue
        try:
            total += term_mask(term.preference, nodes) * term.weight
        except SelectorError as err:
            raise SelectorError(f"{path}[{i}].preference: {err}") from None
    return total


def _own(pod: PodInfo) -> tuple[NodeSelector | None, list[PreferredSchedulingTerm]]:
    """The pod's required node selector and preferred terms."""
    spec = pod.pod.spec
    node = spec.affinity.node_affinity if spec.affinity else None
    if node is None:
        return None, []
    required = node.required_during_scheduling_ignored_during_execution
    return required, node.preferred_during_scheduling_ignored_during_execution or []


def _name_narrowing(selector: NodeSelector) -> set[str] | None:
    """kube's PreFilter: when every required term pins metadata.name with In, the union of
    the names each term allows (intersected within a term); None when some term does not."""
    names: set[str] = set()
    for term in selector.node_selector_terms:
        allowed: set[str] | None = None
        for req in term.match_fields or ():
            if req.key == NAME_FIELD and req.operator == "In":
                values = set(req.values or ())
                allowed = values if allowed is None else allowed & values
        if allowed is None:
            return None
        names |= allowed
    return names


class NodeAffinity(PreFilter, Filter, Score, RequeueHints):
    name = "NodeAffinity"
    requeue_on = frozenset({NODE_ADD_OR_UPDATE})
    """kube registers node events only: freed room does not help a pod this plugin rejected."""

    def __init__(self, added: NodeAffinitySpec | None = None) -> None:
        self.added = added
        self._cache: PerSnapshot[None] = PerSnapshot(lambda nodes: nodes.labels, lambda _: None)

    @classmethod
    def from_args(cls, args: NodeAffinityArgs | Mapping[str, Any] | None = None) -> NodeAffinity:
        return cls(args_of(NodeAffinityArgs, args).added_affinity)

    # --- masks, cached per snapshot and selector ----------------------------------------------

    def _memo(self, nodes: NodeSnapshot, key: Any, build: Any) -> Any:
        self._cache.get(nodes)
        memo = self._cache.memo
        if key not in memo:
            try:
                value = build()
                memo[key] = frozen(value) if isinstance(value, np.ndarray) else value
            except SelectorError as err:
                memo[key] = str(err)
        return memo[key]

    def _pod_required(self, pod: PodInfo, nodes: NodeSnapshot) -> BoolMask | str | None:
        required, _ = _own(pod)
        selector = pod.pod.spec.node_selector or {}
        if not selector and required is None:
            return None
        key = (
            "pod",
            tuple(sorted(selector.items())),
            tuple(_term_key(t) for t in required.node_selector_terms) if required else None,
        )

        def build() -> BoolMask:
            mask = node_selector_mask(selector, nodes)
            if required is not None:
                mask &= _required_mask(required, nodes, REQUIRED)
            return mask

        result: BoolMask | str = self._memo(nodes, key, build)
        return result

    def _enforced(self, nodes: NodeSnapshot) -> BoolMask | str | None:
        required = (
            self.added.required_during_scheduling_ignored_during_execution if self.added else None
        )
        if required is None:
            return None
        result: BoolMask | str = self._memo(
            nodes, ("added",), lambda: _required_mask(required, nodes, ADDED_REQUIRED)
        )
        return result

    def _preferred(self, pod: PodInfo, nodes: NodeSnapshot) -> ScoreVector | str | None:
        _, own = _own(pod)
        added = (
            self.added.preferred_during_scheduling_ignored_during_execution if self.added else None
        ) or []
        if not own and not added:
            return None
        key = ("preferred", tuple((t.weight, _term_key(t.preference)) for t in own))

        def build() -> ScoreVector:
            total = _preferred_sum(own, nodes, PREFERRED)
            if added:
                total += _preferred_sum(added, nodes, ADDED_PREFERRED)
            return total

        result: ScoreVector | str = self._memo(nodes, key, build)
        return result

    # --- extension points ---------------------------------------------------------------------

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        enforced = self._enforced(nodes)
        for found in (enforced, self._pod_required(pod, nodes), self._preferred(pod, nodes)):
            if isinstance(found, str):
                return PreFilterResult(PodStatus.unresolvable(self.name, found))
        required, _ = _own(pod)
        if not pod.pod.spec.node_selector and required is None and enforced is None:
            return PreFilterResult(SKIP)
        names = _name_narrowing(required) if required is not None else None
        if names is None:
            return PreFilterResult()
        if not names:
            return PreFilterResult(PodStatus.unresolvable(self.name, ERR_REASON_CONFLICT))
        only = np.zeros(nodes.size, dtype=bool)
        for name in names:
            row = nodes.row_of(name)
            if row is not None:
                only[row] = True
        return PreFilterResult(nodes=only)

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        reasons: list[Reason] = []
        mask = candidates
        for found, message in (
            (self._enforced(nodes), ERR_REASON_ENFORCED),
            (self._pod_required(pod, nodes), ERR_REASON_POD),
        ):
            if found is None:
                continue
            if isinstance(found, str):  # reached without PreFilter
                removed = mask
                return FilterResult(
                    np.zeros(nodes.size, dtype=bool),
                    (*reasons, Reason(removed, found, resolvable=False)),
                )
            removed = mask & ~found
            if removed.any():
                reasons.append(Reason(removed, message, resolvable=False))
                mask = mask & found
        return FilterResult(mask, tuple(reasons))

    def score(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, rows: RowIndex
    ) -> ScoreVector:
        found = self._preferred(pod, nodes)
        if found is None or isinstance(found, str):
            return no_scores(len(rows))  # no preferred term: Skip
        return default_normalize(on_rows(found, rows, nodes.size), reverse=False)

"""PodDisruptionBudgets in preemption, as kube-scheduler v1.36 reads them.

A budget's `status.disruptionsAllowed` (what kube's disruption controller computed; `scheduler
simulate` computes it, `placement.pods.status.disruption`) is how many of its pods may still go.
Preemption asks, for a node's potential victims taken most important first, which of them would
take a budget below zero (`split_by_budgets`): a budget counts one disruption per matching pod
(in its namespace, matched by its selector; an empty or absent selector matches nothing, an
invalid one nothing either; a pod without labels matches none), except a pod already listed in
the budget's `status.disruptedPods` (the API server has counted it). A pod is *violating* when
some budget it matches goes below zero with it.

kube reprieves the violating victims first, then the others (each group most important first),
and counts the violating victims it could not reprieve; among candidate nodes, the fewest such
violations wins before every other criterion (`victims.pick_candidate`).

With no budget in the cluster nothing here runs: `budgets_of` returns an empty tuple and the
preemptor keeps its array path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from apis.meta import KubeObject, LabelSelector
from apis.policy import PodDisruptionBudget
from placement.pods.framework.interface import PodInfo
from placement.pods.framework.views import ClusterView
from placement.selectors import SelectorError, labels_match

__all__ = ["BUDGET_KIND", "Budget", "budgets_of", "split_by_budgets"]

BUDGET_KIND = "PodDisruptionBudget"


@dataclass(frozen=True)
class Budget:
    """What preemption reads of one PodDisruptionBudget."""

    namespace: str
    selector: LabelSelector
    allowed: int
    disrupted: frozenset[str]

    def matches(self, pod: PodInfo) -> bool:
        if pod.namespace != self.namespace or pod.pod.metadata.name in self.disrupted:
            return False
        try:
            return labels_match(self.selector, pod.labels)
        except SelectorError:
            return False  # an invalid selector matches no pod


def _budget(obj: KubeObject) -> Budget | None:
    if not isinstance(obj, PodDisruptionBudget) or obj.spec is None:
        return None
    selector = obj.spec.selector
    if selector is None or not (selector.match_labels or selector.match_expressions):
        return None  # kube: a nil or empty selector matches nothing
    status = obj.status
    return Budget(
        namespace=obj.namespace or "",
        selector=selector,
        allowed=obj.disruptions_allowed,
        disrupted=frozenset((status.disrupted_pods or {}) if status else ()),
    )


_CACHE: dict[int, tuple[KubeObject, Budget | None]] = {}


def budgets_of(cluster: ClusterView) -> tuple[Budget, ...]:
    """The cluster's budgets that can match a pod (none: an empty tuple, at once)."""
    objects: Mapping[str, KubeObject] = cluster.objects(BUDGET_KIND)
    if not objects:
        return ()
    out: list[Budget] = []
    for key in sorted(objects):
        obj = objects[key]
        cached = _CACHE.get(id(obj))
        if cached is None or cached[0] is not obj:
            if len(_CACHE) > 10_000:
                _CACHE.clear()
            cached = _CACHE[id(obj)] = (obj, _budget(obj))
        if cached[1] is not None:
            out.append(cached[1])
    return tuple(out)


def split_by_budgets(
    pods: Sequence[PodInfo], budgets: Sequence[Budget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """(violating, non-violating), each in the order of `pods` (kube's
    filterPodsWithPDBViolation: budgets are spent by the pods in that order)."""
    left = [b.allowed for b in budgets]
    violating: list[PodInfo] = []
    others: list[PodInfo] = []
    for pod in pods:
        violated = False
        if pod.labels:
            for i, budget in enumerate(budgets):
                if budget.matches(pod):
                    left[i] -= 1
                    violated = violated or left[i] < 0
        (violating if violated else others).append(pod)
    return violating, others

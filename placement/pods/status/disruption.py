"""A PodDisruptionBudget's status as kube's disruption controller computes it, for `scheduler
simulate` (on a cluster, kube-controller-manager writes it and `scheduler run` reads it).

* **Pods**: those of the budget's namespace its selector matches (an absent selector matches
  none, an empty one every pod; the scheduler's own reading differs:
  `placement.pods.preemption.disruption`).
* **Expected pods and desired healthy**: with `maxUnavailable`, or a percentage `minAvailable`,
  the expected count is the sum of the scales of the pods' controllers (each counted once: a
  Deployment's replicas for its ReplicaSet's pods, a ReplicaSet's, a StatefulSet's); desired
  healthy is expected minus `maxUnavailable` (a percentage rounded up), at least 0, or
  `minAvailable` of expected rounded up. With an integer `minAvailable` the expected count is
  the number of matching pods and desired healthy is `minAvailable`. A pod without a
  controller does not count (kube warns `UnmanagedPods`); a pod whose controller has no scale
  (a Job) fails the computation: `disruptionsAllowed` 0 and the `SyncFailed` condition.
* **Current healthy**: matching pods not being deleted and ready (Ready, or Running when they
  carry no Ready condition: the simulated kubelet starts pods at once).
* **Disruptions allowed**: healthy minus desired, 0 when negative or nothing is expected; the
  `DisruptionAllowed` condition says `SufficientPods` or `InsufficientPods`.

A victim the simulation evicts is being deleted at once, so the next computation counts it out
and the budget's allowance drops, as on a cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from apis.core import Pod
from apis.meta import KubeObject, format_time
from apis.policy import PodDisruptionBudget, scaled_value
from placement.pods.status.rule import StatusEvent, StatusOutcome, StatusWorld
from placement.selectors import SelectorError, labels_match

__all__ = ["SCALED_KINDS", "DisruptionBudgetStatusRule", "workload_scale"]

ScaleOf = Callable[[str], int | None]
"""A controller's uid → its scale (None: no controller with a scale has that uid)."""

_CONDITION = "DisruptionAllowed"


def _selects(budget: PodDisruptionBudget, pod: Pod) -> bool:
    selector = budget.spec.selector if budget.spec else None
    if selector is None or pod.metadata.namespace != budget.namespace:
        return False
    try:
        return labels_match(selector, pod.metadata.labels or {})
    except SelectorError:
        return False


def _controller_uid(pod: Pod) -> str | None:
    for ref in pod.metadata.owner_references or []:
        if ref.controller:
            return ref.uid
    return None


def _ready(pod: Pod) -> bool:
    status = pod.status
    if status is None:
        return False
    for cond in status.conditions or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return status.phase == "Running"


class DisruptionBudgetStatusRule:
    """The disruption controller's status of a PodDisruptionBudget (see the module docstring)."""

    kind = "PodDisruptionBudget"
    watches_nodes = False
    couples_objects = False

    def __init__(self, scale_of: ScaleOf) -> None:
        self._scale_of = scale_of

    def affected(self, pod: Pod, objects: Mapping[str, KubeObject]) -> Iterable[str]:
        return [
            key
            for key, obj in objects.items()
            if isinstance(obj, PodDisruptionBudget) and _selects(obj, pod)
        ]

    def compute(self, obj: KubeObject, world: StatusWorld, now: datetime) -> StatusOutcome:
        if not isinstance(obj, PodDisruptionBudget):
            return StatusOutcome(None)
        pods = [p for p in world.pods_in(obj.namespace or "") if _selects(obj, p)]
        notices: list[StatusEvent] = []
        if not pods:
            notices.append(StatusEvent("Normal", "NoPods", "No matching pods found"))
        try:
            expected, desired = self._expected(obj, pods)
        except ValueError as err:
            message = f"Failed to calculate the number of expected pods: {err}"
            notices.append(StatusEvent("Warning", "CalculateExpectedPodCountFailed", message))
            return StatusOutcome(self._failed(obj, str(err), now), notices=tuple(notices))
        healthy = sum(1 for p in pods if p.metadata.deletion_timestamp is None and _ready(p))
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        status: dict[str, Any] = {
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
        }
        if obj.metadata.generation is not None:
            status["observedGeneration"] = obj.metadata.generation
        reason = "SufficientPods" if allowed > 0 else "InsufficientPods"
        status["conditions"] = [
            self._condition(obj, "True" if allowed > 0 else "False", reason, "", now)
        ]
        return StatusOutcome(status, notices=tuple(notices))

    def _expected(self, budget: PodDisruptionBudget, pods: list[Pod]) -> tuple[int, int]:
        spec = budget.spec
        assert spec is not None
        if spec.max_unavailable is not None:
            expected = self._scale(pods)
            desired = expected - scaled_value(spec.max_unavailable, expected, True)
            return expected, max(desired, 0)
        if isinstance(spec.min_available, int):
            return len(pods), spec.min_available
        if isinstance(spec.min_available, str):
            expected = self._scale(pods)
            return expected, scaled_value(spec.min_available, expected, True)
        return 0, 0

    def _scale(self, pods: list[Pod]) -> int:
        scales: dict[str, int] = {}
        for pod in pods:
            uid = _controller_uid(pod)
            if uid is None or uid in scales:
                continue  # unmanaged pods do not count
            scale = self._scale_of(uid)
            if scale is None:
                raise ValueError(f'found no controllers for pod "{pod.metadata.name}"')
            scales[uid] = scale
        return sum(scales.values())

    def _failed(self, budget: PodDisruptionBudget, message: str, now: datetime) -> dict[str, Any]:
        status = budget.status.to_wire() if budget.status else {}
        status["disruptionsAllowed"] = 0
        status["conditions"] = [self._condition(budget, "False", "SyncFailed", message, now)]
        return status

    @staticmethod
    def _condition(
        budget: PodDisruptionBudget, state: str, reason: str, message: str, now: datetime
    ) -> dict[str, Any]:
        """The DisruptionAllowed condition, its transition time kept while it holds."""
        since = format_time(now)
        for cond in (budget.status.conditions if budget.status else None) or ():
            if cond.get("type") == _CONDITION and cond.get("status") == state:
                since = cond.get("lastTransitionTime") or since
        condition: dict[str, Any] = {
            "type": _CONDITION,
            "status": state,
            "reason": reason,
            "message": message,
            "lastTransitionTime": since,
        }
        if budget.metadata.generation is not None:
            condition["observedGeneration"] = budget.metadata.generation
        return condition


SCALED_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController")
"""The controllers whose scale the disruption controller finds (a Job has none)."""


def workload_scale(obj: KubeObject) -> int | None:
    """A workload's `spec.replicas` (1 when unset) if it is a controller with a scale."""
    if obj.KIND not in SCALED_KINDS:
        return None
    replicas = getattr(getattr(obj, "spec", None), "replicas", None)
    return 1 if replicas is None else int(replicas)

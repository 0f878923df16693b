"""The merge patches the pod scheduler's executor (`controllers.addons.executor`) sends to a
pod's status: the PodScheduled condition and nominated node a `PatchPodStatus` decides, and a
preemption victim's DisruptionTarget condition."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from apis.core import Pod
from apis.meta import format_time
from placement.pods.framework.events import PatchPodStatus, PodCondition

__all__ = ["POD_SCHEDULED", "disruption_patch", "pod_status_patch"]

POD_SCHEDULED = "PodScheduled"


def _condition_changed(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    if old is None:
        return True
    if any(old.get(k) != new.get(k) for k in ("status", "reason", "message")):
        return True
    generation = new.get("observedGeneration")  # a newer pod spec: the condition is restated
    return generation is not None and old.get("observedGeneration") != generation


def _observed(pod: Pod | None) -> dict[str, Any]:
    """`observedGeneration` for a condition about `pod`: its generation, as kube-scheduler 1.36
    writes it (PodObservedGenerationTracking); nothing when the server keeps none."""
    generation = pod.metadata.generation if pod is not None else None
    return {"observedGeneration": generation} if generation is not None else {}


def pod_status_patch(pod: Pod | None, action: PatchPodStatus, now: datetime) -> dict[str, Any]:
    """The merge patch that makes `pod`'s status say what `action` decides; {} when it already
    does. `lastTransitionTime` moves only when the condition's status changes, as Kubernetes
    keeps it; `lastProbeTime` is null and `observedGeneration` the pod's generation, as
    kube-scheduler writes them."""
    status: dict[str, Any] = {}
    current = pod.status if pod is not None else None
    if action.nominated_node is not None:
        have = (current.nominated_node_name if current else None) or ""
        if have != action.nominated_node:
            # A merge patch removes a field with null.
            status["nominatedNodeName"] = action.nominated_node or None
    if action.condition is not None:
        conditions = [dict(c) for c in ((current.conditions if current else None) or [])]
        old = next((c for c in conditions if c.get("type") == POD_SCHEDULED), None)
        wanted = {**action.condition, **_observed(pod)}
        if _condition_changed(old, wanted):
            new = {"type": POD_SCHEDULED, "lastProbeTime": None, **wanted}
            if old is not None and old.get("status") == new.get("status"):
                new.setdefault("lastTransitionTime", old.get("lastTransitionTime"))
            else:
                new.setdefault("lastTransitionTime", format_time(now))
            kept = [c for c in conditions if c.get("type") != POD_SCHEDULED]
            status["conditions"] = [*kept, new]
    return {"status": status} if status else {}


def disruption_patch(victim: Pod, condition: PodCondition, now: datetime) -> dict[str, Any]:
    """The merge patch that gives a preemption victim the condition the engine decided (its
    `DeletePod.condition`), every other condition kept; {} when it carries that condition
    already. Only `lastTransitionTime` is this shell's: the time of the write, or the old one
    when the status does not change."""
    new: dict[str, Any] = {**condition.to_wire(), **_observed(victim)}
    conditions = [dict(c) for c in ((victim.status.conditions if victim.status else None) or [])]
    old = next((c for c in conditions if c.get("type") == condition.type), None)
    if not _condition_changed(old, new):
        return {}
    if old is not None and old.get("status") == new["status"]:
        new["lastTransitionTime"] = old.get("lastTransitionTime")
    else:
        new["lastTransitionTime"] = format_time(now)
    kept = [c for c in conditions if c.get("type") != condition.type]
    return {"status": {"conditions": [*kept, {"lastProbeTime": None, **new}]}}

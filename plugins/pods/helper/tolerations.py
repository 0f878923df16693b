"""Toleration matching exactly as Kubernetes' `Toleration.ToleratesTaint`.

A toleration matches a taint when its effect is empty or equal, its key is empty or equal,
and its operator is Exists, or Equal (also the empty operator) with an equal value. An empty
key with Exists therefore tolerates every taint. Tolerations are read once per pod into plain
tuples, which also serve as the key of the per-snapshot caches.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from apis.core import Pod
from placement.pods.cluster.nodes import Taint
from placement.pods.framework.interface import PodCycle, PodInfo

__all__ = ["HARD_EFFECTS", "Tol", "cycle_tolerations", "pod_tolerations", "tolerated", "tolerates"]

HARD_EFFECTS = ("NoSchedule", "NoExecute")
"""The taint effects that keep an untolerating pod off a node (PreferNoSchedule only scores)."""

_SCRATCH = "tolerations"  # PodCycle.scratch key: (the pod, its tolerations)


class Tol(NamedTuple):
    key: str
    operator: str
    value: str
    effect: str


def pod_tolerations(pod: Pod) -> tuple[Tol, ...]:
    """The pod's tolerations as hashable tuples (empty strings for missing fields)."""
    return tuple(
        Tol(t.key or "", t.operator or "", t.value or "", t.effect or "")
        for t in pod.spec.tolerations or ()
    )


def cycle_tolerations(cycle: PodCycle, pod: PodInfo) -> tuple[Tol, ...]:
    """`pod_tolerations`, read once per scheduling cycle (NodeUnschedulable and
    TaintToleration's filter and score all ask) and kept in the cycle's scratch."""
    kept = cycle.scratch.get(_SCRATCH)
    if kept is not None and kept[0] is pod:
        tols: tuple[Tol, ...] = kept[1]
        return tols
    tols = pod_tolerations(pod.pod)
    cycle.scratch[_SCRATCH] = (pod, tols)
    return tols


def tolerates(tol: Tol, taint: Taint) -> bool:
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    if tol.operator in ("", "Equal"):
        return tol.value == taint.value
    return tol.operator == "Exists"  # any other operator never matches


def tolerated(tols: Iterable[Tol], taint: Taint) -> bool:
    """Whether any of the tolerations matches the taint."""
    return any(tolerates(tol, taint) for tol in tols)

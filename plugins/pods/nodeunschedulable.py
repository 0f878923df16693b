"""`NodeUnschedulable`: cordoned nodes (`spec.unschedulable`) take no new pods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placement.arrays import BoolMask
from placement.pods.framework import FilterResult, PodCycle, PodInfo, Reason
from placement.pods.nodes import NodeSnapshot, Taint
from plugins.pods._shared import check_fields
from plugins.pods.tolerations import pod_tolerations, tolerated

__all__ = ["ERR_REASON_UNSCHEDULABLE", "UNSCHEDULABLE_TAINT", "NodeUnschedulable"]

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
"""The taint a pod must tolerate to land on a cordoned node (DaemonSet pods do)."""


class NodeUnschedulable:
    """Unresolvable: evicting pods does not uncordon a node."""

    name = "NodeUnschedulable"

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> NodeUnschedulable:
        check_fields(args, ())
        return cls()

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        cordoned = nodes.unschedulable
        if not cordoned.any() or tolerated(pod_tolerations(pod.pod), UNSCHEDULABLE_TAINT):
            return FilterResult(candidates)
        removed = candidates & cordoned
        return FilterResult(
            candidates & ~cordoned,
            (Reason(removed, ERR_REASON_UNSCHEDULABLE, resolvable=False),),
        )

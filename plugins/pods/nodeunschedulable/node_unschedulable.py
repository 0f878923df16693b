"""`NodeUnschedulable`: cordoned nodes (`spec.unschedulable`) take no new pods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apis.pluginargs import NoArgs
from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot, Taint
from placement.pods.framework.events import NODE_ADD_OR_UPDATE, RequeueHints
from placement.pods.framework.interface import Filter, FilterResult, PodCycle, PodInfo, Reason
from plugins.pods.helper.args import args_of
from plugins.pods.helper.snapshot_cache import PerSnapshot, frozen
from plugins.pods.helper.tolerations import cycle_tolerations, tolerated

__all__ = ["ERR_REASON_UNSCHEDULABLE", "UNSCHEDULABLE_TAINT", "NodeUnschedulable"]

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
"""The taint a pod must tolerate to land on a cordoned node (DaemonSet pods do)."""


class NodeUnschedulable(Filter, RequeueHints):
    """Unresolvable: evicting pods does not uncordon a node."""

    name = "NodeUnschedulable"
    requeue_on = frozenset({NODE_ADD_OR_UPDATE})
    """kube registers node events only: freed room does not help a pod this plugin rejected."""

    @classmethod
    def from_args(cls, args: NoArgs | Mapping[str, Any] | None = None) -> NodeUnschedulable:
        args_of(NoArgs, args)  # no args: any field is refused
        return cls()

    def __init__(self) -> None:
        # The cordoned rows and their complement, per `unschedulable` array (a snapshot keeps
        # it until a node event): a pod then costs one mask operation, not three.
        self._cordoned = PerSnapshot(lambda nodes: nodes.unschedulable, _cordoned)

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        found = self._cordoned.get(nodes)
        if found is None or tolerated(cycle_tolerations(cycle, pod), UNSCHEDULABLE_TAINT):
            return FilterResult(candidates)
        cordoned, open_ = found

        def explain() -> tuple[Reason, ...]:
            return (Reason(candidates & cordoned, ERR_REASON_UNSCHEDULABLE, resolvable=False),)

        return FilterResult(candidates & open_, explain=explain)


def _cordoned(nodes: NodeSnapshot) -> tuple[BoolMask, BoolMask] | None:
    """(cordoned rows, the others), None when no node is cordoned."""
    cordoned = nodes.unschedulable
    if not cordoned.any():
        return None
    return cordoned, frozen(~cordoned)

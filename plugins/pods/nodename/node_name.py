"""`NodeName`: a pod that names its node (`spec.nodeName`) fits that node only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from apis.pluginargs import NoArgs
from placement.arrays import BoolMask
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
)
from plugins.pods.helper.args import args_of

__all__ = ["ERR_REASON_NODE_NAME", "NodeName"]

ERR_REASON_NODE_NAME = "node(s) didn't match the requested node name"


class NodeName(PreFilter, Filter, RequeueHints):
    """PreFilter narrows the cycle to the named node's row, so no other node is even looked
    at; Filter repeats the check for callers that filter without PreFilter. A name no node
    has is unresolvable at PreFilter (kube finds no node either; preemption cannot help)."""

    name = "NodeName"
    requeue_on = frozenset({NODE_ADD_OR_UPDATE})
    """kube registers node events only: freed room does not help a pod this plugin rejected."""

    @classmethod
    def from_args(cls, args: NoArgs | Mapping[str, Any] | None = None) -> NodeName:
        args_of(NoArgs, args)  # no args: any field is refused
        return cls()

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        wanted = pod.pod.spec.node_name
        if not wanted:
            return PreFilterResult(SKIP)
        only = np.zeros(nodes.size, dtype=bool)
        row = nodes.row_of(wanted)
        if row is None:
            return PreFilterResult(PodStatus.unresolvable(self.name, ERR_REASON_NODE_NAME), only)
        only[row] = True
        return PreFilterResult(nodes=only)

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        wanted = pod.pod.spec.node_name
        if not wanted:
            return FilterResult(candidates)
        only = np.zeros(nodes.size, dtype=bool)
        row = nodes.row_of(wanted)
        if row is not None:
            only[row] = True

        def explain() -> tuple[Reason, ...]:
            removed = candidates & ~only
            return (Reason(removed, ERR_REASON_NODE_NAME, resolvable=False),)

        return FilterResult(candidates & only, explain=explain)

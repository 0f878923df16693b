"""`DefaultPreemption`: kube-scheduler's PostFilter, which makes room for a pod of higher
priority by deleting pods of lower priority on one node (`placement.pods.preemption.preemption`).

Args, as kube-scheduler's DefaultPreemptionArgs: `minCandidateNodesPercentage` (0..100, default
10) and `minCandidateNodesAbsolute` (>= 0, default 100) bound how many candidate nodes are
examined in detail; both 0 is refused, as kube refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apis.pluginargs import DefaultPreemptionArgs
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.interface import (
    Diagnosis,
    PodCycle,
    PodInfo,
    PostFilter,
    PostFilterResult,
)
from placement.pods.preemption.preemption import (
    MIN_CANDIDATE_NODES_ABSOLUTE,
    MIN_CANDIDATE_NODES_PERCENTAGE,
    Preemptor,
)
from plugins.pods.helper.args import args_of

__all__ = ["DefaultPreemption"]


class DefaultPreemption(PostFilter):
    name = "DefaultPreemption"

    def __init__(
        self,
        min_candidate_percentage: int = MIN_CANDIDATE_NODES_PERCENTAGE,
        min_candidate_absolute: int = MIN_CANDIDATE_NODES_ABSOLUTE,
    ) -> None:
        self.preemptor = Preemptor(
            self.name,
            min_candidate_percentage=min_candidate_percentage,
            min_candidate_absolute=min_candidate_absolute,
        )

    @classmethod
    def from_args(
        cls, args: DefaultPreemptionArgs | Mapping[str, Any] | None = None
    ) -> DefaultPreemption:
        typed = args_of(DefaultPreemptionArgs, args)
        return cls(typed.min_candidate_nodes_percentage, typed.min_candidate_nodes_absolute)

    def post_filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> PostFilterResult:
        return self.preemptor.preempt(cycle, pod, nodes, diagnosis)

"""`DefaultPreemption`: kube-scheduler's PostFilter, which makes room for a pod of higher
priority by deleting pods of lower priority on one node (`placement.pods.preemption`).

Args, as kube-scheduler's DefaultPreemptionArgs: `minCandidateNodesPercentage` (0..100, default
10) and `minCandidateNodesAbsolute` (>= 0, default 100) bound how many candidate nodes are
examined in detail; both 0 is refused, as kube refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placement.pods.framework import Diagnosis, PodCycle, PodInfo, PostFilter, PostFilterResult
from placement.pods.nodes import NodeSnapshot
from placement.pods.preemption import (
    MIN_CANDIDATE_NODES_ABSOLUTE,
    MIN_CANDIDATE_NODES_PERCENTAGE,
    Preemptor,
)
from plugins.pods._shared import check_fields

__all__ = ["DefaultPreemption"]


def _int(args: Mapping[str, Any], field: str, default: int, top: int | None) -> int:
    value = args.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{field}: must be an integer (got {value!r})")
    if value < 0 or (top is not None and value > top):
        bound = f"between 0 and {top}" if top is not None else "at least 0"
        raise ValueError(f"{field}: must be {bound} (got {value})")
    return value


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
    def from_args(cls, args: Mapping[str, Any]) -> DefaultPreemption:
        check_fields(args, ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"))
        percentage = _int(args, "minCandidateNodesPercentage", MIN_CANDIDATE_NODES_PERCENTAGE, 100)
        absolute = _int(args, "minCandidateNodesAbsolute", MIN_CANDIDATE_NODES_ABSOLUTE, None)
        if percentage == 0 and absolute == 0:
            raise ValueError(
                "minCandidateNodesAbsolute: cannot be zero at the same time as "
                "minCandidateNodesPercentage"
            )
        return cls(percentage, absolute)

    def post_filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> PostFilterResult:
        return self.preemptor.preempt(cycle, pod, nodes, diagnosis)

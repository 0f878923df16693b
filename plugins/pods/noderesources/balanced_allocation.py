"""`NodeResourcesBalancedAllocation`: prefer nodes whose resources would be used evenly.

kube-scheduler's formula: per node, the fraction requested/allocatable (with the pod, capped
at 1) of each configured resource the node has; the score is (1 - std) · 100 truncated, where
std is |f1 - f2| / 2 for two fractions, the population standard deviation for more, 0 for
fewer. Unlike NodeResourcesFit it counts what pods really request (no non-zero defaults), and
a pod requesting none of the resources is not scored at all (kube's PreScore Skip since 1.33:
best-effort pods would otherwise all pile onto one node).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from apis.pluginargs import NodeResourcesBalancedAllocationArgs
from placement.arrays import RowIndex, ScoreVector
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.interface import MAX_NODE_SCORE, PodCycle, PodInfo, Score
from placement.pods.framework.noscore import no_scores
from plugins.pods.helper.args import args_of
from plugins.pods.helper.snapshot_cache import on_rows
from plugins.pods.noderesources.resource_allocation import (
    DEFAULT_RESOURCES,
    Pair,
    ResourceSpec,
    RowPair,
    pairs,
    row_pairs,
    shape_key,
)
from plugins.pods.noderesources.row_cache import RowCache

__all__ = ["NodeResourcesBalancedAllocation", "balanced_row", "balanced_score"]

FloatMatrix = npt.NDArray[np.float64]


def balanced_score(found: list[Pair], size: int) -> ScoreVector:
    """(1 - std of the capped fractions) · 100 per node, in float64 as Go computes it."""
    if not found:
        return np.full(size, MAX_NODE_SCORE, dtype=np.int64)
    if len(found) == 2 and all(bool((p.allocatable > 0).all()) for p in found):
        # The common case, every node has both: |f1 - f2| / 2 without masks.
        f1, f2 = (np.minimum(p.requested / p.allocatable, 1.0) for p in found)
        fast: ScoreVector = ((1 - np.abs(f1 - f2) / 2) * float(MAX_NODE_SCORE)).astype(np.int64)
        return fast
    has = np.stack([p.allocatable > 0 for p in found])
    fractions: FloatMatrix = np.stack(
        [
            np.minimum(p.requested.astype(np.float64) / np.maximum(p.allocatable, 1), 1.0)
            for p in found
        ]
    )
    fractions = np.where(has, fractions, 0.0)
    count = has.sum(axis=0)
    # Two fractions: |f1 - f2| / 2 exactly as Go (a square root would differ in the last bit
    # and move a truncated score by one).
    two = (
        np.where(has, fractions, -np.inf).max(axis=0) - np.where(has, fractions, np.inf).min(axis=0)
    ) / 2
    std = np.where(count == 2, two, 0.0)
    if len(found) > 2:
        mean = fractions.sum(axis=0) / np.maximum(count, 1)
        spread = (np.where(has, fractions - mean, 0.0) ** 2).sum(axis=0)
        std = np.where(count > 2, np.sqrt(spread / np.maximum(count, 1)), std)
    out: ScoreVector = ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
    return out


def balanced_row(pairs_: Sequence[RowPair]) -> int:
    """`balanced_score` for one node in Python floats, operation for operation (IEEE doubles
    round alike in numpy and Python, so both give the same integer)."""
    fractions = [
        min(float(requested) / float(allocatable), 1.0)
        for _, allocatable, requested in pairs_
        if allocatable > 0
    ]
    if len(fractions) == 2:
        std = abs(fractions[0] - fractions[1]) / 2
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * float(MAX_NODE_SCORE))


class NodeResourcesBalancedAllocation(Score):
    name = "NodeResourcesBalancedAllocation"

    def __init__(self, resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES) -> None:
        self.resources = resources
        self._scores = RowCache()

    @classmethod
    def from_args(
        cls, args: NodeResourcesBalancedAllocationArgs | Mapping[str, Any] | None = None
    ) -> NodeResourcesBalancedAllocation:
        typed = args_of(NodeResourcesBalancedAllocationArgs, args)
        return cls(tuple(ResourceSpec(r.name, r.weight) for r in typed.resources))

    def score(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, rows: RowIndex
    ) -> ScoreVector:
        if not any(pod.requests.get(spec.name, 0) for spec in self.resources):
            return no_scores(len(rows))  # best effort: Skip, no preference
        scores = self._scores.get(
            shape_key(self.resources, pod.requests),
            nodes,
            (nodes.resources, nodes.allocatable),
            lambda: balanced_score(
                pairs(nodes, self.resources, pod.requests, use_requested=True), nodes.size
            ),
            lambda changed: [
                balanced_row(row)
                for row in row_pairs(nodes, self.resources, pod.requests, True, changed)
            ],
        )
        return on_rows(scores, rows, nodes.size)

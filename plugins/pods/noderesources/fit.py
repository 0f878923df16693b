"""`NodeResourcesFit`: a node fits when what is free covers each resource the pod requests;
nodes are scored by how allocated they would be (LeastAllocated by default).

The filter follows kube-scheduler's `fitsRequest`: the `pods` slot always counts ("Too many
pods"); any other resource only when the pod requests a positive amount of it, against
allocatable - requested (a node already over-committed on a resource the pod does not ask for
still fits). One Reason per resource ("Insufficient cpu"), resolvable by preemption unless the
pod asks for more than the node's whole allocatable (kube marks those rows Unresolvable since
kubernetes#131345, after v1.33: evicting every pod would not make room). Extended resources
named in `ignoredResources`, or whose domain is in `ignoredResourceGroups`, are not checked.

Scores are kube's integer arithmetic per resource, weighted and divided by the sum of the
weights of the resources the node has (`_resources.pairs`), on NonZeroRequested.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from apis.pluginargs import NodeResourcesFitArgs
from placement.arrays import BoolMask, RowIndex, ScoreVector
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.requests import PODS
from placement.pods.framework.interface import (
    MAX_NODE_SCORE,
    Filter,
    FilterResult,
    PodCycle,
    PodInfo,
    PreFilter,
    PreFilterResult,
    Reason,
    Score,
)
from plugins.pods.helper.args import args_of
from plugins.pods.helper.shape_score import ShapePoint, broken_linear
from plugins.pods.helper.snapshot_cache import frozen, on_rows
from plugins.pods.noderesources.resource_allocation import (
    Pair,
    ResourceSpec,
    RowPair,
    is_extended,
    pairs,
    row_pairs,
    shape_key,
)
from plugins.pods.noderesources.row_cache import RowCache

__all__ = [
    "LEAST_ALLOCATED",
    "MOST_ALLOCATED",
    "REQUESTED_TO_CAPACITY_RATIO",
    "TOO_MANY_PODS",
    "NodeResourcesFit",
    "fit_args",
    "insufficient",
    "least_allocated",
    "least_allocated_row",
    "most_allocated",
    "most_allocated_row",
    "requested_to_capacity_ratio",
]

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
TOO_MANY_PODS = "Too many pods"
MAX_UTILIZATION = 100

Int64Vector = npt.NDArray[np.int64]


def insufficient(resource: str) -> str:
    return TOO_MANY_PODS if resource == PODS else f"Insufficient {resource}"


# --- scoring strategies (kube's leastResourceScorer, mostResourceScorer, ...) ------------------


def _weighted(pairs_: Sequence[Pair], per_resource: Any, size: int) -> ScoreVector:
    """Σ score·weight / Σ weight over the resources each node has (integer division); a
    resource every node has adds its weight everywhere, without a per-node vector."""
    total = np.zeros(size, dtype=np.int64)
    common = 0
    weights: Int64Vector | None = None
    for pair in pairs_:
        has = pair.allocatable > 0
        total += per_resource(pair) * pair.weight
        if has.all():
            common += pair.weight
        else:
            weights = has * pair.weight if weights is None else weights + has * pair.weight
    if weights is None:
        if common == 0:
            return total
        scaled: ScoreVector = total // common
        return scaled
    weights = weights + common
    out: ScoreVector = np.where(weights > 0, total // np.maximum(weights, 1), 0)
    return out


def least_allocated(pairs_: Sequence[Pair], size: int) -> ScoreVector:
    """(allocatable - requested) · 100 / allocatable; 0 when requested exceeds it."""

    def one(pair: Pair) -> Int64Vector:
        # 0 where requested exceeds allocatable, and where the node has none (then free <= 0)
        free = np.maximum(pair.allocatable - pair.requested, 0)
        score: Int64Vector = (free * MAX_NODE_SCORE) // np.maximum(pair.allocatable, 1)
        return score

    return _weighted(pairs_, one, size)


def most_allocated(pairs_: Sequence[Pair], size: int) -> ScoreVector:
    """requested · 100 / allocatable, requested capped at allocatable (non-zero defaults
    can push it above)."""

    def one(pair: Pair) -> Int64Vector:
        a = pair.allocatable
        r = np.minimum(pair.requested, a)  # 0 where the node has none
        score: Int64Vector = (r * MAX_NODE_SCORE) // np.maximum(a, 1)
        return score

    return _weighted(pairs_, one, size)


def least_allocated_row(pairs_: Sequence[RowPair]) -> int:
    """`least_allocated` for one node in Python ints (kube's leastRequestedScore, weighted)."""
    total = weights = 0
    for weight, allocatable, requested in pairs_:
        if allocatable <= 0:
            continue
        free = allocatable - requested
        total += (free * MAX_NODE_SCORE // allocatable if free > 0 else 0) * weight
        weights += weight
    return total // weights if weights else 0


def most_allocated_row(pairs_: Sequence[RowPair]) -> int:
    """`most_allocated` for one node in Python ints (kube's mostRequestedScore, weighted)."""
    total = weights = 0
    for weight, allocatable, requested in pairs_:
        if allocatable <= 0:
            continue
        total += min(requested, allocatable) * MAX_NODE_SCORE // allocatable * weight
        weights += weight
    return total // weights if weights else 0


def requested_to_capacity_ratio(
    pairs_: Sequence[Pair], size: int, shape: Sequence[ShapePoint]
) -> ScoreVector:
    """The shape's score at requested·100/allocatable (100 when over); resources scoring 0
    do not count, and the mean is rounded half away from zero (Go's math.Round)."""
    total = np.zeros(size, dtype=np.int64)
    weights = np.zeros(size, dtype=np.int64)
    for pair in pairs_:
        a, r = pair.allocatable, pair.requested
        has = a > 0
        utilization = np.where(r > a, MAX_UTILIZATION, (r * MAX_UTILIZATION) // np.maximum(a, 1))
        score = broken_linear(shape, utilization)
        counted = has & (score > 0)
        total += np.where(counted, score * pair.weight, 0)
        weights += counted * pair.weight
    safe = np.maximum(weights, 1)
    out: ScoreVector = np.where(weights > 0, (2 * total + safe) // (2 * safe), 0)
    return out


# --- args --------------------------------------------------------------------------------------


class FitArgs(NamedTuple):
    strategy: str
    resources: tuple[ResourceSpec, ...]
    shape: tuple[ShapePoint, ...]
    ignored: frozenset[str]
    ignored_groups: frozenset[str]


def fit_args(args: NodeResourcesFitArgs | Mapping[str, Any] | None = None) -> FitArgs:
    """The plugin's working form of its args (`apis.pluginargs.NodeResourcesFitArgs`,
    which holds kube's defaults and checks; a mapping is validated by it first)."""
    typed = args_of(NodeResourcesFitArgs, args)
    strategy = typed.scoring_strategy
    ratio = strategy.requested_to_capacity_ratio
    return FitArgs(
        strategy.type,
        tuple(ResourceSpec(r.name, r.weight) for r in strategy.resources),
        tuple(ShapePoint(p.utilization, p.score) for p in ratio.shape) if ratio else (),
        frozenset(typed.ignored_resources),
        frozenset(typed.ignored_resource_groups),
    )


parse_fit_args = fit_args
"""The former name, for callers that pass a mapping."""


# --- the plugin --------------------------------------------------------------------------------


class _Request(NamedTuple):
    """The pod's request laid out over one snapshot's resource columns (PreFilter state)."""

    resources: tuple[str, ...]  # the snapshot's columns this was laid out for
    cols: npt.NDArray[np.intp]  # the columns checked: `pods` and every positive request
    amounts: Int64Vector  # the pod's request in each of `cols`
    messages: tuple[str, ...]
    missing: tuple[str, ...]  # requested resources no node has: no node fits
    key: tuple[tuple[int, int], ...]  # (column, amount) pairs: the fit cache's key


class NodeResourcesFit(PreFilter, Filter, Score):
    name = "NodeResourcesFit"

    def __init__(self, args: FitArgs | None = None) -> None:
        self.args = args or fit_args()
        self._fits = RowCache()
        self._scores = RowCache()
        self._requests: dict[tuple[Any, ...], _Request] = {}

    @classmethod
    def from_args(
        cls, args: NodeResourcesFitArgs | Mapping[str, Any] | None = None
    ) -> NodeResourcesFit:
        return cls(fit_args(args))

    def _ignored(self, resource: str) -> bool:
        if not is_extended(resource):
            return False
        group = resource.split("/", 1)[0]
        return resource in self.args.ignored or group in self.args.ignored_groups

    def _request(self, pod: PodInfo, nodes: NodeSnapshot) -> _Request:
        """The pod's request laid out over the snapshot's columns, kept per (columns, pod
        requests): the pods of a workload share one shape."""
        key = (nodes.resources, tuple(pod.requests.items()))
        found = self._requests.get(key)
        if found is None or found.resources is not nodes.resources:  # equal is not enough
            if len(self._requests) >= _REQUESTS_LIMIT:
                self._requests.clear()
            found = self._requests[key] = self._lay_out(pod, nodes)
        return found

    def _lay_out(self, pod: PodInfo, nodes: NodeSnapshot) -> _Request:
        cols: list[int] = []
        amounts: list[int] = []
        messages: list[str] = []
        missing: list[str] = []
        for resource, value in pod.requests.items():
            if (value <= 0 and resource != PODS) or self._ignored(resource):
                continue
            col = nodes.column_of(resource)
            if col is None:
                missing.append(resource)
                continue
            cols.append(col)
            amounts.append(value)
            messages.append(insufficient(resource))
        return _Request(
            nodes.resources,
            frozen(np.array(cols, dtype=np.intp)),
            frozen(np.array(amounts, dtype=np.int64)),
            tuple(messages),
            tuple(missing),
            tuple(zip(cols, amounts, strict=True)),
        )

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        cycle.scratch[self.name] = self._request(pod, nodes)
        return PreFilterResult()

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        request = cycle.scratch.get(self.name)
        if not isinstance(request, _Request) or request.resources is not nodes.resources:
            request = self._request(pod, nodes)
            cycle.scratch[self.name] = request
        if request.missing:
            return FilterResult(
                np.zeros(nodes.size, dtype=bool),
                tuple(Reason(candidates, insufficient(r), False) for r in request.missing),
            )
        fits, fitting = self._fits.counted(
            request.key,
            nodes,
            (nodes.resources, nodes.allocatable),
            lambda: _fits(nodes, request.key),
            lambda rows: _fits_rows(nodes, request.key, rows),
        )
        if fitting == nodes.size:
            return FilterResult(candidates)  # fits everywhere: known from the count
        removed = np.greater(candidates, fits)  # candidates & ~fits
        if not removed.any():
            return FilterResult(candidates)

        def explain() -> tuple[Reason, ...]:
            # Reasons from the removed rows only: usually a few full nodes.
            at = np.flatnonzero(removed)
            if at.size > _FEW:
                return _reasons(nodes, request, at)
            return _few_reasons(nodes, request, at)

        return FilterResult(candidates & fits, explain=explain)

    def score(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, rows: RowIndex
    ) -> ScoreVector:
        specs = self.args.resources
        scores = self._scores.get(
            shape_key(specs, pod.non_zero),
            nodes,
            (nodes.resources, nodes.allocatable),
            lambda: self._score_rows(nodes, pod, None),
            lambda changed: self._score_few(nodes, pod, changed),
        )
        return on_rows(scores, rows, nodes.size)

    def _score_few(self, nodes: NodeSnapshot, pod: PodInfo, rows: list[int]) -> list[int]:
        """`_score_rows` on a few rows, in Python ints (the ratio shape: gathered rows)."""
        strategy = self.args.strategy
        if strategy == REQUESTED_TO_CAPACITY_RATIO:
            found: list[int] = self._score_rows(nodes, pod, np.array(rows, np.intp)).tolist()
            return found
        one = most_allocated_row if strategy == MOST_ALLOCATED else least_allocated_row
        return [
            one(row) for row in row_pairs(nodes, self.args.resources, pod.non_zero, False, rows)
        ]

    def _score_rows(self, nodes: NodeSnapshot, pod: PodInfo, rows: RowIndex | None) -> ScoreVector:
        found = pairs(nodes, self.args.resources, pod.non_zero, use_requested=False, rows=rows)
        size = nodes.size if rows is None else len(rows)
        if self.args.strategy == MOST_ALLOCATED:
            return most_allocated(found, size)
        if self.args.strategy == REQUESTED_TO_CAPACITY_RATIO:
            return requested_to_capacity_ratio(found, size, self.args.shape)
        return least_allocated(found, size)


_FEW = 128
"""Up to this many removed rows, their reasons are found in Python (numpy calls cost more)."""
_REQUESTS_LIMIT = 256


def _reasons(nodes: NodeSnapshot, request: _Request, at: RowIndex) -> tuple[Reason, ...]:
    """Per checked resource, the removed rows over it: unresolvable where the pod asks for more
    than the node's whole allocatable (never for the pods slot), resolvable otherwise."""
    cols, amounts = request.cols, request.amounts
    allocatable = nodes.allocatable[at][:, cols]
    over = nodes.requested[at][:, cols] + amounts > allocatable
    too_big = amounts > allocatable
    reasons: list[Reason] = []
    for j, message in enumerate(request.messages):
        hit = over[:, j]
        if not hit.any():
            continue
        if message != TOO_MANY_PODS:  # kube never calls a full node unresolvable
            big = hit & too_big[:, j]
            if big.any():
                reasons.append(Reason(_mask(nodes.size, at[big]), message, resolvable=False))
                hit = hit & ~big
                if not hit.any():
                    continue
        reasons.append(Reason(_mask(nodes.size, at[hit]), message))
    return tuple(reasons)


def _few_reasons(nodes: NodeSnapshot, request: _Request, at: RowIndex) -> tuple[Reason, ...]:
    """`_reasons` for a few rows, row by row in Python."""
    requested = nodes.requested[at].tolist()
    allocatable = nodes.allocatable[at].tolist()
    found: dict[tuple[int, bool], list[int]] = {}
    for i, row in enumerate(at.tolist()):
        for j, (col, amount) in enumerate(request.key):
            whole = allocatable[i][col]
            if requested[i][col] + amount > whole:
                resolvable = request.messages[j] == TOO_MANY_PODS or amount <= whole
                found.setdefault((j, resolvable), []).append(row)
    reasons: list[Reason] = []
    for j, message in enumerate(request.messages):
        for resolvable in (False, True):  # as `_reasons`: the unresolvable rows first
            rows = found.get((j, resolvable))
            if rows:
                reasons.append(Reason(_mask(nodes.size, np.array(rows)), message, resolvable))
    return tuple(reasons)


def _mask(size: int, rows: RowIndex) -> BoolMask:
    mask = np.zeros(size, dtype=bool)
    mask[rows] = True
    return mask


def _fits(nodes: NodeSnapshot, key: tuple[tuple[int, int], ...]) -> BoolMask:
    """Rows where requested + the pod's amount stays within allocatable on every checked
    column, one column at a time (a 2-D gather and `any(axis=1)` cost far more)."""
    fits = np.ones(nodes.size, dtype=bool)
    for col, amount in key:
        fits &= nodes.requested[:, col] + amount <= nodes.allocatable[:, col]
    return fits


def _fits_rows(
    nodes: NodeSnapshot, key: tuple[tuple[int, int], ...], rows: list[int]
) -> list[bool]:
    """`_fits` on a few rows, cell by cell in Python."""
    requested, allocatable = nodes.requested.item, nodes.allocatable.item
    out: list[bool] = []
    for row in rows:
        ok = True
        for col, amount in key:
            if requested(row, col) + amount > allocatable(row, col):
                ok = False
                break
        out.append(ok)
    return out

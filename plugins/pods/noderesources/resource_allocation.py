"""What NodeResourcesFit's scoring strategies and NodeResourcesBalancedAllocation share:
the `resources` arg, and kube-scheduler's (allocatable, requested) pair per resource and node.

Kubernetes scores a node on each configured resource with the node's allocatable and what its
pods request *including the pod being scheduled*. NodeResourcesFit counts cpu and memory as
NonZeroRequested (a container without a request counts 100m / 200Mi), BalancedAllocation as
plainly requested. A resource the node has none of is left out of that node's score (its
weight too), and so is an extended resource the pod does not request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from placement.arrays import RowIndex
from placement.pods.cluster.nodes import NON_ZERO_RESOURCES, NodeSnapshot
from placement.pods.cluster.requests import CPU, EPHEMERAL_STORAGE, MEMORY

__all__ = [
    "DEFAULT_RESOURCES",
    "Pair",
    "ResourceSpec",
    "RowPair",
    "is_extended",
    "is_scalar",
    "pairs",
    "row_pairs",
    "shape_key",
]

Int64Vector = npt.NDArray[np.int64]
MIN_WEIGHT, MAX_WEIGHT = 1, 100


class ResourceSpec(NamedTuple):
    name: str
    weight: int


DEFAULT_RESOURCES = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


class Pair(NamedTuple):
    """One resource over the scored rows: allocatable, requested (with the pod), weight."""

    weight: int
    allocatable: Int64Vector
    requested: Int64Vector


def is_extended(name: str) -> bool:
    """Kubernetes' IsExtendedResourceName: a domain-prefixed name outside kubernetes.io."""
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.")


def is_scalar(name: str) -> bool:
    """Kubernetes' IsScalarResourceName: extended, hugepages, prefixed native, attachable."""
    return (
        is_extended(name)
        or name.startswith("hugepages-")
        or "kubernetes.io/" in name
        or name.startswith("attachable-volumes-")
    )


class _Pick(NamedTuple):
    """Where one scored resource is read: allocatable column, requested matrix and column."""

    weight: int
    col: int  # in `allocatable` (and `requested`)
    non_zero: bool  # requested from `non_zero_requested` (at `at`), else from `requested`
    at: int
    pod: int  # the pod's own amount, added to every node's


_PICKS_LIMIT = 256
_picks_kept: dict[tuple[Any, ...], tuple[_Pick, ...]] = {}


def _picks(
    nodes: NodeSnapshot,
    specs: Sequence[ResourceSpec],
    pod_requests: Mapping[str, int],
    use_requested: bool,
) -> tuple[_Pick, ...]:
    """Where each scored resource is read, kept per (columns, specs, the pod's amounts of
    them): the same few pod shapes come back every cycle."""
    key = (nodes.resources, tuple(specs), shape_key(specs, pod_requests), use_requested)
    found = _picks_kept.get(key)
    if found is None:
        if len(_picks_kept) >= _PICKS_LIMIT:
            _picks_kept.clear()
        found = _picks_kept[key] = tuple(_find_picks(nodes, specs, pod_requests, use_requested))
    return found


def _find_picks(
    nodes: NodeSnapshot,
    specs: Sequence[ResourceSpec],
    pod_requests: Mapping[str, int],
    use_requested: bool,
) -> list[_Pick]:
    out: list[_Pick] = []
    for spec in specs:
        pod = pod_requests.get(spec.name, 0)
        if pod == 0 and is_scalar(spec.name):
            continue
        col = nodes.column_of(spec.name)
        scored = spec.name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar(spec.name)
        if col is None or not scored:
            continue  # no node has it, or a resource kube does not score (pods, ...)
        if spec.name in NON_ZERO_RESOURCES and not use_requested:
            out.append(_Pick(spec.weight, col, True, NON_ZERO_RESOURCES.index(spec.name), pod))
        else:
            out.append(_Pick(spec.weight, col, False, col, pod))
    return out


def pairs(
    nodes: NodeSnapshot,
    specs: Sequence[ResourceSpec],
    pod_requests: Mapping[str, int],
    use_requested: bool,
    rows: RowIndex | None = None,
) -> list[Pair]:
    """The (allocatable, requested + pod) columns kube-scheduler scores, over all rows (or
    only `rows`); the resources it skips for every node are left out (a node with 0
    allocatable is left out by the scorers, per node)."""
    out: list[Pair] = []
    for pick in _picks(nodes, specs, pod_requests, use_requested):
        matrix = nodes.non_zero_requested if pick.non_zero else nodes.requested
        if rows is None:
            allocatable, requested = nodes.allocatable[:, pick.col], matrix[:, pick.at]
        else:
            allocatable, requested = nodes.allocatable[rows, pick.col], matrix[rows, pick.at]
        out.append(Pair(pick.weight, allocatable, requested + pick.pod))
    return out


RowPair = tuple[int, int, int]
"""One resource of one node as Python ints: weight, allocatable, requested (with the pod)."""


def row_pairs(
    nodes: NodeSnapshot,
    specs: Sequence[ResourceSpec],
    pod_requests: Mapping[str, int],
    use_requested: bool,
    rows: Sequence[int],
) -> list[list[RowPair]]:
    """`pairs` for a few rows, row by row as Python ints: scalar reads of the cells the
    picks name instead of a dozen numpy calls per resource (each costs about a microsecond
    whatever its size)."""
    picks = _picks(nodes, specs, pod_requests, use_requested)
    allocatable = nodes.allocatable.item
    requested = nodes.requested.item
    non_zero = nodes.non_zero_requested.item
    return [
        [
            (
                p.weight,
                allocatable(row, p.col),
                (non_zero if p.non_zero else requested)(row, p.at) + p.pod,
            )
            for p in picks
        ]
        for row in rows
    ]


_SHAPES: dict[tuple[int, int], tuple[object, object, tuple[int, ...]]] = {}


def shape_key(specs: Sequence[ResourceSpec], pod_requests: Mapping[str, int]) -> tuple[int, ...]:
    """What `pairs` reads of the pod: its amount of each configured resource. Kept per
    (specs, requests) objects, checked by identity: pods of one shape share their requests
    mapping (the pod cache's), and the plugins ask twice per cycle."""
    kept = _SHAPES.get((id(specs), id(pod_requests)))
    if kept is not None and kept[0] is specs and kept[1] is pod_requests:
        return kept[2]
    key = tuple(pod_requests.get(spec.name, 0) for spec in specs)
    if len(_SHAPES) >= _PICKS_LIMIT:
        _SHAPES.clear()
    _SHAPES[(id(specs), id(pod_requests))] = (specs, pod_requests, key)
    return key

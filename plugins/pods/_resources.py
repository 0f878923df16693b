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

from placement.pods.nodes import NON_ZERO_RESOURCES, NodeSnapshot
from placement.pods.requests import CPU, EPHEMERAL_STORAGE, MEMORY
from plugins.pods._shared import check_fields

__all__ = [
    "DEFAULT_RESOURCES",
    "Pair",
    "ResourceSpec",
    "is_extended",
    "is_scalar",
    "pairs",
    "parse_resources",
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


def parse_resources(value: Any, where: str) -> tuple[ResourceSpec, ...]:
    """A `resources: [{name, weight}]` arg, validated as kube-scheduler does."""
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise ValueError(f"{where}: must be a list of {{name, weight}}")
    out: list[ResourceSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{at}: must be a mapping with name and weight")
        check_fields(item, ("name", "weight"), f"{at}.")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{at}.name: Required value")
        if name in seen:
            raise ValueError(f"{at}.name: Duplicate value: {name!r}")
        seen.add(name)
        weight = item.get("weight", 1)
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise ValueError(f"{at}.weight: must be an integer")
        if not MIN_WEIGHT <= weight <= MAX_WEIGHT:
            raise ValueError(
                f"{at}.weight: Invalid value: {weight}: resource weight of {name} "
                f"not in valid range [{MIN_WEIGHT}, {MAX_WEIGHT}]"
            )
        out.append(ResourceSpec(name, weight))
    return tuple(out)


def pairs(
    nodes: NodeSnapshot,
    specs: Sequence[ResourceSpec],
    pod_requests: Mapping[str, int],
    use_requested: bool,
) -> list[Pair]:
    """The (allocatable, requested + pod) columns kube-scheduler scores, over all rows; the
    resources it skips for every node are left out (a node with 0 allocatable is left out by
    the scorers, per node)."""
    out: list[Pair] = []
    for spec in specs:
        pod = pod_requests.get(spec.name, 0)
        if pod == 0 and is_scalar(spec.name):
            continue
        col = nodes.column_of(spec.name)
        scored = spec.name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar(spec.name)
        if col is None or not scored:
            continue  # no node has it, or a resource kube does not score (pods, ...)
        if spec.name in NON_ZERO_RESOURCES and not use_requested:
            source = nodes.non_zero_requested[:, NON_ZERO_RESOURCES.index(spec.name)]
        else:
            source = nodes.requested[:, col]
        # Every row, then the scorer's result gathered once: cheaper than gathering each column.
        out.append(Pair(spec.weight, nodes.allocatable[:, col], source + pod))
    return out

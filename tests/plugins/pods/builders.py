"""Nodes, pods, snapshots and cycles for the pod plugin tests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

import numpy as np

from apis.core import Node, Pod
from placement.arrays import BoolMask, RowIndex
from placement.pods.cluster.nodes import NodeSnapshot, NodeTable
from placement.pods.framework.interface import ClusterView, PodCycle, PodInfo, WaitingPods

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def node(
    name: str,
    *,
    cpu: str | int | None = None,
    memory: str | int | None = None,
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    extra: dict[str, Any] | None = None,
) -> Node:
    allocatable: dict[str, Any] = {"pods": pods, **(extra or {})}
    if cpu is not None:
        allocatable["cpu"] = cpu
    if memory is not None:
        allocatable["memory"] = memory
    return Node.model_validate(
        {
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints or [], "unschedulable": unschedulable},
            "status": {"allocatable": allocatable},
        }
    )


def pod(
    name: str = "p",
    *,
    requests: list[dict[str, Any]] | None = None,
    namespace: str = "default",
    priority: int | None = None,
    **spec: Any,
) -> PodInfo:
    """A pod with one container per entry of `requests` (none: one container, no requests)."""
    containers = [
        {"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(requests or [{}])
    ]
    body: dict[str, Any] = {"containers": containers, **spec}
    if priority is not None:
        body["priority"] = priority
    return PodInfo.of(
        Pod.model_validate({"metadata": {"name": name, "namespace": namespace}, "spec": body})
    )


def snapshot(nodes: Sequence[Node], running: Sequence[tuple[PodInfo, str]] = ()) -> NodeSnapshot:
    placed = [(p.key, where, p.requests, p.non_zero) for p, where in running]
    return NodeTable.build(nodes, placed).snapshot()


def cycle() -> PodCycle:
    return PodCycle(now=NOW, cluster=cast(ClusterView, None), waiting=cast(WaitingPods, None))


def everything(nodes: NodeSnapshot) -> BoolMask:
    return np.ones(nodes.size, dtype=bool)


def all_rows(nodes: NodeSnapshot) -> RowIndex:
    return np.arange(nodes.size, dtype=np.intp)


def names(nodes: NodeSnapshot, mask: BoolMask) -> list[str]:
    return [nodes.names[i] for i in np.flatnonzero(mask)]


def by_name(nodes: NodeSnapshot, rows: RowIndex, scores: Any) -> dict[str, int]:
    return {nodes.names[r]: int(s) for r, s in zip(rows, scores, strict=True)}

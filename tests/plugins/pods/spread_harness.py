"""Nodes in zones, labelled pods and a cluster view with a real PodIndex, for the
PodTopologySpread tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from apis.core import Node, Pod
from apis.meta import KubeObject
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.pod_index import PodIndex
from placement.pods.framework.interface import ClusterView, PodCycle, PodInfo, WaitingPods
from tests.plugins.pods.builders import NOW, node, snapshot

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
FOO = {"foo": "bar"}


def zoned(name: str, zone: str | None, **labels: str) -> Node:
    """A node with its hostname label and (unless None) a zone."""
    found = {HOST: name, **labels}
    if zone is not None:
        found[ZONE] = zone
    return node(name, cpu=8, memory="32Gi", labels=found)


def labelled(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    namespace: str = "default",
    spread: Sequence[Mapping[str, Any]] = (),
    owner: Mapping[str, Any] | None = None,
    deleting: bool = False,
    priority: int = 0,
    **spec: Any,
) -> PodInfo:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "labels": dict(FOO if labels is None else labels),
    }
    if owner is not None:
        meta["ownerReferences"] = [dict(owner)]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    body: dict[str, Any] = {"containers": [{"name": "c"}], **spec}
    if spread:
        body["topologySpreadConstraints"] = [dict(c) for c in spread]
    return PodInfo.of(Pod.model_validate({"metadata": meta, "spec": body}), priority=priority)


def constraint(
    key: str = ZONE,
    max_skew: int = 1,
    hard: bool = True,
    selector: Mapping[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": dict(FOO)} if selector is None else dict(selector),
        **extra,
    }


class Cluster:
    """`ClusterView` enough for the plugin: counted pods and watched objects."""

    def __init__(
        self,
        placed: Sequence[tuple[PodInfo, str]] = (),
        objects: Mapping[str, Mapping[str, KubeObject]] | None = None,
    ) -> None:
        self.counted = PodIndex()
        for info, where in placed:
            self.counted.add(info, where)
        self._objects = dict(objects or {})

    def objects(self, kind: str) -> Mapping[str, KubeObject]:
        return self._objects.get(kind, {})


def world(
    nodes: Sequence[Node],
    placed: Sequence[tuple[PodInfo, str]] = (),
    objects: Mapping[str, Mapping[str, KubeObject]] | None = None,
) -> tuple[PodCycle, NodeSnapshot]:
    cluster = cast(ClusterView, Cluster(placed, objects))
    cycle = PodCycle(now=NOW, cluster=cluster, waiting=cast(WaitingPods, None))
    return cycle, snapshot(nodes, placed)


def fresh(cycle: PodCycle) -> PodCycle:
    """A new cycle on the same cluster (scratch emptied)."""
    return PodCycle(now=cycle.now, cluster=cycle.cluster, waiting=cycle.waiting)


def four_nodes() -> list[Node]:
    """kube's docs: zoneA = node1, node2; zoneB = node3, node4."""
    return [zoned("node1", "zoneA"), zoned("node2", "zoneA"), zoned("node3", "zoneB"),
            zoned("node4", "zoneB")]  # fmt: skip

"""A StatusWorld over plain lists, and builders of the objects the status rules read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from apis.core import Node, Pod
from apis.meta import KubeObject
from apis.scheduling import POD_GROUP_LABEL, ElasticQuota, PodGroup

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@dataclass
class ListWorld:
    pods: list[Pod] = field(default_factory=list)
    groups: list[KubeObject] = field(default_factory=list)
    nodes_: list[Node] = field(default_factory=list)

    def pods_in(self, namespace: str) -> Iterable[Pod]:
        return [p for p in self.pods if p.metadata.namespace == namespace]

    def objects(self, kind: str) -> Mapping[str, KubeObject]:
        return {
            f"{o.metadata.namespace}/{o.metadata.name}": o for o in self.groups if kind == o.KIND
        }

    def nodes(self) -> Iterable[Node]:
        return self.nodes_


def pod(
    name: str,
    namespace: str = "default",
    *,
    group: str | None = None,
    node: str | None = None,
    phase: str | None = None,
    requests: dict[str, Any] | None = None,
    owner: str | None = None,
) -> Pod:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    if group is not None:
        meta["labels"] = {POD_GROUP_LABEL: group}
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": owner, "uid": f"uid-{owner}"}
        ]
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": requests or {}}}]
    }
    if node is not None:
        spec["nodeName"] = node
    doc: dict[str, Any] = {"metadata": meta, "spec": spec}
    if phase is not None:
        doc["status"] = {"phase": phase}
    return Pod.model_validate(doc)


def pod_group(
    name: str, min_member: int, namespace: str = "default", status: dict[str, Any] | None = None
) -> PodGroup:
    doc: dict[str, Any] = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": T0.isoformat()},
        "spec": {"minMember": min_member},
    }
    if status is not None:
        doc["status"] = status
    return PodGroup.model_validate(doc)


def quota(
    namespace: str,
    name: str = "quota",
    *,
    min: dict[str, Any] | None = None,
    max: dict[str, Any] | None = None,
    age: int = 0,
    status: dict[str, Any] | None = None,
) -> ElasticQuota:
    spec: dict[str, Any] = {}
    if min is not None:
        spec["min"] = min
    if max is not None:
        spec["max"] = max
    created = T0 - timedelta(minutes=age)
    doc: dict[str, Any] = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": created.isoformat(),
        },
        "spec": spec,
    }
    if status is not None:
        doc["status"] = status
    return ElasticQuota.model_validate(doc)


def node(name: str, **allocatable: Any) -> Node:
    return Node.model_validate({"metadata": {"name": name}, "status": {"allocatable": allocatable}})

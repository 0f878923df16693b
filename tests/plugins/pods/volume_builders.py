"""Claims, volumes, classes and a cluster view holding them, for the Volume* plugin tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apis.meta import KubeObject
from apis.storage import PersistentVolume, PersistentVolumeClaim, StorageClass
from placement.pods.cluster.pod_index import PodIndex
from placement.pods.cluster.podinfo import pod_key
from placement.pods.framework.interface import PodCycle, PodInfo
from tests.plugins.pods.builders import NOW, pod

HOST = "kubernetes.io/hostname"


def claim(
    name: str,
    *,
    size: str = "1Gi",
    cls: str | None = "local",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    volume: str | None = None,
    namespace: str = "default",
    **extra: Any,
) -> PersistentVolumeClaim:
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
    }
    if cls is not None:
        spec["storageClassName"] = cls
    if volume is not None:
        spec["volumeName"] = volume
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{name}", **extra}
    return PersistentVolumeClaim.model_validate({"metadata": meta, "spec": spec})


def local_pv(
    name: str,
    node: str | None,
    *,
    size: str = "1Gi",
    cls: str = "local",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    claim_ref: str | None = None,
    labels: dict[str, str] | None = None,
) -> PersistentVolume:
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": cls,
        "local": {"path": f"/mnt/{name}"},
    }
    if node is not None:
        term = {"matchExpressions": [{"key": HOST, "operator": "In", "values": [node]}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    if claim_ref is not None:
        namespace, _, claim_name = claim_ref.rpartition("/")
        spec["claimRef"] = {"namespace": namespace, "name": claim_name}
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    return PersistentVolume.model_validate({"metadata": meta, "spec": spec})


def storage_class(
    name: str = "local",
    mode: str = "WaitForFirstConsumer",
    provisioner: str = "kubernetes.io/no-provisioner",
) -> StorageClass:
    return StorageClass.model_validate(
        {"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode}
    )


def with_claims(name: str = "p", *claims: str, **spec: Any) -> PodInfo:
    volumes = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    return pod(name, volumes=volumes, **spec)


class Cluster:
    """A `ClusterView` over fixed storage objects and counted pods."""

    def __init__(self, objects: Iterable[KubeObject], counted: Iterable[tuple[PodInfo, str]] = ()):
        self._objects: dict[str, dict[str, KubeObject]] = {}
        for obj in objects:
            key = pod_key(obj.metadata.namespace, obj.name) if obj.NAMESPACED else obj.name
            self._objects.setdefault(obj.KIND, {})[key] = obj
        self._counted = PodIndex()
        for info, node in counted:
            self._counted.add(info, node)

    def objects(self, kind: str) -> Mapping[str, KubeObject]:
        return self._objects.get(kind, {})

    @property
    def counted(self) -> PodIndex:
        return self._counted

    def pod(self, key: str) -> PodInfo | None:
        return self._counted.pods().get(key)


def cycle_on(cluster: Cluster) -> PodCycle:
    return PodCycle(now=NOW, cluster=cluster, waiting=None)  # type: ignore[arg-type]

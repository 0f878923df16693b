"""Table columns of the storage kinds for `kubectl get` (PersistentVolume, PersistentVolumeClaim,
StorageClass, CSIDriver, CSIStorageCapacity), as kube-apiserver's printers give them: access
modes abbreviated (`RWO`, `ROX`, `RWX`, `RWOP`), a volume's claim as `namespace/name`, the
default class marked `(default)`, a CSIDriver's unset fields as the API server defaults them;
CSINode's columns: NAME, DRIVERS (how many), AGE. VolumeAttachment's: NAME, ATTACHER, PV, NODE,
ATTACHED, AGE.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from controllers.embedded.printers import Printer, column, since

__all__ = ["STORAGE_PRINTERS"]

_MODES = {
    "ReadWriteOnce": "RWO",
    "ReadOnlyMany": "ROX",
    "ReadWriteMany": "RWX",
    "ReadWriteOncePod": "RWOP",
}
_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
_BETA_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"
_UNSET = "<unset>"


def _modes(modes: Any) -> str:
    return ",".join(_MODES.get(m, m) for m in modes or ())


def _age(obj: dict[str, Any], now: datetime) -> str:
    return since((obj.get("metadata") or {}).get("creationTimestamp"), now)


def _volume(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ref = spec.get("claimRef") or {}
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref.get("name") else ""
    return [
        obj["metadata"]["name"],
        str((spec.get("capacity") or {}).get("storage", "")),
        _modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy") or "",
        status.get("phase") or "",
        claim,
        spec.get("storageClassName") or "",
        spec.get("volumeAttributesClassName") or _UNSET,
        status.get("reason") or "",
        _age(obj, now),
        spec.get("volumeMode") or "Filesystem",
    ]


def _claim(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    bound = status.get("phase") == "Bound"
    return [
        obj["metadata"]["name"],
        status.get("phase") or "",
        spec.get("volumeName") or "",
        str((status.get("capacity") or {}).get("storage", "")) if bound else "",
        _modes(status.get("accessModes")) if bound else "",
        spec.get("storageClassName") or "",
        spec.get("volumeAttributesClassName") or _UNSET,
        _age(obj, now),
        spec.get("volumeMode") or "Filesystem",
    ]


def _class(obj: dict[str, Any], now: datetime) -> list[Any]:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    default = "true" in (annotations.get(_DEFAULT_CLASS), annotations.get(_BETA_DEFAULT_CLASS))
    name = obj["metadata"]["name"] + (" (default)" if default else "")
    return [
        name,
        obj.get("provisioner") or "",
        obj.get("reclaimPolicy") or "Delete",
        obj.get("volumeBindingMode") or "Immediate",
        bool(obj.get("allowVolumeExpansion")),
        _age(obj, now),
    ]


def _driver(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    tokens = [t.get("audience", "") for t in spec.get("tokenRequests") or ()]
    return [
        obj["metadata"]["name"],
        spec.get("attachRequired", True),  # the API server's defaults, when not given
        bool(spec.get("podInfoOnMount")),
        bool(spec.get("storageCapacity")),
        ",".join(tokens) if tokens else _UNSET,
        bool(spec.get("requiresRepublish")),
        ",".join(spec.get("volumeLifecycleModes") or ["Persistent"]),
        _age(obj, now),
    ]


def _capacity(obj: dict[str, Any], now: datetime) -> list[Any]:
    capacity = obj.get("capacity")
    return [
        obj["metadata"]["name"],
        obj.get("storageClassName") or "",
        _UNSET if capacity is None else str(capacity),
    ]


def _csinode(obj: dict[str, Any], now: datetime) -> list[Any]:
    drivers = (obj.get("spec") or {}).get("drivers") or ()
    return [obj["metadata"]["name"], len(drivers), _age(obj, now)]


def _attachment(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    source = spec.get("source") or {}
    attached = (obj.get("status") or {}).get("attached")
    return [
        obj["metadata"]["name"],
        spec.get("attacher") or "",
        source.get("persistentVolumeName") or "",
        spec.get("nodeName") or "",
        bool(attached),
        _age(obj, now),
    ]


_NAME = column("Name", format_="name")

STORAGE_PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "PersistentVolume"): Printer(
        [
            _NAME,
            column("Capacity"),
            column("Access Modes"),
            column("Reclaim Policy"),
            column("Status"),
            column("Claim"),
            column("StorageClass"),
            column("VolumeAttributesClass"),
            column("Reason"),
            column("Age"),
            column("VolumeMode", 1),
        ],
        _volume,
    ),
    ("", "PersistentVolumeClaim"): Printer(
        [
            _NAME,
            column("Status"),
            column("Volume"),
            column("Capacity"),
            column("Access Modes"),
            column("StorageClass"),
            column("VolumeAttributesClass"),
            column("Age"),
            column("VolumeMode", 1),
        ],
        _claim,
    ),
    ("storage.k8s.io", "StorageClass"): Printer(
        [
            _NAME,
            column("Provisioner"),
            column("ReclaimPolicy"),
            column("VolumeBindingMode"),
            column("AllowVolumeExpansion", type_="boolean"),
            column("Age"),
        ],
        _class,
    ),
    ("storage.k8s.io", "CSIDriver"): Printer(
        [
            _NAME,
            column("AttachRequired", type_="boolean"),
            column("PodInfoOnMount", type_="boolean"),
            column("StorageCapacity", type_="boolean"),
            column("TokenRequests"),
            column("RequiresRepublish", type_="boolean"),
            column("Modes"),
            column("Age"),
        ],
        _driver,
    ),
    ("storage.k8s.io", "CSIStorageCapacity"): Printer(
        [_NAME, column("StorageClassName"), column("Capacity")],
        _capacity,
    ),
    ("storage.k8s.io", "CSINode"): Printer(
        [_NAME, column("Drivers", type_="integer"), column("Age")],
        _csinode,
    ),
    ("storage.k8s.io", "VolumeAttachment"): Printer(
        [
            _NAME,
            column("Attacher"),
            column("PV"),
            column("Node"),
            column("Attached", type_="boolean"),
            column("Age"),
        ],
        _attachment,
    ),
}

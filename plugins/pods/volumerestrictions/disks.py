"""Inline disks a pod writes into its spec (GCE PD, AWS EBS, iSCSI, Ceph RBD) and when two pods'
disks conflict on one node, as kube's VolumeRestrictions decides: the same GCE disk unless both
mount it read-only, the same EBS volume always, the same iSCSI IQN unless both read-only, the same
RBD image (a shared monitor, same pool and image) unless both read-only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from placement.pods.framework.interface import PodInfo

__all__ = ["Disk", "conflict", "inline_disks"]


class Disk(NamedTuple):
    kind: str  # "gce", "ebs", "iscsi" or "rbd"
    ident: tuple[str, ...]  # what names the disk (RBD: pool and image)
    read_only: bool
    monitors: frozenset[str] = frozenset()


def _disk(source: Mapping[str, Any]) -> Disk | None:
    gce = source.get("gcePersistentDisk")
    if isinstance(gce, Mapping):
        return Disk("gce", (str(gce.get("pdName", "")),), bool(gce.get("readOnly")))
    ebs = source.get("awsElasticBlockStore")
    if isinstance(ebs, Mapping):
        return Disk("ebs", (str(ebs.get("volumeID", "")),), bool(ebs.get("readOnly")))
    iscsi = source.get("iscsi")
    if isinstance(iscsi, Mapping):
        return Disk("iscsi", (str(iscsi.get("iqn", "")),), bool(iscsi.get("readOnly")))
    rbd = source.get("rbd")
    if isinstance(rbd, Mapping):
        ident = (str(rbd.get("pool") or "rbd"), str(rbd.get("image", "")))
        monitors = frozenset(str(m) for m in rbd.get("monitors") or ())
        return Disk("rbd", ident, bool(rbd.get("readOnly")), monitors)
    return None


def inline_disks(pod: PodInfo) -> list[Disk]:
    found = []
    for volume in pod.pod.spec.volumes or ():
        disk = _disk(volume.model_extra or {})
        if disk is not None:
            found.append(disk)
    return found


def conflict(a: Disk, b: Disk) -> bool:
    if a.kind != b.kind or a.ident != b.ident:
        return False
    if a.kind == "ebs":
        return True
    if a.kind == "rbd" and a.monitors.isdisjoint(b.monitors):
        return False
    return not (a.read_only and b.read_only)

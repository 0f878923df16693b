"""The volumes a pod attaches to its node, per CSI driver, as kube v1.36's NodeVolumeLimits
counts them.

A volume counts when it resolves to a CSI driver and a volume identity:

* a claim bound to a PersistentVolume with a `csi` source: its driver and `volumeHandle`;
* a claim bound to an in-tree volume kube still migrates to CSI (AWS EBS, GCE PD, Azure Disk,
  Cinder, Portworx): the CSI driver it migrates to and the handle the translation gives;
* a claim not bound yet (or bound to a volume not seen): the provisioner of its StorageClass
  (an in-tree provisioner of those five: its CSI driver), the claim standing for the volume;
  a claim without class, or of a class not found, does not count;
* a generic ephemeral volume: its claim `<pod>-<volume>`, as above;
* an inline volume of one of those five in-tree kinds, translated the same way.

Inline CSI volumes (`csi` in the pod) are not counted, as in kube. In-tree migration needs the
node's CSINode, which is where limits come from: a node without one has no limit anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from apis.core import Pod
from apis.storage import PersistentVolume, PersistentVolumeClaim, StorageClass, claim_class

__all__ = [
    "IN_TREE_DRIVERS",
    "VolumeKey",
    "attachable",
    "inline_drivers",
    "may_attach",
]

VolumeKey = tuple[str, str, str]
"""(driver, kind, identity): kind "handle" for a volume handle, "claim" for a claim not bound
yet (`namespace/name`), so that the two never collide."""

IN_TREE_DRIVERS = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}
"""The in-tree plugins (and provisioners) kube v1.36 counts as the CSI driver they migrate to."""

_SOURCES = {
    "awsElasticBlockStore": "kubernetes.io/aws-ebs",
    "gcePersistentDisk": "kubernetes.io/gce-pd",
    "azureDisk": "kubernetes.io/azure-disk",
    "cinder": "kubernetes.io/cinder",
    "portworxVolume": "kubernetes.io/portworx-volume",
}
_MIGRATABLE_UNCOUNTED = ("azureFile", "vsphereVolume")
"""Inline sources kube translates but does not count: they only keep PreFilter from skipping."""
_UNCOUNTED_PROVISIONERS = ("kubernetes.io/azure-file", "kubernetes.io/vsphere-volume")
"""In-tree provisioners kube translates but whose migration it does not count."""
_ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
_UNSPECIFIED = "UNSPECIFIED"


def _ebs_handle(source: Mapping[str, Any]) -> str:
    volume_id = str(source.get("volumeID") or "")
    if volume_id.startswith("aws://"):
        return volume_id.rsplit("/", 1)[-1]  # aws://<zone>/<vol-id>
    return volume_id


def _gce_handle(source: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    disk = str(source.get("pdName") or "")
    zones = next((labels[k] for k in _ZONE_LABELS if labels.get(k)), "")
    split = [z for z in zones.split("__") if z]
    if len(split) > 1:  # a regional disk: the region of its zones
        return f"projects/{_UNSPECIFIED}/regions/{split[0].rsplit('-', 1)[0]}/disks/{disk}"
    zone = split[0] if split else _UNSPECIFIED
    return f"projects/{_UNSPECIFIED}/zones/{zone}/disks/{disk}"


def _in_tree(sources: Mapping[str, Any], labels: Mapping[str, str]) -> tuple[str, str] | None:
    """(driver, handle) of an in-tree source kube counts, or None."""
    for field, plugin in _SOURCES.items():
        source = sources.get(field)
        if not isinstance(source, Mapping):
            continue
        if field == "awsElasticBlockStore":
            handle = _ebs_handle(source)
        elif field == "gcePersistentDisk":
            handle = _gce_handle(source, labels)
        elif field == "azureDisk":
            handle = str(source.get("diskURI") or "")
        else:
            handle = str(source.get("volumeID") or "")
        return IN_TREE_DRIVERS[plugin], handle
    return None


def may_attach(pod: Pod) -> bool:
    """Whether the pod has a volume NodeVolumeLimits looks at (kube's PreFilter: a claim, an
    ephemeral volume or an inline in-tree volume kube migrates)."""
    for volume in pod.spec.volumes or ():
        if volume.persistent_volume_claim is not None or volume.ephemeral is not None:
            return True
        extra = volume.model_extra or {}
        if any(field in extra for field in (*_SOURCES, *_MIGRATABLE_UNCOUNTED)):
            return True
    return False


_UNCOUNTED_DRIVERS = {"azureFile": "file.csi.azure.com", "vsphereVolume": "csi.vsphere.vmware.com"}


def inline_drivers(pod: Pod) -> set[str]:
    """The CSI drivers the pod's inline in-tree volumes migrate to (counted or not)."""
    found: set[str] = set()
    for volume in pod.spec.volumes or ():
        extra = volume.model_extra or {}
        for field, plugin in _SOURCES.items():
            if field in extra:
                found.add(IN_TREE_DRIVERS[plugin])
        found.update(d for field, d in _UNCOUNTED_DRIVERS.items() if field in extra)
    return found


def _of_volume(pv: PersistentVolume) -> tuple[str, str] | None:
    spec = pv.spec
    extra = (spec.model_extra or {}) if spec is not None else {}
    csi = extra.get("csi")
    if isinstance(csi, Mapping):
        driver, handle = str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        return (driver, handle) if driver and handle else None
    found = _in_tree(extra, pv.metadata.labels or {})
    return found if found and found[1] else None


Lookup = Callable[[str], Any]


def _of_claim(
    claim: PersistentVolumeClaim, volume: Lookup, storage_class: Lookup
) -> VolumeKey | None:
    name = claim.spec.volume_name if claim.spec else None
    pv = volume(name) if name else None
    if isinstance(pv, PersistentVolume):
        found = _of_volume(pv)
        return (found[0], "handle", found[1]) if found else None
    cls = storage_class(claim_class(claim)) if claim_class(claim) else None
    if not isinstance(cls, StorageClass) or not cls.provisioner:
        return None
    if cls.provisioner in _UNCOUNTED_PROVISIONERS:
        return None
    driver = IN_TREE_DRIVERS.get(cls.provisioner, cls.provisioner)
    meta = claim.metadata
    return driver, "claim", f"{meta.namespace or ''}/{meta.name or ''}"


def attachable(
    pod: Pod,
    claims: Mapping[str, Any],
    volume: Lookup,
    storage_class: Lookup,
    *,
    strict: bool = False,
) -> dict[VolumeKey, str] | str:
    """The pod's volumes that count (module docstring), each with its driver. `strict` (the
    pod being scheduled): a claim not found is the answer, as kube's message; otherwise such
    volumes are not counted (an existing pod's)."""
    found: dict[VolumeKey, str] = {}
    meta = pod.metadata
    namespace = meta.namespace or "default"
    for source in pod.spec.volumes or ():
        if source.persistent_volume_claim is not None:
            name = source.persistent_volume_claim.claim_name
        elif source.ephemeral is not None:
            name = f"{meta.name}-{source.name}"
        else:
            inline = _in_tree(source.model_extra or {}, {})
            if inline is not None:
                found[(inline[0], "handle", inline[1])] = inline[0]
            continue
        claim = claims.get(f"{namespace}/{name}")
        if not isinstance(claim, PersistentVolumeClaim):
            if strict:
                missing = f'persistentvolumeclaim "{name}" not found'
                return f"looking up PVC {namespace}/{name}: {missing}"
            continue
        key = _of_claim(claim, volume, storage_class)
        if key is not None:
            found[key] = key[0]
    return found

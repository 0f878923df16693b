"""The volume provisioner `scheduler simulate` plays, so that what-ifs with dynamically
provisioned claims still answer: when PreBind selects a node for a claim (`BindVolumes.
provisions`), a volume is made for it there at once, as a CSI provisioner and kube's PV
controller leave it:

* the volume `pvc-<claim uid>`: capacity the claim's request, the claim's access and volume
  modes, its class, the class's reclaim policy (`Delete` by default), node affinity on the
  node's `kubernetes.io/hostname` label (its name when unlabelled), a CSI source of the class's
  provisioner, annotated `pv.kubernetes.io/provisioned-by`, its `claimRef` naming the claim,
  `Bound`;
* the claim: `volume.kubernetes.io/selected-node` (the scheduler's write), the provisioner's
  `volume.kubernetes.io/storage-provisioner` (the PV controller's), then bound to the volume as
  the PV controller binds (`volumeName`, bind-completed, `Bound`).

`volume_writes` is everything a `BindVolumes` action leaves written: the static bindings
(`apply_bindings`) and these provisions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apis.meta import KubeObject
from apis.storage import (
    SELECTED_NODE_ANNOTATION,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    claim_class,
)
from placement.pods.cluster.volumes import (
    CLAIM_KIND,
    CLASS_KIND,
    VOLUME_KIND,
    bound_claim,
    bound_volume,
    is_bound_to,
    volume_claimed_by,
)
from placement.pods.framework.events import BindVolumes

__all__ = [
    "HOSTNAME_LABEL",
    "PROVISIONED_BY_ANNOTATION",
    "STORAGE_PROVISIONER_ANNOTATION",
    "provisioned_volume",
    "volume_writes",
]

HOSTNAME_LABEL = "kubernetes.io/hostname"
PROVISIONED_BY_ANNOTATION = "pv.kubernetes.io/provisioned-by"
STORAGE_PROVISIONER_ANNOTATION = "volume.kubernetes.io/storage-provisioner"

Lookup = Callable[[str, str], KubeObject | None]


def apply_bindings(
    get: Callable[[str, str], KubeObject | None], action: BindVolumes
) -> list[KubeObject] | str:
    """What a `BindVolumes` action writes, as an API server and PV controller leave it: the
    updated volumes and claims (bound both ways, phases Bound), or why it cannot be done (a
    claim or volume gone, a claim replaced, a volume claimed by another claim). `get(kind, key)`
    finds the stored objects."""
    changed: list[KubeObject] = []
    for claim_key, uid, name in action.claims:
        claim, pv = get(CLAIM_KIND, claim_key), get(VOLUME_KIND, name)
        if not isinstance(claim, PersistentVolumeClaim):
            return f'persistentvolumeclaim "{claim_key}" not found'
        if not isinstance(pv, PersistentVolume):
            return f'persistentvolume "{name}" not found'
        if uid and claim.metadata.uid != uid:
            return f'persistentvolumeclaim "{claim_key}" was replaced'
        if volume_claimed_by(pv) is not None and not is_bound_to(pv, claim):
            return f'persistentvolume "{name}" is bound to another claim'
        bound_to = claim.spec.volume_name if claim.spec else None
        if bound_to and bound_to != name:
            return f'persistentvolumeclaim "{claim_key}" is bound to volume "{bound_to}"'
        changed += [bound_volume(pv, claim), bound_claim(claim, pv)]
    return changed


def provisioned_volume(
    claim: PersistentVolumeClaim, cls: StorageClass, hostname: str
) -> PersistentVolume:
    """The volume a provisioner makes for the claim on the node labelled `hostname` (not yet
    bound: its `claimRef` names the claim)."""
    spec = claim.to_wire().get("spec") or {}
    meta = claim.metadata
    provisioner = cls.provisioner or ""
    name = f"pvc-{meta.uid}" if meta.uid else f"pvc-{meta.namespace or 'default'}-{meta.name}"
    term = {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [hostname]}]}
    pv_spec: dict[str, Any] = {
        "capacity": {
            "storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "0")
        },
        "accessModes": list(spec.get("accessModes") or ()),
        "storageClassName": claim_class(claim),
        "persistentVolumeReclaimPolicy": cls.reclaim_policy or "Delete",
        "volumeMode": spec.get("volumeMode") or "Filesystem",
        "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        "csi": {"driver": provisioner, "volumeHandle": name},
    }
    wire = {
        "metadata": {"name": name, "annotations": {PROVISIONED_BY_ANNOTATION: provisioner}},
        "spec": pv_spec,
    }
    return bound_volume(PersistentVolume.model_validate(wire), claim)


def _provisions(get: Lookup, action: BindVolumes) -> list[KubeObject] | str:
    node = get("Node", action.node)
    labels = (node.metadata.labels or {}) if node is not None else {}
    hostname = labels.get(HOSTNAME_LABEL, action.node)
    changed: list[KubeObject] = []
    for claim_key, uid in action.provisions:
        claim = get(CLAIM_KIND, claim_key)
        if not isinstance(claim, PersistentVolumeClaim):
            return f'persistentvolumeclaim "{claim_key}" not found'
        if uid and claim.metadata.uid != uid:
            return f'persistentvolumeclaim "{claim_key}" was replaced'
        cls = get(CLASS_KIND, claim_class(claim))
        if not isinstance(cls, StorageClass):
            return f'storageclass "{claim_class(claim)}" not found'
        wire = claim.to_wire()
        annotations = wire.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[SELECTED_NODE_ANNOTATION] = action.node
        annotations[STORAGE_PROVISIONER_ANNOTATION] = cls.provisioner or ""
        claim = PersistentVolumeClaim.model_validate(wire)
        pv = provisioned_volume(claim, cls, hostname)
        changed += [pv, bound_claim(claim, pv)]
    return changed


def volume_writes(get: Lookup, action: BindVolumes) -> list[KubeObject] | str:
    """What a `BindVolumes` action leaves written (the objects new or updated, volumes before
    their claims), or why it cannot be done."""
    bindings = apply_bindings(get, action)
    if isinstance(bindings, str) or not action.provisions:
        return bindings
    provisions = _provisions(get, action)
    return provisions if isinstance(provisions, str) else bindings + provisions

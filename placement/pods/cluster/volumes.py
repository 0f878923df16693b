"""Pod volumes as volume scheduling reads them, and the binding of a claim to a volume.

The claims a pod uses (`pod_claims`: a `persistentVolumeClaim` names one, a generic `ephemeral`
volume's claim is `<pod>-<volume>`), a claim's request and a volume's capacity in bytes, the
static match of a claim and a volume (kube's FindMatchingVolume without the node), and what a
binding writes (`bound_volume`, `bound_claim`): the scheduler's PreBind sets the volume's
`claimRef` and the claim's `volumeName`; the shells that play the PV controller (the simulated
world, the embedded API server) also mark both Bound.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from apis.core import Pod
from apis.meta import KubeObject
from apis.quantity import Quantity
from apis.storage import (
    BETA_STORAGE_CLASS_ANNOTATION,
    BIND_COMPLETED_ANNOTATION,
    PersistentVolume,
    PersistentVolumeClaim,
    claim_class,
    volume_class,
)
from placement.selectors import SelectorError, labels_match

__all__ = [
    "CLAIM_KIND",
    "CLASS_KIND",
    "READ_WRITE_ONCE_POD",
    "VOLUME_KIND",
    "PodClaim",
    "bound_claim",
    "bound_volume",
    "claim_request",
    "claim_uses",
    "default_class",
    "ephemeral_claims",
    "initial_phase",
    "is_bound_to",
    "pod_claims",
    "static_match",
    "volume_capacity",
    "volume_claimed_by",
    "with_default_class",
]

CLAIM_KIND = "PersistentVolumeClaim"
VOLUME_KIND = "PersistentVolume"
CLASS_KIND = "StorageClass"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
STORAGE = "storage"


@dataclass(frozen=True)
class PodClaim:
    """A claim a pod's volume uses: its name (in the pod's namespace) and whether the ephemeral
    volume controller makes it (then the pod must own it)."""

    name: str
    ephemeral: bool = False


def pod_claims(pod: Pod) -> list[PodClaim]:
    """The claims of the pod's volumes, in volume order."""
    found: list[PodClaim] = []
    for volume in pod.spec.volumes or ():
        if volume.persistent_volume_claim is not None:
            found.append(PodClaim(volume.persistent_volume_claim.claim_name))
        elif volume.ephemeral is not None:
            found.append(PodClaim(f"{pod.metadata.name}-{volume.name}", ephemeral=True))
    return found


def claim_uses(pod: Pod) -> set[str]:
    """The names of the claims the pod uses (for indexes of claim users)."""
    return {claim.name for claim in pod_claims(pod)}


def _bytes(value: Quantity | None) -> int:
    return 0 if value is None else value.ceil()


def claim_request(claim: PersistentVolumeClaim) -> int:
    resources = claim.spec.resources if claim.spec else None
    return _bytes((resources.requests or {}).get(STORAGE) if resources else None)


def volume_capacity(volume: PersistentVolume) -> int:
    spec = volume.spec
    return _bytes((spec.capacity or {}).get(STORAGE) if spec else None)


def volume_claimed_by(volume: PersistentVolume) -> tuple[str, str] | None:
    """(claim namespace/name, claim uid) the volume's `claimRef` names, or None."""
    ref = volume.spec.claim_ref if volume.spec else None
    if ref is None or not ref.name:
        return None
    return f"{ref.namespace or ''}/{ref.name}", ref.uid or ""


def _claim_key(claim: PersistentVolumeClaim) -> str:
    return f"{claim.metadata.namespace or ''}/{claim.metadata.name or ''}"


def is_bound_to(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """The volume's claimRef names this claim (and its uid, when the ref carries one)."""
    ref = volume_claimed_by(volume)
    if ref is None or ref[0] != _claim_key(claim):
        return False
    return not ref[1] or ref[1] == (claim.metadata.uid or "")


def static_match(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """Whether an unclaimed volume may be bound to the claim, the node aside: same class,
    volume mode, every access mode the claim asks, capacity at least the request, labels
    matching the claim's selector, not being deleted."""
    spec, want = volume.spec, claim.spec
    if spec is None or want is None or volume.metadata.deletion_timestamp is not None:
        return False
    if volume_claimed_by(volume) is not None or volume_class(volume) != claim_class(claim):
        return False
    if (spec.volume_mode or "Filesystem") != (want.volume_mode or "Filesystem"):
        return False
    if not set(want.access_modes or ()) <= set(spec.access_modes or ()):
        return False
    if volume_capacity(volume) < claim_request(claim):
        return False
    if want.selector is not None:
        try:
            return labels_match(want.selector, volume.metadata.labels or {})
        except SelectorError:
            return False
    return True


def bound_volume(volume: PersistentVolume, claim: PersistentVolumeClaim) -> PersistentVolume:
    """The volume with its `claimRef` naming the claim and its phase Bound."""
    wire = volume.to_wire()
    meta = claim.metadata
    ref = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": meta.name}
    ref |= {"namespace": meta.namespace or "default"}
    if meta.uid:
        ref["uid"] = meta.uid
    wire.setdefault("spec", {})["claimRef"] = ref
    wire["status"] = {**(wire.get("status") or {}), "phase": "Bound"}
    return PersistentVolume.model_validate(wire)


def bound_claim(claim: PersistentVolumeClaim, volume: PersistentVolume) -> PersistentVolumeClaim:
    """The claim with `volumeName` set, bind-completed, its phase Bound and the volume's access
    modes and capacity in its status (what the PV controller writes)."""
    wire = claim.to_wire()
    wire.setdefault("spec", {})["volumeName"] = volume.metadata.name
    annotations = wire.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[BIND_COMPLETED_ANNOTATION] = "yes"
    status = {**(wire.get("status") or {}), "phase": "Bound"}
    pv = volume.to_wire().get("spec") or {}
    for field in ("accessModes", "capacity"):
        if field in pv:
            status[field] = pv[field]
    wire["status"] = status
    return PersistentVolumeClaim.model_validate(wire)


def initial_phase(obj: KubeObject) -> KubeObject:
    """A volume or claim as the PV controller shows it before any binding: a volume Available
    (Bound with a claimRef), a claim Pending (Bound with a volumeName); other objects, and
    those with a phase already, as they are."""
    if isinstance(obj, PersistentVolume):
        phase = "Bound" if volume_claimed_by(obj) else "Available"
    elif isinstance(obj, PersistentVolumeClaim):
        phase = "Bound" if obj.spec and obj.spec.volume_name else "Pending"
    else:
        return obj
    if obj.status is not None and obj.status.phase:
        return obj
    wire = obj.to_wire()
    wire["status"] = {**(wire.get("status") or {}), "phase": phase}
    return type(obj).model_validate(wire)


DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def default_class(classes: Iterable[Mapping[str, Any]]) -> str | None:
    """The cluster's default StorageClass (wire form): the newest of those annotated default
    (then by name), as kube's DefaultStorageClass admission picks it; None without one."""
    marked = [
        c
        for c in classes
        if any(
            ((c.get("metadata") or {}).get("annotations") or {}).get(k) == "true"
            for k in DEFAULT_CLASS_ANNOTATIONS
        )
    ]
    if not marked:
        return None
    newest = max(
        marked,
        key=lambda c: (
            str(c["metadata"].get("creationTimestamp") or ""),
            c["metadata"].get("name", ""),
        ),
    )
    return str(newest["metadata"]["name"])


def with_default_class(claim: dict[str, Any], classes: Iterable[Mapping[str, Any]]) -> None:
    """kube's DefaultStorageClass admission on a new claim (wire form): a claim that names no
    class (`storageClassName` absent, not "") gets the default class, when there is one."""
    spec = claim.setdefault("spec", {})
    if "storageClassName" in spec and spec["storageClassName"] is not None:
        return
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return
    name = default_class(classes)
    if name is not None:
        spec["storageClassName"] = name


def ephemeral_claims(pod: Pod, classes: Iterable[KubeObject] = ()) -> list[PersistentVolumeClaim]:
    """The claims kube's ephemeral volume controller creates for the pod's generic ephemeral
    volumes: `<pod>-<volume>` in the pod's namespace, from the volume's `volumeClaimTemplate`,
    owned by the pod (so VolumeBinding accepts them as the pod's), admitted with the default
    class among `classes` when they name none."""
    defaults = [c.to_wire() for c in classes]
    meta = pod.metadata
    found = []
    for volume in pod.spec.volumes or ():
        if volume.ephemeral is None:
            continue
        template = volume.ephemeral.get("volumeClaimTemplate") or {}
        tmeta = template.get("metadata") or {}
        claim_meta: dict[str, Any] = {
            "name": f"{meta.name}-{volume.name}",
            "namespace": meta.namespace or "default",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta.name,
                    "uid": meta.uid or "",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        for field in ("labels", "annotations"):
            if tmeta.get(field):
                claim_meta[field] = dict(tmeta[field])
        wire = {"metadata": claim_meta, "spec": dict(template.get("spec") or {})}
        with_default_class(wire, defaults)
        found.append(PersistentVolumeClaim.model_validate(wire))
    return found

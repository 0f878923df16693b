"""What the Volume* plugins share: a pod's claims looked up in the watched objects, with
kube's messages for the claims that cannot be used yet, and volumes' node masks."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from apis.meta import KubeObject
from apis.storage import PersistentVolume, PersistentVolumeClaim, StorageClass
from placement.arrays import BoolMask
from placement.pods.cluster.affinity import selector_terms_mask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.volumes import CLAIM_KIND, CLASS_KIND, VOLUME_KIND, pod_claims
from placement.pods.framework.interface import ClusterView, PodInfo
from placement.selectors import SelectorError
from plugins.pods.helper.snapshot_cache import frozen

__all__ = [
    "VolumeMasks",
    "claims_of",
    "claims_or_problem",
    "storage_class",
    "volume",
    "volumes",
]


def claims_of(cluster: ClusterView) -> Mapping[str, KubeObject]:
    return cluster.objects(CLAIM_KIND)


def volumes(cluster: ClusterView) -> Mapping[str, KubeObject]:
    return cluster.objects(VOLUME_KIND)


def volume(cluster: ClusterView, name: str) -> PersistentVolume | None:
    found = cluster.objects(VOLUME_KIND).get(name)
    return found if isinstance(found, PersistentVolume) else None


def storage_class(cluster: ClusterView, name: str) -> StorageClass | None:
    found = cluster.objects(CLASS_KIND).get(name) if name else None
    return found if isinstance(found, StorageClass) else None


def _owned_by(claim: PersistentVolumeClaim, pod: PodInfo) -> bool:
    return any(
        ref.controller and ref.uid == pod.uid for ref in claim.metadata.owner_references or ()
    )


def claims_or_problem(
    cluster: ClusterView, pod: PodInfo, *, ephemeral: bool = True
) -> tuple[list[PersistentVolumeClaim], str | None]:
    """The pod's claims in volume order, or the first problem as kube words it (the claim is
    missing, lost, being deleted, or an ephemeral one the pod does not own). `ephemeral=False`
    leaves the ephemeral volumes out (VolumeRestrictions reads only named claims)."""
    wanted_claims = pod_claims(pod.pod)
    found: list[PersistentVolumeClaim] = []
    if not wanted_claims:
        return found, None  # nothing to look up: the cluster is not read
    known = claims_of(cluster)
    for wanted in wanted_claims:
        if wanted.ephemeral and not ephemeral:
            continue
        claim = known.get(f"{pod.namespace}/{wanted.name}")
        if not isinstance(claim, PersistentVolumeClaim):
            if wanted.ephemeral:
                return found, (
                    "waiting for ephemeral volume controller to create the "
                    f'persistentvolumeclaim "{wanted.name}"'
                )
            return found, f'persistentvolumeclaim "{wanted.name}" not found'
        phase = claim.status.phase if claim.status else None
        if phase == "Lost":
            bound = claim.spec.volume_name if claim.spec else ""
            return found, (
                f'persistentvolumeclaim "{wanted.name}" bound to non-existent persistentvolume '
                f'"{bound or ""}"'
            )
        if claim.metadata.deletion_timestamp is not None:
            return found, f'persistentvolumeclaim "{wanted.name}" is being deleted'
        if wanted.ephemeral and not _owned_by(claim, pod):
            return found, (
                f"PVC {pod.namespace}/{wanted.name} was not created for pod {pod.key} "
                "(pod is not owner)"
            )
        found.append(claim)
    return found, None


class VolumeMasks:
    """The rows a volume's `nodeAffinity.required` admits, kept for each volume object while the
    snapshot's nodes stay the same objects (a volume without node affinity admits every node;
    an invalid one none)."""

    def __init__(self) -> None:
        self._nodes: tuple[object, object] | None = None  # strong references: identity holds
        self._every: BoolMask | None = None
        self._memo: dict[str, tuple[PersistentVolume, BoolMask]] = {}

    def of(self, pv: PersistentVolume, nodes: NodeSnapshot) -> BoolMask:
        key = self._nodes
        if key is None or key[0] is not nodes.labels or key[1] is not nodes.names:
            self._nodes = (nodes.labels, nodes.names)
            self._every = frozen(np.ones(nodes.size, dtype=bool))
            self._memo = {}
        assert self._every is not None
        affinity = pv.spec.node_affinity if pv.spec else None
        required = affinity.required if affinity else None
        if required is None:
            return self._every
        name = pv.metadata.name or ""
        known = self._memo.get(name)
        if known is not None and known[0] is pv:  # the same object: the same affinity
            return known[1]
        try:
            mask = frozen(selector_terms_mask(required, nodes))
        except SelectorError:
            mask = frozen(np.zeros(nodes.size, dtype=bool))
        self._memo[name] = (pv, mask)
        return mask

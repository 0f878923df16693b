"""`VolumeZone`: a pod whose bound volumes carry zone or region labels runs only on nodes of
those zones and regions.

As kube's plugin: PreFilter reads the pod's `persistentVolumeClaim` volumes; a bound claim's
volume contributes its `topology.kubernetes.io/zone|region` labels (and the legacy
`failure-domain.beta.kubernetes.io/...` ones; a value may list several zones joined by `__`);
an unbound WaitForFirstConsumer claim is skipped (VolumeBinding decides); any other unbound
claim, a missing claim, class or volume make the pod unresolvable with kube's message. Filter
fails, unresolvably, the nodes that have some topology label but not a value the volume allows
(a beta key on the volume may be matched by the node's GA key); nodes without any topology
label pass, as kube's single-zone fast path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from apis.pluginargs import NoArgs
from apis.storage import PersistentVolumeClaim, claim_class
from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.volumes import CLAIM_KIND, CLASS_KIND, VOLUME_KIND
from placement.pods.framework.events import (
    NODE_ADD_OR_UPDATE,
    ClusterEvent,
    ObjectEvent,
    RequeueHints,
)
from placement.pods.framework.interface import (
    SKIP,
    ClusterView,
    EventHandler,
    Filter,
    FilterResult,
    PodCycle,
    PodInfo,
    PodStatus,
    PreFilter,
    PreFilterResult,
    Reason,
)
from plugins.pods.helper.args import args_of
from plugins.pods.helper.volume_claims import claims_of, storage_class, volume

__all__ = ["ERR_REASON_CONFLICT", "TOPOLOGY_LABELS", "VolumeZone"]

ERR_REASON_CONFLICT = "node(s) had no available volume zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}
_WATCHED = (VOLUME_KIND, CLAIM_KIND, CLASS_KIND)

_Topology = tuple[str, frozenset[str]]  # (label key, the values the volume allows)


def _zones(value: str) -> frozenset[str]:
    return frozenset(part.strip() for part in value.split("__") if part.strip())


class VolumeZone(PreFilter, Filter, EventHandler, RequeueHints):
    name = "VolumeZone"
    requeue_on = frozenset({NODE_ADD_OR_UPDATE})
    """kube registers node events only: freed room does not help a pod this plugin rejected."""

    @classmethod
    def from_args(cls, args: NoArgs | Mapping[str, Any] | None = None) -> VolumeZone:
        args_of(NoArgs, args)
        return cls()

    def _topologies(self, cycle: PodCycle, pod: PodInfo) -> list[_Topology] | PodStatus:
        found: list[_Topology] = []
        if not any(v.persistent_volume_claim for v in pod.pod.spec.volumes or ()):
            return found  # no claim: the cluster is not read
        claims = claims_of(cycle.cluster)
        for source in pod.pod.spec.volumes or ():
            ref = source.persistent_volume_claim
            if ref is None:
                continue
            if not ref.claim_name:
                return PodStatus.unresolvable(self.name, "PersistentVolumeClaim had no name")
            claim = claims.get(f"{pod.namespace}/{ref.claim_name}")
            if not isinstance(claim, PersistentVolumeClaim):
                message = f'persistentvolumeclaim "{ref.claim_name}" not found'
                return PodStatus.unresolvable(self.name, message)
            name = claim.spec.volume_name if claim.spec else None
            if not name:
                class_name = claim_class(claim)
                if not class_name:
                    return PodStatus.unresolvable(
                        self.name, "PersistentVolumeClaim had no pv name and storageClass name"
                    )
                cls = storage_class(cycle.cluster, class_name)
                if cls is None:
                    message = f'storageclass.storage.k8s.io "{class_name}" not found'
                    return PodStatus.unresolvable(self.name, message)
                if cls.volume_binding_mode == "WaitForFirstConsumer":
                    continue  # VolumeBinding picks its volume
                return PodStatus.unresolvable(self.name, "PersistentVolume had no name")
            pv = volume(cycle.cluster, name)
            if pv is None:
                return PodStatus.unresolvable(self.name, f'persistentvolume "{name}" not found')
            labels = pv.metadata.labels or {}
            for key in TOPOLOGY_LABELS:
                if key in labels:
                    found.append((key, _zones(labels[key])))
        return found

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool:
        """True when a claim, volume or class added or changed may make the pods it rejected fit."""
        return isinstance(event, ObjectEvent) and event.obj.KIND in (
            VOLUME_KIND,
            CLAIM_KIND,
            CLASS_KIND,
        )

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        if not pod.pod.spec.volumes:
            cycle.scratch.pop(self.name, None)
            return PreFilterResult(SKIP)  # most pods: nothing to read
        found = self._topologies(cycle, pod)
        if isinstance(found, PodStatus):
            return PreFilterResult(found)
        if not found:
            cycle.scratch[self.name] = []
            return PreFilterResult(SKIP)
        cycle.scratch[self.name] = found
        return PreFilterResult()

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        if not pod.pod.spec.volumes:
            return FilterResult(candidates)
        found = cycle.scratch.get(self.name)
        if found is None:
            found = self._topologies(cycle, pod)
            if isinstance(found, PodStatus):
                nothing = np.zeros(nodes.size, dtype=bool)
                return FilterResult(nothing, (Reason(candidates, found.message, False),))
        if not found:
            return FilterResult(candidates)
        constrained = np.zeros(nodes.size, dtype=bool)
        for key in TOPOLOGY_LABELS:
            constrained |= nodes.label(key).codes >= 0
        fits = np.ones(nodes.size, dtype=bool)
        for key, allowed in found:
            column = nodes.label(key)
            codes = column.codes
            if key in _GA:  # the node's GA label where it lacks the beta one
                ga = nodes.label(_GA[key])
                ok = _allowed(codes, column.values, allowed)
                ok |= (codes < 0) & _allowed(ga.codes, ga.values, allowed)
            else:
                ok = _allowed(codes, column.values, allowed)
            fits &= ok
        removed = candidates & constrained & ~fits
        if not removed.any():
            return FilterResult(candidates)
        return FilterResult(candidates & ~removed, (Reason(removed, ERR_REASON_CONFLICT, False),))


def _allowed(codes: Any, values: tuple[str, ...], allowed: frozenset[str]) -> BoolMask:
    """The rows whose coded value is one of `allowed` (absent rows: False)."""
    table = np.array([value in allowed for value in values] + [False], dtype=bool)
    mask: BoolMask = table[np.where(codes >= 0, codes, len(values))]
    return mask

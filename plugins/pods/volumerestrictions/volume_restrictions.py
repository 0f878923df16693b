"""`VolumeRestrictions`: a ReadWriteOncePod claim is used by one pod at a time.

As kube's plugin: PreFilter reads the pod's `persistentVolumeClaim` volumes (a missing claim:
unresolvable, kube's message) and keeps those whose access modes include ReadWriteOncePod;
when some counted pod (bound or assumed, of the same namespace) already uses one of them, every
node fails with kube's reason, resolvably: preemption may help, on the node where the user
runs, once it is a victim (`nodes.overlay`: a user gone from the hypothetical node no longer
conflicts there; a nominated pod added on a node conflicts there). Otherwise the pod skips
Filter. The pods using claims are a subset of the pod index, kept up to date by the cache.

Inline disks (GCE PD, AWS EBS, iSCSI, Ceph RBD volumes written in the pod) conflict per node
as kube's rules say (`plugins.pods.volumerestrictions.disks`): a node running a pod with a
conflicting disk fails with kube's reason, resolvably (the pods with inline disks are another subset
of the index)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from apis.pluginargs import NoArgs
from apis.storage import PersistentVolumeClaim
from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.volumes import CLAIM_KIND, READ_WRITE_ONCE_POD
from placement.pods.framework.events import (
    ASSIGNED_POD_DELETE,
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
from plugins.pods.helper.volume_claims import claims_of
from plugins.pods.volumerestrictions.disks import Disk, conflict, inline_disks

__all__ = [
    "ERR_REASON_DISK_CONFLICT",
    "ERR_REASON_RWOP_CONFLICT",
    "USERS_SUBSET",
    "VolumeRestrictions",
    "named_claims",
]

ERR_REASON_RWOP_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
USERS_SUBSET = "VolumeRestrictions/claim-users"
DISKS_SUBSET = "VolumeRestrictions/inline-disks"


@dataclass(frozen=True)
class _State:
    rwop: set[str]
    disks: list[Disk]


def named_claims(pod: PodInfo) -> set[str]:
    """The claims the pod's `persistentVolumeClaim` volumes name."""
    return {
        v.persistent_volume_claim.claim_name
        for v in pod.pod.spec.volumes or ()
        if v.persistent_volume_claim is not None
    }


def _uses_claims(pod: PodInfo) -> bool:
    return any(v.persistent_volume_claim is not None for v in pod.pod.spec.volumes or ())


class VolumeRestrictions(PreFilter, Filter, EventHandler, RequeueHints):
    name = "VolumeRestrictions"
    requeue_on = frozenset({ASSIGNED_POD_DELETE})
    """kube registers pod deletions (freed room), not node events, for this plugin."""

    @classmethod
    def from_args(cls, args: NoArgs | Mapping[str, Any] | None = None) -> VolumeRestrictions:
        args_of(NoArgs, args)
        return cls()

    def _rwop(self, cycle: PodCycle, pod: PodInfo) -> set[str] | PodStatus:
        found: set[str] = set()
        names = named_claims(pod)
        if not names:
            return found  # no claim: the cluster is not read
        claims = claims_of(cycle.cluster)
        for name in sorted(names):
            claim = claims.get(f"{pod.namespace}/{name}")
            if not isinstance(claim, PersistentVolumeClaim):
                message = f'persistentvolumeclaim "{name}" not found'
                return PodStatus.unresolvable(self.name, message)
            if READ_WRITE_ONCE_POD in (claim.spec.access_modes or () if claim.spec else ()):
                found.add(name)
        return found

    def _users(self, cycle: PodCycle, pod: PodInfo, rwop: set[str]) -> list[PodInfo]:
        users = cycle.cluster.counted.subset(USERS_SUBSET, _uses_claims)
        return [
            other
            for other in users.values()
            if other.namespace == pod.namespace
            and other.key != pod.key
            and not rwop.isdisjoint(named_claims(other))
        ]

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool:
        """True when a claim was created or changed (the pods it rejected may fit now; a pod
        deleted makes the engine retry them anyway)."""
        return isinstance(event, ObjectEvent) and event.obj.KIND == CLAIM_KIND

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        if not pod.pod.spec.volumes:
            cycle.scratch.pop(self.name, None)
            return PreFilterResult(SKIP)  # most pods: nothing to read
        rwop = self._rwop(cycle, pod)
        if isinstance(rwop, PodStatus):
            return PreFilterResult(rwop)
        disks = inline_disks(pod)
        cycle.scratch[self.name] = _State(rwop, disks)
        if disks:
            return PreFilterResult()
        if rwop and (
            self._users(cycle, pod, rwop)
            or any(not rwop.isdisjoint(named_claims(p)) for _, p in nodes.overlay.added)
        ):
            return PreFilterResult()
        return PreFilterResult(SKIP)

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        if not pod.pod.spec.volumes:
            return FilterResult(candidates)
        state = cycle.scratch.get(self.name)
        if not isinstance(state, _State):
            found = self._rwop(cycle, pod)
            if isinstance(found, PodStatus):
                nothing = np.zeros(nodes.size, dtype=bool)
                return FilterResult(nothing, (Reason(candidates, found.message, False),))
            state = _State(found, inline_disks(pod))
        reasons: list[Reason] = []
        mask = candidates
        if state.disks:
            busy = self._disk_rows(cycle, pod, nodes, state.disks) & mask
            if busy.any():
                reasons.append(Reason(busy, ERR_REASON_DISK_CONFLICT))
                mask = mask & ~busy
        if state.rwop:
            taken = self._rwop_rows(cycle, pod, nodes, state.rwop) & mask
            if taken.any():
                reasons.append(Reason(taken, ERR_REASON_RWOP_CONFLICT))
                mask = mask & ~taken
        return FilterResult(mask, tuple(reasons))

    def _disk_rows(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, disks: list[Disk]
    ) -> BoolMask:
        """The rows running a pod whose inline disk conflicts with one of the pod's."""
        rows = np.zeros(nodes.size, dtype=bool)
        counted = cycle.cluster.counted
        overlay = nodes.overlay

        def clashes(other: PodInfo) -> bool:
            mine = inline_disks(other)
            return other.key != pod.key and any(conflict(a, b) for a in disks for b in mine)

        for other in counted.subset(DISKS_SUBSET, lambda p: bool(inline_disks(p))).values():
            where = counted.node_of(other.key)
            row = nodes.row_of(where) if where is not None else None
            if row is None or rows[row] or not clashes(other):
                continue
            if overlay.empty or not overlay.gone(other, row):
                rows[row] = True
        for row, added in overlay.added:
            if clashes(added):
                rows[row] = True
        return rows

    def _rwop_rows(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, rwop: set[str]
    ) -> BoolMask:
        """The rows where a pod using one of the ReadWriteOncePod claims is still there: every
        row while its user runs, but the user's own row once the overlay removed it there."""
        conflict_rows = np.zeros(nodes.size, dtype=bool)
        overlay = nodes.overlay
        for user in self._users(cycle, pod, rwop):
            if overlay.empty:
                conflict_rows[:] = True
                break
            if user.key in overlay.removed:
                continue  # a victim: gone wherever it ran
            where = cycle.cluster.counted.node_of(user.key)
            row = nodes.row_of(where) if where is not None else None
            if row is not None and overlay.gone(user, row):
                conflict_rows[:row] = True  # gone from its own node only
                conflict_rows[row + 1 :] = True
            else:
                conflict_rows[:] = True
        for row, added in overlay.added:
            mine = added.key != pod.key and added.namespace == pod.namespace
            if mine and not rwop.isdisjoint(named_claims(added)):
                conflict_rows[row] = True
        return conflict_rows

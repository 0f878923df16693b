"""`NodeVolumeLimits`: a node takes no more CSI volumes of a driver than its CSINode allows.

As kube v1.36's plugin (its CSI limits): PreFilter skips a pod without a claim, an ephemeral
volume or an inline in-tree volume kube migrates (most pods: nothing read). Filter resolves the
pod's volumes to (driver, volume) pairs (`plugins.pods.nodevolumelimits.attachable`); on each node
whose CSINode gives `allocatable.count` for one of those drivers, the distinct volumes of the
counted pods there (bound and assumed; preemption's victims left out, nominated pods added) plus the
pod's new ones must not exceed the count, or the node fails with kube's `node(s) exceed max volume
count` (resolvable: preemption may free volumes). A volume the node has already (a claim shared with
a pod there) costs nothing more. A node without a CSINode, or without a count for the driver, has no
limit. A claim the pod names that does not exist makes it unresolvable with kube's message. The
counted pods' volumes are kept per node by
`plugins.pods.nodevolumelimits.attach_index` (fed by the pod index's changes): the check is a
comparison of numpy columns, exact per row only where the pod's volumes are attached already or
preemption's overlay applies.

The node's VolumeAttachments count too, as kube's: a CSI volume attached there (by the
attacher and the PV's handle, `plugins.pods.nodevolumelimits.attachments`) holds a slot until its
attachment is gone, even after its pod left; one also used by a pod there is counted once, and a
pod's volume attached there already costs nothing more. Requeueing as kube registers it: an assigned
pod deleted (freed room), a CSINode added or a limit raised, a claim the refused pod uses added, a
VolumeAttachment deleted (for a refused pod with a claim, or with an inline volume migrating to the
driver of the attachment's inline spec)."""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

import numpy as np

from apis.csinode import CSINode, attach_limits
from apis.pluginargs import NoArgs
from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.volumes import CLAIM_KIND, CLASS_KIND, VOLUME_KIND, pod_claims
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
    PreFilter,
    PreFilterResult,
    Reason,
)
from plugins.pods.helper.args import args_of
from plugins.pods.helper.volume_claims import claims_of, storage_class, volume
from plugins.pods.nodevolumelimits.attach_index import AttachIndex, Column, Volumes
from plugins.pods.nodevolumelimits.attachable import attachable, inline_drivers, may_attach
from plugins.pods.nodevolumelimits.attachments import ATTACHMENT_KIND, Attachments

__all__ = ["CSINODE_KIND", "ERR_REASON_MAX_VOLUME_COUNT", "NodeVolumeLimits"]

ERR_REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"
CSINODE_KIND = "CSINode"


def _uses_volumes(pod: PodInfo) -> bool:
    return may_attach(pod.pod)


class _Limits:
    """The attach limits per driver, as a column over the snapshot's rows (-1: no limit),
    kept while neither the CSINodes nor the snapshot's nodes change."""

    def __init__(self) -> None:
        self._source: tuple[object, object] | None = None
        self._columns: dict[str, Column] = {}

    def column(
        self, driver: str, csinodes: Mapping[str, Any], nodes: NodeSnapshot, version: int
    ) -> Column:
        source = (version, nodes.names)
        if self._source is None or self._source[0] != version or self._source[1] is not nodes.names:
            self._source, self._columns = source, {}
        found = self._columns.get(driver)
        if found is None:
            found = np.full(nodes.size, -1, dtype=np.int64)
            for name, obj in csinodes.items():
                limit = attach_limits(obj if isinstance(obj, CSINode) else None).get(driver)
                row = nodes.row_of(name) if limit is not None else None
                if row is not None and limit is not None:
                    found[row] = limit
            self._columns[driver] = found
        return found


class NodeVolumeLimits(PreFilter, Filter, EventHandler, RequeueHints):
    name = "NodeVolumeLimits"
    requeue_on = frozenset({ASSIGNED_POD_DELETE})
    """kube registers assigned pods' deletions, not node events, for this plugin."""

    def __init__(self) -> None:
        self._limits = _Limits()
        self._version = 0  # counts CSINode events: the limit columns are rebuilt after one
        self._known: dict[str, dict[str, int]] = {}  # CSINode name -> its limits, as last seen
        self._index = AttachIndex()
        self._refused: dict[str, set[str]] = {}  # claim key -> the refused pods using it
        self._attachments = Attachments()
        self._attachment_events = False  # whether VolumeAttachment events reach the plugin
        # refused pod key -> (it has a claim, the drivers its inline volumes migrate to)
        self._waiting: dict[str, tuple[bool, frozenset[str]]] = {}

    @classmethod
    def from_args(cls, args: NoArgs | Mapping[str, Any] | None = None) -> NodeVolumeLimits:
        args_of(NoArgs, args)
        return cls()

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool | Set[str]:
        """True when a CSINode came or raised (or dropped) a limit; when a claim was added, the
        pods this plugin refused that use it (kube's hint: an unrelated claim helps nobody)."""
        if not isinstance(event, ObjectEvent):
            return False
        kind = event.obj.KIND
        if kind == ATTACHMENT_KIND:
            self._attachment_events = True
            self._attachments.invalidate()
            return self._detached(event.obj) if event.type == "Deleted" else False
        if kind in (CLAIM_KIND, VOLUME_KIND, CLASS_KIND):
            self._attachments.invalidate()  # an attachment's volume may have changed
            self._index.invalidate()  # what the counted pods' volumes resolve to may change
            if kind != CLAIM_KIND or event.type != "Added":
                return False
            meta = event.obj.metadata
            return self._refused.pop(f"{meta.namespace or 'default'}/{meta.name}", set())
        if kind != CSINODE_KIND:
            return False
        self._version += 1
        name = event.obj.metadata.name or ""
        before = self._known.pop(name, None)
        if event.type == "Deleted" or not isinstance(event.obj, CSINode):
            return False
        after = self._known[name] = attach_limits(event.obj)
        if before is None:
            return True
        return any(after.get(d, 2**62) > limit for d, limit in before.items())

    def _detached(self, obj: Any) -> set[str]:
        """The refused pods a deleted attachment may help (kube's hint): those with a claim, or
        with an inline volume migrating to the driver of the attachment's inline spec."""
        spec = getattr(obj, "spec", None)
        inline = (spec.source.inline_volume_spec or {}) if spec and spec.source else {}
        csi = inline.get("csi")
        driver = str(csi.get("driver") or "") if isinstance(csi, Mapping) else ""
        found = {
            key
            for key, (claims, drivers) in self._waiting.items()
            if claims or (driver and driver in drivers)
        }
        for key in found:
            del self._waiting[key]
        return found

    def _volumes(self, cycle: PodCycle, pod: PodInfo, strict: bool) -> Volumes | str:
        cluster = cycle.cluster
        return attachable(
            pod.pod,
            claims_of(cluster),
            lambda name: volume(cluster, name),
            lambda name: storage_class(cluster, name),
            strict=strict,
        )

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        if not pod.pod.spec.volumes or not may_attach(pod.pod):
            cycle.scratch.pop(self.name, None)
            return PreFilterResult(SKIP)  # most pods: nothing to read
        cycle.scratch.pop(self.name, None)
        return PreFilterResult()

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        if not pod.pod.spec.volumes:
            return FilterResult(candidates)
        new = cycle.scratch.get(self.name)
        if new is None:
            new = cycle.scratch[self.name] = self._volumes(cycle, pod, strict=True)
        if isinstance(new, str):
            self._remember(pod)
            nothing = np.zeros(nodes.size, dtype=bool)
            return FilterResult(nothing, (Reason(candidates, new, False),))
        if not new:
            return FilterResult(candidates)
        wanted: dict[str, int] = {}
        for driver in new.values():
            wanted[driver] = wanted.get(driver, 0) + 1
        limits = self._columns(cycle, nodes, set(wanted))
        limited = candidates & np.any(np.stack(list(limits.values())) >= 0, axis=0)
        if not limited.any():
            return FilterResult(candidates)
        index, attachments = self._index, self._attachments
        index.sync(cycle.cluster.counted, lambda other: self._resolved(cycle, other))
        attachments.sync(
            cycle.cluster.objects(ATTACHMENT_KIND),
            lambda name: volume(cycle.cluster, name),
            self._attachment_events,
        )
        over = np.zeros(nodes.size, dtype=bool)
        for driver, count in wanted.items():
            limit, held = limits[driver], index.attached(driver, nodes)
            extra = attachments.extra(driver, nodes, index.refs)
            if extra is not None:
                held = held + extra
            over |= (limit >= 0) & (held + count > limit)
        over &= limited
        # Rows where the count above is not exact: one of the pod's volumes is there already
        # (used by a pod, or attached), or preemption's overlay changes the node's pods (then
        # every limited row).
        if nodes.overlay.empty:
            where = [
                *(index.where.get(k, ()) for k in new),
                *(attachments.where.get(k, ()) for k in new),
            ]
            exact = {r for found in where for n in found if (r := nodes.row_of(n)) is not None}
        else:
            exact = {int(r) for r in np.flatnonzero(limited)}
        for row in exact:
            if limited[row]:
                over[row] = self._exceeds(cycle, pod, nodes, row, new, limits)
        if not over.any():
            return FilterResult(candidates)
        self._remember(pod)
        return FilterResult(candidates & ~over, (Reason(over, ERR_REASON_MAX_VOLUME_COUNT),))

    def _remember(self, pod: PodInfo) -> None:
        """Note the claims of a pod this plugin refused nodes to (for the claim-added hint) and
        what a detached volume must match to help it."""
        claims = False
        for used in pod_claims(pod.pod):
            self._refused.setdefault(f"{pod.namespace}/{used.name}", set()).add(pod.key)
            claims = claims or not used.ephemeral  # kube's detach hint: a claim, not ephemeral
        self._waiting[pod.key] = (claims, frozenset(inline_drivers(pod.pod)))

    def _resolved(self, cycle: PodCycle, other: PodInfo) -> Volumes:
        found = self._volumes(cycle, other, strict=False)
        return found if isinstance(found, dict) else {}

    def _exceeds(
        self,
        cycle: PodCycle,
        pod: PodInfo,
        nodes: NodeSnapshot,
        row: int,
        new: Volumes,
        limits: dict[str, Column],
    ) -> bool:
        """The exact check on one row: the volumes of the pods there (the overlay applied)."""
        there: Volumes = {}
        overlay = nodes.overlay
        counted = cycle.cluster.counted.pods()
        for pod_key in self._index.on_node(nodes.names[row]):
            other = counted.get(pod_key)
            if other is None or pod_key == pod.key:
                continue
            if overlay.empty or not overlay.gone(other, row):
                there.update(self._index.volumes_of(pod_key))
        for added_row, added in overlay.added:
            if added_row == row and added.key != pod.key and _uses_volumes(added):
                there.update(self._resolved(cycle, added))
        there.update(self._attachments.on(nodes.names[row]))  # detached with no pod
        attached: dict[str, int] = {}
        for driver in there.values():
            attached[driver] = attached.get(driver, 0) + 1
        wanted: dict[str, int] = {}
        for unique, driver in new.items():
            if unique not in there:
                wanted[driver] = wanted.get(driver, 0) + 1
        for driver, count in wanted.items():
            limit = int(limits[driver][row])
            if limit >= 0 and attached.get(driver, 0) + count > limit:
                return True
        return False

    def _columns(
        self, cycle: PodCycle, nodes: NodeSnapshot, drivers: set[str]
    ) -> dict[str, Column]:
        csinodes = cycle.cluster.objects(CSINODE_KIND)
        if not self._known and csinodes:
            self._version += 1  # fed without events (a plugin used without an engine)
        return {d: self._limits.column(d, csinodes, nodes, self._version) for d in drivers}

"""`VolumeBinding`: a pod runs where its claims' volumes are reachable, and its unbound
WaitForFirstConsumer claims get a volume on the node chosen.

As kube's plugin: PreFilter finds the pod's claims (a missing one, or an unbound claim whose
class binds Immediately, makes the pod unresolvable with kube's message) and skips pods without
any; Filter keeps the nodes where every bound claim's volume admits the node (its
`nodeAffinity`) and where each unbound WaitForFirstConsumer claim finds an available volume —
same class, volume mode and access modes, capacity at least the request, matching the claim's
selector, not bound nor assumed for another claim, admitting the node — the claims taken
smallest request first, each the smallest volume that fits, no volume twice. Every reason is
unresolvable (preemption frees no volume). Reserve assumes the volumes chosen on the node (a
second pod of the same batch cannot take them); PreBind asks the shell to bind them
(`BindVolumes`: on a cluster, as kube's plugin, the volume's claimRef, then a wait of at most
`bindTimeoutSeconds` for the PV controller to bind the claim) before the pod is bound;
Unreserve forgets the assumption. An assumption ends when the volume is seen claimed.

Dynamic provisioning (`_provisioning`): a claim left without a static volume on a node is
provisioned there when its class can (provisioner, allowedTopologies, the CSI driver's published
CSIStorageCapacity), with kube's reasons otherwise (`node(s) didn't find available persistent
volumes to bind`, `node(s) did not have enough free storage`). Reserve assumes the chosen node
as the claim's selected node (a second pod using the claim goes there too); PreBind asks the
shell to write `volume.kubernetes.io/selected-node` on the claim and wait, as for the static
volumes, until the provisioner's volume is bound to it (`BindVolumes.provisions`). Unreserve
forgets the assumption, as kube's (a node written on the claim stays: the claim is retried there
until the provisioner gives up and removes it).

Score (kube's StorageCapacityScoring, on when the args give a `shape`): per node, the volumes
the pod would be bound to there, grouped by class, their requested/capacity utilization through
the shape, averaged over the classes; 0 without a shape or without volumes to bind, as kube's.

A claim counts as bound once its `volumeName` is set (kube also waits for the PV controller's
bind-completed annotation; a claim pre-bound by hand is bound here).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from apis.pluginargs import VolumeBindingArgs
from apis.storage import (
    PersistentVolume,
    PersistentVolumeClaim,
    claim_class,
    volume_class,
)
from placement.arrays import BoolMask, RowIndex, ScoreVector
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.podinfo import pod_key
from placement.pods.cluster.volumes import (
    CLAIM_KIND,
    CLASS_KIND,
    VOLUME_KIND,
    claim_request,
    is_bound_to,
    volume_capacity,
    volume_claimed_by,
)
from placement.pods.framework.events import BindVolumes, ClusterEvent, ObjectEvent, PodEvent
from placement.pods.framework.interface import (
    POD_SUCCESS,
    SKIP,
    ClusterView,
    EventHandler,
    Filter,
    FilterResult,
    PodCycle,
    PodInfo,
    PodStatus,
    PreBind,
    PreBindResult,
    PreFilter,
    PreFilterResult,
    Reason,
    Reserve,
    Score,
)
from placement.pods.framework.noscore import no_scores
from plugins.pods.helper.args import args_of
from plugins.pods.helper.shape_score import ShapePoint, broken_linear
from plugins.pods.helper.volume_claims import (
    VolumeMasks,
    claims_or_problem,
    storage_class,
    volume,
)
from plugins.pods.volumebinding.provisioning import (
    CAPACITY_KIND,
    DRIVER_KIND,
    ERR_REASON_NOT_ENOUGH_SPACE,
    Claim,
    assign,
    provisioning_masks,
    selected_node,
)
from plugins.pods.volumebinding.volume_index import VolumeIndex

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "ERR_UNBOUND_IMMEDIATE",
    "VolumeBinding",
]

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
MAX_UTILIZATION = 100


def _key(claim: PersistentVolumeClaim) -> str:
    return pod_key(claim.metadata.namespace, claim.metadata.name)


@dataclass
class _State:
    """The pod's claims found at PreFilter, with the snapshot their masks are over."""

    bound: list[tuple[PersistentVolumeClaim, PersistentVolume | None]]
    unbound: list[Claim]
    nodes: NodeSnapshot


class VolumeBinding(PreFilter, Filter, Score, Reserve, PreBind, EventHandler):
    name = "VolumeBinding"

    def __init__(self, args: VolumeBindingArgs | None = None) -> None:
        self.args = args or VolumeBindingArgs()
        shape = self.args.shape
        self._shape = [ShapePoint(p.utilization, p.score) for p in shape] if shape else None
        self._masks = VolumeMasks()
        self._index = VolumeIndex()
        self._assumed: dict[str, str] = {}  # volume name -> claim key it is assumed bound to
        self._selected: dict[str, str] = {}  # claim key -> node Reserve chose to provision on
        self._by_pod: dict[str, _Chosen] = {}  # what Reserve chose

    @classmethod
    def from_args(cls, args: VolumeBindingArgs | Mapping[str, Any] | None = None) -> VolumeBinding:
        return cls(args_of(VolumeBindingArgs, args))

    def assumed(self) -> Mapping[str, str]:
        """Volumes assumed bound (name -> claim key), until seen claimed or unreserved."""
        return dict(self._assumed)

    # --- PreFilter ---------------------------------------------------------------------------

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        if not pod.pod.spec.volumes:
            cycle.scratch.pop(self.name, None)
            return PreFilterResult(SKIP)  # most pods: nothing to read
        claims, problem = claims_or_problem(cycle.cluster, pod)
        if problem is not None:
            return PreFilterResult(PodStatus.unresolvable(self.name, problem))
        if not claims:
            cycle.scratch.pop(self.name, None)
            return PreFilterResult(SKIP)
        bound: list[tuple[PersistentVolumeClaim, PersistentVolume | None]] = []
        delayed: list[PersistentVolumeClaim] = []
        for claim in claims:
            name = claim.spec.volume_name if claim.spec else None
            if name:
                bound.append((claim, volume(cycle.cluster, name)))
                continue
            cls = storage_class(cycle.cluster, claim_class(claim))
            if cls is None or cls.volume_binding_mode != WAIT_FOR_FIRST_CONSUMER:
                return PreFilterResult(PodStatus.unresolvable(self.name, ERR_UNBOUND_IMMEDIATE))
            delayed.append(claim)
        delayed.sort(key=claim_request)  # stable: equal requests keep volume order
        unbound = [self._candidates(cycle.cluster, claim, nodes) for claim in delayed]
        cycle.scratch[self.name] = _State(bound, unbound, nodes)
        return PreFilterResult()

    def _candidates(
        self, cluster: ClusterView, claim: PersistentVolumeClaim, nodes: NodeSnapshot
    ) -> Claim:
        key = _key(claim)
        cls = claim_class(claim)
        own = [pv for pv in self._index.claimed_by(cluster, key) if is_bound_to(pv, claim)]
        pool = self._index.pool(cluster, cls)
        for name, claimed in self._assumed.items():  # assumed for it by an earlier cycle's pod
            row = pool.row_of.get(name)
            if claimed == key and row is not None:
                own.append(pool.volumes[row])
        if own:  # a volume bound (or assumed) to the claim is its only choice
            picked = own[:1]
            masks = self._masks.of(picked[0], nodes)[np.newaxis, :]
        else:
            rows = pool.matching(claim, set(self._assumed))
            picked = [pool.volumes[i] for i in rows]
            masks = pool.masks(nodes, self._masks)[rows]
        conflict, short = provisioning_masks(cluster, claim, storage_class(cluster, cls), nodes)
        selected = selected_node(claim) or self._selected.get(key)
        return Claim(claim, key, picked, masks, selected, conflict, short)

    # --- Filter ------------------------------------------------------------------------------

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        if not pod.pod.spec.volumes:
            return FilterResult(candidates)
        state = cycle.scratch.get(self.name)
        if not isinstance(state, _State) or state.nodes.size != nodes.size:
            found = self.pre_filter(cycle, pod, nodes)
            state = cycle.scratch.get(self.name)
            if not found.status.ok:
                nothing = np.zeros(nodes.size, dtype=bool)
                return FilterResult(nothing, (Reason(candidates, found.status.message, False),))
            if not isinstance(state, _State):
                return FilterResult(candidates)
        failed: dict[str, BoolMask] = {}

        def fail(rows: BoolMask, message: str) -> None:
            rows = rows & candidates
            if rows.any():
                failed[message] = failed[message] | rows if message in failed else rows

        for _, pv in state.bound:
            if pv is None:
                fail(candidates, ERR_REASON_PV_NOT_EXIST)
            else:
                fail(~self._masks.of(pv, nodes), ERR_REASON_NODE_CONFLICT)
        if state.unbound:
            self._filter_unbound(state, candidates, fail)
        if not failed:
            return FilterResult(candidates)
        removed = np.zeros(nodes.size, dtype=bool)
        for rows in failed.values():
            removed |= rows
        reasons = tuple(Reason(rows, message, False) for message, rows in failed.items())
        return FilterResult(candidates & ~removed, reasons)

    def _filter_unbound(self, state: _State, candidates: BoolMask, fail: Any) -> None:
        size = candidates.shape[0]
        decided = np.zeros(size, dtype=bool)  # rows whose reason is known
        conflict = np.zeros(size, dtype=bool)
        short = np.zeros(size, dtype=bool)
        chosen = [c for c in state.unbound if c.selected is not None]
        matching = [c for c in state.unbound if c.selected is None]
        for claim in chosen:  # kube's fast path: a claim provisioned for another node
            elsewhere = ~decided
            row = state.nodes.row_of(claim.selected or "")
            if row is not None:
                elsewhere[row] = False
            conflict |= elsewhere
            decided |= elsewhere
        unmatched: list[BoolMask] = [
            np.logical_not(c.masks.any(axis=0)) if len(c.candidates) else np.ones(size, bool)
            for c in matching
        ]
        if len(matching) > 1:  # volumes each claim could take may be the same ones
            reach = np.zeros(size, dtype=np.int32)
            for missing in unmatched:
                reach += ~missing
            for contested in np.flatnonzero((reach > 1) & candidates & ~decided):
                _static_rows(matching, unmatched, int(contested))
        for claim, need in [(c, ~decided) for c in chosen] + list(
            zip(matching, unmatched, strict=True)
        ):
            need = need & ~decided
            rows = need & claim.conflict
            conflict |= rows
            decided |= rows
            rows = need & claim.short
            short |= rows
            decided |= rows
        fail(conflict, ERR_REASON_BIND_CONFLICT)
        fail(short, ERR_REASON_NOT_ENOUGH_SPACE)

    # --- Score -------------------------------------------------------------------------------

    def score(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, rows: RowIndex
    ) -> ScoreVector:
        state = cycle.scratch.get(self.name)
        if self._shape is None or not isinstance(state, _State) or not state.unbound:
            return no_scores(len(rows))  # no claim to provision: Skip
        out = np.zeros(len(rows), dtype=np.int64)
        for i, row in enumerate(rows):
            found = assign(state.unbound, int(row), state.nodes.names[int(row)])
            if found is not None and found[0]:  # scored by the static volumes
                out[i] = self._capacity_score(found[0])
        return out

    def _capacity_score(self, picks: list[tuple[Claim, PersistentVolume]]) -> int:
        assert self._shape is not None
        by_class: dict[str, list[int]] = {}
        for unbound, pv in picks:
            used = by_class.setdefault(volume_class(pv), [0, 0])
            used[0] += claim_request(unbound.claim)
            used[1] += volume_capacity(pv)
        utilization = [
            MAX_UTILIZATION
            if capacity == 0 or requested > capacity
            else requested * MAX_UTILIZATION // capacity
            for requested, capacity in by_class.values()
        ]
        scores = broken_linear(self._shape, np.array(utilization, dtype=np.int64))
        return math.floor(int(scores.sum()) / len(utilization) + 0.5)  # Go's math.Round

    # --- Reserve, PreBind --------------------------------------------------------------------

    def reserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> PodStatus:
        state = cycle.scratch.get(self.name)
        if not isinstance(state, _State) or not state.unbound:
            return POD_SUCCESS
        row = state.nodes.row_of(node)
        found = assign(state.unbound, row, node) if row is not None else None
        if found is None:
            return PodStatus.error(self.name, f"no volumes to assume on node {node!r}")
        picks, provisions = found
        chosen = _Chosen(
            tuple((u.key, u.claim.metadata.uid or "", pv.metadata.name or "") for u, pv in picks),
            tuple((u.key, u.claim.metadata.uid or "") for u in provisions),
        )
        for claim, _, pv in chosen.volumes:
            self._assumed[pv] = claim
        for claim, _ in chosen.provisions:
            self._selected[claim] = node
        self._by_pod[pod.key] = chosen
        return POD_SUCCESS

    def unreserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> None:
        chosen = self._by_pod.pop(pod.key, None)
        if chosen is None:
            return
        for claim, _, pv in chosen.volumes:
            if self._assumed.get(pv) == claim:
                del self._assumed[pv]
        for claim, _ in chosen.provisions:
            if self._selected.get(claim) == node:
                del self._selected[claim]

    def pre_bind(self, cycle: PodCycle, pod: PodInfo, node: str) -> PreBindResult:
        chosen = self._by_pod.get(pod.key)
        if chosen is None or not (chosen.volumes or chosen.provisions):
            return PreBindResult()
        timeout = float(self.args.bind_timeout_seconds)
        action = BindVolumes(pod.key, pod.uid, node, chosen.volumes, timeout, chosen.provisions)
        return PreBindResult(actions=(action,))

    # --- events ------------------------------------------------------------------------------

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool:
        if isinstance(event, PodEvent):
            pod = event.pod
            if event.type == "Deleted" or pod.spec.node_name:
                self._by_pod.pop(pod_key(pod.metadata.namespace, pod.metadata.name), None)
            return False
        if not isinstance(event, ObjectEvent):
            return False
        obj = event.obj
        kind = obj.KIND
        if kind == VOLUME_KIND and isinstance(obj, PersistentVolume):
            name = obj.metadata.name or ""
            self._index.update(name, None if event.type == "Deleted" else obj)
            if name in self._assumed and (
                event.type == "Deleted" or volume_claimed_by(obj) is not None
            ):
                del self._assumed[name]  # the API shows what was assumed (or the volume left)
        elif kind == CLAIM_KIND and isinstance(obj, PersistentVolumeClaim):
            key = _key(obj)
            if key in self._selected and (
                event.type == "Deleted" or selected_node(obj) or (obj.spec and obj.spec.volume_name)
            ):
                del self._selected[key]  # the API shows the node chosen (or the claim left)
        return kind in (VOLUME_KIND, CLAIM_KIND, CLASS_KIND, DRIVER_KIND, CAPACITY_KIND)


@dataclass(frozen=True)
class _Chosen:
    """What Reserve chose for a pod: `(claim key, claim uid, volume)` for each static volume,
    `(claim key, claim uid)` for each claim to provision on the node."""

    volumes: tuple[tuple[str, str, str], ...]
    provisions: tuple[tuple[str, str], ...]


def _static_rows(claims: list[Claim], unmatched: list[BoolMask], row: int) -> None:
    """On a row several claims may reach: mark in `unmatched` the claims left without a static
    volume once the earlier ones (smallest request first) took theirs (none twice)."""
    taken: set[str] = set()
    for claim, missing in zip(claims, unmatched, strict=True):
        for i, pv in enumerate(claim.candidates):
            name = pv.metadata.name or ""
            if claim.masks[i, row] and name not in taken:
                taken.add(name)
                break
        else:
            missing[row] = True

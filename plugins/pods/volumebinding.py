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

Score (kube's StorageCapacityScoring, on when the args give a `shape`): per node, the volumes
the pod would be bound to there, grouped by class, their requested/capacity utilization through
the shape, averaged over the classes; 0 without a shape or without volumes to bind, as kube's.

Dynamic provisioning is not implemented: a claim without a fitting volume whose class has a
provisioner is refused with kube's reason and a note saying so, never placed and left pending.
A claim counts as bound once its `volumeName` is set (kube also waits for the PV controller's
bind-completed annotation; a claim pre-bound by hand is bound here).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from apis.pluginargs import VolumeBindingArgs
from apis.storage import (
    NO_PROVISIONER,
    PersistentVolume,
    PersistentVolumeClaim,
    claim_class,
    volume_class,
)
from placement.arrays import BoolMask, RowIndex, ScoreVector
from placement.pods.events import BindVolumes, ClusterEvent, ObjectEvent, PodEvent
from placement.pods.framework import (
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
from placement.pods.nodes import NodeSnapshot
from placement.pods.noscore import no_scores
from placement.pods.podinfo import pod_key
from placement.pods.volumes import (
    CLAIM_KIND,
    CLASS_KIND,
    VOLUME_KIND,
    claim_request,
    is_bound_to,
    volume_capacity,
    volume_claimed_by,
)
from plugins.pods._shared import args_of
from plugins.pods._volume_index import VolumeIndex
from plugins.pods._volumes import (
    VolumeMasks,
    claims_or_problem,
    storage_class,
    volume,
)
from plugins.pods.noderesourcesfit import ShapePoint, _broken_linear
from plugins.pods.unsupportedfeatures import SCHEDULER

__all__ = [
    "DYNAMIC_PROVISIONING",
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
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
DYNAMIC_PROVISIONING = f" (dynamic provisioning is not implemented by {SCHEDULER})"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
MAX_UTILIZATION = 100


def _key(claim: PersistentVolumeClaim) -> str:
    return pod_key(claim.metadata.namespace, claim.metadata.name)


@dataclass
class _Unbound:
    """An unbound WaitForFirstConsumer claim and the volumes it may take, smallest first, with
    the rows each admits (`masks[i]` for `candidates[i]`)."""

    claim: PersistentVolumeClaim
    candidates: list[PersistentVolume]
    masks: npt.NDArray[np.bool_]
    provisionable: bool

    @property
    def key(self) -> str:
        return _key(self.claim)


@dataclass
class _State:
    """The pod's claims found at PreFilter, with the snapshot their masks are over."""

    bound: list[tuple[PersistentVolumeClaim, PersistentVolume | None]]
    unbound: list[_Unbound]
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
        self._by_pod: dict[str, tuple[tuple[str, str, str], ...]] = {}  # what Reserve chose

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
    ) -> _Unbound:
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
        sc = storage_class(cluster, cls)
        provisioner = (sc.provisioner if sc else None) or ""
        return _Unbound(claim, picked, masks, provisioner not in ("", NO_PROVISIONER))

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
        every = np.ones(size, dtype=bool)
        dynamic = np.zeros(size, dtype=bool)
        plain = np.zeros(size, dtype=bool)
        for unbound in state.unbound:
            reachable = (
                unbound.masks.any(axis=0) if len(unbound.candidates) else np.zeros(size, dtype=bool)
            )
            every &= reachable
            (dynamic if unbound.provisionable else plain)[...] |= ~reachable
        if len(state.unbound) > 1:  # volumes each claim could take may be the same ones
            for row in np.flatnonzero(every & candidates):
                if _choose(state.unbound, int(row)) is None:
                    plain[row] = True
        fail(dynamic, ERR_REASON_BIND_CONFLICT + DYNAMIC_PROVISIONING)
        fail(plain & ~dynamic, ERR_REASON_BIND_CONFLICT)

    # --- Score -------------------------------------------------------------------------------

    def score(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, rows: RowIndex
    ) -> ScoreVector:
        state = cycle.scratch.get(self.name)
        if self._shape is None or not isinstance(state, _State) or not state.unbound:
            return no_scores(len(rows))  # no claim to provision: Skip
        out = np.zeros(len(rows), dtype=np.int64)
        for i, row in enumerate(rows):
            picks = _choose(state.unbound, int(row))
            if picks:
                out[i] = self._capacity_score(picks)
        return out

    def _capacity_score(self, picks: list[tuple[_Unbound, PersistentVolume]]) -> int:
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
        scores = _broken_linear(self._shape, np.array(utilization, dtype=np.int64))
        return math.floor(int(scores.sum()) / len(utilization) + 0.5)  # Go's math.Round

    # --- Reserve, PreBind --------------------------------------------------------------------

    def reserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> PodStatus:
        state = cycle.scratch.get(self.name)
        if not isinstance(state, _State) or not state.unbound:
            return POD_SUCCESS
        row = state.nodes.row_of(node)
        picks = _choose(state.unbound, row) if row is not None else None
        if picks is None:
            return PodStatus.error(self.name, f"no volumes to assume on node {node!r}")
        chosen = tuple(
            (u.key, u.claim.metadata.uid or "", pv.metadata.name or "") for u, pv in picks
        )
        for claim, _, pv in chosen:
            self._assumed[pv] = claim
        self._by_pod[pod.key] = chosen
        return POD_SUCCESS

    def unreserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> None:
        for claim, _, pv in self._by_pod.pop(pod.key, ()):
            if self._assumed.get(pv) == claim:
                del self._assumed[pv]

    def pre_bind(self, cycle: PodCycle, pod: PodInfo, node: str) -> PreBindResult:
        chosen = self._by_pod.get(pod.key)
        if not chosen:
            return PreBindResult()
        timeout = float(self.args.bind_timeout_seconds)
        return PreBindResult(actions=(BindVolumes(pod.key, pod.uid, node, chosen, timeout),))

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
        return kind in (VOLUME_KIND, CLAIM_KIND, CLASS_KIND)


def _choose(unbound: list[_Unbound], row: int) -> list[tuple[_Unbound, PersistentVolume]] | None:
    """For each claim (smallest request first) the smallest volume admitting `row` that no
    earlier claim took; None when some claim finds none."""
    taken: set[str] = set()
    picks: list[tuple[_Unbound, PersistentVolume]] = []
    for claim in unbound:
        for i, pv in enumerate(claim.candidates):
            name = pv.metadata.name or ""
            if claim.masks[i, row] and name not in taken:
                taken.add(name)
                picks.append((claim, pv))
                break
        else:
            return None
    return picks

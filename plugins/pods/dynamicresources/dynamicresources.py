"""`DynamicResources`: a pod runs where the devices its ResourceClaims ask for can be allocated
(dynamic resource allocation, kube-scheduler v1.36's plugin of the same name).

* **PreEnqueue** keeps a pod out of the queue until each claim it names exists (a template
  entry: until kube-controller-manager made its claim and named it in
  `status.resourceClaimStatuses`), is not being deleted and, made from a template, belongs to
  this pod; kube's words (`pod "ns/p": ResourceClaim not created yet`, `could not find
  ResourceClaim "ns/c"`, ...).
* **PreFilter** looks the claims up again (same words), skips pods without any, refuses a claim
  allocated and reserved for the most consumers a claim may have (`resourceclaim in use`), one
  whose allocation another pod has in flight, and a request naming a DeviceClass that does not
  exist (`request gpu: device class gpu.example.com does not exist`); all unresolvable, so the
  pod waits for a claim, class or slice event. The claims not allocated yet go to the
  allocator's `prepare`.
* **Filter**, over every node at once: an allocated claim's `allocation.nodeSelector` keeps the
  nodes it admits (`resourceclaim not available on the node`), the allocator's `feasible` the
  nodes where every unallocated claim finds devices (`cannot allocate all claims`, which kube
  reports first on a node failing both). Both unresolvable, as kube's: preemption frees no
  device.
* **PostFilter** runs, as kube's, for every pod that fits nowhere: `not found` (an error, which
  ends the chain before preemption) when an earlier PreFilter refused the pod so this plugin's
  never ran, `no new claims to deallocate` for a pod without claims, `still not schedulable`
  otherwise (kube's deallocation of an allocated claim nobody uses is left to the resourceclaim
  controller, which does it for such a claim anyway).
* **Reserve** allocates the claims on the chosen node and keeps the devices in flight, so the
  next pod of the same batch cannot take them; a claim already allocated is only to be
  reserved. **Unreserve** forgets the flight. An allocation stays in flight until the claim is
  seen allocated (or deleted, or its pod gone).
* **PreBind** asks the shell for the writes (`AllocateClaims`): each claim's allocation (None
  for one allocated already) with the pod added to `status.reservedFor`.
* **Events** feed the device inventory (ResourceSlices, DeviceClasses) and the devices in use
  (allocated claims); requeue hints as kube's: a claim created, deallocated or whose status
  changed, a DeviceClass or ResourceSlice added or updated, a node added or updated, the pod's
  own claim statuses written.

The allocator is a `DraBackend` (`plugins.pods.dynamicresources.allocation` wires
`placement.pods.dra`'s structured allocator and the device CEL selectors)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from apis.pluginargs import DynamicResourcesArgs
from apis.resource import DeviceClass, ResourceClaim, ResourceSlice
from placement.arrays import BoolMask
from placement.pods.cluster.affinity import selector_terms_mask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.podinfo import pod_key
from placement.pods.framework.events import (
    NODE_ADD_OR_UPDATE,
    AllocateClaims,
    ClaimAllocation,
    ClusterEvent,
    ObjectEvent,
    PodEvent,
    RequeueHints,
)
from placement.pods.framework.interface import (
    POD_SUCCESS,
    SKIP,
    ClusterView,
    Diagnosis,
    EventHandler,
    Filter,
    FilterResult,
    PodCode,
    PodCycle,
    PodInfo,
    PodStatus,
    PostFilter,
    PostFilterResult,
    PreBind,
    PreBindResult,
    PreEnqueue,
    PreFilter,
    PreFilterResult,
    Reason,
    Reserve,
)
from placement.selectors import SelectorError
from plugins.pods.dynamicresources.allocation import default_backend
from plugins.pods.dynamicresources.claims import (
    CLAIM_KIND,
    CLASS_KIND,
    SLICE_KIND,
    ClaimLookupError,
    DraAllocationError,
    allocated_selector,
    can_be_reserved,
    claim_key,
    class_problem,
    is_reserved_for,
    node_labels,
    pod_claims,
)
from plugins.pods.helper.args import args_of

__all__ = [
    "ERR_CANNOT_ALLOCATE",
    "ERR_IN_USE",
    "ERR_NOT_AVAILABLE",
    "DraAllocationError",
    "DraBackend",
    "DynamicResources",
]

ERR_CANNOT_ALLOCATE = "cannot allocate all claims"
ERR_NOT_AVAILABLE = "resourceclaim not available on the node"
ERR_IN_USE = "resourceclaim in use"
NO_CLAIMS = "no new claims to deallocate"
STILL_NOT_SCHEDULABLE = "still not schedulable"
NO_STATE = "not found"  # kube: the cycle state this plugin's PreFilter writes is missing

Devices = Set[Hashable]


class DraBackend(Protocol):
    """The device inventory and the structured allocator the plugin drives."""

    def update_slice(self, name: str, slice: ResourceSlice | None) -> None: ...

    def update_class(self, name: str, cls: DeviceClass | None) -> None: ...

    def prepare(self, claims: Sequence[ResourceClaim]) -> Any:
        """The claims, not allocated yet, ready to allocate; raises DraAllocationError."""
        ...

    def feasible(
        self, prepared: Any, nodes: NodeSnapshot, candidates: BoolMask, in_use: Devices
    ) -> tuple[BoolMask, Mapping[int, str]]:
        """The rows where every prepared claim finds devices, and the rows that failed for a
        reason of their own with it (kube's node-local errors); raises DraAllocationError."""
        ...

    def allocate(
        self, prepared: Any, node: str, labels: Mapping[str, str], in_use: Devices
    ) -> list[dict[str, Any]] | None:
        """One `status.allocation` per prepared claim on that node, None when they do not fit."""
        ...

    def allocated_devices(self, claim: ResourceClaim) -> set[Hashable]:
        """The devices the claim's `status.allocation` holds (those counted as in use)."""
        ...


@dataclass
class _State:
    """The pod's claims found at PreFilter (`spec.resourceClaims` order) and what Filter
    learnt."""

    claims: list[ResourceClaim]
    pending: list[int]  # indexes of the claims to allocate
    prepared: Any = None
    nodes: NodeSnapshot | None = None
    unavailable: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class _Flight:
    """An allocation Reserve made, waiting for the claim to be seen allocated."""

    pod: str
    claim: str
    devices: frozenset[Hashable]


class DynamicResources(
    PreEnqueue, PreFilter, Filter, PostFilter, Reserve, PreBind, EventHandler, RequeueHints
):
    name = "DynamicResources"
    requeue_on: frozenset[str] = frozenset({NODE_ADD_OR_UPDATE})
    """kube registers node adds and label updates; no pod deletion frees a device by itself
    (its claim's deallocation does, a claim event)."""

    def __init__(self, args: DynamicResourcesArgs | None, backend: DraBackend) -> None:
        self.args = args or DynamicResourcesArgs()
        self.backend = backend
        self._allocated: dict[str, frozenset[Hashable]] = {}  # claim key -> devices
        self._statuses: dict[str, dict[str, Any]] = {}  # claim key -> last status seen
        self._flights: dict[str, _Flight] = {}  # claim uid -> flight
        self._chosen: dict[str, list[tuple[ResourceClaim, dict[str, Any] | None]]] = {}
        self._in_use: frozenset[Hashable] | None = None

    @classmethod
    def from_args(
        cls, args: DynamicResourcesArgs | Mapping[str, Any] | None = None
    ) -> DynamicResources:
        return cls(args_of(DynamicResourcesArgs, args), default_backend())

    def in_use(self) -> frozenset[Hashable]:
        """The devices of every allocated claim and of the allocations in flight."""
        if self._in_use is None:
            found: set[Hashable] = set()
            for devices in self._allocated.values():
                found |= devices
            for flight in self._flights.values():
                found |= flight.devices
            self._in_use = frozenset(found)
        return self._in_use

    def in_flight(self) -> Mapping[str, str]:
        """Claims allocated by Reserve and not seen allocated yet: claim key -> pod key."""
        return {f.claim: f.pod for f in self._flights.values()}

    # --- PreEnqueue, PreFilter -----------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo, cluster: ClusterView) -> str | None:
        if not pod.pod.spec.resource_claims:
            return None
        try:
            pod_claims(pod.pod, cluster.objects(CLAIM_KIND))
        except ClaimLookupError as problem:
            return str(problem)
        return None

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        cycle.scratch[self.name] = _State([], [])  # PostFilter tells a refused pod apart
        if not pod.pod.spec.resource_claims:
            return PreFilterResult(SKIP)
        try:
            found = [claim for _, claim in pod_claims(pod.pod, cycle.cluster.objects(CLAIM_KIND))]
        except ClaimLookupError as problem:
            return PreFilterResult(PodStatus.unresolvable(self.name, str(problem)))
        if not found:
            return PreFilterResult(SKIP)
        pending: list[int] = []
        classes = cycle.cluster.objects(CLASS_KIND)
        for index, claim in enumerate(found):
            if claim.status is not None and claim.status.allocation is not None:
                if not can_be_reserved(claim) and not is_reserved_for(claim, pod.uid):
                    return PreFilterResult(PodStatus.unresolvable(self.name, ERR_IN_USE))
                continue
            flight = self._flights.get(claim.metadata.uid or "")
            if flight is not None and flight.pod != pod.key:
                message = f"resource claim {claim_key(claim)} is in the process of being allocated"
                return PreFilterResult(PodStatus.unresolvable(self.name, message))
            wrong = class_problem(claim, classes)
            if wrong is not None:
                return PreFilterResult(wrong.status(self.name))
            pending.append(index)
        state = _State(found, pending, nodes=nodes)
        if pending:
            try:
                state.prepared = self.backend.prepare([found[i] for i in pending])
            except DraAllocationError as problem:
                return PreFilterResult(_problem_status(self.name, problem))
        cycle.scratch[self.name] = state
        return PreFilterResult()

    # --- Filter --------------------------------------------------------------------------------

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        if not pod.pod.spec.resource_claims:
            return FilterResult(candidates)
        state = cycle.scratch.get(self.name)
        if not isinstance(state, _State) or state.nodes is None or state.nodes.size != nodes.size:
            found = self.pre_filter(cycle, pod, nodes)
            state = cycle.scratch.get(self.name)
            if found.status.code >= PodCode.UNSCHEDULABLE:
                nothing = np.zeros(nodes.size, dtype=bool)
                return FilterResult(nothing, (Reason(candidates, found.status.message, False),))
        if not isinstance(state, _State) or not state.claims:
            return FilterResult(candidates)
        fits = candidates
        own: Mapping[int, str] = {}
        if state.pending:
            try:
                feasible, own = self.backend.feasible(
                    state.prepared, nodes, candidates, self.in_use()
                )
                fits = candidates & feasible
            except DraAllocationError as problem:
                status = _problem_status(self.name, problem)
                if status.code >= PodCode.ERROR:
                    return FilterResult(candidates, status=status)
                nothing = np.zeros(nodes.size, dtype=bool)
                return FilterResult(nothing, (Reason(candidates, status.message, False),))
        unavailable = np.zeros(nodes.size, dtype=bool)
        for index, claim in enumerate(state.claims):
            selector = allocated_selector(claim)
            if selector is None:
                continue
            try:
                outside = fits & ~selector_terms_mask(selector, nodes)
            except SelectorError as error:
                return FilterResult(candidates, status=PodStatus.error(self.name, str(error)))
            if outside.any():
                state.unavailable.add(index)
                unavailable |= outside
        kept = fits & ~unavailable
        if not (candidates & ~kept).any():
            return FilterResult(candidates)
        reasons = []
        short = candidates & ~fits
        for row, message in own.items():  # a node-local error, the node's reason
            rows = np.zeros(nodes.size, dtype=bool)
            rows[row] = True
            reasons.append(Reason(rows, message, False))
            short[row] = False
        if short.any():
            reasons.append(Reason(short, ERR_CANNOT_ALLOCATE, False))
        if unavailable.any():
            reasons.append(Reason(unavailable, ERR_NOT_AVAILABLE, False))
        return FilterResult(kept, tuple(reasons))

    # --- PostFilter ----------------------------------------------------------------------------

    def post_filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> PostFilterResult:
        state = cycle.scratch.get(self.name)
        if not isinstance(state, _State):
            return PostFilterResult(PodStatus.error(self.name, NO_STATE))
        if not state.claims:
            return PostFilterResult(PodStatus.unschedulable(self.name, NO_CLAIMS))
        return PostFilterResult(PodStatus.unschedulable(self.name, STILL_NOT_SCHEDULABLE))

    # --- Reserve, PreBind ----------------------------------------------------------------------

    def reserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> PodStatus:
        state = cycle.scratch.get(self.name)
        if not isinstance(state, _State) or not state.claims:
            return POD_SUCCESS
        allocations: list[dict[str, Any]] = []
        if state.pending:
            nodes = state.nodes
            row = nodes.row_of(node) if nodes is not None else None
            if nodes is None or row is None:
                return PodStatus.error(self.name, "claim allocation not found for node")
            labels = node_labels(nodes, row)
            made = self.backend.allocate(state.prepared, node, labels, self.in_use())
            if made is None or len(made) != len(state.pending):
                return PodStatus.error(self.name, "claim allocation not found for node")
            allocations = made
        chosen: list[tuple[ResourceClaim, dict[str, Any] | None]] = []
        by_index = dict(zip(state.pending, allocations, strict=True))
        for index, claim in enumerate(state.claims):
            allocation = by_index.get(index)
            chosen.append((claim, allocation))
            if allocation is not None:
                self._fly(pod.key, claim, allocation)
        self._chosen[pod.key] = chosen
        return POD_SUCCESS

    def unreserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> None:
        chosen = self._chosen.pop(pod.key, None)
        for claim, allocation in chosen or ():
            uid = claim.metadata.uid or ""
            flight = self._flights.get(uid)
            if allocation is not None and flight is not None and flight.pod == pod.key:
                del self._flights[uid]
                self._in_use = None

    def pre_bind(self, cycle: PodCycle, pod: PodInfo, node: str) -> PreBindResult:
        chosen = self._chosen.get(pod.key)
        writes = tuple(
            ClaimAllocation(claim_key(claim), claim.metadata.uid or "", allocation)
            for claim, allocation in chosen or ()
            if allocation is not None or not is_reserved_for(claim, pod.uid)
        )
        if not writes:
            return PreBindResult()
        return PreBindResult(actions=(AllocateClaims(pod.key, pod.uid, node, writes),))

    def _fly(self, pod: str, claim: ResourceClaim, allocation: dict[str, Any]) -> None:
        wire = claim.to_wire()
        wire["status"] = {**(wire.get("status") or {}), "allocation": allocation}
        devices = self.backend.allocated_devices(ResourceClaim.model_validate(wire))
        flight = _Flight(pod, claim_key(claim), frozenset(devices))
        self._flights[claim.metadata.uid or ""] = flight
        self._in_use = None

    # --- events --------------------------------------------------------------------------------

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool | Set[str]:
        if isinstance(event, PodEvent):
            return self._on_pod(event)
        if not isinstance(event, ObjectEvent):
            return False
        obj, gone = event.obj, event.type == "Deleted"
        if obj.KIND == SLICE_KIND and isinstance(obj, ResourceSlice):
            self.backend.update_slice(obj.metadata.name or "", None if gone else obj)
            return not gone
        if obj.KIND == CLASS_KIND and isinstance(obj, DeviceClass):
            self.backend.update_class(obj.metadata.name or "", None if gone else obj)
            return not gone
        if obj.KIND == CLAIM_KIND and isinstance(obj, ResourceClaim):
            return self._on_claim(obj, gone)
        return False

    def _on_claim(self, claim: ResourceClaim, gone: bool) -> bool:
        key = claim_key(claim)
        allocated = claim.status is not None and claim.status.allocation is not None
        was = self._allocated.pop(key, None)
        if allocated and not gone:
            self._allocated[key] = frozenset(self.backend.allocated_devices(claim))
        flight = self._flights.get(claim.metadata.uid or "")
        before = was or frozenset()
        if flight is not None and (gone or allocated):
            del self._flights[claim.metadata.uid or ""]  # the API shows it (or it left)
            before = before | flight.devices
        if before != self._allocated.get(key, frozenset()):
            self._in_use = None  # the claim's share of the devices in use changed
        old = self._statuses.pop(key, None)
        status = claim.to_wire().get("status") or {}
        if gone:
            return was is not None  # its devices are free again
        self._statuses[key] = status
        if was is not None and not allocated:
            return True  # deallocated: its devices may let any pod in
        return old is None or old != status  # created, or its status changed

    def _on_pod(self, event: PodEvent) -> bool | Set[str]:
        pod = event.pod
        key = pod_key(pod.metadata.namespace, pod.metadata.name)
        if event.type == "Deleted" or (pod.status is not None and pod.status.phase in _DONE):
            for uid, flight in list(self._flights.items()):
                if flight.pod == key:
                    del self._flights[uid]
                    self._in_use = None
            self._chosen.pop(key, None)
            return False
        if pod.spec.node_name or not pod.spec.resource_claims:
            return False
        # kube's hint on the pod's own update: the claim names written in its status.
        return {key} if pod.status and pod.status.resource_claim_statuses else False


_DONE = frozenset({"Succeeded", "Failed"})


def _problem_status(plugin: str, problem: DraAllocationError) -> PodStatus:
    if problem.kind == "unschedulable":
        return PodStatus.unresolvable(plugin, str(problem))
    return PodStatus.error(plugin, str(problem))

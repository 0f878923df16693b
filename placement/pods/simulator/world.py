"""The simulated cluster of `scheduler simulate`: the parts a real cluster plays around the
scheduler, in memory.

`World` stands in for the API server (objects by kind and key, status patches applied and fed
back to the engine as an informer would), the workload controllers (a victim's controller
creates its replacement, an OrderedReady StatefulSet releases its next pod once the previous
runs), the kubelet (a bound pod runs at once, a deleted one is gone after its grace period), the
event correlator (repeats counted), the spot webhook (each new pod of an annotated workload
mutated at its creation) and the PodGroup / ElasticQuota status controllers (the same status
rules as `controllers/addons/status.py`). `simulation.simulate` drives it.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from apis.core import Pod
from apis.meta import KubeObject, format_time
from placement.pods.cluster.volumes import ephemeral_claims, initial_phase
from placement.pods.framework.events import (
    DISRUPTION_TARGET,
    Action,
    AllocateClaims,
    BindPod,
    BindResult,
    BindVolumes,
    ClusterEvent,
    DeletePod,
    EmitEvent,
    ObjectEvent,
    PatchObjectStatus,
    PatchPodStatus,
    PodEvent,
)
from placement.pods.simulator.claims import allocate_claims, make_claims, release_claims
from placement.pods.simulator.provisioner import volume_writes
from placement.pods.simulator.status_controllers import apply_status_rules
from placement.pods.simulator.workloads import Expansion
from placement.pods.status.disruption import DisruptionBudgetStatusRule
from placement.pods.status.rule import StatusRule
from placement.pods.status.rules import status_rules
from placement.spot.mutation import (
    MutationConfig,
    Workload,
    WorkloadRef,
    applied,
    decide,
    is_on_demand_alive,
    patch,
)

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "DISRUPTION_TARGET",
    "EngineLike",
    "EventRecord",
    "Owner",
    "World",
    "workload_of",
]

DEFAULT_GRACE_SECONDS = 30
BUDGETS = frozenset({"PodDisruptionBudget"})


class EngineLike(Protocol):
    """What the simulation needs of `placement.pods.scheduler.engine.Engine`."""

    def handle(self, event: ClusterEvent, now: datetime) -> list[Action]: ...

    def schedule(self, now: datetime, limit: int | None = None) -> list[Action]: ...

    def next_wake(self) -> datetime | None: ...

    def queue_sizes(self) -> dict[str, int]: ...


@dataclass
class EventRecord:
    regarding: tuple[str, str, str]
    type: str
    reason: str
    message: str
    action: str
    first: datetime
    last: datetime
    count: int = 1


@dataclass
class Owner:
    """A workload whose controller the world plays: how it recreates a pod, and the pods it
    still holds back (an OrderedReady StatefulSet creates the next once the previous runs)."""

    expansion: Expansion
    held: deque[Pod] = field(default_factory=deque)
    replaced: int = 0
    workload: Workload | None = None  # a Deployment or StatefulSet: its pods are mutated
    scale: int | None = None  # its replicas, as the disruption controller reads them


def _condition(status: str, reason: str, message: str, now: datetime, kind: str) -> dict[str, Any]:
    condition: dict[str, Any] = {"type": kind, "status": status}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    condition["lastProbeTime"] = None
    condition["lastTransitionTime"] = format_time(now)
    return condition


def _set_condition(wire: dict[str, Any], condition: dict[str, Any]) -> None:
    """Replace the condition of the same type, keeping its transition time when the status
    did not change (as the API's condition helpers do)."""
    status = wire.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != condition["type"]]
    for old in status.get("conditions") or []:
        if old.get("type") == condition["type"] and old.get("status") == condition["status"]:
            condition = {**condition, "lastTransitionTime": old.get("lastTransitionTime")}
    status["conditions"] = [*conditions, condition]


class World:
    def __init__(
        self,
        engine: EngineLike,
        start: datetime,
        scheduler_name: str,
        mutation: MutationConfig | None = None,
    ) -> None:
        self.engine = engine
        self.mutation = mutation
        self.now = start
        self.scheduler_name = scheduler_name
        self.pods: dict[str, Pod] = {}
        self.objects: dict[tuple[str, str], KubeObject] = {}
        self.owners: dict[str, Owner] = {}
        self.deleting: list[tuple[datetime, str, str]] = []  # (at, key, uid), a heap
        self.evicted: list[Pod] = []
        self.events: dict[tuple[Any, ...], EventRecord] = {}
        self.noticed: set[tuple[str, str, str, str]] = set()  # (kind, key, uid, reason)
        self.status_wake: datetime | None = None  # the earliest requeue_at of the status rules
        self.moved = False
        self.volume_failures: set[tuple[str, str]] = set()  # pods whose PreBind writes failed
        self._budgets = (0, False)  # (objects seen, a PodDisruptionBudget among them)
        self.rules: tuple[StatusRule, ...] = (
            *status_rules(),
            DisruptionBudgetStatusRule(self.controller_scale),
        )

    # --- feeding the engine -------------------------------------------------------------------

    def feed(self, event: ClusterEvent) -> None:
        self.moved = True
        self.perform(self.engine.handle(event, self.now))

    def add_pod(self, pod: Pod) -> None:
        pod = self._admitted(pod)
        self.pods[pod.key] = pod
        self.feed(PodEvent("Added", pod, queued_at=pod.metadata.creation_timestamp))
        for claim in ephemeral_claims(pod, self.objects_of("StorageClass").values()):
            self.add_object(claim)  # as the ephemeral volume controller creates it
        if pod.spec.resource_claims:
            make_claims(self, pod)  # kube-controller-manager's resourceclaim controller

    def _admitted(self, pod: Pod) -> Pod:
        """`pod` as the spot webhook leaves it at its CREATE (unchanged when its workload is
        not a Deployment or StatefulSet, or no webhook is played)."""
        uid = self._controller_uid(pod)
        owner = self.owners.get(uid or "")
        if self.mutation is None or owner is None or owner.workload is None:
            return pod
        config = self.mutation
        alive = sum(
            1
            for other in self.pods.values()
            if self._controller_uid(other) == uid and is_on_demand_alive(_liveness(other), config)
        )
        wire = pod.to_wire()
        verdict = decide(wire, owner.workload, alive, config)
        if verdict.capacity is None:
            return pod
        ops = patch(wire, verdict.capacity, config)
        return Pod.model_validate(applied(wire, ops)) if ops else pod

    def add_object(self, obj: KubeObject) -> None:
        """An object created during the run (kept if one of that name exists already)."""
        if (obj.KIND, obj.key) not in self.objects:
            self.objects[(obj.KIND, obj.key)] = initial_phase(obj)
            self.feed(ObjectEvent("Added", self.objects[(obj.KIND, obj.key)]))

    def update_pod(self, wire: dict[str, Any]) -> None:
        pod = Pod.model_validate(wire)
        if pod.to_wire() == self.pods[pod.key].to_wire():
            return  # nothing changed: an informer would see no event
        self.pods[pod.key] = pod
        self.feed(PodEvent("Modified", pod))

    # --- performing its actions ---------------------------------------------------------------

    def perform(self, actions: Iterable[Action]) -> None:
        for action in actions:
            if isinstance(action, BindPod):
                self._bind(action)
            elif isinstance(action, BindVolumes):
                self._bind_volumes(action)
            elif isinstance(action, AllocateClaims):
                allocate_claims(self, action)
            elif isinstance(action, DeletePod):
                self._delete(action)
            elif isinstance(action, PatchPodStatus):
                self._patch_pod(action)
            elif isinstance(action, PatchObjectStatus):
                self._patch_object(action)
            elif isinstance(action, EmitEvent):
                self.record(action)
            # WakeAt: the loop asks the engine's next_wake.

    def _current(self, key: str, uid: str) -> Pod | None:
        pod = self.pods.get(key)
        return pod if pod is not None and (pod.metadata.uid or "") == uid else None

    def _bind_volumes(self, action: BindVolumes) -> None:
        """PreBind's writes, completed at once as the PV controller (and a provisioner) would;
        when one cannot be made, the pod's binding fails instead of being sent."""
        changed = volume_writes(lambda kind, key: self.objects.get((kind, key)), action)
        if isinstance(changed, str):
            self.volume_failures.add((action.key, action.uid))
            self.feed(BindResult(action.key, action.uid, action.node, False, False, changed, True))
            return
        for obj in changed:
            known = (obj.KIND, obj.key) in self.objects
            self.objects[(obj.KIND, obj.key)] = obj
            self.feed(ObjectEvent("Modified" if known else "Added", obj))

    def _bind(self, action: BindPod) -> None:
        if (action.key, action.uid) in self.volume_failures:
            self.volume_failures.discard((action.key, action.uid))
            return  # its volumes could not be bound: reported as a failed binding already
        pod = self._current(action.key, action.uid)
        if pod is None or pod.spec.node_name or action.node not in self._nodes():
            # The API server's 404 / 409: someone else decided.
            message = "pod is gone" if pod is None else "pod is already bound or node is gone"
            self.feed(BindResult(action.key, action.uid, action.node, False, True, message))
            return
        self.feed(BindResult(action.key, action.uid, action.node, True))
        wire = pod.to_wire()
        wire["spec"]["nodeName"] = action.node
        _set_condition(wire, _condition("True", "", "", self.now, "PodScheduled"))
        wire["status"]["phase"] = "Running"  # the simulated kubelet starts it at once
        self.update_pod(wire)
        self._release_next(self.pods[action.key])

    def _nodes(self) -> set[str]:
        return {name for kind, name in self.objects if kind == "Node"}

    def _delete(self, action: DeletePod) -> None:
        pod = self._current(action.key, action.uid)
        if pod is None or pod.metadata.deletion_timestamp is not None:
            return
        grace = pod.spec.termination_grace_period_seconds
        grace = DEFAULT_GRACE_SECONDS if grace is None else grace
        wire = pod.to_wire()
        wire["metadata"]["deletionTimestamp"] = format_time(self.now)
        wire["metadata"]["deletionGracePeriodSeconds"] = grace
        given = action.condition  # the engine's: this shell only dates it
        condition = _condition(given.status, given.reason, given.message, self.now, given.type)
        _set_condition(wire, condition)
        self.update_pod(wire)
        heapq.heappush(self.deleting, (self.now + timedelta(seconds=grace), action.key, action.uid))
        if self.has_budgets():  # kube's disruption controller sees the victim go at once
            self.apply_status_rules(BUDGETS)

    def finish_deletions(self) -> None:
        """Remove the victims whose grace ended; their controllers create replacements."""
        while self.deleting and self.deleting[0][0] <= self.now:
            _, key, uid = heapq.heappop(self.deleting)
            pod = self._current(key, uid)
            if pod is None:
                continue
            del self.pods[key]
            self.evicted.append(pod)
            self.feed(PodEvent("Deleted", pod))
            if pod.spec.resource_claims:
                release_claims(self, pod)
            self._replace(pod)

    def _controller_uid(self, pod: Pod) -> str | None:
        for ref in pod.metadata.owner_references or []:
            if ref.controller:
                return ref.uid
        return None

    def _replace(self, gone: Pod) -> None:
        uid = self._controller_uid(gone)
        owner = self.owners.get(uid or "")
        if owner is None:
            return  # a bare pod: nobody recreates it
        pod = owner.expansion.recreate(gone, owner.replaced, self.now)
        owner.replaced += 1
        self.add_pod(pod)

    def _release_next(self, bound: Pod) -> None:
        owner = self.owners.get(self._controller_uid(bound) or "")
        if owner is not None and owner.held:
            wire = owner.held.popleft().to_wire()
            wire["metadata"]["creationTimestamp"] = format_time(self.now)
            self.add_pod(Pod.model_validate(wire))

    def _patch_pod(self, action: PatchPodStatus) -> None:
        pod = self._current(action.key, action.uid)
        if pod is None:
            return
        wire = pod.to_wire()
        if action.condition is not None:
            condition = {"type": "PodScheduled", **action.condition}
            condition.setdefault("lastProbeTime", None)
            condition["lastTransitionTime"] = format_time(self.now)
            _set_condition(wire, condition)
        if action.nominated_node is not None:
            status = wire.setdefault("status", {})
            if action.nominated_node:
                status["nominatedNodeName"] = action.nominated_node
            else:
                status.pop("nominatedNodeName", None)
        self.update_pod(wire)

    def _patch_object(self, action: PatchObjectStatus) -> None:
        obj = self.objects.get((action.kind, action.key))
        if obj is None:
            return
        wire = obj.to_wire()
        status = {**(wire.get("status") or {}), **action.status}
        wire["status"] = {k: v for k, v in status.items() if v is not None}
        updated = type(obj).model_validate(wire)
        if updated.to_wire() != obj.to_wire():
            self.objects[(action.kind, action.key)] = updated
            self.feed(ObjectEvent("Modified", updated))

    def record(self, action: EmitEvent) -> None:
        key = (action.regarding, action.type, action.reason, action.message)
        record = self.events.get(key)
        if record is None:
            self.events[key] = EventRecord(
                action.regarding,
                action.type,
                action.reason,
                action.message,
                action.action,
                self.now,
                self.now,
            )
        else:
            record.count += 1
            record.last = self.now

    # --- the status controllers ---------------------------------------------------------------

    def pods_in(self, namespace: str) -> Iterable[Pod]:
        return [p for p in self.pods.values() if p.metadata.namespace == namespace]

    def objects_of(self, kind: str) -> Mapping[str, KubeObject]:
        return {key: obj for (k, key), obj in self.objects.items() if k == kind}

    def controller_scale(self, uid: str) -> int | None:
        """The scale of the workload controlling pods with this controller uid, if known."""
        owner = self.owners.get(uid)
        return owner.scale if owner is not None else None

    def apply_status_rules(self, kinds: frozenset[str] | None = None) -> None:
        """What the status controllers (PodGroup, ElasticQuota, and kube's disruption
        controller) would write now, for all kinds or these (`world_status`)."""
        if kinds is None:
            self.status_wake = None
        apply_status_rules(self, [r for r in self.rules if kinds is None or r.kind in kinds])

    def has_budgets(self) -> bool:
        """Whether some PodDisruptionBudget exists (the simulation then plays the disruption
        controller between two pods' cycles)."""
        if self._budgets[0] != len(self.objects):  # looked again only when objects were added
            found = any(kind == "PodDisruptionBudget" for kind, _ in self.objects)
            self._budgets = (len(self.objects), found)
        return self._budgets[1]

    # --- the clock ----------------------------------------------------------------------------

    def settled(self) -> bool:
        """Nothing can move any more without a change from outside."""
        sizes = self.engine.queue_sizes()
        busy = ("active", "backoff", "waiting")
        # Pods held at Permit (a gang short of quorum) move at their timeout; a pod held at
        # PreEnqueue is reported after a delay (its condition says why it waits).
        waiting = getattr(self.engine, "waiting", None)
        held = len(waiting()) if callable(waiting) else 0
        report = getattr(self.engine, "next_report", None)
        if callable(report) and report() is not None:
            return False
        return not self.deleting and not held and not any(sizes.get(q, 0) for q in busy)

    def next_time(self) -> datetime | None:
        times = [t for t in (self.engine.next_wake(), *(d[0] for d in self.deleting[:1])) if t]
        return min(times) if times else None


def _liveness(pod: Pod) -> dict[str, Any]:
    """What `is_on_demand_alive` reads of a pod."""
    meta = pod.metadata
    doc_meta = {"labels": meta.labels or {}, "deletionTimestamp": meta.deletion_timestamp}
    return {"metadata": doc_meta, "status": {"phase": pod.status.phase if pod.status else None}}


def workload_of(obj: KubeObject) -> Workload | None:
    """What the webhook reads of a Deployment or StatefulSet (None for other kinds)."""
    if obj.KIND not in ("Deployment", "StatefulSet"):
        return None
    spec = getattr(obj, "spec", None)
    replicas = getattr(spec, "replicas", None)
    meta = obj.metadata
    ref = WorkloadRef(obj.KIND, obj.namespace, obj.name)
    count = 1 if replicas is None else int(replicas)
    return Workload(ref, count, dict(meta.annotations or {}), meta.uid or "")

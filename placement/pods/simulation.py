"""The offline shell of the pod scheduler: an in-memory cluster driving the Engine on a virtual
clock (`placement scheduler simulate`, DESIGN §8: one engine, two shells).

The world holds nodes, pods, PodGroups, ElasticQuotas and PriorityClasses, and plays the parts
of the API server, the workload controllers and the kubelet that the real shell gets from a
cluster: workloads are expanded into their pods (`placement.pods.workloads`); a bind sets
`spec.nodeName` and `PodScheduled=True`, and the pod starts at once (phase Running); a
preemption victim gets kube-scheduler's `DisruptionTarget` condition and a deletion timestamp,
and is gone after its grace period, when its controller creates a replacement; status patches
are applied and come back to the engine as updates, as an informer would deliver them; events
are recorded and aggregated as the API server's event correlator counts repeats.

Time moves only when nothing else does: the engine is called until it has nothing left to do at
this instant, then the clock jumps to the next timer (the engine's `next_wake`, a victim's end
of grace). The run stops when nothing can move any more (no pod in the active or backoff queue,
none held at Permit, no victim terminating) or at a time limit. The input is sorted before it
is fed, so the same objects in any order give the same result.

The world also plays the spot webhook (`placement.pods.mutation`, DESIGN §8): each pod a
Deployment or StatefulSet annotated `distributed-scheduling/min-available` creates is mutated as
the webhook would at its CREATE, with the on-demand count the world knows at that moment (its
pods alive and labelled on-demand), so a Deployment of 10 with min-available 3 gets 3 pods
required on on-demand nodes and 7 preferring spot nodes. The configuration is
`SIMULATION_MUTATION`: the webhook's defaults (`node.kubernetes.io/capacity: on-demand|spot`)
plus a toleration of the `spot=true:NoSchedule` taint of the samples' spot nodes.
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from apis.core import CoreEvent, Node, Pod
from apis.meta import KubeObject, format_time
from placement.pods.events import (
    Action,
    BindPod,
    BindResult,
    ClusterEvent,
    DeletePod,
    EmitEvent,
    NodeEvent,
    ObjectEvent,
    PatchObjectStatus,
    PatchPodStatus,
    PodEvent,
)
from placement.pods.framework import pod_key
from placement.pods.mutation import (
    SPOT_TAINT_TOLERATION,
    MutationConfig,
    Workload,
    WorkloadRef,
    applied,
    decide,
    is_on_demand_alive,
    patch,
)
from placement.pods.status import StatusOutcome, same_status
from placement.pods.status_rules import status_rules
from placement.pods.workloads import WORKLOAD_KINDS, Expansion, expand, object_uid

__all__ = [
    "DEFAULT_MAX_TIME",
    "DEFAULT_SCHEDULER",
    "DISRUPTION_TARGET",
    "OBJECT_KINDS",
    "EngineLike",
    "SimulationError",
    "SimulationResult",
    "pods_by_key",
    "simulate",
]

DEFAULT_MAX_TIME = timedelta(hours=1)
SIMULATION_MUTATION = MutationConfig(spot_tolerations=(SPOT_TAINT_TOLERATION,))
"""The spot webhook's configuration the simulation plays: its defaults, plus the toleration of
the samples' spot taint (`placement webhook run --spot-toleration spot=true:NoSchedule`)."""

DEFAULT_SCHEDULER = "default-scheduler"
"""What the API server writes into a pod that names no scheduler."""
DEFAULT_GRACE_SECONDS = 30
OBJECT_KINDS = ("PriorityClass", "PodGroup", "ElasticQuota")
DISRUPTION_TARGET = "DisruptionTarget"
# Rounds of the engine at one instant before the simulation calls it a livelock.
_ROUNDS_PER_POD = 20


class SimulationError(ValueError):
    """Input the simulation cannot run (two objects with one name), or an engine that never
    settles at one instant."""


class EngineLike(Protocol):
    """What the simulation needs of `placement.pods.engine.Engine`."""

    def handle(self, event: ClusterEvent, now: datetime) -> list[Action]: ...

    def schedule(self, now: datetime, limit: int | None = None) -> list[Action]: ...

    def next_wake(self) -> datetime | None: ...

    def queue_sizes(self) -> dict[str, int]: ...


@dataclass(frozen=True)
class SimulationResult:
    """The world when the simulation stopped. `pods` sorted by namespace/name; `evicted` the
    victims' last state (deletion timestamp and DisruptionTarget) in the order they went;
    `objects` the PodGroups, ElasticQuotas (with the status their controller writes) and the
    ReplicaSets made from Deployments; `events` as `kubectl get events` lists them (repeats
    counted). `timed_out`: something could still move when the time limit came."""

    started: datetime
    finished: datetime
    scheduler_name: str
    pods: tuple[Pod, ...]
    evicted: tuple[Pod, ...]
    objects: tuple[KubeObject, ...]
    events: tuple[CoreEvent, ...]
    timed_out: bool = False
    reports: tuple[str, ...] = ()
    """The plugins' story at the end (`Engine.simulation_report`): each gang's phase and
    members, each quota's min, max, used and borrowed, every preemption with its rule."""


@dataclass
class _EventRecord:
    regarding: tuple[str, str, str]
    type: str
    reason: str
    message: str
    action: str
    first: datetime
    last: datetime
    count: int = 1


@dataclass
class _Owner:
    """A workload whose controller the world plays: how it recreates a pod, and the pods it
    still holds back (an OrderedReady StatefulSet creates the next once the previous runs)."""

    expansion: Expansion
    held: deque[Pod] = field(default_factory=deque)
    replaced: int = 0
    workload: Workload | None = None  # a Deployment or StatefulSet: its pods are mutated


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


class _World:
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
        self.owners: dict[str, _Owner] = {}
        self.deleting: list[tuple[datetime, str, str]] = []  # (at, key, uid), a heap
        self.evicted: list[Pod] = []
        self.events: dict[tuple[Any, ...], _EventRecord] = {}
        self.noticed: set[tuple[str, str, str, str]] = set()  # (kind, key, uid, reason)
        self.status_wake: datetime | None = None  # the earliest requeue_at of the status rules
        self.moved = False

    # --- feeding the engine -------------------------------------------------------------------

    def feed(self, event: ClusterEvent) -> None:
        self.moved = True
        self.perform(self.engine.handle(event, self.now))

    def add_pod(self, pod: Pod) -> None:
        pod = self._admitted(pod)
        self.pods[pod.key] = pod
        self.feed(PodEvent("Added", pod))

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
            elif isinstance(action, DeletePod):
                self._delete(action)
            elif isinstance(action, PatchPodStatus):
                self._patch_pod(action)
            elif isinstance(action, PatchObjectStatus):
                self._patch_object(action)
            elif isinstance(action, EmitEvent):
                self._record(action)
            # WakeAt: the loop asks the engine's next_wake.

    def _current(self, key: str, uid: str) -> Pod | None:
        pod = self.pods.get(key)
        return pod if pod is not None and (pod.metadata.uid or "") == uid else None

    def _bind(self, action: BindPod) -> None:
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
        message = f"{self.scheduler_name}: preempting to accommodate a higher priority pod"
        if action.preemptor:
            message += f" ({action.preemptor})"
        condition = _condition(
            "True", "PreemptionByScheduler", message, self.now, DISRUPTION_TARGET
        )
        _set_condition(wire, condition)
        self.update_pod(wire)
        heapq.heappush(self.deleting, (self.now + timedelta(seconds=grace), action.key, action.uid))

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

    def _record(self, action: EmitEvent) -> None:
        key = (action.regarding, action.type, action.reason, action.message)
        record = self.events.get(key)
        if record is None:
            self.events[key] = _EventRecord(
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

    def apply_status_rules(self) -> None:
        """What the PodGroup/ElasticQuota status controller would write now: each changed
        status goes into the object (the engine sees it), with the rule's events."""
        view = _StatusView(self)
        self.status_wake = None
        for rule in status_rules():
            for key, obj in sorted(self.objects_of(rule.kind).items()):
                outcome = rule.compute(obj, view, self.now)
                self._notice(rule.kind, key, obj, outcome)
                if outcome.status is None:
                    continue
                wire = obj.to_wire()
                if same_status(wire.get("status"), outcome.status):
                    continue
                updated = type(obj).model_validate({**wire, "status": dict(outcome.status)})
                self.objects[(rule.kind, key)] = updated
                uid = obj.metadata.uid or ""
                for event in outcome.events:
                    severity: Literal["Normal", "Warning"] = (
                        "Warning" if event.type == "Warning" else "Normal"
                    )
                    regarding = (rule.kind, key, uid)
                    self._record(EmitEvent(regarding, severity, event.reason, event.message))
                self.feed(ObjectEvent("Modified", updated))

    def _notice(self, kind: str, key: str, obj: KubeObject, outcome: StatusOutcome) -> None:
        """Record the outcome's notices once per object and reason, as the controller emits
        them; note when the rule wants to look again."""
        uid = obj.metadata.uid or ""
        for notice in outcome.notices:
            if (kind, key, uid, notice.reason) not in self.noticed:
                self.noticed.add((kind, key, uid, notice.reason))
                severity: Literal["Normal", "Warning"] = (
                    "Warning" if notice.type == "Warning" else "Normal"
                )
                self._record(EmitEvent((kind, key, uid), severity, notice.reason, notice.message))
        if outcome.requeue_at is not None and outcome.requeue_at > self.now:
            wake = self.status_wake
            self.status_wake = outcome.requeue_at if wake is None else min(wake, outcome.requeue_at)

    # --- the clock ----------------------------------------------------------------------------

    def settled(self) -> bool:
        """Nothing can move any more without a change from outside."""
        sizes = self.engine.queue_sizes()
        busy = ("active", "backoff", "waiting")
        # Pods held at Permit (a gang short of quorum) move at their timeout.
        waiting = getattr(self.engine, "waiting", None)
        held = len(waiting()) if callable(waiting) else 0
        return not self.deleting and not held and not any(sizes.get(q, 0) for q in busy)

    def next_time(self) -> datetime | None:
        times = [t for t in (self.engine.next_wake(), *(d[0] for d in self.deleting[:1])) if t]
        return min(times) if times else None


class _StatusView:
    """The simulated world as the status rules read it (`StatusWorld`)."""

    def __init__(self, world: _World) -> None:
        self._world = world

    def pods_in(self, namespace: str) -> Iterable[Pod]:
        return self._world.pods_in(namespace)

    def objects(self, kind: str) -> Mapping[str, KubeObject]:
        return self._world.objects_of(kind)

    def nodes(self) -> Iterable[Node]:
        return [o for o in self._world.objects_of("Node").values() if isinstance(o, Node)]


def _liveness(pod: Pod) -> dict[str, Any]:
    """What `is_on_demand_alive` reads of a pod."""
    meta = pod.metadata
    doc_meta = {"labels": meta.labels or {}, "deletionTimestamp": meta.deletion_timestamp}
    return {"metadata": doc_meta, "status": {"phase": pod.status.phase if pod.status else None}}


def _workload(obj: KubeObject) -> Workload | None:
    """What the webhook reads of a Deployment or StatefulSet (None for other kinds)."""
    if obj.KIND not in ("Deployment", "StatefulSet"):
        return None
    spec = getattr(obj, "spec", None)
    replicas = getattr(spec, "replicas", None)
    meta = obj.metadata
    ref = WorkloadRef(obj.KIND, obj.namespace, obj.name)
    count = 1 if replicas is None else int(replicas)
    return Workload(ref, count, dict(meta.annotations or {}), meta.uid or "")


def _sorted_input(objects: Iterable[KubeObject]) -> list[KubeObject]:
    """One order whatever the files' order; two objects of one kind and name are an error."""
    seen: dict[tuple[str, str], KubeObject] = {}
    for obj in objects:
        ident = (obj.KIND, obj.key if obj.NAMESPACED and obj.namespace else obj.name)
        if obj.NAMESPACED and not obj.namespace:
            ident = (obj.KIND, f"default/{obj.name}")
        if ident in seen:
            raise SimulationError(f"{obj.KIND} {ident[1]}: defined twice in the input")
        seen[ident] = obj
    return [seen[ident] for ident in sorted(seen)]


def _with_defaults(obj: KubeObject, now: datetime) -> dict[str, Any]:
    """What the API server fills in on create: namespace, uid, creation time."""
    wire = obj.to_wire()
    meta = wire.setdefault("metadata", {})
    if obj.NAMESPACED:
        meta.setdefault("namespace", "default")
    meta.setdefault("uid", object_uid(obj.KIND, meta.get("namespace", ""), meta.get("name", "")))
    meta.setdefault("creationTimestamp", format_time(now))
    return wire


def _default_requests(spec: dict[str, Any]) -> None:
    """The API server's defaulting: a resource with a limit and no request requests its limit
    (so a container asking only `limits: {nvidia.com/gpu: 1}` requests one GPU)."""
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            resources = container.get("resources") or {}
            limits = resources.get("limits") or {}
            if limits:
                requests = {**limits, **(resources.get("requests") or {})}
                container["resources"] = {**resources, "requests": requests}


def _input_pod(pod: Pod, now: datetime) -> Pod:
    wire = _with_defaults(pod, now)
    spec = wire.setdefault("spec", {})
    spec.setdefault("schedulerName", DEFAULT_SCHEDULER)
    _default_requests(spec)
    status = wire.setdefault("status", {})
    status.setdefault("phase", "Running" if spec.get("nodeName") else "Pending")
    return Pod.model_validate(wire)


def _pod_order(pod: Pod) -> tuple[datetime, str]:
    created = pod.metadata.creation_timestamp
    assert created is not None  # set by _input_pod / expand
    return (created, pod.key)


def _load(world: _World, objects: Sequence[KubeObject], now: datetime) -> None:
    nodes: list[Node] = []
    pods: list[Pod] = []
    others: dict[str, list[KubeObject]] = defaultdict(list)
    for obj in _sorted_input(objects):
        if isinstance(obj, Node):
            nodes.append(Node.model_validate(_with_defaults(obj, now)))
        elif isinstance(obj, Pod):
            pods.append(_input_pod(obj, now))
        elif obj.KIND in OBJECT_KINDS:
            others[obj.KIND].append(type(obj).model_validate(_with_defaults(obj, now)))
        elif obj.KIND in WORKLOAD_KINDS:
            workload = type(obj).model_validate(_with_defaults(obj, now))
            expansion = expand(workload, now)
            members = [_input_pod(p, now) for p in expansion.pods]
            owner = _Owner(expansion, workload=_workload(workload))
            for made in expansion.objects:
                world.objects[(made.KIND, made.key)] = made
            if members:
                uid = world._controller_uid(members[0]) or ""
                world.owners[uid] = owner
                if expansion.ordered:
                    owner.held.extend(members[1:])
                    members = members[:1]
            pods.extend(members)
        else:
            raise SimulationError(f"{obj.KIND} {obj.key}: not a kind the scheduler reads")
    # Priority classes first (pods' priorities resolve against them), then the nodes, the
    # groups and quotas, and the pods bound before pending ones, each in a fixed order.
    for kind in OBJECT_KINDS:
        for obj in others[kind]:
            world.objects[(obj.KIND, obj.key)] = obj
            world.feed(ObjectEvent("Added", obj))
    for node in nodes:
        world.objects[("Node", node.name)] = node
        world.feed(NodeEvent("Added", node))
    for pod in sorted(pods, key=lambda p: (not p.spec.node_name, *_pod_order(p))):
        world.add_pod(pod)


def _core_event(record: _EventRecord, scheduler_name: str, index: int) -> CoreEvent:
    kind, key, uid = record.regarding
    namespace, _, name = key.rpartition("/")
    return CoreEvent.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{name}.{int(record.first.timestamp() * 1e9) + index:x}",
                "namespace": namespace or "default",
            },
            "involvedObject": {
                **({"apiVersion": "v1"} if kind in ("Pod", "Node") else {}),
                "kind": kind,
                "name": name,
                **({"namespace": namespace} if namespace else {}),
                "uid": uid,
            },
            "reason": record.reason,
            "message": record.message,
            "type": record.type,
            "count": record.count,
            "firstTimestamp": format_time(record.first),
            "lastTimestamp": format_time(record.last),
            "source": {"component": scheduler_name},
            "reportingComponent": scheduler_name,
            "action": record.action,
        }
    )


def simulate(
    objects: Sequence[KubeObject],
    engine: EngineLike,
    now: datetime,
    *,
    scheduler_name: str,
    max_time: timedelta = DEFAULT_MAX_TIME,
    mutation: MutationConfig | None = SIMULATION_MUTATION,
) -> SimulationResult:
    """Run `engine` over the objects from `now` until nothing can move or `max_time` has
    passed. Raises SimulationError on duplicate objects, kinds the scheduler does not read, or
    an engine that keeps acting at one instant without end. `mutation`: the spot webhook's
    configuration the world plays at each pod's creation (None: no webhook)."""
    world = _World(engine, now, scheduler_name, mutation)
    _load(world, objects, now)
    deadline = now + max_time
    held = sum(len(o.held) for o in world.owners.values())
    limit = _ROUNDS_PER_POD * (len(world.pods) + held + 1)
    rounds, timed_out = 0, False
    while True:
        world.moved = False
        world.finish_deletions()
        world.perform(engine.schedule(world.now))
        if not world.moved:
            world.apply_status_rules()  # the status controller runs beside the scheduler
        if world.moved:
            rounds += 1
            if rounds > limit:
                raise SimulationError(
                    f"the engine kept acting at {format_time(world.now)} for {rounds} rounds"
                )
            continue
        rounds = 0
        # A status rule may have something to say later in the run (a PodGroup's Timeout).
        due = world.status_wake if world.status_wake and world.status_wake <= deadline else None
        if world.settled():
            if due is None:
                break
            world.now = due
            continue
        upcoming = min((t for t in (world.next_time(), due) if t), default=None)
        if upcoming is None:
            break
        if upcoming > deadline:
            timed_out = True
            break
        # A timer at or before now that moved nothing: step past it rather than spin.
        world.now = max(upcoming, world.now + timedelta(microseconds=1))
    records = list(world.events.values())  # first occurrences in decision order
    others = [o for (kind, _), o in sorted(world.objects.items()) if kind not in ("Node",)]
    return SimulationResult(
        started=now,
        finished=world.now,
        scheduler_name=scheduler_name,
        pods=tuple(world.pods[key] for key in sorted(world.pods)),
        evicted=tuple(world.evicted),
        objects=tuple(o for o in others if o.KIND != "PriorityClass"),
        events=tuple(_core_event(r, scheduler_name, i) for i, r in enumerate(records)),
        timed_out=timed_out,
        reports=tuple(_reports(engine)),
    )


def _reports(engine: EngineLike) -> list[str]:
    report = getattr(engine, "simulation_report", None)
    return list(report()) if callable(report) else []


def pods_by_key(result: SimulationResult) -> Mapping[str, Pod]:
    """The result's pods by `namespace/name`."""
    return {pod_key(p.metadata.namespace, p.metadata.name): p for p in result.pods}

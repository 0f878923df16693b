"""The offline shell of the pod scheduler: an in-memory cluster driving the Engine on a virtual
clock (`placement scheduler simulate`; one engine, two shells: docs/architecture.md).

The world holds nodes, pods, Namespaces, PodGroups, ElasticQuotas and PriorityClasses, and plays
of the API server, the workload controllers and the kubelet that the real shell gets from a
cluster: workloads are expanded into their pods (`placement.pods.simulator.workloads`); a bind sets
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

The world also plays the spot webhook (`placement.spot.mutation`; docs/spot-webhook.md): each pod a
Deployment or StatefulSet annotated `distributed-scheduling/min-available` creates is mutated as
the webhook would at its CREATE, with the on-demand count the world knows at that moment (its
pods alive and labelled on-demand), so a Deployment of 10 with min-available 3 gets 3 pods
required on on-demand nodes and 7 preferring spot nodes. The configuration is
`SIMULATION_MUTATION`: the webhook's defaults (`node.kubernetes.io/capacity: on-demand|spot`)
plus a toleration of the `spot=true:NoSchedule` taint of the samples' spot nodes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from apis.core import CoreEvent, Node, Pod
from apis.meta import KubeObject, format_time
from apis.services import replication_controller_defaults, service_defaults
from placement.pods.cluster.volumes import CLAIM_KIND as CLAIMS
from placement.pods.cluster.volumes import initial_phase, with_default_class
from placement.pods.framework.events import (
    NodeEvent,
    ObjectEvent,
)
from placement.pods.framework.interface import pod_key
from placement.pods.simulator.workloads import WORKLOAD_KINDS, expand, object_uid
from placement.pods.simulator.world import (
    BUDGETS,
    DISRUPTION_TARGET,
    EngineLike,
    EventRecord,
    Owner,
    World,
    workload_of,
)
from placement.pods.status.disruption import workload_scale
from placement.spot.mutation import (
    SPOT_TAINT_TOLERATION,
    MutationConfig,
)

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
OBJECT_KINDS = (
    "Namespace",
    "PriorityClass",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CSINode",
    "VolumeAttachment",
    "CSIDriver",
    "CSIStorageCapacity",
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaimTemplate",
    "ResourceClaim",
    "PodGroup",
    "ElasticQuota",
    "PodDisruptionBudget",
    "Service",
)
"""The other kinds the engine reads, in the order they are fed (Namespaces: inter-pod
affinity's namespaceSelector reads their labels; Services: the default spreading's selector;
PodDisruptionBudgets: preemption's, their status computed as kube's disruption controller does;
storage, CSIDrivers and CSIStorageCapacities: VolumeBinding's; CSINodes and VolumeAttachments:
the attach limits and the attached volumes NodeVolumeLimits reads; DeviceClasses, ResourceSlices
and ResourceClaims: DynamicResources', the templates: the resourceclaim controller the world
plays, `world_claims`)."""
# Rounds of the engine at one instant before the simulation calls it a livelock.
_ROUNDS_PER_POD = 20


class SimulationError(ValueError):
    """Input the simulation cannot run (two objects with one name), or an engine that never
    settles at one instant."""


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


def _sorted_input(objects: Iterable[KubeObject]) -> list[KubeObject]:
    """One order whatever the files' order; two objects of one kind and name are an error."""
    seen: dict[tuple[str, str], KubeObject] = {}
    for obj in objects:
        ident = (obj.KIND, obj.key if obj.NAMESPACED and obj.namespace else obj.name)
        if obj.NAMESPACED and not obj.namespace:
            ident = (obj.KIND, f"default/{obj.name}")
        if ident in seen and obj.KIND == "Namespace":
            continue  # samples run together may each ship the same Namespace
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


_SELECTING = ("ReplicationController", "ReplicaSet", "StatefulSet")
"""The workloads (given or made) the engine is told of: the default spreading's selector."""


def _workload_defaults(wire: dict[str, Any]) -> dict[str, Any]:
    """The API server's defaults of a ReplicationController (its selector from the template)."""
    if wire.get("kind") == "ReplicationController":
        replication_controller_defaults(wire)
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


def _load(world: World, objects: Sequence[KubeObject], now: datetime) -> None:
    nodes: list[Node] = []
    pods: list[Pod] = []
    others: dict[str, list[KubeObject]] = defaultdict(list)
    claims: list[KubeObject] = []  # made by workloads, unless the input has them already
    selecting: list[KubeObject] = []  # controllers whose selector default spreading reads
    for obj in _sorted_input(objects):
        if isinstance(obj, Node):
            nodes.append(Node.model_validate(_with_defaults(obj, now)))
        elif isinstance(obj, Pod):
            pods.append(_input_pod(obj, now))
        elif obj.KIND in OBJECT_KINDS:
            wire = _with_defaults(obj, now)
            if obj.KIND == "Service":
                service_defaults(wire)
            made = type(obj).model_validate(wire)
            others[obj.KIND].append(initial_phase(made))
        elif obj.KIND in WORKLOAD_KINDS:
            workload = type(obj).model_validate(_workload_defaults(_with_defaults(obj, now)))
            expansion = expand(workload, now)
            selecting.extend(o for o in (workload, *expansion.objects) if o.KIND in _SELECTING)
            members = [_input_pod(p, now) for p in expansion.pods]
            owner = Owner(expansion, workload=workload_of(workload), scale=workload_scale(workload))
            for made in expansion.objects:
                if made.KIND in OBJECT_KINDS:  # a StatefulSet's claims, fed to the engine
                    claims.append(initial_phase(made))
                else:
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
    given = {(o.KIND, o.key) for kind in others for o in others[kind]}
    for claim in claims:
        if (claim.KIND, claim.key) not in given:
            others[claim.KIND].append(claim)
            given.add((claim.KIND, claim.key))
    classes = [c.to_wire() for c in others["StorageClass"]]
    others[CLAIMS] = [_admitted_claim(c, classes) for c in others[CLAIMS]]
    # Priority classes first (pods' priorities resolve against them), then the storage objects,
    # the nodes, the groups and quotas, and the pods bound before pending ones, in a fixed order.
    for kind in OBJECT_KINDS:
        for obj in others[kind]:
            world.objects[(obj.KIND, obj.key)] = obj
            world.feed(ObjectEvent("Added", obj))
    for obj in selecting:
        world.feed(ObjectEvent("Added", obj))
    for node in nodes:
        world.objects[("Node", node.name)] = node
        world.feed(NodeEvent("Added", node))
    for pod in sorted(pods, key=lambda p: (not p.spec.node_name, *_pod_order(p))):
        world.add_pod(pod)
    # kube's disruption controller has long computed the budgets when the scheduler starts.
    world.apply_status_rules(BUDGETS)


def _admitted_claim(claim: KubeObject, classes: list[dict[str, Any]]) -> KubeObject:
    """The claim as the API server admits it: the default StorageClass when it names none."""
    wire = claim.to_wire()
    with_default_class(wire, classes)
    return claim if wire == claim.to_wire() else type(claim).model_validate(wire)


def _core_event(record: EventRecord, scheduler_name: str, index: int) -> CoreEvent:
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
    world = World(engine, now, scheduler_name, mutation)
    _load(world, objects, now)
    deadline = now + max_time
    held = sum(len(o.held) for o in world.owners.values())
    # Each call tries at most every pod once, so the guard below bounds the engine's own work
    # at one instant (a livelock inside one `schedule` call would otherwise never return).
    per_call = len(world.pods) + held + 1
    limit = _ROUNDS_PER_POD * per_call
    rounds, timed_out = 0, False
    while True:
        world.moved = False
        world.finish_deletions()
        # With disruption budgets, one pod per call: the disruption controller updates a
        # budget between two preemptions, as it does on a cluster between two cycles.
        world.perform(engine.schedule(world.now, limit=1 if world.has_budgets() else per_call))
        if engine.queue_sizes().get("active", 0):
            world.moved = True  # the call stopped at its limit with pods still ready
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
        objects=tuple(o for o in others if o.KIND not in ("PriorityClass", "Namespace")),
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

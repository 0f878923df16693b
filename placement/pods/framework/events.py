"""What goes into the pod scheduling engine and what comes out (docs/architecture.md: one
sans-I/O engine, two shells).

A shell (the controller fed by informers, or the simulator fed by an in-memory world) turns
what it sees into `ClusterEvent`s and `BindResult`s, calls the engine with the current time,
and performs the `Action`s it gets back: bind a pod, delete a victim, patch a status, record an
event, call again at a time. The engine never reads a clock and never waits.

Events carry the objects as the API returned them; `Deleted` carries the last known object.
Actions name pods by `namespace/name` and uid, so a shell never acts on a pod that was replaced
by another of the same name (a bind or delete is sent with a uid precondition).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, cast

from apis.core import Node, Pod
from apis.meta import KubeObject

__all__ = [
    "ASSIGNED_POD_DELETE",
    "DISRUPTION_TARGET",
    "NODE_ADD_OR_UPDATE",
    "PREEMPTION_BY_SCHEDULER",
    "Action",
    "AllocateClaims",
    "BindPod",
    "BindResult",
    "BindVolumes",
    "ClaimAllocation",
    "ClusterEvent",
    "DeletePod",
    "EmitEvent",
    "EventType",
    "NodeEvent",
    "ObjectEvent",
    "PatchObjectStatus",
    "PatchPodStatus",
    "PodCondition",
    "PodEvent",
    "RequeueHints",
    "WakeAt",
    "deaf_plugins",
]

EventType = Literal["Added", "Modified", "Deleted"]

DISRUPTION_TARGET = "DisruptionTarget"
"""The type of the pod condition a preemption victim gets before its DELETE."""
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
"""That condition's reason when a scheduler's preemption sets it."""

ASSIGNED_POD_DELETE = "AssignedPodDelete"
"""Room was freed: an assigned pod deleted or finished, a pod's Permit wait rejected, a binding
failed (kube-scheduler names them all so)."""
NODE_ADD_OR_UPDATE = "NodeAdd/NodeUpdate"
"""A node was added, or changed in a way that may make more pods fit on it."""


class RequeueHints(Protocol):
    """kube-scheduler's EnqueueExtensions: which of the engine's cluster-wide events
    (`ASSIGNED_POD_DELETE`, `NODE_ADD_OR_UPDATE`) may make a pod this plugin rejected
    schedulable. A pod is moved by such an event when one of the plugins that rejected it
    listens to it; a plugin that does not declare this listens to every event (kube's default
    for a plugin without EventsToRegister). The plugin's own `EventHandler.on_event` answers for
    the other events."""

    name: str
    requeue_on: frozenset[str]


def deaf_plugins(plugins: Iterable[object]) -> dict[str, frozenset[str]]:
    """For each cluster-wide event, the names of the plugins whose rejections it does not
    lift (an event absent here lifts every rejection)."""
    hints = [cast(RequeueHints, p) for p in plugins if RequeueHints in type(p).__mro__]
    deaf: dict[str, frozenset[str]] = {}
    for event in (ASSIGNED_POD_DELETE, NODE_ADD_OR_UPDATE):
        names = frozenset(p.name for p in hints if event not in p.requeue_on)
        if names:
            deaf[event] = names
    return deaf


@dataclass(frozen=True)
class PodEvent:
    """A pod seen (any pod: pending ones of our scheduler name, and every assigned pod, which
    count against their nodes)."""

    type: EventType
    pod: Pod
    queued_at: datetime | None = None
    """When a new pending pod entered the queue, when that is before the call's `now`: the
    simulation feeds its input pods at their creation time, so pods of one priority are tried
    in the order they were created, as kube-scheduler's PrioritySort orders them by the time
    they entered its queue."""


@dataclass(frozen=True)
class NodeEvent:
    type: EventType
    node: Node


@dataclass(frozen=True)
class ObjectEvent:
    """A PodGroup, ElasticQuota or PriorityClass (`obj.KIND` says which)."""

    type: EventType
    obj: KubeObject


@dataclass(frozen=True)
class BindResult:
    """The outcome of a `BindPod` action. `conflict`: the pod was already bound (409) or is
    gone (404): someone else decided, forget the assumption without a retry. `volumes`: the
    failure came from the writes PreBind asked for (`BindVolumes`), not from the binding."""

    key: str
    uid: str
    node: str
    ok: bool
    conflict: bool = False
    message: str = ""
    volumes: bool = False


ClusterEvent = PodEvent | NodeEvent | ObjectEvent | BindResult


@dataclass(frozen=True)
class BindPod:
    """POST pods/binding for the pod (uid precondition) to `node`."""

    key: str
    uid: str
    node: str


@dataclass(frozen=True)
class BindVolumes:
    """Before the pod `key` (uid, chosen `node`) is bound: bind each claim to the volume chosen
    for it, `(claim namespace/name, claim uid, volume name)`, and have a volume provisioned on
    the node for each claim of `provisions` (`(claim namespace/name, claim uid)`). On a cluster
    the shell pre-binds each volume (its `spec.claimRef`) and sets each claim to provision's
    `volume.kubernetes.io/selected-node`, as kube-scheduler does, and waits up to `timeout`
    seconds (VolumeBinding's `bindTimeoutSeconds`) for the PV controller (and the provisioner)
    to bind the claims (`controllers.addons.volume_binder`); the simulation plays the
    provisioner and leaves both sides bound at once. When a write fails or the wait ends without
    the claims bound, the shell sends a failed `BindResult` for the pod instead of binding it."""

    key: str
    uid: str
    node: str
    claims: tuple[tuple[str, str, str], ...]
    timeout: float = 600.0
    provisions: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ClaimAllocation:
    """One ResourceClaim PreBind writes for a pod: `namespace/name` and uid (the write's
    precondition), and the `status.allocation` to write in the API's spelling, or None when the
    claim was already allocated and only the pod is added to its `status.reservedFor`."""

    key: str
    uid: str
    allocation: dict[str, Any] | None = None


@dataclass(frozen=True)
class AllocateClaims:
    """Before the pod `key` (uid, chosen `node`) is bound: record each claim's allocation and
    reserve it for the pod, as kube-scheduler's DynamicResources PreBind does (on a cluster:
    the claim's `resource.kubernetes.io/delete-protection` finalizer, then one status update
    with `allocation` and the pod appended to `reservedFor`, each claim in turn). The simulation
    applies them at once. When a write fails the shell sends a failed `BindResult` for the pod
    instead of binding it; a claim written before the failure keeps what was written (kube's
    Unreserve then clears it, as the claim's next event tells the engine)."""

    key: str
    uid: str
    node: str
    claims: tuple[ClaimAllocation, ...]


@dataclass(frozen=True)
class PodCondition:
    """A pod condition as the engine decides it: what the shell writes into
    `status.conditions`, replacing the condition of the same `type`. Its `lastTransitionTime`
    is the shell's (it holds the clock of the write), kept when the status does not change."""

    type: str
    status: str
    reason: str = ""
    message: str = ""

    def to_wire(self) -> dict[str, str]:
        """The condition's fields as the API spells them (the empty ones left out)."""
        wire = {"type": self.type, "status": self.status}
        if self.reason:
            wire["reason"] = self.reason
        if self.message:
            wire["message"] = self.message
        return wire


@dataclass(frozen=True)
class DeletePod:
    """DELETE a preemption victim (uid precondition); `reason` says for whom (a log line).

    Before the DELETE the shell gives the victim `condition` (kube-scheduler's
    `DisruptionTarget`), and does not delete a victim it could not mark; nothing is written
    when the victim carries that condition already."""

    key: str
    uid: str
    reason: str
    condition: PodCondition
    preemptor: str = ""


@dataclass(frozen=True)
class PatchPodStatus:
    """Merge-patch the pod's status: the PodScheduled condition (`status` "False" with
    `reason` "Unschedulable" and the diagnosis message, or cleared when None) and
    `nominatedNodeName` ("" clears it; None leaves it alone)."""

    key: str
    uid: str
    condition: dict[str, Any] | None = None
    nominated_node: str | None = None


@dataclass(frozen=True)
class PatchObjectStatus:
    """Merge-patch the status of a PodGroup or ElasticQuota."""

    kind: str
    key: str
    status: dict[str, Any]


@dataclass(frozen=True)
class EmitEvent:
    """An Event about an object: `Scheduled`, `FailedScheduling`, `Preempted`, ...

    `regarding` is (kind, namespace/name or name, uid)."""

    regarding: tuple[str, str, str]
    type: Literal["Normal", "Warning"]
    reason: str
    message: str
    action: str = "Scheduling"
    related: tuple[str, str, str] | None = None


@dataclass(frozen=True)
class WakeAt:
    """Call the engine again at this time (backoff expiry, Permit timeout, ...)."""

    at: datetime


Action = (
    BindPod
    | BindVolumes
    | AllocateClaims
    | DeletePod
    | PatchPodStatus
    | PatchObjectStatus
    | EmitEvent
    | WakeAt
)


@dataclass
class Outbox:
    """Actions gathered during one engine call, in the order they were decided."""

    actions: list[Action] = field(default_factory=list)

    def add(self, action: Action) -> None:
        self.actions.append(action)

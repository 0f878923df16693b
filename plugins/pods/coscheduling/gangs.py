"""Gangs: the PodGroup state Coscheduling keeps and the `Manager` interface over it (the
anchor's `core.Manager`; the behaviour: docs/gangs-and-quotas.md, 'Coscheduling').

`plugins/pods/coscheduling/manager.py` implements it (`PodGroupManager`); the Coscheduling plugin
(`plugins/pods/coscheduling/coscheduling.py`) turns its answers into statuses and acts on the
engine, and gang preemption (`plugins/pods/coscheduling/preemption.py`) plans over the membership it
keeps.

* **Membership**: a pod belongs to the PodGroup its label `scheduling.x-k8s.io/pod-group` names
  in the pod's own namespace (groups keyed `namespace/name`). Finished pods (Succeeded, Failed)
  are no members. Per gang: the members, which are bound, gated, or passed Permit.
* **Quorum**: members holding a node (bound, or passed Permit) against `minMember`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from apis.core import Pod
from apis.scheduling import PodGroup
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.events import ObjectEvent, PodEvent
from placement.pods.framework.interface import ClusterView, PodInfo, pod_key

__all__ = [
    "FALLBACK_WAIT",
    "POD_GROUP_LABEL",
    "Gang",
    "Manager",
    "PermitVerdict",
    "Refusal",
    "enough_pods",
    "finished",
    "format_amount",
    "group_of",
    "min_member",
]

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
FALLBACK_WAIT = timedelta(seconds=60)


def group_of(pod: Pod | PodInfo) -> str | None:
    """The `namespace/name` of the pod's PodGroup, None when it has no group label."""
    meta = pod.pod.metadata if isinstance(pod, PodInfo) else pod.metadata
    labels = meta.labels
    if not labels:
        return None
    name = labels.get(POD_GROUP_LABEL)
    return pod_key(meta.namespace, name) if name else None


def finished(pod: Pod) -> bool:
    """Succeeded or Failed: no member of its group any more."""
    status = pod.status
    return status is not None and status.phase in ("Succeeded", "Failed")


@dataclass
class Gang:
    """One PodGroup's scheduling state (see the module docstring)."""

    key: str
    members: dict[str, PodInfo] = field(default_factory=dict)
    """Unfinished pods carrying the label, in the group's namespace (pending or bound)."""
    bound: dict[str, str] = field(default_factory=dict)  # member key -> node (spec.nodeName)
    gated: set[str] = field(default_factory=set)
    permitted: dict[str, tuple[str, datetime | None]] = field(default_factory=dict)
    """Members that passed Permit and are not seen bound yet: key -> (node, wait deadline;
    None once allowed)."""
    last_failure: datetime | None = None
    backoff_until: datetime | None = None
    resources_ok_until: datetime | None = None
    last_rejection: str = ""
    victims: dict[str, str] = field(default_factory=dict)  # key -> uid, preempted for the gang
    no_victims: tuple[object, str] | None = None
    """The cluster state (snapshot version, pending members) in which gang preemption last
    found nothing, and its message: the gang's other members do not search again."""

    def assigned(self) -> int:
        """Members holding a node: bound, or passed Permit (waiting or binding)."""
        return len(self.bound) + len(self.permitted)

    def pending(self) -> list[str]:
        """Members that hold no node yet, by key."""
        return sorted(k for k in self.members if k not in self.bound and k not in self.permitted)


@dataclass(frozen=True)
class Refusal:
    """Why PreFilter refuses a member; `resources`: a capacity gap, which preemption may
    close (every other refusal is unresolvable); `until`: when it lapses by itself (the
    group's backoff)."""

    message: str
    resources: bool = False
    until: datetime | None = None


@dataclass(frozen=True)
class PermitVerdict:
    """Permit's answer for a member: wait `wait` (None: the quorum is reached, `allow` the
    members held so far), and the siblings to `activate` (the first member at Permit)."""

    wait: timedelta | None
    allow: tuple[str, ...] = ()
    activate: tuple[str, ...] = ()


class Manager(Protocol):
    """The gang manager's interface, as the Coscheduling plugin and gang preemption use it."""

    def group(self, key: str) -> PodGroup | None: ...

    def gang(self, key: str) -> Gang | None: ...

    def ensure(self, key: str) -> Gang:
        """The gang of a group key, created empty when unknown."""
        ...

    def on_pod(self, event: PodEvent, cluster: ClusterView | None) -> bool:
        """Fold a pod event in; True when it may complete a group (a new member)."""
        ...

    def on_group(self, event: ObjectEvent) -> bool:
        """Fold a PodGroup event in; True when pending members may now pass."""
        ...

    def wait_time(self, group: PodGroup) -> timedelta: ...

    def sort_stamp(self, pod: PodInfo, queued_at: datetime) -> datetime: ...

    def pre_filter(
        self, pod: PodInfo, group: str, now: datetime, nodes: NodeSnapshot
    ) -> Refusal | None: ...

    def rejects_gang(self, gang: Gang) -> bool:
        """A member failed: is the gang further from its quorum than the reject threshold?"""
        ...

    def deny(self, gang: Gang, now: datetime) -> None:
        """Put a rejected gang in the denied cache (with podGroupBackoffSeconds)."""
        ...

    def release(self, gang: Gang, now: datetime, waiting: Iterable[str]) -> list[str]:
        """A gang is rejected: forget its capacity answer, record the failure, and return its
        members among `waiting` (held at Permit), no longer counted as holding a node."""
        ...

    def permit(self, pod: PodInfo, group: str, node: str, now: datetime) -> PermitVerdict: ...

    def unreserve(self, pod: PodInfo, group: str) -> Gang | None: ...

    def min_resources(self, group: PodGroup) -> dict[str, int] | None: ...

    def resource_gap(
        self, gang: Gang, wanted: Mapping[str, int], nodes: NodeSnapshot
    ) -> dict[str, int]: ...

    def may_take(self, victim: PodInfo, priority: int) -> bool: ...

    def whole_gangs(self, victims: Iterable[PodInfo], cluster: ClusterView) -> list[PodInfo]: ...

    def row_of(self, victim: PodInfo, nodes: NodeSnapshot) -> int | None: ...

    def any_gang(self) -> bool: ...

    def report(self) -> list[str]: ...


def min_member(group: PodGroup) -> int:
    return (group.spec.min_member if group.spec is not None else None) or 0


def enough_pods(gang: Gang | None, group: PodGroup, joining: str = "") -> bool:
    """The group has `minMember` pods, counting the pod `joining` if it is not a member yet."""
    members = gang.members if gang is not None else {}
    count = len(members) + (1 if joining and joining not in members else 0)
    return count >= min_member(group)


def format_amount(name: str, value: int) -> str:
    """A resource amount as a user writes it (cpu in cores or millicores, bytes in Gi/Mi)."""
    if name == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if value and value % 2**30 == 0:
        return f"{value // 2**30}Gi"
    if value and value % 2**20 == 0:
        return f"{value // 2**20}Mi"
    return str(value)

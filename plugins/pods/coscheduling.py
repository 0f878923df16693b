"""`Coscheduling`: gangs of pods (PodGroup) that run whole or not at all, and gang preemption.

The behaviour of scheduler-plugins' coscheduling (reference pod-level.md §1), pinned where
DESIGN §8 decides otherwise:

* **Membership**: a pod belongs to the PodGroup its label `scheduling.x-k8s.io/pod-group`
  names, in the pod's own namespace (groups are keyed `namespace/name`; two same-named groups
  in two namespaces never count each other's pods). Finished pods (Succeeded, Failed) are no
  members: they count neither as siblings nor toward the quorum.
* **QueueSort** (`queue_sort_key`): higher priority first, then the group's last-failure time
  or, without one, its creation time (pods without an existing group: their queue time, as
  PrioritySort), then `namespace/name`. The members of a group stay together in the queue and a
  group that failed recently goes behind the others of its priority. The engine uses it in
  place of PrioritySort when both are enabled (`replaces_queue_sort`).
* **PreFilter**: a missing PodGroup is rejected HERE with a message naming it (the anchor lets
  the pod through to Permit); then the group's backoff, enough sibling pods, enough ungated
  siblings, and `minResources` (+ `pods: minMember`) against the summed free capacity of the
  nodes (the group's own pods counted as free), cached for the schedule timeout.
* **PostFilter**: first gang preemption (below); otherwise, when the gap to the quorum is above
  `podGroupRejectPercentage`, every member waiting at Permit is rejected (their nodes freed),
  the group may enter backoff and its last-failure time is recorded.
* **Permit**: a member waits on its node until `minMember` members hold a node (bound, or
  passed Permit), then all waiting members are allowed at once. The wait is the group's
  `scheduleTimeoutSeconds`, else `permitWaitingTimeSeconds`, else 60 s; a timeout rejects the
  waiting members (Unreserve) and frees their nodes. The first member to reach Permit moves
  its siblings to the active queue (sibling activation).
* **Unreserve**: a member's placement undone rejects the group's waiting members.

State is kept from the engine's events (`on_event`), per group: its members, which are bound,
gated, or passed Permit. A restarted engine rebuilds it from the pods it is fed (bound members
count toward the quorum), so a gang cut in the middle of its binding burst completes.

**Gang preemption** (beyond the anchor, DESIGN §8): when a member of a gang fits nowhere, the
pending members of the gang are placed one after another on a hypothetical cluster; a member
that does not fit gets the cheapest victim set (lowest priorities, then fewest pods: kube's
candidate ranking) among the lower-priority pods, on any node. A pod of another gang is a
potential victim only when its whole gang is of lower priority, and a victim gang left below
its quorum goes whole. Victims are deleted only when every pending member fits once they are
gone; each member is nominated to its node. Nothing is deleted when the gang cannot fit even
without every lower-priority pod (the message says so). Default (per-pod) preemption never runs
for a gang member, and never takes a gang below its quorum for a single pod.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from apis.core import Pod
from apis.pluginargs import CoschedulingArgs
from apis.scheduling import PodGroup
from placement.arrays import BoolMask
from placement.pods.events import ClusterEvent, ObjectEvent, PodEvent
from placement.pods.framework import (
    POD_SUCCESS,
    SKIP,
    ClusterView,
    CycleHost,
    Diagnosis,
    EventHandler,
    Permit,
    PermitResult,
    PodCode,
    PodCycle,
    PodInfo,
    PodStatus,
    PostFilter,
    PostFilterResult,
    PreemptionHooks,
    PreFilter,
    PreFilterResult,
    QueueSortOverride,
    Reserve,
    SimulationReport,
    pod_key,
)
from placement.pods.nodes import NodeSnapshot, ResourceMatrix
from placement.pods.preemption import Candidate, Preemptor, importance_key, pick_candidate
from placement.pods.requests import PODS, amount
from plugins.pods._shared import args_of

__all__ = [
    "DEFAULT_PERMIT_WAITING_SECONDS",
    "DEFAULT_REJECT_PERCENTAGE",
    "POD_GROUP_LABEL",
    "Coscheduling",
    "group_of",
]

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
DEFAULT_PERMIT_WAITING_SECONDS = 60
DEFAULT_REJECT_PERCENTAGE = 10
FALLBACK_WAIT = timedelta(seconds=60)
GANG_CANDIDATE_ROWS = 16
"""Rows examined in detail per member by gang preemption (kube examines max(10 %, 100) for one
pod; a gang searches once per member, so fewer, pre-ranked by their victims' priorities)."""
NOT_A_GANG_PREEMPTION = "gang members preempt as a whole (Coscheduling)"


def group_of(pod: Pod | PodInfo) -> str | None:
    """The `namespace/name` of the pod's PodGroup, None when it has no group label."""
    meta = pod.pod.metadata if isinstance(pod, PodInfo) else pod.metadata
    labels = meta.labels
    if not labels:
        return None
    name = labels.get(POD_GROUP_LABEL)
    return pod_key(meta.namespace, name) if name else None


def _finished(pod: Pod) -> bool:
    status = pod.status
    return status is not None and status.phase in ("Succeeded", "Failed")


@dataclass
class _Gang:
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


class Coscheduling(
    QueueSortOverride,
    PreFilter,
    PostFilter,
    Reserve,
    Permit,
    EventHandler,
    PreemptionHooks,
    SimulationReport,
):
    """PodGroup gang scheduling; see the module docstring."""

    name = "Coscheduling"
    replaces_queue_sort = "PrioritySort"
    """The engine orders its queue with `queue_sort_key` instead of this QueueSort's."""

    def __init__(
        self,
        permit_waiting_seconds: int = DEFAULT_PERMIT_WAITING_SECONDS,
        backoff_seconds: int = 0,
        reject_percentage: int = DEFAULT_REJECT_PERCENTAGE,
    ) -> None:
        self.permit_waiting = timedelta(seconds=permit_waiting_seconds)
        self.backoff = timedelta(seconds=backoff_seconds)
        self.reject_threshold = reject_percentage / 100
        self._gangs: dict[str, _Gang] = {}
        self._groups: dict[str, PodGroup] = {}
        self._member_of: dict[str, str] = {}  # pod key -> gang key
        self._rejecting: set[str] = set()  # gangs whose waiting members are being rejected
        self._preemptor = Preemptor(self.name)

    @classmethod
    def from_args(cls, args: CoschedulingArgs | Mapping[str, Any] | None = None) -> Coscheduling:
        """The plugin with its args (`apis.pluginargs.CoschedulingArgs`: the defaults
        and bounds are the model's)."""
        typed = args_of(CoschedulingArgs, args)
        return cls(
            typed.permit_waiting_time_seconds,
            typed.pod_group_backoff_seconds,
            typed.pod_group_reject_percentage,
        )

    # --- state from events -------------------------------------------------------------------

    def group(self, key: str) -> PodGroup | None:
        return self._groups.get(key)

    def gang(self, key: str) -> _Gang | None:
        return self._gangs.get(key)

    def _gang(self, key: str) -> _Gang:
        gang = self._gangs.get(key)
        if gang is None:
            gang = self._gangs[key] = _Gang(key)
        return gang

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool:
        if isinstance(event, PodEvent):
            return self._on_pod(event, cluster)
        if isinstance(event, ObjectEvent) and (event.obj.KIND or event.obj.kind) == "PodGroup":
            return self._on_group(event)
        return False

    def _on_pod(self, event: PodEvent, cluster: ClusterView | None) -> bool:
        pod = event.pod
        meta = pod.metadata
        labels = meta.labels
        if (not labels or POD_GROUP_LABEL not in labels) and not self._member_of:
            return False  # the no-gang path: no group anywhere, none named here
        key = pod_key(meta.namespace, meta.name)
        group = group_of(pod)
        was = self._member_of.get(key)
        if group is None and was is None:
            return False
        gone = event.type == "Deleted" or _finished(pod)
        if was is not None and (was != group or gone):
            self._leave(was, key)
        if group is None or gone:
            return False
        gang = self._gang(group)
        new = key not in gang.members
        # The engine's PodInfo: its priority resolved from the PriorityClass, requests known.
        known = cluster.pod(key) if cluster is not None else None
        gang.members[key] = known if known is not None and known.pod is pod else PodInfo.of(pod)
        self._member_of[key] = group
        if pod.spec.scheduling_gates:
            gang.gated.add(key)
        else:
            gang.gated.discard(key)
        if pod.spec.node_name:
            gang.bound[key] = pod.spec.node_name
            gang.permitted.pop(key, None)
        else:
            gang.bound.pop(key, None)
        return new  # a new sibling may complete the group

    def _leave(self, group: str, key: str) -> None:
        self._member_of.pop(key, None)
        gang = self._gangs.get(group)
        if gang is None:
            return
        gang.members.pop(key, None)
        gang.bound.pop(key, None)
        gang.gated.discard(key)
        gang.permitted.pop(key, None)
        if not gang.members and group not in self._groups:
            del self._gangs[group]

    def _on_group(self, event: ObjectEvent) -> bool:
        obj = event.obj
        meta = obj.metadata
        key = pod_key(meta.namespace, meta.name)
        if event.type == "Deleted":
            self._groups.pop(key, None)
            gang = self._gangs.get(key)
            if gang is not None and not gang.members:
                del self._gangs[key]
            return False
        group = obj if isinstance(obj, PodGroup) else PodGroup.model_validate(obj.model_dump())
        self._groups[key] = group
        gang = self._gang(key)
        gang.resources_ok_until = None  # minMember or minResources may have changed
        return True

    # --- helpers -----------------------------------------------------------------------------

    def wait_time(self, group: PodGroup) -> timedelta:
        """The group's scheduleTimeoutSeconds, else permitWaitingTimeSeconds, else 60 s."""
        spec = group.spec
        if spec is not None and spec.schedule_timeout_seconds is not None:
            return timedelta(seconds=spec.schedule_timeout_seconds)
        return self.permit_waiting if self.permit_waiting > timedelta(0) else FALLBACK_WAIT

    @staticmethod
    def min_member(group: PodGroup) -> int:
        return (group.spec.min_member if group.spec is not None else None) or 0

    # --- QueueSort ---------------------------------------------------------------------------

    def queue_sort_key(self, pod: PodInfo, queued_at: datetime) -> tuple[int, datetime, str]:
        group = group_of(pod)
        stamp = queued_at
        if group is not None:
            gang = self._gangs.get(group)
            pg = self._groups.get(group)
            if gang is not None and gang.last_failure is not None:
                stamp = gang.last_failure
            elif pg is not None and pg.metadata.creation_timestamp is not None:
                stamp = pg.metadata.creation_timestamp
        return (-pod.priority, stamp, pod.key)

    # --- PreFilter ---------------------------------------------------------------------------

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        group = group_of(pod)
        if group is None:
            return PreFilterResult(SKIP)
        pg = self._groups.get(group)
        if pg is None:
            namespace, _, name = group.partition("/")
            message = (
                f'PodGroup "{name}" not found in namespace "{namespace}" '
                f"(the pod's label {POD_GROUP_LABEL} names it)"
            )
            return PreFilterResult(PodStatus.unresolvable(self.name, message))
        gang = self._gang(group)
        gang.members.setdefault(pod.key, pod)  # a pod the handler has not seen (unit use)
        self._member_of.setdefault(pod.key, group)
        minimum = self.min_member(pg)
        if gang.backoff_until is not None and gang.backoff_until > cycle.now:
            return self._reject_pre(gang, f"podGroup {group} failed recently")
        total = len(gang.members)
        if total < minimum:
            return self._reject_pre(
                gang,
                f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                f"current pods number: {total}, minMember of group: {minimum}",
            )
        if total - len(gang.gated) < minimum:
            return self._reject_pre(
                gang,
                f"pod with pgName: {group} cannot proceed due to gated pods in the same PodGroup "
                f"({len(gang.gated)} of {total} members gated, minMember {minimum})",
            )
        wanted = self._min_resources(pg)
        if wanted is None:
            return PreFilterResult(POD_SUCCESS)
        if gang.resources_ok_until is not None and gang.resources_ok_until > cycle.now:
            return PreFilterResult(POD_SUCCESS)
        gap = self._resource_gap(gang, wanted, nodes)
        if gap:
            parts = ", ".join(f"{name}: {_format(name, value)}" for name, value in gap.items())
            message = f"resource gap: {parts}"
            gang.last_rejection = message
            cycle.scratch[self.name] = "resources"
            # Preemption may help (the anchor says unresolvable; gang preemption needs it).
            return PreFilterResult(PodStatus.unschedulable(self.name, message))
        gang.resources_ok_until = cycle.now + self.wait_time(pg)
        return PreFilterResult(POD_SUCCESS)

    def _reject_pre(self, gang: _Gang, message: str) -> PreFilterResult:
        gang.last_rejection = message
        return PreFilterResult(PodStatus.unresolvable(self.name, message))

    def _min_resources(self, pg: PodGroup) -> dict[str, int] | None:
        spec = pg.spec
        if spec is None or not spec.min_resources:
            return None
        wanted = {name: amount(name, q) for name, q in spec.min_resources.items()}
        wanted[PODS] = self.min_member(pg)
        return wanted

    def _resource_gap(
        self, gang: _Gang, wanted: Mapping[str, int], nodes: NodeSnapshot
    ) -> dict[str, int]:
        """What the summed free capacity lacks (the group's own counted pods count as free);
        empty when it suffices. A sum over nodes, not a packing: Filter still decides."""
        requested = nodes.requested
        own = self._own_counted(gang, nodes)
        if own:
            requested = requested.copy()
            for row, requests in own:
                requested[row] -= nodes.vector(requests)
        free = np.clip(nodes.allocatable - requested, 0, None).sum(axis=0)
        gap: dict[str, int] = {}
        for name in sorted(wanted):
            need = wanted[name]
            col = nodes.column_of(name)
            have = int(free[col]) if col is not None else 0
            if need > have:
                gap[name] = need - have
        return gap

    def _own_counted(self, gang: _Gang, nodes: NodeSnapshot) -> list[tuple[int, Mapping[str, int]]]:
        """(row, requests) of the group's members counted on a node (bound or permitted)."""
        out: list[tuple[int, Mapping[str, int]]] = []
        holding = [*gang.bound.items(), *((k, n) for k, (n, _) in gang.permitted.items())]
        for key, node in holding:
            row = nodes.row_of(node)
            info = gang.members.get(key)
            if row is not None and info is not None:
                out.append((row, info.requests))
        return out

    # --- PostFilter --------------------------------------------------------------------------

    def post_filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> PostFilterResult:
        group = group_of(pod)
        pg = self._groups.get(group) if group is not None else None
        if group is None or pg is None:
            # Not a gang (or its group is missing, which PreFilter said): the next PostFilter
            # (default preemption) decides, without a word from us.
            return PostFilterResult(PodStatus(PodCode.UNSCHEDULABLE, (), self.name))
        gang = self._gang(group)
        preempted = self._gang_preemption(cycle, pod, pg, gang, nodes, diagnosis)
        if isinstance(preempted, PostFilterResult):
            return preempted
        minimum = self.min_member(pg)
        assigned = gang.assigned()
        notes = [preempted] if preempted else []
        if assigned >= minimum or minimum <= 0:
            return self._stop(notes)
        gap = (minimum - assigned) / minimum
        if gap <= self.reject_threshold:
            return self._stop(notes)
        message = (
            f"PodGroup {group} gets rejected due to Pod {pod.name} is unschedulable even after "
            "PostFilter"
        )
        self.reject_gang(cycle, gang, message)
        if self.backoff > timedelta(0) and len(gang.members) >= minimum:
            gang.backoff_until = cycle.now + self.backoff
        gang.last_rejection = f"{message}: {diagnosis.message()}"
        return self._stop([message, *notes])

    def _stop(self, messages: Iterable[str]) -> PostFilterResult:
        """Unresolvable: no other PostFilter (per-pod preemption) runs for a gang member."""
        return PostFilterResult(PodStatus(PodCode.UNRESOLVABLE, tuple(messages), self.name))

    def reject_gang(self, cycle: PodCycle, gang: _Gang, message: str) -> None:
        """Reject the group's members waiting at Permit (their nodes are freed), forget the
        cached capacity answer, and record the failure (the queue penalty)."""
        gang.resources_ok_until = None
        gang.last_failure = cycle.now
        if gang.key in self._rejecting:
            return
        self._rejecting.add(gang.key)
        try:
            waiting = {info.key for info in cycle.waiting.waiting()}
            for key in sorted(gang.permitted):
                if key in waiting:
                    gang.permitted.pop(key, None)
                    cycle.waiting.reject(key, self.name, message)
        finally:
            self._rejecting.discard(gang.key)

    # --- Reserve / Permit --------------------------------------------------------------------

    def reserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> PodStatus:
        return POD_SUCCESS

    def unreserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> None:
        group = group_of(pod)
        if group is None:
            return
        gang = self._gangs.get(group)
        if gang is None:
            return
        gang.permitted.pop(pod.key, None)
        if gang.key in self._rejecting:
            return
        message = f"rejection in Unreserve: member {pod.name} of PodGroup {group} lost its node"
        gang.last_rejection = message
        self.reject_gang(cycle, gang, message)

    def permit(self, cycle: PodCycle, pod: PodInfo, node: str) -> PermitResult:
        group = group_of(pod)
        if group is None:
            return PermitResult()
        pg = self._groups.get(group)
        if pg is None:
            return PermitResult(PodStatus.unschedulable(self.name, "PodGroup not found"))
        gang = self._gang(group)
        wait = self.wait_time(pg)
        gang.permitted[pod.key] = (node, cycle.now + wait)
        assigned = gang.assigned()
        if assigned >= self.min_member(pg):
            gang.last_failure = None
            gang.last_rejection = ""
            for key in sorted(gang.permitted):
                where, deadline = gang.permitted[key]
                if deadline is not None:
                    gang.permitted[key] = (where, None)
                    if key != pod.key:
                        cycle.waiting.allow(key, self.name)
            return PermitResult()
        if assigned == 1:
            self._activate_siblings(cycle, gang, pod)
        return PermitResult(PodStatus(PodCode.WAIT, (), self.name), timeout=wait)

    def _activate_siblings(self, cycle: PodCycle, gang: _Gang, pod: PodInfo) -> None:
        host = cycle.host
        activate = getattr(host, "activate", None) if host is not None else None
        if callable(activate):
            activate([k for k in gang.pending() if k != pod.key])

    # --- gang preemption ---------------------------------------------------------------------

    def preemption_applies(self, cycle: PodCycle, pod: PodInfo) -> bool:
        """Our preemption hooks matter only when some gang exists."""
        return bool(self._gangs)

    def preemption_eligible(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> str | None:
        """A gang member never preempts for itself alone (gang preemption does it whole)."""
        group = group_of(pod)
        if group is not None and group in self._groups:
            return NOT_A_GANG_PREEMPTION
        return None

    def preemption_victims(
        self, cycle: PodCycle, pod: PodInfo, node: str, pods: Sequence[PodInfo]
    ) -> list[PodInfo] | None:
        """Per-pod preemption may take a gang member only when its whole gang is below the
        preemptor's priority (it then goes whole, `preemption_complete`)."""
        kept = [p for p in pods if self._may_take(p, pod.priority)]
        return None if len(kept) == len(pods) else kept

    def preemption_complete(
        self, cycle: PodCycle, pod: PodInfo, candidate: Candidate
    ) -> list[PodInfo] | None:
        return self._whole_gangs(candidate.victims, cycle.cluster)

    def _may_take(self, victim: PodInfo, priority: int) -> bool:
        group = self._member_of.get(victim.key)
        if group is None or group not in self._groups:
            return victim.priority < priority
        gang = self._gangs[group]
        return all(m.priority < priority for m in gang.members.values())

    def _whole_gangs(self, victims: Iterable[PodInfo], cluster: ClusterView) -> list[PodInfo]:
        """The other counted members of each victim gang the victims leave below its quorum."""
        taken: dict[str, set[str]] = {}
        keys = set()
        for victim in victims:
            keys.add(victim.key)
            group = self._member_of.get(victim.key)
            if group is not None and group in self._groups:
                taken.setdefault(group, set()).add(victim.key)
        extra: list[PodInfo] = []
        for group, gone in sorted(taken.items()):
            gang = self._gangs[group]
            holding = [*gang.bound, *gang.permitted]
            left = [k for k in holding if k not in gone]
            if len(left) >= self.min_member(self._groups[group]):
                continue
            for key in sorted(left):
                info = cluster.pod(key)
                if info is not None and key not in keys:
                    extra.append(info)
                    keys.add(key)
        return extra

    def _gang_preemption(
        self,
        cycle: PodCycle,
        pod: PodInfo,
        pg: PodGroup,
        gang: _Gang,
        nodes: NodeSnapshot,
        diagnosis: Diagnosis,
    ) -> PostFilterResult | str:
        """Victims over several nodes that make every pending member fit, or why not ("" when
        preemption does not apply: the failure was not about room)."""
        host = cycle.host
        if host is None or nodes.size == 0:
            return ""
        if diagnosis.pre_filter and cycle.scratch.get(self.name) != "resources":
            return ""  # not enough siblings, gated, backoff: no victim helps
        if pod.preempt_never:
            return "gang preemption: not eligible due to preemptionPolicy=Never."
        cluster = cycle.cluster
        for key, uid in list(gang.victims.items()):
            other = cluster.pod(key)
            if other is None or other.uid != uid or not host.preempting(key):
                del gang.victims[key]  # gone, or rejected at Permit rather than deleted
        if gang.victims:
            return f"gang preemption: waiting for {len(gang.victims)} preempted pod(s) to terminate"
        members = [pod] + [
            info
            for key in gang.pending()
            if key != pod.key and key not in gang.gated
            for info in (cluster.pod(key) or gang.members[key],)
        ]
        priority = min(m.priority for m in members)
        version = nodes.version
        state = (version, tuple(sorted(m.key for m in members)), priority)
        if version is not None and gang.no_victims is not None and gang.no_victims[0] == state:
            return gang.no_victims[1]
        # Potential victims per row: lower priority, not a protected gang member.
        below = host.requested_below(priority, nodes)
        pods_col = nodes.column_of(PODS)
        rows = np.flatnonzero(below[:, pods_col] > 0 if pods_col is not None else below.any(1))
        if rows.size == 0:
            return ""  # no lower-priority pod anywhere: nothing to preempt, nothing to say
        lists: dict[int, list[PodInfo]] = {}
        where: dict[str, int] = {}
        for row in (int(r) for r in rows):
            found = [
                p
                for p in cluster.pods_on(nodes.names[row])
                if p.priority < priority
                and self._may_take(p, priority)
                and not host.preempting(p.key)
                and group_of(p) != gang.key
            ]
            found.sort(key=importance_key(cycle.now))
            if found:
                lists[row] = found
                for p in found:
                    where[p.key] = row
        vectors: dict[str, np.ndarray[Any, np.dtype[np.int64]]] = {}

        def vector(p: PodInfo) -> np.ndarray[Any, np.dtype[np.int64]]:
            v = vectors.get(p.key)
            if v is None:
                v = vectors[p.key] = nodes.vector(p.requests)
            return v

        # 1. Could the gang fit at all, every potential victim gone?
        emptied: ResourceMatrix = nodes.requested.copy()
        for row, found in lists.items():
            for p in found:
                emptied[row] -= vector(p)
        if self._place_all(cycle, members, nodes, emptied, vector) is None:
            message = (
                f"gang preemption: PodGroup {gang.key} cannot fit even if every lower-priority "
                f"pod is preempted ({len(members)} pending member(s))"
            )
            gang.last_rejection = message
            gang.no_victims = (state, message)
            return message
        # 2. Member by member, the cheapest victims that let it fit. `lists` keeps the
        # potential victims not chosen yet, `left` their summed requests per row.
        requested: ResourceMatrix = nodes.requested.copy()
        left: ResourceMatrix = nodes.requested - emptied
        gangs_among = any(self._member_of.get(k) in self._groups for k in where)
        # Per row, the priority of its most important potential victim and their count (the
        # ranking of `_promising`), kept as victims are chosen.
        top = np.full(nodes.size, np.iinfo(np.int64).max, dtype=np.int64)
        count = np.zeros(nodes.size, dtype=np.int64)
        for r, found in lists.items():
            top[r] = found[0].priority
            count[r] = len(found)
        chosen: dict[str, PodInfo] = {}
        placed: list[tuple[PodInfo, int]] = []
        everywhere = np.ones(nodes.size, dtype=bool)
        for member in members:
            trial = dataclasses.replace(nodes, requested=requested)
            fits = _fits(host, cycle, member, trial, everywhere)
            if fits.any():
                row = int(np.flatnonzero(fits)[0])
            else:
                promising = self._promising(cycle, member, trial, requested - left, count, top)
                candidates = self._preemptor.select_victims(
                    cycle, member, trial, {r: lists[r] for r in promising}
                )
                if gangs_among:
                    completed = []
                    for c in candidates:
                        extra = self._whole_gangs([*chosen.values(), *c.victims], cluster)
                        extra = [p for p in extra if p.key not in chosen]
                        completed.append(dataclasses.replace(c, victims=(*c.victims, *extra)))
                    candidates = completed
                best = pick_candidate(candidates, cycle.now)
                if best is None:
                    message = (
                        f"gang preemption: no set of lower-priority pods makes every member of "
                        f"PodGroup {gang.key} fit"
                    )
                    gang.last_rejection = message
                    gang.no_victims = (state, message)
                    return message
                for victim in best.victims:
                    chosen[victim.key] = victim
                    victim_row = where.get(victim.key)
                    if victim_row is not None:
                        left[victim_row] -= vector(victim)
                        rest = [p for p in lists[victim_row] if p.key != victim.key]
                        lists[victim_row] = rest
                        count[victim_row] = len(rest)
                        top[victim_row] = rest[0].priority if rest else 0
                    else:
                        victim_row = self._row_of(victim, nodes)
                    if victim_row is not None:
                        requested[victim_row] -= vector(victim)
                row = best.row
            requested[row] += vector(member)
            placed.append((member, row))
        if not chosen:
            return ""  # every member fits as things are: nothing to preempt
        wanted = self._min_resources(pg)
        if wanted is not None:
            # The victims must also make room for minResources (PreFilter checks it again).
            freed = requested.copy()
            for member, row in placed:
                freed[row] -= vector(member)
            gap = self._resource_gap(gang, wanted, dataclasses.replace(nodes, requested=freed))
            if gap:
                parts = ", ".join(f"{name}: {_format(name, value)}" for name, value in gap.items())
                message = (
                    f"gang preemption: the victims that fit every member of PodGroup {gang.key} "
                    f"leave its minResources short (resource gap: {parts})"
                )
                gang.last_rejection = message
                gang.no_victims = (state, message)
                return message
        gang.victims = {v.key: v.uid for v in chosen.values()}
        nominations = tuple((m.key, nodes.names[row]) for m, row in placed)
        victims = tuple(sorted(chosen.values(), key=importance_key(cycle.now)))
        gang.last_rejection = (
            f"gang preemption: {len(victims)} victim(s) preempted for PodGroup {gang.key}"
        )
        return PostFilterResult(
            PodStatus(plugin=self.name),
            nominated_node=nominations[0][1],
            victims=victims,
            nominations=nominations,
        )

    def _promising(
        self,
        cycle: PodCycle,
        member: PodInfo,
        nodes: NodeSnapshot,
        emptied: ResourceMatrix,
        count: np.ndarray[Any, np.dtype[np.int64]],
        top: np.ndarray[Any, np.dtype[np.int64]],
    ) -> list[int]:
        """The rows (ascending) where the member fits once every potential victim there is
        gone (`emptied`): the GANG_CANDIDATE_ROWS whose most important victim is the least
        important (then with the fewest victims); the minimal victims are searched there."""
        host = cycle.host
        assert host is not None
        mask = count > 0
        if not mask.any():
            return []
        fits = _fits(host, cycle, member, dataclasses.replace(nodes, requested=emptied), mask)
        rows = np.flatnonzero(fits & mask)
        order = np.lexsort((rows, count[rows], top[rows]))[:GANG_CANDIDATE_ROWS]
        return sorted(int(r) for r in rows[order])

    def _row_of(self, victim: PodInfo, nodes: NodeSnapshot) -> int | None:
        node = victim.node_name
        if node is None:
            group = self._member_of.get(victim.key)
            gang = self._gangs.get(group) if group is not None else None
            if gang is not None and victim.key in gang.permitted:
                node = gang.permitted[victim.key][0]
        return nodes.row_of(node) if node is not None else None

    def _place_all(
        self,
        cycle: PodCycle,
        members: list[PodInfo],
        nodes: NodeSnapshot,
        requested: ResourceMatrix,
        vector: Any,
    ) -> list[int] | None:
        """Place the members one after another on the first node that fits (None when one
        does not fit)."""
        host = cycle.host
        assert host is not None
        requested = requested.copy()
        everywhere: BoolMask = np.ones(nodes.size, dtype=bool)
        rows: list[int] = []
        for member in members:
            trial = dataclasses.replace(nodes, requested=requested)
            fits = _fits(host, cycle, member, trial, everywhere)
            if not fits.any():
                return None
            row = int(np.flatnonzero(fits)[0])
            requested[row] += vector(member)
            rows.append(row)
        return rows

    # --- scheduler simulate ------------------------------------------------------------------

    def simulation_report(self, cluster: ClusterView, now: datetime) -> list[str]:
        """Per gang: phase, members bound / waiting at Permit (and why) / pending, the last
        rejection."""
        lines: list[str] = []
        for key in sorted(set(self._gangs) | set(self._groups)):
            gang = self._gangs.get(key) or _Gang(key)
            pg = self._groups.get(key)
            if pg is None:
                lines.append(
                    f"gang {key}: PodGroup not found; {len(gang.members)} pod(s) carry its label"
                )
                continue
            minimum = self.min_member(pg)
            status = pg.status
            phase = (status.phase if status is not None else None) or _phase(gang, minimum)
            waiting = [k for k, (_, d) in gang.permitted.items() if d is not None]
            binding = len(gang.permitted) - len(waiting)
            pending = len(gang.pending())
            line = (
                f"gang {key}: phase {phase}, minMember {minimum}: {len(gang.bound)} bound, "
                f"{binding} binding, {len(waiting)} waiting at Permit, {pending} pending"
            )
            if waiting:
                until = min(d for k, (_, d) in gang.permitted.items() if d is not None)
                assert until is not None
                line += (
                    f" ({gang.assigned()}/{minimum} members hold a node, waiting for "
                    f"{max(minimum - gang.assigned(), 0)} more until {until.isoformat()})"
                )
            if gang.last_rejection:
                line += f"; last rejection: {gang.last_rejection}"
            lines.append(line)
        return lines


def _fits(
    host: CycleHost, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, rows: BoolMask
) -> BoolMask:
    """The rows where the pod fits, without the reasons (the engine's `fits` when it has one)."""
    fits = getattr(host, "fits", None)
    if callable(fits):
        mask: BoolMask = fits(cycle, pod, nodes, rows)
        return mask
    mask, _ = host.run_filters(cycle, pod, nodes, rows)
    return mask


def _phase(gang: _Gang, minimum: int) -> str:
    """The phase the status controller will write, as far as the scheduler knows (the group
    has no status yet): Running once the quorum is bound, Scheduling while members hold
    nodes or enough members exist, else Pending."""
    if gang.bound and len(gang.bound) >= minimum:
        return "Running"
    if gang.permitted or len(gang.members) >= minimum > 0:
        return "Scheduling"
    return "Pending"


def _format(name: str, value: int) -> str:
    if name == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if value and value % 2**30 == 0:
        return f"{value // 2**30}Gi"
    if value and value % 2**20 == 0:
        return f"{value // 2**20}Mi"
    return str(value)

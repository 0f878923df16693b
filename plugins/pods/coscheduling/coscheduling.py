"""`Coscheduling`: gangs of pods (PodGroup) that run whole or not at all, and gang preemption.

The plugin class: one method per extension point, each delegating to the gang manager
(`plugins/pods/coscheduling/gangs.py`: membership, quorum, Permit decisions, the denied cache) or to
gang preemption (`plugins/pods/coscheduling/preemption.py`), and acting on the engine where the
framework lets it (rejecting or allowing members held at Permit, activating siblings). The behaviour
of scheduler-plugins' coscheduling, pinned where this project decides otherwise
(docs/gangs-and-quotas.md, 'Coscheduling', its differences from scheduler-plugins):

* **QueueSort** (`queue_sort_key`): higher priority first, then the group's last-failure time
  or, without one, its creation time (pods without an existing group: their queue time, as
  PrioritySort), then `namespace/name`. The members of a group stay together in the queue and a
  group that failed recently goes behind the others of its priority. The engine uses it in
  place of PrioritySort when both are enabled (`replaces_queue_sort`).
* **PreFilter**: a missing PodGroup is rejected HERE with a message naming it (the anchor lets
  the pod through to Permit); then the group's backoff, enough sibling pods, enough ungated
  siblings, and `minResources` (+ `pods: minMember`) against the summed free capacity of the
  nodes (the group's own pods counted as free), cached for the schedule timeout.
* **PostFilter**: first gang preemption; otherwise, when the gap to the quorum is above
  `podGroupRejectPercentage`, every member waiting at Permit is rejected (their nodes freed),
  the group may enter backoff and its last-failure time is recorded.
* **Permit**: a member waits on its node until `minMember` members hold a node (bound, or
  passed Permit), then all waiting members are allowed at once. The wait is the group's
  `scheduleTimeoutSeconds`, else `permitWaitingTimeSeconds`, else 60 s; a timeout rejects the
  waiting members (Unreserve) and frees their nodes. The first member to reach Permit asks for
  its siblings to be tried (sibling activation; the queue still makes each wait out its
  backoff, so a gang that partly fits is tried at most once per member and backoff period).
* **Unreserve**: a member's placement undone rejects the group's waiting members.
* **Preemption hooks**: a gang member never preempts for itself alone (gang preemption does it
  whole); per-pod preemption may take a gang member only when its whole gang is of lower
  priority, and then takes the gang whole when it would fall below its quorum.

State is kept from the engine's events (`on_event`); a restarted engine rebuilds it from the
pods it is fed (bound members count toward the quorum), so a gang cut in the middle of its
binding burst completes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from datetime import datetime, timedelta
from typing import Any

from apis.pluginargs import CoschedulingArgs
from apis.scheduling import PodGroup
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.events import ClusterEvent, ObjectEvent, PodEvent, RequeueHints
from placement.pods.framework.interface import (
    POD_SUCCESS,
    SKIP,
    ClusterView,
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
    PreEnqueue,
    PreFilter,
    PreFilterResult,
    QueueSortOverride,
    Reserve,
    SimulationReport,
    pod_key,
)
from placement.pods.preemption.preemption import Candidate
from plugins.pods.coscheduling.gangs import (
    POD_GROUP_LABEL,
    Gang,
    Manager,
    enough_pods,
    group_of,
    min_member,
)
from plugins.pods.coscheduling.manager import PodGroupManager
from plugins.pods.coscheduling.preemption import GangPreemption
from plugins.pods.helper.args import args_of

__all__ = [
    "DEFAULT_PERMIT_WAITING_SECONDS",
    "DEFAULT_REJECT_PERCENTAGE",
    "POD_GROUP_LABEL",
    "Coscheduling",
    "group_of",
]

DEFAULT_PERMIT_WAITING_SECONDS = 60
DEFAULT_REJECT_PERCENTAGE = 10
NOT_A_GANG_PREEMPTION = "gang members preempt as a whole (Coscheduling)"


class Coscheduling(
    QueueSortOverride,
    PreEnqueue,
    PreFilter,
    PostFilter,
    Reserve,
    Permit,
    EventHandler,
    RequeueHints,
    PreemptionHooks,
    SimulationReport,
):
    """PodGroup gang scheduling; see the module docstring."""

    name = "Coscheduling"
    requeue_on: frozenset[str] = frozenset()
    """Freed room and node changes do not lift a gang's rejection (kube's Coscheduling listens
    to pods and PodGroups only); `on_event` says when a new sibling or a PodGroup change may."""
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
        # Typed as the interface: mypy checks that PodGroupManager implements it.
        self.manager: Manager = PodGroupManager(
            self.permit_waiting, self.backoff, self.reject_threshold
        )
        self._preemption = GangPreemption(self.name, self.manager)
        self._rejecting: set[str] = set()  # gangs whose waiting members are being rejected

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
        return self.manager.group(key)

    def gang(self, key: str) -> Gang | None:
        return self.manager.gang(key)

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool | Set[str]:
        """The members of the group a new member, a PodGroup spec change or its deletion may
        help (not every pod this plugin rejected: the hint kube's plugins give). A new member
        helps once the group has `minMember` pods: before, PreFilter would refuse them all
        again."""
        if isinstance(event, PodEvent):
            group = group_of(event.pod) if self.manager.on_pod(event, cluster) else None
            quorum = True  # a new member: only once the group has minMember pods
        elif isinstance(event, ObjectEvent) and (event.obj.KIND or event.obj.kind) == "PodGroup":
            meta = event.obj.metadata
            # A deleted group lets its members held at PreEnqueue in: PreFilter names it.
            helps = self.manager.on_group(event) or event.type == "Deleted"
            group = pod_key(meta.namespace, meta.name) if helps else None
            quorum = False
        else:
            return False
        gang = self.manager.gang(group) if group is not None else None
        pg = self.manager.group(group) if group is not None else None
        if gang is None or (quorum and (pg is None or not enough_pods(gang, pg))):
            return False
        return frozenset(gang.members)

    def wait_time(self, group: PodGroup) -> timedelta:
        """The group's scheduleTimeoutSeconds, else permitWaitingTimeSeconds, else 60 s."""
        return self.manager.wait_time(group)

    @staticmethod
    def min_member(group: PodGroup) -> int:
        return min_member(group)

    # --- QueueSort ---------------------------------------------------------------------------

    def queue_sort_key(self, pod: PodInfo, queued_at: datetime) -> tuple[int, datetime, str]:
        return (-pod.priority, self.manager.sort_stamp(pod, queued_at), pod.key)

    # --- PreEnqueue --------------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo, cluster: ClusterView) -> str | None:
        """A member whose group has fewer than `minMember` pods (itself counted) waits out of
        the queue; `on_event` lets the members in when the group has them. A pod without a
        group, or whose PodGroup is not seen yet, goes in (PreFilter names the missing one)."""
        group = group_of(pod)
        pg = None if group is None else self.manager.group(group)
        if group is None or pg is None:
            return None
        if enough_pods(self.manager.gang(group), pg, pod.key):
            return None
        return (
            f'waiting for minMember pods of PodGroup "{pg.metadata.name}" to appear in '
            f"scheduling queue (minMember: {min_member(pg)})"
        )

    # --- PreFilter ---------------------------------------------------------------------------

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        group = group_of(pod)
        if group is None:
            return PreFilterResult(SKIP)
        refusal = self.manager.pre_filter(pod, group, cycle.now, nodes)
        if refusal is None:
            return PreFilterResult(POD_SUCCESS)
        if refusal.resources:
            cycle.scratch[self.name] = "resources"
            # Preemption may help (the anchor says unresolvable; gang preemption needs it).
            return PreFilterResult(PodStatus.unschedulable(self.name, refusal.message))
        if refusal.until is not None:
            cycle.scratch[self.name] = "backoff"
        status = PodStatus.unresolvable(self.name, refusal.message)
        return PreFilterResult(status, retry_at=refusal.until)

    # --- PostFilter --------------------------------------------------------------------------

    def post_filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> PostFilterResult:
        group = group_of(pod)
        pg = self.manager.group(group) if group is not None else None
        if group is None or pg is None or cycle.scratch.get(self.name) == "backoff":
            # Not a gang (or its group is missing, which PreFilter said), or a group backing
            # off already, which a refusal for that must not back off again (retried when it
            # ends, it would be refused for ever):
            # the next PostFilter (default preemption) decides, without a word from us.
            return PostFilterResult(PodStatus(PodCode.UNSCHEDULABLE, (), self.name))
        gang = self.manager.ensure(group)
        preempted = self._preemption.plan(cycle, pod, pg, gang, nodes, diagnosis)
        if isinstance(preempted, PostFilterResult):
            return preempted
        notes = [preempted] if preempted else []
        if not self.manager.rejects_gang(gang):
            return self._stop(notes)
        message = (
            f"PodGroup {group} gets rejected due to Pod {pod.name} is unschedulable even after "
            "PostFilter"
        )
        self.reject_gang(cycle, gang, message)
        self.manager.deny(gang, cycle.now)
        gang.last_rejection = f"{message}: {diagnosis.message()}"
        return self._stop([message, *notes])

    def _stop(self, messages: Iterable[str]) -> PostFilterResult:
        """Unresolvable: no other PostFilter (per-pod preemption) runs for a gang member."""
        return PostFilterResult(PodStatus(PodCode.UNRESOLVABLE, tuple(messages), self.name))

    def reject_gang(self, cycle: PodCycle, gang: Gang, message: str) -> None:
        """Reject the group's members waiting at Permit (their nodes are freed), forget the
        cached capacity answer, and record the failure (the queue penalty)."""
        if gang.key in self._rejecting:
            self.manager.release(gang, cycle.now, ())
            return
        self._rejecting.add(gang.key)
        try:
            waiting = [info.key for info in cycle.waiting.waiting()]
            for key in self.manager.release(gang, cycle.now, waiting):
                cycle.waiting.reject(key, self.name, message)
        finally:
            self._rejecting.discard(gang.key)

    # --- Reserve / Permit --------------------------------------------------------------------

    def reserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> PodStatus:
        return POD_SUCCESS

    def unreserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> None:
        group = group_of(pod)
        gang = self.manager.unreserve(pod, group) if group is not None else None
        if gang is None or gang.key in self._rejecting:
            return
        message = f"rejection in Unreserve: member {pod.name} of PodGroup {group} lost its node"
        gang.last_rejection = message
        self.reject_gang(cycle, gang, message)

    def permit(self, cycle: PodCycle, pod: PodInfo, node: str) -> PermitResult:
        group = group_of(pod)
        if group is None:
            return PermitResult()
        if self.manager.group(group) is None:
            return PermitResult(PodStatus.unschedulable(self.name, "PodGroup not found"))
        verdict = self.manager.permit(pod, group, node, cycle.now)
        for key in verdict.allow:
            cycle.waiting.allow(key, self.name)
        if verdict.wait is None:
            return PermitResult()
        if verdict.activate and cycle.host is not None:
            cycle.host.activate(list(verdict.activate))
        return PermitResult(PodStatus(PodCode.WAIT, (), self.name), timeout=verdict.wait)

    # --- preemption hooks --------------------------------------------------------------------

    def preemption_applies(self, cycle: PodCycle, pod: PodInfo) -> bool:
        """Our preemption hooks matter only when some gang exists."""
        return self.manager.any_gang()

    def preemption_eligible(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> str | None:
        """A gang member never preempts for itself alone (gang preemption does it whole)."""
        group = group_of(pod)
        if group is not None and self.manager.group(group) is not None:
            return NOT_A_GANG_PREEMPTION
        return None

    def preemption_victims(
        self, cycle: PodCycle, pod: PodInfo, node: str, pods: Sequence[PodInfo]
    ) -> list[PodInfo] | None:
        """Per-pod preemption may take a gang member only when its whole gang is below the
        preemptor's priority (it then goes whole, `preemption_complete`)."""
        kept = [p for p in pods if self.manager.may_take(p, pod.priority)]
        return None if len(kept) == len(pods) else kept

    def preemption_complete(
        self, cycle: PodCycle, pod: PodInfo, candidate: Candidate
    ) -> list[PodInfo] | None:
        return self.manager.whole_gangs(candidate.victims, cycle.cluster)

    # --- scheduler simulate ------------------------------------------------------------------

    def simulation_report(self, cluster: ClusterView, now: datetime) -> list[str]:
        """Per gang: phase, members bound / waiting at Permit (and why) / pending, the last
        rejection."""
        return self.manager.report()

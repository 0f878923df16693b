"""`CapacityScheduling`: ElasticQuota min / max per namespace, borrowing, and quota-aware
preemption (the capacity scheduling KEP; docs/gangs-and-quotas.md).

Each namespace with an ElasticQuota is guaranteed its `min` and may borrow the unused `min` of
the others up to its own `max`. This class is the plugin: its extension points and preemption
hooks, delegating to two pure helpers,

* the quota book (`plugins.pods.capacityscheduling.elasticquota`): the quota in force per namespace,
the pods
  counted against it, the pods nominated by preemptions and the pods on their way out;
* the quota preemptor (`plugins.pods.capacityscheduling.preemption`): one preemptor's victims under
the
  quota rules, across nodes, counting the pods already leaving as gone.

Semantics (docs/gangs-and-quotas.md): a quota *governs* the resources named in its min or
max; a resource missing from `max` is unbounded, a governed resource missing from `min` has
min 0; resources no quota names are not limited; `pods` is never enforced. Only what the pod
asks for is checked, and equality fits. The devices of a pod's own DRA claims count as
`<deviceclass>.deviceclass.resource.k8s.io/devices` (`plugins.pods.capacityscheduling.devices`).
`Σused + request > Σmin` is checked per resource over the quotas that govern it. One
ElasticQuota per namespace: the oldest is in force.

PreFilter rejects with the anchor's messages ("... is more than Max", "... total ElasticQuota
used is more than min"), counting the pods nominated by earlier preemptions as the anchor
does. Preemption is DefaultPreemption's (`placement.pods.preemption.preemption`) with this plugin's
hooks, which apply only while some ElasticQuota exists (without one the default, vectorized
path runs untouched).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from apis.pluginargs import CapacitySchedulingArgs
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.events import (
    ASSIGNED_POD_DELETE,
    ClusterEvent,
    ObjectEvent,
    PodEvent,
    RequeueHints,
)
from placement.pods.framework.interface import (
    POD_SUCCESS,
    ClusterView,
    Diagnosis,
    EventHandler,
    PodCycle,
    PodInfo,
    PodStatus,
    PreemptionHooks,
    PreFilter,
    PreFilterResult,
    Reserve,
    SimulationReport,
)
from placement.pods.preemption.preemption import NOT_ELIGIBLE_TERMINATING, Candidate, importance_key
from placement.pods.status.elasticquotas import format_resources
from plugins.pods.capacityscheduling.elasticquota import KIND, OVER_MAX, QuotaBook, QuotaInfo
from plugins.pods.capacityscheduling.preemption import (
    RULE_NO_QUOTA,
    RULE_OWN,
    RULE_RECLAIM,
    PreemptionRecord,
    QuotaPreemption,
)
from plugins.pods.helper.args import args_of

__all__ = [
    "NAME",
    "RULE_NO_QUOTA",
    "RULE_OWN",
    "RULE_RECLAIM",
    "CapacityScheduling",
    "PreemptionRecord",
    "QuotaInfo",
]

NAME = "CapacityScheduling"
_SLOT = f"{NAME}/preemption"


class CapacityScheduling(
    PreFilter, Reserve, EventHandler, RequeueHints, PreemptionHooks, SimulationReport
):
    """See the module docstring."""

    name = NAME
    requeue_on = frozenset({ASSIGNED_POD_DELETE})
    """kube registers pod deletions (freed room), not node events, for this plugin."""

    def __init__(self) -> None:
        self.book = QuotaBook()
        self.preemptions: list[PreemptionRecord] = []

    @classmethod
    def from_args(
        cls, args: CapacitySchedulingArgs | Mapping[str, Any] | None = None
    ) -> CapacityScheduling:
        args_of(CapacitySchedulingArgs, args)  # no args: any field is refused
        return cls()

    # --- state -------------------------------------------------------------------------------

    def quota(self, namespace: str) -> QuotaInfo | None:
        return self.book.quota(namespace)

    def quotas(self) -> Mapping[str, QuotaInfo]:
        return self.book.quotas()

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool:
        if isinstance(event, PodEvent):
            return self.book.on_pod(event, cluster)
        if isinstance(event, ObjectEvent) and (event.obj.KIND or event.obj.kind) == KIND:
            return self.book.on_quota(event, cluster)
        return False

    # --- PreFilter, Reserve ------------------------------------------------------------------

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        if self.book.quota(pod.namespace) is None:
            return PreFilterResult()  # no quota applies (and no nomination to look at)
        self.book.sync_nominations(cycle.cluster)
        self.book.devices.learn(pod, cycle.cluster)  # its DRA devices, once
        verdict = self.book.admit(pod)
        if verdict is None:
            return PreFilterResult()
        what = (
            f"ElasticQuota {pod.namespace} is more than Max"
            if verdict == OVER_MAX
            else "total ElasticQuota used is more than min"
        )
        message = f"Pod {pod.key} is rejected in PreFilter because {what}"
        return PreFilterResult(PodStatus.unschedulable(NAME, message))

    def reserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> PodStatus:
        if self.book.quota(pod.namespace) is not None:
            self.book.devices.learn(pod, cycle.cluster)
        self.book.reserve(pod)
        return POD_SUCCESS

    def unreserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> None:
        self.book.unreserve(pod)

    # --- preemption hooks (placement.pods.preemption.preemption) ----------------------------------

    def preemption_applies(self, cycle: PodCycle, pod: PodInfo) -> bool:
        return bool(self.book.quotas())

    def context(self, cycle: PodCycle, pod: PodInfo) -> QuotaPreemption:
        """The preemptor's quota view, computed once per cycle."""
        found = cycle.scratch.get(_SLOT)
        if isinstance(found, QuotaPreemption) and found.pod is pod:
            return found
        host, cluster = cycle.host, cycle.cluster

        def going(key: str) -> bool:
            """Still there, and terminating or deleted by a preemption."""
            now = cluster.pod(key)
            return now is not None and (
                now.terminating or (host is not None and host.preempting(key))
            )

        self.book.sync_nominations(cluster)
        context = QuotaPreemption.of(self.book, pod, self.book.in_flight(going))
        cycle.scratch[_SLOT] = context
        return context

    def _pool(self, cycle: PodCycle, context: QuotaPreemption) -> Iterator[PodInfo]:
        host = cycle.host
        return context.pool(
            importance_key(cycle.now),
            lambda p: host is not None and host.preempting(p.key),
        )

    def allowed_victim(self, cycle: PodCycle, pod: PodInfo, victim: PodInfo) -> bool:
        """Whether this plugin's rules let `pod` evict `victim` now (for tests and tools)."""
        return self.context(cycle, pod).allowed(victim)

    def preemption_eligible(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> str | None:
        """PodEligibleToPreemptOthers with quotas: a pod whose earlier victims (on its
        nominated node, or elsewhere for quota headroom) are still terminating waits."""
        host, cluster = cycle.host, cycle.cluster

        def going(key: str, uid: str) -> bool:
            now = cluster.pod(key)
            return (
                now is not None
                and now.uid == uid
                and not now.finished
                and (now.terminating or (host is not None and host.preempting(key)))
            )

        if self.book.victims_pending(pod, going):
            return NOT_ELIGIBLE_TERMINATING
        nominated = pod.nominated_node
        if not nominated:
            return None
        row = nodes.row_of(nominated)
        if row is not None and not bool(diagnosis.resolvable[row]):
            return None
        context = self.context(cycle, pod)
        for other in cluster.pods_on(nominated):
            leaving = other.terminating or (host is not None and host.preempting(other.key))
            if leaving and context.waits_for(other):
                return NOT_ELIGIBLE_TERMINATING
        return None

    def preemption_victims(
        self, cycle: PodCycle, pod: PodInfo, node: str, pods: Sequence[PodInfo]
    ) -> list[PodInfo]:
        """The node's pods the quota rules allow (see `QuotaPreemption.victims`)."""
        return self.context(cycle, pod).victims(node, cycle.cluster.pods_on(node), pods)

    def preemption_fits(
        self, cycle: PodCycle, pod: PodInfo, node: str, victims: Sequence[PodInfo]
    ) -> bool:
        """The quota can be met once `victims` are gone, with more victims taken elsewhere
        if needed."""
        context = self.context(cycle, pod)
        return context.fits(node, victims, lambda: self._pool(cycle, context))

    def preemption_complete(
        self, cycle: PodCycle, pod: PodInfo, candidate: Candidate
    ) -> list[PodInfo] | None:
        """The victims beyond the node's that the quota still needs; None when the rules
        allow too few."""
        context = self.context(cycle, pod)
        return context.complete(candidate.victims, lambda: self._pool(cycle, context))

    def preemption_chosen(self, cycle: PodCycle, pod: PodInfo, candidate: Candidate) -> None:
        context = self.context(cycle, pod)
        self.book.nominate(pod, candidate.node, candidate.victims, context.relied_on())
        on_node = {p.key for p in cycle.cluster.pods_on(candidate.node)}
        here = tuple(v.key for v in candidate.victims if v.key in on_node)
        elsewhere = tuple(v.key for v in candidate.victims if v.key not in on_node)
        self.preemptions.append(
            PreemptionRecord(
                cycle.now, pod.key, candidate.node, here, elsewhere, context.rule, context.why()
            )
        )

    # --- scheduler simulate ------------------------------------------------------------------

    def simulation_report(self, cluster: ClusterView, now: datetime) -> list[str]:
        lines: list[str] = []
        quotas = self.book.quotas()
        for ns in sorted(quotas):
            q = quotas[ns]
            used = {r: q.used.get(r, 0) for r in q.governed}
            lines.append(
                f"ElasticQuota {ns}/{q.name}: min {format_resources(q.min)}; "
                f"max {format_resources(q.max)}; used {format_resources(used)}; "
                f"borrowed {format_resources(q.borrowed())}"
            )
        for record in self.preemptions:
            victims = ", ".join(record.victims) or "-"
            text = f"preemption: {record.preemptor} on {record.node} evicted {victims}"
            if record.elsewhere:
                text += f" and, for quota headroom, {', '.join(record.elsewhere)}"
            lines.append(f"{text} ({record.why})")
        return lines

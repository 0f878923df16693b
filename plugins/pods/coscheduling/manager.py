"""The gang manager (`PodGroupManager`, the `Manager` of `plugins/pods/coscheduling/gangs.py`): what
Coscheduling knows of PodGroups and decides about them, apart from the plugin's extension points
(scheduler-plugins' `core.PodGroupManager`; the behaviour: docs/gangs-and-quotas.md,
'Coscheduling').

Pure bookkeeping over the engine's events and the injected clock: no I/O, no framework call.

* **Membership and quorum**: see `plugins/pods/coscheduling/gangs.py`.
* **Denied cache**: a gang rejected at PostFilter with `podGroupBackoffSeconds` > 0 is refused
  at PreFilter until its backoff ends (the anchor's backed-off groups).
* **Capacity answer**: `minResources` (+ `pods: minMember`) against the summed free capacity of
  the nodes, the group's own counted pods as free, cached for the schedule timeout.
* **Permit**: a member waits until `minMember` members hold a node, then all are allowed; the
  first member at Permit names its siblings to activate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

import numpy as np

from apis.scheduling import PodGroup
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.requests import PODS, amount
from placement.pods.framework.events import ObjectEvent, PodEvent
from placement.pods.framework.interface import ClusterView, PodInfo, pod_key
from plugins.pods.coscheduling.gangs import (
    FALLBACK_WAIT,
    POD_GROUP_LABEL,
    Gang,
    PermitVerdict,
    Refusal,
    finished,
    format_amount,
    group_of,
    min_member,
)

__all__ = ["PodGroupManager"]


class PodGroupManager:
    """The `Manager` of the Coscheduling plugin; see the module docstring."""

    def __init__(
        self, permit_waiting: timedelta, backoff: timedelta, reject_threshold: float
    ) -> None:
        self.permit_waiting = permit_waiting
        self.backoff = backoff
        self.reject_threshold = reject_threshold
        self._gangs: dict[str, Gang] = {}
        self._groups: dict[str, PodGroup] = {}
        self._member_of: dict[str, str] = {}  # pod key -> gang key

    # --- state from events -------------------------------------------------------------------

    def group(self, key: str) -> PodGroup | None:
        return self._groups.get(key)

    def gang(self, key: str) -> Gang | None:
        return self._gangs.get(key)

    def ensure(self, key: str) -> Gang:
        gang = self._gangs.get(key)
        if gang is None:
            gang = self._gangs[key] = Gang(key)
        return gang

    def any_gang(self) -> bool:
        return bool(self._gangs)

    def on_pod(self, event: PodEvent, cluster: ClusterView | None) -> bool:
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
        gone = event.type == "Deleted" or finished(pod)
        if was is not None and (was != group or gone):
            self._leave(was, key)
        if group is None or gone:
            return False
        gang = self.ensure(group)
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

    def on_group(self, event: ObjectEvent) -> bool:
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
        old = self._groups.get(key)
        self._groups[key] = group
        if old is not None and old.spec == group.spec:
            return False  # a status update (ours, the status controller's) helps no pod
        self.ensure(key).resources_ok_until = None  # minMember or minResources may have changed
        return True

    # --- QueueSort, PreFilter ----------------------------------------------------------------

    def wait_time(self, group: PodGroup) -> timedelta:
        """The group's scheduleTimeoutSeconds, else permitWaitingTimeSeconds, else 60 s."""
        spec = group.spec
        if spec is not None and spec.schedule_timeout_seconds is not None:
            return timedelta(seconds=spec.schedule_timeout_seconds)
        return self.permit_waiting if self.permit_waiting > timedelta(0) else FALLBACK_WAIT

    def sort_stamp(self, pod: PodInfo, queued_at: datetime) -> datetime:
        """The group's last failure, else its creation, else the pod's queue time."""
        group = group_of(pod)
        if group is not None:
            gang = self._gangs.get(group)
            pg = self._groups.get(group)
            if gang is not None and gang.last_failure is not None:
                return gang.last_failure
            if pg is not None and pg.metadata.creation_timestamp is not None:
                return pg.metadata.creation_timestamp
        return queued_at

    def pre_filter(
        self, pod: PodInfo, group: str, now: datetime, nodes: NodeSnapshot
    ) -> Refusal | None:
        """None when the member may go on; a missing group, the denied cache, too few
        (ungated) members or a capacity gap refuse it."""
        pg = self._groups.get(group)
        if pg is None:
            namespace, _, name = group.partition("/")
            return Refusal(
                f'PodGroup "{name}" not found in namespace "{namespace}" '
                f"(the pod's label {POD_GROUP_LABEL} names it)"
            )
        gang = self.ensure(group)
        gang.members.setdefault(pod.key, pod)  # a pod no event announced (unit use)
        self._member_of.setdefault(pod.key, group)
        minimum = min_member(pg)
        if gang.backoff_until is not None and gang.backoff_until > now:
            message = f"podGroup {group} failed recently"
            return self._refuse(gang, message, until=gang.backoff_until)
        total = len(gang.members)
        if total < minimum:
            return self._refuse(
                gang,
                f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                f"current pods number: {total}, minMember of group: {minimum}",
            )
        if total - len(gang.gated) < minimum:
            return self._refuse(
                gang,
                f"pod with pgName: {group} cannot proceed due to gated pods in the same PodGroup "
                f"({len(gang.gated)} of {total} members gated, minMember {minimum})",
            )
        wanted = self.min_resources(pg)
        if wanted is None:
            return None
        if gang.resources_ok_until is not None and gang.resources_ok_until > now:
            return None
        gap = self.resource_gap(gang, wanted, nodes)
        if gap:
            parts = ", ".join(
                f"{name}: {format_amount(name, value)}" for name, value in gap.items()
            )
            return self._refuse(gang, f"resource gap: {parts}", resources=True)
        gang.resources_ok_until = now + self.wait_time(pg)
        return None

    @staticmethod
    def _refuse(
        gang: Gang, message: str, *, resources: bool = False, until: datetime | None = None
    ) -> Refusal:
        gang.last_rejection = message
        return Refusal(message, resources, until)

    def min_resources(self, group: PodGroup) -> dict[str, int] | None:
        spec = group.spec
        if spec is None or not spec.min_resources:
            return None
        wanted = {name: amount(name, q) for name, q in spec.min_resources.items()}
        wanted[PODS] = min_member(group)
        return wanted

    def resource_gap(
        self, gang: Gang, wanted: Mapping[str, int], nodes: NodeSnapshot
    ) -> dict[str, int]:
        """What the summed free capacity lacks (the group's own counted pods count as free);
        empty when it suffices. A sum over nodes, not a packing: Filter still decides."""
        requested = nodes.requested
        holding = [*gang.bound.items(), *((k, n) for k, (n, _) in gang.permitted.items())]
        own = [
            (row, info.requests)
            for key, node in holding
            for row, info in ((nodes.row_of(node), gang.members.get(key)),)
            if row is not None and info is not None
        ]
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

    # --- PostFilter, Permit, Unreserve -------------------------------------------------------

    def rejects_gang(self, gang: Gang) -> bool:
        pg = self._groups.get(gang.key)
        minimum = min_member(pg) if pg is not None else 0
        assigned = gang.assigned()
        if assigned >= minimum or minimum <= 0:
            return False  # satisfied already: nothing else is rejected
        return (minimum - assigned) / minimum > self.reject_threshold

    def deny(self, gang: Gang, now: datetime) -> None:
        pg = self._groups.get(gang.key)
        minimum = min_member(pg) if pg is not None else 0
        if self.backoff > timedelta(0) and len(gang.members) >= minimum:
            gang.backoff_until = now + self.backoff

    def release(self, gang: Gang, now: datetime, waiting: Iterable[str]) -> list[str]:
        gang.resources_ok_until = None
        gang.last_failure = now
        held = set(waiting)
        released = [key for key in sorted(gang.permitted) if key in held]
        for key in released:
            gang.permitted.pop(key, None)
        return released

    def permit(self, pod: PodInfo, group: str, node: str, now: datetime) -> PermitVerdict:
        pg = self._groups[group]
        gang = self.ensure(group)
        wait = self.wait_time(pg)
        gang.permitted[pod.key] = (node, now + wait)
        assigned = gang.assigned()
        if assigned >= min_member(pg):
            gang.last_failure = None
            gang.last_rejection = ""
            allow: list[str] = []
            for key in sorted(gang.permitted):
                where, deadline = gang.permitted[key]
                if deadline is not None:
                    gang.permitted[key] = (where, None)
                    if key != pod.key:
                        allow.append(key)
            return PermitVerdict(None, allow=tuple(allow))
        siblings = tuple(k for k in gang.pending() if k != pod.key) if assigned == 1 else ()
        return PermitVerdict(wait, activate=siblings)

    def unreserve(self, pod: PodInfo, group: str) -> Gang | None:
        gang = self._gangs.get(group)
        if gang is not None:
            gang.permitted.pop(pod.key, None)
        return gang

    # --- membership for preemption -----------------------------------------------------------

    def may_take(self, victim: PodInfo, priority: int) -> bool:
        """A pod of a gang may be a victim only when its whole gang is of lower priority."""
        group = self._member_of.get(victim.key)
        if group is None or group not in self._groups:
            return victim.priority < priority
        return all(m.priority < priority for m in self._gangs[group].members.values())

    def whole_gangs(self, victims: Iterable[PodInfo], cluster: ClusterView) -> list[PodInfo]:
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
            left = [k for k in [*gang.bound, *gang.permitted] if k not in gone]
            if len(left) >= min_member(self._groups[group]):
                continue
            for key in sorted(left):
                info = cluster.pod(key)
                if info is not None and key not in keys:
                    extra.append(info)
                    keys.add(key)
        return extra

    def row_of(self, victim: PodInfo, nodes: NodeSnapshot) -> int | None:
        """The row a victim is counted on (bound, or held at Permit)."""
        node = victim.node_name
        if node is None:
            group = self._member_of.get(victim.key)
            gang = self._gangs.get(group) if group is not None else None
            if gang is not None and victim.key in gang.permitted:
                node = gang.permitted[victim.key][0]
        return nodes.row_of(node) if node is not None else None

    # --- scheduler simulate ------------------------------------------------------------------

    def report(self) -> list[str]:
        """Per gang: phase, members bound / waiting at Permit (and why) / pending, the last
        rejection."""
        lines: list[str] = []
        for key in sorted(set(self._gangs) | set(self._groups)):
            gang = self._gangs.get(key) or Gang(key)
            pg = self._groups.get(key)
            if pg is None:
                lines.append(
                    f"gang {key}: PodGroup not found; {len(gang.members)} pod(s) carry its label"
                )
                continue
            minimum = min_member(pg)
            status = pg.status
            phase = (status.phase if status is not None else None) or _phase(gang, minimum)
            deadlines = [d for _, d in gang.permitted.values() if d is not None]
            binding = len(gang.permitted) - len(deadlines)
            line = (
                f"gang {key}: phase {phase}, minMember {minimum}: {len(gang.bound)} bound, "
                f"{binding} binding, {len(deadlines)} waiting at Permit, "
                f"{len(gang.pending())} pending"
            )
            if deadlines:
                line += (
                    f" ({gang.assigned()}/{minimum} members hold a node, waiting for "
                    f"{max(minimum - gang.assigned(), 0)} more until {min(deadlines).isoformat()})"
                )
            if 0 < len(gang.members) < minimum:
                line += f"; {len(gang.members)} of its {minimum} pods exist"
            if gang.last_rejection:
                line += f"; last rejection: {gang.last_rejection}"
            lines.append(line)
        return lines


def _phase(gang: Gang, minimum: int) -> str:
    """The phase the status controller will write, as far as the scheduler knows (the group
    has no status yet): Running once the quorum is bound, Scheduling while members hold
    nodes or enough members exist, else Pending."""
    if gang.bound and len(gang.bound) >= minimum:
        return "Running"
    if gang.permitted or len(gang.members) >= minimum > 0:
        return "Scheduling"
    return "Pending"

"""`CapacityScheduling`: ElasticQuota min / max per namespace, borrowing, and quota-aware
preemption (the capacity scheduling KEP, DESIGN §8, reference/pod-level.md §2).

Each namespace with an ElasticQuota is guaranteed its `min` and may borrow the unused `min` of
the others up to its own `max`. The plugin keeps, per namespace, the quota in force and the
pods counted against it (by UID): a pod counts from the moment it is assumed (Reserve) or seen
bound, until it finishes or goes; a quota update keeps what is used.

Semantics pinned here (and in DESIGN §8):

* A quota *governs* the resources named in its min or max. A resource missing from `max` is
  unbounded; a governed resource missing from `min` has min 0. Resources no quota names are
  not limited (a GPU quota does not reject pods for their cpu). `pods` is never enforced (as
  upstream, where a pod's request has no pod count).
* Only what the pod asks for is checked: a pod requesting none of a resource is not rejected
  because that resource is over (a quota lowered under its usage does not block unrelated
  pods). Equality is allowed: `used + request == max` fits.
* `Σused + request > Σmin` is checked per resource over the quotas that govern it.
* One ElasticQuota per namespace: with two, the oldest (creationTimestamp, then name) is in
  force (`placement.pods.quotas.quota_in_force`, which the status controller follows too).

PreFilter rejects with the anchor's messages ("... is more than Max", "... total ElasticQuota
used is more than min"), counting the pods nominated by earlier preemptions as the anchor
does. Preemption is DefaultPreemption's (`placement.pods.preemption`) with this plugin's
hooks, which apply only while some ElasticQuota exists (without one the default, vectorized
path runs untouched):

* preemptor within its min (`used + request <= min`): victims are pods of *other* quotas over
  their min, of any priority; the reprieve puts the most important back first;
* preemptor above its min: lower-priority pods of its own namespace only;
* preemptor without a quota: lower-priority pods of namespaces without one.

**Cross-node quota preemption** (beyond the KEP, which lists it as a limitation): victims on
the chosen node free its capacity; when the quota still lacks headroom (`Σmin`, or the
preemptor's `max`), more victims allowed by the same rules are taken anywhere in the cluster,
least important first (a quota reclaimed from is never taken below its min), then reprieved
most important first. The KEP's "exactly 2 nodes" example therefore schedules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from apis.core import Pod
from apis.meta import KubeObject
from apis.pluginargs import CapacitySchedulingArgs
from apis.quantity import ResourceList
from apis.scheduling import ElasticQuota
from placement.pods.events import ClusterEvent, ObjectEvent, PodEvent
from placement.pods.framework import (
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
from placement.pods.nodes import NodeSnapshot
from placement.pods.preemption import NOT_ELIGIBLE_TERMINATING, Candidate, importance_key
from placement.pods.quotas import format_resources, quota_in_force
from placement.pods.requests import PODS, Requests, amount
from plugins.pods._shared import args_of

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
KIND = "ElasticQuota"
RULE_RECLAIM = "reclaim"
"""The preemptor is within its min: pods of quotas over their min, any priority."""
RULE_OWN = "own"
"""The preemptor is above its min: lower-priority pods of its own namespace."""
RULE_NO_QUOTA = "no-quota"
"""The preemptor has no quota: lower-priority pods of namespaces without one."""
_FAR = datetime.max


def _amounts(resources: ResourceList | None) -> dict[str, int]:
    return {
        name: amount(name, quantity) for name, quantity in (resources or {}).items() if name != PODS
    }


def _add(into: dict[str, int], requests: Mapping[str, int], sign: int = 1) -> None:
    for name, value in requests.items():
        if name != PODS and value:
            into[name] = into.get(name, 0) + sign * value


@dataclass(eq=False)
class QuotaInfo:
    """One namespace's quota in force and the pods counted against it."""

    namespace: str
    name: str
    min: dict[str, int]
    max: dict[str, int]
    used: dict[str, int] = field(default_factory=dict)
    pods: dict[str, PodInfo] = field(default_factory=dict)  # uid (or key) -> pod
    index: dict[str, QuotaInfo] | None = None
    """The plugin's pod uid -> quota map, kept with `pods` (preemption reads it per pod)."""
    governed: frozenset[str] = field(init=False)
    """The resources named in min or max: the ones this quota limits."""

    def __post_init__(self) -> None:
        self.governed = frozenset(self.min) | frozenset(self.max)

    def set_limits(self, name: str, mins: dict[str, int], maxs: dict[str, int]) -> None:
        """A new spec (or another ElasticQuota in force): the pods and `used` stay."""
        self.name, self.min, self.max = name, mins, maxs
        self.governed = frozenset(mins) | frozenset(maxs)

    def add(self, pod: PodInfo) -> bool:
        uid = pod.uid or pod.key
        if uid in self.pods:
            return False
        self.pods[uid] = pod
        _add(self.used, pod.requests)
        if self.index is not None:
            self.index[uid] = self
        return True

    def remove(self, uid: str) -> bool:
        pod = self.pods.pop(uid, None)
        if pod is None:
            return False
        _add(self.used, pod.requests, -1)
        if self.index is not None and self.index.get(uid) is self:
            del self.index[uid]
        return True

    def over_max_with(self, requests: Mapping[str, int]) -> bool:
        """`used + requests > max` for a resource the pod asks for (missing max: unbounded)."""
        limits, used = self.max, self.used
        return any(
            value > 0
            and name in limits
            and name != PODS
            and used.get(name, 0) + value > limits[name]
            for name, value in requests.items()
        )

    def over_min_with(self, requests: Mapping[str, int]) -> bool:
        """`used + requests > min` for a governed resource the pod asks for."""
        governed, used = self.governed, self.used
        return any(
            value > 0
            and name in governed
            and name != PODS
            and used.get(name, 0) + value > self.min.get(name, 0)
            for name, value in requests.items()
        )

    def over_min(self, used: Mapping[str, int] | None = None) -> bool:
        """Borrowing: some governed resource used above min."""
        used = self.used if used is None else used
        return any(used.get(name, 0) > self.min.get(name, 0) for name in self.governed)

    def borrowed(self) -> dict[str, int]:
        return {
            name: self.used.get(name, 0) - self.min.get(name, 0)
            for name in sorted(self.governed)
            if self.used.get(name, 0) > self.min.get(name, 0)
        }


@dataclass(frozen=True)
class PreemptionRecord:
    """One preemption decided with this plugin's rules (for `simulation_report`)."""

    at: datetime
    preemptor: str
    node: str
    victims: tuple[str, ...]
    elsewhere: tuple[str, ...]
    rule: str
    why: str


@dataclass
class _Context:
    """One preemptor's quota view, computed once per cycle."""

    pod: PodInfo
    quota: QuotaInfo | None
    rule: str
    in_eq: Requests
    all_: Requests
    over: tuple[QuotaInfo, ...]
    """The quotas over their min when the cycle began (the ones reclaiming may take from)."""
    agg_used: dict[str, int]
    agg_min: dict[str, int]
    short_max: dict[str, int] = field(default_factory=dict)
    short_min: dict[str, int] = field(default_factory=dict)
    coverable: bool | None = None
    buckets: dict[int, list[PodInfo]] | None = None
    sorted_levels: set[int] = field(default_factory=set)
    over_set: frozenset[QuotaInfo] = field(init=False)

    def __post_init__(self) -> None:
        self.over_set = frozenset(self.over)

    @property
    def over_min(self) -> frozenset[str]:
        return frozenset(q.namespace for q in self.over)


class CapacityScheduling(PreFilter, Reserve, EventHandler, PreemptionHooks, SimulationReport):
    """See the module docstring."""

    name = NAME

    def __init__(self) -> None:
        self._quotas: dict[str, QuotaInfo] = {}
        self._eqs: dict[str, dict[str, ElasticQuota]] = {}
        self._nominated: dict[str, PodInfo] = {}  # uid -> pending pod nominated to a node
        # preemptor uid -> its victims (key, uid) not seen gone yet
        self._waiting_victims: dict[str, frozenset[tuple[str, str]]] = {}
        self._aggregate: tuple[dict[str, int], dict[str, int]] | None = None
        self._owner: dict[str, QuotaInfo] = {}  # counted pod uid -> its quota
        self.preemptions: list[PreemptionRecord] = []

    @classmethod
    def from_args(
        cls, args: CapacitySchedulingArgs | Mapping[str, Any] | None = None
    ) -> CapacityScheduling:
        args_of(CapacitySchedulingArgs, args)  # no args: any field is refused
        return cls()

    # --- state -------------------------------------------------------------------------------

    def quota(self, namespace: str) -> QuotaInfo | None:
        return self._quotas.get(namespace)

    def quotas(self) -> Mapping[str, QuotaInfo]:
        return self._quotas

    def _changed(self) -> None:
        self._aggregate = None

    def aggregate(self) -> tuple[dict[str, int], dict[str, int]]:
        """(Σused, Σmin) per resource over the quotas that govern it."""
        if self._aggregate is None:
            used: dict[str, int] = {}
            mins: dict[str, int] = {}
            for quota in self._quotas.values():
                for name in quota.governed:
                    used[name] = used.get(name, 0) + quota.used.get(name, 0)
                    mins[name] = mins.get(name, 0) + quota.min.get(name, 0)
            self._aggregate = (used, mins)
        return self._aggregate

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool:
        if isinstance(event, PodEvent):
            return self._on_pod(event, cluster)
        if isinstance(event, ObjectEvent) and (event.obj.KIND or event.obj.kind) == KIND:
            return self._on_quota(event, cluster)
        return False

    def _on_pod(self, event: PodEvent, cluster: ClusterView) -> bool:
        pod = event.pod
        meta = pod.metadata
        uid = meta.uid or f"{meta.namespace or ''}/{meta.name or ''}"
        quota = self._quotas.get(meta.namespace or "")
        if event.type == "Deleted" or (pod.spec.node_name and _finished(pod)):
            self._nominated.pop(uid, None)
            self._waiting_victims.pop(uid, None)
            if quota is not None and quota.remove(uid):
                self._changed()
                return True
            return False
        if pod.spec.node_name:
            self._nominated.pop(uid, None)
            self._waiting_victims.pop(uid, None)
            if quota is not None and uid not in quota.pods:
                info = cluster.pod(f"{meta.namespace or ''}/{meta.name or ''}")
                quota.add(info if info is not None and info.uid == (meta.uid or "") else _info(pod))
                self._changed()
            return False
        nominated = pod.status.nominated_node_name if pod.status else None
        if nominated:
            info = cluster.pod(f"{meta.namespace or ''}/{meta.name or ''}")
            self._nominated[uid] = info if info is not None else _info(pod)
        else:
            self._nominated.pop(uid, None)
        return False

    def _on_quota(self, event: ObjectEvent, cluster: ClusterView) -> bool:
        obj: KubeObject = event.obj
        eq = obj if isinstance(obj, ElasticQuota) else ElasticQuota.model_validate(obj.to_wire())
        namespace = eq.metadata.namespace or ""
        name = eq.metadata.name or ""
        present = self._eqs.setdefault(namespace, {})
        if event.type == "Deleted":
            present.pop(name, None)
        else:
            present[name] = eq
        chosen = quota_in_force(present.values())
        current = self._quotas.get(namespace)
        if chosen is None:
            self._eqs.pop(namespace, None)
            if current is None:
                return False
            del self._quotas[namespace]
            for uid in current.pods:
                if self._owner.get(uid) is current:
                    del self._owner[uid]
            self._changed()
            return True
        spec = chosen.spec
        mins = _amounts(spec.min if spec else None)
        maxs = _amounts(spec.max if spec else None)
        if current is None:
            current = QuotaInfo(
                namespace, chosen.metadata.name or "", mins, maxs, index=self._owner
            )
            for info in cluster.pods_in(namespace):
                if info.node_name and not info.finished:
                    current.add(info)
            self._quotas[namespace] = current
        else:  # the pods and what they use stay; only the limits change
            current.set_limits(chosen.metadata.name or "", mins, maxs)
        self._changed()
        return True

    # --- PreFilter ---------------------------------------------------------------------------

    def _with_nominated(self, pod: PodInfo, quota: QuotaInfo) -> tuple[Requests, Requests]:
        """The pod's request plus the nominated pods' (the anchor's two sums): `in_eq` adds
        those of its namespace at its priority or above; `all_` those too, plus those of
        other quotas that are not over their min."""
        in_eq: Requests = {}
        _add(in_eq, pod.requests)
        all_ = dict(in_eq)
        for other in self._nominated.values():
            if other.key == pod.key:
                continue
            ns = other.namespace
            if ns == pod.namespace:
                if other.priority >= pod.priority:
                    _add(in_eq, other.requests)
                    _add(all_, other.requests)
                continue
            theirs = self._quotas.get(ns)
            if theirs is not None and not theirs.over_min():
                _add(all_, other.requests)
        return in_eq, all_

    def _aggregate_over_with(
        self, quota: QuotaInfo, requests: Mapping[str, int], freed: Mapping[str, int] | None = None
    ) -> dict[str, int]:
        """Per resource the pod asks for and its quota governs: how far `Σused + requests`
        (less `freed`) is above `Σmin` (only the positive ones)."""
        used, mins = self.aggregate()
        governed = quota.governed
        out: dict[str, int] = {}
        for name, value in requests.items():
            if value > 0 and name in governed:
                over = used.get(name, 0) - (freed or {}).get(name, 0) + value - mins.get(name, 0)
                if over > 0:
                    out[name] = over
        return out

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        quota = self._quotas.get(pod.namespace)
        if quota is None:
            return PreFilterResult()
        in_eq, all_ = self._with_nominated(pod, quota)
        if quota.over_max_with(in_eq):
            return PreFilterResult(
                PodStatus.unschedulable(
                    NAME,
                    f"Pod {pod.key} is rejected in PreFilter because ElasticQuota "
                    f"{pod.namespace} is more than Max",
                )
            )
        if self._aggregate_over_with(quota, all_):
            return PreFilterResult(
                PodStatus.unschedulable(
                    NAME,
                    f"Pod {pod.key} is rejected in PreFilter because total ElasticQuota used "
                    "is more than min",
                )
            )
        return PreFilterResult()

    # --- Reserve -----------------------------------------------------------------------------

    def reserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> PodStatus:
        self._nominated.pop(pod.uid or pod.key, None)
        quota = self._quotas.get(pod.namespace)
        if quota is not None and quota.add(pod):
            self._changed()
        return POD_SUCCESS

    def unreserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> None:
        quota = self._quotas.get(pod.namespace)
        if quota is not None and quota.remove(pod.uid or pod.key):
            self._changed()

    # --- preemption hooks (placement.pods.preemption) ---------------------------------------

    def preemption_applies(self, cycle: PodCycle, pod: PodInfo) -> bool:
        return bool(self._quotas)

    def _context(self, cycle: PodCycle, pod: PodInfo) -> _Context:
        slot = f"{NAME}/preemption"
        found = cycle.scratch.get(slot)
        if isinstance(found, _Context) and found.pod is pod:
            return found
        quota = self._quotas.get(pod.namespace)
        over = tuple(q for _, q in sorted(self._quotas.items()) if q.over_min())
        used, mins = self.aggregate()
        if quota is None:
            in_eq: Requests = {}
            _add(in_eq, pod.requests)
            context = _Context(pod, None, RULE_NO_QUOTA, in_eq, in_eq, over, used, mins)
        else:
            in_eq, all_ = self._with_nominated(pod, quota)
            rule = RULE_OWN if quota.over_min_with(in_eq) else RULE_RECLAIM
            context = _Context(pod, quota, rule, in_eq, all_, over, used, mins)
            # What the quota lacks before any victim (may be <= 0: room to spare).
            context.short_max = {
                r: quota.used.get(r, 0) + v - quota.max[r]
                for r, v in in_eq.items()
                if v > 0 and r in quota.max and r != PODS
            }
            context.short_min = {
                r: used.get(r, 0) + v - mins.get(r, 0)
                for r, v in all_.items()
                if v > 0 and r in quota.governed and r != PODS
            }
        cycle.scratch[slot] = context
        return context

    def _allowed(self, context: _Context, victim: PodInfo) -> bool:
        owner = self._owner.get(victim.uid or victim.key)
        pod = context.pod
        if context.rule == RULE_NO_QUOTA:
            return owner is None and victim.priority < pod.priority
        if context.rule == RULE_OWN:
            return owner is context.quota and victim.priority < pod.priority
        return owner is not None and owner is not context.quota and owner in context.over_set

    def allowed_victim(self, cycle: PodCycle, pod: PodInfo, victim: PodInfo) -> bool:
        """Whether this plugin's rules let `pod` evict `victim` now (for tests and tools)."""
        return self._allowed(self._context(cycle, pod), victim)

    def preemption_eligible(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> str | None:
        """PodEligibleToPreemptOthers with quotas: a pod whose earlier victims (on its
        nominated node, or elsewhere for quota headroom) are still terminating waits."""
        waiting = self._waiting_victims.get(pod.uid or pod.key)
        host = cycle.host
        if waiting:
            # Victims still there and on their way out (a deletion that failed does not
            # hold the preemptor back: it may preempt again).
            left = frozenset(
                (key, uid)
                for key, uid in waiting
                if (p := cycle.cluster.pod(key)) is not None
                and p.uid == uid
                and not p.finished
                and (p.terminating or (host is not None and host.preempting(key)))
            )
            if left:
                self._waiting_victims[pod.uid or pod.key] = left
                return NOT_ELIGIBLE_TERMINATING
            del self._waiting_victims[pod.uid or pod.key]
        nominated = pod.nominated_node
        if not nominated:
            return None
        row = nodes.row_of(nominated)
        if row is not None and not bool(diagnosis.resolvable[row]):
            return None
        context = self._context(cycle, pod)
        for other in cycle.cluster.pods_on(nominated):
            if not (other.terminating or (host is not None and host.preempting(other.key))):
                continue
            owner = self._owner.get(other.uid or other.key)
            if context.quota is None:
                if owner is None and other.priority < pod.priority:
                    return NOT_ELIGIBLE_TERMINATING
            elif owner is context.quota:
                if other.priority < pod.priority:
                    return NOT_ELIGIBLE_TERMINATING
            elif context.rule == RULE_RECLAIM and owner is not None and owner in context.over_set:
                return NOT_ELIGIBLE_TERMINATING
        return None

    def preemption_victims(
        self, cycle: PodCycle, pod: PodInfo, node: str, pods: Sequence[PodInfo]
    ) -> list[PodInfo]:
        """The node's pods the rules allow. Lower-priority pods stay only if an earlier hook
        kept them in `pods`; reclaiming adds the higher-priority pods of borrowing quotas."""
        context = self._context(cycle, pod)
        given = {p.key for p in pods}
        priority = pod.priority
        return [
            p
            for p in cycle.cluster.pods_on(node)
            if (p.priority >= priority or p.key in given) and self._allowed(context, p)
        ]

    def _short(
        self, context: _Context, removed: Iterable[PodInfo]
    ) -> tuple[dict[str, int], dict[str, int]]:
        """What the preemptor's quota still lacks once `removed` are gone: (above its max,
        above Σmin), per resource, positive amounts only."""
        own_keys, agg_keys = context.short_max, context.short_min
        if not own_keys and not agg_keys:
            return {}, {}
        freed_own = dict.fromkeys(own_keys, 0)
        freed_agg = dict.fromkeys(agg_keys, 0)
        for victim in removed:
            owner = self._owner.get(victim.uid or victim.key)
            if owner is None:
                continue
            requests = victim.requests
            if owner is context.quota:
                for r in own_keys:
                    freed_own[r] += requests.get(r, 0)
            governed = owner.governed
            for r in agg_keys:
                if r in governed:
                    freed_agg[r] += requests.get(r, 0)
        over_max = {r: v - freed_own[r] for r, v in own_keys.items() if v - freed_own[r] > 0}
        over_min = {r: v - freed_agg[r] for r, v in agg_keys.items() if v - freed_agg[r] > 0}
        return over_max, over_min

    def _coverable(self, context: _Context) -> bool:
        """Whether every pod the rules allow, anywhere, gone would give the quota its
        headroom (victims on a node are among them, so this does not depend on which)."""
        if context.coverable is None:
            over_max, over_min = self._short(context, ())
            own = dict.fromkeys(over_max, 0)
            agg = dict.fromkeys(over_min, 0)
            quota = context.quota
            if context.rule == RULE_OWN and quota is not None:
                for victim in quota.pods.values():
                    if victim.priority < context.pod.priority:
                        for r in own:
                            own[r] += victim.requests.get(r, 0)
                        for r in agg:
                            agg[r] += victim.requests.get(r, 0)
            elif context.rule == RULE_RECLAIM:
                for theirs in context.over:
                    if theirs is not quota:
                        for r in agg:
                            if r in theirs.governed:
                                agg[r] += theirs.used.get(r, 0)
            context.coverable = all(own[r] >= v for r, v in over_max.items()) and all(
                agg[r] >= v for r, v in over_min.items()
            )
        return context.coverable

    def preemption_fits(
        self, cycle: PodCycle, pod: PodInfo, node: str, victims: Sequence[PodInfo]
    ) -> bool:
        """The quota can be met once `victims` are gone, with more victims taken elsewhere
        if needed."""
        context = self._context(cycle, pod)
        if self._coverable(context):
            return True  # whatever the node's victims, the rest can come from elsewhere
        over_max, over_min = self._short(context, victims)
        return not over_max and not over_min

    def _least_important(self, cycle: PodCycle, context: _Context) -> Iterable[PodInfo]:
        """The pods the rules allow anywhere (not already being preempted), least important
        first; sorted one priority level at a time, as far as the caller reads."""
        if context.buckets is None:
            quota = context.quota
            if context.rule == RULE_OWN and quota is not None:
                allowed = [p for p in quota.pods.values() if p.priority < context.pod.priority]
            else:
                allowed = [p for q in context.over if q is not quota for p in q.pods.values()]
            buckets: dict[int, list[PodInfo]] = {}
            for victim in allowed:
                buckets.setdefault(victim.priority, []).append(victim)
            context.buckets = dict(sorted(buckets.items()))
        host = cycle.host
        key = importance_key(cycle.now)
        for priority, bucket in context.buckets.items():
            if priority not in context.sorted_levels:
                bucket.sort(key=key, reverse=True)
                context.sorted_levels.add(priority)
            for victim in bucket:
                if host is None or not host.preempting(victim.key):
                    yield victim

    def preemption_complete(
        self, cycle: PodCycle, pod: PodInfo, candidate: Candidate
    ) -> list[PodInfo] | None:
        """The victims beyond the node's that the quota still needs, least important first
        and then reprieved most important first; None when the rules allow too few."""
        context = self._context(cycle, pod)
        over_max, over_min = self._short(context, candidate.victims)
        if not over_max and not over_min:
            return []
        quota = context.quota
        assert quota is not None
        taken_keys = {v.key for v in candidate.victims}
        reclaim = context.rule == RULE_RECLAIM
        used_after: dict[str, dict[str, int]] = {}
        if reclaim:
            for victim in candidate.victims:
                theirs = self._owner.get(victim.uid or victim.key)
                if theirs is not None:
                    left = used_after.setdefault(theirs.namespace, dict(theirs.used))
                    _add(left, victim.requests, -1)

        def change(victim: PodInfo, owner: QuotaInfo, sign: int) -> bool:
            """Apply (sign 1) or undo (-1) a victim; True if it helped some shortage."""
            helped = False
            requests = victim.requests
            if owner is quota:
                for r in over_max:
                    amount_ = requests.get(r, 0)
                    helped |= amount_ > 0 and over_max[r] > 0
                    over_max[r] -= sign * amount_
            for r in over_min:
                if r in owner.governed:
                    amount_ = requests.get(r, 0)
                    helped |= amount_ > 0 and over_min[r] > 0
                    over_min[r] -= sign * amount_
            return helped

        def met() -> bool:
            return all(v <= 0 for v in over_max.values()) and all(v <= 0 for v in over_min.values())

        taken: list[tuple[PodInfo, QuotaInfo]] = []
        for victim in self._least_important(cycle, context):
            if victim.key in taken_keys:
                continue
            owner = self._owner.get(victim.uid or victim.key)
            if owner is None:
                continue
            if reclaim:
                left = used_after.setdefault(owner.namespace, dict(owner.used))
                if not owner.over_min(left):
                    continue  # never take a quota below its min
            if not change(victim, owner, 1):
                change(victim, owner, -1)
                continue
            if reclaim:
                _add(used_after[owner.namespace], victim.requests, -1)
            taken.append((victim, owner))
            if met():
                break
        if not met():
            return None
        for victim, owner in reversed(list(taken)):  # most important first
            change(victim, owner, -1)
            if met():
                taken.remove((victim, owner))
            else:
                change(victim, owner, 1)
        return [victim for victim, _ in taken]

    def preemption_chosen(self, cycle: PodCycle, pod: PodInfo, candidate: Candidate) -> None:
        context = self._context(cycle, pod)
        on_node = {p.key for p in cycle.cluster.pods_on(candidate.node)}
        here = tuple(v.key for v in candidate.victims if v.key in on_node)
        elsewhere = tuple(v.key for v in candidate.victims if v.key not in on_node)
        victims = frozenset((v.key, v.uid) for v in candidate.victims)
        self._waiting_victims[pod.uid or pod.key] = victims
        self._nominated[pod.uid or pod.key] = pod
        self.preemptions.append(
            PreemptionRecord(
                cycle.now,
                pod.key,
                candidate.node,
                here,
                elsewhere,
                context.rule,
                self._why(context),
            )
        )

    def _why(self, context: _Context) -> str:
        pod, quota = context.pod, context.quota
        if quota is None:
            return "no ElasticQuota: lower-priority pods of namespaces without one"
        if context.rule == RULE_OWN:
            return (
                f"ElasticQuota {quota.namespace} above its min: lower-priority pods of "
                f"{pod.namespace} only"
            )
        borrowers = ", ".join(sorted(context.over_min)) or "-"
        return (
            f"ElasticQuota {quota.namespace} within its min: pods of quotas over their min "
            f"({borrowers}), any priority"
        )

    # --- scheduler simulate ------------------------------------------------------------------

    def simulation_report(self, cluster: ClusterView, now: datetime) -> list[str]:
        lines: list[str] = []
        for ns in sorted(self._quotas):
            q = self._quotas[ns]
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


def _finished(pod: Pod) -> bool:
    return pod.status is not None and pod.status.phase in ("Succeeded", "Failed")


def _info(pod: Pod) -> PodInfo:
    return PodInfo.of(pod)

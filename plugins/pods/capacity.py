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
  force (`quota_in_force`, the rule the status controller uses to name the one it follows).

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
from apis.quantity import ResourceList
from apis.scheduling import ElasticQuota
from placement.pods.events import ClusterEvent, ObjectEvent, PodEvent
from placement.pods.framework import (
    POD_SUCCESS,
    ClusterView,
    Diagnosis,
    PodCycle,
    PodInfo,
    PodStatus,
    PreFilterResult,
)
from placement.pods.nodes import NodeSnapshot
from placement.pods.preemption import NOT_ELIGIBLE_TERMINATING, Candidate, importance_key
from placement.pods.requests import CPU, PODS, Requests, amount
from plugins.pods._shared import check_fields

__all__ = [
    "NAME",
    "RULE_NO_QUOTA",
    "RULE_OWN",
    "RULE_RECLAIM",
    "CapacityScheduling",
    "PreemptionRecord",
    "QuotaInfo",
    "quota_in_force",
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


def quota_in_force(eqs: Iterable[ElasticQuota]) -> ElasticQuota | None:
    """The ElasticQuota a namespace follows when it has several: the oldest by
    creationTimestamp, then by name (a quota without a timestamp counts as the newest)."""

    def key(eq: ElasticQuota) -> tuple[bool, float, str]:
        created = eq.metadata.creation_timestamp
        return (created is None, created.timestamp() if created else 0.0, eq.metadata.name or "")

    ordered = sorted(eqs, key=key)
    return ordered[0] if ordered else None


def _amounts(resources: ResourceList | None) -> dict[str, int]:
    return {
        name: amount(name, quantity) for name, quantity in (resources or {}).items() if name != PODS
    }


def _add(into: dict[str, int], requests: Mapping[str, int], sign: int = 1) -> None:
    for name, value in requests.items():
        if name != PODS and value:
            into[name] = into.get(name, 0) + sign * value


def format_resources(resources: Mapping[str, int]) -> str:
    """`cpu=2, nvidia.com/gpu=4` in the quantities' own units (sorted by name)."""
    if not resources:
        return "-"
    parts = []
    for name in sorted(resources):
        value = resources[name]
        if name == CPU:
            text = str(value // 1000) if value % 1000 == 0 else f"{value}m"
        elif value and value % 2**30 == 0:
            text = f"{value // 2**30}Gi"
        elif value and value % 2**20 == 0:
            text = f"{value // 2**20}Mi"
        else:
            text = str(value)
        parts.append(f"{name}={text}")
    return ", ".join(parts)


@dataclass
class QuotaInfo:
    """One namespace's quota in force and the pods counted against it."""

    namespace: str
    name: str
    min: dict[str, int]
    max: dict[str, int]
    used: dict[str, int] = field(default_factory=dict)
    pods: dict[str, PodInfo] = field(default_factory=dict)  # uid (or key) -> pod

    @property
    def governed(self) -> frozenset[str]:
        return frozenset(self.min) | frozenset(self.max)

    def add(self, pod: PodInfo) -> bool:
        uid = pod.uid or pod.key
        if uid in self.pods:
            return False
        self.pods[uid] = pod
        _add(self.used, pod.requests)
        return True

    def remove(self, uid: str) -> bool:
        pod = self.pods.pop(uid, None)
        if pod is None:
            return False
        _add(self.used, pod.requests, -1)
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
    over_min: frozenset[str]
    agg_used: dict[str, int]
    agg_min: dict[str, int]
    pool_own: dict[str, int] | None = None
    pool_agg: dict[str, int] | None = None
    pool: list[PodInfo] | None = None
    pool_keys: frozenset[str] = frozenset()


class CapacityScheduling:
    """See the module docstring."""

    name = NAME

    def __init__(self) -> None:
        self._quotas: dict[str, QuotaInfo] = {}
        self._eqs: dict[str, dict[str, ElasticQuota]] = {}
        self._nominated: dict[str, PodInfo] = {}  # uid -> pending pod nominated to a node
        self._waiting_victims: dict[str, frozenset[tuple[str, str]]] = {}
        self._aggregate: tuple[dict[str, int], dict[str, int]] | None = None
        self.preemptions: list[PreemptionRecord] = []

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> CapacityScheduling:
        check_fields(args, ())
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
            if quota is not None and quota.remove(uid):
                self._changed()
                return True
            return False
        if pod.spec.node_name:
            self._nominated.pop(uid, None)
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
            self._changed()
            return True
        spec = chosen.spec
        mins = _amounts(spec.min if spec else None)
        maxs = _amounts(spec.max if spec else None)
        if current is None:
            current = QuotaInfo(namespace, chosen.metadata.name or "", mins, maxs)
            for info in cluster.pods_in(namespace):
                if info.node_name and not info.finished:
                    current.add(info)
            self._quotas[namespace] = current
        else:  # the pods and what they use stay; only the limits change
            current.name, current.min, current.max = chosen.metadata.name or "", mins, maxs
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
        if quota is None:
            in_eq: Requests = {}
            _add(in_eq, pod.requests)
            all_ = in_eq
            rule = RULE_NO_QUOTA
        else:
            in_eq, all_ = self._with_nominated(pod, quota)
            rule = RULE_OWN if quota.over_min_with(in_eq) else RULE_RECLAIM
        over = frozenset(ns for ns, q in self._quotas.items() if q.over_min())
        used, mins = self.aggregate()
        context = _Context(pod, quota, rule, in_eq, all_, over, used, mins)
        cycle.scratch[slot] = context
        return context

    def _allowed(self, context: _Context, victim: PodInfo) -> bool:
        pod = context.pod
        if context.rule == RULE_NO_QUOTA:
            return victim.namespace not in self._quotas and victim.priority < pod.priority
        if context.rule == RULE_OWN:
            return victim.namespace == pod.namespace and victim.priority < pod.priority
        return victim.namespace != pod.namespace and victim.namespace in context.over_min

    def allowed_victim(self, cycle: PodCycle, pod: PodInfo, victim: PodInfo) -> bool:
        """Whether this plugin's rules let `pod` evict `victim` now (for tests and tools)."""
        return self._allowed(self._context(cycle, pod), victim)

    def preemption_eligible(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> str | None:
        """PodEligibleToPreemptOthers with quotas: a pod whose earlier victims (on its
        nominated node, or elsewhere for quota headroom) are still terminating waits."""
        context = self._context(cycle, pod)
        waiting = self._waiting_victims.get(pod.key)
        if waiting:
            left = frozenset(
                (key, uid)
                for key, uid in waiting
                if (p := cycle.cluster.pod(key)) is not None and p.uid == uid and not p.finished
            )
            if left:
                self._waiting_victims[pod.key] = left
                return NOT_ELIGIBLE_TERMINATING
            del self._waiting_victims[pod.key]
        nominated = pod.nominated_node
        if not nominated:
            return None
        row = nodes.row_of(nominated)
        if row is not None and not bool(diagnosis.resolvable[row]):
            return None
        host = cycle.host
        for other in cycle.cluster.pods_on(nominated):
            if not (other.terminating or (host is not None and host.preempting(other.key))):
                continue
            if context.quota is None:
                if other.namespace not in self._quotas and other.priority < pod.priority:
                    return NOT_ELIGIBLE_TERMINATING
            elif other.namespace == pod.namespace:
                if other.priority < pod.priority:
                    return NOT_ELIGIBLE_TERMINATING
            elif context.rule == RULE_RECLAIM and other.namespace in context.over_min:
                return NOT_ELIGIBLE_TERMINATING
        return None

    def preemption_victims(
        self, cycle: PodCycle, pod: PodInfo, node: str, pods: Sequence[PodInfo]
    ) -> list[PodInfo]:
        context = self._context(cycle, pod)
        return [p for p in cycle.cluster.pods_on(node) if self._allowed(context, p)]

    def _deficits(
        self, context: _Context, removed: Iterable[PodInfo]
    ) -> tuple[dict[str, int], dict[str, int]]:
        """What the preemptor's quota still lacks once `removed` are gone: (above its max,
        above Σmin), per resource, positive amounts only."""
        quota = context.quota
        if quota is None:
            return {}, {}
        own: dict[str, int] = {}
        agg: dict[str, int] = {}
        for victim in removed:
            theirs = self._quotas.get(victim.namespace)
            if theirs is None:
                continue
            if victim.namespace == quota.namespace:
                _add(own, victim.requests)
            governed = theirs.governed
            for name, value in victim.requests.items():
                if name in governed and value:
                    agg[name] = agg.get(name, 0) + value
        over_max = {
            name: quota.used.get(name, 0) - own.get(name, 0) + value - quota.max[name]
            for name, value in context.in_eq.items()
            if value > 0 and name in quota.max
        }
        over_max = {name: v for name, v in over_max.items() if v > 0}
        return over_max, self._aggregate_over_with(quota, context.all_, agg)

    def _pool(self, cycle: PodCycle, context: _Context) -> list[PodInfo]:
        """Every pod the rules allow as a victim anywhere, least important first."""
        if context.pool is None:
            host = cycle.host
            if context.rule == RULE_OWN and context.quota is not None:
                found = [
                    p for p in context.quota.pods.values() if p.priority < context.pod.priority
                ]
            else:
                found = [
                    p for ns in sorted(context.over_min) for p in self._quotas[ns].pods.values()
                ]
            found = [p for p in found if host is None or not host.preempting(p.key)]
            found.sort(key=importance_key(cycle.now), reverse=True)
            context.pool = found
            context.pool_keys = frozenset(p.key for p in found)
            own: dict[str, int] = {}
            agg: dict[str, int] = {}
            for victim in found:
                if context.quota is not None and victim.namespace == context.quota.namespace:
                    _add(own, victim.requests)
                governed = self._quotas[victim.namespace].governed
                for name, value in victim.requests.items():
                    if name in governed and value:
                        agg[name] = agg.get(name, 0) + value
            context.pool_own, context.pool_agg = own, agg
        return context.pool

    def preemption_fits(
        self, cycle: PodCycle, pod: PodInfo, node: str, victims: Sequence[PodInfo]
    ) -> bool:
        """The quota can be met once `victims` are gone, with more victims taken elsewhere
        if needed (the bound: every allowed pod of the cluster gone)."""
        context = self._context(cycle, pod)
        over_max, over_min = self._deficits(context, victims)
        if not over_max and not over_min:
            return True
        self._pool(cycle, context)
        own, agg = context.pool_own or {}, context.pool_agg or {}
        quota = context.quota
        gone_own: dict[str, int] = {}
        gone_agg: dict[str, int] = {}
        for victim in victims:
            if victim.key in context.pool_keys:
                if quota is not None and victim.namespace == quota.namespace:
                    _add(gone_own, victim.requests)
                _add(gone_agg, victim.requests)
        return all(own.get(r, 0) - gone_own.get(r, 0) >= v for r, v in over_max.items()) and all(
            agg.get(r, 0) - gone_agg.get(r, 0) >= v for r, v in over_min.items()
        )

    def preemption_complete(
        self, cycle: PodCycle, pod: PodInfo, candidate: Candidate
    ) -> list[PodInfo] | None:
        """The victims beyond the node's that the quota still needs, least important first
        and then reprieved most important first; None when the rules allow too few."""
        context = self._context(cycle, pod)
        over_max, over_min = self._deficits(context, candidate.victims)
        if not over_max and not over_min:
            return []
        quota = context.quota
        assert quota is not None
        taken_keys = {v.key for v in candidate.victims}
        reclaim = context.rule == RULE_RECLAIM
        used_after: dict[str, dict[str, int]] = {}
        if reclaim:
            for victim in candidate.victims:
                theirs = self._quotas.get(victim.namespace)
                if theirs is not None:
                    left = used_after.setdefault(victim.namespace, dict(theirs.used))
                    _add(left, victim.requests, -1)
        taken: list[PodInfo] = []

        def helps(victim: PodInfo) -> bool:
            if victim.namespace == quota.namespace and any(
                victim.requests.get(r, 0) > 0 for r, v in over_max.items() if v > 0
            ):
                return True
            governed = self._quotas[victim.namespace].governed
            return any(
                victim.requests.get(r, 0) > 0 and r in governed
                for r, v in over_min.items()
                if v > 0
            )

        def apply(victim: PodInfo, sign: int) -> None:
            if victim.namespace == quota.namespace:
                for r in over_max:
                    over_max[r] -= sign * victim.requests.get(r, 0)
            governed = self._quotas[victim.namespace].governed
            for r in over_min:
                if r in governed:
                    over_min[r] -= sign * victim.requests.get(r, 0)

        def met() -> bool:
            return all(v <= 0 for v in over_max.values()) and all(v <= 0 for v in over_min.values())

        for victim in self._pool(cycle, context):
            if victim.key in taken_keys or not helps(victim):
                continue
            if reclaim:
                theirs = self._quotas[victim.namespace]
                left = used_after.setdefault(victim.namespace, dict(theirs.used))
                if not theirs.over_min(left):
                    continue  # never take a quota below its min
                _add(left, victim.requests, -1)
            taken.append(victim)
            apply(victim, 1)
            if met():
                break
        if not met():
            return None
        for victim in reversed(list(taken)):  # most important first
            apply(victim, -1)
            if met():
                taken.remove(victim)
            else:
                apply(victim, 1)
        return taken

    def preemption_chosen(self, cycle: PodCycle, pod: PodInfo, candidate: Candidate) -> None:
        context = self._context(cycle, pod)
        on_node = {p.key for p in cycle.cluster.pods_on(candidate.node)}
        here = tuple(v.key for v in candidate.victims if v.key in on_node)
        elsewhere = tuple(v.key for v in candidate.victims if v.key not in on_node)
        self._waiting_victims[pod.key] = frozenset((v.key, v.uid) for v in candidate.victims)
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

"""The quota book of `CapacityScheduling`: per namespace, the ElasticQuota in force and the
pods counted against it, kept from cluster events (docs/gangs-and-quotas.md).

No framework calls here: the plugin feeds the book events and asks it questions.

* **Counting.** A pod counts against its namespace's quota (by UID) from the moment it is
  assumed (Reserve) or seen bound, until it finishes or goes. A quota update keeps what is
  used; with two quotas in a namespace the oldest is in force (`quota_in_force`).
* **Governed resources.** A quota limits the resources named in its min or max: a resource
  missing from `max` is unbounded, a governed resource missing from `min` has min 0; `pods` is
  never enforced (as upstream, where a pod's request has no pod count). Only what a pod asks
  for is checked, and equality fits (`used + request == max`).
* **Nominations.** Pods that a preemption nominated to a node and that are not bound yet hold
  the room they are owed: PreFilter and later preemptors add their requests (`with_nominated`,
  the anchor's two sums).
* **Devices (DRA).** A pod is charged its requests plus its own claims' devices
  (`plugins.pods.capacityscheduling.devices`); removing it takes back what it added (`charge`).
* **Pods leaving.** Bound pods seen terminating, and the victims of our own preemptions, are
  remembered until they go, so that preemption can count them as gone without scanning every
  pod (`in_flight`). `used` keeps them until they are gone, as the anchor's does: PreFilter
  still sees them, only preemption's accounting does not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from apis.core import Pod
from apis.meta import KubeObject
from apis.quantity import ResourceList
from apis.scheduling import ElasticQuota
from placement.pods.cluster.requests import PODS, Requests, amount
from placement.pods.framework.events import ObjectEvent, PodEvent
from placement.pods.framework.interface import ClusterView, PodInfo
from placement.pods.status.elasticquotas import quota_in_force
from plugins.pods.capacityscheduling.devices import DeviceCharges

__all__ = [
    "KIND",
    "OVER_MAX",
    "OVER_MIN",
    "InFlight",
    "QuotaBook",
    "QuotaInfo",
    "add_requests",
    "uid_of",
]

KIND = "ElasticQuota"
OVER_MAX = "max"
"""`admit`: the quota's `used + request` (with nominated pods) is above its max."""
OVER_MIN = "min"
"""`admit`: `Σused + request` over the quotas is above `Σmin`."""


def uid_of(pod: PodInfo) -> str:
    """The key pods are counted by: the UID, else namespace/name (pods built in tests)."""
    return pod.uid or pod.key


def _amounts(resources: ResourceList | None) -> dict[str, int]:
    items = (resources or {}).items()
    return {name: amount(name, q, capacity=True) for name, q in items if name != PODS}


def add_requests(into: dict[str, int], requests: Mapping[str, int], sign: int = 1) -> None:
    """`into += sign * requests`, per resource (`pods` left out: never enforced)."""
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
    charged: dict[str, Mapping[str, int]] = field(default_factory=dict)  # what each added
    index: dict[str, QuotaInfo] | None = None
    """The book's pod uid -> quota map, kept with `pods` (preemption reads it per pod)."""
    governed: frozenset[str] = field(init=False)
    """The resources named in min or max: the ones this quota limits."""

    def __post_init__(self) -> None:
        self.governed = frozenset(self.min) | frozenset(self.max)

    def set_limits(self, name: str, mins: dict[str, int], maxs: dict[str, int]) -> None:
        """A new spec (or another ElasticQuota in force): the pods and `used` stay."""
        self.name, self.min, self.max = name, mins, maxs
        self.governed = frozenset(mins) | frozenset(maxs)

    def add(self, pod: PodInfo, charge: Mapping[str, int] | None = None) -> bool:
        uid = uid_of(pod)
        if uid in self.pods:
            return False
        charged = pod.requests if charge is None else charge
        self.pods[uid] = pod
        self.charged[uid] = charged
        add_requests(self.used, charged)
        if self.index is not None:
            self.index[uid] = self
        return True

    def remove(self, uid: str) -> bool:
        pod = self.pods.pop(uid, None)
        if pod is None:
            return False
        add_requests(self.used, self.charged.pop(uid, pod.requests), -1)
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

    def keeps_min_without(self, requests: Mapping[str, int], used: Mapping[str, int]) -> bool:
        """Whether `used` less `requests` stays at or above min for every governed resource
        the pod holds: taking it would not take this quota below its guarantee."""
        return all(
            used.get(name, 0) - value >= self.min.get(name, 0)
            for name, value in requests.items()
            if value > 0 and name in self.governed and name != PODS
        )

    def borrowed(self) -> dict[str, int]:
        return {
            name: self.used.get(name, 0) - self.min.get(name, 0)
            for name in sorted(self.governed)
            if self.used.get(name, 0) > self.min.get(name, 0)
        }


@dataclass(frozen=True)
class InFlight:
    """The pods counted in some quota that are on their way out, and per namespace what they
    hold: preemption counts them as gone (each victim frees its room once)."""

    pods: Mapping[str, PodInfo] = field(default_factory=dict)  # uid -> pod
    held: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    @property
    def uids(self) -> frozenset[str]:
        return frozenset(self.pods)

    def __contains__(self, pod: object) -> bool:
        return isinstance(pod, PodInfo) and uid_of(pod) in self.pods

    def used(self, quota: QuotaInfo) -> dict[str, int]:
        """The quota's `used` less what its leaving pods hold."""
        out = dict(quota.used)
        gone = self.held.get(quota.namespace)
        if gone:
            add_requests(out, gone, -1)
        return out


class QuotaBook:
    """See the module docstring."""

    def __init__(self) -> None:
        self._quotas: dict[str, QuotaInfo] = {}
        self._eqs: dict[str, dict[str, ElasticQuota]] = {}
        self._owner: dict[str, QuotaInfo] = {}  # counted pod uid -> its quota
        self._nominated: dict[str, PodInfo] = {}  # uid -> pending pod nominated to a node
        self._nominated_node: dict[str, str] = {}  # uid -> that node
        self._leaving: dict[str, str] = {}  # counted pod uid -> key, terminating or a victim
        # preemptor uid -> its victims (key, uid) not seen gone yet
        self._victims_of: dict[str, frozenset[tuple[str, str]]] = {}
        self._aggregate: tuple[dict[str, int], dict[str, int]] | None = None
        self.devices = DeviceCharges()

    # --- reading -----------------------------------------------------------------------------

    def quota(self, namespace: str) -> QuotaInfo | None:
        return self._quotas.get(namespace)

    def quotas(self) -> Mapping[str, QuotaInfo]:
        return self._quotas

    def owner(self, pod: PodInfo) -> QuotaInfo | None:
        """The quota the pod is counted against (None: not counted, or no quota)."""
        return self._owner.get(uid_of(pod))

    def charge(self, pod: PodInfo) -> Mapping[str, int]:
        """What the pod counts against a quota: its requests plus its devices."""
        uid = uid_of(pod)
        quota = self._owner.get(uid)
        if quota is not None:
            charged = quota.charged.get(uid)
            if charged is not None:
                return charged
        return self.devices.charge(pod)

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

    def with_nominated(self, pod: PodInfo, quota: QuotaInfo) -> tuple[Requests, Requests]:
        """The pod's request plus the nominated pods' (the anchor's two sums): `in_eq` adds
        those of its namespace at its priority or above; `all_` those too, plus those of
        other quotas that are not over their min."""
        in_eq: Requests = {}
        add_requests(in_eq, self.charge(pod))
        all_ = dict(in_eq)
        for other in self._nominated.values():
            if other.key == pod.key:
                continue
            ns = other.namespace
            if ns == pod.namespace:
                if other.priority >= pod.priority:
                    add_requests(in_eq, self.charge(other))
                    add_requests(all_, self.charge(other))
                continue
            theirs = self._quotas.get(ns)
            if theirs is not None and not theirs.over_min():
                add_requests(all_, self.charge(other))
        return in_eq, all_

    def aggregate_over_with(self, quota: QuotaInfo, requests: Mapping[str, int]) -> bool:
        """`Σused + requests > Σmin` for a resource the pod asks for and its quota governs."""
        used, mins = self.aggregate()
        governed = quota.governed
        return any(
            value > 0 and name in governed and used.get(name, 0) + value > mins.get(name, 0)
            for name, value in requests.items()
        )

    def admit(self, pod: PodInfo) -> str | None:
        """PreFilter's verdict: None (fits, or no quota), `OVER_MAX` or `OVER_MIN`."""
        quota = self._quotas.get(pod.namespace)
        if quota is None:
            return None
        in_eq, all_ = self.with_nominated(pod, quota)
        if quota.over_max_with(in_eq):
            return OVER_MAX
        if self.aggregate_over_with(quota, all_):
            return OVER_MIN
        return None

    def in_flight(self, going: Callable[[str], bool]) -> InFlight:
        """The counted pods on their way out; `going(key)` tells whether a remembered one
        still is (a victim whose deletion was never sent is not). Pods no longer counted are
        forgotten."""
        pods: dict[str, PodInfo] = {}
        held: dict[str, dict[str, int]] = {}
        for uid, key in list(self._leaving.items()):
            quota = self._owner.get(uid)
            if quota is None:
                del self._leaving[uid]
                continue
            if not going(key):
                continue
            pod = quota.pods.get(uid)
            if pod is None:
                continue
            pods[uid] = pod
            add_requests(held.setdefault(quota.namespace, {}), self.charge(pod))
        return InFlight(pods, held)

    def victims_pending(self, pod: PodInfo, going: Callable[[str, str], bool]) -> bool:
        """Whether some victim of the pod's last preemption is still on its way out (a
        deletion that failed does not hold the preemptor back: it may preempt again)."""
        uid = uid_of(pod)
        waiting = self._victims_of.get(uid)
        if not waiting:
            return False
        left = frozenset((key, v) for key, v in waiting if going(key, v))
        if left:
            self._victims_of[uid] = left
            return True
        del self._victims_of[uid]
        return False

    # --- writing -----------------------------------------------------------------------------

    def _changed(self) -> None:
        self._aggregate = None

    def reserve(self, pod: PodInfo) -> None:
        self._drop_nomination(uid_of(pod))
        quota = self._quotas.get(pod.namespace)
        if quota is not None and quota.add(pod, self.devices.charge(pod)):
            self._changed()

    def unreserve(self, pod: PodInfo) -> None:
        quota = self._quotas.get(pod.namespace)
        if quota is not None and quota.remove(uid_of(pod)):
            self._changed()

    def nominated(self) -> Mapping[str, PodInfo]:
        """The pending pods nominated to a node, by UID: they hold the room they are owed."""
        return self._nominated

    def sync_nominations(self, cluster: ClusterView) -> None:
        """Keep only the nominations the engine's nominator holds: it clears a lower-priority
        pod's when a preemptor takes its node, before that pod's update is seen."""
        if not self._nominated:
            return
        held: dict[str, set[str]] = {}
        for uid, node in list(self._nominated_node.items()):
            keys = held.get(node)
            if keys is None:
                keys = held[node] = {p.key for p in cluster.nominated_on(node)}
            if self._nominated[uid].key not in keys:
                self._drop_nomination(uid)

    def _drop_nomination(self, uid: str) -> None:
        self._nominated.pop(uid, None)
        self._nominated_node.pop(uid, None)

    def nominate(
        self, pod: PodInfo, node: str, victims: Iterable[PodInfo], relied: Iterable[PodInfo] = ()
    ) -> None:
        """A preemption chose its node: the pod holds its room from now on, and its victims
        are leaving. It waits for them, and for the pods already leaving that its accounting
        `relied` on, before it may preempt again (`victims_pending`)."""
        uid = uid_of(pod)
        chosen = tuple(victims)
        self._nominated[uid] = pod
        self._nominated_node[uid] = node
        self._victims_of[uid] = frozenset((v.key, v.uid) for v in (*chosen, *relied))
        for victim in chosen:
            if uid_of(victim) in self._owner:
                self._leaving[uid_of(victim)] = victim.key

    def on_pod(self, event: PodEvent, cluster: ClusterView) -> bool:
        """Follow a pod event; True when some quota's use changed."""
        pod = event.pod
        meta = pod.metadata
        key = f"{meta.namespace or ''}/{meta.name or ''}"
        uid = meta.uid or key
        quota = self._quotas.get(meta.namespace or "")
        if event.type == "Deleted" or (pod.spec.node_name and _finished(pod)):
            self._drop_nomination(uid)
            self._victims_of.pop(uid, None)
            self._leaving.pop(uid, None)
            removed = quota is not None and quota.remove(uid)
            self.devices.forget(uid)
            if removed:
                self._changed()
            return removed
        if pod.spec.node_name:
            self._drop_nomination(uid)
            self._victims_of.pop(uid, None)
            if quota is None:
                return False
            if uid not in quota.pods:
                info = cluster.pod(key)
                same = info is not None and info.uid == (meta.uid or "")
                counted = info if same and info is not None else PodInfo.of(pod)
                self.devices.learn(counted, cluster)
                quota.add(counted, self.devices.charge(counted))
                self._changed()
            if meta.deletion_timestamp is not None:
                self._leaving[uid] = key
            return False
        nominated = pod.status.nominated_node_name if pod.status else None
        if nominated:
            info = cluster.pod(key)
            held = info if info is not None else PodInfo.of(pod)
            self.devices.learn(held, cluster)
            self._nominated[uid] = held
            self._nominated_node[uid] = nominated
        # Without one the nomination stays: this update may be older than our nomination's
        # patch; `sync_nominations` drops it once the engine's nominator no longer holds it.
        return False

    def on_quota(self, event: ObjectEvent, cluster: ClusterView) -> bool:
        """Follow an ElasticQuota event; True when the quota in force changed."""
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
                    self.devices.learn(info, cluster)
                    current.add(info, self.devices.charge(info))
                    if info.terminating:
                        self._leaving[uid_of(info)] = info.key
            self._quotas[namespace] = current
        else:  # the pods and what they use stay; only the limits change
            current.set_limits(chosen.metadata.name or "", mins, maxs)
        self._changed()
        return True


def _finished(pod: Pod) -> bool:
    return pod.status is not None and pod.status.phase in ("Succeeded", "Failed")

"""The quota preemptor of `CapacityScheduling`: for one preemptor in one cycle, which pods the
quota rules let it evict, whether its quota is met once they go, and the victims beyond the
chosen node's that quota headroom still needs (docs/gangs-and-quotas.md).

The rules, decided once per preemptor as the anchor does (nominated pods counted as PreFilter
counts them, the quota's leaving pods still counted):

* within its min (`used + request <= min`): `RULE_RECLAIM`, pods of *other* quotas over their
  min, of any priority; the reprieve puts the most important back first;
* above its min: `RULE_OWN`, lower-priority pods of its own namespace only;
* without a quota: `RULE_NO_QUOTA`, lower-priority pods of namespaces without one.

**Pods already leaving count once.** A pod that is terminating, or that an earlier preemption
deleted and that is not seen gone yet, is gone for the accounting: each quota's use and Σused
are taken without it, so a quota that was borrowing may be back at its min (no source of
victims any more), and a victim's headroom is never counted a second time. On its own node it
stays a potential victim while the rules allow it (the anchor's `SelectVictimsOnNode` removes
terminating pods like any other), so that the Filter plugins see its room; listed again it
evicts nothing, and it is never reprieved (it does not come back). The room such pods free is
owed to the pods nominated for it: their requests are added to the preemptor's (the book's
`with_nominated`), and the engine adds those at the preemptor's priority or above to their
node. A preemptor whose room comes from leaving pods waits for them (`relied_on`).

**Cross-node quota preemption** (beyond the KEP, which lists it as a limitation): victims on
the chosen node free its room; when the quota still lacks headroom (`Σmin`, or the preemptor's
`max`), more victims allowed by the same rules are taken anywhere, least important first, then
reprieved most important first, never taking a quota below its min.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from placement.pods.cluster.requests import PODS, Requests
from placement.pods.framework.interface import PodInfo
from plugins.pods.capacityscheduling.elasticquota import (
    InFlight,
    QuotaBook,
    QuotaInfo,
    add_requests,
)

__all__ = [
    "RULE_NO_QUOTA",
    "RULE_OWN",
    "RULE_RECLAIM",
    "PreemptionRecord",
    "QuotaPreemption",
]

RULE_RECLAIM = "reclaim"
"""The preemptor is within its min: pods of quotas over their min, any priority."""
RULE_OWN = "own"
"""The preemptor is above its min: lower-priority pods of its own namespace."""
RULE_NO_QUOTA = "no-quota"
"""The preemptor has no quota: lower-priority pods of namespaces without one."""

ImportanceKey = Callable[[PodInfo], tuple[int, float, str]]
Pool = Callable[[], Iterable[PodInfo]]
"""A fresh pass over the pods the rules allow anywhere, least important first."""


@dataclass(frozen=True)
class PreemptionRecord:
    """One preemption decided with these rules (for `simulation_report`)."""

    at: datetime
    preemptor: str
    node: str
    victims: tuple[str, ...]
    elsewhere: tuple[str, ...]
    rule: str
    why: str


@dataclass
class QuotaPreemption:
    """One preemptor's view of the quotas, computed once per cycle (`of`)."""

    book: QuotaBook
    pod: PodInfo
    quota: QuotaInfo | None
    rule: str
    leaving: InFlight
    in_eq: Requests
    all_: Requests
    used: dict[str, dict[str, int]]
    """Per namespace with a quota: what it uses once its leaving pods are gone."""
    over: tuple[QuotaInfo, ...]
    """The quotas over their min once their leaving pods are gone (the ones to reclaim from)."""
    short_max: dict[str, int] = field(default_factory=dict)
    """Per resource, how far the quota is above its max before any victim (<= 0: room)."""
    short_min: dict[str, int] = field(default_factory=dict)
    """Per resource, how far the quotas are above Σmin before any victim."""
    _coverable: bool | None = None
    _buckets: dict[int, list[PodInfo]] | None = None
    _sorted: set[int] = field(default_factory=set)
    _leaving_listed: dict[str, frozenset[str]] = field(default_factory=dict)
    """Per node, the leaving pods `victims` listed: they stay victims at every reprieve."""
    _over_set: frozenset[QuotaInfo] = field(init=False)

    def __post_init__(self) -> None:
        self._over_set = frozenset(self.over)

    @classmethod
    def of(cls, book: QuotaBook, pod: PodInfo, leaving: InFlight) -> QuotaPreemption:
        quotas = book.quotas()
        used = {ns: leaving.used(q) for ns, q in quotas.items()}
        over = tuple(q for ns, q in sorted(quotas.items()) if q.over_min(used[ns]))
        quota = quotas.get(pod.namespace)
        if quota is None:
            in_eq: Requests = {}
            add_requests(in_eq, book.charge(pod))
            return cls(book, pod, None, RULE_NO_QUOTA, leaving, in_eq, in_eq, used, over)
        in_eq, all_ = book.with_nominated(pod, quota)
        own = used[quota.namespace]
        # The rule is the anchor's, on the quota's use with its leaving pods still counted:
        # under RULE_RECLAIM its own leaving pods could not be listed on their node, which
        # then looks fuller than it is (the preemptor reclaims once they are gone).
        rule = RULE_OWN if quota.over_min_with(in_eq) else RULE_RECLAIM
        context = cls(book, pod, quota, rule, leaving, in_eq, all_, used, over)
        context.short_max = {
            r: own.get(r, 0) + v - quota.max[r]
            for r, v in in_eq.items()
            if v > 0 and r in quota.max and r != PODS
        }
        aggregate, mins = book.aggregate()
        context.short_min = {
            r: aggregate.get(r, 0) - _held(book, leaving, r) + v - mins.get(r, 0)
            for r, v in all_.items()
            if v > 0 and r in quota.governed and r != PODS
        }
        return context

    @property
    def over_min(self) -> frozenset[str]:
        return frozenset(q.namespace for q in self.over)

    # --- which pods ----------------------------------------------------------------------------

    def allowed(self, victim: PodInfo) -> bool:
        """Whether the rules let this preemptor evict `victim` now."""
        owner = self.book.owner(victim)
        pod = self.pod
        if self.rule == RULE_NO_QUOTA:
            return owner is None and victim.priority < pod.priority
        if self.rule == RULE_OWN:
            return owner is self.quota and victim.priority < pod.priority
        if owner is None or owner is self.quota:
            return False
        if owner in self._over_set:
            return True
        # A leaving pod stays removable on its node while its quota, counting it, is over its
        # min (the anchor's potential victim): it is going anyway, listing it evicts nothing.
        return victim in self.leaving and owner.over_min()

    def victims(
        self, node: str, on_node: Iterable[PodInfo], given: Sequence[PodInfo]
    ) -> list[PodInfo]:
        """The node's pods the rules allow. Lower-priority pods stay only if an earlier hook
        kept them in `given`; reclaiming adds the higher-priority pods of borrowing quotas."""
        kept = {p.key for p in given}
        priority = self.pod.priority
        found = [
            p for p in on_node if (p.priority >= priority or p.key in kept) and self.allowed(p)
        ]
        self._leaving_listed[node] = frozenset(p.key for p in found if p in self.leaving)
        return found

    def waits_for(self, terminating: PodInfo) -> bool:
        """Whether a pod terminating on the preemptor's nominated node frees room the
        preemptor may take (the anchor's PodEligibleToPreemptOthers): it then waits for that
        room rather than preempting more. The quota is judged with the pod still counted."""
        owner = self.book.owner(terminating)
        if self.quota is None:
            return owner is None and terminating.priority < self.pod.priority
        if owner is self.quota:
            return terminating.priority < self.pod.priority
        return self.rule == RULE_RECLAIM and owner is not None and owner.over_min()

    # --- whether the quota is met --------------------------------------------------------------

    def short(self, removed: Iterable[PodInfo]) -> tuple[dict[str, int], dict[str, int]]:
        """What the preemptor's quota still lacks once `removed` are gone: (above its max,
        above Σmin), per resource, positive amounts only. Leaving pods free nothing more."""
        own_keys, agg_keys = self.short_max, self.short_min
        if not own_keys and not agg_keys:
            return {}, {}
        freed_own = dict.fromkeys(own_keys, 0)
        freed_agg = dict.fromkeys(agg_keys, 0)
        for victim in removed:
            owner = self.book.owner(victim)
            if owner is None or victim in self.leaving:
                continue
            requests = self.book.charge(victim)
            if owner is self.quota:
                for r in own_keys:
                    freed_own[r] += requests.get(r, 0)
            governed = owner.governed
            for r in agg_keys:
                if r in governed:
                    freed_agg[r] += requests.get(r, 0)
        over_max = {r: v - freed_own[r] for r, v in own_keys.items() if v - freed_own[r] > 0}
        over_min = {r: v - freed_agg[r] for r, v in agg_keys.items() if v - freed_agg[r] > 0}
        return over_max, over_min

    def fits(self, node: str, victims: Sequence[PodInfo], pool: Pool) -> bool:
        """The quota can be met once `victims` are gone, with more victims from `pool` if
        needed: when the pool alone covers what is lacking, any node's victims do."""
        leaving = self._leaving_listed.get(node)
        if leaving and not leaving <= {v.key for v in victims}:
            # A leaving pod does not come back: a reprieve of it is no real state (and it
            # would leave a pod that is not going as the victim, evicted for nothing).
            return False
        if self._coverable is None:
            self._coverable = self.complete((), pool) is not None
        if self._coverable:
            return True
        over_max, over_min = self.short(victims)
        return not over_max and not over_min

    def complete(self, on_node: Sequence[PodInfo], pool: Pool) -> list[PodInfo] | None:
        """The victims beyond `on_node` that the quota still needs, taken from `pool` (least
        important first) and then reprieved most important first; None when too few. A
        quota reclaimed from is never taken below its min by them: the pods of a quota over
        its min are taken first (the reprieve often gives back the smaller ones taken on the
        way), and only if that ends under some min are they taken while it stays at it."""
        over_max, over_min = self.short(on_node)
        if not over_max and not over_min:
            return []
        if self.rule != RULE_RECLAIM:
            return self._take(on_node, pool(), strict=False)
        taken = self._take(on_node, pool(), strict=False)
        if taken is not None and self._keeps_mins(on_node, taken):
            return taken
        return self._take(on_node, pool(), strict=True)

    def _after(self, on_node: Sequence[PodInfo]) -> dict[str, dict[str, int]]:
        """Per namespace reclaimed from: what it keeps once the node's victims are gone."""
        left: dict[str, dict[str, int]] = {}
        for victim in on_node:
            theirs = self.book.owner(victim)
            if theirs is not None and victim not in self.leaving:
                add_requests(self._left(left, theirs), self.book.charge(victim), -1)
        return left

    def _keeps_mins(self, on_node: Sequence[PodInfo], taken: Sequence[PodInfo]) -> bool:
        left = self._after(on_node)
        owners: list[tuple[PodInfo, QuotaInfo]] = []
        for victim in taken:
            owner = self.book.owner(victim)
            if owner is not None:
                add_requests(self._left(left, owner), self.book.charge(victim), -1)
                owners.append((victim, owner))
        # Each quota taken from keeps its min of every resource its victims held.
        return all(
            left[owner.namespace].get(r, 0) >= owner.min.get(r, 0)
            for victim, owner in owners
            for r, v in self.book.charge(victim).items()
            if v > 0 and r in owner.governed and r != PODS
        )

    def _take(
        self, on_node: Sequence[PodInfo], pool: Iterable[PodInfo], *, strict: bool
    ) -> list[PodInfo] | None:
        """Greedy from `pool`, then reprieved: `strict` takes a pod of a quota reclaimed from
        only while it stays at its min, else while the quota is over its min."""
        over_max, over_min = self.short(on_node)
        quota = self.quota
        taken_keys = {v.key for v in on_node}
        reclaim = self.rule == RULE_RECLAIM
        left = self._after(on_node) if reclaim else {}

        def change(victim: PodInfo, owner: QuotaInfo, sign: int) -> bool:
            """Apply (sign 1) or undo (-1) a victim; True if it helped some shortage."""
            helped = False
            requests = self.book.charge(victim)
            if owner is quota:
                for r in over_max:
                    value = requests.get(r, 0)
                    helped |= value > 0 and over_max[r] > 0
                    over_max[r] -= sign * value
            for r in over_min:
                if r in owner.governed:
                    value = requests.get(r, 0)
                    helped |= value > 0 and over_min[r] > 0
                    over_min[r] -= sign * value
            return helped

        def met() -> bool:
            return all(v <= 0 for v in over_max.values()) and all(v <= 0 for v in over_min.values())

        taken: list[tuple[PodInfo, QuotaInfo]] = []
        for victim in pool:
            if victim.key in taken_keys or victim in self.leaving:
                continue
            owner = self.book.owner(victim)
            if owner is None:
                continue
            if reclaim:
                keeps = self._left(left, owner)
                if not (
                    owner.keeps_min_without(self.book.charge(victim), keeps)
                    if strict
                    else owner.over_min(keeps)
                ):
                    continue
            if not change(victim, owner, 1):
                change(victim, owner, -1)
                continue
            if reclaim:
                add_requests(left[owner.namespace], self.book.charge(victim), -1)
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

    def _left(self, left: dict[str, dict[str, int]], quota: QuotaInfo) -> dict[str, int]:
        found = left.get(quota.namespace)
        if found is None:
            found = left[quota.namespace] = dict(self.used[quota.namespace])
        return found

    def pool(self, key: ImportanceKey, skip: Callable[[PodInfo], bool]) -> Iterator[PodInfo]:
        """The pods the rules allow anywhere (not leaving, not `skip`ped), least important
        first; sorted one priority level at a time, as far as the caller reads."""
        if self._buckets is None:
            quota = self.quota
            if self.rule == RULE_OWN and quota is not None:
                allowed = [p for p in quota.pods.values() if p.priority < self.pod.priority]
            elif self.rule == RULE_RECLAIM:
                allowed = [p for q in self.over if q is not quota for p in q.pods.values()]
            else:
                allowed = []
            buckets: dict[int, list[PodInfo]] = {}
            for victim in allowed:
                buckets.setdefault(victim.priority, []).append(victim)
            self._buckets = dict(sorted(buckets.items()))
        for priority, bucket in self._buckets.items():
            if priority not in self._sorted:
                bucket.sort(key=key, reverse=True)
                self._sorted.add(priority)
            for victim in bucket:
                if victim not in self.leaving and not skip(victim):
                    yield victim

    def relied_on(self) -> list[PodInfo]:
        """The leaving pods the quota's headroom counts on: those holding a resource the
        quota would lack were they staying (the room on the node is in the victims)."""
        quota = self.quota
        if quota is None:
            return []
        own = self.leaving.held.get(quota.namespace, {})
        lacking = {r for r, v in self.short_max.items() if v + own.get(r, 0) > 0}
        lacking |= {
            r for r, v in self.short_min.items() if v + _held(self.book, self.leaving, r) > 0
        }
        out: list[PodInfo] = []
        for victim in self.leaving.pods.values():
            owner = self.book.owner(victim)
            if owner is not None and any(
                self.book.charge(victim).get(r, 0) > 0 and r in owner.governed for r in lacking
            ):
                out.append(victim)
        return out

    # --- reporting -----------------------------------------------------------------------------

    def why(self) -> str:
        pod, quota = self.pod, self.quota
        if quota is None:
            return "no ElasticQuota: lower-priority pods of namespaces without one"
        if self.rule == RULE_OWN:
            return (
                f"ElasticQuota {quota.namespace} above its min: lower-priority pods of "
                f"{pod.namespace} only"
            )
        borrowers = ", ".join(sorted(self.over_min)) or "-"
        return (
            f"ElasticQuota {quota.namespace} within its min: pods of quotas over their min "
            f"({borrowers}), any priority"
        )


def _held(book: QuotaBook, leaving: InFlight, resource: str) -> int:
    """What the leaving pods hold of `resource`, over the quotas that govern it."""
    total = 0
    for namespace, held in leaving.held.items():
        quota = book.quota(namespace)
        if quota is not None and resource in quota.governed:
            total += held.get(resource, 0)
    return total

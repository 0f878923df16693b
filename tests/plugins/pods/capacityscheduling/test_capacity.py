"""CapacityScheduling unit by unit: the quota predicates (equality at the limit, missing min /
max, extended resources, pods without requests), the state fed by events (assumed and bound
pods by UID, finished and deleted pods, quota updates keeping `used`, deletion, duplicates),
PreFilter with nominated pods, Reserve / Unreserve, each preemption hook, the report."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from apis.core import Pod
from placement.pods.framework.events import ObjectEvent, PodEvent
from placement.pods.framework.interface import Diagnosis, PodCode, PodCycle, PodInfo
from placement.pods.preemption.preemption import NOT_ELIGIBLE_TERMINATING, Candidate
from placement.pods.status.elasticquotas import format_resources, quota_in_force
from plugins.pods import DEFAULT_PLUGINS, POD_PLUGINS
from plugins.pods.capacityscheduling.capacity_scheduling import (
    RULE_NO_QUOTA,
    RULE_OWN,
    RULE_RECLAIM,
    CapacityScheduling,
    QuotaInfo,
)
from tests.placement.pods.test_engine import T0, terminating, with_status
from tests.placement.pods.test_quota_world import GPU, QuotaWorld, gpu_node, qpod, quota


def info(min_: dict[str, int], max_: dict[str, int], used: dict[str, int]) -> QuotaInfo:
    return QuotaInfo("ns", "ns", dict(min_), dict(max_), dict(used))


def world(*eqs: Any, gpus: int = 10, nodes: int = 1) -> QuotaWorld:
    w = QuotaWorld.of()
    w.add_nodes(*(gpu_node(f"n{i}", gpus=gpus) for i in range(1, nodes + 1)))
    w.add_quotas(*eqs)
    return w


def cycle(w: QuotaWorld) -> PodCycle:
    engine = w.engine
    return PodCycle(w.now, engine.cluster, engine._waiting_handle, host=engine._host)


# --- registry ----------------------------------------------------------------------------------


def test_registered_and_enabled_by_default_and_refuses_unknown_args() -> None:
    assert "CapacityScheduling" in DEFAULT_PLUGINS
    assert isinstance(POD_PLUGINS["CapacityScheduling"]({}), CapacityScheduling)
    with pytest.raises(ValueError, match="quota: unknown field"):
        POD_PLUGINS["CapacityScheduling"]({"quota": 1})


# --- predicates --------------------------------------------------------------------------------


def test_max_allows_equality_and_rejects_one_more() -> None:
    q = info({GPU: 4}, {GPU: 6}, {GPU: 4})
    assert not q.over_max_with({GPU: 2})
    assert q.over_max_with({GPU: 3})


def test_a_resource_missing_from_max_is_unbounded() -> None:
    q = info({"cpu": 1000}, {GPU: 2}, {"cpu": 5000})
    assert not q.over_max_with({"cpu": 10**9})
    assert info({}, {}, {}).over_max_with({GPU: 10**6}) is False


def test_a_governed_resource_missing_from_min_has_min_zero() -> None:
    q = info({"cpu": 1000}, {GPU: 2, "cpu": 4000}, {})
    assert q.over_min_with({GPU: 1})  # governed (in max), min 0
    assert not q.over_min_with({"cpu": 1000})  # equality
    assert q.over_min_with({"cpu": 1001})
    assert not q.over_min_with({"memory": 2**40})  # not governed: not limited


def test_over_min_is_any_governed_resource_above_min() -> None:
    assert info({GPU: 2}, {}, {GPU: 3}).over_min()
    assert not info({GPU: 2}, {}, {GPU: 2, "cpu": 9000}).over_min()
    assert info({GPU: 2}, {"cpu": 1000}, {"cpu": 1}).over_min()


def test_a_pod_without_requests_is_never_over_and_pods_is_not_enforced() -> None:
    q = info({GPU: 0}, {GPU: 0, "pods": 1}, {GPU: 5})
    assert not q.over_max_with({"pods": 1})
    assert not q.over_min_with({"pods": 1})
    w = world(quota("a", {"pods": 0}, {"pods": 1}))
    w.submit(qpod("p1", "a"), qpod("p2", "a"))  # no requests: both run, pods not counted
    assert w.running() == ["a/p1", "a/p2"]
    assert w.capacity.quota("a").governed == frozenset()  # type: ignore[union-attr]


def test_extended_resources_and_cpu_units() -> None:
    q = info({GPU: 1, "cpu": 500}, {GPU: 2, "cpu": 1500}, {})
    q.add(PodInfo.of(qpod("p", "ns", gpu=2, cpu="1500m")))
    assert q.used == {GPU: 2, "cpu": 1500}
    assert q.borrowed() == {GPU: 1, "cpu": 1000}
    assert format_resources(q.used) == "cpu=1500m, nvidia.com/gpu=2"
    assert format_resources({"cpu": 2000, "memory": 2**31}) == "cpu=2, memory=2Gi"


def test_pods_are_counted_once_by_uid() -> None:
    q = info({}, {}, {})
    pod = PodInfo.of(qpod("p", "ns", gpu=1))
    assert q.add(pod) and not q.add(pod)
    assert q.used == {GPU: 1}
    assert q.remove(pod.uid) and not q.remove(pod.uid)
    assert q.used == {GPU: 0}


def test_quota_in_force_is_the_oldest_then_by_name() -> None:
    old = quota("ns", name="zz", created=T0)
    young = quota("ns", name="aa", created=T0 + timedelta(hours=1))
    twin = quota("ns", name="bb", created=T0)
    assert quota_in_force([young, old]) is old
    assert quota_in_force([old, twin, young]) is twin
    assert quota_in_force([]) is None


# --- state from events -------------------------------------------------------------------------


def test_assumed_pods_count_at_reserve_and_bound_ones_once() -> None:
    w = world(quota("a", {GPU: 4}, {GPU: 6}))
    actions = w.add_pods(qpod("p1", "a", gpu=2))
    actions = w.engine.schedule(w.now)  # assumed (Reserve), binding not seen yet
    assert w.used("a") == 2
    w.apply(actions)  # bound: the pod event does not count it twice
    assert w.used("a") == 2


def test_pods_of_other_schedulers_seen_bound_count() -> None:
    w = world(quota("a", {GPU: 4}, {GPU: 6}))
    pod = qpod("p1", "a", gpu=3, node="n1").model_copy()
    pod.spec.scheduler_name = "someone-else"
    w.add_pods(pod)
    assert w.used("a") == 3


def test_finished_and_deleted_pods_are_released() -> None:
    w = world(quota("a", {GPU: 4}, {GPU: 6}))
    w.add_pods(qpod("p1", "a", gpu=2, node="n1"), qpod("p2", "a", gpu=1, node="n1"))
    assert w.used("a") == 3
    w.add_pods(with_status(w.pods["a/p1"], phase="Succeeded"))
    assert w.used("a") == 1
    w.delete("a/p2")
    assert w.used("a") == 0


def test_a_bind_failure_unreserves() -> None:
    w = world(quota("a", {GPU: 4}, {GPU: 6}))
    w.fail_binds.add("a/p1")
    w.add_pods(qpod("p1", "a", gpu=2))
    w.step()
    assert w.used("a") == 0


def test_a_quota_update_keeps_used_and_deletion_drops_it() -> None:
    w = world(quota("a", {GPU: 4}, {GPU: 6}))
    w.add_pods(qpod("p1", "a", gpu=2, node="n1"))
    w.apply(w.engine.handle(ObjectEvent("Modified", quota("a", {GPU: 1}, {GPU: 3})), w.now))
    q = w.capacity.quota("a")
    assert q is not None and q.min == {GPU: 1} and q.max == {GPU: 3} and q.used == {GPU: 2}
    w.apply(w.engine.handle(ObjectEvent("Deleted", quota("a")), w.now))
    assert w.capacity.quota("a") is None
    w.submit(qpod("p2", "a", gpu=8))  # no quota any more: only the node limits it
    assert "a/p2" in w.running()


def test_a_quota_created_later_counts_the_pods_already_bound() -> None:
    w = world()
    w.add_pods(qpod("p1", "a", gpu=2, node="n1"), qpod("p2", "b", gpu=1, node="n1"))
    w.add_quotas(quota("a", {GPU: 4}, {GPU: 6}))
    assert w.used("a") == 2
    assert w.capacity.quota("b") is None


def test_two_quotas_in_a_namespace_the_oldest_is_in_force_and_the_next_takes_over() -> None:
    first = quota("a", {GPU: 4}, {GPU: 6}, name="first", created=T0)
    second = quota("a", {GPU: 1}, {GPU: 2}, name="second", created=T0 + timedelta(minutes=1))
    w = world(second, first)
    w.add_pods(qpod("p1", "a", gpu=2, node="n1"))
    q = w.capacity.quota("a")
    assert q is not None and q.name == "first" and q.max == {GPU: 6}
    w.apply(w.engine.handle(ObjectEvent("Deleted", first), w.now))
    q = w.capacity.quota("a")
    assert q is not None and q.name == "second" and q.max == {GPU: 2} and q.used == {GPU: 2}


# --- PreFilter ---------------------------------------------------------------------------------


def test_pre_filter_namespaces_without_quota_pass() -> None:
    w = world(quota("a", {GPU: 1}, {GPU: 1}))
    result = w.capacity.pre_filter(
        cycle(w), PodInfo.of(qpod("p", "free", gpu=100)), w.engine.nodes()
    )
    assert result.status.ok


def test_pre_filter_max_equality_allowed_and_message_over_max() -> None:
    w = world(quota("a", {GPU: 6}, {GPU: 6}))
    w.add_pods(qpod("p1", "a", gpu=4, node="n1"))
    nodes = w.engine.nodes()
    assert w.capacity.pre_filter(cycle(w), PodInfo.of(qpod("p2", "a", gpu=2)), nodes).status.ok
    status = w.capacity.pre_filter(cycle(w), PodInfo.of(qpod("p3", "a", gpu=3)), nodes).status
    assert status.code == PodCode.UNSCHEDULABLE and status.plugin == "CapacityScheduling"
    assert (
        status.message
        == "Pod a/p3 is rejected in PreFilter because ElasticQuota a is more than Max"
    )


def test_pre_filter_sum_of_min_over_all_quotas() -> None:
    w = world(quota("a", {GPU: 4}, {GPU: 10}), quota("b", {GPU: 6}, {GPU: 10}))
    w.add_pods(qpod("p1", "b", gpu=7, node="n1"))
    nodes = w.engine.nodes()
    assert w.capacity.pre_filter(cycle(w), PodInfo.of(qpod("p2", "a", gpu=3)), nodes).status.ok
    status = w.capacity.pre_filter(cycle(w), PodInfo.of(qpod("p3", "a", gpu=4)), nodes).status
    assert status.message == (
        "Pod a/p3 is rejected in PreFilter because total ElasticQuota used is more than min"
    )
    # A pod asking for a resource no quota governs is not limited by it.
    assert w.capacity.pre_filter(cycle(w), PodInfo.of(qpod("p4", "a", cpu=64)), nodes).status.ok


def test_pre_filter_counts_nominated_pods_as_the_anchor_does() -> None:
    w = world(quota("a", {GPU: 4}, {GPU: 5}), quota("b", {GPU: 6}, {GPU: 8}))
    nominated = with_status(qpod("n1", "a", gpu=2, priority=5), nominatedNodeName="n1")
    w.add_pods(nominated)
    nodes = w.engine.nodes()
    # Same namespace, priority at or above the pod's: counted against max.
    low = PodInfo.of(qpod("x", "a", gpu=4, priority=5))
    assert "more than Max" in w.capacity.pre_filter(cycle(w), low, nodes).status.message
    # Higher than the nominated pod: not counted.
    high = PodInfo.of(qpod("y", "a", gpu=4, priority=6))
    assert w.capacity.pre_filter(cycle(w), high, nodes).status.ok
    # Another quota's nominated pod counts against Σmin while its quota is within min.
    w.add_pods(with_status(qpod("n2", "b", gpu=6), nominatedNodeName="n1"))
    other = PodInfo.of(qpod("z", "a", gpu=5, priority=6))  # 5 + 6 > Σmin 10
    assert "total ElasticQuota" in w.capacity.pre_filter(cycle(w), other, nodes).status.message
    # The pod itself is never counted twice.
    itself = PodInfo.of(w.pods["b/n2"])
    assert w.capacity.pre_filter(cycle(w), itself, nodes).status.ok


# --- Reserve / Unreserve -----------------------------------------------------------------------


def test_reserve_and_unreserve_move_used_only_for_quota_namespaces() -> None:
    w = world(quota("a", {GPU: 4}, {GPU: 6}))
    plugin, c = w.capacity, cycle(w)
    pod = PodInfo.of(qpod("p", "a", gpu=3))
    assert plugin.reserve(c, pod, "n1").ok
    assert w.used("a") == 3
    plugin.unreserve(c, pod, "n1")
    plugin.unreserve(c, pod, "n1")  # twice: no effect
    assert w.used("a") == 0
    assert plugin.reserve(c, PodInfo.of(qpod("q", "free", gpu=3)), "n1").ok
    assert plugin.quota("free") is None


# --- preemption hooks --------------------------------------------------------------------------


def test_hooks_apply_only_while_a_quota_exists() -> None:
    plugin = CapacityScheduling()
    w = world()
    assert not plugin.preemption_applies(cycle(w), PodInfo.of(qpod("p", "a")))
    assert w.capacity.preemption_applies(cycle(w), PodInfo.of(qpod("p", "a"))) is False
    w.add_quotas(quota("a", {GPU: 1}))
    assert w.capacity.preemption_applies(cycle(w), PodInfo.of(qpod("p", "a")))


def reclaim_world() -> QuotaWorld:
    w = world(
        quota("a", {GPU: 4}, {GPU: 6}),
        quota("b", {GPU: 6}, {GPU: 8}),
        quota("c", {GPU: 0}, {GPU: 8}),
    )
    w.add_pods(
        qpod("a1", "a", gpu=4, node="n1", priority=100),
        qpod("a2", "a", gpu=2, node="n1", priority=100),
        qpod("b1", "b", gpu=1, node="n1"),
        qpod("free1", "free", gpu=1, node="n1", priority=-5),
    )
    return w


def victims_of(w: QuotaWorld, pod: Pod) -> list[str]:
    c = cycle(w)
    info = PodInfo.of(pod)
    default = [p for p in w.engine.cluster.pods_on("n1") if p.priority < info.priority]
    return sorted(p.key for p in w.capacity.preemption_victims(c, info, "n1", default))


def test_victims_keep_what_an_earlier_hook_removed() -> None:
    """A lower-priority pod an earlier plugin's hook left out stays out (a gang member)."""
    w = reclaim_world()
    info = PodInfo.of(qpod("x", "free", gpu=1, priority=0))
    assert w.capacity.preemption_victims(cycle(w), info, "n1", []) == []


def test_within_min_victims_are_pods_of_quotas_over_min_of_any_priority() -> None:
    w = reclaim_world()
    assert victims_of(w, qpod("b2", "b", gpu=3, priority=0)) == ["a/a1", "a/a2"]
    c = cycle(w)
    assert w.capacity.context(c, PodInfo.of(qpod("b2", "b", gpu=3))).rule == RULE_RECLAIM


def test_above_min_victims_are_lower_priority_pods_of_the_same_namespace() -> None:
    w = reclaim_world()
    w.add_pods(qpod("b0", "b", gpu=1, node="n1", priority=-1))
    assert victims_of(w, qpod("b2", "b", gpu=6, priority=0)) == ["b/b0"]
    c = cycle(w)
    assert w.capacity.context(c, PodInfo.of(qpod("b2", "b", gpu=6))).rule == RULE_OWN


def test_without_quota_victims_are_lower_priority_pods_of_namespaces_without_one() -> None:
    w = reclaim_world()
    assert victims_of(w, qpod("x", "free", gpu=1, priority=0)) == ["free/free1"]
    assert victims_of(w, qpod("x", "free", gpu=1, priority=-5)) == []
    c = cycle(w)
    assert w.capacity.context(c, PodInfo.of(qpod("x", "free"))).rule == RULE_NO_QUOTA


def test_fits_holds_the_quota_and_complete_takes_headroom_elsewhere() -> None:
    w = world(quota("q1", {"cpu": 0}, {"cpu": 2}), quota("q2", {"cpu": 2}, {"cpu": 2}), nodes=2)
    w.add_pods(qpod("p1", "q1", cpu=1, node="n1"), qpod("p2", "q1", cpu=1, node="n2"))
    c = cycle(w)
    pod = PodInfo.of(qpod("big", "q2", cpu=2))
    p1 = next(p for p in w.engine.cluster.pods_on("n1"))
    assert w.capacity.preemption_fits(c, pod, "n1", [p1])  # p2 can still go elsewhere
    extra = w.capacity.preemption_complete(c, pod, Candidate("n1", 0, (p1,)))
    assert extra is not None and [p.key for p in extra] == ["q1/p2"]
    # A preemptor above its max with nothing of its own to evict cannot be helped.
    over = PodInfo.of(qpod("huge", "q2", cpu=3))
    assert not w.capacity.preemption_fits(c, over, "n1", [p1])


def test_complete_never_takes_a_quota_below_its_min() -> None:
    w = world(quota("a", {GPU: 2}, {GPU: 6}), quota("b", {GPU: 4}, {GPU: 6}), nodes=2, gpus=3)
    w.add_pods(
        qpod("a1", "a", gpu=1, node="n1"),
        qpod("a2", "a", gpu=1, node="n1"),
        qpod("a3", "a", gpu=1, node="n2"),
        qpod("a4", "a", gpu=1, node="n2"),
    )
    c = cycle(w)
    pod = PodInfo.of(qpod("b1", "b", gpu=4))  # Σ 4 + 4 > 6: needs 2 GPUs of headroom
    extra = w.capacity.preemption_complete(c, pod, Candidate("n1", 0, ()))
    assert extra is not None and len(extra) == 2
    pod = PodInfo.of(qpod("b2", "b", gpu=4))
    taken = w.capacity.preemption_complete(
        c, pod, Candidate("n1", 0, tuple(w.engine.cluster.pods_on("n1")))
    )
    assert taken == []  # a1, a2 on the node already free the headroom


def test_eligibility_waits_for_terminating_victims() -> None:
    w = reclaim_world()
    c = cycle(w)
    nodes = w.engine.nodes()
    diag = Diagnosis(total_nodes=1, counts={}, resolvable=np.ones(1, dtype=bool))
    # Within min, nominated to n1 where a pod of a quota over min is terminating: wait.
    w.add_pods(terminating(w.pods["a/a2"]))
    pod = PodInfo.of(with_status(qpod("b2", "b", gpu=3), nominatedNodeName="n1"))
    assert w.capacity.preemption_eligible(c, pod, nodes, diag) == NOT_ELIGIBLE_TERMINATING
    # The nominated node now fails for an unresolvable reason: eligible again.
    hard = Diagnosis(total_nodes=1, counts={}, resolvable=np.zeros(1, dtype=bool))
    assert w.capacity.preemption_eligible(cycle(w), pod, nodes, hard) is None
    # Not nominated: eligible.
    plain = PodInfo.of(qpod("b3", "b", gpu=3))
    assert w.capacity.preemption_eligible(cycle(w), plain, nodes, diag) is None


def test_eligibility_without_quota_ignores_terminating_quota_pods() -> None:
    w = reclaim_world()
    w.add_pods(terminating(w.pods["a/a2"]))
    nodes = w.engine.nodes()
    diag = Diagnosis(total_nodes=1, counts={}, resolvable=np.ones(1, dtype=bool))
    pod = PodInfo.of(with_status(qpod("x", "free", gpu=1, priority=200), nominatedNodeName="n1"))
    assert w.capacity.preemption_eligible(cycle(w), pod, nodes, diag) is None
    w.add_pods(terminating(w.pods["free/free1"]))
    assert w.capacity.preemption_eligible(cycle(w), pod, nodes, diag) == NOT_ELIGIBLE_TERMINATING


def test_a_higher_priority_pod_over_its_max_preempts_its_own_lower_priority_pods() -> None:
    w = world(quota("a", {GPU: 4}, {GPU: 6}), quota("b", {GPU: 6}))
    w.submit(qpod("low", "a", gpu=6, priority=0))
    w.submit(qpod("high", "a", gpu=2, priority=10))
    assert w.preempted() == ["a/low"] and w.running() == ["a/high"]


def test_never_preempting_pods_do_not_preempt() -> None:
    w = world(quota("a", {GPU: 4}, {GPU: 6}), quota("b", {GPU: 6}, {GPU: 8}))
    w.submit(qpod("a1", "a", gpu=6), qpod("b1", "b", gpu=3))
    w.submit(qpod("b2", "b", gpu=3, never=True))
    assert w.preempted() == [] and "b/b2" in w.pending()


def test_simulation_report_lists_quotas_and_preemptions() -> None:
    w = world(quota("a", {GPU: 4}, {GPU: 6}), quota("b", {GPU: 6}))
    w.submit(qpod("a1", "a", gpu=6))
    w.submit(qpod("b1", "b", gpu=6))
    lines = w.capacity.simulation_report(w.engine.cluster, w.now)
    assert lines[:2] == [  # a1 was A's only pod: reclaiming B's min takes it all
        "ElasticQuota a/a: min nvidia.com/gpu=4; max nvidia.com/gpu=6; used nvidia.com/gpu=0;"
        " borrowed -",
        "ElasticQuota b/b: min nvidia.com/gpu=6; max -; used nvidia.com/gpu=6; borrowed -",
    ]
    assert lines[2] == (
        "preemption: b/b1 on n1 evicted a/a1 (ElasticQuota b within its min: pods of quotas"
        " over their min (a), any priority)"
    )


def test_events_of_unrelated_kinds_do_not_requeue() -> None:
    w = world(quota("a", {GPU: 4}))
    assert not w.capacity.on_event(PodEvent("Added", qpod("p", "x")), w.engine.cluster)

"""The capacity scheduling KEP's stories and preemption examples through the engine: who runs,
who was preempted, what each quota uses after every step."""

from __future__ import annotations

from datetime import datetime, timedelta

from placement.pods.framework.events import DeletePod
from tests.placement.pods.test_engine import T0, make_node
from tests.placement.pods.test_quota_world import GPU, QuotaWorld, gpu_node, qpod, quota


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def story1() -> QuotaWorld:
    world = QuotaWorld.of()
    world.add_nodes(gpu_node("gpu-node", gpus=10))
    world.add_quotas(quota("a", {GPU: 4}, {GPU: 6}), quota("b", {GPU: 6}, {GPU: 8}))
    return world


def test_story1_borrowing_then_reclaiming_then_the_request_that_stays_pending() -> None:
    world = story1()
    # Both users within their min: A 2, B 3.
    world.submit(qpod("a1", "a", gpu=1), qpod("a2", "a", gpu=1))
    world.submit(qpod("b1", "b", gpu=1), qpod("b2", "b", gpu=2))
    assert (world.used("a"), world.used("b")) == (2, 3)
    # A reaches its min, then borrows 2 of B's unused min: 6 (its max), Σused 9 <= Σmin 10.
    world.submit(qpod("a3", "a", gpu=2))
    world.submit(qpod("a4", "a", gpu=2))
    assert (world.used("a"), world.used("b")) == (6, 3)
    assert world.capacity.quota("a").borrowed() == {GPU: 2}  # type: ignore[union-attr]
    # A asks for more than its max: rejected at PreFilter, nothing preempted.
    world.submit(qpod("a5", "a", gpu=1))  # same priority: no victim in A
    assert "ElasticQuota a is more than Max" in world.message("a/a5")
    world.delete("a/a5")
    assert world.preempted() == []
    # B wants 3 more: only 1 GPU free. 3 + 3 <= min 6: A's borrowed pod goes, whatever its
    # priority; A's most important pods are reprieved.
    world.submit(qpod("b3", "b", gpu=3))
    assert world.preempted() == ["a/a4"]
    assert "b/b3" in world.running()
    assert (world.used("a"), world.used("b")) == (4, 6)
    # B asks for 1 more: 6 + 1 > min 6, only lower-priority pods of B could go: none.
    world.submit(qpod("b4", "b", gpu=1))
    assert world.pending() == ["b/b4"]
    assert world.preempted() == ["a/a4"]
    message = world.message("b/b4")
    assert "total ElasticQuota used is more than min" in message
    assert (world.used("a"), world.used("b")) == (4, 6)
    [record] = world.capacity.preemptions
    assert record.preemptor == "b/b3" and record.victims == ("a/a4",)
    assert record.rule == "reclaim"


def test_story2_reclaim_from_the_quota_over_min_then_same_namespace_preemption() -> None:
    world = QuotaWorld.of()
    world.add_nodes(gpu_node("gpu-node", gpus=10))
    world.add_quotas(
        quota("a", {GPU: 3}, {GPU: 4}),
        quota("b", {GPU: 4}, {GPU: 6}),
        quota("c", {GPU: 3}, {GPU: 4}),
    )
    world.submit(*(qpod(f"a{i}", "a", gpu=1, started=at(i)) for i in (1, 2)))
    world.submit(*(qpod(f"b{i}", "b", gpu=1, started=at(i)) for i in (1, 2)))
    world.submit(*(qpod(f"c{i}", "c", gpu=1, started=at(i)) for i in (1, 2, 3)))
    assert [world.used(ns) for ns in "abc"] == [2, 2, 3]
    world.submit(*(qpod(f"a{i}", "a", gpu=1, started=at(i)) for i in (3, 4)))
    world.submit(qpod("b3", "b", gpu=1, started=at(3)))
    assert [world.used(ns) for ns in "abc"] == [4, 3, 3]
    # B: 3 + 1 <= min 4 -> victims from quotas over their min: A (4 > 3), never C (3 = 3).
    world.submit(qpod("b4", "b", gpu=1, started=at(4)))
    assert world.preempted() == ["a/a4"]  # the least important of A
    assert [world.used(ns) for ns in "abc"] == [3, 4, 3]
    assert world.running("c") == ["c/c1", "c/c2", "c/c3"]
    # Later: A uses 2, B runs PodA (2, low priority) and PodB (3).
    world.delete("a/a3")
    for key in ("b/b1", "b/b2", "b/b3", "b/b4"):
        world.delete(key)
    world.submit(qpod("pod-a", "b", gpu=2, priority=1, started=at(10)))
    world.submit(qpod("pod-b", "b", gpu=3, priority=10, started=at(11)))
    assert [world.used(ns) for ns in "abc"] == [2, 5, 3]
    # PodC: 5 + 1 > min 4 -> lower-priority pods of B only: PodA.
    world.submit(qpod("pod-c", "b", gpu=1, priority=10, started=at(12)))
    assert world.preempted() == ["a/a4", "b/pod-a"]
    assert world.running("b") == ["b/pod-b", "b/pod-c"]
    assert [world.used(ns) for ns in "abc"] == [2, 4, 3]
    assert [r.rule for r in world.capacity.preemptions] == ["reclaim", "own"]


def test_example_cross_namespace_vs_single_namespace_preemption() -> None:
    """quota2's high-priority pod stays pending: quota2 is above its min (0), so it may only
    preempt lower-priority pods of its own namespace, not quota1's borrowing pod."""
    world = QuotaWorld.of()
    world.add_nodes(make_node("node-1", cpu=8))
    world.add_quotas(
        quota("quota1", {"cpu": 0}, {"cpu": 2}),
        quota("quota2", {"cpu": 0}, {"cpu": 2}),
        quota("quota3", {"cpu": 1}, {"cpu": 2}),
    )
    world.submit(qpod("nginx", "quota1", cpu=1))
    assert world.running() == ["quota1/nginx"]
    world.submit(qpod("nginx", "quota2", cpu=1, priority=1_000_000))
    assert world.running() == ["quota1/nginx"] and world.pending() == ["quota2/nginx"]
    assert world.preempted() == []
    message = world.message("quota2/nginx")
    assert "total ElasticQuota used is more than min" in message
    assert "No preemption victims found for incoming pod" in message


def test_example_exactly_two_nodes_schedules_by_cross_node_preemption() -> None:
    """The KEP's known limitation: quota1 borrows quota2's 2 cpus with one pod per node; the
    2-cpu pod of quota2 fits on neither node unless both quota1 pods go (one for the node's
    room, the other for Σmin headroom)."""
    world = QuotaWorld.of()
    world.add_nodes(make_node("node-1", cpu=2), make_node("node-2", cpu=2))
    world.add_quotas(
        quota("quota1", {"cpu": 0}, {"cpu": 2}), quota("quota2", {"cpu": 2}, {"cpu": 2})
    )
    world.submit(qpod("nginx-1", "quota1", cpu=1), qpod("nginx-2", "quota1", cpu=1))
    assert {world.node_of("quota1/nginx-1"), world.node_of("quota1/nginx-2")} == {
        "node-1",
        "node-2",
    }
    world.submit(qpod("nginx", "quota2", cpu=2))
    assert world.preempted() == ["quota1/nginx-1", "quota1/nginx-2"]
    assert world.running() == ["quota2/nginx"]
    assert world.used("quota1", "cpu") == 0 and world.used("quota2", "cpu") == 2000
    [record] = world.capacity.preemptions
    assert len(record.victims) == 1 and len(record.elsewhere) == 1
    report = world.capacity.simulation_report(world.engine.cluster, world.now)
    assert report[0] == "ElasticQuota quota1/quota1: min cpu=0; max cpu=2; used cpu=0; borrowed -"
    assert report[-1].startswith(f"preemption: quota2/nginx on {record.node} evicted ")
    assert "for quota headroom" in report[-1]


def test_a_cross_node_preemptor_waits_for_victims_elsewhere_and_then_binds() -> None:
    """While the victim freeing quota headroom on the other node is still going, the
    preemptor does not preempt again; once both are gone it binds to its nominated node."""
    world = QuotaWorld.of()
    world.add_nodes(make_node("node-1", cpu=2), make_node("node-2", cpu=2))
    world.add_quotas(
        quota("quota1", {"cpu": 0}, {"cpu": 2}), quota("quota2", {"cpu": 2}, {"cpu": 2})
    )
    world.submit(qpod("nginx-1", "quota1", cpu=1), qpod("nginx-2", "quota1", cpu=1))
    world.add_pods(qpod("nginx", "quota2", cpu=2))
    actions = world.engine.schedule(world.now)
    deletes = [a for a in actions if isinstance(a, DeletePod)]
    assert sorted(a.key for a in deletes) == ["quota1/nginx-1", "quota1/nginx-2"]
    world.apply([a for a in actions if not isinstance(a, DeletePod)])
    world.now += timedelta(minutes=5, seconds=1)  # the unschedulable queue is flushed
    again = world.engine.schedule(world.now)
    world.apply(again)
    assert not any(isinstance(a, DeletePod) for a in again)
    assert "not eligible due to a terminating pod" in world.message("quota2/nginx")
    world.apply(deletes)  # the victims go
    world.settle()
    assert world.running() == ["quota2/nginx"]
    assert world.node_of("quota2/nginx") == world.capacity.preemptions[0].node
    assert len(world.capacity.preemptions) == 1

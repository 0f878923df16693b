"""Default preemption through the engine: minimal victims, kube's choice of node, nominated
node kept for the preemptor, preemptionPolicy Never, eligibility while victims terminate, hooks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from apis.core import Pod
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.events import DeletePod, EmitEvent, PatchPodStatus, PodCondition
from placement.pods.framework.interface import (
    Diagnosis,
    EventHandler,
    PodCycle,
    PodInfo,
    PreemptionHooks,
    Profile,
)
from placement.pods.preemption.preemption import (
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
    Candidate,
    Preemptor,
)
from placement.pods.preemption.victims import num_candidates, pick_candidate
from plugins.pods.defaultpreemption.default_preemption import DefaultPreemption
from tests.placement.pods.test_engine import (
    T0,
    World,
    binds,
    default_profile,
    make_node,
    make_pod,
    of,
    with_status,
)


def running(name: str, node: str, cpu: int, priority: int, started: datetime = T0) -> Pod:
    pod = make_pod(name, cpu=cpu, priority=priority, node=node, scheduler="other")
    return with_status(pod, startTime=started.isoformat())


def deleted(actions: Sequence[Any]) -> list[str]:
    return sorted(a.key.split("/")[1] for a in of(actions, DeletePod))


def preemptor_world(*pods: Pod, nodes: Sequence[Any] = (), pop_from_backoff: bool = True) -> World:
    world = World.of(pop_from_backoff=pop_from_backoff)
    world.add_nodes(*nodes)
    world.add_pods(*pods)
    return world


def test_minimal_victim_set_reprieves_the_most_important_first() -> None:
    world = preemptor_world(
        running("v1", "a", 1, priority=1),
        running("v2", "a", 1, priority=2),
        running("v3", "a", 1, priority=3),
        running("v4", "a", 1, priority=4),
        nodes=[make_node("a", cpu=4)],
    )
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    actions = world.engine.schedule(T0)
    assert deleted(actions) == ["v1", "v2"]  # v4 and v3 are reprieved
    [patch] = [a for a in of(actions, PatchPodStatus) if a.key == "default/vip"]
    assert patch.nominated_node == "a"
    preempted = [a for a in of(actions, EmitEvent) if a.reason == "Preempted"]
    assert [a.regarding[1] for a in preempted] == ["default/v2", "default/v1"]  # kube's order
    assert preempted[0].message == "Preempted by pod uid-vip on node a"
    assert world.engine.stats.preemption_attempts == 1 and world.engine.stats.victims == 2


def test_a_victim_is_given_kubes_disruption_target_naming_the_profiles_scheduler() -> None:
    world = World.of(default_profile(schedulerName="batch-scheduler"))
    world.add_nodes(make_node("a", cpu=2))
    world.add_pods(running("low", "a", 2, priority=1))
    world.add_pods(make_pod("vip", cpu=2, priority=10, scheduler="batch-scheduler"))
    [delete] = of(world.engine.schedule(T0), DeletePod)
    assert (delete.key, delete.uid, delete.preemptor) == ("default/low", "uid-low", "default/vip")
    assert delete.condition == PodCondition(
        type="DisruptionTarget",
        status="True",
        reason="PreemptionByScheduler",
        message="batch-scheduler: preempting to accommodate a higher priority pod",
    )


def test_reprieve_skips_a_big_victim_but_keeps_trying_smaller_ones() -> None:
    world = preemptor_world(
        running("big", "a", 2, priority=5),
        running("small", "a", 1, priority=4),
        running("tiny", "a", 1, priority=1),
        nodes=[make_node("a", cpu=4)],
    )
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    # big is reprieved first (fits with small and tiny gone: 2 used + 2 = 4), then small
    # cannot come back, tiny cannot either.
    assert deleted(world.engine.schedule(T0)) == ["small", "tiny"]


def test_node_with_the_lowest_highest_victim_priority_wins() -> None:
    world = preemptor_world(
        running("a-hi", "a", 2, priority=5),
        running("b-lo1", "b", 1, priority=1),
        running("b-lo2", "b", 1, priority=1),
        nodes=[make_node("a", cpu=2), make_node("b", cpu=2)],
    )
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    actions = world.engine.schedule(T0)
    assert deleted(actions) == ["b-lo1", "b-lo2"]  # two victims, but of lower priority


def test_then_the_smallest_sum_then_fewest_victims() -> None:
    world = preemptor_world(
        running("a1", "a", 1, priority=3),
        running("a2", "a", 1, priority=3),
        running("b1", "b", 1, priority=3),
        running("b2", "b", 1, priority=1),
        running("c1", "c", 2, priority=3),
        nodes=[make_node(n, cpu=2) for n in "abc"],
    )
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    # a: {3,3} sum 6; b: {3,1} sum 4; c: {3} sum 3 -> c (smallest sum).
    assert deleted(world.engine.schedule(T0)) == ["c1"]


def test_then_the_latest_start_of_the_most_important_victims() -> None:
    world = preemptor_world(
        running("old", "a", 2, priority=3, started=T0 - timedelta(hours=2)),
        running("new", "b", 2, priority=3, started=T0 - timedelta(hours=1)),
        nodes=[make_node("a", cpu=2), make_node("b", cpu=2)],
    )
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    assert deleted(world.engine.schedule(T0)) == ["new"]


def test_then_the_first_node_by_name() -> None:
    world = preemptor_world(
        running("y", "b", 2, priority=3),
        running("x", "a", 2, priority=3),
        nodes=[make_node("b", cpu=2), make_node("a", cpu=2)],
    )
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    assert deleted(world.engine.schedule(T0)) == ["x"]


def test_unresolvable_nodes_are_no_candidates() -> None:
    taint = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    world = preemptor_world(
        running("on-tainted", "t", 2, priority=0),
        running("on-open", "o", 2, priority=5),
        nodes=[make_node("t", cpu=2, taints=taint), make_node("o", cpu=2)],
    )
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    assert deleted(world.engine.schedule(T0)) == ["on-open"]


def test_equal_or_higher_priority_pods_are_never_victims() -> None:
    world = preemptor_world(running("same", "a", 2, priority=10), nodes=[make_node("a", cpu=2)])
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    actions = world.engine.schedule(T0)
    assert deleted(actions) == []
    [event] = of(actions, EmitEvent)
    assert event.message.endswith(
        "no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_a_node_that_stays_too_small_reports_the_filter_reason() -> None:
    world = preemptor_world(
        running("low", "a", 1, priority=1),
        running("high", "a", 2, priority=50),
        nodes=[make_node("a", cpu=3)],
    )
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    actions = world.engine.schedule(T0)
    assert deleted(actions) == []
    [event] = of(actions, EmitEvent)
    assert event.message == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: "
        "1 Insufficient cpu."
    )


def test_preemption_policy_never_is_respected() -> None:
    world = preemptor_world(running("low", "a", 2, priority=1), nodes=[make_node("a", cpu=2)])
    world.add_pods(make_pod("polite", cpu=2, priority=10, preemptionPolicy="Never"))
    actions = world.engine.schedule(T0)
    assert deleted(actions) == []
    [event] = of(actions, EmitEvent)
    assert event.message == (
        f"0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        f"preemption: {NOT_ELIGIBLE_NEVER}"
    )


def test_the_preemptor_binds_on_its_nominated_node_once_the_victims_are_gone() -> None:
    world = preemptor_world(
        running("low", "a", 2, priority=1),
        running("other", "b", 1, priority=50),
        nodes=[make_node("a", cpu=2), make_node("b", cpu=2)],
    )
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    actions = world.step()  # deletes low; the World applies deletes and status patches
    assert deleted(actions) == ["low"]
    assert world.engine.nominated() == {"default/vip": "a"}
    assert world.pods["default/vip"].status is not None
    assert world.pods["default/vip"].status.nominated_node_name == "a"
    # The deletion moved vip out of unschedulable; it waits out its backoff then binds.
    world.now = T0 + timedelta(seconds=1)
    assert binds(world.step()) == {"default/vip": "a"}


@pytest.mark.parametrize("pop_from_backoff", [True, False], ids=["kube-1.33", "kube-1.32"])
def test_the_nominated_room_is_not_taken_by_a_lower_priority_pod(pop_from_backoff: bool) -> None:
    world = preemptor_world(
        running("low", "a", 2, priority=1),
        nodes=[make_node("a", cpu=2)],
        pop_from_backoff=pop_from_backoff,
    )
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    world.engine.schedule(T0)
    # The victim is gone before the preemptor's backoff ends; a lower-priority pod arrives.
    world.delete("default/low")
    world.add_pods(make_pod("sneaky", cpu=1, priority=5))
    out = world.engine.schedule(T0 + timedelta(seconds=0.5))
    assert "default/sneaky" in [a.key for a in of(out, PatchPodStatus)]
    if pop_from_backoff:  # nothing else to try: the preemptor is taken from backoff early
        assert binds(out) == {"default/vip": "a"}
        return
    assert binds(out) == {}
    out = world.engine.schedule(T0 + timedelta(seconds=1))
    assert binds(out) == {"default/vip": "a"}


def test_no_second_preemption_while_victims_terminate_on_the_nominated_node() -> None:
    world = preemptor_world(
        running("low1", "a", 1, priority=1),
        running("low2", "b", 2, priority=1),
        nodes=[make_node("a", cpu=2), make_node("b", cpu=2)],
    )
    world.add_pods(running("mid", "a", 1, priority=20))
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    first = world.engine.schedule(T0)
    assert deleted(first) == ["low2"]  # b: one victim of priority 1
    # The victim is slow to go; vip is retried (flush) and must not preempt again.
    vip = with_status(world.pods["default/vip"], nominatedNodeName="b")
    world.add_pods(vip)
    world.engine.queue.move_unschedulable(T0 + timedelta(minutes=1))
    again = world.engine.schedule(T0 + timedelta(minutes=1))
    assert deleted(again) == []
    [event] = of(again, EmitEvent)
    assert event.message.endswith(
        f"no new claims to deallocate, preemption: {NOT_ELIGIBLE_TERMINATING}"
    )


def test_no_second_preemption_before_the_nomination_comes_back_through_the_watch() -> None:
    # The scheduler's own nomination counts at once: retried before its status patch (and the
    # victim's deletion) come back, the preemptor used to preempt again on another node.
    world = preemptor_world(
        running("low1", "a", 2, priority=1),
        running("low2", "b", 2, priority=1),
        nodes=[make_node("a", cpu=2), make_node("b", cpu=2)],
    )
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    first = world.engine.schedule(T0)
    assert deleted(first) == ["low1"]
    assert world.pods["default/vip"].status is None or not (
        world.pods["default/vip"].status.nominated_node_name
    )  # nothing applied: the pod the engine holds has no nominatedNodeName yet
    world.engine.queue.move_unschedulable(T0 + timedelta(minutes=1))
    again = world.engine.schedule(T0 + timedelta(minutes=1))
    assert deleted(again) == []
    [event] = of(again, EmitEvent)
    assert event.message.endswith(
        f"no new claims to deallocate, preemption: {NOT_ELIGIBLE_TERMINATING}"
    )


def test_lower_priority_nominations_on_the_chosen_node_are_cleared() -> None:
    world = preemptor_world(running("low", "a", 2, priority=1), nodes=[make_node("a", cpu=4)])
    world.add_pods(with_status(make_pod("mid", cpu=2, priority=5), nominatedNodeName="a"))
    world.engine.queue.remove("default/mid")
    world.add_pods(make_pod("vip", cpu=4, priority=10))
    actions = world.engine.schedule(T0)
    clears = [a for a in of(actions, PatchPodStatus) if a.key == "default/mid"]
    assert [c.nominated_node for c in clears] == [""]
    assert world.engine.nominated() == {"default/vip": "a"}


# --- hooks -----------------------------------------------------------------------------------


@dataclass
class Quota(EventHandler, PreemptionHooks):
    """A stand-in for capacity scheduling's hooks."""

    name: str = "Quota"
    blocked: bool = False
    protected: set[str] = field(default_factory=set)
    must_free: str | None = None

    def on_event(self, event: Any, cluster: Any) -> bool:
        return False

    def preemption_eligible(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> str | None:
        return "quota says no" if self.blocked else None

    def preemption_victims(
        self, cycle: PodCycle, pod: PodInfo, node: str, pods: Sequence[PodInfo]
    ) -> Sequence[PodInfo] | None:
        return [p for p in pods if p.name not in self.protected]

    def preemption_fits(
        self, cycle: PodCycle, pod: PodInfo, node: str, victims: Sequence[PodInfo]
    ) -> bool:
        return self.must_free is None or any(v.name == self.must_free for v in victims)


def with_hooks(quota: Quota) -> Profile:
    base = default_profile()
    return Profile(
        scheduler_name=base.scheduler_name,
        queue_sort=base.queue_sort,
        pre_filters=base.pre_filters,
        filters=base.filters,
        post_filters=base.post_filters,
        scores=base.scores,
        handlers=(quota,),  # anywhere in the profile: found through CycleHost.plugins()
    )


def test_hooks_restrict_eligibility() -> None:
    world = World.of(with_hooks(Quota(blocked=True)))
    world.add_nodes(make_node("a", cpu=2))
    world.add_pods(running("low", "a", 2, priority=1), make_pod("vip", cpu=2, priority=10))
    actions = world.engine.schedule(T0)
    assert deleted(actions) == []
    assert of(actions, EmitEvent)[0].message.endswith(
        "no new claims to deallocate, preemption: quota says no"
    )


def test_hooks_restrict_victims() -> None:
    world = World.of(with_hooks(Quota(protected={"low-a"})))
    world.add_nodes(make_node("a", cpu=2), make_node("b", cpu=2))
    world.add_pods(
        running("low-a", "a", 2, priority=1),
        running("mid-b", "b", 2, priority=5),
        make_pod("vip", cpu=2, priority=10),
    )
    assert deleted(world.engine.schedule(T0)) == ["mid-b"]


def test_fits_hook_keeps_more_victims_than_the_filters_need() -> None:
    quota = Quota(must_free="v3")
    world = World.of(with_hooks(quota))
    world.add_nodes(make_node("a", cpu=4))
    world.add_pods(
        running("v1", "a", 1, priority=1),
        running("v2", "a", 1, priority=2),
        running("v3", "a", 2, priority=3),
        make_pod("vip", cpu=2, priority=10),
    )
    # Filters alone would delete v1 and v2; the hook wants v3 gone (its quota must shrink):
    # v3 stays a victim, and then v2 and v1 are reprieved.
    assert deleted(world.engine.schedule(T0)) == ["v3"]


# --- pieces ----------------------------------------------------------------------------------


def test_num_candidates_follows_kube() -> None:
    assert num_candidates(5000, 10, 100) == 500
    assert num_candidates(300, 10, 100) == 100
    assert num_candidates(50, 10, 100) == 50


def test_pick_candidate_orders_as_kube() -> None:
    def info(name: str, priority: int) -> PodInfo:
        return PodInfo.of(make_pod(name, priority=priority, node="x"))

    a = Candidate("a", 0, (info("a1", 5),))
    b = Candidate("b", 1, (info("b1", 3), info("b2", 3)))
    c = Candidate("c", 2, (info("c1", 3), info("c2", 1)))
    best = pick_candidate([a, b, c], T0)
    assert best is not None and best.node == "c"
    assert pick_candidate([], T0) is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"minCandidateNodesPercentage": 101},
            "minCandidateNodesPercentage: Invalid value: 101: not in valid range",
        ),
        (
            {"minCandidateNodesAbsolute": -1},
            "minCandidateNodesAbsolute: Invalid value: -1: not in valid range",
        ),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "cannot be zero at the same time",
        ),
        ({"bogus": 1}, "bogus: unknown field"),
    ],
)
def test_default_preemption_args_are_checked(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DefaultPreemption.from_args(args)


def test_default_preemption_args_reach_the_preemptor() -> None:
    plugin = DefaultPreemption.from_args(
        {"minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": 5}
    )
    assert isinstance(plugin.preemptor, Preemptor)
    assert (plugin.preemptor.min_candidate_percentage, plugin.preemptor.min_candidate_absolute) == (
        20,
        5,
    )

"""Gangs through the whole engine (Coscheduling on by default): all-or-nothing under a burst,
a Permit timeout that frees the reserved nodes, gang preemption (and none when it cannot
help), and a restart in the middle of a gang's binding burst."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import datetime
from typing import Any

from apis.core import Pod
from apis.scheduling import PodGroup
from placement.pods.framework.events import (
    Action,
    BindPod,
    DeletePod,
    EmitEvent,
    NodeEvent,
    ObjectEvent,
    PatchPodStatus,
    PodEvent,
)
from placement.pods.scheduler.engine import Engine
from plugins.pods.coscheduling.coscheduling import POD_GROUP_LABEL
from tests.placement.pods.test_engine import (
    T0,
    World,
    bound,
    default_profile,
    make_node,
    make_pod,
    of,
    seconds,
)


def pod_group(
    name: str,
    min_member: int,
    *,
    namespace: str = "default",
    created: datetime = T0,
    timeout: int | None = None,
    min_resources: dict[str, Any] | None = None,
) -> PodGroup:
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    if min_resources is not None:
        spec["minResources"] = min_resources
    return PodGroup.model_validate(
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-pg-{namespace}-{name}",
                "creationTimestamp": created.isoformat(),
            },
            "spec": spec,
        }
    )


def member(name: str, group: str, cpu: str | int = 1, **options: Any) -> Pod:
    pod = make_pod(name, cpu, **options)
    meta = pod.metadata.model_copy(
        update={"labels": {**(pod.metadata.labels or {}), POD_GROUP_LABEL: group}}
    )
    return pod.model_copy(update={"metadata": meta})


def gang(group: str, size: int, cpu: str | int = 1, **options: Any) -> list[Pod]:
    return [member(f"{group}-m{i:02d}", group, cpu, **options) for i in range(size)]


def add_group(world: World, group: PodGroup) -> list[Action]:
    return world.engine.handle(ObjectEvent("Added", group), world.now)


def bound_per_group(world: World) -> Counter[str]:
    counts: Counter[str] = Counter()
    for pod in world.pods.values():
        if pod.spec.node_name:
            label = (pod.metadata.labels or {}).get(POD_GROUP_LABEL)
            if label:
                counts[label] += 1
    return counts


def assert_whole(world: World, sizes: dict[str, int]) -> None:
    for group, count in bound_per_group(world).items():
        assert count in (0, sizes[group]), f"partial gang {group}: {count}/{sizes[group]} bound"


def test_twenty_gangs_on_room_for_twelve_bind_twelve_whole_never_partial() -> None:
    world = World.of()
    world.add_nodes(*(make_node(f"n{i:02d}", cpu=10, pods=110) for i in range(12)))
    sizes = {}
    for g in range(20):
        name = f"g{g:02d}"
        sizes[name] = 10
        add_group(world, pod_group(name, 10, created=T0 + seconds(g)))
        world.add_pods(*gang(name, 10))
    for _ in range(40):
        world.step(limit=7)  # cycles cut anywhere: still no partial gang after any call
        assert_whole(world, sizes)
        world.now += seconds(1)
    counts = bound_per_group(world)
    assert sorted(counts) == [f"g{g:02d}" for g in range(12)]  # the oldest groups first
    assert all(count == 10 for count in counts.values())
    # The 8 others are pending with a condition that says why.
    pending = [p for p in world.pods.values() if not p.spec.node_name]
    assert len(pending) == 80
    for pod in pending:
        conditions = (pod.status.conditions if pod.status else None) or []
        assert conditions and conditions[0]["reason"] == "Unschedulable"
        assert (
            "Insufficient cpu" in conditions[0]["message"]
            or "PodGroup" in (conditions[0]["message"])
        )
    assert world.engine.waiting() == {}

    # Deleting 4 bound gangs lets 4 pending gangs run, whole.
    for g in range(4):
        for key in [k for k in world.pods if k.startswith(f"default/g{g:02d}-")]:
            world.delete(key)
    for _ in range(40):
        world.step(limit=9)
        assert_whole(world, sizes)
        world.now += seconds(1)
    counts = bound_per_group(world)
    assert len(counts) == 12 and all(count == 10 for count in counts.values())
    assert set(counts) == {f"g{g:02d}" for g in range(4, 16)}


def test_permit_timeout_rejects_the_waiting_members_and_frees_their_nodes() -> None:
    profile = default_profile(pluginArgs={"Coscheduling": {"podGroupRejectPercentage": 50}})
    world = World.of(profile)
    world.add_nodes(make_node("n1", cpu=4), make_node("n2", cpu=2))
    add_group(world, pod_group("job", 4, timeout=30))
    members = gang("job", 3, cpu=2)
    # The fourth member fits nowhere (its selector matches no node): 3/4 is within 50 %.
    members.append(member("job-m03", "job", 1, nodeSelector={"zone": "nowhere"}))
    world.add_pods(*members)
    actions = world.step()
    assert of(actions, BindPod) == []
    assert len(world.engine.waiting()) == 3
    # The reserved room is held: a plain pod needing 2 cpu finds none.
    world.add_pods(make_pod("plain", 2))
    world.step()
    assert "default/plain" not in {k for k, p in world.pods.items() if p.spec.node_name}
    assert world.engine.next_wake() == T0 + seconds(30)
    world.now = T0 + seconds(30)
    actions = world.step()
    assert world.engine.waiting() == {}
    messages = [a.message for a in of(actions, EmitEvent) if a.reason == "FailedScheduling"]
    assert any(
        "rejected due to timeout after waiting 30s at plugin Coscheduling" in m for m in messages
    )
    assert any("rejection in Unreserve" in m for m in messages)
    # The freed room goes to the plain pod; no member of the gang is bound.
    assert world.pods["default/plain"].spec.node_name in ("n1", "n2")
    assert bound_per_group(world)["job"] == 0


def test_a_high_priority_gang_preempts_lower_priority_pods_on_several_nodes() -> None:
    world = World.of()
    world.add_nodes(*(make_node(f"n{i}", cpu=4) for i in range(4)))
    low = [make_pod(f"low{i}", 2, priority=0, node=f"n{i // 2}") for i in range(8)]
    world.add_pods(*low)
    add_group(world, pod_group("hi", 4))
    world.add_pods(*gang("hi", 4, cpu=2, priority=100))
    actions = world.step()
    deleted = [a.key for a in of(actions, DeletePod)]
    assert len(deleted) == 4  # the fewest pods that make every member fit
    nominated = {a.key: a.nominated_node for a in of(actions, PatchPodStatus) if a.nominated_node}
    assert set(nominated) == {f"default/hi-m{i:02d}" for i in range(4)}
    for _ in range(10):
        world.now += seconds(2)
        world.step()
    assert bound_per_group(world)["hi"] == 4
    assert sum(1 for p in world.pods.values() if (p.metadata.name or "").startswith("low")) == 4


def test_gang_preemption_takes_a_victim_gang_whole_or_not_at_all() -> None:
    world = World.of()
    world.add_nodes(*(make_node(f"n{i}", cpu=4) for i in range(4)))
    # A running gang of priority 10 (quorum 4) and plain pods of priority 20 fill the cluster.
    add_group(world, pod_group("low", 4))
    runners = [member(f"low-m{i:02d}", "low", 2, priority=10, node=f"n{i}") for i in range(4)]
    plain = [make_pod(f"plain{i}", 2, priority=20, node=f"n{i}") for i in range(4)]
    world.add_pods(*runners, *plain)
    add_group(world, pod_group("hi", 2))
    world.add_pods(*gang("hi", 2, cpu=2, priority=100))
    actions = world.step()
    deleted = sorted(a.key for a in of(actions, DeletePod))
    # Two members of "low" are the cheapest victims, but taking them breaks its quorum: the
    # whole gang goes, never half of it.
    assert deleted == [f"default/low-m{i:02d}" for i in range(4)]
    for _ in range(10):
        world.now += seconds(2)
        world.step()
    assert bound_per_group(world) == Counter({"hi": 2})


def test_gang_preemption_rejects_a_lower_gang_waiting_at_permit_instead_of_deleting_it() -> None:
    profile = default_profile(pluginArgs={"Coscheduling": {"podGroupRejectPercentage": 50}})
    world = World.of(profile)
    world.add_nodes(make_node("n0", cpu=2), make_node("n1", cpu=2))
    add_group(world, pod_group("low", 3, timeout=600))
    low = gang("low", 2, cpu=2, priority=0)
    low.append(member("low-m02", "low", 1, priority=0, nodeSelector={"zone": "nowhere"}))
    world.add_pods(*low)
    world.step()
    assert sorted(world.engine.waiting()) == ["default/low-m00", "default/low-m01"]
    add_group(world, pod_group("hi", 2))
    world.add_pods(*gang("hi", 2, cpu=2, priority=100))
    actions = world.step()
    assert of(actions, DeletePod) == []  # held at Permit, not running: released, not deleted
    failed = {
        a.regarding[1]: a.message for a in of(actions, EmitEvent) if a.reason == "FailedScheduling"
    }
    # kube-scheduler v1.36: the preempted member backs off with an error; Coscheduling's
    # Unreserve rejects its sibling, which kube wraps as a one-node FitError.
    assert failed["default/low-m00"] == "waiting on permit for pod: preempted"
    assert failed["default/low-m01"] == (
        "0/1 nodes are available: 1 rejection in Unreserve: member low-m00 of PodGroup "
        "default/low lost its node."
    )
    # The preemptor failed a moment ago: it is tried again once its backoff (1 s) is over.
    world.now += seconds(1)
    world.step()
    assert world.engine.waiting() == {}
    assert bound_per_group(world) == Counter({"hi": 2})
    assert set(world.pods) >= {"default/low-m00", "default/low-m01", "default/low-m02"}


def test_no_gang_preemption_when_the_victims_leave_min_resources_short() -> None:
    world = World.of()
    world.add_nodes(*(make_node(f"n{i}", cpu=4) for i in range(2)))
    world.add_pods(*(make_pod(f"low{i}", 4, priority=0, node=f"n{i}") for i in range(2)))
    add_group(world, pod_group("greedy", 2, min_resources={"cpu": "6"}))
    world.add_pods(*gang("greedy", 2, cpu=1, priority=100))
    actions = world.step()
    assert of(actions, DeletePod) == []
    messages = [a.message for a in of(actions, EmitEvent) if a.reason == "FailedScheduling"]
    assert any("leave its minResources short (resource gap: cpu: 2)" in m for m in messages)


def test_no_preemption_when_the_gang_cannot_fit_anyway() -> None:
    world = World.of()
    world.add_nodes(*(make_node(f"n{i}", cpu=4) for i in range(4)))
    world.add_pods(*(make_pod(f"low{i}", 4, priority=0, node=f"n{i}") for i in range(4)))
    add_group(world, pod_group("big", 5))
    world.add_pods(*gang("big", 5, cpu=4, priority=100))
    actions = world.step()
    assert of(actions, DeletePod) == []
    messages = [a.message for a in of(actions, EmitEvent) if a.reason == "FailedScheduling"]
    assert any("cannot fit even if every lower-priority pod is preempted" in m for m in messages)
    assert sum(1 for p in world.pods.values() if p.spec.node_name) == 4


def test_default_preemption_never_breaks_a_gang_below_its_quorum_for_one_pod() -> None:
    world = World.of()
    world.add_nodes(make_node("n0", cpu=4))
    add_group(world, pod_group("low", 2))
    world.add_pods(*(member(f"low-m{i}", "low", 2, priority=0, node="n0") for i in range(2)))
    # The plain pod needs 2 cpu: one member would do, but its gang goes whole (2 victims).
    world.add_pods(make_pod("urgent", 2, priority=100))
    actions = world.step()
    assert sorted(a.key for a in of(actions, DeletePod)) == ["default/low-m0", "default/low-m1"]


def test_a_restart_in_the_middle_of_a_binding_burst_completes_the_gang() -> None:
    world = World.of()
    nodes = [make_node(f"n{i}", cpu=2) for i in range(4)]
    world.add_nodes(*nodes)
    group = pod_group("job", 4)
    add_group(world, group)
    members = gang("job", 4, cpu=2)
    world.add_pods(*members)
    actions = world.engine.schedule(world.now)
    binds = of(actions, BindPod)
    assert len(binds) == 4
    # Only two bindings land before the scheduler dies.
    landed = {b.key: b.node for b in binds[:2]}
    fresh = Engine(default_profile())
    events: list[Any] = [NodeEvent("Added", n) for n in nodes]
    events.append(ObjectEvent("Added", group))
    for pod in members:
        key = f"default/{pod.metadata.name}"
        events.append(PodEvent("Added", bound(pod, landed[key]) if key in landed else pod))
    fresh.handle_many(events, world.now)
    actions = fresh.schedule(world.now + seconds(1))
    rebinds = of(actions, BindPod)
    assert sorted(b.key for b in rebinds) == sorted(
        f"default/{p.metadata.name}" for p in members if f"default/{p.metadata.name}" not in landed
    )
    assert {b.node for b in rebinds}.isdisjoint(landed.values())


def test_a_gang_without_its_podgroup_is_rejected_at_prefilter_and_runs_once_it_exists() -> None:
    world = World.of()
    world.add_nodes(make_node("n1", cpu=8))
    world.add_pods(*gang("later", 2))
    actions = world.step()
    assert of(actions, BindPod) == []
    messages = [a.message for a in of(actions, EmitEvent) if a.reason == "FailedScheduling"]
    assert messages and all(
        'PodGroup "later" not found in namespace "default"' in m for m in messages
    )
    add_group(world, pod_group("later", 2))
    world.now += seconds(5)
    world.step()
    assert bound_per_group(world)["later"] == 2


def test_first_member_at_permit_activates_its_siblings_but_not_out_of_backoff() -> None:
    # Coscheduling not enabled at PreEnqueue (as scheduler-plugins has it): a member alone is
    # tried and refused rather than held.
    world = World.of(replace(default_profile(), pre_enqueues=()))
    world.add_nodes(make_node("n1", cpu=4))
    add_group(world, pod_group("pair", 2))
    first, second = gang("pair", 2)
    world.add_pods(second)
    world.step()  # alone: not enough siblings, unschedulable
    assert world.engine.queue_sizes()["unschedulable"] == 1
    world.add_pods(first)  # a new sibling moves it, to backoff (it failed a moment ago)
    assert world.engine.queue_sizes()["backoff"] == 1
    world.step()  # the first member waits at Permit; its sibling waits out its backoff (1 s)
    assert sorted(world.engine.waiting()) == ["default/pair-m00"]
    assert world.engine.queue_sizes()["backoff"] == 1
    world.now += seconds(1)
    world.step()  # the sibling's backoff is over: it completes the quorum, both bind
    assert bound_per_group(world)["pair"] == 2


def test_pods_without_groups_schedule_as_before() -> None:
    world = World.of()
    world.add_nodes(make_node("n1", cpu=2))
    world.add_pods(make_pod("a", 1, priority=1), make_pod("b", 1, priority=5))
    actions = world.engine.schedule(world.now)
    assert [b.key for b in of(actions, BindPod)] == ["default/b", "default/a"]

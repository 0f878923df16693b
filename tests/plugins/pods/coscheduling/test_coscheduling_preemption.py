"""Issue 27, item 3: gang preemption picks the fewest victims, as kube's selectVictimsOnNode does
for one pod, for the whole gang: every lower-priority pod removed, the whole gang must fit, then
the victims are reprieved from the most important down while the whole gang still fits."""

from __future__ import annotations

from collections import Counter

from placement.pods.framework.events import DeletePod, PatchPodStatus
from tests.placement.pods.test_engine import World, make_node, make_pod, of, seconds
from tests.placement.pods.test_gang import add_group, bound_per_group, gang, pod_group


def settle(world: World) -> None:
    for _ in range(10):
        world.now += seconds(2)
        world.step()


def test_two_victims_where_two_suffice_not_three() -> None:
    """n0 holds two 2-cpu pods, n1 and n2 one 4-cpu pod each (all priority 0); a gang of three
    2-cpu members (priority 100). Member by member, the cheapest victim for each is one pod
    (a0, then a1, then b), 3 in all; emptying n1 takes two members at once: 2 victims."""
    world = World.of()
    world.add_nodes(*(make_node(f"n{i}", cpu=4) for i in range(3)))
    world.add_pods(
        make_pod("a0", 2, priority=0, node="n0"),
        make_pod("a1", 2, priority=0, node="n0"),
        make_pod("b", 4, priority=0, node="n1"),
        make_pod("c", 4, priority=0, node="n2"),
    )
    add_group(world, pod_group("hi", 3))
    world.add_pods(*gang("hi", 3, cpu=2, priority=100))
    actions = world.step()
    deleted = sorted(a.key for a in of(actions, DeletePod))
    assert len(deleted) == 2
    assert "default/b" in deleted or "default/c" in deleted
    nominated = {a.key: a.nominated_node for a in of(actions, PatchPodStatus) if a.nominated_node}
    assert set(nominated) == {f"default/hi-m{i:02d}" for i in range(3)}
    settle(world)
    assert bound_per_group(world) == Counter({"hi": 3})
    assert len([k for k in world.pods if not k.startswith("default/hi-")]) == 2


def test_the_more_important_victims_are_reprieved_first() -> None:
    """Every victim set costs priority 5 at least; one pod of priority 5 (on n1) beats a pod of
    priority 0 plus one of priority 5 (both on n0)."""
    world = World.of()
    world.add_nodes(make_node("n0", cpu=4), make_node("n1", cpu=4))
    world.add_pods(
        make_pod("low", 2, priority=0, node="n0"),
        make_pod("mid", 2, priority=5, node="n0"),
        make_pod("wide", 4, priority=5, node="n1"),
    )
    add_group(world, pod_group("hi", 2))
    world.add_pods(*gang("hi", 2, cpu=2, priority=100))
    actions = world.step()
    assert [a.key for a in of(actions, DeletePod)] == ["default/wide"]
    settle(world)
    assert bound_per_group(world) == Counter({"hi": 2})


def test_the_lowest_priorities_go_before_fewer_pods() -> None:
    """kube's order of candidates: the highest victim priority first, the count last. Two pods
    of priority 0 on n0 go rather than one of priority 5 on n1."""
    world = World.of()
    world.add_nodes(make_node("n0", cpu=4), make_node("n1", cpu=4))
    world.add_pods(
        make_pod("low0", 2, priority=0, node="n0"),
        make_pod("low1", 2, priority=0, node="n0"),
        make_pod("wide", 4, priority=5, node="n1"),
    )
    add_group(world, pod_group("hi", 2))
    world.add_pods(*gang("hi", 2, cpu=2, priority=100))
    actions = world.step()
    assert sorted(a.key for a in of(actions, DeletePod)) == ["default/low0", "default/low1"]
    settle(world)
    assert bound_per_group(world) == Counter({"hi": 2})


def test_members_that_fit_as_things_are_take_no_victim() -> None:
    """One member fits on the free node; only the other needs room: one victim."""
    world = World.of()
    world.add_nodes(make_node("n0", cpu=2), make_node("n1", cpu=4))
    world.add_pods(
        make_pod("x", 2, priority=0, node="n1"),
        make_pod("y", 2, priority=0, node="n1"),
    )
    add_group(world, pod_group("hi", 2))
    world.add_pods(*gang("hi", 2, cpu=2, priority=100))
    actions = world.step()
    assert len(of(actions, DeletePod)) == 1
    settle(world)
    assert bound_per_group(world) == Counter({"hi": 2})

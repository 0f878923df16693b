"""Which events bring a gang's rejected members back (kube's requeueing by plugin), and the
member refused during its group's backoff, which comes back when that backoff ends."""

from __future__ import annotations

from apis.scheduling import PodGroup
from placement.pods.framework.events import ObjectEvent
from tests.placement.pods.test_engine import T0, World, default_profile, make_node, seconds
from tests.placement.pods.test_gang import add_group, bound_per_group, gang, pod_group


def stuck_pair(**args: int) -> World:
    """A gang of two members of 2 cpu on a node of 2 cpu: one waits at Permit, the other finds
    no room, PostFilter rejects the gang; every member is unschedulable."""
    world = World.of(default_profile(pluginArgs={"Coscheduling": dict(args)}))
    world.add_nodes(make_node("n1", cpu=2))
    add_group(world, pod_group("pair", 2))
    world.add_pods(*gang("pair", 2, cpu=2))
    world.step()
    assert world.engine.queue_sizes()["unschedulable"] == 2
    assert bound_per_group(world)["pair"] == 0
    return world


def rejected_by(world: World) -> dict[str, set[str]]:
    return {q.info.name: set(q.rejected_by) for q in world.engine.queue.pods("unschedulable")}


def test_freed_room_moves_the_member_that_found_no_room_not_those_coscheduling_rejected() -> None:
    world = stuck_pair()
    assert rejected_by(world) == {"pair-m00": {"Coscheduling"}, "pair-m01": {"NodeResourcesFit"}}
    world.now += seconds(5)
    world.add_nodes(make_node("n2", cpu=2))  # a node: room for the whole gang now
    assert rejected_by(world) == {"pair-m00": {"Coscheduling"}}
    world.step()  # m01 waits at Permit and asks for its sibling, which completes the gang
    assert bound_per_group(world)["pair"] == 2


def test_a_podgroup_status_update_moves_nobody_a_spec_change_does() -> None:
    world = stuck_pair()
    group = pod_group("pair", 2)
    status = group.model_copy(
        update={
            "status": PodGroup.model_validate(
                {"metadata": {"name": "x"}, "status": {"phase": "Scheduling"}}
            ).status
        }
    )
    world.engine.handle(ObjectEvent("Modified", status), world.now)
    assert "pair-m00" in rejected_by(world)
    world.engine.handle(ObjectEvent("Modified", pod_group("pair", 1)), world.now)
    assert "pair-m00" not in rejected_by(world)


def test_a_member_refused_in_its_groups_backoff_comes_back_when_the_backoff_ends() -> None:
    world = stuck_pair(podGroupBackoffSeconds=5)  # the gang failed at T0: backoff until T0 + 5 s
    world.now += seconds(1)
    world.add_nodes(make_node("n2", cpu=2))  # m01 moves, and is refused: "failed recently"
    world.step()
    assert bound_per_group(world)["pair"] == 0
    held = world.engine.queue.get("default/pair-m01")
    assert held is not None and held.where == "backoff" and held.not_before == T0 + seconds(5)
    assert world.engine.next_wake() == T0 + seconds(5)  # no event needed to come back
    world.now = T0 + seconds(4.5)
    world.step()  # not before, even with nothing else to try
    assert bound_per_group(world)["pair"] == 0
    world.now = T0 + seconds(5)
    world.step()  # m01 waits at Permit and asks for m00: the gang binds
    assert bound_per_group(world)["pair"] == 2

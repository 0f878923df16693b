"""PreEnqueue through the whole engine: Coscheduling holds a gang's members out of the queue
until the group has `minMember` pods (no attempt, no event), a hold that lasts 5 s is reported
once (`NotReadyForScheduling`), and the gate follows deletions, PodGroup changes and the
configuration that leaves it out."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from placement.pods.backend.gating import NOT_READY_FOR_SCHEDULING, REPORT_DELAY, Gatekeeper
from placement.pods.config.profiles import ConfigError
from placement.pods.config.scheduler_config import build_profiles, load_config
from placement.pods.framework.events import Action, BindPod, EmitEvent, ObjectEvent, PatchPodStatus
from placement.pods.framework.interface import ClusterView, PodInfo, PreEnqueue, Profile
from placement.pods.framework.pod_reports import scheduled_condition
from plugins.pods import DEFAULT_PLUGINS, DEFAULT_SCORE_WEIGHTS, POD_PLUGINS
from tests.placement.pods.test_engine import (
    T0,
    World,
    default_profile,
    make_node,
    make_pod,
    of,
    seconds,
    with_status,
)
from tests.placement.pods.test_gang import add_group, bound_per_group, gang, member, pod_group

REGISTRY = POD_PLUGINS
HELD = 'waiting for minMember pods of PodGroup "{}" to appear in scheduling queue (minMember: {})'


def gated(world: World) -> int:
    return world.engine.queue_sizes()["gated"]


def not_ready(actions: list[Action]) -> list[Action]:
    """The condition patches and Events of PreEnqueue's report."""
    patches = [
        a
        for a in of(actions, PatchPodStatus)
        if a.condition and a.condition.get("reason") == NOT_READY_FOR_SCHEDULING
    ]
    events = [a for a in of(actions, EmitEvent) if a.reason == NOT_READY_FOR_SCHEDULING]
    return [*patches, *events]


def gang_world(min_member: int = 3, cpu: int = 8) -> World:
    world = World.of()
    world.add_nodes(make_node("n1", cpu=cpu))
    add_group(world, pod_group("train", min_member))
    return world


def test_members_are_held_without_an_attempt_until_the_group_has_min_member_pods() -> None:
    world = gang_world()
    first, second, third = gang("train", 3)
    world.add_pods(first, second)
    actions = world.step()
    assert gated(world) == 2
    assert world.engine.stats.cycles == 0  # never tried
    assert not of(actions, EmitEvent) and not of(actions, PatchPodStatus)
    assert world.engine.simulation_report() == [
        "gang default/train: phase Pending, minMember 3: 0 bound, 0 binding, "
        "0 waiting at Permit, 2 pending; 2 of its 3 pods exist"
    ]
    world.add_pods(third)  # the quorum exists: all three enter the queue and bind together
    assert gated(world) == 0
    assert world.engine.queue_sizes()["active"] == 3
    world.run(until=T0 + seconds(1))
    assert bound_per_group(world)["train"] == 3
    assert world.engine.stats.attempts["unschedulable"] == 0
    assert not [a for a in world.log if isinstance(a, EmitEvent) and a.type == "Warning"]


def test_a_hold_of_five_seconds_is_reported_once_and_a_shorter_one_never() -> None:
    world = gang_world()
    first, second, third = gang("train", 3)
    world.add_pods(first)
    world.now += REPORT_DELAY - timedelta(milliseconds=1)
    assert not_ready(world.step()) == []  # not yet
    world.add_pods(second)  # same message: the delay is not restarted
    world.now = T0 + REPORT_DELAY
    actions = world.step()
    patches = of(actions, PatchPodStatus)
    assert [p.key for p in patches] == ["default/train-m00"]
    message = HELD.format("train", 3)
    assert patches[0].condition == scheduled_condition(NOT_READY_FOR_SCHEDULING, message)
    events = [a for a in of(actions, EmitEvent) if a.reason == NOT_READY_FOR_SCHEDULING]
    assert [(e.regarding[1], e.type, e.message) for e in events] == [
        ("default/train-m00", "Normal", message)
    ]
    world.now += REPORT_DELAY  # the second member's turn; the first is not reported again
    assert [a.key for a in of(world.step(), PatchPodStatus)] == ["default/train-m01"]
    world.now += 10 * REPORT_DELAY
    assert not_ready(world.step()) == []
    world.add_pods(third)
    world.run(until=world.now + seconds(1))
    assert bound_per_group(world)["train"] == 3


def test_a_gang_completed_within_the_delay_writes_nothing() -> None:
    world = gang_world()
    members = gang("train", 3)
    world.add_pods(*members[:2])
    world.now += seconds(4)
    world.add_pods(members[2])
    world.run(until=world.now + 3 * REPORT_DELAY)
    assert bound_per_group(world)["train"] == 3
    assert not_ready(world.log) == []
    assert world.engine.next_wake() is None  # no report timer left behind


def test_a_pod_that_says_so_already_is_not_written_again() -> None:
    # After a restart: the member carries the condition an earlier run wrote.
    world = gang_world()
    condition = scheduled_condition(NOT_READY_FOR_SCHEDULING, HELD.format("train", 3))
    world.add_pods(with_status(member("train-m00", "train"), conditions=[condition]))
    world.now += REPORT_DELAY
    assert not_ready(world.step()) == []


def test_a_held_member_deleted_is_forgotten_and_never_reported() -> None:
    world = gang_world()
    world.add_pods(*gang("train", 2))
    assert gated(world) == 2
    world.delete("default/train-m00")
    assert gated(world) == 1
    world.now += REPORT_DELAY
    assert [a.key for a in of(world.step(), PatchPodStatus)] == ["default/train-m01"]


def test_a_smaller_min_member_lets_the_held_members_in() -> None:
    world = gang_world(min_member=4)
    world.add_pods(*gang("train", 2))
    assert gated(world) == 2
    smaller = pod_group("train", 2)
    world.engine.handle(ObjectEvent("Modified", smaller), world.now)
    assert gated(world) == 0
    world.run(until=world.now + seconds(1))
    assert bound_per_group(world)["train"] == 2


def test_a_deleted_pod_group_lets_its_held_members_in_to_be_refused_by_name() -> None:
    world = gang_world(min_member=3)
    world.add_pods(*gang("train", 2))
    assert gated(world) == 2
    world.engine.handle(ObjectEvent("Deleted", pod_group("train", 3)), world.now)
    assert gated(world) == 0
    actions = world.step()
    messages = [a.message for a in of(actions, EmitEvent) if a.reason == "FailedScheduling"]
    assert len(messages) == 2
    assert all('PodGroup "train" not found in namespace "default"' in m for m in messages)


def test_a_larger_min_member_holds_the_new_member_with_the_new_message() -> None:
    world = gang_world(min_member=2)
    world.add_pods(member("train-m00", "train"))
    larger = pod_group("train", 3)
    world.engine.handle(ObjectEvent("Modified", larger), world.now)
    world.add_pods(member("train-m01", "train"))
    assert gated(world) == 2  # the first re-checked against 3, the second held on arrival
    world.now += REPORT_DELAY
    messages = {a.key: a.condition for a in of(world.step(), PatchPodStatus)}
    assert messages == {
        key: scheduled_condition(NOT_READY_FOR_SCHEDULING, HELD.format("train", 3))
        for key in ("default/train-m00", "default/train-m01")
    }


def test_a_message_that_comes_back_to_the_one_written_is_not_written_again() -> None:
    world = gang_world(min_member=3)
    world.add_pods(member("train-m00", "train"))
    world.now += REPORT_DELAY
    # Written, but its echo not seen yet (the patch is not applied here).
    assert len(of(world.engine.schedule(world.now), PatchPodStatus)) == 1
    for size in (4, 3):  # minMember changed and changed back within the delay
        world.engine.handle(ObjectEvent("Modified", pod_group("train", size)), world.now)
    world.now += REPORT_DELAY
    assert not_ready(world.step()) == []


def test_pods_without_a_group_or_whose_group_is_unseen_go_straight_to_the_queue() -> None:
    world = World.of()
    world.add_nodes(make_node("n1", cpu=8))
    world.add_pods(make_pod("plain"), *gang("later", 2))
    assert gated(world) == 0
    actions = world.step()
    assert list(of(actions, BindPod)) == [
        a for a in of(actions, BindPod) if a.key == "default/plain"
    ]
    assert len(of(actions, BindPod)) == 1  # the gang's members were tried: no PodGroup yet
    assert world.engine.stats.attempts["unschedulable"] == 2


def test_without_coscheduling_at_pre_enqueue_a_lone_member_is_tried_and_refused() -> None:
    world = World.of(replace(default_profile(), pre_enqueues=()))
    world.add_nodes(make_node("n1", cpu=8))
    add_group(world, pod_group("train", 3))
    world.add_pods(member("train-m00", "train"))
    actions = world.step()
    assert gated(world) == 0
    [event] = [a for a in of(actions, EmitEvent) if a.reason == "FailedScheduling"]
    assert "cannot find enough sibling pods" in event.message


def test_a_simulation_runs_until_held_members_are_reported() -> None:
    from placement.pods.scheduler.engine import Engine
    from placement.pods.simulator.simulation import simulate
    from tests.placement.pods.test_engine import SCHEDULER

    objects = [make_node("n1", cpu=8), pod_group("train", 3), *gang("train", 2)]
    result = simulate(objects, Engine(default_profile()), T0, scheduler_name=SCHEDULER)
    assert result.finished == T0 + REPORT_DELAY and not result.timed_out
    message = HELD.format("train", 3)
    for pod in result.pods:
        [condition] = pod.status.conditions or []  # type: ignore[union-attr]
        assert (condition["reason"], condition["message"]) == (NOT_READY_FOR_SCHEDULING, message)
    about_pods = [e for e in result.events if e.involved_object.kind == "Pod"]  # type: ignore[union-attr]
    assert [(e.involved_object.name, e.type, e.reason) for e in about_pods] == [  # type: ignore[union-attr]
        ("train-m00", "Normal", NOT_READY_FOR_SCHEDULING),
        ("train-m01", "Normal", NOT_READY_FOR_SCHEDULING),
    ]


class _Holds(PreEnqueue):
    name = "Holds"

    def __init__(self, message: str | None = "no", fail: bool = False) -> None:
        self.message = message
        self.fail = fail

    def pre_enqueue(self, pod: PodInfo, cluster: ClusterView) -> str | None:
        if self.fail:
            raise RuntimeError("plugin bug")
        return self.message


def _keeper(*plugins: PreEnqueue) -> Gatekeeper:
    return Gatekeeper(plugins, World.of().engine.cluster)


def test_the_first_plugin_that_holds_names_the_message_and_a_raising_one_lets_pods_pass() -> None:
    info = PodInfo.of(make_pod("p"))
    keeper = _keeper(_Holds(None), _Holds("first"), _Holds("second"))
    assert keeper.admit(info, T0, None) is None
    [hold] = keeper.held()
    assert (hold.plugin, hold.message, hold.entered) == ("Holds", "first", T0)
    broken = _keeper(_Holds(fail=True))
    assert broken.admit(info, T0 + seconds(1), T0) == T0
    assert broken.errors == 1 and len(broken) == 0


def test_a_release_keeps_the_first_sight_and_rechecks_only_the_named_pods() -> None:
    plugin = _Holds("wait")
    keeper = _keeper(plugin)
    a, b = PodInfo.of(make_pod("a")), PodInfo.of(make_pod("b"))
    keeper.admit(a, T0, None)
    keeper.admit(b, T0 + seconds(1), None)
    plugin.message = None
    assert keeper.release("Other", None, T0 + seconds(2)) == []
    released = keeper.release("Holds", {"default/b"}, T0 + seconds(2))
    assert [(i.key, at) for i, at in released] == [("default/b", T0 + seconds(1))]
    assert "default/a" in keeper and "default/b" not in keeper
    updated = PodInfo.of(make_pod("a", cpu=2))  # its pod changed: checked again on the spot
    assert keeper.admit(updated, T0 + seconds(2), None) == T0
    keeper.admit(a, T0 + seconds(2), None)  # a newer hold ...
    plugin.message = "wait"
    keeper.admit(a, T0 + seconds(3), None)
    plugin.message = None
    assert [(i.key, at) for i, at in keeper.release("Holds", None, T0 + seconds(3))] == [
        ("default/a", T0 + seconds(3))
    ]
    assert keeper.next_report() is None


def _kube_profile(plugins: dict[str, Any]) -> Profile:
    document = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "s", "plugins": plugins}],
    }
    [profile] = build_profiles(
        load_config(document, REGISTRY),
        REGISTRY,
        defaults=DEFAULT_PLUGINS,
        default_weights=DEFAULT_SCORE_WEIGHTS,
    )
    return profile


def test_coscheduling_sits_at_pre_enqueue_by_default_and_a_configuration_can_take_it_off() -> None:
    # DynamicResources' PreEnqueue (a pod's claims exist) first, as kube orders its defaults.
    assert [p.name for p in default_profile().pre_enqueues] == ["DynamicResources", "Coscheduling"]
    assert [p.name for p in _kube_profile({}).pre_enqueues] == ["DynamicResources", "Coscheduling"]
    off = _kube_profile({"preEnqueue": {"disabled": [{"name": "Coscheduling"}]}})
    assert [p.name for p in off.pre_enqueues] == ["DynamicResources"]
    assert [p.name for p in off.pre_filters if p.name == "Coscheduling"] == ["Coscheduling"]


def test_a_plugin_enabled_at_pre_enqueue_must_implement_it() -> None:
    with pytest.raises(ConfigError, match='"NodeName" does not implement PreEnqueue'):
        _kube_profile({"preEnqueue": {"enabled": [{"name": "NodeName"}]}})

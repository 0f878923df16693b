"""Several profiles in one scheduler (`EngineSet`): each profile schedules the pods naming it,
a binding one profile decided takes room for the others at once (as kube's shared cache), and
gives it back when the binding fails."""

from __future__ import annotations

from typing import Any

import yaml

from placement.pods.config.scheduler_config import build_profiles, load_config
from placement.pods.framework.events import Action, BindPod, BindResult, NodeEvent, PodEvent, WakeAt
from placement.pods.scheduler.engine import Engine
from placement.pods.scheduler.engines import EngineSet, engine_for
from plugins.pods import DEFAULT_PLUGINS, DEFAULT_SCORE_WEIGHTS, POD_PLUGINS
from tests.placement.pods.test_engine import T0, make_node, make_pod, seconds

TWO = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: spread
- schedulerName: packer
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""


def engines(text: str = TWO) -> Any:
    config = load_config(yaml.safe_load(text), POD_PLUGINS)
    profiles = build_profiles(
        config, POD_PLUGINS, defaults=DEFAULT_PLUGINS, default_weights=DEFAULT_SCORE_WEIGHTS
    )
    return engine_for(profiles, **config.engine_options())


def binds(actions: list[Action]) -> dict[str, str]:
    return {a.key: a.node for a in actions if isinstance(a, BindPod)}


def test_one_profile_is_a_plain_engine() -> None:
    one = engines(TWO.split("- schedulerName: packer")[0])
    assert isinstance(one, Engine)


def test_each_profile_schedules_the_pods_naming_it_with_its_own_plugins() -> None:
    both = engines()
    assert isinstance(both, EngineSet)
    for event in (
        NodeEvent("Added", make_node("big", cpu=8)),
        NodeEvent("Added", make_node("small", cpu=4)),
        NodeEvent("Added", make_node("busy", cpu=4)),
        PodEvent("Added", make_pod("resident", cpu=3, node="busy", scheduler="other")),
        PodEvent("Added", make_pod("a", cpu=1, scheduler="spread")),
        PodEvent("Added", make_pod("b", cpu=1, scheduler="packer")),
        PodEvent("Added", make_pod("c", cpu=1, scheduler="default-scheduler")),
    ):
        both.handle(event, T0)
    placed = binds(both.schedule(T0))
    # LeastAllocated spreads to the emptiest node, MostAllocated packs onto the busiest;
    # nobody takes the default scheduler's pod.
    assert placed == {"default/a": "big", "default/b": "busy"}
    assert both.stats.cycles == 2
    assert sum(both.queue_sizes().values()) == 0


def test_a_binding_decided_by_one_profile_takes_room_for_the_others_until_it_fails() -> None:
    both = engines()
    both.handle(NodeEvent("Added", make_node("only", cpu=2)), T0)
    both.handle(PodEvent("Added", make_pod("a", cpu=2, scheduler="spread")), T0)
    both.handle(PodEvent("Added", make_pod("b", cpu=2, scheduler="packer")), T0)
    first = binds(both.schedule(T0, limit=1))
    assert first == {"default/a": "only"}
    # Not bound yet (no informer update), but the packer already counts it on the node.
    assert binds(both.schedule(T0)) == {}
    # The binding fails, and its pod is held back (a scheduling gate): the room is free again
    # for the packer's pod.
    both.handle(BindResult("default/a", "uid-a", "only", ok=False, message="boom"), T0)
    gated = make_pod("a", cpu=2, scheduler="spread", schedulingGates=[{"name": "hold"}])
    both.handle(PodEvent("Modified", gated), T0)
    later = T0 + seconds(30)
    assert binds(both.schedule(later)) == {"default/b": "only"}


def test_a_confirmed_binding_is_counted_once_by_the_others() -> None:
    both = engines()
    both.handle(NodeEvent("Added", make_node("only", cpu=3)), T0)
    both.handle(PodEvent("Added", make_pod("a", cpu=2, scheduler="spread")), T0)
    assert binds(both.schedule(T0)) == {"default/a": "only"}
    both.handle(BindResult("default/a", "uid-a", "only", ok=True), T0)
    both.handle(PodEvent("Modified", make_pod("a", cpu=2, scheduler="spread", node="only")), T0)
    both.handle(PodEvent("Added", make_pod("b", cpu=1, scheduler="packer")), T0)
    assert binds(both.schedule(T0)) == {"default/b": "only"}


def test_turns_rotate_so_a_busy_profile_does_not_starve_another() -> None:
    both = engines()
    both.handle(NodeEvent("Added", make_node("n", cpu=64)), T0)
    for i in range(4):
        both.handle(PodEvent("Added", make_pod(f"s{i}", cpu=1, scheduler="spread")), T0)
    both.handle(PodEvent("Added", make_pod("p0", cpu=1, scheduler="packer")), T0)
    first = binds(both.schedule(T0, limit=2))
    second = binds(both.schedule(T0, limit=2))
    assert len(first) == len(second) == 2
    assert "default/p0" in {**first, **second}


def test_one_wake_for_all_the_engines() -> None:
    both = engines()
    both.handle(NodeEvent("Added", make_node("n", cpu=1)), T0)
    both.handle(PodEvent("Added", make_pod("a", cpu=2, scheduler="spread")), T0)
    both.handle(PodEvent("Added", make_pod("b", cpu=2, scheduler="packer")), T0)
    actions = both.schedule(T0)
    wakes = [a for a in actions if isinstance(a, WakeAt)]
    assert len(wakes) == 1
    assert wakes[0].at == both.next_wake()

"""Gangs whose members claim devices (Coscheduling with DynamicResources): a PodGroup of three
members, each claiming one GPU through a ResourceClaimTemplate, binds whole or not at all.

With three GPUs free every member binds, each on its own device. With two, none binds: while
members wait at Permit their devices are only in flight (nothing is written: DynamicResources'
PreBind, which asks for the claims' allocation, runs after Permit), and when the wait ends
(rejected at once, or timed out) Unreserve lets the devices go: no claim stays allocated and no
device in flight. A GPU freed later lets the whole gang in. The engine runs in
`scheduler simulate`'s world, watched by `gang_harness.Watched` (never partly bound)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from placement.pods.framework.events import Action, AllocateClaims
from placement.pods.scheduler.engine import Engine
from tests.plugins.pods.dra_world import (
    CLASS_AND_TEMPLATE,
    allocated,
    arrive,
    bound,
    delete,
    dra_plugin,
    dra_profile,
    gpu_pod,
    node,
    objects,
    run,
    world_of,
)
from tests.plugins.pods.gang_harness import Watched

MEMBERS = ("w-0", "w-1", "w-2")
GROUP = """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: train, namespace: default}
spec: {minMember: 3, scheduleTimeoutSeconds: 10}
"""


class Recorded(Watched):
    """Also keeps every action the engine asked for."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.actions: list[Action] = []

    def schedule(self, now: datetime, limit: int | None = None) -> list[Action]:
        actions = super().schedule(now, limit)
        self.actions.extend(actions)
        return actions


def _gang() -> list[str]:
    return [gpu_pod(name, i, group="train") for i, name in enumerate(MEMBERS)]


def _engine(**coscheduling: Any) -> tuple[Engine, Recorded]:
    engine = Engine(dra_profile(pluginArgs={"Coscheduling": coscheduling}))
    return engine, Recorded(engine)


def test_with_three_gpus_free_the_whole_gang_binds_each_on_its_own_device() -> None:
    engine, watched = _engine()
    world = world_of(
        watched, objects(CLASS_AND_TEMPLATE, GROUP, node("n1", 2), node("n2", 1), *_gang())
    )
    run(world, 30)
    assert sorted(bound(world)) == list(MEMBERS)
    devices = allocated(world)
    assert len(devices) == 3 and len(set(devices.values())) == 3  # no device twice
    for name, where in bound(world).items():
        [(pool, _)] = [d for k, d in devices.items() if k.startswith(f"default/{name}-gpu-")]
        assert pool == where  # each device on its member's node
    assert watched.partly_bound == []
    assert dict(dra_plugin(engine).in_flight()) == {}


@pytest.mark.parametrize(
    "args",
    [{}, {"podGroupRejectPercentage": 100}],
    ids=["rejected-at-postfilter", "permit-timeout"],
)
def test_with_one_gpu_short_no_member_binds_and_nothing_stays_allocated_or_in_flight(
    args: dict[str, Any],
) -> None:
    engine, watched = _engine(**args)
    world = world_of(
        watched, objects(CLASS_AND_TEMPLATE, GROUP, node("n1", 1), node("n2", 1), *_gang())
    )
    run(world, 60)
    assert bound(world) == {}
    assert allocated(world) == {}
    plugin = dra_plugin(engine)
    assert dict(plugin.in_flight()) == {} and plugin.in_use() == frozenset()
    assert not [a for a in watched.actions if isinstance(a, AllocateClaims)]
    assert watched.partly_bound == []


def test_members_waiting_at_permit_hold_devices_in_flight_and_write_nothing() -> None:
    engine, watched = _engine(podGroupRejectPercentage=100)
    world = world_of(
        watched, objects(CLASS_AND_TEMPLATE, GROUP, node("n1", 1), node("n2", 1), *_gang())
    )
    run(world, 5)  # inside the 10 s Permit wait
    plugin = dra_plugin(engine)
    waiting = sorted(p.name for p in engine.binding.waiting_pods())
    assert len(waiting) == 2
    assert sorted(plugin.in_flight().values()) == [f"default/{n}" for n in waiting]
    assert len(plugin.in_use()) == 2  # both GPUs, so the third member finds none
    assert allocated(world) == {}
    assert not [a for a in watched.actions if isinstance(a, AllocateClaims)]
    run(world, 10)  # the wait times out: Unreserve lets both devices go
    assert dict(plugin.in_flight()) == {} and plugin.in_use() == frozenset()
    assert bound(world) == {} and allocated(world) == {}


def test_a_gpu_freed_later_lets_the_whole_gang_in() -> None:
    engine, watched = _engine()
    plugin = dra_plugin(engine)
    world = world_of(
        watched,
        objects(CLASS_AND_TEMPLATE, GROUP, node("n1", 2), node("n2", 1), gpu_pod("solo")),
    )
    run(world, 5)
    assert bound(world) == {"solo": "n1"}
    for doc in _gang():
        arrive(world, doc)
    run(world, 60)
    assert bound(world) == {"solo": "n1"}  # two GPUs free for three members: none binds
    assert [k.split("-gpu-")[0] for k in allocated(world)] == ["default/solo"]
    delete(world, "solo")  # its claim is deallocated and deleted: a claim event
    run(world, 60)
    assert sorted(bound(world)) == list(MEMBERS)
    devices = allocated(world)
    assert len(devices) == 3 and len(set(devices.values())) == 3
    assert watched.partly_bound == []
    assert dict(plugin.in_flight()) == {}  # each allocation seen written

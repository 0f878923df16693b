"""Which cluster events bring back a pod the default plugins rejected (kube-scheduler's
EventsToRegister, on the engine's two cluster-wide events): freed room does not move a pod
that only node affinity, taints, a cordon or a node name kept out, a new node does; a pod
rejected for room on some nodes and for affinity on others is moved by either."""

from __future__ import annotations

from typing import Any

import pytest

from apis.core import Node
from placement.pods.framework.events import ASSIGNED_POD_DELETE, NODE_ADD_OR_UPDATE, deaf_plugins
from tests.placement.pods.test_engine import (
    World,
    binds,
    default_profile,
    make_node,
    make_pod,
    seconds,
)

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def rejected_by(world: World) -> dict[str, set[str]]:
    return {q.info.name: set(q.rejected_by) for q in world.engine.queue.pods("unschedulable")}


def stuck(pod_spec: dict[str, Any], *nodes: Node) -> World:
    """A full node `busy` (one pod of 4 cpu, `filler`) and `nodes`; `p` unschedulable."""
    world = World.of()
    world.add_nodes(make_node("busy", cpu=4, labels={"disk": "ssd"}), *nodes)
    world.add_pods(make_pod("filler", 4, node="busy"))
    world.add_pods(make_pod("p", 1, **pod_spec))
    world.step()
    assert "p" in rejected_by(world)
    return world


CASES: dict[str, tuple[dict[str, Any], Node]] = {
    "NodeAffinity": ({"nodeSelector": {"disk": "ssd"}}, make_node("hdd", labels={"disk": "hdd"})),
    "TaintToleration": ({}, make_node("tainted", taints=[TAINT])),
    "NodeUnschedulable": ({}, make_node("cordoned", unschedulable=True)),
}


@pytest.mark.parametrize("plugin", sorted(CASES))
def test_freed_room_leaves_a_pod_kept_out_by_node_rules_alone_and_a_new_node_moves_it(
    plugin: str,
) -> None:
    spec, node = CASES[plugin]
    world = stuck(spec, node)
    assert rejected_by(world)["p"] == {plugin, "NodeResourcesFit"}  # busy is full
    world.delete("default/filler")  # room on busy: Fit listens, so p is moved
    assert "p" not in rejected_by(world)
    world.now += seconds(20)
    world.step()
    assert world.node_of("default/p") == "busy"

    world = World.of()
    world.add_nodes(node)
    world.add_pods(make_pod("filler", 1, node=node.metadata.name), make_pod("p", 1, **spec))
    world.step()
    assert rejected_by(world) == {"p": {plugin}}
    world.delete("default/filler")  # room freed, but not where the node rules let p go
    assert rejected_by(world) == {"p": {plugin}}
    world.now += seconds(20)
    world.add_nodes(make_node("fits", labels={"disk": "ssd"}))
    assert rejected_by(world) == {}
    actions = world.step()
    assert binds(actions) == {"default/p": "fits"}


def test_the_default_plugins_listen_as_kube_registers_them() -> None:
    deaf = deaf_plugins(World.of(default_profile()).engine.plugins)
    assert deaf[ASSIGNED_POD_DELETE] >= {
        "NodeAffinity",
        "NodeName",
        "NodeUnschedulable",
        "TaintToleration",
        "VolumeZone",
        "Coscheduling",
    }
    assert deaf[ASSIGNED_POD_DELETE].isdisjoint(
        {"NodeResourcesFit", "NodePorts", "InterPodAffinity", "PodTopologySpread"}
    )
    assert deaf[NODE_ADD_OR_UPDATE] >= {
        "VolumeRestrictions",
        "CapacityScheduling",
        "Coscheduling",
    }
    assert deaf[NODE_ADD_OR_UPDATE].isdisjoint(
        {"NodeResourcesFit", "NodeAffinity", "TaintToleration", "NodeUnschedulable"}
    )

"""InterPodAffinity and preemption: the filter answers on hypothetical snapshots (victims gone,
nominated pods added), so preemption removes an anti-affine lower-priority pod through the real
engine, and never tries for an affinity it cannot create."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import numpy as np

from placement.pods.cluster.overlay import PodOverlay
from placement.pods.framework.events import DeletePod
from tests.placement.pods.test_engine import T0, of
from tests.plugins.pods.affinity_harness import (
    apod,
    cycle_of,
    hnode,
    info_of,
    placed,
    plugin_of,
    term,
    world,
)

DB = {"app": "db"}


def message_of(w: object, key: str) -> str:
    pod = w.pods[key]  # type: ignore[attr-defined]
    [cond] = [c for c in pod.status.conditions or [] if c["type"] == "PodScheduled"]
    return str(cond["message"])


def test_preemption_evicts_the_lower_priority_anti_affine_pod() -> None:
    w = world(hnode("n1"), hnode("n2"))
    w.add_pods(
        apod("squatter", DB, node="n1", priority=1, scheduler="other"),
        apod("vip", DB, node="n2", priority=1000, scheduler="other"),
    )
    w.add_pods(apod("db-new", DB, priority=50, anti=[term(DB)]))
    actions = w.run(until=T0 + timedelta(seconds=5))
    assert [a.key for a in of(actions, DeletePod)] == ["default/squatter"]
    assert placed(w) == {"vip": "n2", "db-new": "n1"}


def test_preemption_evicts_a_pod_whose_own_anti_affinity_rejects_the_incoming_one() -> None:
    w = world(hnode("n1"))
    w.add_pods(apod("hermit", {}, node="n1", priority=1, anti=[term({"app": "web"})]))
    w.add_pods(apod("web", {"app": "web"}, priority=50))
    actions = w.run(until=T0 + timedelta(seconds=5))
    assert [a.key for a in of(actions, DeletePod)] == ["default/hermit"]
    assert placed(w) == {"web": "n1"}


def test_a_higher_priority_conflict_is_not_preempted() -> None:
    w = world(hnode("n1"))
    w.add_pods(apod("vip", DB, node="n1", priority=1000, scheduler="other"))
    w.add_pods(apod("db-new", DB, priority=50, anti=[term(DB)]))
    actions = w.run()
    assert of(actions, DeletePod) == []
    assert placed(w)["db-new"] is None


def test_missing_affinity_is_unresolvable_and_preemption_does_not_try() -> None:
    w = world(hnode("n1"), hnode("n2"))
    w.add_pods(apod("low", {"app": "low"}, node="n1", priority=1, scheduler="other"))
    w.add_pods(apod("web", {"app": "web"}, priority=50, required=[term({"app": "cache"})]))
    actions = w.run()
    assert of(actions, DeletePod) == []
    assert message_of(w, "default/web") == (
        "0/2 nodes are available: 2 node(s) didn't match pod affinity rules. "
        "no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_filter_honours_each_kind_of_overlay() -> None:
    w = world(hnode("n1"), hnode("n2"), hnode("n3"))
    w.add_pods(
        apod("a", DB, node="n1", priority=1, scheduler="other"),
        apod("b", DB, node="n2", priority=9, scheduler="other"),
    )
    plugin, cycle = plugin_of(w), cycle_of(w)
    incoming = info_of(apod("db-new", DB, priority=5, anti=[term(DB)]))
    nodes = w.engine.nodes()
    every = np.ones(nodes.size, dtype=bool)
    plugin.pre_filter(cycle, incoming, nodes)

    def fitting(overlay: PodOverlay) -> list[str]:
        trial = dataclasses.replace(nodes, overlay=overlay)
        mask = plugin.filter(cycle, incoming, trial, every).mask
        return [nodes.names[i] for i in np.flatnonzero(mask)]

    assert fitting(PodOverlay()) == ["n3"]
    assert fitting(PodOverlay(removed=frozenset({"default/a"}))) == ["n1", "n3"]
    below = np.full(nodes.size, 5, dtype=np.int64)  # every pod below priority 5 gone
    assert fitting(PodOverlay(below=below)) == ["n1", "n3"]
    nominated = info_of(apod("nominee", DB, priority=7))
    row = nodes.row_of("n3")
    assert row is not None
    assert fitting(PodOverlay(added=((row, nominated),))) == []
    # A nominated pod whose own anti-affinity rejects the incoming pod counts too.
    hermit = info_of(apod("hermit", {}, priority=7, anti=[term(DB)]))
    assert fitting(PodOverlay(removed=frozenset({"default/a"}), added=((row, hermit),))) == ["n1"]
    # And the real snapshot still answers as before (the fast path was not spoiled).
    assert fitting(PodOverlay()) == ["n3"]


def test_each_candidate_node_sees_only_its_own_victims_gone() -> None:
    """Zone anti-affinity: two low-priority conflicting pods on two nodes of one zone. Evicting
    either alone leaves the other in the zone, so no node can help (kube checks each node on
    its own); a check of all candidate nodes at once would see both gone and evict one for
    nothing."""
    zone = "topology.kubernetes.io/zone"
    w = world(hnode("a", zone="z1"), hnode("b", zone="z1"), hnode("c", zone="z2"))
    w.add_pods(
        apod("db-a", DB, node="a", priority=1, scheduler="other"),
        apod("db-b", DB, node="b", priority=1, scheduler="other"),
        apod("db-c", DB, node="c", priority=1000, scheduler="other"),
    )
    w.add_pods(apod("db-new", DB, priority=50, anti=[term(DB, zone)]))
    actions = w.run(until=T0 + timedelta(seconds=5))
    assert of(actions, DeletePod) == []
    assert placed(w)["db-new"] is None
    assert "No preemption victims found for incoming pod" in message_of(w, "default/db-new")

"""PodTopologySpread through the real Engine on an injected clock: pods placed one after the
other keep their zones within maxSkew, preemption picks the victims whose departure brings the
skew down, and an invalid constraint is reported without stopping the engine."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apis.core import Pod
from placement.pods.framework.events import DeletePod, PatchPodStatus
from tests.placement.pods.test_engine import T0, World, binds, make_node, make_pod, of

ZONE = "topology.kubernetes.io/zone"
SPREAD = {
    "maxSkew": 1,
    "topologyKey": ZONE,
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "web"}},
}


def web(name: str, *, skew: int = 1, node: str | None = None, **kw: Any) -> Pod:
    pod = make_pod(
        name,
        node=node,
        scheduler="other" if node else "ocm-pod-scheduler",
        topologySpreadConstraints=[{**SPREAD, "maxSkew": skew}],
        **kw,
    )
    meta = pod.metadata.model_copy(update={"labels": {"app": "web"}})
    return pod.model_copy(update={"metadata": meta})


def zoned(name: str, zone: str, cpu: int = 4) -> Any:
    return make_node(name, cpu=cpu, labels={ZONE: zone, "kubernetes.io/hostname": name})


def per_zone(world: World, zones: dict[str, str]) -> Counter[str]:
    found: Counter[str] = Counter(dict.fromkeys(zones.values(), 0))
    for pod in world.pods.values():
        where = pod.spec.node_name
        if where and (pod.metadata.labels or {}).get("app") == "web":
            found[zones[where]] += 1
    return found


@settings(max_examples=40, deadline=None)
@given(
    layout=st.lists(st.integers(1, 3), min_size=2, max_size=4),
    count=st.integers(1, 14),
    skew=st.integers(1, 2),
)
def test_pods_placed_one_by_one_never_exceed_max_skew(
    layout: list[int], count: int, skew: int
) -> None:
    zones = {f"z{z}-n{i}": f"z{z}" for z, nodes in enumerate(layout) for i in range(nodes)}
    world = World.of()
    world.add_nodes(*(zoned(name, zone, cpu=64) for name, zone in zones.items()))
    for i in range(count):
        world.add_pods(web(f"w{i}", skew=skew))
        world.run()
        assert world.node_of(f"default/w{i}") is not None  # the least loaded zone always fits
        counts = per_zone(world, zones)
        assert max(counts.values()) - min(counts.values()) <= skew, counts


@settings(max_examples=40, deadline=None)
@given(
    nodes=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3)), min_size=2, max_size=6),
    pods=st.lists(st.booleans(), min_size=1, max_size=16),
    skew=st.integers(1, 2),
)
def test_with_full_nodes_and_other_pods_the_skew_still_holds(
    nodes: list[tuple[int, int]], pods: list[bool], skew: int
) -> None:
    """Nodes of 1 to 3 cpus (a full zone holds the others back, so some pods wait) and pods
    that do not match the selector (they count nowhere) mixed in: after every step the
    matching pods' zones stay within maxSkew, and a pod that waits says why."""
    zones = {f"n{i}": f"z{zone}" for i, (zone, _) in enumerate(nodes)}
    world = World.of()
    world.add_nodes(*(zoned(f"n{i}", f"z{z}", cpu=cpu) for i, (z, cpu) in enumerate(nodes)))
    for i, matching in enumerate(pods):
        made = web(f"w{i}", skew=skew)
        if not matching:
            meta = made.metadata.model_copy(update={"labels": {"app": "other"}})
            made = made.model_copy(update={"metadata": meta})
        world.add_pods(made)
        actions = world.run()
        counts = per_zone(world, zones)
        assert max(counts.values()) - min(counts.values()) <= skew, counts
        if world.node_of(f"default/w{i}") is None:
            [patch] = [a for a in of(actions, PatchPodStatus) if a.key == f"default/w{i}"]
            assert patch.condition is not None
            assert patch.condition["message"].startswith(f"0/{len(nodes)} nodes are available:")


def test_preemption_evicts_the_pod_whose_departure_brings_the_skew_down() -> None:
    # Zone a: node a (room) holds two low-priority web pods; zone b: node b is full with an
    # important pod that is not web. Zone a has 2, zone b 0: a third web pod would make the
    # skew 3 > maxSkew 2. Without one web pod zone a is at 1 + 1 - 0 = 2: one victim is enough,
    # and the reprieve keeps the more important of the two.
    world = World.of()
    world.add_nodes(zoned("a", "a", cpu=4), zoned("b", "b", cpu=1))
    world.add_pods(
        web("low", skew=2, node="a", priority=1),
        web("lower", skew=2, node="a", priority=0),
        make_pod("vip", node="b", priority=100, scheduler="other"),
    )
    world.add_pods(web("new", skew=2, priority=10))
    actions = world.step()
    assert sorted(a.key for a in of(actions, DeletePod)) == ["default/lower"]
    patches = [a for a in of(actions, PatchPodStatus) if a.key == "default/new"]
    assert patches[-1].nominated_node == "a"
    later = world.run(until=T0 + timedelta(minutes=1))
    assert binds(later) == {"default/new": "a"}


def test_a_pod_spread_beyond_its_skew_waits_and_says_why() -> None:
    world = World.of()
    world.add_nodes(zoned("a", "a"), zoned("b", "b", cpu=1), make_node("c", cpu=4))
    world.add_pods(
        web("w1", node="a", priority=100),
        web("w2", node="a", priority=100),
        make_pod("full", node="b", priority=100, scheduler="other"),
    )
    world.add_pods(web("new"))
    actions = world.step()
    [patch] = [a for a in of(actions, PatchPodStatus) if a.key == "default/new"]
    assert patch.condition is not None
    assert patch.condition["message"] == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match pod topology "
        "spread constraints, 1 node(s) didn't match pod topology spread constraints (missing "
        "required label). no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful "
        "for scheduling, 2 No preemption victims found for incoming pod."
    )


def test_an_invalid_constraint_is_reported_and_other_pods_still_schedule() -> None:
    world = World.of()
    world.add_nodes(zoned("a", "a"))
    bad = make_pod("bad", topologySpreadConstraints=[{**SPREAD, "maxSkew": 0}])
    world.add_pods(bad, make_pod("good"))
    actions = world.run()
    assert binds(actions) == {"default/good": "a"}
    [patch] = [a for a in of(actions, PatchPodStatus) if a.key == "default/bad"]
    assert patch.condition is not None
    assert patch.condition["message"].startswith(
        "0/1 nodes are available: spec.topologySpreadConstraints[0].maxSkew: must be greater "
        "than zero (got 0)."
    )


def test_a_matching_pod_bound_elsewhere_retries_the_pods_spread_held_back() -> None:
    # Zone a holds two web pods, zone b's only node is full: zone b's 0 is the minimum and a
    # third web pod fits nowhere. Two web pods another scheduler binds in zone b raise the
    # minimum to 2: the waiting pod is retried at once (not after the 5-minute flush).
    world = World.of()
    world.add_nodes(zoned("a", "a"), zoned("b", "b", cpu=1))
    world.add_pods(
        web("w1", node="a", priority=100),
        web("w2", node="a", priority=100),
        make_pod("full", node="b", priority=100, scheduler="other"),
    )
    world.add_pods(web("new"))
    assert binds(world.run(until=T0 + timedelta(seconds=30))) == {}
    world.now = T0 + timedelta(seconds=30)
    world.add_pods(web("x1", node="b", cpu=0), web("x2", node="b", cpu=0))
    later = world.run(until=T0 + timedelta(seconds=60))
    assert binds(later) == {"default/new": "a"}

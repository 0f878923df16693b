"""Properties of the engine over random clusters (hypothesis): a bound pod fits its node, no node
is ever over-committed, and the outcome does not depend on the order nodes arrive in."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apis.core import Node, Pod
from placement.pods.cluster.requests import pod_requests
from placement.pods.framework.events import Action, BindPod
from tests.placement.pods.test_engine import T0, World, make_node, make_pod

FAST = settings(max_examples=60, deadline=None)

node_specs = st.lists(
    st.tuples(st.integers(0, 8), st.sampled_from(["1Gi", "4Gi", "8Gi"]), st.integers(1, 6)),
    min_size=1,
    max_size=6,
)
pod_specs = st.lists(
    st.tuples(
        st.sampled_from([0, 1, 2]),  # cpu (0: no cpu request)
        st.sampled_from([None, "512Mi", "2Gi"]),
        st.sampled_from([0, 5, 10]),  # priority
        st.booleans(),  # already running (on a node chosen by index)
        st.integers(0, 5),
    ),
    min_size=1,
    max_size=16,
)


def build(nodes: Sequence[Any], pods: Sequence[Any]) -> tuple[list[Node], list[Pod]]:
    node_objs = [
        make_node(f"n{i}", cpu=cpu, memory=mem, pods=slots)
        for i, (cpu, mem, slots) in enumerate(nodes)
    ]
    pod_objs: list[Pod] = []
    used: dict[str, int] = {}
    count: dict[str, int] = {}
    for i, (cpu, mem, priority, placed, where) in enumerate(pods):
        node = node_objs[where % len(node_objs)]
        name = node.metadata.name or ""
        capacity, _, slots = nodes[where % len(nodes)]
        fits = cpu <= capacity - used.get(name, 0) and count.get(name, 0) < slots
        if placed and fits:  # the cluster starts within its limits (memory: none requested)
            used[name] = used.get(name, 0) + cpu
            count[name] = count.get(name, 0) + 1
            pod_objs.append(make_pod(f"r{i}", cpu=cpu, memory=None, priority=priority, node=name))
        else:
            pod_objs.append(make_pod(f"p{i}", cpu=cpu, memory=mem, priority=priority))
    return node_objs, pod_objs


def settle(world: World, rounds: int = 40) -> list[Action]:
    """Schedule, apply, and jump to the next timer until nothing is left to do."""
    out: list[Action] = []
    for _ in range(rounds):
        actions = world.step()
        out += actions
        check_no_overcommit(world)
        wake = world.engine.next_wake()
        if any(isinstance(a, BindPod) for a in actions):
            continue
        if wake is None:
            break
        world.now = max(world.now, wake)
    return out


def check_no_overcommit(world: World) -> None:
    """Every node's bound pods (as the world sees them) fit its allocatable, and the engine's
    counted requests equal them."""
    nodes = world.engine.nodes()
    for row, name in enumerate(nodes.names):
        total: dict[str, int] = {}
        for pod in world.pods.values():
            if pod.spec.node_name == name:
                for resource, value in pod_requests(pod).items():
                    total[resource] = total.get(resource, 0) + value
        for resource, value in total.items():
            col = nodes.column_of(resource)
            assert col is not None
            assert value <= nodes.allocatable[row, col], (name, resource, value)


@FAST
@given(node_specs, pod_specs)
def test_bound_pods_fit_and_nodes_are_never_overcommitted(
    nodes: Sequence[Any], pods: Sequence[Any]
) -> None:
    node_objs, pod_objs = build(nodes, pods)
    world = World.of()
    world.add_nodes(*node_objs)
    world.add_pods(*pod_objs)
    settle(world)
    check_no_overcommit(world)
    # The engine counts exactly the bound pods (no assumption left over).
    assert world.engine.assumed() == {}
    counted = {p.key for n in world.engine.nodes().names for p in world.engine.cluster.pods_on(n)}
    assert counted == {k for k, p in world.pods.items() if p.spec.node_name}


@FAST
@given(node_specs, pod_specs, st.randoms(use_true_random=False))
def test_the_outcome_does_not_depend_on_the_order_of_nodes(
    nodes: Sequence[Any], pods: Sequence[Any], random: Any
) -> None:
    node_objs, pod_objs = build(nodes, pods)
    outcomes = []
    for attempt in range(2):
        order = list(node_objs)
        if attempt:
            random.shuffle(order)
        world = World.of()
        world.add_nodes(*order)
        world.add_pods(*pod_objs)
        actions = settle(world)
        placed = {k: p.spec.node_name for k, p in world.pods.items()}
        outcomes.append((placed, [a for a in actions if not isinstance(a, BindPod)]))
    assert outcomes[0][0] == outcomes[1][0]
    assert outcomes[0][1] == outcomes[1][1]


@FAST
@given(node_specs, pod_specs)
def test_same_events_same_actions(nodes: Sequence[Any], pods: Sequence[Any]) -> None:
    node_objs, pod_objs = build(nodes, pods)
    runs = []
    for _ in range(2):
        world = World.of()
        world.add_nodes(*node_objs)
        world.add_pods(*pod_objs)
        runs.append(settle(world))
    assert runs[0] == runs[1]


def test_settle_follows_timers() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=1))
    world.add_pods(make_pod("p", cpu=2))
    settle(world, rounds=3)
    assert world.now >= T0 + timedelta(minutes=5)

"""Hostile quantities (issue: a pod asking 99999999999Ei was bound to an 8 Gi node; a node with
1e400 allocatable crashed simulate): every amount is exact up to `LIMIT` and bounded above it,
so no column wraps, a request beyond any capacity fits nowhere, and no bound pod ever
over-commits its node, whatever the quantities (huge, tiny, fractional, any suffix)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apis.core import Pod
from apis.quantity import Quantity
from placement.pods.cluster.requests import CPU, LIMIT, MEMORY, amount
from placement.pods.framework.events import BindPod
from tests.placement.pods.test_engine import World, make_node, make_pod

HUGE = ["99999999999Ei", "1e400", "9223372036854775807", "9Ei", "8Ei", "1E", "123456789P"]
TINY = ["1m", "0.001", "1n", "500u", "0.5", "1e-3", "0"]
NORMAL = ["1", "250m", "1.5", "2Gi", "512Mi", "3G", "4", "100M"]
quantities = st.sampled_from(HUGE + TINY + NORMAL)


def test_a_capacity_above_the_limit_is_the_limit_and_a_request_above_it_exceeds_any() -> None:
    assert amount(MEMORY, Quantity("1e400"), capacity=True) == LIMIT
    assert amount(MEMORY, Quantity("1e400")) == LIMIT + 1
    assert amount(CPU, Quantity("1e400"), capacity=True) == LIMIT
    assert amount(MEMORY, Quantity("1Pi")) == 2**50 == LIMIT  # exact up to the limit
    assert amount(CPU, Quantity("1.5")) == 1500
    assert amount(CPU, Fraction(1, 10**9)) == 1  # rounds up, as MilliValue


def test_a_node_with_astronomic_allocatable_takes_pods_and_a_huge_pod_fits_nowhere() -> None:
    world = World.of()
    world.add_nodes(make_node("big", memory="1e400"), make_node("small", memory="8Gi"))
    world.add_pods(
        make_pod("huge", cpu=1, memory="99999999999Ei"),
        make_pod("normal", cpu=1, memory="1Gi"),
    )
    world.run(steps=20)
    assert world.pods["default/normal"].spec.node_name in {"big", "small"}
    huge = world.pods["default/huge"]
    assert huge.spec.node_name is None
    assert "0/2 nodes are available: 2 Insufficient memory." in _message(world, "default/huge")


def _message(world: World, key: str) -> str:
    status = world.pods[key].status
    for condition in (status.conditions if status else None) or []:
        if condition.get("type") == "PodScheduled":
            return str(condition.get("message"))
    return ""


def _units(resource: str, value: Fraction) -> int:
    """Kubernetes' integer amount (MilliValue for cpu, Value otherwise: both round up), in
    Python's unbounded integers: what the columns would hold if they had no bound."""
    return math.ceil(value * 1000) if resource == "cpu" else math.ceil(value)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(quantities, quantities), min_size=1, max_size=4),
    st.lists(
        st.tuples(quantities, quantities, st.booleans(), st.integers(0, 3)), min_size=1, max_size=10
    ),
)
def test_no_pod_the_scheduler_binds_ever_overcommits_its_node(nodes: Any, pods: Any) -> None:
    """Unbounded integer arithmetic (kube's rounded amounts, no column involved): on every
    node, for every resource a pod the scheduler bound there asks for, all the pods there
    (those another scheduler ran there included) ask for no more than the node has."""
    node_objs = [make_node(f"n{i}", cpu=c, memory=m, pods=8) for i, (c, m) in enumerate(nodes)]
    pod_objs: list[Pod] = []
    for i, (cpu, memory, running, where) in enumerate(pods):
        node = f"n{where % len(node_objs)}" if running else None
        pod_objs.append(make_pod(f"p{i}", cpu=cpu, memory=memory, node=node))
    world = World.of()
    world.add_nodes(*node_objs)
    world.add_pods(*pod_objs)
    world.run(steps=40)
    bound_by_us = {a.key for a in world.log if isinstance(a, BindPod)}
    for i, (cpu, memory) in enumerate(nodes):
        name = f"n{i}"
        here = [(p, k in bound_by_us) for k, p in world.pods.items() if p.spec.node_name == name]
        capacity = {
            "cpu": _units("cpu", Quantity(cpu).value),
            "memory": _units("memory", Quantity(memory).value),
            "pods": 8,
        }
        totals = dict.fromkeys(capacity, 0)
        asked: set[str] = set()
        for pod, ours in here:
            resources = pod.spec.containers[0].resources
            requests = (resources.requests if resources else None) or {}
            for r in ("cpu", "memory"):
                value = _units(r, requests[r].value) if r in requests else 0
                totals[r] += value
                if ours and value > 0:
                    asked.add(r)
            totals["pods"] += 1
            if ours:
                asked.add("pods")
        for r in asked:
            assert totals[r] <= capacity[r], (name, r, totals[r], capacity[r])
    snapshot = world.engine.nodes()
    assert (snapshot.requested >= 0).all()  # no column wrapped

"""Properties of gangs in `scheduler simulate`'s world (hypothesis): over random gangs (sizes,
minMember, priorities, requests), plain pods (some running, so that preemption has victims),
node capacities and Coscheduling args, the simulation returns, no instant sees more attempts
than a bounded number, and no PodGroup is ever partly bound: after every engine call the bound
members of each group are 0 or at least its minMember."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from placement.pods.framework.interface import pod_key
from placement.pods.scheduler.engine import Engine
from placement.pods.simulator.simulation import pods_by_key, simulate
from tests.placement.pods.test_engine import SCHEDULER, T0, default_profile, make_node, make_pod
from tests.placement.pods.test_gang import member, pod_group
from tests.plugins.pods.gang_harness import Watched

# A few dozen small worlds, each simulated for up to five virtual minutes; the deadline is
# only a guard against a hang (an example takes a few tens of milliseconds).
GANGS = settings(max_examples=40, deadline=timedelta(seconds=10))

node_cpus = st.lists(st.integers(1, 8), min_size=1, max_size=4)
gang_specs = st.lists(
    st.tuples(
        st.lists(st.integers(1, 4), min_size=1, max_size=5),  # each member's cpu request
        st.integers(0, 4),  # minMember = size - this (at least 1)
        st.sampled_from([0, 10, 100]),  # priority
    ),
    min_size=1,
    max_size=3,
)
plain_specs = st.lists(
    st.tuples(
        st.integers(1, 4),  # cpu
        st.sampled_from([0, 10, 100]),  # priority
        st.integers(0, 3),  # node index when running
        st.booleans(),  # running already (when it fits there)
    ),
    max_size=5,
)
coscheduling_args = st.sampled_from(
    [
        {},
        {"podGroupBackoffSeconds": 3},
        {"podGroupRejectPercentage": 50},
        {"podGroupRejectPercentage": 100, "permitWaitingTimeSeconds": 5},
    ]
)


def world(cpus: list[int], gangs: list[Any], plains: list[Any]) -> tuple[list[Any], dict[str, int]]:
    """The objects, and minMember per group key."""
    objects: list[Any] = [make_node(f"n{i}", cpu=c) for i, c in enumerate(cpus)]
    used = [0] * len(cpus)
    for i, (cpu, priority, where, running) in enumerate(plains):
        row = where % len(cpus)
        if running and used[row] + cpu <= cpus[row]:
            used[row] += cpu
            objects.append(make_pod(f"run{i}", cpu, priority=priority, node=f"n{row}"))
        else:
            objects.append(make_pod(f"pend{i}", cpu, priority=priority))
    minimums: dict[str, int] = {}
    for g, (requests, short, priority) in enumerate(gangs):
        name = f"g{g}"
        minimum = max(len(requests) - short, 1)
        minimums[pod_key("default", name)] = minimum
        objects.append(pod_group(name, minimum, created=T0 + timedelta(seconds=g)))
        objects.extend(
            member(f"{name}-m{i}", name, cpu, priority=priority) for i, cpu in enumerate(requests)
        )
    return objects, minimums


@GANGS
@given(node_cpus, gang_specs, plain_specs, coscheduling_args)
def test_simulate_returns_and_never_binds_part_of_a_gang(
    cpus: list[int], gangs: list[Any], plains: list[Any], args: dict[str, Any]
) -> None:
    objects, minimums = world(cpus, gangs, plains)
    watched = Watched(Engine(default_profile(pluginArgs={"Coscheduling": args})))
    result = simulate(objects, watched, T0, scheduler_name=SCHEDULER, max_time=timedelta(minutes=5))
    assert result.finished <= T0 + timedelta(minutes=5)
    assert watched.partly_bound == []
    pods = pods_by_key(result)
    for group, minimum in minimums.items():
        name = group.split("/")[1]
        bound = [k for k, p in pods.items() if k.startswith(f"{group}-m") and p.spec.node_name]
        assert len(bound) == 0 or len(bound) >= minimum, (name, bound)
    # Each pending pod is tried at most once per instant (no spinning): the pods of the world.
    assert max(watched.per_instant.values(), default=0) <= len(pods) + len(result.evicted)

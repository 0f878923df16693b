"""Properties of capacity scheduling over random quotas, nodes and pod streams (hypothesis),
checked after every scheduling decision: no quota uses more than its max, the quotas together
use no more than Σmin (none is ever lowered here), the plugin's `used` is what the pods bound
in the namespace request, a preemption evicts only pods its rule allows, and no node is
over-committed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from placement.pods.cluster.requests import pod_requests
from placement.pods.framework.events import DeletePod
from tests.placement.pods.test_engine import T0, make_node
from tests.placement.pods.test_quota_world import GPU, QuotaWorld, gpu_node, qpod, quota

FAST = settings(max_examples=120, deadline=None)

quota_specs = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 4)),  # min, max - min
    min_size=1,
    max_size=3,
)
node_specs = st.lists(st.integers(1, 4), min_size=1, max_size=3)
pod_specs = st.lists(
    st.tuples(
        st.integers(0, 3),  # namespace index (the last one has no quota)
        st.integers(0, 3),  # GPUs
        st.sampled_from([0, 5, 10]),  # priority
        st.booleans(),  # new batch before this pod
    ),
    min_size=2,
    max_size=20,
)


def quota_namespaces(quotas: Sequence[Any]) -> list[str]:
    return [f"q{i}" for i in range(len(quotas))]


def check(world: QuotaWorld, quotas: Sequence[tuple[int, int]], gpus: Sequence[int]) -> None:
    names = quota_namespaces(quotas)
    # Independent count: pods bound (or assumed) and not finished, per namespace and node.
    per_ns: dict[str, int] = {}
    per_node: dict[str, int] = {}
    assumed = world.engine.assumed()
    for key, pod in world.pods.items():
        node = pod.spec.node_name or assumed.get(key)
        if not node:
            continue
        gpu = pod_requests(pod).get(GPU, 0)
        per_ns[key.split("/")[0]] = per_ns.get(key.split("/")[0], 0) + gpu
        per_node[node] = per_node.get(node, 0) + gpu
    total_used = 0
    for ns, (low, extra) in zip(names, quotas, strict=True):
        used = world.used(ns)
        assert used == per_ns.get(ns, 0), ns
        assert used <= low + extra, f"{ns} over its max"
        total_used += used
    assert total_used <= sum(low for low, _ in quotas), "Σused above Σmin"
    for i, capacity in enumerate(gpus):
        assert per_node.get(f"n{i + 1}", 0) <= capacity, f"n{i + 1} over-committed"


@FAST
@given(quota_specs, node_specs, pod_specs)
def test_invariants_hold_after_every_decision(
    quotas: list[tuple[int, int]], gpus: list[int], pods: list[tuple[int, int, int, bool]]
) -> None:
    world = QuotaWorld.of()
    world.add_nodes(*(gpu_node(f"n{i + 1}", gpus=g) for i, g in enumerate(gpus)))
    names = quota_namespaces(quotas)
    world.add_quotas(
        *(
            quota(ns, {GPU: low}, {GPU: low + extra})
            for ns, (low, extra) in zip(names, quotas, strict=True)
        )
    )
    namespaces = [*names, "free"]
    batches: list[list[Any]] = [[]]
    for i, (ns_index, gpu, priority, new_batch) in enumerate(pods):
        if new_batch and batches[-1]:
            batches.append([])
        namespace = namespaces[ns_index % len(namespaces)]
        batches[-1].append(qpod(f"p{i}", namespace, gpu=gpu, priority=priority))
    records = 0
    for batch in batches:
        world.add_pods(*batch)
        for _ in range(60):
            before = {ns: world.capacity.quota(ns) for ns in names}
            over_min = {ns for ns, q in before.items() if q is not None and q.over_min()}
            priorities = {k: p.spec.priority or 0 for k, p in world.pods.items()}
            actions = world.step(limit=1)
            check(world, quotas, gpus)
            new = world.capacity.preemptions[records:]
            records = len(world.capacity.preemptions)
            deleted = {a.key for a in actions if isinstance(a, DeletePod)}
            for record in new:
                preemptor_ns = record.preemptor.split("/")[0]
                assert set(record.victims + record.elsewhere) <= deleted | set(world.preempted())
                for victim in record.victims + record.elsewhere:
                    victim_ns = victim.split("/")[0]
                    lower = priorities[victim] < priorities[record.preemptor]
                    if record.rule == "own":
                        assert victim_ns == preemptor_ns and lower
                    elif record.rule == "reclaim":
                        assert victim_ns != preemptor_ns and victim_ns in over_min
                    else:
                        assert preemptor_ns == "free" and victim_ns == "free" and lower
            if not actions or all(type(a).__name__ == "WakeAt" for a in actions):
                if world.engine.next_wake() is None:
                    break
                world.now = max(world.now, world.engine.next_wake() or world.now)


running_specs = st.lists(
    st.tuples(st.integers(0, 3), st.integers(1, 2), st.sampled_from([0, 5, 10])),
    min_size=2,
    max_size=16,
)


@FAST
@given(quota_specs, node_specs, running_specs, pod_specs)
def test_invariants_hold_when_preemptors_arrive_on_a_full_cluster(
    quotas: list[tuple[int, int]],
    gpus: list[int],
    running: list[tuple[int, int, int]],
    pods: list[tuple[int, int, int, bool]],
) -> None:
    """The cluster starts filled by pods already bound (within every max and Σmin), so that
    most arrivals preempt: reclaiming, within a namespace, without quota, across nodes."""
    world = QuotaWorld.of()
    world.add_nodes(*(gpu_node(f"n{i + 1}", gpus=g) for i, g in enumerate(gpus)))
    names = quota_namespaces(quotas)
    world.add_quotas(
        *(quota(ns, {GPU: low}, {GPU: low + e}) for ns, (low, e) in zip(names, quotas, strict=True))
    )
    namespaces = [*names, "free"]
    free = dict(enumerate(gpus))
    used = dict.fromkeys(names, 0)
    for i, (ns_index, gpu, priority) in enumerate(running):
        ns = namespaces[ns_index % len(namespaces)]
        if ns != "free":
            low, extra = quotas[names.index(ns)]
            if used[ns] + gpu > low + extra or sum(used.values()) + gpu > sum(q[0] for q in quotas):
                continue
        row = next((r for r, left in free.items() if left >= gpu), None)
        if row is None:
            continue
        free[row] -= gpu
        if ns != "free":
            used[ns] += gpu
        world.add_pods(qpod(f"r{i}", ns, gpu=gpu, priority=priority, node=f"n{row + 1}"))
    check(world, quotas, gpus)
    for i, (ns_index, gpu, priority, _) in enumerate(pods):
        ns = namespaces[ns_index % len(namespaces)]
        world.add_pods(qpod(f"p{i}", ns, gpu=max(gpu, 1), priority=priority))
    records = 0
    for _ in range(200):
        before = {ns: world.capacity.quota(ns) for ns in names}
        over_min = {ns for ns, q in before.items() if q is not None and q.over_min()}
        priorities = {k: p.spec.priority or 0 for k, p in world.pods.items()}
        actions = world.step(limit=1)
        check(world, quotas, gpus)
        for record in world.capacity.preemptions[records:]:
            STATS[record.rule] = STATS.get(record.rule, 0) + 1
            STATS["elsewhere"] = STATS.get("elsewhere", 0) + bool(record.elsewhere)
            preemptor_ns = record.preemptor.split("/")[0]
            for victim in record.victims + record.elsewhere:
                victim_ns = victim.split("/")[0]
                lower = priorities[victim] < priorities[record.preemptor]
                if record.rule == "own":
                    assert victim_ns == preemptor_ns and lower
                elif record.rule == "reclaim":
                    assert victim_ns != preemptor_ns and victim_ns in over_min
                    assert before[victim_ns] is not None
                else:
                    assert preemptor_ns == "free" and victim_ns == "free" and lower
        records = len(world.capacity.preemptions)
        if not any(type(a).__name__ != "WakeAt" for a in actions):
            wake = world.engine.next_wake()
            if wake is None or wake > T0 + timedelta(minutes=30):
                break
            world.now = max(world.now, wake)


STATS: dict[str, int] = {}
"""How many preemptions of each rule the examples made (read when tuning the strategies)."""


@FAST
@given(st.integers(2, 5), st.integers(1, 4), st.integers(0, 3), st.data())
def test_cross_node_reclaim_evicts_exactly_the_headroom_needed(
    nodes: int, per_node: int, free: int, data: st.DataObject
) -> None:
    """A borrowing quota (min 0) runs `per_node` 1-cpu pods on every node, `free` cpus left
    on each; the owner of all the min asks for `ask` cpus: it schedules, evicting exactly
    `ask` borrowing pods in all, at least those its node needs for room, the rest anywhere
    for Σmin headroom, and nothing else."""
    ask = data.draw(st.integers(1, min(per_node + free, nodes * per_node)))  # <= its min
    world = QuotaWorld.of()
    world.add_nodes(*(make_node(f"n{i + 1}", cpu=per_node + free) for i in range(nodes)))
    total = nodes * per_node
    world.add_quotas(
        quota("borrower", {"cpu": 0}, {"cpu": total}),
        quota("owner", {"cpu": total}, {"cpu": total}),
    )
    world.add_pods(
        *(
            qpod(f"b{i}-{j}", "borrower", cpu=1, node=f"n{i + 1}", priority=10)
            for i in range(nodes)
            for j in range(per_node)
        )
    )
    world.submit(qpod("big", "owner", cpu=ask))
    assert world.running("owner") == ["owner/big"]
    assert len(world.preempted()) == ask
    assert all(key.startswith("borrower/") for key in world.preempted())
    [record] = world.capacity.preemptions
    assert len(record.victims) + len(record.elsewhere) == ask
    assert len(record.victims) >= max(0, ask - free)  # the node's room comes from the node
    assert world.used("borrower", "cpu") == (total - ask) * 1000

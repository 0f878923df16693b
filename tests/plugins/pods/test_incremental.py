"""The resource plugins' cached results, updated row by row as pods come and go, against a
straightforward reference of kube-scheduler's arithmetic recomputed from scratch on every
snapshot (random nodes, huge memory amounts, nodes with none of a resource)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.pods.framework import MAX_NODE_SCORE
from placement.pods.nodes import NodeSnapshot, NodeTable
from placement.pods.requests import CPU, MEMORY, PODS
from plugins.pods import _rowcache
from plugins.pods.balancedallocation import NodeResourcesBalancedAllocation
from plugins.pods.noderesourcesfit import NodeResourcesFit, parse_fit_args
from tests.plugins.pods.builders import cycle, node, pod

GiB = 2**30
amounts = st.one_of(st.just(0), st.integers(1, 4), st.integers(0, 2**46))
memories = st.one_of(st.just(0), st.integers(1, 2**50), st.sampled_from([16 * GiB, 64 * GiB]))
node_st = st.tuples(st.integers(0, 64_000), memories, st.integers(0, 8))
pod_st = st.tuples(st.integers(0, 8_000), amounts)
event_st = st.tuples(st.booleans(), st.integers(0, 40), st.integers(0, 11), pod_st)


def _requests(cpu: int, memory: int) -> dict[str, int]:
    out = {PODS: 1}
    if cpu:
        out[CPU] = cpu
    if memory:
        out[MEMORY] = memory
    return out


def _non_zero(cpu: int, memory: int) -> dict[str, int]:
    return {CPU: cpu or 100, MEMORY: memory or 200 * 2**20, PODS: 1}


def _column(nodes: NodeSnapshot, name: str) -> list[int]:
    col = nodes.column_of(name)
    assert col is not None
    values: list[int] = nodes.allocatable[:, col].tolist()
    return values


def _ref_fits(nodes: NodeSnapshot, want: dict[str, int]) -> list[bool]:
    """kube's fitsRequest: the pods slot always, other resources when asked for."""
    out = []
    for row in range(nodes.size):
        ok = True
        for name, amount in want.items():
            if amount <= 0 and name != PODS:
                continue
            col = nodes.column_of(name)
            assert col is not None
            if int(nodes.requested[row, col]) + amount > int(nodes.allocatable[row, col]):
                ok = False
        out.append(ok)
    return out


def _ref_resource_scores(nodes: NodeSnapshot, cpu: int, memory: int, most: bool) -> list[int]:
    """kube's least/mostRequestedScore per resource on NonZeroRequested (the pod's own
    non-zero amounts given), weights 1."""
    out = []
    for row in range(nodes.size):
        total = weights = 0
        for k, (name, pod_amount) in enumerate(((CPU, cpu), (MEMORY, memory))):
            capacity = _column(nodes, name)[row]
            requested = int(nodes.non_zero_requested[row, k]) + pod_amount
            if capacity == 0:
                continue
            weights += 1
            if most:
                total += min(requested, capacity) * MAX_NODE_SCORE // capacity
            elif requested <= capacity:
                total += (capacity - requested) * MAX_NODE_SCORE // capacity
        out.append(total // weights if weights else 0)
    return out


def _ref_balanced(nodes: NodeSnapshot, cpu: int, memory: int) -> list[int]:
    """kube's balancedResourceScorer on plain requests: (1 - std) * 100, truncated."""
    out = []
    for row in range(nodes.size):
        fractions = []
        for name, pod_amount in ((CPU, cpu), (MEMORY, memory)):
            col = nodes.column_of(name)
            assert col is not None
            capacity = int(nodes.allocatable[row, col])
            if capacity == 0:
                continue
            requested = int(nodes.requested[row, col]) + pod_amount
            fractions.append(min(float(requested) / float(capacity), 1.0))
        std = abs(fractions[0] - fractions[1]) / 2 if len(fractions) == 2 else 0.0
        out.append(math.trunc((1 - std) * MAX_NODE_SCORE))
    return out


def _table(specs: list[tuple[int, int, int]]) -> NodeTable:
    nodes = [node(f"n{i:02d}", cpu=f"{c}m", memory=m, pods=p) for i, (c, m, p) in enumerate(specs)]
    return NodeTable.build(nodes)


@settings(max_examples=40, deadline=None)
@given(
    specs=st.lists(node_st, min_size=1, max_size=8),
    events=st.lists(event_st, max_size=15),
    shapes=st.lists(pod_st, min_size=1, max_size=3),
)
def test_cached_results_equal_a_fresh_reference_after_every_event(
    specs: list[tuple[int, int, int]],
    events: list[tuple[bool, int, int, tuple[int, int]]],
    shapes: list[tuple[int, int]],
) -> None:
    table = _table(specs)
    plugins: dict[str, Any] = {
        "least": NodeResourcesFit(),
        "most": NodeResourcesFit(parse_fit_args({"scoringStrategy": {"type": "MostAllocated"}})),
        "balanced": NodeResourcesBalancedAllocation(),
    }
    for step, (remove, key, at, (cpu, memory)) in enumerate([(False, -1, 0, (0, 0)), *events]):
        if key >= 0:
            if remove:
                table.remove_pod(f"p{key}")
            else:
                target = f"n{at % len(specs):02d}"
                table.add_pod(f"p{key}", target, _requests(cpu, memory), _non_zero(cpu, memory))
        nodes = table.snapshot()
        every = np.arange(nodes.size, dtype=np.intp)
        for cpu_req, mem_req in shapes:
            info = pod(
                f"s{step}",
                requests=[
                    {"cpu": f"{cpu_req}m", "memory": mem_req} if cpu_req else {"memory": mem_req}
                ],
            )
            c = cycle()
            fit = plugins["least"]
            fit.pre_filter(c, info, nodes)
            mask = fit.filter(c, info, nodes, np.ones(nodes.size, dtype=bool)).mask
            assert mask.tolist() == _ref_fits(nodes, info.requests)
            non_zero = info.non_zero.get(CPU, 0), info.non_zero.get(MEMORY, 0)
            for name, most in (("least", False), ("most", True)):
                got = plugins[name].score(c, info, nodes, every).tolist()
                assert got == _ref_resource_scores(nodes, *non_zero, most), name
            want_cpu, want_mem = info.requests.get(CPU, 0), info.requests.get(MEMORY, 0)
            if want_cpu or want_mem:
                got = plugins["balanced"].score(c, info, nodes, every).tolist()
                assert got == _ref_balanced(nodes, want_cpu, want_mem)


def test_changed_rows_finds_the_rows_that_differ_and_gives_up_on_many() -> None:
    a = np.zeros((200, 3), dtype=np.int64)
    b = a.copy()
    b[7, 2] = 1
    b[150, 0] = -1
    b[150, 1] = 5
    for array in (a, b):
        array.flags.writeable = False
    rows = _rowcache.changed_rows(a, b)
    assert rows is not None and rows.tolist() == [7, 150]
    c = np.ones((200, 3), dtype=np.int64)
    c.flags.writeable = False
    assert _rowcache.changed_rows(a, c) is None  # every row: recompute instead
    assert _rowcache.changed_rows(a, np.zeros((200, 3), dtype=np.int64)) is None  # writable


def test_writable_arrays_are_never_cached() -> None:
    cache = _rowcache.RowCache()
    data = np.array([1, 2, 3], dtype=np.int64)
    calls: list[str] = []

    def full() -> Any:
        calls.append("full")
        return data * 10

    for _ in range(2):
        out = cache.get("k", (data,), (data,), full, lambda rows: data[rows])
        assert out.tolist() == [10, 20, 30]
        data[0] = 1  # a writer could change it at any time
    assert calls == ["full", "full"]

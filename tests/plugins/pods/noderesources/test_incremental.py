"""The resource plugins' cached results, updated row by row as pods come and go, against a
straightforward reference of kube-scheduler's arithmetic recomputed from scratch on every
snapshot (random nodes, huge memory amounts, nodes with none of a resource)."""

from __future__ import annotations

import dataclasses
import math
import weakref
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.pods.cluster.nodes import HISTORY, NodeSnapshot, NodeTable
from placement.pods.cluster.requests import CPU, MEMORY, PODS
from placement.pods.framework.interface import MAX_NODE_SCORE
from plugins.pods.noderesources import row_cache as _rowcache
from plugins.pods.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from plugins.pods.noderesources.fit import NodeResourcesFit, parse_fit_args
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


def test_changed_since_names_the_rows_pod_events_wrote() -> None:
    table = _table([(4000, 8 * GiB, 10)] * 6)
    first = table.snapshot()
    table.add_pod("a", "n01", _requests(100, 0))
    table.add_pod("b", "n04", _requests(100, 0))
    second = table.snapshot()
    table.remove_pod("a")
    third = table.snapshot()
    changed = third.changed_since(first)
    assert changed is not None and changed.tolist() == [1, 4]
    assert (r := third.changed_since(second)) is not None and r.tolist() == [1]
    assert (r := third.changed_since(third)) is not None and r.tolist() == []
    assert first.changed_since(third) is None  # backwards: unknown
    assert second.changed_since(_table([(1, 1, 1)]).snapshot()) is None  # another table
    table.put_node(node("n09", cpu="1", memory=GiB, pods=1))  # a node event: everything
    assert table.snapshot().changed_since(third) is None


def test_changed_since_gives_up_past_the_history() -> None:
    table = _table([(64_000, 64 * GiB, 500)] * 3)
    first = table.snapshot()
    for i in range(HISTORY):
        table.add_pod(f"p{i}", "n02", _requests(1, 0))
    within = table.snapshot()
    assert (r := within.changed_since(first)) is not None and r.tolist() == [2]
    table.add_pod("one-more", "n00", _requests(1, 0))
    assert table.snapshot().changed_since(first) is None
    assert (r := table.snapshot().changed_since(within)) is not None and r.tolist() == [0]


def test_derived_snapshots_have_no_history_and_are_never_cached() -> None:
    table = _table([(4000, 8 * GiB, 10)] * 3)
    nodes = table.snapshot()
    derived = dataclasses.replace(nodes, requested=nodes.requested + 1)
    assert derived.version is None and derived.changed_since(nodes) is None
    cache = _rowcache.RowCache()
    calls: list[str] = []

    def full() -> Any:
        calls.append("full")
        return np.zeros(3, dtype=np.int64)

    for _ in range(2):
        cache.get("k", derived, (), full, lambda rows: np.zeros(len(rows), dtype=np.int64))
    assert calls == ["full", "full"]
    for _ in range(2):
        cache.get("k", nodes, (), full, lambda rows: np.zeros(len(rows), dtype=np.int64))
    assert calls == ["full", "full", "full"]  # a table's snapshot: computed once


def test_a_kept_answer_never_changes_and_an_unkept_one_is_updated_in_place() -> None:
    """The cache writes the changed rows into its previous answer only when nobody kept it;
    an answer a caller still holds stays as it was (the new rows go to a copy)."""
    table = _table([(4000, 8 * GiB, 10)] * 4)
    cache = _rowcache.RowCache()
    fulls: list[int] = []

    def get() -> np.ndarray[Any, Any]:
        nodes = table.snapshot()

        def full() -> Any:
            fulls.append(1)
            return nodes.requested[:, 0].copy()

        return cache.get(
            "k", nodes, (), full, lambda rows: [nodes.requested.item(r, 0) for r in rows]
        )

    first = get()
    seen = weakref.ref(first)
    del first
    table.add_pod("a", "n01", _requests(100, 0))
    second = get()
    updated = seen()
    assert updated is second  # nobody kept the first answer: updated in place
    assert second.tolist() == [0, 100, 0, 0] and not second.flags.writeable
    table.add_pod("b", "n02", _requests(300, 0))
    third = get()
    assert third is not second and second.tolist() == [0, 100, 0, 0]  # kept: unchanged
    assert third.tolist() == [0, 100, 300, 0]
    table.remove_pod("a")
    kept_view = third[1:]
    fourth = get()
    assert kept_view.tolist() == [100, 300, 0]  # a live view keeps its base from changing
    assert fourth.tolist() == [0, 0, 300, 0] and len(fulls) == 1


def test_the_non_zero_count_follows_the_changed_rows() -> None:
    table = _table([(250, 8 * GiB, 10)] * 3)
    cache = _rowcache.RowCache()
    want = (0, 200)  # cpu column, 200m: fits while a node has 50m or less requested

    def fits() -> tuple[list[bool], int]:
        nodes = table.snapshot()
        col, amount = want

        def row_fits(row: int) -> bool:
            return bool(nodes.requested.item(row, col) + amount <= nodes.allocatable.item(row, col))

        mask, count = cache.counted(
            "fit",
            nodes,
            (),
            lambda: np.array([row_fits(r) for r in range(nodes.size)]),
            lambda rows: [row_fits(r) for r in rows],
        )
        return mask.tolist(), count

    assert fits() == ([True, True, True], 3)
    table.add_pod("a", "n00", _requests(100, 0))
    assert fits() == ([False, True, True], 2)
    table.add_pod("b", "n02", _requests(100, 0))
    table.add_pod("c", "n01", _requests(10, 0))
    assert fits() == ([False, True, False], 1)
    table.remove_pod("a")
    table.remove_pod("b")
    assert fits() == ([True, True, True], 3)

"""The counts InterPodAffinity keeps across cycles (`_podcounts`) always equal a recount: pods
counted and uncounted in any order, nodes added between cycles, a conjunction asked about
late, and a log too long to replay."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.pods.cluster.nodes import NodeSnapshot, NodeTable
from placement.pods.cluster.pod_index import HISTORY, PodIndex
from placement.pods.cluster.podinfo import PodInfo
from plugins.pods.interpodaffinity.counts import Carried, Conjunction, Matches, domain_totals
from plugins.pods.interpodaffinity.terms import terms_of
from tests.plugins.pods.affinity_harness import HOST, ZONE, apod, hnode, term

COLORS = ("red", "blue")
ANTI_RED = term({"color": "red"})


def pod_info(i: int, color: str, anti: bool) -> PodInfo:
    return PodInfo.of(apod(f"p{i}", {"color": color}, anti=[ANTI_RED] if anti else []))


def snapshot(count: int) -> NodeSnapshot:
    return NodeTable.build([hnode(f"n{i}", f"z{i % 2}") for i in range(count)], []).snapshot()


def recount(placed: dict[str, tuple[PodInfo, str]], nodes: NodeSnapshot, keep: Any) -> list[int]:
    out = [0] * nodes.size
    for info, node in placed.values():
        row = nodes.row_of(node)
        if row is not None and keep(info):
            out[row] += 1
    return out


steps = st.lists(
    st.tuples(
        st.sampled_from(("add", "remove", "node", "ask")),
        st.integers(min_value=0, max_value=7),  # which pod
        st.sampled_from(COLORS),
        st.booleans(),  # carries the anti-affinity term
        st.integers(min_value=0, max_value=5),  # which node
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(steps=steps)
def test_kept_counts_equal_a_recount(steps: list[tuple[str, int, str, bool, int]]) -> None:
    index = PodIndex()
    matches, carried = Matches(), Carried()
    nodes = snapshot(3)
    red = terms_of(pod_info(99, "blue", True)).required_anti[0]
    conj = Conjunction(((red, frozenset({"default"})),))
    placed: dict[str, tuple[PodInfo, str]] = {}
    for action, i, color, anti, where in steps:
        if action == "add":
            info = pod_info(i, color, anti)
            node = f"n{where % (nodes.size + 1)}"  # sometimes a node not in the snapshot yet
            index.add(info, node)
            placed[info.key] = (info, node)
        elif action == "remove":
            index.remove(f"default/p{i}")
            placed.pop(f"default/p{i}", None)
        elif action == "node":
            nodes = snapshot(min(nodes.size + 1, 6))
        tally = matches.get(index, conj, nodes)
        wanted = recount(placed, nodes, lambda p: p.labels.get("color") == "red")
        assert tally.rows(nodes).tolist() == wanted
        carried.update(index, nodes)
        shapes = list(carried.of_role("anti"))
        carrying = recount(placed, nodes, lambda p: bool(terms_of(p).required_anti))
        if not shapes:
            assert sum(carrying) == 0
        else:
            [(_, _, anti_tally)] = shapes
            assert anti_tally.rows(nodes).tolist() == carrying


def test_a_log_too_long_to_replay_recounts() -> None:
    index = PodIndex()
    matches = Matches()
    nodes = snapshot(2)
    red = terms_of(pod_info(99, "blue", True)).required_anti[0]
    conj = Conjunction(((red, frozenset({"default"})),))
    assert matches.get(index, conj, nodes).rows(nodes).tolist() == [0, 0]
    for i in range(HISTORY + 10):
        index.add(pod_info(i, "red", False), f"n{i % 2}")
    assert matches.get(index, conj, nodes).rows(nodes).tolist() == [
        (HISTORY + 11) // 2,
        (HISTORY + 10) // 2,
    ]


def test_domain_totals_sum_per_label_value() -> None:
    nodes = snapshot(5)  # zones z0: n0, n2, n4; z1: n1, n3
    counts = np.array([1, 0, 2, 5, 0], dtype=np.int64)
    per_zone, has = domain_totals(nodes, ZONE, counts)
    assert per_zone.tolist() == [3, 5, 3, 5, 3] and has.all()
    per_host, _ = domain_totals(nodes, HOST, counts)
    assert per_host.tolist() == counts.tolist()
    none, has = domain_totals(nodes, "missing", counts)
    assert none.tolist() == [0] * 5 and not has.any()

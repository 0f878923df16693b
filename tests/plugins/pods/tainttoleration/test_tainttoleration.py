"""TaintToleration and toleration matching against Kubernetes' ToleratesTaint, and
NodeUnschedulable (a cordon is the unschedulable taint)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from placement.pods.cluster.nodes import Taint
from plugins.pods.helper.normalize_score import default_normalize
from plugins.pods.helper.tolerations import Tol, tolerates
from plugins.pods.nodeunschedulable.node_unschedulable import NodeUnschedulable
from plugins.pods.tainttoleration.taint_toleration import TaintToleration
from tests.plugins.pods.builders import (
    all_rows,
    by_name,
    cycle,
    everything,
    names,
    node,
    pod,
    snapshot,
)

SPOT = {"key": "spot", "value": "true", "effect": "NoSchedule"}
GPU = {"key": "gpu", "value": "", "effect": "NoExecute"}
SOFT = {"key": "busy", "value": "yes", "effect": "PreferNoSchedule"}


@pytest.mark.parametrize(
    ("tol", "taint", "expected"),
    [
        pytest.param(
            Tol("k", "Equal", "v", "NoSchedule"), Taint("k", "v", "NoSchedule"), True, id="equal"
        ),
        pytest.param(
            Tol("k", "", "v", ""), Taint("k", "v", "NoExecute"), True, id="empty-operator-is-equal"
        ),
        pytest.param(
            Tol("k", "Equal", "w", ""), Taint("k", "v", "NoSchedule"), False, id="other-value"
        ),
        pytest.param(
            Tol("k", "Exists", "", ""), Taint("k", "any", "NoSchedule"), True, id="exists"
        ),
        pytest.param(
            Tol("", "Exists", "", ""), Taint("x", "y", "NoExecute"), True, id="exists-all"
        ),
        pytest.param(
            Tol("", "Exists", "", "NoSchedule"), Taint("x", "y", "NoExecute"), False, id="effect"
        ),
        pytest.param(
            Tol("k", "Exists", "", "NoSchedule"), Taint("j", "", "NoSchedule"), False, id="key"
        ),
        pytest.param(
            Tol("k", "Gt", "1", ""), Taint("k", "2", "NoSchedule"), False, id="unknown-op"
        ),
    ],
)
def test_toleration_matching_follows_kubernetes(tol: Tol, taint: Taint, expected: bool) -> None:
    assert tolerates(tol, taint) is expected


def test_filter_rejects_untolerated_hard_taints_with_kube_message_and_unresolvable() -> None:
    nodes = snapshot(
        [
            node("a", taints=[SPOT]),
            node("b", taints=[GPU]),
            node("c", taints=[SOFT]),  # PreferNoSchedule never filters
            node("d"),
        ]
    )
    result = TaintToleration().filter(cycle(), pod(), nodes, everything(nodes))
    assert names(nodes, result.mask) == ["c", "d"]
    assert sorted(
        (r.message, r.resolvable, tuple(names(nodes, r.rows))) for r in result.all_reasons()
    ) == [
        ("node(s) had untolerated taint {gpu: }", False, ("b",)),
        ("node(s) had untolerated taint {spot: true}", False, ("a",)),
    ]


def test_the_reason_names_the_first_untolerated_taint_of_the_node() -> None:
    nodes = snapshot([node("a", taints=[SPOT, GPU])])
    tolerating_spot = pod(tolerations=[{"key": "spot", "operator": "Exists"}])
    result = TaintToleration().filter(cycle(), tolerating_spot, nodes, everything(nodes))
    assert [r.message for r in result.all_reasons()] == ["node(s) had untolerated taint {gpu: }"]
    tolerating_all = pod(tolerations=[{"operator": "Exists"}])
    assert TaintToleration().filter(cycle(), tolerating_all, nodes, everything(nodes)).mask.all()


def test_filter_results_are_cached_per_tolerations_but_reasons_follow_candidates() -> None:
    plugin = TaintToleration()
    nodes = snapshot([node("a", taints=[SPOT]), node("b", taints=[SPOT]), node("c")])
    first = plugin.filter(cycle(), pod("p1"), nodes, everything(nodes))
    second = plugin.filter(cycle(), pod("p2"), nodes, everything(nodes) & [False, True, True])
    assert names(nodes, first.all_reasons()[0].rows) == ["a", "b"]
    assert names(nodes, second.all_reasons()[0].rows) == ["b"]
    assert names(nodes, second.mask) == ["c"]


def test_score_counts_untolerated_prefer_no_schedule_taints_reversed() -> None:
    soft2 = {"key": "other", "value": "", "effect": "PreferNoSchedule"}
    nodes = snapshot([node("a", taints=[SOFT, soft2]), node("b", taints=[SOFT]), node("c")])
    rows = all_rows(nodes)
    scores = TaintToleration().score(cycle(), pod(), nodes, rows)
    assert by_name(nodes, rows, scores) == {"a": 0, "b": 50, "c": 100}
    # A toleration with a NoSchedule effect does not count for PreferNoSchedule taints.
    hard_only = pod(tolerations=[{"key": "busy", "operator": "Exists", "effect": "NoSchedule"}])
    assert TaintToleration().score(cycle(), hard_only, nodes, rows).tolist() == [0, 50, 100]
    tolerant = pod(tolerations=[{"key": "busy", "operator": "Exists"}])
    assert TaintToleration().score(cycle(), tolerant, nodes, rows).tolist() == [0, 100, 100]


def test_score_is_normalized_over_the_scored_rows_only() -> None:
    nodes = snapshot([node("a", taints=[SOFT]), node("b"), node("c", taints=[SOFT])])
    rows = all_rows(nodes)[1:]
    assert TaintToleration().score(cycle(), pod(), nodes, rows).tolist() == [100, 0]
    assert TaintToleration().score(cycle(), pod(), nodes, rows[:1]).tolist() == [100]


def test_cache_follows_node_events() -> None:
    plugin = TaintToleration()
    tainted = snapshot([node("a", taints=[SPOT])])
    assert not plugin.filter(cycle(), pod(), tainted, everything(tainted)).mask.any()
    clean = snapshot([node("a")])
    assert plugin.filter(cycle(), pod(), clean, everything(clean)).mask.all()


def test_cordoned_nodes_fail_unless_the_pod_tolerates_the_unschedulable_taint() -> None:
    nodes = snapshot([node("a", unschedulable=True), node("b")])
    result = NodeUnschedulable().filter(cycle(), pod(), nodes, everything(nodes))
    assert names(nodes, result.mask) == ["b"]
    assert [(r.message, r.resolvable, names(nodes, r.rows)) for r in result.all_reasons()] == [
        ("node(s) were unschedulable", False, ["a"])
    ]
    daemon = pod(
        tolerations=[
            {
                "key": "node.kubernetes.io/unschedulable",
                "operator": "Exists",
                "effect": "NoSchedule",
            }
        ]
    )
    assert NodeUnschedulable().filter(cycle(), daemon, nodes, everything(nodes)).mask.all()
    wrong_effect = pod(
        tolerations=[
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}
        ]
    )
    assert (
        not NodeUnschedulable().filter(cycle(), wrong_effect, nodes, everything(nodes)).mask.all()
    )


@given(
    scores=st.lists(st.one_of(st.integers(0, 5), st.integers(0, 10_000)), max_size=30),
    reverse=st.booleans(),
)
def test_normalizing_through_the_table_equals_the_arithmetic(
    scores: list[int], reverse: bool
) -> None:
    vector = np.array(scores, dtype=np.int64)
    plain = default_normalize(vector, reverse)
    tabled = default_normalize(vector, reverse, nonnegative=True)
    assert tabled.tolist() == plain.tolist()
    top = max(scores, default=0)
    want = [
        (100 - s * 100 // top if reverse else s * 100 // top)
        if top > 0
        else (100 if reverse else 0)
        for s in scores
    ]
    assert plain.tolist() == want

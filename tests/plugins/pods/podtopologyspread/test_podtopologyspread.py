"""PodTopologySpread's Filter on kube's documented examples ("Pod Topology Spread
Constraints" concept page: 4 nodes in 2 zones, maxSkew 1), node inclusion policies,
minDomains, matchLabelKeys, which pods count, invalid constraints, and the preemption overlay."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from placement.pods.cluster.overlay import PodOverlay
from placement.pods.framework.interface import PodCode
from plugins.pods.podtopologyspread.plugin import (
    ERR_REASON_CONSTRAINTS,
    ERR_REASON_LABEL,
    PodTopologySpread,
)
from tests.plugins.pods.builders import everything, names
from tests.plugins.pods.spread_harness import (
    HOST,
    ZONE,
    constraint,
    four_nodes,
    fresh,
    labelled,
    world,
    zoned,
)


def passing(plugin: PodTopologySpread, cycle: Any, pod: Any, nodes: Any) -> list[str]:
    status = plugin.pre_filter(cycle, pod, nodes).status
    assert status.ok, status
    result = plugin.filter(cycle, pod, nodes, everything(nodes))
    return names(nodes, result.mask)


def reasons(plugin: PodTopologySpread, cycle: Any, pod: Any, nodes: Any) -> dict[str, Any]:
    plugin.pre_filter(cycle, pod, nodes)
    result = plugin.filter(cycle, pod, nodes, everything(nodes))
    return {r.message: (names(nodes, r.rows), r.resolvable) for r in result.all_reasons()}


def three_existing() -> list[Any]:
    """The docs' starting point: foo=bar pods on node1, node2 and node3."""
    return [(labelled("p1"), "node1"), (labelled("p2"), "node2"), (labelled("p3"), "node3")]


def test_docs_one_constraint_sends_the_pod_to_zone_b() -> None:
    cycle, nodes = world(four_nodes(), three_existing())
    pod = labelled("mypod", spread=[constraint(ZONE)])
    plugin = PodTopologySpread()
    assert passing(plugin, cycle, pod, nodes) == ["node3", "node4"]
    assert reasons(plugin, fresh(cycle), pod, nodes) == {
        ERR_REASON_CONSTRAINTS: (["node1", "node2"], True)
    }


def test_docs_two_constraints_leave_only_node4() -> None:
    cycle, nodes = world(four_nodes(), three_existing())
    pod = labelled("mypod", spread=[constraint(ZONE), constraint(HOST)])
    assert passing(PodTopologySpread(), cycle, pod, nodes) == ["node4"]


def test_docs_conflicting_constraints_leave_the_pod_pending() -> None:
    # zoneA: node1 P P, node2 P; zoneB: node3 P P. The zone rule wants zoneB, the node rule
    # wants node2: no node satisfies both.
    nodes_ = [zoned("node1", "zoneA"), zoned("node2", "zoneA"), zoned("node3", "zoneB")]
    placed = [
        (labelled(f"p{i}"), n) for i, n in enumerate(["node1", "node1", "node2", "node3", "node3"])
    ]
    cycle, nodes = world(nodes_, placed)
    pod = labelled("mypod", spread=[constraint(ZONE), constraint(HOST)])
    assert passing(PodTopologySpread(), cycle, pod, nodes) == []


def test_a_node_without_the_topology_key_is_unresolvable() -> None:
    cycle, nodes = world([*four_nodes(), zoned("node5", None)], three_existing())
    pod = labelled("mypod", spread=[constraint(ZONE)])
    assert reasons(PodTopologySpread(), cycle, pod, nodes) == {
        ERR_REASON_LABEL: (["node5"], False),
        ERR_REASON_CONSTRAINTS: (["node1", "node2"], True),
    }


def five_nodes() -> list[Any]:
    """The docs' nodeAffinity example: zoneC (node5) is empty and the pod must avoid it."""
    return [*four_nodes(), zoned("node5", "zoneC")]


AVOID_C = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "NotIn", "values": ["zoneC"]}]}
            ]
        }
    }
}


def test_node_affinity_honored_keeps_an_excluded_zone_out_of_the_minimum() -> None:
    # zoneA 2, zoneB 1, zoneC 0. With the default Honor, zoneC is not a domain: the minimum is
    # zoneB's 1 and zoneB takes the pod. Ignoring node affinity, zoneC's 0 is the minimum and
    # only zoneC would do, where the pod may not go.
    cycle, nodes = world(five_nodes(), three_existing())
    honor = labelled("mypod", spread=[constraint(ZONE)], affinity=AVOID_C)
    assert passing(PodTopologySpread(), cycle, honor, nodes) == ["node3", "node4", "node5"]
    ignore = labelled(
        "mypod", spread=[constraint(ZONE, nodeAffinityPolicy="Ignore")], affinity=AVOID_C
    )
    assert passing(PodTopologySpread(), fresh(cycle), ignore, nodes) == ["node5"]


def test_node_taints_policy_honor_leaves_untolerated_nodes_out() -> None:
    tainted = zoned("node5", "zoneC").model_copy(deep=True)
    tainted.spec.taints = [type_taint("dedicated", "NoSchedule")]
    cycle, nodes = world([*four_nodes(), tainted], three_existing())
    ignore = labelled("mypod", spread=[constraint(ZONE)])
    assert passing(PodTopologySpread(), cycle, ignore, nodes) == ["node5"]
    honor = labelled("mypod", spread=[constraint(ZONE, nodeTaintsPolicy="Honor")])
    assert passing(PodTopologySpread(), fresh(cycle), honor, nodes) == ["node3", "node4", "node5"]


def type_taint(key: str, effect: str) -> Any:
    from apis.core import NodeTaint

    return NodeTaint(key=key, effect=effect)


def test_min_domains_makes_the_global_minimum_zero() -> None:
    # Three zones with two pods each; maxSkew 2. Fewer zones than minDomains 5: the minimum
    # is 0 and every zone would reach a skew of 3. With minDomains 3 the minimum is 2.
    nodes_ = [zoned("a", "z1"), zoned("b", "z2"), zoned("c", "z3")]
    placed = [(labelled(f"p{i}"), n) for i, n in enumerate("aabbcc")]
    cycle, nodes = world(nodes_, placed)
    five = labelled("mypod", spread=[constraint(ZONE, max_skew=2, minDomains=5)])
    assert passing(PodTopologySpread(), cycle, five, nodes) == []
    three = labelled("mypod", spread=[constraint(ZONE, max_skew=2, minDomains=3)])
    assert passing(PodTopologySpread(), fresh(cycle), three, nodes) == ["a", "b", "c"]


def test_only_matching_pods_of_the_namespace_that_are_not_terminating_count() -> None:
    placed = [
        (labelled("p1"), "node1"),
        (labelled("p2"), "node1"),
        (labelled("other-ns", namespace="elsewhere"), "node3"),
        (labelled("going", deleting=True), "node3"),
        (labelled("unrelated", {"foo": "baz"}), "node4"),
        (labelled("p3"), "node3"),
    ]
    cycle, nodes = world(four_nodes(), placed)
    # zoneA 2, zoneB 1: zoneB only; the three other pods in zoneB would not change that, but
    # counted they would put zoneB at 2 or more and open zoneA.
    pod = labelled("mypod", spread=[constraint(ZONE)])
    assert passing(PodTopologySpread(), cycle, pod, nodes) == ["node3", "node4"]
    placed_b = [(labelled("q1"), "node1"), (labelled("q2"), "node1")]
    placed_b += [(labelled(f"o{i}", namespace="elsewhere"), "node3") for i in range(3)]
    cycle, nodes = world(four_nodes(), placed_b)
    assert passing(PodTopologySpread(), cycle, pod, nodes) == ["node3", "node4"]


def test_a_pod_outside_its_own_selector_adds_no_self_match() -> None:
    # zoneA 2, zoneB 1, maxSkew 1: a matching pod may only go to zoneB (2+1-1 > 1), a pod not
    # matching its selector may go anywhere (2+0-1 = 1).
    placed = [(labelled("p1"), "node1"), (labelled("p2"), "node2"), (labelled("p3"), "node3")]
    cycle, nodes = world(four_nodes(), placed)
    pod = labelled("mypod", {"app": "other"}, spread=[constraint(ZONE)])
    assert passing(PodTopologySpread(), cycle, pod, nodes) == ["node1", "node2", "node3", "node4"]


def test_match_label_keys_count_only_the_same_revision() -> None:
    old = {"foo": "bar", "rev": "1"}
    new = {"foo": "bar", "rev": "2"}
    placed = [(labelled("o1", old), "node1"), (labelled("o2", old), "node2"),
              (labelled("n1", new), "node3")]  # fmt: skip
    cycle, nodes = world(four_nodes(), placed)
    pod = labelled("mypod", new, spread=[constraint(ZONE, matchLabelKeys=["rev"])])
    # Only rev 2 counts: zoneA 0, zoneB 1: zoneA only.
    assert passing(PodTopologySpread(), cycle, pod, nodes) == ["node1", "node2"]
    plain = labelled("mypod", new, spread=[constraint(ZONE)])
    assert passing(PodTopologySpread(), fresh(cycle), plain, nodes) == ["node3", "node4"]


def test_without_do_not_schedule_constraints_pre_filter_skips() -> None:
    cycle, nodes = world(four_nodes())
    soft = labelled("mypod", spread=[constraint(ZONE, hard=False)])
    assert PodTopologySpread().pre_filter(cycle, soft, nodes).status.code == PodCode.SKIP
    bare = labelled("mypod")
    assert PodTopologySpread().pre_filter(fresh(cycle), bare, nodes).status.code == PodCode.SKIP


def test_invalid_constraints_are_unresolvable_naming_the_field() -> None:
    cycle, nodes = world(four_nodes())
    cases = {
        "spec.topologySpreadConstraints[0].maxSkew: must be greater than zero (got 0)": [
            constraint(ZONE, max_skew=0)
        ],
        "spec.topologySpreadConstraints[1].whenUnsatisfiable: Unsupported value: "
        '"Sometimes": supported values: "DoNotSchedule", "ScheduleAnyway"': [
            constraint(ZONE),
            {**constraint(HOST), "whenUnsatisfiable": "Sometimes"},
        ],
        "spec.topologySpreadConstraints[0].labelSelector: "
        '"in" is not a valid label selector operator': [
            constraint(ZONE, selector={"matchExpressions": [{"key": "a", "operator": "in"}]})
        ],
        "spec.topologySpreadConstraints[0].minDomains: can only use minDomains if "
        "whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway": [
            constraint(ZONE, hard=False, minDomains=2)
        ],
    }
    for message, spread in cases.items():
        pod = labelled("mypod", spread=spread)
        status = PodTopologySpread().pre_filter(fresh(cycle), pod, nodes).status
        assert (status.code, status.message) == (PodCode.UNRESOLVABLE, message)


def test_the_overlay_removes_victims_and_adds_nominated_pods() -> None:
    # zoneA 2 (p1, p2), zoneB 1: zoneB only. With p1 gone (a victim), zoneA is back in.
    placed = [(labelled("p1"), "node1"), (labelled("p2"), "node2"), (labelled("p3"), "node3")]
    cycle, nodes = world(four_nodes(), placed)
    pod = labelled("mypod", spread=[constraint(ZONE)])
    plugin = PodTopologySpread()
    assert passing(plugin, cycle, pod, nodes) == ["node3", "node4"]
    without = replace(nodes, overlay=PodOverlay().removing(["default/p1"]))
    assert names(without, plugin.filter(cycle, pod, without, everything(nodes)).mask) == [
        "node1", "node2", "node3", "node4"
    ]  # fmt: skip
    # Every pod below priority 1 gone from node3 (p3 has priority 0): zoneB 0, zoneA 2.
    below = np.full(nodes.size, np.iinfo(np.int64).min, dtype=np.int64)
    below[nodes.row_of("node3")] = 1
    lower = replace(nodes, overlay=PodOverlay().below_priority(below))
    assert names(lower, plugin.filter(cycle, pod, lower, everything(nodes)).mask) == [
        "node3", "node4"
    ]  # fmt: skip
    # Two nominated matching pods in zoneB: zoneA 2, zoneB 3: zoneA only.
    nominated = [(nodes.row_of("node4"), labelled("n1")), (nodes.row_of("node3"), labelled("n2"))]
    added = replace(
        nodes, overlay=PodOverlay().adding((r, p) for r, p in nominated if r is not None)
    )
    assert names(added, plugin.filter(cycle, pod, added, everything(nodes)).mask) == [
        "node1", "node2"
    ]  # fmt: skip


def test_match_label_keys_already_merged_by_the_api_server_are_accepted() -> None:
    # kube 1.34+ API servers copy matchLabelKeys into the selector at creation: both at once
    # is a valid pod, not an error.
    new = {"foo": "bar", "rev": "2"}
    placed = [(labelled("o1", {"foo": "bar", "rev": "1"}), "node1"), (labelled("n1", new), "node3")]
    cycle, nodes = world(four_nodes(), placed)
    merged = {"matchLabels": {"foo": "bar"}, "matchExpressions": [
        {"key": "rev", "operator": "In", "values": ["2"]}]}  # fmt: skip
    pod = labelled("mypod", new, spread=[constraint(ZONE, selector=merged, matchLabelKeys=["rev"])])
    assert passing(PodTopologySpread(), cycle, pod, nodes) == ["node1", "node2"]

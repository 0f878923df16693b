"""The node table: per-event updates equal a fresh build, requested never goes negative,
snapshots never change, label masks equal a plain per-node evaluation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.core import Node, NodeSelector, Pod
from placement.pods.cluster.affinity import node_selector_mask, selector_terms_mask
from placement.pods.cluster.nodes import BASE_RESOURCES, NodeSnapshot, NodeTable, Taint
from placement.pods.cluster.requests import non_zero_requests, pod_requests
from placement.selectors import SelectorError

FAST = settings(max_examples=150, deadline=None)
NAMES = ("a", "b", "n-10", "n-2", "n.1")
KEYS = ("zone", "capacity", "rank")
VALUES = ("1", "2", "10", "spot", "x")


def node(
    name: str,
    labels: dict[str, str] | None = None,
    allocatable: dict[str, Any] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
) -> Node:
    return Node.model_validate(
        {
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints or [], "unschedulable": unschedulable},
            "status": {"allocatable": allocatable or {}},
        }
    )


def state(nodes: NodeSnapshot) -> dict[str, Any]:
    """Everything a snapshot says, keyed by names (independent of coding and column order)."""
    out: dict[str, Any] = {}
    for row, name in enumerate(nodes.names):
        labels = {k: c.value_at(row) for k, c in nodes.labels.items()}
        out[name] = {
            "allocatable": {
                r: int(nodes.allocatable[row, c]) for c, r in enumerate(nodes.resources)
            },
            "requested": {
                r: int(nodes.requested[row, c])
                for c, r in enumerate(nodes.resources)
                if nodes.requested[row, c]
            },
            "non_zero": nodes.non_zero_requested[row].tolist(),
            "unschedulable": bool(nodes.unschedulable[row]),
            "taints": nodes.taints.get(row, ()),
            "labels": {k: v for k, v in labels.items() if v is not None},
        }
    for entry in out.values():
        entry["allocatable"] = {r: v for r, v in entry["allocatable"].items() if v}
    return out


def test_rows_are_sorted_by_name_in_byte_order() -> None:
    table = NodeTable.build([node(n) for n in ("b", "a", "n.1", "n-10", "n-2")])
    assert table.snapshot().names == ("a", "b", "n-10", "n-2", "n.1")


def test_resources_start_with_the_base_ones_then_extended_as_they_appear() -> None:
    table = NodeTable.build([node("a", allocatable={"cpu": "4", "nvidia.com/gpu": "2"})])
    table.add_pod("ns/p", "a", {"example.com/fpga": 1, "pods": 1})
    nodes = table.snapshot()
    assert nodes.resources == (*BASE_RESOURCES, "nvidia.com/gpu", "example.com/fpga")
    assert nodes.allocatable.tolist() == [[4000, 0, 0, 0, 2, 0]]
    assert nodes.requested.tolist() == [[0, 0, 1, 0, 0, 1]]


def test_a_snapshot_never_changes_after_later_events() -> None:
    table = NodeTable.build([node("a", {"zone": "1"}, {"cpu": "2"})])
    before = table.snapshot()
    kept = state(before)
    table.add_pod("ns/p", "a", {"cpu": 500, "pods": 1})
    table.put_node(node("a", {"zone": "2"}, {"cpu": "8"}, unschedulable=True))
    table.put_node(node("b"))
    assert state(before) == kept
    assert not before.requested.flags.writeable
    assert table.snapshot() is table.snapshot()
    assert table.snapshot() is not before


def test_a_pod_event_writes_in_place_only_when_no_snapshot_nor_view_is_alive() -> None:
    table = NodeTable.build([node("a", {}, {"cpu": "2"}), node("b", {}, {"cpu": "2"})])
    first = table.snapshot()
    arrays = first.requested, first.non_zero_requested
    ids = tuple(id(a) for a in arrays)
    del first, arrays
    table.add_pod("ns/p", "a", {"cpu": 500, "pods": 1})  # nothing holds the old snapshot
    second = table.snapshot()
    assert (id(second.requested), id(second.non_zero_requested)) == ids  # written in place
    assert not second.requested.flags.writeable
    column = second.requested[:, 0]  # a view outlives its snapshot
    del second
    table.add_pod("ns/q", "b", {"cpu": 300, "pods": 1})
    assert column.tolist() == [500, 0]  # copied, not written under the view
    third = table.snapshot()
    assert id(third.requested) != ids[0] and third.requested[:, 0].tolist() == [500, 300]


def test_pods_seen_before_their_node_count_once_it_arrives() -> None:
    table = NodeTable()
    table.add_pod("ns/p", "a", {"cpu": 100, "pods": 1})
    table.put_node(node("a", allocatable={"cpu": "1"}))
    assert table.snapshot().requested[0, 0] == 100
    table.remove_node("a")
    table.put_node(node("a", allocatable={"cpu": "1"}))
    assert table.snapshot().requested[0, 0] == 100


def test_only_tainted_rows_carry_taints() -> None:
    spot = {"key": "spot", "value": "true", "effect": "NoSchedule"}
    table = NodeTable.build([node("a"), node("b", taints=[spot]), node("c")])
    assert dict(table.snapshot().taints) == {1: (Taint("spot", "true", "NoSchedule"),)}


# --- random event sequences ------------------------------------------------------------------

labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
alloc_st = st.dictionaries(
    st.sampled_from(("cpu", "memory", "pods", "nvidia.com/gpu")),
    st.integers(0, 64).map(str),
    max_size=3,
)
taints_st = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(("spot", "gpu")),
            "value": st.sampled_from(("", "true")),
            "effect": st.sampled_from(("NoSchedule", "NoExecute")),
        }
    ),
    max_size=2,
)
requests_st = st.dictionaries(
    st.sampled_from(("cpu", "memory", "nvidia.com/gpu", "example.com/fpga")),
    st.integers(0, 5000),
    max_size=3,
).map(lambda r: {**r, "pods": 1})
events_st = st.lists(
    st.one_of(
        st.tuples(
            st.just("put"), st.sampled_from(NAMES), labels_st, alloc_st, taints_st, st.booleans()
        ),
        st.tuples(st.just("remove"), st.sampled_from(NAMES)),
        st.tuples(
            st.just("add_pod"),
            st.sampled_from(("p1", "p2", "p3", "p4")),
            st.sampled_from(NAMES),
            requests_st,
        ),
        st.tuples(st.just("remove_pod"), st.sampled_from(("p1", "p2", "p3", "p4"))),
        st.tuples(st.just("snapshot")),
    ),
    max_size=30,
)


def replay(
    events: list[Any], after_each: Callable[[NodeTable], object] = lambda _: None
) -> tuple[NodeTable, dict[str, Node], dict[str, tuple[str, Any, Any]]]:
    table = NodeTable()
    nodes: dict[str, Node] = {}
    pods: dict[str, tuple[str, Any, Any]] = {}
    for event in events:
        if event[0] == "put":
            _, name, labels, alloc, taints, unschedulable = event
            nodes[name] = node(name, labels, alloc, taints, unschedulable)
            table.put_node(nodes[name])
        elif event[0] == "remove":
            nodes.pop(event[1], None)
            table.remove_node(event[1])
        elif event[0] == "add_pod":
            non_zero = {**event[3], "cpu": event[3].get("cpu", 0) + 100}
            pods[event[1]] = (event[2], event[3], non_zero)
            table.add_pod(event[1], event[2], event[3], non_zero)
        elif event[0] == "remove_pod":
            pods.pop(event[1], None)
            table.remove_pod(event[1])
        else:
            table.snapshot()
        after_each(table)
    return table, nodes, pods


@FAST
@given(events_st)
def test_updates_per_event_equal_a_fresh_build(events: list[Any]) -> None:
    table, nodes, pods = replay(events)
    fresh = NodeTable.build(nodes.values(), [(k, n, r, z) for k, (n, r, z) in pods.items()])
    assert state(table.snapshot()) == state(fresh.snapshot())
    assert table.snapshot().names == tuple(sorted(nodes))


@FAST
@given(events_st)
def test_snapshots_taken_between_events_keep_what_they_saw(events: list[Any]) -> None:
    taken: list[tuple[NodeSnapshot, dict[str, Any]]] = []
    table = replay(events, lambda t: taken.append((t.snapshot(), state(t.snapshot()))))[0]
    taken.append((table.snapshot(), state(table.snapshot())))
    for nodes, expected in taken:
        assert state(nodes) == expected


@FAST
@given(events_st)
def test_requested_never_goes_negative(events: list[Any]) -> None:
    table, _, _ = replay(events)
    assert (table.snapshot().requested >= 0).all()
    assert (table.snapshot().non_zero_requested >= 0).all()


# --- label masks -------------------------------------------------------------------------------


def plain_match(term: dict[str, Any], name: str, labels: dict[str, str]) -> bool:
    """One node against one term, written out as Kubernetes documents it."""
    if not term.get("matchExpressions") and not term.get("matchFields"):
        return False
    for req in term.get("matchExpressions", []):
        value, op, values = labels.get(req["key"]), req["operator"], req.get("values", [])
        if op == "In" and value not in values:
            return False
        if op == "NotIn" and value in values:
            return False
        if op == "Exists" and value is None:
            return False
        if op == "DoesNotExist" and value is not None:
            return False
        if op in ("Gt", "Lt"):
            if value is None or not value.lstrip("-").isdigit():
                return False
            if (int(value) > int(values[0])) != (op == "Gt") or int(value) == int(values[0]):
                return False
    for req in term.get("matchFields", []):
        if (name == req["values"][0]) != (req["operator"] == "In"):
            return False
    return True


requirement_st = st.one_of(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(KEYS),
            "operator": st.sampled_from(("In", "NotIn")),
            "values": st.lists(st.sampled_from((*VALUES, "absent")), min_size=1, max_size=3),
        }
    ),
    st.fixed_dictionaries(
        {"key": st.sampled_from(KEYS), "operator": st.sampled_from(("Exists", "DoesNotExist"))}
    ),
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(KEYS),
            "operator": st.sampled_from(("Gt", "Lt")),
            "values": st.sampled_from(("1", "2", "5", "-1")).map(lambda v: [v]),
        }
    ),
)
term_st = st.fixed_dictionaries(
    {"matchExpressions": st.lists(requirement_st, max_size=3)},
    optional={
        "matchFields": st.lists(
            st.fixed_dictionaries(
                {
                    "key": st.just("metadata.name"),
                    "operator": st.sampled_from(("In", "NotIn")),
                    "values": st.sampled_from(NAMES).map(lambda n: [n]),
                }
            ),
            max_size=1,
        )
    },
)


@FAST
@given(st.dictionaries(st.sampled_from(NAMES), labels_st), st.lists(term_st, max_size=3))
def test_node_affinity_masks_equal_a_plain_per_node_evaluation(
    labelled: dict[str, dict[str, str]], terms: list[dict[str, Any]]
) -> None:
    nodes = NodeTable.build([node(n, labels) for n, labels in labelled.items()]).snapshot()
    selector = NodeSelector.model_validate({"nodeSelectorTerms": terms})
    expected = [any(plain_match(t, name, labelled[name]) for t in terms) for name in nodes.names]
    assert selector_terms_mask(selector, nodes).tolist() == expected


@FAST
@given(
    st.dictionaries(st.sampled_from(NAMES), labels_st),
    st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2),
)
def test_node_selector_masks_equal_a_plain_per_node_evaluation(
    labelled: dict[str, dict[str, str]], selector: dict[str, str]
) -> None:
    nodes = NodeTable.build([node(n, labels) for n, labels in labelled.items()]).snapshot()
    expected = [selector.items() <= labelled[name].items() for name in nodes.names]
    assert node_selector_mask(selector, nodes).tolist() == expected


@pytest.mark.parametrize(
    "term",
    [
        pytest.param(
            {"key": "rank", "operator": "Gt", "values": ["1", "2"]}, id="gt-with-two-values"
        ),
        pytest.param(
            {"key": "rank", "operator": "Lt", "values": ["x"]}, id="lt-with-a-non-integer"
        ),
        pytest.param({"key": "rank", "operator": "In", "values": []}, id="in-without-values"),
    ],
)
def test_invalid_node_selector_requirements_raise(term: dict[str, Any]) -> None:
    nodes = NodeTable.build([node("a", {"rank": "3"})]).snapshot()
    selector = NodeSelector.model_validate({"nodeSelectorTerms": [{"matchExpressions": [term]}]})
    with pytest.raises(SelectorError):
        selector_terms_mask(selector, nodes)


def test_a_label_no_node_has_is_absent_everywhere() -> None:
    nodes = NodeTable.build([node("a"), node("b")]).snapshot()
    assert np.array_equal(nodes.label("zone").codes, [-1, -1])


def test_a_pod_without_requests_counts_the_scoring_defaults_only_for_scoring() -> None:
    pod = Pod.model_validate(
        {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}]}}
    )
    table = NodeTable.build([node("a", allocatable={"cpu": "1", "memory": "1Gi", "pods": "10"})])
    table.add_pod("ns/p", "a", pod_requests(pod), non_zero_requests(pod))
    nodes = table.snapshot()
    assert nodes.requested.tolist() == [[0, 0, 1, 0]]
    assert nodes.non_zero_requested.tolist() == [[100, 200 * 1024 * 1024]]
    table.remove_pod("ns/p")
    assert table.snapshot().non_zero_requested.tolist() == [[0, 0]]

"""NodeAffinity: nodeSelector AND required terms (ORed terms, ANDed expressions, matchFields),
operators In/NotIn/Exists/DoesNotExist/Gt/Lt, invalid selectors, PreFilter narrowing, and the
preferred-terms score normalized as kube's DefaultNormalizeScore."""

from __future__ import annotations

from typing import Any

import pytest

from placement.pods.framework.interface import PodCode
from plugins.pods import POD_PLUGINS
from plugins.pods.nodeaffinity.node_affinity import NodeAffinity
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

REQUIRED = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"

NODES = [
    node("n1", labels={"zone": "a", "cores": "8", "gpu": "yes"}),
    node("n2", labels={"zone": "b", "cores": "16"}),
    node("n3", labels={"zone": "a", "cores": "x"}),
    node("n4"),
]


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def fits(**spec: Any) -> list[str]:
    nodes = snapshot(NODES)
    plugin = NodeAffinity()
    p = pod(**spec)
    pre = plugin.pre_filter(cycle(), p, nodes)
    assert pre.status.ok, pre.status
    candidates = everything(nodes) if pre.nodes is None else pre.nodes
    result = plugin.filter(cycle(), p, nodes, candidates)
    for reason in result.all_reasons():
        assert reason.message == "node(s) didn't match Pod's node affinity/selector"
        assert not reason.resolvable
    return names(nodes, result.mask)


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        pytest.param({"matchExpressions": [expr("zone", "In", "a")]}, ["n1", "n3"], id="in"),
        pytest.param(
            {"matchExpressions": [expr("zone", "NotIn", "a")]}, ["n2", "n4"], id="notin-absent"
        ),
        pytest.param({"matchExpressions": [expr("gpu", "Exists")]}, ["n1"], id="exists"),
        pytest.param(
            {"matchExpressions": [expr("gpu", "DoesNotExist")]},
            ["n2", "n3", "n4"],
            id="doesnotexist",
        ),
        pytest.param(
            {"matchExpressions": [expr("cores", "Gt", "8")]}, ["n2"], id="gt-skips-non-int"
        ),
        pytest.param({"matchExpressions": [expr("cores", "Lt", "16")]}, ["n1"], id="lt"),
        pytest.param(
            {"matchExpressions": [expr("zone", "In", "a"), expr("cores", "Lt", "100")]},
            ["n1"],
            id="anded",
        ),
        pytest.param({"matchFields": [expr("metadata.name", "In", "n2")]}, ["n2"], id="fields"),
        pytest.param(
            {"matchFields": [expr("metadata.name", "NotIn", "n2")]},
            ["n1", "n3", "n4"],
            id="fields-not",
        ),
        pytest.param({}, [], id="empty-term-matches-nothing"),
    ],
)
def test_required_term_operators(term: dict[str, Any], expected: list[str]) -> None:
    assert fits(affinity=required(term)) == expected


def test_terms_are_ored_and_node_selector_is_anded() -> None:
    affinity = required(
        {"matchExpressions": [expr("zone", "In", "b")]},
        {"matchExpressions": [expr("gpu", "Exists")]},
    )
    assert fits(affinity=affinity) == ["n1", "n2"]
    assert fits(affinity=affinity, nodeSelector={"zone": "a"}) == ["n1"]
    assert fits(nodeSelector={"zone": "a", "cores": "x"}) == ["n3"]


def test_pod_without_selector_skips_and_keeps_every_node() -> None:
    nodes = snapshot(NODES)
    assert NodeAffinity().pre_filter(cycle(), pod(), nodes).status.code == PodCode.SKIP
    assert fits() == ["n1", "n2", "n3", "n4"]


def test_prefilter_narrows_to_names_pinned_by_every_term() -> None:
    nodes = snapshot(NODES)
    affinity = required(
        {"matchFields": [expr("metadata.name", "In", "n1")]},
        {
            "matchFields": [expr("metadata.name", "In", "n3")],
            "matchExpressions": [expr("zone", "In", "a")],
        },
    )
    pre = NodeAffinity().pre_filter(cycle(), pod(affinity=affinity), nodes)
    assert pre.nodes is not None and names(nodes, pre.nodes) == ["n1", "n3"]
    loose = required(
        {"matchFields": [expr("metadata.name", "In", "n1")]},
        {"matchExpressions": [expr("gpu", "Exists")]},
    )
    assert NodeAffinity().pre_filter(cycle(), pod(affinity=loose), nodes).nodes is None


@pytest.mark.parametrize(
    ("affinity", "field"),
    [
        pytest.param(
            required({"matchExpressions": [expr("zone", "In")]}),
            f"{REQUIRED}.nodeSelectorTerms[0]: values",
            id="in-without-values",
        ),
        pytest.param(
            required(
                {"matchExpressions": [expr("zone", "In", "a")]},
                {"matchExpressions": [expr("cores", "Gt", "x")]},
            ),
            f"{REQUIRED}.nodeSelectorTerms[1]: values",
            id="gt-not-int",
        ),
        pytest.param(
            required({"matchFields": [expr("metadata.labels", "In", "a")]}),
            f"{REQUIRED}.nodeSelectorTerms[0]: matchFields",
            id="field-key",
        ),
        pytest.param(
            {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 1,
                            "preference": {"matchExpressions": [expr("gpu", "Exists", "x")]},
                        }
                    ]
                }
            },
            f"{PREFERRED}[0].preference: values",
            id="preferred",
        ),
    ],
)
def test_invalid_selectors_are_unresolvable_naming_the_field(
    affinity: dict[str, Any], field: str
) -> None:
    status = NodeAffinity().pre_filter(cycle(), pod(affinity=affinity), snapshot(NODES)).status
    assert status.code == PodCode.UNRESOLVABLE
    assert status.message.startswith(field), status.message


def test_score_sums_matching_preferred_weights_normalized_to_100() -> None:
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 2, "preference": {"matchExpressions": [expr("zone", "In", "a")]}},
                {"weight": 5, "preference": {"matchExpressions": [expr("gpu", "Exists")]}},
                {"weight": 0, "preference": {"matchExpressions": [expr("zone", "In", "b")]}},
            ]
        }
    }
    nodes = snapshot(NODES)
    rows = all_rows(nodes)
    scores = NodeAffinity().score(cycle(), pod(affinity=affinity), nodes, rows)
    # n1: 2 + 5 = 7 -> 100; n3: 2 -> 2 * 100 // 7 = 28; n2 and n4: 0.
    assert by_name(nodes, rows, scores) == {"n1": 100, "n2": 0, "n3": 28, "n4": 0}
    assert NodeAffinity().score(cycle(), pod(affinity=affinity), nodes, rows[2:]).tolist() == [
        100,
        0,
    ]
    assert NodeAffinity().score(cycle(), pod(), nodes, rows).tolist() == [0, 0, 0, 0]


def test_added_affinity_is_enforced_on_every_pod_with_its_own_reason() -> None:
    plugin = POD_PLUGINS["NodeAffinity"](
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "a")]}]
                }
            }
        }
    )
    assert isinstance(plugin, NodeAffinity)
    nodes = snapshot(NODES)
    p = pod(nodeSelector={"gpu": "yes"})
    assert plugin.pre_filter(cycle(), p, nodes).status.ok
    result = plugin.filter(cycle(), p, nodes, everything(nodes))
    assert names(nodes, result.mask) == ["n1"]
    assert [(r.message, names(nodes, r.rows)) for r in result.all_reasons()] == [
        ("node(s) didn't match scheduler-enforced node affinity", ["n2", "n4"]),
        ("node(s) didn't match Pod's node affinity/selector", ["n3"]),
    ]


def test_bad_added_affinity_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"^addedAffinity"):
        POD_PLUGINS["NodeAffinity"](
            {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": 3}}
        )
    with pytest.raises(ValueError, match=r"^nope: unknown field"):
        POD_PLUGINS["NodeAffinity"]({"nope": 1})


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        pytest.param(
            expr("cores", "Gt", "x"),
            'values[0]: Invalid value: "x": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
            id="gt-not-int",
        ),
        pytest.param(
            expr("cores", "Lt"),
            "values: Invalid value: null: for 'Gt', 'Lt' operators, exactly one value is required",
            id="lt-without-value",
        ),
        pytest.param(
            expr("zone", "In"),
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
            id="in-without-values",
        ),
    ],
)
def test_invalid_requirement_messages_are_labels_new_requirement_words(
    requirement: dict[str, Any], message: str
) -> None:
    # kube-scheduler builds node selectors with labels.NewRequirement: its field errors, with
    # the bad value as Go prints it (null for no values, a quoted string).
    affinity = required({"matchExpressions": [requirement]})
    status = NodeAffinity().pre_filter(cycle(), pod(affinity=affinity), snapshot(NODES)).status
    assert status.message == f"{REQUIRED}.nodeSelectorTerms[0]: {message}"

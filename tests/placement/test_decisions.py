"""Decision groups and PlacementDecision paging (OCM's rules: docs/hub-admins.md, 'Decision
groups and PlacementDecisions')."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from apis.placements import (
    DECISION_GROUP_INDEX_LABEL,
    DECISION_GROUP_NAME_LABEL,
    PLACEMENT_LABEL,
)
from placement.decisions import (
    MAX_DECISIONS_PER_OBJECT,
    DecisionGroup,
    cluster_decision_groups,
    group_length,
    paginate,
)
from placement.framework import Code
from placement.rows import decision_row
from placement.snapshot.fleet_snapshot import FleetSnapshot
from placement.testing import cluster, placement, snapshot


@pytest.mark.parametrize(
    ("value", "total", "expected"),
    [
        pytest.param("7%", 100, 8, id="float-quirk-ceil-7/100*100-is-8"),
        pytest.param("25%", 10, 3, id="percent-rounds-up"),
        pytest.param("100%", 10, 10, id="all"),
        pytest.param("1%", 10, 1, id="small-percent-is-at-least-one"),
        pytest.param(3, 10, 3, id="int"),
        pytest.param(30, 10, 10, id="int-above-total-means-one-group"),
        pytest.param(0, 10, 10, id="zero-means-one-group"),
        pytest.param("50%", 0, 0, id="nothing-selected"),
    ],
)
def test_group_length(value: int | str, total: int, expected: int) -> None:
    length, status = group_length(value, total)
    assert (length, status.code) == (expected, Code.SUCCESS)


def test_non_percentage_string_is_misconfigured() -> None:
    _, status = group_length("7", 10)
    assert status.code == Code.MISCONFIGURED
    assert status.message == "7 invalid type: string is not a percentage"


FLEET = snapshot(
    [
        cluster("a1", labels={"zone": "a", "canary": "yes"}),
        cluster("a2", labels={"zone": "a"}),
        cluster("b1", labels={"zone": "b", "canary": "yes"}),
        cluster("b2", labels={"zone": "b"}),
        cluster("c1", labels={"zone": "c"}),
    ]
)


def groups(
    strategy: dict[str, Any], selected: list[str], fleet: FleetSnapshot = FLEET
) -> list[DecisionGroup]:
    p = placement("apps", "web", decisionStrategy={"groupStrategy": strategy})
    rows = np.asarray([fleet.index[n] for n in selected], dtype=np.intp)
    result, status = cluster_decision_groups(p, fleet, rows)
    assert status.code == Code.SUCCESS, status
    return result


def test_without_strategy_all_clusters_form_one_unnamed_group_sorted_by_name() -> None:
    p = placement("apps", "web")
    rows = np.asarray([4, 0, 2], dtype=np.intp)
    result, _ = cluster_decision_groups(p, FLEET, rows)
    assert result == [DecisionGroup("", ("a1", "b1", "c1"))]


def test_int_clusters_per_group_cuts_chunks_by_name() -> None:
    result = groups({"clustersPerDecisionGroup": 2}, ["c1", "b2", "a1", "a2", "b1"])
    assert result == [
        DecisionGroup("", ("a1", "a2")),
        DecisionGroup("", ("b1", "b2")),
        DecisionGroup("", ("c1",)),
    ]


def test_percent_clusters_per_group() -> None:
    result = groups({"clustersPerDecisionGroup": "40%"}, ["a1", "a2", "b1", "b2", "c1"])
    assert [g.clusters for g in result] == [("a1", "a2"), ("b1", "b2"), ("c1",)]


def test_named_groups_first_then_the_rest_unnamed_and_first_matching_group_wins() -> None:
    strategy = {
        "clustersPerDecisionGroup": 1,
        "decisionGroups": [
            {
                "groupName": "canary",
                "groupClusterSelector": {"labelSelector": {"matchLabels": {"canary": "yes"}}},
            },
            {
                "groupName": "zone-a",
                "groupClusterSelector": {"labelSelector": {"matchLabels": {"zone": "a"}}},
            },
            {
                "groupName": "zone-x",
                "groupClusterSelector": {"labelSelector": {"matchLabels": {"zone": "x"}}},
            },
        ],
    }
    result = groups(strategy, ["a1", "a2", "b1", "b2", "c1"])
    assert result == [
        DecisionGroup("canary", ("a1",)),
        DecisionGroup("canary", ("b1",)),
        DecisionGroup("zone-a", ("a2",)),
        DecisionGroup("", ("b2",)),
        DecisionGroup("", ("c1",)),
    ]


def test_group_selector_only_takes_selected_clusters() -> None:
    strategy = {
        "decisionGroups": [
            {
                "groupName": "zone-a",
                "groupClusterSelector": {"labelSelector": {"matchLabels": {"zone": "a"}}},
            }
        ]
    }
    assert groups(strategy, ["a2", "c1"]) == [
        DecisionGroup("zone-a", ("a2",)),
        DecisionGroup("", ("c1",)),
    ]


def test_group_by_claim_selector() -> None:
    fleet = snapshot([cluster("x", claims={"tier": "gold"}), cluster("y")])
    strategy = {
        "decisionGroups": [
            {
                "groupName": "gold",
                "groupClusterSelector": {
                    "claimSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}
                },
            }
        ]
    }
    assert groups(strategy, ["x", "y"], fleet) == [
        DecisionGroup("gold", ("x",)),
        DecisionGroup("", ("y",)),
    ]


def test_empty_selection_gives_one_empty_group() -> None:
    assert groups({"clustersPerDecisionGroup": 2}, []) == [DecisionGroup("", ())]


def test_bad_group_selector_is_misconfigured() -> None:
    strategy = {
        "decisionGroups": [
            {
                "groupName": "bad",
                "groupClusterSelector": {
                    "labelSelector": {
                        "matchExpressions": [{"key": "zone", "operator": "In", "values": []}]
                    }
                },
            }
        ]
    }
    p = placement("apps", "web", decisionStrategy={"groupStrategy": strategy})
    _, status = cluster_decision_groups(p, FLEET, np.asarray([0], dtype=np.intp))
    assert status.code == Code.MISCONFIGURED


def test_101_clusters_make_two_placement_decisions_with_labels_and_owner() -> None:
    names = tuple(sorted((f"c{i:03d}" for i in range(101)), key=str.encode))
    web = placement("apps", "web", uid="uid-1")
    paged = paginate(web, [DecisionGroup("", names)])
    assert paged.names == ["web-decision-1", "web-decision-2"]
    first, second = paged.decisions
    assert first.status is not None and second.status is not None
    assert len(first.status.decisions) == MAX_DECISIONS_PER_OBJECT
    assert [d.cluster_name for d in second.status.decisions] == ["c100"]
    assert all(d.reason == "" for d in first.status.decisions)
    for pd in paged.decisions:
        assert pd.namespace == "apps"
        assert pd.metadata.labels == {
            PLACEMENT_LABEL: "web",
            DECISION_GROUP_NAME_LABEL: "",
            DECISION_GROUP_INDEX_LABEL: "0",
        }
        (owner,) = pd.metadata.owner_references or []
        assert (owner.kind, owner.name, owner.uid, owner.controller, owner.api_version) == (
            "Placement",
            "web",
            "uid-1",
            True,
            "cluster.open-cluster-management.io/v1beta1",
        )
    (group,) = paged.groups
    assert (group.decision_group_index, group.decision_group_name, group.cluster_count) == (
        0,
        "",
        101,
    )
    assert group.decisions == ["web-decision-1", "web-decision-2"]


def test_decision_numbers_run_across_groups_and_an_empty_group_still_gets_an_object() -> None:
    paged = paginate(
        placement("apps", "web"),
        [DecisionGroup("canary", ("a",)), DecisionGroup("", ("b", "c"))],
    )
    assert paged.names == ["web-decision-1", "web-decision-2"]
    assert [pd.metadata.labels for pd in paged.decisions] == [
        {
            PLACEMENT_LABEL: "web",
            DECISION_GROUP_NAME_LABEL: "canary",
            DECISION_GROUP_INDEX_LABEL: "0",
        },
        {PLACEMENT_LABEL: "web", DECISION_GROUP_NAME_LABEL: "", DECISION_GROUP_INDEX_LABEL: "1"},
    ]
    empty = paginate(placement("apps", "web"), [DecisionGroup("", ())])
    assert empty.names == ["web-decision-1"]
    assert empty.decisions[0].status is not None
    assert empty.decisions[0].status.decisions == []


def test_paged_rows_are_the_rows_of_the_paged_models() -> None:
    """The writer compares and writes the rows; the models are made from them on demand. Both
    must say the same: the rows are what `decision_row` keeps of each model, and each model
    goes on the wire with exactly the fields a PD is created with."""
    names = tuple(sorted((f"c{i:03d}" for i in range(150)), key=str.encode))
    paged = paginate(
        placement("apps", "web", uid="uid-1"),
        [DecisionGroup("canary", names[:1]), DecisionGroup("", names[1:]), DecisionGroup("", ())],
    )
    assert paged.names == [f"web-decision-{k}" for k in (1, 2, 3, 4)]
    assert paged.rows == tuple(decision_row(pd) for pd in paged.decisions)
    assert [row.clusters for row in paged.rows] == [names[:1], names[1:101], names[101:], ()]
    assert all(row.has_status and row.details is None for row in paged.rows)
    assert paged.decisions[1].to_wire()["metadata"] == {
        "name": "web-decision-2",
        "namespace": "apps",
        "labels": {
            PLACEMENT_LABEL: "web",
            DECISION_GROUP_NAME_LABEL: "",
            DECISION_GROUP_INDEX_LABEL: "1",
        },
        "ownerReferences": [
            {
                "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                "kind": "Placement",
                "name": "web",
                "uid": "uid-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert paged.decisions is paged.decisions  # made once

"""`ClusterRow` and `ScoreRow`: what the controller keeps of a cluster or a score instead of the
model. They hold the features a snapshot shows, compare by those features only, and share
repeated strings and tuples between clusters."""

from __future__ import annotations

from typing import Any

import pytest

from apis.cluster import ManagedCluster
from apis.placements import PlacementDecision
from placement.rows import cluster_row, decision_row, score_row
from placement.testing import NOW, cluster, decision, score, taint


def versioned(obj: Any, version: str, **meta: Any) -> Any:
    return obj.model_copy(
        update={"metadata": obj.metadata.model_copy(update={"resource_version": version, **meta})}
    )


BASE = cluster(
    "c1",
    labels={"env": "prod", "zone": "z1"},
    claims=[("region", "eu"), ("region", "us")],
    cpu="4",
    memory="8Gi",
    taints=[taint("gpu", "PreferNoSelect", "yes", NOW)],
)


def test_a_row_holds_the_features_the_snapshot_shows() -> None:
    row = cluster_row(versioned(BASE, "12"))
    assert (row.name, row.resource_version) == ("c1", "12")
    assert dict(row.labels) == {"env": "prod", "zone": "z1"}
    assert dict(row.claims) == {"region": "us"}  # later duplicates win, as in build()
    assert not row.deleting
    assert row.allocatable == row.capacity == (4.0, 8.0 * 2**30)
    assert row.taints == (("gpu", "yes", "PreferNoSelect", NOW),)


def test_rows_of_versions_that_differ_in_nothing_the_scheduler_reads_are_equal() -> None:
    heartbeat = ManagedCluster.model_validate(
        {
            **versioned(BASE, "13").to_wire(),
            "status": {
                **BASE.to_wire()["status"],
                "conditions": [
                    {
                        "type": "ManagedClusterConditionAvailable",
                        "status": "True",
                        "reason": "Heartbeat",
                        "message": "",
                        "lastTransitionTime": "2026-11-22T12:00:00Z",
                    }
                ],
            },
        }
    )
    assert cluster_row(heartbeat) == cluster_row(versioned(BASE, "12"))


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param(cluster("c1", labels={"env": "dev", "zone": "z1"}), id="label"),
        pytest.param(
            cluster("c1", labels={"env": "prod", "zone": "z1"}, claims={"r": "x"}), id="claim"
        ),
        pytest.param(cluster("c1", labels={"env": "prod", "zone": "z1"}, cpu="5"), id="cpu"),
        pytest.param(
            cluster("c1", labels={"env": "prod", "zone": "z1"}, capacity={"cpu": "4"}),
            id="capacity-only",
        ),
        pytest.param(
            cluster("c1", labels={"env": "prod", "zone": "z1"}, taints=[taint("gpu")]),
            id="taint",
        ),
        pytest.param(
            cluster("c1", labels={"env": "prod", "zone": "z1"}, deleting=True), id="deleting"
        ),
    ],
)
def test_a_change_the_scheduler_reads_makes_rows_differ(changed: ManagedCluster) -> None:
    plain = cluster("c1", labels={"env": "prod", "zone": "z1"})
    assert cluster_row(changed) != cluster_row(plain)


def test_rows_share_repeated_label_strings_and_resource_tuples() -> None:
    one = cluster_row(cluster("a", labels={"env": "prod"}, cpu="4"))
    # Strings that are equal but distinct objects, as two watch events would parse them.
    two = cluster_row(cluster("b", labels={"".join(["e", "nv"]): "".join(["pr", "od"])}, cpu="4"))
    (key1, value1), (key2, value2) = [*one.labels.items(), *two.labels.items()]
    assert key1 is key2 and value1 is value2
    assert one.allocatable is one.capacity  # equal: one tuple
    bare = cluster_row(cluster("c"))
    assert bare.labels is bare.claims  # the shared empty mapping


def test_a_score_row_keeps_valid_until_and_the_last_value_of_each_name() -> None:
    row = score_row(
        versioned(score("c1", "usage", [("cpu", 3), ("cpu", 5), ("mem", -2)], NOW), "4")
    )
    assert (row.namespace, row.name, row.resource_version) == ("c1", "usage", "4")
    assert row.valid_until == NOW.timestamp()
    assert row.values == (("cpu", 5), ("mem", -2))
    assert row == score_row(score("c1", "usage", {"cpu": 5, "mem": -2}, NOW))
    assert row != score_row(score("c1", "usage", {"cpu": 5, "mem": -2}))


def test_a_decision_row_keeps_what_the_writer_compares_and_writes_back() -> None:
    owner = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "name": "web",
        "uid": "p-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    wire = decision("apps", "web", ["c2", "c1"], 3).to_wire()
    wire["metadata"].update(uid="u-1", resourceVersion="42", ownerReferences=[owner])
    pd = PlacementDecision.model_validate(wire)
    row = decision_row(pd)
    assert (row.key, row.placement_name, row.uid, row.resource_version) == (
        "apps/web-decision-3",
        "web",
        "u-1",
        "42",
    )
    assert row.clusters == ("c2", "c1")  # the order as written
    assert row.details is None  # every reason empty, no score: nothing more to keep
    assert row.wire_decisions() == [
        {"clusterName": "c2", "reason": ""},
        {"clusterName": "c1", "reason": ""},
    ]
    assert row.owners == (owner,)


def test_a_decision_row_keeps_reasons_and_scores_and_tells_no_status_from_an_empty_one() -> None:
    wire = decision("apps", "web", ["c1", "c2"]).to_wire()
    wire["status"]["decisions"][1].update(reason="picked", score=7)
    row = decision_row(PlacementDecision.model_validate(wire))
    assert row.entries() == (("c1", "", None), ("c2", "picked", 7))
    assert row.wire_decisions()[1] == {"clusterName": "c2", "reason": "picked", "score": 7}
    bare = decision_row(PlacementDecision.model_validate({"metadata": wire["metadata"]}))
    empty = decision_row(decision("apps", "web", []))
    assert (bare.has_status, bare.entries()) == (False, None)
    assert (empty.has_status, empty.entries()) == (True, ())


def test_decision_rows_share_cluster_names_and_labels_strings() -> None:
    one = decision_row(PlacementDecision.model_validate(decision("a", "web", ["c1"]).to_wire()))
    two = decision_row(PlacementDecision.model_validate(decision("b", "api", ["c1"]).to_wire()))
    assert one.clusters[0] is two.clusters[0]
    assert next(iter(one.labels)) is next(iter(two.labels))

"""`FleetSnapshot`: rows sorted by name, coded columns, resources, taints, decisions."""

from __future__ import annotations

import numpy as np

from placement.testing import cluster, decision, snapshot, taint


def test_rows_are_clusters_sorted_by_name_in_byte_order() -> None:
    fleet = snapshot([cluster("b"), cluster("a-1"), cluster("0b"), cluster("a1")])
    assert fleet.names == ("0b", "a-1", "a1", "b")
    assert fleet.index == {"0b": 0, "a-1": 1, "a1": 2, "b": 3}


def test_labels_and_claims_are_coded_columns_with_absent_rows() -> None:
    fleet = snapshot([cluster("a", labels={"env": "prod"}, claims={"rack": "r1"}), cluster("b")])
    assert [fleet.label("env").value_at(r) for r in range(2)] == ["prod", None]
    assert [fleet.claim("rack").value_at(r) for r in range(2)] == ["r1", None]
    assert fleet.label("missing").codes.tolist() == [-1, -1]


def test_resources_are_floats_with_nan_where_missing() -> None:
    fleet = snapshot([cluster("a", cpu="500m", memory="1Gi"), cluster("b")])
    assert fleet.allocatable["cpu"][0] == 0.5
    assert fleet.capacity["memory"][0] == 2**30
    assert np.isnan(fleet.allocatable["cpu"][1])


def test_taints_table_lists_only_tainted_rows() -> None:
    fleet = snapshot([cluster("b", taints=[taint("k", "NoSelect", "v")]), cluster("a")])
    (row,) = fleet.taints
    assert (row.row, row.key, row.value, row.effect) == (1, "k", "v", "NoSelect")


def test_deleting_clusters_are_flagged() -> None:
    fleet = snapshot([cluster("a", deleting=True), cluster("b")])
    assert fleet.deleting.tolist() == [True, False]


def test_with_decisions_replaces_one_placements_decisions() -> None:
    fleet = snapshot(
        [cluster("a"), cluster("b"), decision("apps", "web", ["a"]), decision("apps", "db", ["a"])]
    )
    moved = fleet.with_decisions("apps", "web", ["b", "gone"])
    assert moved.decided_mask("apps", "web").tolist() == [False, True]
    assert moved.decisions.totals.tolist() == [1, 1, 1]
    assert moved.decisions.extra_names == ("gone",)
    # the original is untouched
    assert fleet.decided_mask("apps", "web").tolist() == [True, False]
    assert fleet.decisions.totals.tolist() == [2, 0]

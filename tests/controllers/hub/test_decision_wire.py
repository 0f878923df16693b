"""A PlacementDecision's row made from its JSON is the row of its model, for every document in
the plain shape; any other document is left to the model (None), which rejects what is invalid."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apis.errors import ModelError
from apis.placements import PlacementDecision
from apis.registry import parse_as
from controllers.hub.decision_wire import decision_row_of_wire, row_of
from placement.rows import decision_row

OWNER = {
    "apiVersion": "cluster.open-cluster-management.io/v1beta1",
    "kind": "Placement",
    "name": "p",
    "uid": "u-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def pd(**parts: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "PlacementDecision",
        "metadata": {
            "name": "p-decision-1",
            "namespace": "ns",
            "uid": "u-2",
            "resourceVersion": "17",
            "generation": 1,
            "creationTimestamp": "2026-11-27T21:00:00Z",
            "labels": {"cluster.open-cluster-management.io/placement": "p"},
            "ownerReferences": [OWNER],
        },
    }
    for key, value in parts.items():
        if key in ("labels", "ownerReferences", "uid", "resourceVersion"):
            if value is ...:
                del doc["metadata"][key]
            else:
                doc["metadata"][key] = value
        else:
            doc[key] = value
    return doc


PLAIN = [
    pd(),
    pd(status={}),
    pd(status=None),
    pd(status={"decisions": []}),
    pd(status={"decisions": [{"clusterName": "c1", "reason": ""}]}),
    pd(
        status={
            "decisions": [
                {"clusterName": "c1", "reason": "", "score": 5},
                {"clusterName": "c2", "reason": "why"},
            ]
        }
    ),
    pd(labels=..., ownerReferences=...),
    pd(labels={}, ownerReferences=[]),
    pd(ownerReferences=[{**OWNER, "controller": None, "blockOwnerDeletion": False}]),
    pd(uid=..., resourceVersion=...),
    pd(status={"decisions": [{"clusterName": "c1", "reason": ""}], "extra": 1}),
]


@pytest.mark.parametrize("doc", PLAIN)
def test_the_row_of_the_json_is_the_row_of_the_model(doc: dict[str, Any]) -> None:
    expected = decision_row(parse_as(PlacementDecision, copy.deepcopy(doc)))
    row = decision_row_of_wire(copy.deepcopy(doc))
    assert row == expected
    assert row is not None and row.wire_decisions() == expected.wire_decisions()
    assert dict(row.labels) == dict(expected.labels)
    assert [list(ref) for ref in row.owners] == [list(ref) for ref in expected.owners]


ODD = [
    pd(status={"decisions": [{"clusterName": "c1"}]}),  # no reason: invalid
    pd(status={"decisions": [{"clusterName": "c1", "reason": "", "score": "5"}]}),
    pd(status={"decisions": [{"clusterName": "c1", "reason": "", "score": 2**31}]}),
    pd(status={"decisions": [{"clusterName": "c1", "reason": "", "score": True}]}),
    pd(status={"decisions": [{"clusterName": "c1", "reason": "", "other": 1}]}),
    pd(status={"decisions": None}),
    pd(status=[]),
    pd(ownerReferences=[{**OWNER, "extra": "x"}]),
    pd(ownerReferences=[{**OWNER, "controller": "yes"}]),
    pd(ownerReferences=[{k: v for k, v in OWNER.items() if k != "uid"}]),
    pd(labels={"a": 1}),
    pd(uid=5),
    {"metadata": None},
]


@pytest.mark.parametrize("doc", ODD)
def test_any_other_shape_is_left_to_the_model(doc: dict[str, Any]) -> None:
    assert decision_row_of_wire(copy.deepcopy(doc)) is None
    try:
        model = parse_as(PlacementDecision, copy.deepcopy(doc))
    except ModelError:
        return  # invalid: the model rejects it, as the gateway always did
    assert row_of(model) == decision_row(model)  # valid after coercion: read through the model


def test_a_row_is_its_own_row() -> None:
    row = decision_row_of_wire(pd())
    assert row is not None and row_of(row) is row

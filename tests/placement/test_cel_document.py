"""`managedCluster` as OCM's typed conversion gives it (ToUnstructured of the Go struct): the
fields without omitempty, the CRD default, canonical quantities, unknown fields dropped; and
the controller's packed rows give the same document as `simulate`."""

from __future__ import annotations

from typing import Any

import pytest

from apis.cluster import ManagedCluster
from placement.cel import compile_selector
from placement.index.documents import document_row, unpack
from placement.snapshot.fleet_snapshot import unstructured


def _document(wire: dict[str, Any]) -> dict[str, Any]:
    return unstructured(ManagedCluster.model_validate(wire))


BARE = _document({"metadata": {"name": "bare"}})
FULL = _document(
    {
        "metadata": {
            "name": "full",
            "labels": {},
            "annotations": {"a": "1"},
            "creationTimestamp": "2026-01-02T03:04:05Z",
            "resourceVersion": "7",
        },
        "spec": {
            "hubAcceptsClient": True,
            "leaseDurationSeconds": 0,
            "taints": [{"key": "k", "effect": "NoSelect"}],
        },
        "status": {
            "conditions": [],
            "allocatable": {"cpu": 4, "memory": "1024Mi"},
            "capacity": {"cpu": "1.5"},
            "version": {"kubernetes": "v1.30.1"},
            "clusterClaims": [{"name": "empty", "value": ""}, {"name": "id", "value": "x"}],
            "somethingNew": {"x": 1},
        },
    }
)


def test_a_bare_cluster_has_go_zero_values_and_the_crd_default() -> None:
    assert BARE["metadata"] == {"name": "bare", "creationTimestamp": None}
    assert BARE["spec"] == {"hubAcceptsClient": False, "leaseDurationSeconds": 60}
    assert BARE["status"] == {"conditions": None, "version": {}}


def test_omitempty_fields_drop_when_empty_and_unknown_fields_go() -> None:
    assert "labels" not in FULL["metadata"]  # labels: {} is omitempty
    assert "leaseDurationSeconds" not in FULL["spec"]  # an explicit 0 stays 0, then omitted
    assert FULL["spec"]["taints"] == [{"key": "k", "effect": "NoSelect", "timeAdded": None}]
    assert FULL["status"]["conditions"] == []  # present and empty is kept (no omitempty)
    assert FULL["status"]["clusterClaims"] == [{"name": "empty"}, {"name": "id", "value": "x"}]
    assert "somethingNew" not in FULL["status"]


def test_quantities_are_canonical() -> None:
    assert FULL["status"]["allocatable"] == {"cpu": "4", "memory": "1Gi"}
    assert FULL["status"]["capacity"] == {"cpu": "1500m"}


@pytest.mark.parametrize(
    ("expression", "bare", "full"),
    [
        ("has(managedCluster.status.version)", True, True),
        ("has(managedCluster.metadata.labels)", False, False),
        ("managedCluster.spec.hubAcceptsClient", False, True),
        ("managedCluster.spec.?leaseDurationSeconds.orValue(0) == 60", True, False),
        ("managedCluster.status.conditions == null", True, False),
        (
            'managedCluster.status.clusterClaims.exists(c, !has(c.value) && c.name == "empty")',
            False,
            True,
        ),
        ("managedCluster.metadata.creationTimestamp == null", True, False),
    ],
)
def test_expressions_see_the_go_shape(expression: str, bare: bool, full: bool) -> None:
    selector = compile_selector([expression])
    assert (selector.evaluate(BARE).matched, selector.evaluate(FULL).matched) == (bare, full)


def test_the_controller_row_unpacks_to_the_same_document() -> None:
    cluster = ManagedCluster.model_validate(
        {
            "metadata": {"name": "c", "resourceVersion": "12", "labels": {"a": "b"}},
            "status": {"allocatable": {"cpu": "1.5"}, "version": {"kubernetes": "v1.31.0"}},
        }
    )
    assert unpack(document_row(cluster)) == unstructured(cluster)

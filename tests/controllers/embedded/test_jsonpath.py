"""The printer columns' JSONPath subset and the cells it makes, and kubectl's ages."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controllers.embedded.jsonpath import JsonPathError, cell, values
from controllers.embedded.printers import human_duration

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)
DOC: dict[str, Any] = {
    "metadata": {
        "creationTimestamp": "2026-11-22T11:55:00Z",
        "labels": {"cluster.open-cluster-management.io/placement": "web"},
    },
    "spec": {"hubAcceptsClient": True, "max": {"memory": "8Gi", "cpu": "4"}, "sets": ["a", "b"]},
    "status": {
        "numberOfSelectedClusters": 3,
        "conditions": [
            {"type": "Joined", "status": "True"},
            {"type": "PlacementSatisfied", "status": "False", "reason": "NoManagedClusterMatched"},
        ],
    },
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param(".spec.hubAcceptsClient", [True], id="field"),
        pytest.param(".spec.missing.deeper", [], id="missing"),
        pytest.param(
            r".metadata.labels.cluster\.open-cluster-management\.io/placement",
            ["web"],
            id="escaped-dots",
        ),
        pytest.param(
            '.status.conditions[?(@.type=="PlacementSatisfied")].reason',
            ["NoManagedClusterMatched"],
            id="filter",
        ),
        pytest.param(".status.conditions[?(@.type!='Joined')].status", ["False"], id="not-equal"),
        pytest.param(".status.conditions[*].type", ["Joined", "PlacementSatisfied"], id="all"),
        pytest.param(".spec.sets[-1]", ["b"], id="index"),
        pytest.param("{.spec.sets[0]}", ["a"], id="braces"),
    ],
)
def test_values_follow_the_path(path: str, expected: list[Any]) -> None:
    assert values(DOC, path) == expected


def test_an_unsupported_path_is_an_error() -> None:
    with pytest.raises(JsonPathError):
        values(DOC, ".spec.sets[1:2]")


@pytest.mark.parametrize(
    ("path", "type_", "expected"),
    [
        pytest.param(".status.numberOfSelectedClusters", "integer", 3, id="integer"),
        pytest.param(".spec.hubAcceptsClient", "boolean", True, id="boolean"),
        pytest.param(".spec.max", "string", '{"memory":"8Gi","cpu":"4"}', id="map-in-a-string"),
        pytest.param(".spec.max", "integer", "map[cpu:4 memory:8Gi]", id="wrong-type-go-form"),
        pytest.param(".metadata.creationTimestamp", "date", "5m", id="date-is-an-age"),
        pytest.param(".status.nothing", "string", None, id="nothing"),
    ],
)
def test_cells_take_the_columns_type(path: str, type_: str, expected: Any) -> None:
    assert cell(DOC, path, type_, NOW) == expected


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        pytest.param(-5, "<invalid>", id="future"),
        pytest.param(59, "59s", id="seconds"),
        pytest.param(119, "119s", id="under-two-minutes"),
        pytest.param(192, "3m12s", id="minutes-seconds"),
        pytest.param(600, "10m", id="ten-minutes"),
        pytest.param(3 * 3600 + 60, "3h1m", id="hours-minutes"),
        pytest.param(30 * 3600, "30h", id="hours"),
        pytest.param(51 * 3600, "2d3h", id="days-hours"),
        pytest.param(40 * 86400, "40d", id="days"),
        pytest.param(3 * 365 * 86400 + 86400, "3y1d", id="years"),
    ],
)
def test_ages_read_as_kubectl_prints_them(seconds: int, expected: str) -> None:
    assert human_duration(seconds) == expected

"""The wire models: round trips, defaults, validation messages that name object, field and rule."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from apis import (
    KINDS,
    ManagedCluster,
    ObjectValidationError,
    Placement,
    PlacementDecision,
    UnknownKindError,
    parse_as,
    parse_object,
)
from apis.admission import AdmissionReview
from apis.core import Lease, Pod
from apis.meta import ObjectMeta


def placement(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": "web", "namespace": "ns1"},
        "spec": spec,
    }


def error_lines(doc: Any) -> list[str]:
    with pytest.raises(ObjectValidationError) as info:
        parse_object(doc)
    return info.value.lines()


def test_weight_out_of_range_names_object_field_and_rule() -> None:
    doc = placement(
        prioritizerPolicy={
            "configurations": [{"scoreCoordinate": {"builtIn": "Balance"}, "weight": 11}]
        }
    )
    assert error_lines(doc) == [
        "Placement ns1/web: spec.prioritizerPolicy.configurations[0].weight: "
        "must be between -10 and 10 (got 11)"
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"numberOfClusters": -1},
            "spec.numberOfClusters: must be at least 0 (got -1)",
            id="negative-number-of-clusters",
        ),
        pytest.param(
            {"numberOfClusters": "3"},
            "spec.numberOfClusters: must be an integer (got '3')",
            id="no-string-to-int-coercion",
        ),
        pytest.param(
            {"spreadPolicy": {"spreadConstraints": [{"topologyKey": "zone"}]}},
            "spec.spreadPolicy.spreadConstraints[0].topologyKeyType: is required",
            id="required-field",
        ),
        pytest.param(
            {
                "spreadPolicy": {
                    "spreadConstraints": [{"topologyKey": "zone", "topologyKeyType": "Zone"}]
                }
            },
            "spec.spreadPolicy.spreadConstraints[0].topologyKeyType: "
            "must be one of Label, Claim (got 'Zone')",
            id="enum",
        ),
        pytest.param(
            {
                "spreadPolicy": {
                    "spreadConstraints": [
                        {"topologyKey": f"k{i}", "topologyKeyType": "Label"} for i in range(9)
                    ]
                }
            },
            "spec.spreadPolicy.spreadConstraints: must have at most 8 items (got 9)",
            id="max-items",
        ),
        pytest.param(
            {"tolerations": [{"key": "bad key"}]},
            "spec.tolerations[0].key: must match the pattern",
            id="pattern",
        ),
        pytest.param(
            {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "150%"}}},
            "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup: must match the pattern",
            id="int-or-string-pattern",
        ),
        pytest.param(
            {"predicates": {"requiredClusterSelector": {}}},
            "spec.predicates: must be a list (got {'requiredClusterSelector': {}})",
            id="object-instead-of-list",
        ),
    ],
)
def test_placement_validation_messages(spec: dict[str, Any], expected: str) -> None:
    lines = error_lines(placement(**spec))
    assert len(lines) == 1
    assert lines[0].startswith("Placement ns1/web: " + expected)


def test_every_problem_of_an_object_is_reported() -> None:
    lines = error_lines(placement(numberOfClusters=-1, tolerations=[{"effect": "Never"}]))
    assert len(lines) == 2


def test_cluster_scoped_objects_are_named_without_namespace() -> None:
    doc = {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": "c1"},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
    }
    assert error_lines(doc) == [
        "ManagedCluster c1: spec.taints[0].effect: "
        "must be one of NoSelect, PreferNoSelect, NoSelectIfNew (got 'NoSchedule')"
    ]


def test_unknown_kind_and_wrong_version_are_reported() -> None:
    with pytest.raises(UnknownKindError, match="unknown kind 'Placement'"):
        parse_object({**placement(), "apiVersion": "cluster.open-cluster-management.io/v1alpha1"})
    with pytest.raises(UnknownKindError):
        parse_object({"apiVersion": "example.com/v1", "kind": "Foo"})


def test_missing_type_meta_is_reported() -> None:
    assert error_lines({"metadata": {"name": "x"}}) == [
        "object x: apiVersion: is required",
        "object x: kind: is required",
    ]


def test_defaults_apply_without_being_written_back() -> None:
    doc = placement(
        prioritizerPolicy={"configurations": [{"scoreCoordinate": {"builtIn": "Steady"}}]},
        spreadPolicy={"spreadConstraints": [{"topologyKey": "zone", "topologyKeyType": "Label"}]},
    )
    obj = parse_as(Placement, doc)
    assert obj.spec.prioritizer_policy is not None
    assert obj.spec.prioritizer_policy.mode == "Additive"
    config = obj.spec.prioritizer_policy.configurations
    assert config is not None
    assert config[0].weight == 1
    assert config[0].score_coordinate.type == "BuiltIn"
    assert obj.spec.spread_policy is not None
    terms = obj.spec.spread_policy.spread_constraints
    assert terms is not None
    assert (terms[0].max_skew, terms[0].when_unsatisfiable) == (1, "ScheduleAnyway")
    assert obj.to_wire() == doc


def test_round_trip_keeps_unknown_fields_everywhere() -> None:
    doc = placement(
        numberOfClusters=2,
        futureField={"nested": [1, 2]},
        predicates=[{"requiredClusterSelector": {"labelSelector": {}, "newSelector": "x"}}],
    )
    doc["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    doc["status"] = {"numberOfSelectedClusters": 2, "somethingNew": True}
    original = copy.deepcopy(doc)
    assert parse_object(doc).to_wire() == original


def test_times_parse_to_utc_and_print_as_kubernetes_does() -> None:
    doc = {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": "c1"},
        "spec": {
            "taints": [{"key": "k", "effect": "NoSelect", "timeAdded": "2026-11-01T02:00:00+02:00"}]
        },
    }
    cluster = parse_as(ManagedCluster, doc)
    taints = cluster.spec.taints
    assert taints is not None
    assert taints[0].time_added == datetime(2026, 11, 1, 0, 0, tzinfo=UTC)
    assert cluster.to_wire()["spec"]["taints"][0]["timeAdded"] == "2026-11-01T00:00:00Z"


def test_objects_built_in_code_carry_their_type_meta() -> None:
    decision = PlacementDecision(metadata=ObjectMeta(name="web-decision-1", namespace="ns1"))
    wire = decision.to_wire()
    assert wire["apiVersion"] == "cluster.open-cluster-management.io/v1beta1"
    assert wire["kind"] == "PlacementDecision"
    assert list(wire)[:2] == ["apiVersion", "kind"]
    assert decision.key == "ns1/web-decision-1"


def test_micro_time_keeps_microseconds() -> None:
    lease = parse_as(
        Lease,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "placement-controller", "namespace": "ocm"},
            "spec": {"holderIdentity": "a", "renewTime": "2026-11-22T10:00:00.123456Z"},
        },
    )
    assert lease.to_wire()["spec"]["renewTime"] == "2026-11-22T10:00:00.123456Z"


def test_pods_and_admission_reviews_keep_what_they_do_not_model() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "schedulerName": "ocm-pod-scheduler",
            "containers": [
                {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "250m"}}}
            ],
            "volumes": [{"name": "v", "emptyDir": {}}],
        },
    }
    parsed = parse_as(Pod, pod)
    requests = parsed.spec.containers[0].resources
    assert requests is not None and requests.requests is not None
    assert requests.requests["cpu"].milli() == 250
    assert parsed.to_wire() == pod
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u1",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": "CREATE",
            "object": pod,
        },
    }
    assert parse_as(AdmissionReview, review).to_wire() == review


@pytest.mark.parametrize(
    ("labels", "fragment"),
    [
        pytest.param({"_team": "a"}, "invalid label key '_team'", id="bad-key"),
        pytest.param({"zone": "us east"}, "invalid label value 'us east'", id="bad-value"),
        pytest.param({"k": "x" * 64}, "invalid label value", id="value-too-long"),
    ],
)
def test_label_keys_and_values_follow_kubernetes_rules(
    labels: dict[str, str], fragment: str
) -> None:
    doc = placement()
    doc["metadata"]["labels"] = labels
    (line,) = error_lines(doc)
    assert line.startswith("Placement ns1/web: metadata.labels: ")
    assert fragment in line


def test_label_with_prefix_and_empty_value_is_valid() -> None:
    doc = placement()
    doc["metadata"]["labels"] = {"cluster.open-cluster-management.io/clusterset": "", "a.b/c": "d"}
    assert parse_object(doc).to_wire() == doc


def test_every_kind_knows_where_it_lives_in_the_api() -> None:
    for (api_version, kind), cls in KINDS.items():
        assert kind == cls.KIND
        assert cls.api_version_string() == api_version
        assert cls.PLURAL.lower() == cls.PLURAL and cls.PLURAL.endswith("s")

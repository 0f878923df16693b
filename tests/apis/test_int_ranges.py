"""Issue 20, item 6: integer fields stay within the range of their format (Go's int32 or int64,
which OCM's and Kubernetes' typed clients decode into), besides the CRD's own minimum and
maximum; the schemas the CRDs are generated from carry only the format, as OCM's do."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import TypeAdapter, ValidationError

from apis import ObjectValidationError, parse_object
from apis.meta import Int32, Int64, IntRange
from apis.placements import PlacementSpec

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


def placement(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": "web", "namespace": "ns1"},
        "spec": spec,
    }


def error(doc: dict[str, Any]) -> str:
    with pytest.raises(ObjectValidationError) as info:
        parse_object(doc)
    (line,) = info.value.lines()
    return line


@pytest.mark.parametrize(("kind", "bounds"), [(Int32, INT32), (Int64, INT64)])
def test_the_format_bounds_are_accepted_and_one_past_them_refused(
    kind: Any, bounds: tuple[int, int]
) -> None:
    adapter: TypeAdapter[int] = TypeAdapter(kind)
    lo, hi = bounds
    assert adapter.validate_python(lo) == lo
    assert adapter.validate_python(hi) == hi
    for bad in (lo - 1, hi + 1, 10**30):
        with pytest.raises(ValidationError, match="range"):
            adapter.validate_python(bad)


def test_declared_bounds_narrow_the_format_and_keep_their_message() -> None:
    adapter: TypeAdapter[int] = TypeAdapter(Annotated[int, IntRange(0, None)])
    with pytest.raises(ValidationError, match=r"must be at least 0 \(got -1\)"):
        adapter.validate_python(-1)
    with pytest.raises(
        ValidationError,
        match=r"must be between 0 and 2147483647, within the int32 range \(got 2147483648\)",
    ):
        adapter.validate_python(2**31)


@pytest.mark.parametrize(
    ("spec", "field", "value"),
    [
        ({"numberOfClusters": 2**31}, "spec.numberOfClusters", 2**31),
        (
            {
                "spreadPolicy": {
                    "spreadConstraints": [
                        {"topologyKey": "zone", "topologyKeyType": "Label", "maxSkew": 2**31}
                    ]
                }
            },
            "spec.spreadPolicy.spreadConstraints[0].maxSkew",
            2**31,
        ),
        (
            {"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 2**63}]},
            "spec.tolerations[0].tolerationSeconds",
            2**63,
        ),
    ],
)
def test_placement_fields_past_their_format_are_refused(
    spec: dict[str, Any], field: str, value: int
) -> None:
    assert f"{field}: must be between" in error(placement(**spec))
    assert f"(got {value})" in error(placement(**spec))


def test_int64_max_toleration_seconds_is_accepted() -> None:
    doc = placement(tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": INT64[1]}])
    parse_object(doc)


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (
            {
                "apiVersion": "cluster.open-cluster-management.io/v1",
                "kind": "ManagedCluster",
                "metadata": {"name": "c1"},
                "spec": {"leaseDurationSeconds": 2**31},
            },
            "spec.leaseDurationSeconds",
        ),
        (
            {
                "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                "kind": "PlacementDecision",
                "metadata": {"name": "d", "namespace": "ns1"},
                "status": {"decisions": [{"clusterName": "c", "reason": "", "score": 2**31}]},
            },
            "status.decisions[0].score",
        ),
        (
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": "g", "namespace": "ns1"},
                "spec": {"minMember": 2**31},
            },
            "spec.minMember",
        ),
        (
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": "g", "namespace": "ns1"},
                "spec": {"minMember": 1, "scheduleTimeoutSeconds": 2**31},
            },
            "spec.scheduleTimeoutSeconds",
        ),
    ],
)
def test_other_kinds_past_their_format_are_refused(doc: dict[str, Any], field: str) -> None:
    assert f"{field}: must be between" in error(doc)


def test_the_schema_keeps_only_the_declared_bounds() -> None:
    # The CRDs are generated from these schemas: OCM's carry `format: int32` and no maximum.
    schema = PlacementSpec.model_json_schema(by_alias=True)
    number = schema["properties"]["numberOfClusters"]["anyOf"][0]
    assert number == {"type": "integer", "format": "int32", "minimum": 0}


def test_an_int_or_string_integer_is_an_int32() -> None:
    def group(value: int) -> dict[str, Any]:
        return placement(decisionStrategy={"groupStrategy": {"clustersPerDecisionGroup": value}})

    parse_object(group(INT32[1]))
    assert "within the int32 range (got 2147483648)" in error(group(2**31))

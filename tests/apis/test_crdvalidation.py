"""kube-apiserver's CRD validation of PodGroup and ElasticQuota (`apis.crdvalidation`): the rules
read from the models are those of the generated CRDs, where kube accepts what its schema allows
(int32 overflow, a negative timeout), how a CEL rule's failure and error combine, and how the
model's problems are merged behind the schema's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from apis.crdvalidation import (
    RULES,
    SCHEMA_VALIDATED,
    crd_problems,
    merge_problems,
    openapi_schema,
    schema_problems,
)
from apis.errors import FieldProblem, ObjectValidationError
from apis.kubevalidation import cause_reason
from apis.registry import parse_object
from apis.scheduling import ElasticQuota, PodGroup

CRD_DIR = Path(__file__).resolve().parents[2] / "config" / "crds"


def _served(plural: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRD_DIR / f"scheduling.x-k8s.io_{plural}.yaml").read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _without_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_without_descriptions(v) for v in node]
    return node


def _rules(node: Any) -> list[str]:
    if isinstance(node, list):
        return [rule for item in node for rule in _rules(item)]
    if not isinstance(node, dict):
        return []
    found = [rule["rule"] for rule in node.get("x-kubernetes-validations") or ()]
    return found + [rule for value in node.values() for rule in _rules(value)]


def podgroup(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": spec,
    }


def quota(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "q", "namespace": "default"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("cls", "plural"), [(PodGroup, "podgroups"), (ElasticQuota, "elasticquotas")]
)
def test_the_rules_read_from_the_model_are_the_served_crds(cls: Any, plural: str) -> None:
    served = _served(plural)
    assert _without_descriptions(openapi_schema(cls)) == _without_descriptions(served)
    assert SCHEMA_VALIDATED[(cls.api_version_string(), cls.KIND)] is cls
    # Every CEL rule of the CRD is evaluated (a rule without an equivalent would be skipped).
    assert all(rule in RULES for rule in _rules(served))


def test_the_elasticquota_crd_has_its_rule() -> None:
    assert _rules(_served("elasticquotas")) == list(RULES)


def test_int32_overflow_passes_the_schema_but_not_the_model() -> None:
    # kube-openapi checks an integer's type, not its format's range: kube-apiserver stores
    # minMember 2^31. The model refuses it, in its own words (a Go client could not decode it).
    doc = podgroup(minMember=2**31)
    assert crd_problems(doc) == []
    with pytest.raises(ObjectValidationError) as err:
        parse_object(doc)
    assert err.value.problems == [
        FieldProblem(
            "spec.minMember",
            "must be between 1 and 2147483647, within the int32 range (got 2147483648)",
        )
    ]


def test_a_negative_timeout_is_accepted_as_kube_accepts_it() -> None:
    # The CRD puts no minimum on scheduleTimeoutSeconds; neither do the model nor kube.
    doc = podgroup(minMember=2, scheduleTimeoutSeconds=-5)
    assert crd_problems(doc) == []
    assert isinstance(parse_object(doc), PodGroup)


def test_a_float_that_is_an_integer_is_an_integer() -> None:
    assert crd_problems(podgroup(minMember=3.0)) == []
    (problem,) = crd_problems(podgroup(minMember=2.5))
    assert problem.message == (
        'Invalid value: "number": spec.minMember in body must be of type integer: "number"'
    )


def test_a_failed_comparison_wins_over_an_unparsable_quantity() -> None:
    # CEL's all(): one element false makes it false, even if another could not be evaluated.
    doc = quota(min={"cpu": "4", "memory": "lots"}, max={"memory": "1Gi", "cpu": "2"})
    assert [str(p) for p in crd_problems(doc)] == [
        f'spec.min.memory: Invalid value: "lots": spec.min.memory in body should match '
        f"'{openapi_schema(ElasticQuota)['properties']['spec']['properties']['min']['additionalProperties']['pattern']}'",
        "spec: Invalid value: min must not be above max",
    ]


def test_integer_quantities_are_compared_as_quantities() -> None:
    assert crd_problems(quota(min={"cpu": 3}, max={"cpu": "2500m"})) == [
        FieldProblem("spec", "Invalid value: min must not be above max")
    ]
    assert crd_problems(quota(min={"cpu": "2500m"}, max={"cpu": 3})) == []
    assert crd_problems(quota(min={"cpu": "8"})) == []  # no max: the rule holds


def test_a_blocking_error_skips_the_rules() -> None:
    # Too many names and min above max: the rule is not evaluated, as kube-apiserver says.
    names = {f"example.com/r{i}": "1" for i in range(64)}
    doc = quota(min={**names, "cpu": "4"}, max={"cpu": "2"})
    problems = crd_problems(doc)
    assert [p.path for p in problems] == ["spec.min", "<nil>"]
    assert problems[0].message == "Too many: 65: must have at most 64 items"
    assert [cause_reason(p.message) for p in problems] == [
        "FieldValueTooMany",
        "FieldValueInvalid",
    ]


def test_status_is_checked_against_its_schema() -> None:
    doc = {**podgroup(minMember=1), "status": {"phase": "Done", "scheduleStartTime": "soon"}}
    assert [str(p) for p in crd_problems(doc)] == [
        'status.phase: Unsupported value: "Done": supported values: "Pending", "Scheduling", '
        '"Running", "Unknown", "Finished", "Failed"',
        'status.scheduleStartTime: Invalid value: "soon": status.scheduleStartTime in body must '
        'be of type date-time: "soon"',
    ]
    ok = {**podgroup(minMember=1), "status": {"scheduleStartTime": "2024-05-01T10:00:00Z"}}
    assert crd_problems(ok) == []


def test_other_kinds_and_null_values_are_not_checked() -> None:
    assert crd_problems({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": 3}}) == []
    assert crd_problems(podgroup(minMember=None)) == []  # kube drops nulls before validating


def test_the_served_schema_is_what_the_server_checks() -> None:
    # The embedded server passes the CRD it serves (descriptions and all).
    problems = schema_problems(podgroup(minMember=0), _served("podgroups"))
    assert problems == crd_problems(podgroup(minMember=0))


def test_the_models_problems_about_other_fields_are_kept() -> None:
    schema = [FieldProblem("spec.minMember", "Invalid value: 0: ...")]
    model = [
        FieldProblem("spec.minMember", "must be at least 1 (got 0)"),
        FieldProblem("spec", "must be an object"),
        FieldProblem("spec.minMemberX", "other"),
        FieldProblem("metadata.name", "Required value"),
    ]
    assert merge_problems(schema, model) == [
        schema[0],
        FieldProblem("spec.minMemberX", "other"),
        FieldProblem("metadata.name", "Required value"),
    ]


def test_type_errors_have_their_own_cause_reason() -> None:
    body = 'Invalid value: "string": spec.minMember in body must be of type integer: "string"'
    assert cause_reason(body) == "FieldValueTypeInvalid"
    assert cause_reason("Invalid value: min must not be above max") == ("FieldValueInvalid")

"""ElasticQuota `min <= max`: the model, the CRD's CEL rule (run by our CEL engine with the
Kubernetes quantity library) and the embedded server refuse the same specs."""

from __future__ import annotations

from typing import Any

import pytest

from apis.errors import ModelError
from apis.registry import parse_as
from apis.scheduling import MAX_QUOTA_RESOURCES, MIN_ABOVE_MAX_RULE, ElasticQuota
from controllers.cli.crds import build_crd
from controllers.kube.errors import InvalidError
from placement.cel.engine import compile_selector
from tests.controllers.embedded.hub import hub

CASES = [
    pytest.param({"min": {"cpu": "5"}, "max": {"cpu": "4"}}, False, id="cpu-above"),
    pytest.param({"min": {"cpu": "4"}, "max": {"cpu": "4000m"}}, True, id="equal-other-units"),
    pytest.param({"min": {"nvidia.com/gpu": 3}, "max": {"nvidia.com/gpu": 2}}, False, id="gpu"),
    pytest.param({"min": {"memory": "2Gi"}, "max": {"memory": "2049Mi"}}, True, id="mem-below"),
    pytest.param({"min": {"cpu": "2"}, "max": {"memory": "1Gi"}}, True, id="disjoint-names"),
    pytest.param({"max": {"cpu": "1"}}, True, id="no-min"),
    pytest.param({"min": {"cpu": "1"}}, True, id="no-max"),
    pytest.param(
        {"min": {"cpu": "1", "memory": "3Gi"}, "max": {"cpu": "2", "memory": "2Gi"}},
        False,
        id="second-resource-above",
    ),
]


def quota(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "q", "namespace": "team-a"},
        "spec": spec,
    }


@pytest.mark.parametrize(("spec", "valid"), CASES)
def test_the_model_and_the_crd_rule_agree_on_min_above_max(
    spec: dict[str, Any], valid: bool
) -> None:
    rule = compile_selector([MIN_ABOVE_MAX_RULE.replace("self", "managedCluster")])
    verdict = rule.evaluate(spec)
    assert verdict.error is None
    assert (verdict.failed is None) is valid
    if valid:
        parse_as(ElasticQuota, quota(spec))
    else:
        with pytest.raises(ModelError, match="min must not be above max"):
            parse_as(ElasticQuota, quota(spec))


def test_the_error_names_the_resource_and_both_values() -> None:
    with pytest.raises(ModelError) as err:
        parse_as(ElasticQuota, quota({"min": {"cpu": "5"}, "max": {"cpu": "4"}}))
    assert "min[cpu] 5 is above max[cpu] 4" in str(err.value)


def test_the_crd_carries_the_rule_and_bounds_the_resource_maps() -> None:
    version = build_crd(ElasticQuota)["spec"]["versions"][0]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["x-kubernetes-validations"][0]["rule"] == MIN_ABOVE_MAX_RULE
    assert spec["properties"]["min"]["maxProperties"] == MAX_QUOTA_RESOURCES
    assert spec["properties"]["max"]["maxProperties"] == MAX_QUOTA_RESOURCES
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert "conditions" in status["properties"]


@pytest.mark.asyncio
async def test_the_embedded_server_answers_422_for_min_above_max() -> None:
    async with hub(namespaces=["team-a"]) as (_, gw):
        with pytest.raises(InvalidError) as err:
            await gw._request(
                "POST",
                "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/team-a/elasticquotas",
                body=quota({"min": {"cpu": "5"}, "max": {"cpu": "4"}}),
            )
        assert err.value.code == 422
        assert "min must not be above max" in str(err.value)
        ok = await gw._request(
            "POST",
            "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/team-a/elasticquotas",
            body=quota({"min": {"cpu": "4"}, "max": {"cpu": "4"}}),
        )
        assert ok is not None

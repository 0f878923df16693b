"""The CRD refusals kube-apiserver makes that the embedded server repeats (`apis.crdcost`):
metadata's schema beyond its type, and a CEL rule whose estimated cost is over kube's budget,
checked on the ElasticQuota CRD as shipped (accepted) and as it was before its maps' strings
were bounded (refused by kube with factor 8.1x)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from apis.crdcost import RULE_BUDGET, crd_refusals, rule_cost

CRDS = Path(__file__).resolve().parents[2] / "config" / "crds"
QUOTA = CRDS / "scheduling.x-k8s.io_elasticquotas.yaml"
RULE_PATH = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"


def quota_crd() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(QUOTA.read_text())
    return doc


def unbounded(crd: dict[str, Any]) -> dict[str, Any]:
    """The CRD as it was before its quantities were bounded to 64 characters."""
    out = copy.deepcopy(crd)
    spec = out["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    for side in ("min", "max"):
        spec["properties"][side]["additionalProperties"].pop("maxLength")
    return out


def spec_schema(crd: dict[str, Any]) -> dict[str, Any]:
    node: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return node["properties"]["spec"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("path", sorted(CRDS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_crd_is_accepted(path: Path) -> None:
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
            assert crd_refusals(doc) == []


def test_the_quota_rule_over_unbounded_strings_is_refused_with_kubes_factor() -> None:
    assert crd_refusals(unbounded(quota_crd())) == [
        f"{RULE_PATH}: Forbidden: estimated rule cost exceeds budget by factor of 8.1x (try "
        "simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, "
        "maps, and strings are declared)"
    ]


def test_bounded_quantities_bring_the_rule_far_under_the_budget() -> None:
    crd = quota_crd()
    rule = spec_schema(crd)["x-kubernetes-validations"][0]["rule"]
    assert rule_cost(rule, spec_schema(crd)) < RULE_BUDGET / 1000


def test_a_map_without_max_properties_counts_what_fits_in_a_request() -> None:
    crd = quota_crd()
    for side in ("min", "max"):
        spec_schema(crd)["properties"][side].pop("maxProperties")
    rule = spec_schema(crd)["x-kubernetes-validations"][0]["rule"]
    # some 500,000 entries of at most 64 characters: over the budget again
    assert rule_cost(rule, spec_schema(crd)) > RULE_BUDGET


def test_a_rule_reading_no_collection_and_no_string_costs_its_tokens() -> None:
    node = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert rule_cost("self.a > 1", node) == 5


def test_nested_macros_multiply() -> None:
    inner = {"type": "array", "maxItems": 10, "items": {"type": "integer"}}
    node = {"type": "array", "maxItems": 100, "items": inner}
    assert rule_cost("self.all(x, x.all(y, y > 0))", node) > 100 * 10


def test_metadata_with_a_description_is_refused() -> None:
    crd = quota_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"][
        "description"
    ] = "Standard object's metadata"
    assert crd_refusals(crd) == [
        "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify "
        "anything other than name and generateName, but metadata is implicitly specified"
    ]

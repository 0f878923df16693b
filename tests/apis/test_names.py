"""Object names as Kubernetes validates them, per kind, with the API server's own messages:
DNS-1123 subdomains for most kinds, labels for namespaces and ManagedClusters (OCM), a
ManagedClusterSetBinding named after its set (OCM), generateName as a prefix."""

from __future__ import annotations

from typing import Any

import pytest

from apis import KINDS, KubeObject, ObjectValidationError, parse_object
from apis.admission import AdmissionReview
from apis.names import dns1123_label_problems, dns1123_subdomain_problems, name_problems

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
# Word for word as kube-apiserver prints it, the double space included.
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)

# The rule of each kind's metadata.name, from Kubernetes' and OCM's validation.
LABEL_KINDS = {"Namespace", "ManagedCluster"}
DNS1035_KINDS = {"Service"}
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
FREE_KINDS = {"AdmissionReview"}
MINIMAL_SPECS: dict[str, dict[str, Any]] = {
    "Placement": {"spec": {}},
    "Binding": {"target": {"name": "n1"}},
    "PriorityClass": {"value": 1000},
    "AddOnTemplate": {"spec": {"addonName": "a", "agentSpec": {}}},
    "ClusterManagementAddOn": {"spec": {}},
    **{
        kind: {
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}},
            }
        }
        for kind in ("Deployment", "ReplicaSet", "StatefulSet", "Job")
    },
}


def document(cls: type[KubeObject], name: str, namespace: str | None = "ns1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if cls.NAMESPACED and namespace is not None:
        meta["namespace"] = namespace
    extra = MINIMAL_SPECS.get(cls.KIND, {})
    if cls.KIND == "ManagedClusterSetBinding":
        extra = {"spec": {"clusterSet": name}}  # named after its set, as OCM requires
    return {"apiVersion": cls.api_version_string(), "kind": cls.KIND, "metadata": meta, **extra}


def error_lines(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(ObjectValidationError) as info:
        parse_object(doc)
    return info.value.lines()


ALL_KINDS = sorted(KINDS.values(), key=lambda c: (c.GROUP, c.KIND))


@pytest.mark.parametrize("cls", ALL_KINDS, ids=[f"{c.GROUP or 'core'}-{c.KIND}" for c in ALL_KINDS])
def test_each_kind_checks_its_name_by_its_rule(cls: type[KubeObject]) -> None:
    assert parse_object(document(cls, "web-1")).name == "web-1"
    if cls.KIND in FREE_KINDS:
        assert parse_object(document(cls, "Any_Name")).name == "Any_Name"
        return
    lines = error_lines(document(cls, "Bad_Name"))
    rule, message = (
        ("label", LABEL_MSG) if cls.KIND in LABEL_KINDS else ("subdomain", SUBDOMAIN_MSG)
    )
    if cls.KIND in DNS1035_KINDS:
        rule, message = "dns1035", DNS1035_MSG
    assert rule == cls.NAME_RULE
    assert any(
        line.endswith(f'metadata.name: Invalid value: "Bad_Name": {message}') for line in lines
    ), lines
    dotted = document(cls, "web.example.com")
    if rule == "label":
        assert any(
            '"web.example.com": must not contain dots' in line for line in error_lines(dotted)
        )
    elif rule == "dns1035":
        assert any(f'"web.example.com": {message}' in line for line in error_lines(dotted))
    else:
        assert parse_object(dotted).name == "web.example.com"


@pytest.mark.parametrize(
    ("name", "problems"),
    [
        pytest.param("a", [], id="one-char"),
        pytest.param("a-b-1", [], id="dashes-inside"),
        pytest.param("1abc", [], id="leading-digit"),
        pytest.param("x" * 63, [], id="63-chars"),
        pytest.param("x" * 64, ["must be no more than 63 characters"], id="64-chars"),
        pytest.param("-a", [LABEL_MSG], id="leading-dash"),
        pytest.param("a-", [LABEL_MSG], id="trailing-dash"),
        pytest.param("A", [LABEL_MSG], id="upper-case"),
        pytest.param("a.b", ["must not contain dots"], id="dots"),
        pytest.param("", [LABEL_MSG], id="empty"),
    ],
)
def test_dns1123_label(name: str, problems: list[str]) -> None:
    assert dns1123_label_problems(name) == problems


@pytest.mark.parametrize(
    ("name", "problems"),
    [
        pytest.param("a.b-c.d", [], id="dotted"),
        pytest.param("x" * 253, [], id="253-chars"),
        pytest.param("x" * 254, ["must be no more than 253 characters"], id="254-chars"),
        pytest.param("a..b", [SUBDOMAIN_MSG], id="empty-part"),
        pytest.param("a.-b", [SUBDOMAIN_MSG], id="part-starts-with-dash"),
        pytest.param("a_b", [SUBDOMAIN_MSG], id="underscore"),
        pytest.param("é", [SUBDOMAIN_MSG], id="non-ascii"),
    ],
)
def test_dns1123_subdomain(name: str, problems: list[str]) -> None:
    assert dns1123_subdomain_problems(name) == problems


def test_generate_name_is_a_prefix_whose_trailing_dash_is_fine() -> None:
    assert name_problems("web-", "subdomain", prefix=True) == []
    assert name_problems("web-", "subdomain") == [SUBDOMAIN_MSG]
    doc = document(KINDS[("cluster.open-cluster-management.io/v1beta1", "Placement")], "")
    doc["metadata"] = {"generateName": "web-", "namespace": "ns1"}
    assert parse_object(doc).metadata.generate_name == "web-"
    doc["metadata"]["generateName"] = "Web-"
    assert error_lines(doc) == [
        f'Placement ns1/<unnamed>: metadata.generateName: Invalid value: "Web-": {SUBDOMAIN_MSG}'
    ]


def test_the_namespace_of_a_namespaced_object_is_a_label() -> None:
    cls = KINDS[("cluster.open-cluster-management.io/v1beta1", "Placement")]
    assert error_lines(document(cls, "web", namespace="Team_A")) == [
        f'Placement Team_A/web: metadata.namespace: Invalid value: "Team_A": {LABEL_MSG}'
    ]


def test_a_bad_name_is_reported_with_the_other_problems_of_the_object() -> None:
    doc = document(KINDS[("cluster.open-cluster-management.io/v1beta1", "Placement")], "Web")
    doc["spec"] = {"numberOfClusters": -1}
    lines = error_lines(doc)
    assert [line.split(": ")[1] for line in lines] == ["metadata.name", "spec.numberOfClusters"]


def test_a_binding_must_be_named_after_its_set() -> None:
    cls = KINDS[("cluster.open-cluster-management.io/v1beta2", "ManagedClusterSetBinding")]
    doc = document(cls, "prod")
    doc["spec"]["clusterSet"] = "prod-east"
    assert error_lines(doc) == [
        'ManagedClusterSetBinding ns1/prod: metadata.name: Invalid value: "prod": The '
        "ManagedClusterSetBinding must have the same name as the target ManagedClusterSet "
        '(spec.clusterSet "prod-east")'
    ]


def test_objects_built_in_code_are_checked_too_but_may_leave_the_name_unset() -> None:
    review = AdmissionReview.model_validate({})
    assert review.name == ""
    cls = KINDS[("cluster.open-cluster-management.io/v1", "ManagedCluster")]
    assert cls.model_validate({}).name == ""
    with pytest.raises(ValueError, match=r"metadata\.name"):
        cls.model_validate({"metadata": {"name": "Cluster1"}})

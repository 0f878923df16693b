"""v1 Service and ReplicationController: the models, kube-apiserver's defaults and validation of
what the scheduler reads, and `kubectl get`'s cells, each expectation as kube-apiserver v1.36.2
answered the same object (recorded on the e2e tier's control plane)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from apis.kubevalidation import kube_problems
from apis.registry import parse_object
from apis.services import (
    Service,
    free_cluster_ip,
    replication_controller_defaults,
    service_defaults,
)
from apis.workloads import ReplicationController
from controllers.embedded.service_printers import SERVICE_PRINTERS

PORT_RANGE = "must be between 1 and 65535, inclusive"
KEY_WORDS = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_WORDS = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def doc(kind: str, spec: dict[str, Any], name: str = "x") -> dict[str, Any]:
    meta = {"name": name, "namespace": "default"}
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, "spec": spec}


def problems(kind: str, spec: dict[str, Any]) -> list[str]:
    return [f"{p.path}: {p.message}" for p in kube_problems(doc(kind, spec))]


TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c"}]}}


@pytest.mark.parametrize(
    ("kind", "spec", "expected"),
    [
        pytest.param("Service", {"selector": {"app": "web"}}, ["spec.ports: Required value"],
                     id="no-ports"),
        pytest.param(
            "Service",
            {"selector": {"bad key": "x", "app": "a b"}, "ports": [{"port": 0}]},
            [
                f"spec.ports[0].port: Invalid value: 0: {PORT_RANGE}",
                f"spec.ports[0].targetPort: Invalid value: 0: {PORT_RANGE}",
                f'spec.selector: Invalid value: "a b": {VALUE_WORDS}',
                f'spec.selector: Invalid value: "bad key": {KEY_WORDS}',
            ],
            id="bad-port-and-selector",
        ),
        pytest.param("Service", {"clusterIP": "None", "selector": {"app": "x"}}, [],
                     id="headless-without-ports"),
        pytest.param("Service", {"type": "ExternalName", "externalName": "example.com"}, [],
                     id="external-name"),
        pytest.param("ReplicationController", {"template": {"spec": {}}},
                     ["spec.selector: Required value"], id="rc-no-selector"),
        pytest.param("ReplicationController", {"template": TEMPLATE}, [], id="rc-defaulted"),
        pytest.param(
            "ReplicationController",
            {"selector": {"app": "a b"}, "template": TEMPLATE},
            ['spec.template.metadata.labels: Invalid value: {"app":"x"}: `selector` does not '
             "match template `labels`"],
            id="rc-mismatch",
        ),
    ],
)  # fmt: skip
def test_kube_apiservers_validation(kind: str, spec: dict[str, Any], expected: list[str]) -> None:
    assert problems(kind, spec) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"selector": {"app": "web"}, "ports": [{"port": 80, "nodePort": 30080}],
             "type": "NodePort"},
            {"clusterIP": "10.96.0.7", "clusterIPs": ["10.96.0.7"],
             "externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster",
             "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
             "ports": [{"nodePort": 30080, "port": 80, "protocol": "TCP", "targetPort": 80}],
             "selector": {"app": "web"}, "sessionAffinity": "None", "type": "NodePort"},
            id="node-port",
        ),
        pytest.param(
            {"clusterIP": "None", "selector": {"app": "x"}},
            {"clusterIP": "None", "clusterIPs": ["None"], "internalTrafficPolicy": "Cluster",
             "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "selector": {"app": "x"},
             "sessionAffinity": "None", "type": "ClusterIP"},
            id="headless",
        ),
        pytest.param(
            {"type": "ExternalName", "externalName": "example.com"},
            {"externalName": "example.com", "sessionAffinity": "None", "type": "ExternalName"},
            id="external-name",
        ),
    ],
)  # fmt: skip
def test_service_defaults_as_kube_apiserver_fills_them(
    spec: dict[str, Any], expected: dict[str, Any]
) -> None:
    wire = doc("Service", spec)
    service_defaults(wire, "10.96.0.7")
    assert wire["spec"] == expected
    assert parse_object(wire).to_wire() == wire  # every field typed or kept


def test_replication_controller_defaults_and_model() -> None:
    wire = doc("ReplicationController", {"template": TEMPLATE})
    replication_controller_defaults(wire)
    assert (wire["spec"]["selector"], wire["metadata"]["labels"]) == ({"app": "x"}, {"app": "x"})
    assert wire["spec"]["replicas"] == 1
    rc = parse_object(wire)
    assert isinstance(rc, ReplicationController) and rc.spec is not None
    assert rc.spec.selector == {"app": "x"}


def test_service_model_names_and_cluster_ips() -> None:
    svc = parse_object(doc("Service", {"clusterIP": "10.96.0.1", "externalIPs": ["1.2.3.4"]}))
    assert isinstance(svc, Service) and svc.spec is not None
    assert (svc.spec.cluster_ip, svc.spec.external_ips) == ("10.96.0.1", ["1.2.3.4"])
    assert free_cluster_ip({"10.96.0.1", "10.96.0.2"}) == "10.96.0.3"


NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("spec", "status", "cells"),
    [
        pytest.param({"type": "ExternalName", "externalName": "example.com"}, {},
                     ["ExternalName", "<none>", "example.com", "<none>"], id="external-name"),
        pytest.param(
            {"type": "LoadBalancer", "clusterIP": "10.96.48.155", "externalIPs": ["1.2.3.4"],
             "ports": [{"port": 80, "nodePort": 31659, "protocol": "TCP"}]},
            {}, ["LoadBalancer", "10.96.48.155", "1.2.3.4", "80:31659/TCP"], id="lb-external",
        ),
        pytest.param({"type": "LoadBalancer", "ports": [{"port": 443}]}, {},
                     ["LoadBalancer", "<none>", "<pending>", "443/TCP"], id="lb-pending"),
        pytest.param(
            {"type": "LoadBalancer", "ports": [{"port": 443}]},
            {"loadBalancer": {"ingress": [{"ip": "203.0.113.10"}, {"hostname": "lb.example"}]}},
            ["LoadBalancer", "<none>", "203.0.113.10,...", "443/TCP"], id="lb-ingress-cut",
        ),
    ],
)  # fmt: skip
def test_kubectl_columns_of_services(
    spec: dict[str, Any], status: dict[str, Any], cells: list[str]
) -> None:
    obj = {**doc("Service", spec), "status": status}
    row = SERVICE_PRINTERS[("", "Service")].row(obj, NOW)
    assert row[1:5] == cells

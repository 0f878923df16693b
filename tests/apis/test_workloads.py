"""Workload models (apps/v1, batch/v1): round trips, the fields a scheduler reads, and
validation messages naming the object and the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apis import KINDS, ObjectValidationError, parse_object, unknown_fields
from apis.workloads import WORKLOAD_MODELS, Deployment, Job, ReplicaSet, StatefulSet


def template() -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "schedulerName": "ocm-pod-scheduler",
            "priorityClassName": "high",
            "containers": [
                {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}
            ],
        },
    }


def workload(api_version: str, kind: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "web", "namespace": "ns1"},
        "spec": {"template": template(), **spec},
    }


SELECTOR = {"matchLabels": {"app": "web"}}
DOCS = {
    "Deployment": workload(
        "apps/v1",
        "Deployment",
        replicas=3,
        selector=SELECTOR,
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
        revisionHistoryLimit=5,
    ),
    "ReplicaSet": workload("apps/v1", "ReplicaSet", replicas=2, selector=SELECTOR),
    "StatefulSet": workload(
        "apps/v1",
        "StatefulSet",
        replicas=2,
        selector=SELECTOR,
        serviceName="web",
        podManagementPolicy="Parallel",
        volumeClaimTemplates=[{"metadata": {"name": "data"}}],
    ),
    "Job": workload("batch/v1", "Job", parallelism=4, completions=8, backoffLimit=2),
}


def error_lines(doc: Any) -> list[str]:
    with pytest.raises(ObjectValidationError) as info:
        parse_object(doc)
    return info.value.lines()


def test_workload_kinds_are_registered_where_kubernetes_serves_them() -> None:
    assert KINDS[("apps/v1", "Deployment")] is Deployment
    assert KINDS[("apps/v1", "ReplicaSet")] is ReplicaSet
    assert KINDS[("apps/v1", "StatefulSet")] is StatefulSet
    assert KINDS[("batch/v1", "Job")] is Job
    assert [(c.PLURAL, c.SHORT_NAMES, c.HAS_STATUS) for c in WORKLOAD_MODELS] == [
        ("deployments", ("deploy",), True),
        ("replicasets", ("rs",), True),
        ("statefulsets", ("sts",), True),
        ("jobs", (), True),
        ("replicationcontrollers", ("rc",), True),
    ]


@pytest.mark.parametrize("kind", sorted(DOCS))
def test_round_trip_keeps_untyped_fields_and_has_no_unknown_ones(kind: str) -> None:
    doc = copy.deepcopy(DOCS[kind])
    doc["status"] = {"replicas": 1, "someNewerField": {"x": 1}}
    obj = parse_object(doc)
    assert obj.to_wire() == doc
    assert unknown_fields(doc) == []


def test_typed_fields_the_scheduler_reads() -> None:
    deploy = parse_object(DOCS["Deployment"])
    assert isinstance(deploy, Deployment)
    assert deploy.spec.replicas == 3
    assert deploy.spec.selector.match_labels == {"app": "web"}
    pod_spec = deploy.spec.template.spec
    assert pod_spec is not None and pod_spec.priority_class_name == "high"
    assert pod_spec.scheduler_name == "ocm-pod-scheduler"
    sts = parse_object(DOCS["StatefulSet"])
    assert isinstance(sts, StatefulSet)
    assert (sts.spec.service_name, sts.spec.pod_management_policy) == ("web", "Parallel")
    job = parse_object(DOCS["Job"])
    assert isinstance(job, Job)
    assert (job.spec.parallelism, job.spec.completions, job.spec.backoff_limit) == (4, 8, 2)
    assert job.spec.selector is None


def test_bad_fields_are_named_with_object_and_rule() -> None:
    doc = copy.deepcopy(DOCS["Deployment"])
    doc["spec"]["replicas"] = -1
    doc["spec"]["template"]["spec"]["priority"] = "high"
    assert error_lines(doc) == [
        "Deployment ns1/web: spec.replicas: must be at least 0 (got -1)",
        "Deployment ns1/web: spec.template.spec.priority: must be an integer (got 'high')",
    ]
    sts = copy.deepcopy(DOCS["StatefulSet"])
    sts["spec"]["podManagementPolicy"] = "Ordered"
    assert error_lines(sts) == [
        "StatefulSet ns1/web: spec.podManagementPolicy: "
        "must be one of OrderedReady, Parallel (got 'Ordered')"
    ]


@pytest.mark.parametrize(
    ("kind", "missing", "field"),
    [
        ("Deployment", "selector", "spec.selector"),
        ("ReplicaSet", "template", "spec.template"),
        ("StatefulSet", "selector", "spec.selector"),
        ("Job", "template", "spec.template"),
    ],
)
def test_required_fields_are_reported(kind: str, missing: str, field: str) -> None:
    doc = copy.deepcopy(DOCS[kind])
    del doc["spec"][missing]
    assert error_lines(doc) == [f"{kind} ns1/web: {field}: is required"]
    no_spec = copy.deepcopy(DOCS[kind])
    del no_spec["spec"]
    assert error_lines(no_spec) == [f"{kind} ns1/web: spec: is required"]


def test_typos_in_workload_specs_are_unknown_fields() -> None:
    doc = copy.deepcopy(DOCS["Job"])
    doc["spec"]["completion"] = 3
    doc["spec"]["template"]["spec"]["nodeSelectors"] = {"a": "b"}
    assert [str(u) for u in unknown_fields(doc)] == [
        'unknown field "spec.template.spec.nodeSelectors"',
        'unknown field "spec.completion"',
    ]

"""Hostile pod-level objects refused as kube-apiserver refuses them (issue 32 item 4), with
kube's `field.ErrorList` words (for PodGroup and ElasticQuota, those of its CRD validation:
OpenAPI schema and CEL rule), at the three entry points: `placement validate` (file, document,
object, message; exit 1), `placement scheduler simulate` (the same line, exit 1, no traceback,
nothing simulated) and the embedded API server (422 Invalid with kube's Status: message,
reason, details.causes; and kubectl's rendering of it)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from controllers.cli.common import EXIT_ERROR
from tests.controllers.cli.samples import run
from tests.controllers.embedded.hub import hub, kubectl


def pod(**spec: Any) -> dict[str, Any]:
    spec.setdefault("containers", [{"name": "app", "image": "nginx"}])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": spec,
    }


def container(**resources: Any) -> list[dict[str, Any]]:
    return [{"name": "app", "image": "nginx", "resources": resources}]


def affinity(*expressions: dict[str, Any]) -> dict[str, Any]:
    terms = [{"matchExpressions": list(expressions)}]
    required = {"nodeSelectorTerms": terms}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


NODE_TERM = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
NODE_TERM += "nodeSelectorTerms[0].matchExpressions[0]"
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

# (case id, object, the problem's field, the problem's body as kube words it)
SINGLE: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "node-negative-allocatable",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "-1", "memory": "8Gi"}},
        },
        "status.allocatable.cpu",
        'Invalid value: "-1": must be greater than or equal to 0',
    ),
    ("pod-without-containers", pod(containers=[]), "spec.containers", "Required value"),
    (
        "pod-negative-cpu-request",
        pod(containers=container(requests={"cpu": "-1"})),
        "spec.containers[0].resources.requests[cpu]",
        'Invalid value: "-1": must be greater than or equal to 0',
    ),
    (
        "pod-requests-above-limits",
        pod(containers=container(requests={"cpu": "2"}, limits={"cpu": "1"})),
        "spec.containers[0].resources.requests",
        'Invalid value: "2": must be less than or equal to cpu limit of 1',
    ),
    (
        "pod-affinity-in-without-values",
        pod(affinity=affinity({"key": "zone", "operator": "In"})),
        f"{NODE_TERM}.values",
        "Required value: must be specified when `operator` is 'In' or 'NotIn'",
    ),
    (
        "pod-affinity-gt-two-values",
        pod(affinity=affinity({"key": "cores", "operator": "Gt", "values": ["1", "2"]})),
        f"{NODE_TERM}.values",
        "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
    ),
    (
        "pod-nodeselector-not-a-label-value",
        pod(nodeSelector={"zone": "eu west!"}),
        "spec.nodeSelector",
        f'Invalid value: "eu west!": {LABEL_VALUE}',
    ),
    (
        "pod-toleration-operator-sometimes",
        pod(tolerations=[{"key": "spot", "operator": "Sometimes", "value": "x"}]),
        "spec.tolerations[0].operator",
        'Unsupported value: "Sometimes": supported values: "Equal", "Exists"',
    ),
    (
        "pod-annotations-too-long",
        {
            **pod(),
            "metadata": {"name": "p", "namespace": "default", "annotations": {"a": "x" * 262144}},
        },
        "metadata.annotations",
        "Too long: must have at most 262144 bytes",
    ),
    (
        "priorityclass-above-one-billion",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "huge"},
            "value": 1_000_000_001,
        },
        "value",
        "Forbidden: maximum allowed value of a user defined priority is 1000000000",
    ),
    (
        "priorityclass-system-prefix",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "system-mine"},
            "value": 5,
        },
        "metadata.name",
        "Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
        "error: system-mine is not a known system priority class",
    ),
]


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


QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
NOT_CHECKED = (
    "<nil>",
    "Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation",
)
# The custom resources, refused by the CRD's schema and rule as kube-apiserver words it:
# (case id, object, [(field, body), ...] in kube's order).
CRD_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    (
        "podgroup-minmember-zero",
        podgroup(minMember=0),
        [
            (
                "spec.minMember",
                "Invalid value: 0: spec.minMember in body should be greater than or equal to 1",
            )
        ],
    ),
    (
        "podgroup-minmember-negative",
        podgroup(minMember=-1, scheduleTimeoutSeconds=60),
        [
            (
                "spec.minMember",
                "Invalid value: -1: spec.minMember in body should be greater than or equal to 1",
            )
        ],
    ),
    (
        "podgroup-minmember-string",
        podgroup(minMember="3"),
        [
            (
                "spec.minMember",
                'Invalid value: "string": spec.minMember in body must be of type integer: "string"',
            )
        ],
    ),
    (
        "podgroup-minresources-not-a-quantity",
        podgroup(minMember=2, minResources={"cpu": "4", "memory": "lots"}),
        [
            (
                "spec.minResources.memory",
                f'Invalid value: "lots": spec.minResources.memory in body should match '
                f"'{QUANTITY}'",
            )
        ],
    ),
    (
        "elasticquota-min-above-max",
        quota(min={"cpu": "4", "memory": "1Gi"}, max={"cpu": "2", "memory": "2Gi"}),
        [("spec", "Invalid value: min must not be above max")],
    ),
    (
        "elasticquota-65-resource-names",
        quota(min={f"example.com/r{i}": "1" for i in range(65)}),
        [("spec.min", "Too many: 65: must have at most 64 items"), NOT_CHECKED],
    ),
    (
        "elasticquota-max-not-a-quantity",
        quota(max={"cpu": "12xyz"}),
        [
            (
                "spec.max.cpu",
                f"Invalid value: \"12xyz\": spec.max.cpu in body should match '{QUANTITY}'",
            )
        ],
    ),
    (
        "elasticquota-not-a-quantity-in-the-rule",
        quota(min={"cpu": "8"}, max={"cpu": "12xyz"}),
        [
            (
                "spec.max.cpu",
                f"Invalid value: \"12xyz\": spec.max.cpu in body should match '{QUANTITY}'",
            ),
            (
                "spec",
                'Invalid value: "object": quantities must match the regular expression '
                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: min must not "
                "be above max",
            ),
        ],
    ),
    (
        "elasticquota-quantity-boolean",
        quota(max={"cpu": True}),
        [
            (
                "spec.max.cpu",
                'Invalid value: "boolean": spec.max.cpu in body must be of type integer,string: '
                '"boolean"',
            ),
            NOT_CHECKED,
        ],
    ),
]
CASES = [(case, doc, [(field, body)]) for case, doc, field, body in SINGLE] + CRD_CASES
IDS = [case[0] for case in CASES]


def _object_id(doc: dict[str, Any]) -> str:
    meta = doc["metadata"]
    where = f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else meta["name"]
    return f"{doc['kind']} {where}"


def _write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(("case", "doc", "problems"), CASES, ids=IDS)
def test_validate_reports_the_kube_problem(
    case: str,
    doc: dict[str, Any],
    problems: list[tuple[str, str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _write(tmp_path, doc)
    code, out, err = run(capsys, "validate", "-f", str(path))
    assert code == EXIT_ERROR
    where = f"{path}: document 1: {_object_id(doc)}"
    reported = [line for line in err.splitlines() if line.startswith(where)]
    # kube's problems, in kube's order, and no other line about the object (the model's
    # problems about the same fields are left out).
    assert reported == [f"{where}: {field}: {body}" for field, body in problems]
    assert out == ""


NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "fine"},
    "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
}


@pytest.mark.parametrize(("case", "doc", "problems"), CASES, ids=IDS)
def test_scheduler_simulate_refuses_the_object(
    case: str,
    doc: dict[str, Any],
    problems: list[tuple[str, str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump_all([NODE, doc]), encoding="utf-8")
    code, out, err = run(capsys, "scheduler", "simulate", "-f", str(path))
    assert code == EXIT_ERROR
    for field, body in problems:
        assert f"{path}: document 2: {_object_id(doc)}: {field}: {body}" in err
    assert "Traceback" not in err
    assert out == ""


GROUPS = {"PriorityClass": "scheduling.k8s.io"}
GROUPS.update(PodGroup="scheduling.x-k8s.io", ElasticQuota="scheduling.x-k8s.io")
REASONS = {
    "Required value": "FieldValueRequired",
    "Forbidden": "FieldValueForbidden",
    "Too long": "FieldValueTooLong",
    "Too many": "FieldValueTooMany",
    "Unsupported value": "FieldValueNotSupported",
    "Invalid value": "FieldValueInvalid",
}


def _reason(body: str) -> str:
    if " in body must be of type " in body:
        return "FieldValueTypeInvalid"
    return REASONS[body.split(":")[0]]


def _plural(doc: dict[str, Any]) -> str:
    if doc["kind"] in ("PodGroup", "ElasticQuota"):
        plural = {"PodGroup": "podgroups", "ElasticQuota": "elasticquotas"}[doc["kind"]]
        return f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/{plural}"
    if doc["kind"] == "PriorityClass":
        return "/apis/scheduling.k8s.io/v1/priorityclasses"
    if doc["kind"] == "Node":
        return "/api/v1/nodes"
    return "/api/v1/namespaces/default/pods"


@pytest.mark.asyncio
async def test_the_embedded_server_answers_422_with_kubes_status(tmp_path: Path) -> None:
    async with hub() as (server, _), aiohttp.ClientSession() as http:
        config = server.kubeconfig(tmp_path / "kubeconfig")
        for case, doc, problems in CASES:
            url = server.url + _plural(doc)
            async with http.post(url, json=doc) as resp:
                status = await resp.json()
                assert resp.status == 422, case
            group = GROUPS.get(doc["kind"], "")
            qualified = f"{doc['kind']}.{group}" if group else doc["kind"]
            name = doc["metadata"]["name"]
            assert status["reason"] == "Invalid", case
            # utilerrors.NewAggregate: one problem alone, several as [a, b].
            text = ", ".join(f"{field}: {body}" for field, body in problems)
            text = text if len(problems) == 1 else f"[{text}]"
            assert status["message"] == f'{qualified} "{name}" is invalid: {text}', case
            causes = [
                {"reason": _reason(body), "message": body, "field": field}
                for field, body in problems
            ]
            assert status["details"]["causes"] == causes, case
            assert (status["details"]["kind"], status["details"]["name"]) == (doc["kind"], name)
            assert status["details"]["group"] == group, case
            # kubectl renders the same Status.
            code, _, err = await kubectl(config, "create", "-f", "-", stdin=json.dumps(doc))
            assert code != 0, case
            for field, body in problems:
                assert f"{field}: {body}" in err, case


@pytest.mark.asyncio
async def test_an_update_that_breaks_a_rule_is_refused() -> None:
    async with hub() as (server, _), aiohttp.ClientSession() as http:
        url = server.url + "/api/v1/namespaces/default/pods"
        good = pod(containers=container(requests={"cpu": "1"}, limits={"cpu": "2"}))
        async with http.post(url, json=good) as resp:
            created = await resp.json()
            assert resp.status == 201
        bad = copy.deepcopy(created)
        bad["spec"]["tolerations"] = [{"key": "spot", "operator": "Sometimes"}]
        async with http.put(f"{url}/p", json=bad) as resp:
            status = await resp.json()
            assert resp.status == 422
        assert status["message"] == (
            'Pod "p" is invalid: spec.tolerations[0].operator: Unsupported value: "Sometimes": '
            'supported values: "Equal", "Exists"'
        )


@pytest.mark.asyncio
async def test_an_object_past_etcds_limit_is_refused_as_etcd_refuses_it() -> None:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "big", "namespace": "default"},
        "data": {"blob": "x" * (2 * 1024 * 1024)},  # under the 3 MiB body limit
    }
    async with hub() as (server, _), aiohttp.ClientSession() as http:
        url = server.url + "/api/v1/namespaces/default/configmaps"
        async with http.post(url, json=config_map) as resp:
            status = await resp.json()
            assert resp.status == 500
        assert status["message"] == "etcdserver: request is too large"
        async with http.get(f"{url}/big") as resp:
            assert resp.status == 404

"""`placement scheduler simulate` and kube's default topology spreading: the selector comes from
the Services, ReplicationControllers and ReplicaSets (those a Deployment makes included) that
select the pod. One node is much larger than the two others, so resource scoring alone packs
every pod there: only the default constraints spread them.

Also the example of kube's documentation (Pod Topology Spread Constraints, "Cluster-level
default constraints"): a profile's `defaultConstraints` with `defaultingType: List`
(`maxSkew: 1` on `topology.kubernetes.io/zone`, ScheduleAnyway) apply to the pods of a Service
or ReplicaSet, and `defaultingType: List` with no constraints disables default spreading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.cli.common import EXIT_OK
from tests.controllers.cli.samples import run

SCHEDULER = "ocm-pod-scheduler"
SIZES = {"big": ("a", "64"), "small-b": ("b", "4"), "small-c": ("c", "4")}
CONTAINERS = [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "500m"}}}]


def nodes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
            },
            "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}},
        }
        for name, (zone, cpu) in SIZES.items()
    ]


def bare(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"schedulerName": SCHEDULER, "containers": CONTAINERS},
    }


SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web"},
    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
}


def template() -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "api"}},
        "spec": {"schedulerName": SCHEDULER, "containers": CONTAINERS},
    }


def workload(kind: str) -> dict[str, Any]:
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    spec: dict[str, Any] = {"replicas": 3, "template": template()}
    if kind == "Deployment":
        spec["selector"] = {"matchLabels": {"app": "api"}}
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "api"}, "spec": spec}


def placed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, docs: list[Any], *argv: str
) -> dict[str, str]:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump_all(docs))
    code, out, err = run(
        capsys, "scheduler", "simulate", "-f", str(scenario), "--now", "2026-01-01T00:00:00Z",
        *argv,
    )  # fmt: skip
    assert (code, err) == (EXIT_OK, "")
    pods = [i for i in json.loads(out)["items"] if i["kind"] == "Pod"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in pods}


def zones(where: dict[str, str]) -> list[str]:
    return sorted(SIZES[node][0] for node in where.values())


def test_a_service_spreads_its_bare_pods(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pods = [bare(f"web-{i}") for i in range(3)]
    assert zones(placed(capsys, tmp_path, [*nodes(), SERVICE, *pods])) == ["a", "b", "c"]
    assert set(placed(capsys, tmp_path, [*nodes(), *pods]).values()) == {"big"}


@pytest.mark.parametrize("kind", ["Deployment", "ReplicationController"])
def test_the_pods_of_a_controller_are_spread_by_its_selector(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    assert zones(placed(capsys, tmp_path, [*nodes(), workload(kind)])) == ["a", "b", "c"]


def configuration(tmp_path: Path, constraints: list[dict[str, Any]]) -> str:
    args = {"defaultingType": "List", "defaultConstraints": constraints}
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": SCHEDULER,
                "pluginConfig": [{"name": "PodTopologySpread", "args": args}],
            }
        ],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


DOCUMENTED = [
    {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "ScheduleAnyway",
    }
]


def test_kubes_documented_cluster_level_default_constraints(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = [*nodes(), SERVICE, *(bare(f"web-{i}") for i in range(3)), workload("Deployment")]
    config = configuration(tmp_path, DOCUMENTED)
    where = placed(capsys, tmp_path, docs, "--config", config)
    web = {k: v for k, v in where.items() if k.startswith("web-")}
    api = {k: v for k, v in where.items() if k.startswith("api-")}
    assert zones(web) == zones(api) == ["a", "b", "c"]
    # "defaultingType: List" and no constraints: default spreading is disabled.
    disabled = placed(capsys, tmp_path, docs, "--config", configuration(tmp_path, []))
    assert set(disabled.values()) == {"big"}

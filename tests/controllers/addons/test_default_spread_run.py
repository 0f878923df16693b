"""`scheduler run` and kube's default topology spreading, on an embedded API server in its own
process: the scheduler watches Services (and the workload controllers), so three bare pods
behind a Service are spread over three zones although resource scoring alone would pack them on
the large node; `kubectl get` shows the Service and a ReplicationController in kube's columns
(the server gives the Service its defaults and a cluster IP, the ReplicationController its
selector from the template)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from apis.core import Pod
from apis.registry import parse_object
from tests.controllers.addons.cluster import create_all, node, pod, server_process
from tests.controllers.addons.test_scheduler_e2e import pods, scheduler
from tests.controllers.embedded.hub import eventually, kubectl

ZONES = {"big": "a", "small-b": "b", "small-c": "c"}
SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "nodePort": 30080}]},
}
CONTROLLER = {
    "apiVersion": "v1",
    "kind": "ReplicationController",
    "metadata": {"name": "legacy", "namespace": "default"},
    "spec": {
        "replicas": 0,
        "template": {
            "metadata": {"labels": {"app": "legacy"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    },
}


def web(name: str) -> Pod:
    made = pod(name, cpu="500m")
    meta = made.metadata.model_copy(update={"labels": {"app": "web"}})
    return made.model_copy(update={"metadata": meta})


def kubeconfig(path: Path, url: str) -> Path:
    cluster = {"name": "e", "cluster": {"server": url}}
    context = {"name": "e", "context": {"cluster": "e", "user": "e", "namespace": "default"}}
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [cluster]}
    doc.update(users=[{"name": "e", "user": {}}], contexts=[context])
    doc["current-context"] = "e"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.asyncio
async def test_bare_pods_behind_a_service_are_spread_by_scheduler_run(tmp_path: Path) -> None:
    async with server_process() as (url, gw):
        sizes = {"big": "64", "small-b": "4", "small-c": "4"}
        await create_all(
            gw,
            [
                node(name, cpu=sizes[name], labels={"topology.kubernetes.io/zone": zone})
                for name, zone in ZONES.items()
            ],
        )
        await create_all(gw, [parse_object(SERVICE), parse_object(CONTROLLER)])
        await create_all(gw, [web(f"web-{i}") for i in range(3)])
        async with scheduler(url):

            async def bound() -> dict[str, Pod]:
                now = await pods(gw)
                return now if all(p.spec.node_name for p in now.values()) else {}

            now = await eventually(bound, timeout=30)
        assert sorted(ZONES[p.spec.node_name or ""] for p in now.values()) == ["a", "b", "c"]

        config = kubeconfig(tmp_path / "kubeconfig", url)
        code, out, err = await kubectl(config, "get", "services", "-o", "wide")
        assert (code, err) == (0, "")
        header, row = out.splitlines()
        assert header.split() == [
            *("NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR")
        ]
        cells = row.split()
        assert cells[:3] == ["web", "ClusterIP", "10.96.0.1"]
        assert (cells[3], cells[4], cells[6]) == ("<none>", "80:30080/TCP", "app=web")
        code, out, err = await kubectl(config, "get", "rc", "-o", "wide")
        assert (code, err) == (0, "")
        header, row = out.splitlines()
        assert header.split() == [
            *("NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR")
        ]
        cells = row.split()
        assert cells[:4] == ["legacy", "0", "0", "0"]
        assert cells[5:] == ["c", "nginx", "app=legacy"]

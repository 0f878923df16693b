"""The pod scheduler on a real control plane with kube-controller-manager: the pods kube's
Deployment, StatefulSet and Job controllers create, naming our scheduler, are bound through the
real `pods/binding` subresource and run (on the kubelet stand-in's nodes)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubelet import Kubelet, NodeSpec
from tests.e2e.pod_helpers import (
    POOL,
    PROFILES,
    JsonGateway,
    container,
    kubectl_apply,
    wait_until,
)

SCHEDULER = PROFILES["workloads"]
# One scheduler process for every pod module, a profile each: its fixture, `pod_scheduler`,
# comes from pod_fixtures as a plugin (one definition, so one process for the session).
pytest_plugins = ["tests.e2e.pod_fixtures"]
pytestmark = pytest.mark.usefixtures("pod_scheduler")


def _template(app: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "schedulerName": SCHEDULER,
            "nodeSelector": {POOL: SCHEDULER},
            "containers": [container("200m", "128Mi")],
        },
    }


def _workloads(namespace: str) -> list[dict[str, Any]]:
    meta = {"namespace": namespace}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", **meta},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": _template("web"),
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", **meta},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": _template("db"),
            },
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "batch", **meta},
            "spec": {
                "parallelism": 2,
                "completions": 2,
                "template": {
                    **_template("batch"),
                    "spec": {**_template("batch")["spec"], "restartPolicy": "Never"},
                },
            },
        },
    ]


@pytest.mark.asyncio
async def test_deployment_statefulset_and_job_pods_are_bound_and_run(
    controller_manager: ControlPlane,
) -> None:
    namespace = unique_name("e2e-workloads")
    nodes = [
        NodeSpec(unique_name("e2e-wl-node"), cpu="2", labels={POOL: SCHEDULER}) for _ in range(2)
    ]
    gateway = await JsonGateway.open(controller_manager.kubeconfig)
    try:
        await gateway.namespace(namespace)
        async with Kubelet(gateway, nodes, drain=[namespace]) as kubelet:
            started = time.monotonic()
            kubectl_apply(controller_manager, *_workloads(namespace))

            async def running() -> list[dict[str, Any]] | None:
                pods = await gateway.pods(namespace)
                live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
                ok = [p for p in live if (p.get("status") or {}).get("phase") == "Running"]
                return live if len(ok) == 7 and len(live) == 7 else None

            pods = await wait_until(running, 30, "7 running pods (3 web, 2 db, 2 batch)")
            elapsed = time.monotonic() - started
            by_app: dict[str, int] = {}
            names = {n.name for n in nodes}
            for pod in pods:
                spec, status = pod["spec"], pod["status"]
                assert spec["schedulerName"] == SCHEDULER
                assert spec["nodeName"] in names, pod["metadata"]["name"]
                scheduled = next(c for c in status["conditions"] if c["type"] == "PodScheduled")
                assert scheduled["status"] == "True"
                by_app[pod["metadata"]["labels"]["app"]] = (
                    by_app.get(pod["metadata"]["labels"]["app"], 0) + 1
                )
                assert pod["metadata"]["uid"] in kubelet.started
            assert by_app == {"web": 3, "db": 2, "batch": 2}
            # Owned by kube's controllers: a ReplicaSet, the StatefulSet, the Job.
            owners = {p["metadata"]["ownerReferences"][0]["kind"] for p in pods}
            assert owners == {"ReplicaSet", "StatefulSet", "Job"}
            # LeastAllocated spreads seven 200m pods over both 2-CPU nodes.
            assert {p["spec"]["nodeName"] for p in pods} == names
            # The StatefulSet's two ordinals (db-1 is made once db-0 is Running and Ready).
            stateful = {
                p["metadata"]["name"] for p in pods if p["metadata"]["labels"]["app"] == "db"
            }
            assert stateful == {"db-0", "db-1"}

            async def scheduled_events() -> list[dict[str, Any]] | None:
                events = await gateway.items(
                    f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
                    fieldSelector="reason=Scheduled",
                )
                return events if len(events) >= 7 else None

            events = await wait_until(scheduled_events, 10, "7 Scheduled events")
            notes = sorted(e.get("note", "") for e in events)
            assert all(n.startswith(f"Successfully assigned {namespace}/") for n in notes), notes
            assert elapsed < 30
    finally:
        kubectl = controller_manager.kubectl
        kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        await gateway.close()

"""Gangs (PodGroup) and quotas (ElasticQuota) on a real control plane: the scheduler binds a
gang whole or not at all, and its status controller writes the PodGroup's phase and counters and
the ElasticQuota's `status.used` through the status subresource (the real apiserver ignores a
status sent any other way)."""

from __future__ import annotations

import asyncio
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

SCHEDULER = PROFILES["gangs"]
# One scheduler process for every pod module, a profile each: its fixture, `pod_scheduler`,
# comes from pod_fixtures as a plugin (one definition, so one process for the session).
pytest_plugins = ["tests.e2e.pod_fixtures"]
pytestmark = pytest.mark.usefixtures("pod_scheduler")
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
API = "/apis/scheduling.x-k8s.io/v1alpha1"


def _gang_job(namespace: str, group: str, members: int, cpu: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": group, "namespace": namespace},
            "spec": {"minMember": members, "scheduleTimeoutSeconds": 5},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": group, "namespace": namespace},
            "spec": {
                "parallelism": members,
                "completions": members,
                "template": {
                    "metadata": {"labels": {GROUP_LABEL: group}},
                    "spec": {
                        "schedulerName": SCHEDULER,
                        "nodeSelector": {POOL: SCHEDULER},
                        "restartPolicy": "Never",
                        "containers": [container(cpu)],
                    },
                },
            },
        },
    ]


def _bound(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if p["spec"].get("nodeName")]


@pytest.mark.asyncio
async def test_a_gang_binds_whole_or_not_at_all_and_its_podgroup_status_follows(
    controller_manager: ControlPlane,
) -> None:
    namespace = unique_name("e2e-gangs")
    nodes = [
        NodeSpec(unique_name("e2e-gang-node"), cpu="2", labels={POOL: SCHEDULER}) for _ in range(2)
    ]
    gateway = await JsonGateway.open(controller_manager.kubeconfig)
    kubectl = controller_manager.kubectl
    group_path = f"{API}/namespaces/{namespace}/podgroups"
    try:
        await gateway.namespace(namespace)
        async with Kubelet(gateway, nodes, drain=[namespace]) as kubelet:
            # Three members of 1500m: each 2-cpu node holds one, so two of three fit.
            kubectl_apply(controller_manager, *_gang_job(namespace, "big", 3, "1500m"))

            async def scheduling() -> dict[str, Any] | None:
                group = await gateway.read(f"{group_path}/big")
                return group if (group.get("status") or {}).get("phase") == "Scheduling" else None

            group = await wait_until(scheduling, 10, "PodGroup big Scheduling")
            assert group["status"].get("scheduled", 0) == 0
            # None binds, though two could: watch for 3 s (members wait at Permit, then are
            # rejected when the third fits nowhere).
            unschedulable: set[str] = set()
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                pods = await gateway.pods(namespace, f"{GROUP_LABEL}=big")
                assert len(pods) == 3
                assert not _bound(pods), [p["spec"].get("nodeName") for p in pods]
                for pod in pods:
                    for c in (pod.get("status") or {}).get("conditions") or []:
                        if c["type"] == "PodScheduled" and c["status"] == "False":
                            unschedulable.add(pod["metadata"]["name"])
                await asyncio.sleep(0.1)
            assert unschedulable, "no member was reported unschedulable"

            # A third node joins: the whole gang binds, one member per node.
            third = NodeSpec(unique_name("e2e-gang-node"), cpu="2", labels={POOL: SCHEDULER})
            await kubelet.add_node(third)

            async def all_running() -> list[dict[str, Any]] | None:
                pods = await gateway.pods(namespace, f"{GROUP_LABEL}=big")
                running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
                return pods if len(running) == 3 else None

            pods = await wait_until(all_running, 20, "the 3 members running")
            assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(
                [*(n.name for n in nodes), third.name]
            )

            async def group_running() -> dict[str, Any] | None:
                group = await gateway.read(f"{group_path}/big")
                return group if (group.get("status") or {}).get("phase") == "Running" else None

            group = await wait_until(group_running, 10, "PodGroup big Running")
            status = group["status"]
            assert (status["scheduled"], status["running"]) == (3, 3), status
            assert status.get("scheduleStartTime")
            assert status.get("occupiedBy") == f"{namespace}/big"  # the Job owns the members
            # Written through the status subresource by the scheduler's status controller.
            writers = {
                (m.get("manager"), m.get("subresource"))
                for m in group["metadata"].get("managedFields") or []
            }
            assert any(sub == "status" for _, sub in writers), writers
    finally:
        kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        await gateway.close()


@pytest.mark.asyncio
async def test_an_elastic_quota_caps_its_namespace_and_its_used_is_written(
    controller_manager: ControlPlane,
) -> None:
    namespace = unique_name("e2e-quota")
    nodes = [
        NodeSpec(unique_name("e2e-quota-node"), cpu="2", labels={POOL: SCHEDULER}) for _ in range(2)
    ]
    gateway = await JsonGateway.open(controller_manager.kubeconfig)
    kubectl = controller_manager.kubectl
    quota_path = f"{API}/namespaces/{namespace}/elasticquotas/quota"
    try:
        await gateway.namespace(namespace)
        async with Kubelet(gateway, nodes, drain=[namespace]):
            kubectl_apply(
                controller_manager,
                {
                    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                    "kind": "ElasticQuota",
                    "metadata": {"name": "quota", "namespace": namespace},
                    "spec": {"min": {"cpu": "1"}, "max": {"cpu": "1"}},
                },
            )
            # The quota is known to the scheduler before the pods come: its status is written.
            await wait_until(
                lambda: _used(gateway, quota_path), 10, "the quota's status.used", interval=0.1
            )
            kubectl_apply(
                controller_manager,
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "web", "namespace": namespace},
                    "spec": {
                        "replicas": 3,
                        "selector": {"matchLabels": {"app": "web"}},
                        "template": {
                            "metadata": {"labels": {"app": "web"}},
                            "spec": {
                                "schedulerName": SCHEDULER,
                                "nodeSelector": {POOL: SCHEDULER},
                                "containers": [container("400m")],
                            },
                        },
                    },
                },
            )

            async def two_bound_one_refused() -> str | None:
                pods = await gateway.pods(namespace, "app=web")
                refused = [
                    c.get("message", "")
                    for p in pods
                    for c in (p.get("status") or {}).get("conditions") or []
                    if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
                ]
                return refused[0] if len(_bound(pods)) == 2 and len(refused) == 1 else None

            message = await wait_until(two_bound_one_refused, 15, "2 pods bound, 1 over max")
            assert "is more than Max" in message, message

            async def used_is(cpu: str) -> dict[str, str] | None:
                used = await _used(gateway, quota_path)
                return used if used and used.get("cpu") == cpu else None

            await wait_until(lambda: used_is("800m"), 10, "status.used cpu 800m")

            # More room in the quota: the third pod binds, and the status follows.
            await gateway.patch(quota_path, {"spec": {"min": {"cpu": "2"}, "max": {"cpu": "2"}}})

            async def three_bound() -> list[dict[str, Any]] | None:
                pods = _bound(await gateway.pods(namespace, "app=web"))
                return pods if len(pods) == 3 else None

            await wait_until(three_bound, 15, "the third pod bound once max is raised")
            await wait_until(lambda: used_is("1200m"), 10, "status.used cpu 1200m")
            quota = await gateway.read(quota_path)
            writers = {m.get("subresource") for m in quota["metadata"].get("managedFields") or []}
            assert "status" in writers, writers
    finally:
        kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        await gateway.close()


async def _used(gateway: JsonGateway, path: str) -> dict[str, str] | None:
    quota = await gateway.read(path)
    used: dict[str, str] | None = (quota.get("status") or {}).get("used")
    return used

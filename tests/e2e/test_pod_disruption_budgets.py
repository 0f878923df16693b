"""PodDisruptionBudgets on a real control plane: kube-controller-manager's disruption controller
fills a budget's status (expected, healthy, desired pods, no disruption allowed), and our
scheduler's preemption, reading that status through its informer (the shipped RBAC's list/watch
on poddisruptionbudgets), evicts the pods no budget protects, although the protected ones have
the lower priority."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubelet import Kubelet, NodeSpec
from tests.e2e.pod_helpers import POOL, PROFILES, JsonGateway, container, kubectl_apply, wait_until

SCHEDULER = PROFILES["preemption"]
pytest_plugins = ["tests.e2e.pod_fixtures"]
pytestmark = pytest.mark.usefixtures("pod_scheduler")
ROLE = "e2e.ocm.io/budget-role"


def _deployment(name: str, namespace: str, priority: str, role: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "schedulerName": SCHEDULER,
                    "nodeSelector": {POOL: SCHEDULER, ROLE: role},
                    "priorityClassName": priority,
                    "terminationGracePeriodSeconds": 1,
                    "containers": [container("500m")],
                },
            },
        },
    }


@pytest.mark.asyncio
async def test_preemption_spares_the_pods_a_budget_protects(
    controller_manager: ControlPlane,
) -> None:
    namespace = unique_name("e2e-pdb")
    low, mid, high = (unique_name(f"e2e-pdb-{p}") for p in ("low", "mid", "high"))
    web_role, batch_role = unique_name("web"), unique_name("batch")
    nodes = [
        NodeSpec(unique_name("e2e-pdb-node"), cpu="1", labels={POOL: SCHEDULER, ROLE: role})
        for role in (web_role, batch_role)
    ]
    web_node, batch_node = (n.name for n in nodes)
    gateway = await JsonGateway.open(controller_manager.kubeconfig)
    kubectl = controller_manager.kubectl
    try:
        await gateway.namespace(namespace)
        async with Kubelet(gateway, nodes, grace_cap=1.0, drain=[namespace]):
            kubectl_apply(
                controller_manager,
                *(
                    {
                        "apiVersion": "scheduling.k8s.io/v1",
                        "kind": "PriorityClass",
                        "metadata": {"name": name},
                        "value": value,
                    }
                    for name, value in ((low, 100), (mid, 500), (high, 100000))
                ),
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": "web", "namespace": namespace},
                    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
                },
                _deployment("web", namespace, low, web_role),
                _deployment("batch", namespace, mid, batch_role),
            )
            budget_path = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/web"

            async def computed() -> dict[str, Any] | None:
                status = (await gateway.read(budget_path)).get("status") or {}
                return status if status.get("currentHealthy") == 2 else None

            status = await wait_until(computed, 20, "the disruption controller's status")
            assert (status["expectedPods"], status["desiredHealthy"]) == (2, 2)
            assert status["disruptionsAllowed"] == 0
            web = await gateway.pods(namespace, "app=web")
            assert {p["spec"]["nodeName"] for p in web} == {web_node}

            kubectl_apply(
                controller_manager,
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "urgent", "namespace": namespace},
                    "spec": {
                        "schedulerName": SCHEDULER,
                        "nodeSelector": {POOL: SCHEDULER},
                        "priorityClassName": high,
                        "containers": [container("1")],
                    },
                },
            )

            async def bound() -> str | None:
                pod = await gateway.read(f"/api/v1/namespaces/{namespace}/pods/urgent")
                node: str | None = pod["spec"].get("nodeName")
                return node

            # The web pods have the lower priority, but their budget allows no disruption.
            assert await wait_until(bound, 15, "the preemptor bound") == batch_node
            web = await gateway.pods(namespace, "app=web")
            assert len(web) == 2
            assert not any(p["metadata"].get("deletionTimestamp") for p in web)
    finally:
        kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        kubectl("delete", "priorityclass", low, mid, high, "--ignore-not-found", check=False)
        await gateway.close()

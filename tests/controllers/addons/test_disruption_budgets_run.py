"""`placement scheduler run` with a PodDisruptionBudget, on the embedded API server: the
scheduler's informer reads the budget's `status.disruptionsAllowed` (as kube's
disruption controller writes it) and preemption spares the protected pod when another node
works."""

from __future__ import annotations

import pytest

from apis.core import Pod
from apis.policy import PodDisruptionBudget
from apis.registry import parse_as
from apis.scheduling import PriorityClass
from tests.controllers.addons.cluster import node, pod
from tests.controllers.addons.test_scheduler_e2e import scheduler
from tests.controllers.embedded.hub import eventually, hub


@pytest.mark.asyncio
async def test_run_preempts_the_pod_no_budget_protects() -> None:
    async with hub() as (server, gw):
        url = server.url
        for name in ("n-a", "n-b"):
            await gw.create(node(name, cpu="2"))
        for name, value in (("low", 100), ("batch", 500), ("urgent", 1000)):
            doc = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
            await gw.create(parse_as(PriorityClass, doc))
        web = pod("web", "2", "64Mi", priorityClassName="low", nodeName="n-a")
        web.metadata.labels = {"app": "web"}
        await gw.create(web)
        await gw.create(pod("report", "2", "64Mi", priorityClassName="batch", nodeName="n-b"))
        budget = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        }
        await gw.create(parse_as(PodDisruptionBudget, budget))
        # what kube's disruption controller writes: one healthy pod, one wanted, none may go
        status = {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1}
        await gw.patch_status(PodDisruptionBudget, "web", {"status": status}, "default")
        async with scheduler(url):
            await gw.create(pod("checkout", "2", "64Mi", priorityClassName="urgent"))

            async def placed() -> dict[str, Pod]:
                now = {p.name: p for p in (await gw.list(Pod)).items}
                return now if now["checkout"].spec.node_name else {}

            now = await eventually(placed, timeout=20)
            assert now["checkout"].spec.node_name == "n-b"
            assert "report" not in now and "web" in now

"""Preemption on a real control plane: a high-priority pod (PriorityClasses, resolved by the
apiserver's Priority admission) preempts lower-priority Deployment pods on full nodes through
real graceful deletion. The victims get a deletionTimestamp and stay terminating for their grace
period (the kubelet stand-in finishes them), the preemptor gets `status.nominatedNodeName`, and
binds to that node only once the victims are gone."""

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

SCHEDULER = PROFILES["preemption"]
# One scheduler process for every pod module, a profile each: its fixture, `pod_scheduler`,
# comes from pod_fixtures as a plugin (one definition, so one process for the session).
pytest_plugins = ["tests.e2e.pod_fixtures"]
pytestmark = pytest.mark.usefixtures("pod_scheduler")


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


@pytest.mark.asyncio
async def test_high_priority_pod_preempts_through_graceful_deletion(
    controller_manager: ControlPlane,
) -> None:
    namespace = unique_name("e2e-preempt")
    low, high = unique_name("e2e-low"), unique_name("e2e-high")
    nodes = [
        NodeSpec(unique_name("e2e-pre-node"), cpu="1", labels={POOL: SCHEDULER}) for _ in range(2)
    ]
    names = {n.name for n in nodes}
    gateway = await JsonGateway.open(controller_manager.kubeconfig)
    kubectl = controller_manager.kubectl
    try:
        await gateway.namespace(namespace)
        # A 2-second grace cap: long enough to see the victims terminating.
        async with Kubelet(gateway, nodes, grace_cap=2.0, drain=[namespace]) as kubelet:
            kubectl_apply(
                controller_manager,
                _priority_class(low, 100),
                _priority_class(high, 100000),
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "filler", "namespace": namespace},
                    "spec": {
                        "replicas": 4,
                        "selector": {"matchLabels": {"app": "filler"}},
                        "template": {
                            "metadata": {"labels": {"app": "filler"}},
                            "spec": {
                                "schedulerName": SCHEDULER,
                                "nodeSelector": {POOL: SCHEDULER},
                                "priorityClassName": low,
                                "terminationGracePeriodSeconds": 30,
                                "containers": [container("500m")],
                            },
                        },
                    },
                },
            )

            async def filled() -> list[dict[str, Any]] | None:
                pods = await gateway.pods(namespace, "app=filler")
                running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
                return running if len(running) == 4 else None

            fillers = await wait_until(filled, 20, "4 running filler pods")
            assert {p["spec"]["priority"] for p in fillers} == {100}
            assert {p["spec"]["nodeName"] for p in fillers} == names  # both nodes full

            started = time.monotonic()
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
            urgent_path = f"/api/v1/namespaces/{namespace}/pods/urgent"
            # Watch what happens, every 50 ms, until the preemptor runs.
            nominated: str | None = None
            nominated_unbound = False
            terminating: dict[str, dict[str, Any]] = {}
            bound_at_victims: list[str] = []
            deadline = time.monotonic() + 20
            while True:
                assert time.monotonic() < deadline, "the preemptor did not run in 20 s"
                urgent = await gateway.read(urgent_path)
                node = urgent["spec"].get("nodeName")
                nominee = (urgent.get("status") or {}).get("nominatedNodeName")
                if nominee and not node:
                    nominated, nominated_unbound = nominee, True
                for pod in await gateway.pods(namespace, "app=filler"):
                    if pod["metadata"].get("deletionTimestamp"):
                        terminating.setdefault(pod["metadata"]["name"], pod)
                if node and not bound_at_victims:
                    # The moment it is seen bound: which victims still exist?
                    left = {p["metadata"]["name"] for p in await gateway.pods(namespace)}
                    bound_at_victims = sorted(left & set(terminating)) or ["none"]
                if (urgent.get("status") or {}).get("phase") == "Running":
                    break
                await asyncio.sleep(0.05)
            elapsed = time.monotonic() - started

            assert urgent["spec"]["priority"] == 100000
            assert nominated in names and nominated_unbound, "no nominatedNodeName seen"
            assert urgent["spec"]["nodeName"] == nominated
            # Two victims, both on the nominated node, deleted gracefully (not at once).
            assert len(terminating) == 2, sorted(terminating)
            for victim in terminating.values():
                meta, status = victim["metadata"], victim.get("status") or {}
                assert victim["spec"]["nodeName"] == nominated
                assert meta["deletionGracePeriodSeconds"] == 30
                target = [
                    c for c in status.get("conditions") or [] if c["type"] == "DisruptionTarget"
                ]
                assert target, f"{meta['name']} has no DisruptionTarget condition"
                assert target[0]["reason"] == "PreemptionByScheduler"
                # The victim's generation when marked, as kube 1.36 writes it (its graceful
                # deletion then bumped the generation).
                assert (target[0]["observedGeneration"], meta["generation"]) == (1, 2)
            # It bound only once its victims were gone (the kubelet removed them).
            assert bound_at_victims == ["none"]
            assert set(terminating) <= {r.split("/")[1] for r in kubelet.removed}
            assert elapsed < 15

            # The ReplicaSet replaced its victims: the replacements wait, unschedulable.
            async def replacements_pending() -> list[dict[str, Any]] | None:
                pods = await gateway.pods(namespace, "app=filler")
                pending = [
                    p
                    for p in pods
                    if not p["spec"].get("nodeName")
                    and any(
                        c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
                        for c in (p.get("status") or {}).get("conditions") or []
                    )
                ]
                return pending if len(pending) == 2 else None

            pending = await wait_until(replacements_pending, 10, "2 unschedulable replacements")
            scheduled = next(
                c for c in pending[0]["status"]["conditions"] if c["type"] == "PodScheduled"
            )
            assert scheduled["observedGeneration"] == pending[0]["metadata"]["generation"]
            message = next(
                c["message"]
                for c in pending[0]["status"]["conditions"]
                if c["type"] == "PodScheduled"
            )
            assert message.startswith("0/"), message
            assert "Insufficient cpu" in message, message
    finally:
        kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        kubectl("delete", "priorityclass", low, high, "--ignore-not-found", check=False)
        await gateway.close()

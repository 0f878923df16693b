"""WaitForFirstConsumer claims on a real control plane, bound as kube binds them: the scheduler
picks a node and an available static volume there and, at PreBind, writes only the volume's
`claimRef` (with the `pv.kubernetes.io/bound-by-controller` annotation, kube's
`GetBindVolumeToClaim`); kube-controller-manager's PV controller completes the binding (the
claim's `volumeName`, `pv.kubernetes.io/bind-completed`, both phases Bound); the pod is bound
only once its claims are (kube's `checkBindings`); a pod for which no volume is left waits with
kube's reason."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubelet import Kubelet, NodeSpec
from tests.e2e.pod_helpers import (
    PROFILES,
    JsonGateway,
    container,
    kubectl_apply,
    wait_until,
)

SCHEDULER = PROFILES["volumes"]
# One scheduler process for every pod module, a profile each: its fixture, `pod_scheduler`,
# comes from pod_fixtures as a plugin (one definition, so one process for the session).
pytest_plugins = ["tests.e2e.pod_fixtures"]
pytestmark = pytest.mark.usefixtures("pod_scheduler")
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"


def _local_pv(name: str, node: str, klass: str, size: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": klass,
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": [node],
                                }
                            ]
                        }
                    ]
                }
            },
        },
    }


@pytest.mark.asyncio
async def test_wait_for_first_consumer_claims_are_bound_by_kubes_pv_controller(
    controller_manager: ControlPlane,
) -> None:
    namespace = unique_name("e2e-volumes")
    klass = unique_name("e2e-local")
    nodes = [NodeSpec(unique_name("e2e-vol-node")) for _ in range(3)]
    # One volume on each of the first two nodes, none on the third.
    volumes = {unique_name("e2e-pv"): nodes[i].name for i in range(2)}
    gateway = await JsonGateway.open(controller_manager.kubeconfig)
    kubectl = controller_manager.kubectl
    try:
        await gateway.namespace(namespace)
        async with Kubelet(gateway, nodes, drain=[namespace]):
            kubectl_apply(
                controller_manager,
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "StorageClass",
                    "metadata": {"name": klass},
                    "provisioner": "kubernetes.io/no-provisioner",
                    "volumeBindingMode": "WaitForFirstConsumer",
                },
                *(_local_pv(pv, node, klass, "1Gi") for pv, node in volumes.items()),
            )
            started = time.monotonic()
            kubectl_apply(
                controller_manager,
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "metadata": {"name": "store", "namespace": namespace},
                    "spec": {
                        "replicas": 3,  # two volumes: the third pod finds none
                        "serviceName": "store",
                        "selector": {"matchLabels": {"app": "store"}},
                        "template": {
                            "metadata": {"labels": {"app": "store"}},
                            "spec": {
                                "schedulerName": SCHEDULER,
                                "containers": [
                                    {
                                        **container(),
                                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                                    }
                                ],
                            },
                        },
                        "volumeClaimTemplates": [
                            {
                                "metadata": {"name": "data"},
                                "spec": {
                                    "storageClassName": klass,
                                    "accessModes": ["ReadWriteOnce"],
                                    "resources": {"requests": {"storage": "512Mi"}},
                                },
                            }
                        ],
                    },
                },
            )
            claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
            # Every time a pod is seen bound, its claim is already fully bound.
            seen_bound: dict[str, dict[str, Any]] = {}
            deadline = time.monotonic() + 25
            while True:
                assert time.monotonic() < deadline, "the StatefulSet's pods did not run"
                pods = await gateway.pods(namespace, "app=store")
                claims = {c["metadata"]["name"]: c for c in await gateway.items(claims_path)}
                for pod in pods:
                    name = pod["metadata"]["name"]
                    if pod["spec"].get("nodeName") and name not in seen_bound:
                        seen_bound[name] = claims[f"data-{name}"]
                running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
                if len(running) == 2:
                    break
                await asyncio.sleep(0.05)
            elapsed = time.monotonic() - started

            for name, claim in seen_bound.items():
                annotations = claim["metadata"].get("annotations") or {}
                assert claim["spec"].get("volumeName") in volumes, (name, claim)
                assert annotations.get(BIND_COMPLETED) == "yes", (name, annotations)

            async def all_bound() -> list[dict[str, Any]] | None:
                found = await gateway.items(claims_path)
                done = [c for c in found if (c.get("status") or {}).get("phase") == "Bound"]
                return done if len(done) == 2 else None

            bound = await wait_until(all_bound, 10, "both claims Bound")
            on_node = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in running}
            used = set()
            for claim in bound:
                pv_name = claim["spec"]["volumeName"]
                used.add(pv_name)
                pod = claim["metadata"]["name"].removeprefix("data-")
                assert on_node[pod] == volumes[pv_name], (pod, pv_name)
                annotations = claim["metadata"].get("annotations") or {}
                # The claim's side is written by kube's PV controller, not by the scheduler.
                assert annotations.get(BIND_COMPLETED) == "yes"
                assert annotations.get(BOUND_BY_CONTROLLER) == "yes"
                assert _writers(claim, "f:volumeName") == {"kube-controller-manager"}
                pv = await gateway.read(f"/api/v1/persistentvolumes/{pv_name}")
                assert pv["status"]["phase"] == "Bound"
                ref = pv["spec"]["claimRef"]
                assert (ref["namespace"], ref["name"]) == (namespace, claim["metadata"]["name"])
                assert ref["uid"] == claim["metadata"]["uid"]
                assert pv["metadata"]["annotations"].get(BOUND_BY_CONTROLLER) == "yes"
                assert "kube-controller-manager" not in _writers(pv, "f:claimRef")
            assert used == set(volumes)
            assert nodes[2].name not in on_node.values()
            assert elapsed < 20

            # The third pod: no volume left anywhere, kube's reason; its claim stays Pending.
            async def third_refused() -> str | None:
                pod = await gateway.read(f"/api/v1/namespaces/{namespace}/pods/store-2")
                for c in (pod.get("status") or {}).get("conditions") or []:
                    if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable":
                        return str(c["message"])
                return None

            message = await wait_until(third_refused, 10, "store-2 unschedulable")
            assert "didn't find available persistent volumes to bind" in message, message
            claim = await gateway.read(f"{claims_path}/data-store-2")
            assert claim["status"]["phase"] == "Pending"
            assert not claim["spec"].get("volumeName")
    finally:
        kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        kubectl("delete", "pv", *volumes, "--ignore-not-found", "--wait=false", check=False)
        kubectl("delete", "storageclass", klass, "--ignore-not-found", check=False)
        await gateway.close()


def _writers(obj: dict[str, Any], field: str) -> set[str]:
    """The managers whose managedFields entry owns `spec.<field>` (`f:volumeName`...)."""
    return {
        m.get("manager", "")
        for m in obj["metadata"].get("managedFields") or []
        if field in ((m.get("fieldsV1") or {}).get("f:spec") or {})
    }

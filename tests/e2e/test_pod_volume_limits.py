"""NodeVolumeLimits on a real control plane, side by side with kube-scheduler v1.36.2: the same
world twice, on two node pools (one scheduled by our scheduler, running as its ServiceAccount
with the shipped RBAC, so its CSINode informer is allowed; one by the kube-scheduler binary with
a profile of its own). Each pool has a node whose CSINode allows 1 volume of the driver and one
allowing 2; four pods with a CSI volume each and a fifth sharing the first one's claim. Both
schedulers give the same verdict: every attach slot taken, none over, one of the four pending
with `2 node(s) exceed max volume count`, the sharer beside the pod whose volume it mounts."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
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
    kube_scheduler,
    kubectl_apply,
    wait_until,
)

OURS = PROFILES["limits"]
KUBE = unique_name("e2e-kube-limits")
DRIVER = "ebs.csi.aws.com"
LIMITS = (1, 2)
pytest_plugins = ["tests.e2e.pod_fixtures"]
pytestmark = pytest.mark.usefixtures("pod_scheduler")
Doc = dict[str, Any]


def _world(namespace: str, scheduler: str, nodes: list[str]) -> list[Doc]:
    """CSINodes for `nodes`, four bound CSI volumes and claims, five pods (the last sharing
    the first pod's claim), the pods selecting the pool of `scheduler`."""
    docs: list[Doc] = []
    for node, count in zip(nodes, LIMITS, strict=True):
        driver = {"name": DRIVER, "nodeID": node, "allocatable": {"count": count}}
        csinode = {"metadata": {"name": node}, "spec": {"drivers": [driver]}}
        docs.append({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", **csinode})
    for i in range(4):
        pv = f"{namespace}-{scheduler}-{i}"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": pv},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "",
                    "csi": {"driver": DRIVER, "volumeHandle": pv},
                    "claimRef": {"namespace": namespace, "name": f"{scheduler}-{i}"},
                },
            }
        )
        spec: Doc = {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": pv}
        spec["resources"] = {"requests": {"storage": "1Gi"}}
        meta = {"name": f"{scheduler}-{i}", "namespace": namespace}
        docs.append(
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
        )
    return docs


def _pod(namespace: str, scheduler: str, name: str, claim: str) -> Doc:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "nodeSelector": {POOL: scheduler},
            "containers": [container()],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }


def _message(pod: Doc) -> str:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return str(condition.get("message", ""))
    return ""


async def _verdict(gateway: JsonGateway, namespace: str, scheduler: str) -> dict[str, Any]:
    """Once settled (four bound, one refused for its volumes): the volumes per node, the
    refused pod and the count of nodes that refused it for its volumes."""

    async def settled() -> dict[str, Any] | None:
        pods = [p for p in await gateway.pods(namespace) if p["spec"]["schedulerName"] == scheduler]
        bound = {
            p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")
        }
        refused = {p["metadata"]["name"]: _message(p) for p in pods if _message(p)}
        if len(bound) != 4 or len(refused) != 1:
            return None
        ((name, message),) = refused.items()
        counted = re.search(r"(\d+) node\(s\) exceed max volume count", message)
        return {"bound": bound, "refused": name, "exceeded": counted and int(counted.group(1))}

    found: dict[str, Any] = await wait_until(settled, 10, f"{scheduler}'s pods settled")
    return found


@pytest.mark.asyncio
async def test_attach_limits_give_kube_schedulers_verdict(controller_manager: ControlPlane) -> None:
    namespace = unique_name("e2e-limits")
    pools = {
        scheduler: [unique_name(f"e2e-limits-{i}") for i in range(2)] for scheduler in (OURS, KUBE)
    }
    specs = [
        NodeSpec(node, labels={POOL: scheduler})
        for scheduler, nodes in pools.items()
        for node in nodes
    ]
    gateway = await JsonGateway.open(controller_manager.kubeconfig)
    kubectl = controller_manager.kubectl
    folder = Path(tempfile.mkdtemp(prefix="e2e-kube-limits-"))
    kube = kube_scheduler(controller_manager, folder, KUBE)
    try:
        await gateway.namespace(namespace)
        async with Kubelet(gateway, specs, drain=[namespace]):
            for scheduler, nodes in pools.items():
                kubectl_apply(controller_manager, *_world(namespace, scheduler, nodes))
            for i in range(4):  # in order: each scheduler's queue takes them by creation
                for scheduler in pools:
                    kubectl_apply(
                        controller_manager,
                        _pod(namespace, scheduler, f"{scheduler}-app-{i}", f"{scheduler}-{i}"),
                    )
            for scheduler in pools:
                kubectl_apply(
                    controller_manager,
                    _pod(namespace, scheduler, f"{scheduler}-backup", f"{scheduler}-0"),
                )
            verdicts = {s: await _verdict(gateway, namespace, s) for s in pools}
        for scheduler, verdict in verdicts.items():
            bound = verdict["bound"]
            per_node = {
                n: sum(1 for k, v in bound.items() if v == n and "backup" not in k)
                for n in pools[scheduler]
            }
            assert list(per_node.values()) == list(LIMITS), (scheduler, verdict)
            assert bound[f"{scheduler}-backup"] == bound[f"{scheduler}-app-0"], verdict
            assert verdict["refused"].startswith(f"{scheduler}-app-"), verdict
            assert verdict["exceeded"] == 2, verdict
        assert verdicts[OURS]["exceeded"] == verdicts[KUBE]["exceeded"]
    finally:
        kube.terminate()
        try:
            kube.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kube.kill()
        kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        nodes = [n for ns in pools.values() for n in ns]
        kubectl("delete", "csinode", *nodes, "--ignore-not-found", "--wait=false", check=False)
        volumes = [f"{namespace}-{s}-{i}" for s in pools for i in range(4)]
        kubectl("delete", "pv", *volumes, "--ignore-not-found", "--wait=false", check=False)
        await gateway.close()

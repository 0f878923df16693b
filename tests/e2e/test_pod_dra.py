"""Dynamic resource allocation on a real control plane, side by side with kube-scheduler v1.36.2:
kube-apiserver serving resource.k8s.io/v1 and kube-controller-manager's resourceclaim
controller making each pod's claim from its template, the same world twice on two node pools
(one scheduled by `placement scheduler run`, one by the kube-scheduler binary with a profile of
its own). A DeviceClass selects the driver `gpu.example.com`; each node of a pool publishes a
ResourceSlice of two devices; five pods each ask for one device through a ResourceClaimTemplate.

Both schedulers give the same verdict: four pods bound, each claim allocated one device of the
pod's node and reserved for the pod, written alike (the delete-protection finalizer, the
allocation's fields, its allocationTimestamp); the fifth pending with the same message. Once a
bound pod is deleted, its claim goes with it (garbage collection, the claim controller's
deallocation) and the fifth pod gets the freed device.

Our scheduler runs as a ServiceAccount holding the shipped ClusterRole's rules, as a user
deploys it: the claim writes of PreBind are what that role grants.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubelet import Kubelet, NodeSpec
from tests.e2e.pod_helpers import (
    POOL,
    JsonGateway,
    container,
    kube_scheduler,
    kubectl_apply,
    scheduler_process,
    service_account,
    wait_until,
)

OURS = unique_name("e2e-dra")
KUBE = unique_name("e2e-kube-dra")
DRIVER = "gpu.example.com"
DEVICES_PER_NODE = 2
PODS = 5
Doc = dict[str, Any]
RESOURCE = "resource.k8s.io/v1"


def _class(name: str) -> Doc:
    selector = {"cel": {"expression": f'device.driver == "{DRIVER}"'}}
    return {
        "apiVersion": RESOURCE,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [selector]},
    }


def _slice(node: str) -> Doc:
    devices = [
        {"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(DEVICES_PER_NODE)
    ]
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": devices,
        },
    }


def _template(namespace: str, device_class: str) -> Doc:
    request = {"name": "gpu", "exactly": {"deviceClassName": device_class}}
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def _pod(namespace: str, scheduler: str, name: str) -> Doc:
    main = container()
    main["resources"] = {**main.get("resources", {}), "claims": [{"name": "gpu"}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "nodeSelector": {POOL: scheduler},
            "containers": [main],
            "terminationGracePeriodSeconds": 1,
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        },
    }


def _message(pod: Doc) -> str:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return str(condition.get("message", ""))
    return ""


def _claim_name(pod: Doc) -> str:
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if status.get("name") == "gpu":
            return str(status.get("resourceClaimName") or "")
    return ""


async def _claim(gateway: JsonGateway, namespace: str, name: str) -> Doc:
    path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"
    return await gateway.read(path)


async def _pods(gateway: JsonGateway, namespace: str, scheduler: str) -> list[Doc]:
    return [p for p in await gateway.pods(namespace) if p["spec"]["schedulerName"] == scheduler]


async def _verdict(gateway: JsonGateway, namespace: str, scheduler: str) -> dict[str, Any]:
    """Once settled (four bound with their claims reserved, one refused): the pods' nodes,
    the refused pod's message, each bound pod's claim."""

    async def settled() -> dict[str, Any] | None:
        pods = await _pods(gateway, namespace, scheduler)
        bound = {p["metadata"]["name"]: p for p in pods if p["spec"].get("nodeName")}
        refused = {p["metadata"]["name"]: _message(p) for p in pods if _message(p)}
        if len(bound) != PODS - 1 or len(refused) != 1:
            return None
        claims = {}
        for name, pod in bound.items():
            claim_name = _claim_name(pod)
            if not claim_name:
                return None
            claim = await _claim(gateway, namespace, claim_name)
            if not (claim.get("status") or {}).get("reservedFor"):
                return None
            claims[name] = claim
        return {
            "nodes": {name: pod["spec"]["nodeName"] for name, pod in bound.items()},
            "uids": {name: pod["metadata"]["uid"] for name, pod in bound.items()},
            "refused": refused,
            "claims": claims,
        }

    found: dict[str, Any] = await wait_until(settled, 20, f"{scheduler}'s pods settled")
    return found


def _shape(claim: Doc) -> Doc:
    """What a scheduler wrote on a claim, values that differ between runs left out."""
    allocation = dict(claim["status"]["allocation"])
    (result,) = allocation["devices"]["results"]
    return {
        "finalizers": claim["metadata"].get("finalizers"),
        "allocation": sorted(allocation),
        "result": sorted(result),
        "timestamped": bool(allocation.get("allocationTimestamp")),
        "nodeSelector": re.sub(r"'e2e-[^']*'", "node", str(allocation.get("nodeSelector"))),
        "reservedFor": [sorted(ref) for ref in claim["status"]["reservedFor"]],
    }


def _our_config(folder: Path) -> Path:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": OURS}],  # the default plugins, DynamicResources among them
    }
    path = folder / "ours.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.asyncio
async def test_claims_from_templates_give_kube_schedulers_verdict(
    controller_manager: ControlPlane,
) -> None:
    namespace = unique_name("e2e-dra")
    device_class = unique_name("e2e-gpu")
    pools = {s: [unique_name(f"e2e-dra-{i}") for i in range(2)] for s in (OURS, KUBE)}
    specs = [NodeSpec(n, labels={POOL: s}) for s, nodes in pools.items() for n in nodes]
    gateway = await JsonGateway.open(controller_manager.kubeconfig)
    kubectl = controller_manager.kubectl
    folder = Path(tempfile.mkdtemp(prefix="e2e-dra-"))
    kube = kube_scheduler(controller_manager, folder, KUBE)
    try:
        await gateway.namespace(namespace)
        account = service_account(controller_manager, unique_name("e2e-dra-sched"), folder)
        config = f"--config={_our_config(folder)}"
        with scheduler_process(controller_manager, config, kubeconfig=account) as ours:
            async with Kubelet(gateway, specs, drain=[namespace]):
                kubectl_apply(controller_manager, _class(device_class))
                kubectl_apply(controller_manager, *(_slice(n) for ns in pools.values() for n in ns))
                kubectl_apply(controller_manager, _template(namespace, device_class))
                for i in range(PODS):  # in order: each scheduler's queue takes them by creation
                    for scheduler in pools:
                        kubectl_apply(
                            controller_manager, _pod(namespace, scheduler, f"{scheduler}-{i}")
                        )
                try:
                    verdicts = {s: await _verdict(gateway, namespace, s) for s in (KUBE, OURS)}
                except AssertionError as failed:
                    raise AssertionError(f"{failed}\nours:\n{ours.output()}") from None
                for scheduler, verdict in verdicts.items():
                    nodes = verdict["nodes"]
                    per_node = {n: list(nodes.values()).count(n) for n in pools[scheduler]}
                    assert list(per_node.values()) == [DEVICES_PER_NODE] * 2, (scheduler, nodes)
                    devices = set()
                    for pod, claim in verdict["claims"].items():
                        (result,) = claim["status"]["allocation"]["devices"]["results"]
                        assert (result["driver"], result["pool"]) == (DRIVER, nodes[pod])
                        devices.add((result["pool"], result["device"]))
                        uid = verdict["uids"][pod]
                        reserved = claim["status"]["reservedFor"]
                        assert reserved == [{"resource": "pods", "name": pod, "uid": uid}]
                    assert len(devices) == PODS - 1  # no device given twice
                    ((refused, message),) = verdict["refused"].items()
                    assert refused == f"{scheduler}-{PODS - 1}", verdict["refused"]
                    assert "2 cannot allocate all claims" in message, message
                # The same words, and the claims written alike.
                assert list(verdicts[OURS]["refused"].values()) == list(
                    verdicts[KUBE]["refused"].values()
                )
                shapes = {
                    s: {str(_shape(c)) for c in v["claims"].values()} for s, v in verdicts.items()
                }
                assert shapes[OURS] == shapes[KUBE], shapes

                # A bound pod deleted: its claim goes, its device is free, the fifth pod gets it.
                for scheduler in pools:
                    kubectl("delete", "pod", f"{scheduler}-0", "-n", namespace, "--wait=false")

                async def fifth_bound() -> bool:
                    for scheduler in pools:
                        pods = await _pods(gateway, namespace, scheduler)
                        last = next(
                            p for p in pods if p["metadata"]["name"] == f"{scheduler}-{PODS - 1}"
                        )
                        if not last["spec"].get("nodeName") or not _claim_name(last):
                            return False
                        claim = await _claim(gateway, namespace, _claim_name(last))
                        if not (claim.get("status") or {}).get("reservedFor"):
                            return False
                    return True

                try:
                    await wait_until(fifth_bound, 30, "the fifth pods bound once a device is free")
                except AssertionError as failed:
                    raise AssertionError(f"{failed}\nours:\n{ours.output()}") from None
                for scheduler in pools:
                    pods = await _pods(gateway, namespace, scheduler)
                    freed = verdicts[scheduler]["nodes"][f"{scheduler}-0"]
                    last = next(
                        p for p in pods if p["metadata"]["name"] == f"{scheduler}-{PODS - 1}"
                    )
                    assert last["spec"]["nodeName"] == freed, scheduler
    finally:
        kube.terminate()
        try:
            kube.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kube.kill()
        kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        slices = [f"{n}-{DRIVER}" for ns in pools.values() for n in ns]
        kubectl(
            "delete", "resourceslice", *slices, "--ignore-not-found", "--wait=false", check=False
        )
        kubectl(
            "delete", "deviceclass", device_class, "--ignore-not-found", "--wait=false", check=False
        )
        await gateway.close()

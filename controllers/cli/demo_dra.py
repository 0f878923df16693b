"""The GPU part of `placement demo --local`: dynamic resource allocation (DRA) for a gang.

Two GPU nodes, tainted `gpu.example.com/gpu=present:NoSchedule` so that only the pods asking
for GPUs go there, and what a DRA driver `gpu.example.com` would publish for them: one
ResourceSlice per node of two GPUs each (attributes `model` and `index`, capacity `memory`).
A DeviceClass names the driver's devices by CEL, a ResourceClaimTemplate asks for one of them,
and PodGroup `finetune` (minMember 4) has four members that each claim a GPU from the template.
The embedded server plays kube-controller-manager's resourceclaim controller (one claim per
member); the scheduler allocates each claim a GPU, the members wait at Permit until all four
hold one, and bind together. After the pods' table the demo prints which pod got which GPU on
which node, from the claims' `status.allocation`.
"""

from __future__ import annotations

from typing import Any

from apis.core import Node, Pod
from apis.meta import KubeObject
from apis.registry import parse_as
from apis.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from apis.scheduling import POD_GROUP_LABEL, PodGroup
from placement.pods.config.scheduler_config import DEFAULT_SCHEDULER_NAME

__all__ = [
    "DRIVER",
    "GANG",
    "gang_pods",
    "gpu_nodes",
    "gpu_objects",
    "gpu_rows",
]

DRIVER = "gpu.example.com"
GANG = "finetune"
TEMPLATE = "one-gpu"
GPU_TAINT = {"key": f"{DRIVER}/gpu", "value": "present", "effect": "NoSchedule"}
GPUS_PER_NODE = 2
GPU_NODES = ("gpu-0", "gpu-1")


def gpu_nodes() -> list[Node]:
    """The GPU nodes: on-demand capacity, 16 cpu, tainted for GPU pods only."""
    return [
        parse_as(
            Node,
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "kubernetes.io/hostname": name,
                        "node.kubernetes.io/capacity": "on-demand",
                        "topology.kubernetes.io/zone": "ab"[i % 2],
                    },
                },
                "spec": {"taints": [GPU_TAINT]},
                "status": {
                    "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                    "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            },
        )
        for i, name in enumerate(GPU_NODES)
    ]


def _slice(node: str) -> ResourceSlice:
    devices = [
        {
            "name": f"gpu-{index}",
            "attributes": {"model": {"string": "L4"}, "index": {"int": index}},
            "capacity": {"memory": {"value": "24Gi"}},
        }
        for index in range(GPUS_PER_NODE)
    ]
    return parse_as(
        ResourceSlice,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRIVER}"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        },
    )


def gpu_objects() -> list[KubeObject]:
    """The DeviceClass, the driver's ResourceSlices, the template and the gang's PodGroup, in
    the order a user would apply them (before the pods)."""
    device_class = parse_as(
        DeviceClass,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        },
    )
    template = parse_as(
        ResourceClaimTemplate,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": TEMPLATE, "namespace": "default"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]
                    }
                }
            },
        },
    )
    group = parse_as(
        PodGroup,
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": GANG, "namespace": "default"},
            "spec": {"minMember": 4},
        },
    )
    return [device_class, *(_slice(node) for node in GPU_NODES), template, group]


def gang_pods() -> list[Pod]:
    """The gang's four members, each claiming one GPU through the template."""
    pods = []
    for i in range(4):
        container: dict[str, Any] = {
            "name": "train",
            "image": "example/finetune",
            "resources": {"requests": {"cpu": "2", "memory": "8Gi"}, "claims": [{"name": "gpu"}]},
        }
        pods.append(
            parse_as(
                Pod,
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{GANG}-{i}",
                        "namespace": "default",
                        "labels": {"app": GANG, POD_GROUP_LABEL: GANG},
                    },
                    "spec": {
                        "schedulerName": DEFAULT_SCHEDULER_NAME,
                        "tolerations": [{**GPU_TAINT, "operator": "Equal"}],
                        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": TEMPLATE}],
                        "containers": [container],
                    },
                },
            )
        )
    return pods


def _claim_names(pod: Pod) -> list[str]:
    """The claims a pod uses: named directly, or made for it from a template (its status)."""
    made = {
        status.name: status.resource_claim_name
        for status in (pod.status.resource_claim_statuses if pod.status else None) or []
    }
    names = []
    for entry in pod.spec.resource_claims or []:
        name = entry.resource_claim_name or made.get(entry.name)
        if name:
            names.append(name)
    return names


def gpu_rows(pods: list[Pod], claims: list[ResourceClaim]) -> list[list[str]]:
    """One row per device allocated to a pod's claim: pod, node, claim, `driver/pool/device`;
    a claim not allocated (yet) shows `-` as its device."""
    by_name = {claim.name: claim for claim in claims}
    rows = []
    for pod in sorted(pods, key=lambda p: p.name):
        for name in _claim_names(pod):
            claim = by_name.get(name)
            allocation = claim.status.allocation if claim and claim.status else None
            results = (
                allocation.devices.results if allocation and allocation.devices else None
            ) or []
            devices = [f"{r.driver}/{r.pool}/{r.device}" for r in results] or ["-"]
            for device in devices:
                rows.append([pod.name, pod.spec.node_name or "-", name, device])
    return rows

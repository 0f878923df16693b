"""`placement demo --local`: the pod scheduler on a local cluster, in a few seconds.

An embedded API server with its kubelet simulation (bound pods go Running) gets a mixed node
pool, three on-demand nodes and three tainted spot nodes, and the pods of a few workloads: a web
Deployment, an API StatefulSet of four replicas anti-affine on the hostname (one per node: three
bind, the fourth is reported waiting for a node), batch Job pods that tolerate spot, spot
workers that select it, and one pod asking for a GPU no node has as an extended resource
(`nvidia.com/gpu`). Beside them, two GPU nodes whose GPUs a DRA driver publishes in
ResourceSlices, and a training gang whose four members each claim one
(`controllers.cli.demo_dra`). The scheduler runs (`controllers.addons.scheduler`, as
`placement scheduler run` runs it) until every pod is bound or reported Unschedulable; then a
table of the pods: node, capacity type, phase, and the scheduler's condition, and a table of
the GPUs allocated to the gang's claims: which pod got which GPU on which node.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from typing import Any, TextIO

from apis.core import Node, Pod
from apis.registry import parse_as
from apis.resource import ResourceClaim
from controllers.cli.demo_dra import gang_pods, gpu_nodes, gpu_objects, gpu_rows
from controllers.cli.tables import TABLE_WIDTH, table
from placement.pods.config.scheduler_config import DEFAULT_SCHEDULER_NAME

__all__ = ["demo_nodes", "demo_pods", "run_local_demo"]

HOSTNAME = "kubernetes.io/hostname"
SPOT_TAINT = {"key": "spot", "value": "true", "effect": "NoSchedule"}
TOLERATE_SPOT = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
ONE_API_PER_NODE = {  # the StatefulSet's replicas never share a node (inter-pod anti-affinity)
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "api"}}, "topologyKey": HOSTNAME}
        ]
    }
}


def _node(name: str, capacity: str, cpu: str, memory: str, zone: str) -> Node:
    spot = capacity == "spot"
    return parse_as(
        Node,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "node.kubernetes.io/capacity": capacity,
                    "topology.kubernetes.io/zone": zone,
                },
            },
            "spec": {"taints": [SPOT_TAINT]} if spot else {},
            "status": {
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
    )


def demo_nodes() -> list[Node]:
    """Three on-demand nodes of 4 cpu, three spot nodes of 8 cpu (tainted spot=true)."""
    return [
        *(_node(f"ondemand-{i}", "on-demand", "4", "16Gi", "ab"[i % 2]) for i in range(3)),
        *(_node(f"spot-{i}", "spot", "8", "32Gi", "ab"[i % 2]) for i in range(3)),
    ]


def _pod(name: str, app: str, cpu: str, memory: str, **spec: Any) -> Pod:
    container: dict[str, Any] = {
        "name": app,
        "image": f"example/{app}",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    extra = spec.pop("extra_requests", None)
    if extra:
        container["resources"]["requests"].update(extra)
        container["resources"]["limits"] = dict(extra)
    return parse_as(
        Pod,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
            "spec": {"schedulerName": DEFAULT_SCHEDULER_NAME, "containers": [container], **spec},
        },
    )


def demo_pods() -> list[Pod]:
    """The workloads' pods (module docstring)."""
    on_demand = {"node.kubernetes.io/capacity": "on-demand"}
    spot = {"node.kubernetes.io/capacity": "spot"}
    return [
        *(_pod(f"web-5d8f7c-{s}", "web", "500m", "512Mi") for s in ("2xk9p", "7qwlz", "m4rtb")),
        *(
            _pod(f"api-{i}", "api", "1", "2Gi", nodeSelector=on_demand, affinity=ONE_API_PER_NODE)
            for i in range(4)  # three on-demand nodes: the fourth replica waits for one
        ),
        *(_pod(f"batch-{i}", "batch", "2", "1Gi", tolerations=[TOLERATE_SPOT]) for i in range(4)),
        *(
            _pod(
                f"spot-worker-{i}",
                "worker",
                "1500m",
                "2Gi",
                nodeSelector=spot,
                tolerations=[TOLERATE_SPOT],
            )
            for i in range(4)
        ),
        _pod("trainer-0", "trainer", "1", "4Gi", extra_requests={"nvidia.com/gpu": "1"}),
    ]


def _kubelet_server() -> Any:
    """An embedded server whose simulated kubelets start bound pods after 0.3 s."""
    from controllers.embedded.apiserver import EmbeddedApiServer
    from controllers.embedded.kubelet import KubeletOptions

    return EmbeddedApiServer(kubelet=KubeletOptions(start_delay=0.3))


def _condition(pod: Pod) -> str:
    for condition in (pod.status.conditions if pod.status else None) or []:
        if condition.get("type") == "PodScheduled":
            if condition.get("status") == "True":
                return "Scheduled"
            return f"{condition.get('reason')}: {condition.get('message')}"
    return "Scheduled" if pod.spec.node_name else "-"


def _rows(pods: list[Pod], nodes: dict[str, Node]) -> list[list[str]]:
    rows = []
    for pod in sorted(pods, key=lambda p: p.name):
        node = nodes.get(pod.spec.node_name or "")
        capacity = ((node.metadata.labels or {}) if node else {}).get(
            "node.kubernetes.io/capacity", "-"
        )
        phase = (pod.status.phase if pod.status else None) or "Pending"
        rows.append([pod.name, pod.spec.node_name or "-", capacity, phase, _condition(pod)])
    return rows


async def run_local_demo(out: TextIO = sys.stdout, *, timeout: float = 20.0) -> int:
    """Run the demo; 0 when every pod that fits is bound (and Running with kubelets) and the
    one that cannot is reported Unschedulable."""
    from controllers.addons.gateway import PodGateway
    from controllers.addons.scheduler import PodScheduler, load_scheduler_config
    from controllers.kube.config import ClusterAccess, new_api_client

    logging.getLogger().setLevel(logging.WARNING)
    server, kubelets = _kubelet_server(), True
    url = await server.start()
    gateway = PodGateway(await new_api_client(ClusterAccess(url=url)))
    scheduler: PodScheduler | None = None
    try:
        nodes = [*demo_nodes(), *gpu_nodes()]
        pods = [*demo_pods(), *gang_pods()]
        for obj in [*nodes, *gpu_objects(), *pods]:
            await gateway.create(obj)
        print(
            f"embedded API server on {url}{' with simulated kubelets' if kubelets else ''}: "
            f"{len(nodes)} nodes (3 on-demand, 3 spot, 2 with GPUs of a DRA driver), "
            f"{len(pods)} pending pods",
            file=out,
        )
        began = time.perf_counter()
        scheduler = PodScheduler(gateway, load_scheduler_config(None), http_addr=None)
        await scheduler.start(sync_timeout=timeout)

        async def settled() -> list[Pod] | None:
            now = (await gateway.list(Pod, "default")).items
            for pod in now:
                if pod.spec.node_name:
                    if kubelets and (pod.status is None or pod.status.phase != "Running"):
                        return None
                elif not _condition(pod).startswith("Unschedulable"):
                    return None
            return now

        async with asyncio.timeout(timeout):
            while (final := await settled()) is None:
                await asyncio.sleep(0.05)
        elapsed = time.perf_counter() - began
        by_name = {n.name: n for n in (await gateway.list(Node)).items}
        header = ["POD", "NODE", "CAPACITY", "PHASE", "SCHEDULED"]
        print(
            table(header, _rows(final, by_name), width=TABLE_WIDTH, shrink=(4,)), end="", file=out
        )
        for pod in sorted(final, key=lambda p: p.name):
            if not pod.spec.node_name:
                print(f"{pod.name}: {_condition(pod)}", file=out)
        claims = (await gateway.list(ResourceClaim, "default")).items
        gpus = gpu_rows([p for p in final if p.spec.resource_claims], claims)
        print(table(["POD", "NODE", "CLAIM", "GPU"], gpus, width=TABLE_WIDTH), end="", file=out)
        bound = sum(1 for p in final if p.spec.node_name)
        running = sum(1 for p in final if p.status and p.status.phase == "Running")
        print(
            f"{bound}/{len(final)} pods bound by {scheduler.name} in {elapsed:.2f} s"
            + (f", {running} running" if kubelets else "")
            + f", {len(final) - bound} unschedulable",
            file=out,
        )
        return 0
    except TimeoutError:
        print(f"error: the scheduler did not settle within {timeout:.0f} s", file=sys.stderr)
        return 1
    finally:
        if scheduler is not None:
            await scheduler.stop()
        await gateway.close()
        await server.stop()

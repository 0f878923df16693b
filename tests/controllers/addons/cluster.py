"""An embedded API server in a separate process, and the nodes and pods the scheduler tests
build on it (reached through the real client, as the scheduler reaches a cluster)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from apis.core import Node, Pod
from apis.registry import parse_as
from controllers.addons.gateway import PodGateway
from controllers.kube.config import ClusterAccess, new_api_client
from placement.pods.cluster.requests import pod_requests

ROOT = Path(__file__).resolve().parents[3]
SCHEDULER = "ocm-pod-scheduler"


@asynccontextmanager
async def server_process(
    *args: str, profile: Path | None = None, started: Callable[[int], None] | None = None
) -> AsyncIterator[tuple[str, PodGateway]]:
    """`python -m controllers.embedded` on a free port; yields its URL and a gateway.
    `profile`: run it under cProfile, whose stats land there when it stops (benchmarks);
    `started` is given the server's pid (to read its CPU time)."""
    profiler = ("-m", "cProfile", "-o", str(profile)) if profile is not None else ()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *profiler,
        "-m",
        "controllers.embedded",
        "--port",
        "0",
        *args,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
    )
    if started is not None:
        started(process.pid)
    try:
        assert process.stdout is not None
        async with asyncio.timeout(30):
            line = (await process.stdout.readline()).decode()
        assert "listening on" in line, line
        url = line.rsplit(" ", 1)[1].strip()
        gateway = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
        try:
            yield url, gateway
        finally:
            await gateway.close()
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


def node(
    name: str,
    cpu: str = "32",
    memory: str = "128Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> Node:
    return parse_as(
        Node,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            },
            "spec": {"taints": taints} if taints else {},
            "status": {
                "allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods)},
                "capacity": {"cpu": cpu, "memory": memory, "pods": str(pods)},
            },
        },
    )


def pod(
    name: str,
    cpu: str = "100m",
    memory: str = "128Mi",
    namespace: str = "default",
    scheduler: str = SCHEDULER,
    **spec: Any,
) -> Pod:
    container = {
        "name": "main",
        "image": "app",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    return parse_as(
        Pod,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulerName": scheduler, "containers": [container], **spec},
        },
    )


async def create_all(gateway: PodGateway, objects: list[Any], width: int = 32) -> None:
    """Create `objects`, `width` requests at a time."""
    for start in range(0, len(objects), width):
        await asyncio.gather(*(gateway.create(o) for o in objects[start : start + width]))


def cpu_millis(pod: Pod) -> int:
    """What the pod requests of cpu, in millicores (as the scheduler counts it)."""
    return pod_requests(pod).get("cpu", 0)


SHIPPED_WEBHOOK = ROOT / "config" / "addons" / "spot-webhook" / "base" / "webhook.yaml"


def shipped_webhook_configuration(
    *,
    client_config: dict[str, Any],
    policy: str,
    timeout: int,
    name: str | None = None,
    namespace_selector: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The MutatingWebhookConfiguration we ship (config/addons/spot-webhook), reaching the
    webhook by `client_config` with the test's failure policy and timeout (and, when given,
    its own name and namespace selector)."""
    import yaml

    doc: dict[str, Any] = yaml.safe_load(SHIPPED_WEBHOOK.read_text(encoding="utf-8"))
    if name is not None:
        doc["metadata"]["name"] = name
    (hook,) = doc["webhooks"]
    hook.update(clientConfig=client_config, failurePolicy=policy, timeoutSeconds=timeout)
    if namespace_selector is not None:
        hook["namespaceSelector"] = namespace_selector
    return doc

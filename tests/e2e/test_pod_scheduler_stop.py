"""`placement scheduler run` stopped by SIGTERM while it binds, on a real kube-apiserver (issue 43:
exit at once, nothing lost): exit 0; each pod bound or plainly pending (no node nominated), no
node over what it fits; then a scheduler started afterwards (the next leader) binds every pod
left, each node exactly full. The time from SIGTERM to exit is printed, not asserted."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubelet import Kubelet, NodeSpec
from tests.e2e.pod_helpers import POOL, JsonGateway, container, placement_argv, wait_until

NODES = 4
PER_NODE = 100  # 100m pods on 10-cpu nodes


def start(plane: ControlPlane, name: str) -> tuple[subprocess.Popen[bytes], Path]:
    log = Path(tempfile.mkstemp(prefix="e2e-scheduler-stop-", suffix=".log")[1])
    argv = [
        *placement_argv(),
        *("scheduler", "run", f"--kubeconfig={plane.kubeconfig}"),
        *("--http-addr=127.0.0.1:0", f"--scheduler-name={name}", "--status-controller=off"),
    ]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    with log.open("wb") as handle:
        return subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, env=env), log


def sigterm(process: subprocess.Popen[bytes]) -> tuple[int, float]:
    began = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
    return code, time.perf_counter() - began


async def per_node(gateway: JsonGateway, namespace: str) -> dict[str, int]:
    """Pods per node; fails on a pending pod with a node nominated or a node over capacity."""
    counts: dict[str, int] = {}
    for item in await gateway.pods(namespace):
        nominated = (item.get("status") or {}).get("nominatedNodeName")
        assert not nominated, f"{item['metadata']['name']} pending, nominated to {nominated}"
        node = item["spec"].get("nodeName")
        if node:
            counts[node] = counts.get(node, 0) + 1
    assert all(count <= PER_NODE for count in counts.values()), counts
    return counts


@pytest.mark.asyncio
async def test_sigterm_while_binding_loses_nothing(controller_manager: ControlPlane) -> None:
    plane = controller_manager
    name = unique_name("e2e-stop")
    namespace = name
    gateway = await JsonGateway.open(plane.kubeconfig)
    nodes = [
        NodeSpec(f"{name}-{i}", cpu="10", pods="110", labels={POOL: name}) for i in range(NODES)
    ]
    total = NODES * PER_NODE
    try:
        await gateway.namespace(namespace)
        async with Kubelet(gateway, nodes, drain=[namespace]):
            path = f"/api/v1/namespaces/{namespace}/pods"
            spec = {"schedulerName": name, "nodeSelector": {POOL: name}}
            docs = [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"p-{i}"},
                    "spec": {**spec, "containers": [container("100m", "16Mi")]},
                }
                for i in range(total)
            ]
            for first in range(0, total, 32):
                await asyncio.gather(*(gateway.post(path, d) for d in docs[first : first + 32]))

            process, log = start(plane, name)
            deadline = time.monotonic() + 30
            while " bound " not in log.read_text(errors="replace"):
                assert process.poll() is None, log.read_text(errors="replace")
                assert time.monotonic() < deadline, log.read_text(errors="replace")
                await asyncio.sleep(0.005)
            code, seconds = sigterm(process)
            output = log.read_text(errors="replace")
            assert code == 0, output
            stopping = [line for line in output.splitlines() if "stopping:" in line]
            assert stopping, output
            bound = sum((await per_node(gateway, namespace)).values())
            assert 0 < bound < total, f"the stop did not come while binding ({bound} bound)"
            print(f"\nSIGTERM to exit while binding: {seconds:.3f}s ({bound}/{total} bound)")
            print(stopping[0])

            process, log = start(plane, name)  # the next leader
            try:

                async def all_bound() -> bool:
                    counts = await per_node(gateway, namespace)
                    return sum(counts.values()) == total

                await wait_until(all_bound, 30, "every pod bound by the next scheduler")
            finally:
                code, seconds = sigterm(process)
            assert code == 0, log.read_text(errors="replace")
            counts = await per_node(gateway, namespace)
            assert counts == {spec.name: PER_NODE for spec in nodes}
            print(f"SIGTERM to exit of the next one, all bound: {seconds:.3f}s")
    finally:
        await gateway.close()

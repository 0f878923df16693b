"""NodeDeclaredFeatures in `placement scheduler run --kubelet` (its own process, an embedded API
server with simulated kubelets): a pod whose restart rule restarts all containers waits, with
kube's message, while no node declares `RestartAllContainersOnContainerExits`; once a node's
`status.declaredFeatures` lists it (a node update the plugin's hint answers), the pod runs
there; a plain pod runs at once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from apis.core import Node, Pod
from controllers.addons.gateway import PodGateway
from controllers.kube.config import ClusterAccess, new_api_client
from tests.controllers.addons.test_volume_limits_run import scheduled_message
from tests.controllers.addons.test_volumes_e2e import started
from tests.controllers.cli.test_scheduler_run import ROOT, _env
from tests.controllers.embedded.hub import eventually, kubectl

NODES = """
apiVersion: v1
kind: Namespace
metadata: {name: features}
---
apiVersion: v1
kind: Node
metadata: {name: old, labels: {kubernetes.io/hostname: old}}
---
apiVersion: v1
kind: Node
metadata: {name: new, labels: {kubernetes.io/hostname: new}}
"""
PODS = """
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: features}
spec:
  schedulerName: ocm-pod-scheduler
  containers:
  - name: worker
    image: trainer
    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [42]}
---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: features}
spec:
  schedulerName: ocm-pod-scheduler
  containers: [{name: c, image: app}]
"""
ALLOCATABLE = {"cpu": "4", "memory": "8Gi", "pods": "110"}
WAITING = "0/2 nodes are available: 2 node(s) didn't match Pod's required features."


@pytest.mark.asyncio
async def test_scheduler_run_places_a_pod_once_a_node_declares_its_feature(
    tmp_path: Path,
) -> None:
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "controllers.cli.main", "scheduler", "run", "--kubelet"),
        *("--http-addr", "127.0.0.1:0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=_env(),
    )
    try:
        url, config = await started(process)
        gateway = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
        try:
            for part, text in (("nodes", NODES), ("pods", PODS)):
                manifest = tmp_path / f"{part}.yaml"
                manifest.write_text(text)
                code, _, err = await kubectl(config, "apply", "-f", str(manifest))
                assert code == 0, err
                if part == "nodes":  # apply leaves the status out
                    for name in ("old", "new"):
                        status = {"status": {"allocatable": ALLOCATABLE}}
                        await gateway.patch_status(Node, name, status)

            async def pods() -> dict[str, Pod]:
                return {p.name: p for p in (await gateway.list(Pod, "features")).items}

            async def trainer_waits() -> bool:
                found = await pods()
                return bool(found["plain"].spec.node_name) and scheduled_message(
                    found["trainer"]
                ).startswith(WAITING)

            await eventually(trainer_waits, timeout=30)
            assert not (await pods())["trainer"].spec.node_name
            declared = {"declaredFeatures": ["RestartAllContainersOnContainerExits"]}
            await gateway.patch_status(Node, "new", {"status": declared})

            async def trainer_bound() -> str:
                return (await pods())["trainer"].spec.node_name or ""

            assert await eventually(trainer_bound, timeout=30) == "new"
            node = await gateway.get(Node, "new")
            assert node.status is not None
            assert node.status.declared_features == ["RestartAllContainersOnContainerExits"]
        finally:
            await gateway.close()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

"""`placement scheduler simulate` with NodeDeclaredFeatures: a pod whose restart rule restarts
all containers goes only to the node declaring `RestartAllContainersOnContainerExits` in its
`status.declaredFeatures`; a host-network pod in a user namespace finds no node declaring
`UserNamespacesHostNetworkSupport` and waits with kube's message; a plain pod may go anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controllers.cli.common import EXIT_OK
from tests.controllers.cli.samples import run

WORLD = """
apiVersion: v1
kind: Node
metadata: {name: old, labels: {kubernetes.io/hostname: old}}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: new, labels: {kubernetes.io/hostname: new}}
status:
  allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
  declaredFeatures: [RestartAllContainersOnContainerExits]
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: default}
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
metadata: {name: userns, namespace: default}
spec:
  schedulerName: ocm-pod-scheduler
  hostNetwork: true
  hostUsers: false
  containers: [{name: c, image: app}]
---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: default}
spec:
  schedulerName: ocm-pod-scheduler
  containers: [{name: c, image: app}]
"""


def test_simulate_places_pods_by_the_features_their_nodes_declare(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    world = tmp_path / "world.yaml"
    world.write_text(WORLD)
    argv = ["scheduler", "simulate", "-f", str(world), "-o", "json"]
    code, out, err = run(capsys, *argv, "--now", "2026-11-23T00:00:00Z")
    assert code == EXIT_OK, err
    pods = {i["metadata"]["name"]: i for i in json.loads(out)["items"] if i["kind"] == "Pod"}
    assert pods["trainer"]["spec"]["nodeName"] == "new"
    assert pods["plain"]["spec"]["nodeName"] in ("old", "new")
    userns = pods["userns"]
    assert not userns["spec"].get("nodeName")
    [scheduled] = [c for c in userns["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled["reason"] == "Unschedulable"
    assert scheduled["message"] == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's required features. "
        "no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )

"""`placement scheduler simulate` reports the reasons of the plugins a real pod spec meets
(host ports, inter-pod anti-affinity, topology spread, volume node affinity) in kube's words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controllers.cli.common import EXIT_OK
from tests.controllers.cli.samples import run

WORLD = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1, topology.kubernetes.io/zone: a}}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2, topology.kubernetes.io/zone: b}}
spec: {taints: [{key: maintenance, value: "true", effect: NoSchedule}]}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default, labels: {app: web, spread: s}}
spec:
  nodeName: n1
  containers: [{name: c, ports: [{containerPort: 80, hostPort: 8080}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-2, namespace: default, labels: {app: web, spread: s}}
spec:
  nodeName: n1
  containers: [{name: c}]
---
apiVersion: v1
kind: Pod
metadata: {name: ports, namespace: default}
spec:
  schedulerName: ocm-pod-scheduler
  containers: [{name: c, ports: [{containerPort: 80, hostPort: 8080}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: anti, namespace: default}
spec:
  schedulerName: ocm-pod-scheduler
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: web}}
        topologyKey: kubernetes.io/hostname
  containers: [{name: c}]
---
apiVersion: v1
kind: Pod
metadata: {name: spread, namespace: default, labels: {spread: s}}
spec:
  schedulerName: ocm-pod-scheduler
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {spread: s}}
  containers: [{name: c}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: elsewhere}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  claimRef: {namespace: default, name: data}
  local: {path: /mnt/disk}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n9]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local
  volumeName: elsewhere
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: volume, namespace: default}
spec:
  schedulerName: ocm-pod-scheduler
  tolerations: [{key: maintenance, operator: Exists}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
  containers: [{name: c}]
"""

EXPECTED = {
    "ports": "1 node(s) didn't have free ports for the requested pod ports",
    "anti": "1 node(s) didn't match pod anti-affinity rules",
    "spread": "1 node(s) didn't match pod topology spread constraints",
    "volume": "2 node(s) had volume node affinity conflict",
}


def test_simulate_shows_the_reasons_of_ports_anti_affinity_spread_and_volumes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    world = tmp_path / "world.yaml"
    world.write_text(WORLD)
    argv = ["scheduler", "simulate", "-f", str(world), "-o", "json"]
    code, out, _ = run(capsys, *argv, "--now", "2026-11-23T00:00:00Z")
    assert code == EXIT_OK
    pods = {i["metadata"]["name"]: i for i in json.loads(out)["items"] if i["kind"] == "Pod"}
    for name, reason in EXPECTED.items():
        pod = pods[name]
        assert not pod["spec"].get("nodeName"), name
        [scheduled] = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert scheduled["reason"] == "Unschedulable"
        assert reason in scheduled["message"], (name, scheduled["message"])

"""`scheduler simulate` of a gang whose members claim GPUs, from one YAML file as a user writes
it (nodes, their ResourceSlices, a DeviceClass, a PodGroup, a ResourceClaimTemplate, the
pods): the gang binds whole, each member on its own GPU, when the cluster has a GPU per member,
and not at all, with no claim allocated, when it has one fewer; an ElasticQuota of two GPUs
keeps a gang of three out whole, its quota's use back at nothing."""

from __future__ import annotations

from datetime import timedelta

import yaml

from apis.registry import parse_object
from apis.resource import ResourceClaim
from placement.pods.scheduler.engine import Engine
from placement.pods.simulator.simulation import SimulationResult, simulate
from tests.placement.pods.test_engine import SCHEDULER, T0
from tests.plugins.pods.dra_world import dra_profile
from tests.plugins.pods.gang_harness import Watched

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: gpu-node-1}
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-node-2}
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-node-1-gpu.example.com}
spec:
  driver: gpu.example.com
  nodeName: gpu-node-1
  pool: {name: gpu-node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes: {model: {string: a100}}
  - name: gpu-1
    attributes: {model: {string: a100}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-node-2-gpu.example.com}
spec:
  driver: gpu.example.com
  nodeName: gpu-node-2
  pool: {name: gpu-node-2, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes: {model: {string: a100}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: device.driver == "gpu.example.com"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: training}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
"""


def _gang(size: int) -> str:
    group = f"""
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {{name: trainer, namespace: training}}
spec: {{minMember: {size}, scheduleTimeoutSeconds: 30}}
"""
    workers = [
        f"""
apiVersion: v1
kind: Pod
metadata:
  name: worker-{i}
  namespace: training
  labels: {{scheduling.x-k8s.io/pod-group: trainer}}
spec:
  schedulerName: {SCHEDULER}
  resourceClaims:
  - {{name: gpu, resourceClaimTemplateName: one-gpu}}
  containers:
  - name: train
    image: registry.example.com/trainer:1
    resources:
      requests: {{cpu: "1"}}
      claims: [{{name: gpu}}]
"""
        for i in range(size)
    ]
    return "---".join([group, *workers])


QUOTA = """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: ElasticQuota
metadata: {name: training, namespace: training}
spec:
  min: {gpu.example.com.deviceclass.resource.k8s.io/devices: "2"}
  max: {gpu.example.com.deviceclass.resource.k8s.io/devices: "2"}
"""


def _simulate(*docs: str) -> tuple[SimulationResult, Watched]:
    objects = [parse_object(d) for d in yaml.safe_load_all("---".join(docs)) if d]
    watched = Watched(Engine(dra_profile()))
    result = simulate(objects, watched, T0, scheduler_name=SCHEDULER, max_time=timedelta(minutes=5))
    assert watched.partly_bound == []
    return result, watched


def _claims(result: SimulationResult) -> list[ResourceClaim]:
    return [o for o in result.objects if isinstance(o, ResourceClaim)]


def _gang_line(result: SimulationResult) -> str:
    [line] = [r for r in result.reports if r.startswith("gang training/trainer")]
    return line


def test_a_gang_with_a_gpu_per_member_binds_whole_each_on_its_own_gpu() -> None:
    result, _ = _simulate(CLUSTER, _gang(3))
    nodes = {p.metadata.name: p.spec.node_name for p in result.pods}
    assert sorted(nodes.values(), key=str) == ["gpu-node-1", "gpu-node-1", "gpu-node-2"]
    devices = set()
    for claim in _claims(result):
        assert claim.status is not None and claim.status.allocation is not None
        [owner] = claim.metadata.owner_references or []
        [taken] = claim.status.allocation.devices.results  # type: ignore[union-attr, misc]
        assert taken.pool == nodes[owner.name]
        devices.add((taken.pool, taken.device))
        assert [r.name for r in claim.status.reserved_for or []] == [owner.name]
    assert len(devices) == 3
    assert _gang_line(result).startswith(
        "gang training/trainer: phase Running, minMember 3: 3 bound"
    )


def test_a_gang_one_gpu_short_binds_nothing_and_allocates_nothing() -> None:
    result, _ = _simulate(CLUSTER, _gang(4))
    assert [p.spec.node_name for p in result.pods] == [None] * 4
    claims = _claims(result)
    assert len(claims) == 4  # made by the resourceclaim controller, never allocated
    assert all(c.status is None or c.status.allocation is None for c in claims)
    line = _gang_line(result)
    assert line.startswith("gang training/trainer: phase Scheduling, minMember 4: 0 bound")
    assert "cannot allocate all claims" in line


def test_a_quota_of_two_gpus_keeps_a_gang_of_three_out_whole() -> None:
    result, _ = _simulate(CLUSTER, QUOTA, _gang(3))
    assert [p.spec.node_name for p in result.pods] == [None] * 3
    assert all(c.status is None or c.status.allocation is None for c in _claims(result))
    [quota] = [r for r in result.reports if r.startswith("ElasticQuota")]
    assert "; used gpu.example.com.deviceclass.resource.k8s.io/devices=0;" in quota
    assert "ElasticQuota training is more than Max" in _gang_line(result)


def test_a_gang_of_two_fits_the_quota_of_two_gpus_and_uses_it_all() -> None:
    result, _ = _simulate(CLUSTER, QUOTA, _gang(2))
    assert all(p.spec.node_name for p in result.pods)
    [quota] = [r for r in result.reports if r.startswith("ElasticQuota")]
    assert "; used gpu.example.com.deviceclass.resource.k8s.io/devices=2;" in quota

"""YAML of a small DRA cluster for the gang and quota tests (nodes publishing GPUs in
ResourceSlices, a DeviceClass, a one-GPU ResourceClaimTemplate, pods claiming from it), and a
driver of `scheduler simulate`'s world for the steps a YAML run cannot take (deleting a pod
half-way)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import yaml

from apis.core import Pod
from apis.meta import KubeObject
from apis.registry import parse_object
from apis.resource import ResourceClaim
from placement.pods.config.scheduler_config import build_profile, load_config
from placement.pods.framework.events import PodEvent
from placement.pods.framework.interface import Profile
from placement.pods.scheduler.engine import Engine
from placement.pods.simulator.claims import release_claims
from placement.pods.simulator.simulation import _input_pod, _load
from placement.pods.simulator.world import EngineLike, World
from plugins.pods import DEFAULT_PLUGINS
from plugins.pods.dynamicresources.dynamicresources import DynamicResources
from tests.placement.pods.test_engine import DEFAULTS, REGISTRY, SCHEDULER, T0

DRIVER = "gpu.example.com"
GPUS = "gpu.deviceclass.resource.k8s.io/devices"
CLASS_AND_TEMPLATE = f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{DRIVER}"'}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: one-gpu, namespace: default}}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {{deviceClassName: gpu}}
"""


def node(name: str, gpus: int) -> str:
    devices = "\n".join(f"  - name: gpu-{i}" for i in range(gpus)) or "  []"
    return f"""
apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status:
  allocatable: {{cpu: "8", memory: 16Gi, pods: "110"}}
  capacity: {{cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {name}-gpus}}
spec:
  driver: {DRIVER}
  nodeName: {name}
  pool: {{name: {name}, generation: 1, resourceSliceCount: 1}}
  devices:
{devices}
"""


def gpu_pod(
    name: str, second: int = 0, *, group: str | None = None, priority: str | None = None
) -> str:
    """A pod claiming one GPU from the template, created `second`s after T0."""
    labels = f"labels: {{scheduling.x-k8s.io/pod-group: {group}}}" if group else "labels: {}"
    priority_line = f"priorityClassName: {priority}" if priority else ""
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  {labels}
  creationTimestamp: "2026-01-01T00:00:{second:02d}Z"
spec:
  schedulerName: {SCHEDULER}
  {priority_line}
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: one-gpu}}]
  containers:
  - name: main
    image: busybox
    resources: {{claims: [{{name: gpu}}], requests: {{cpu: 100m}}}}
"""


def objects(*docs: str) -> list[KubeObject]:
    return [parse_object(d) for d in yaml.safe_load_all("---".join(docs)) if d]


def dra_profile(**overrides: Any) -> Profile:
    """The default profile (DynamicResources is one of its plugins, as in kube's)."""
    assert "DynamicResources" in DEFAULT_PLUGINS
    doc = {"schedulerName": SCHEDULER, **overrides}
    return build_profile(load_config(doc), REGISTRY, defaults=DEFAULTS)


def dra_plugin(engine: Engine) -> DynamicResources:
    (found,) = [p for p in engine.profile.reserves if isinstance(p, DynamicResources)]
    return found


def world_of(engine: EngineLike, docs: Iterable[KubeObject], start: datetime = T0) -> World:
    world = World(engine, start, SCHEDULER)
    _load(world, list(docs), start)
    return world


def run(world: World, seconds: float) -> None:
    """Play the world for `seconds` of its clock: schedule, perform, jump to the next timer."""
    end = world.now + timedelta(seconds=seconds)
    for _ in range(10_000):
        world.finish_deletions()
        world.perform(world.engine.schedule(world.now))
        timers = [t for t in (world.engine.next_wake(), world.next_time()) if t is not None]
        wake = min(timers, default=None)
        if wake is None or wake > end:
            world.now = end
            return
        world.now = max(wake, world.now + timedelta(microseconds=1))
    raise AssertionError("the world did not settle")


def arrive(world: World, doc: str) -> None:
    """A pod created now (the API server's defaults, the resourceclaim controller's claims)."""
    for obj in objects(doc):
        assert isinstance(obj, Pod)
        world.add_pod(_input_pod(obj, world.now))


def delete(world: World, name: str) -> None:
    """The pod goes at once (its kubelet is done), and kube-controller-manager releases its
    claims."""
    gone = world.pods.pop(f"default/{name}")
    world.feed(PodEvent("Deleted", gone))
    release_claims(world, gone)


def claims(world: World) -> dict[str, ResourceClaim]:
    return {
        key: obj
        for (kind, key), obj in world.objects.items()
        if kind == "ResourceClaim" and isinstance(obj, ResourceClaim)
    }


def allocated(world: World) -> dict[str, tuple[str, str]]:
    """claim key -> (pool, device) of each allocated claim."""
    out: dict[str, tuple[str, str]] = {}
    for key, claim in claims(world).items():
        allocation = claim.status.allocation if claim.status else None
        if allocation is None or allocation.devices is None:
            continue
        for result in allocation.devices.results or []:
            out[key] = (result.pool, result.device)
    return out


def bound(world: World) -> dict[str, str]:
    return {
        str(p.metadata.name): str(p.spec.node_name) for p in world.pods.values() if p.spec.node_name
    }


def scheduled_message(world: World, name: str) -> str:
    pod = world.pods[f"default/{name}"]
    assert pod.status is not None
    (condition,) = [c for c in pod.status.conditions or [] if c["type"] == "PodScheduled"]
    return str(condition["message"])

"""Builders shared by the capacity scheduling story, sample and property tests (no tests
here): GPU nodes, pods in quota namespaces, ElasticQuotas, a small world around the engine."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from apis.core import Node, Pod
from apis.scheduling import ElasticQuota
from placement.pods.framework.events import DeletePod, ObjectEvent
from placement.pods.framework.interface import Profile
from placement.pods.scheduler.engine import Engine
from plugins.pods.capacityscheduling.capacity_scheduling import CapacityScheduling
from tests.placement.pods.test_engine import SCHEDULER, T0, World, default_profile

GPU = "nvidia.com/gpu"


def gpu_node(name: str, gpus: int = 10, cpu: int = 64) -> Node:
    return Node.model_validate(
        {
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "256Gi", "pods": 110, GPU: gpus}},
        }
    )


def quota(
    namespace: str,
    min_: dict[str, Any] | None = None,
    max_: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    created: datetime = T0,
) -> ElasticQuota:
    spec: dict[str, Any] = {}
    if min_ is not None:
        spec["min"] = min_
    if max_ is not None:
        spec["max"] = max_
    return ElasticQuota.model_validate(
        {
            "metadata": {
                "name": name or namespace,
                "namespace": namespace,
                "creationTimestamp": created.isoformat(),
            },
            "spec": spec,
        }
    )


def qpod(
    name: str,
    namespace: str,
    *,
    gpu: int = 0,
    cpu: str | int | None = None,
    priority: int = 0,
    node: str | None = None,
    started: datetime | None = None,
    never: bool = False,
) -> Pod:
    """A pod of our scheduler (running on `node` when given, started at `started`)."""
    requests: dict[str, Any] = {}
    if gpu:
        requests[GPU] = gpu
    if cpu is not None:
        requests["cpu"] = cpu
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER,
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": requests}}],
    }
    if never:
        spec["preemptionPolicy"] = "Never"
    if node is not None:
        spec["nodeName"] = node
    status: dict[str, Any] = {"phase": "Running" if node else "Pending"}
    if started is not None:
        status["startTime"] = started.isoformat()
    return Pod.model_validate(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-{namespace}-{name}",
                "creationTimestamp": T0.isoformat(),
            },
            "spec": spec,
            "status": status,
        }
    )


class QuotaWorld(World):
    """The engine test world plus quotas, and a record of every pod preempted."""

    @classmethod
    def of(cls, profile: Profile | None = None, **options: Any) -> QuotaWorld:
        return cls(Engine(profile or default_profile(), **options))

    def add_quotas(self, *eqs: ElasticQuota) -> None:
        for eq in eqs:
            self.apply(self.engine.handle(ObjectEvent("Added", eq), self.now))

    def settle(self, seconds: float = 120) -> None:
        self.run(until=self.now + timedelta(seconds=seconds))

    def submit(self, *pods: Pod) -> None:
        self.add_pods(*pods)
        self.settle()

    @property
    def capacity(self) -> CapacityScheduling:
        for plugin in self.engine.profile.pre_filters:
            if isinstance(plugin, CapacityScheduling):
                return plugin
        raise AssertionError("CapacityScheduling is not in the profile")

    def running(self, namespace: str | None = None) -> list[str]:
        return sorted(
            key
            for key, pod in self.pods.items()
            if pod.spec.node_name and (namespace is None or key.startswith(f"{namespace}/"))
        )

    def pending(self) -> list[str]:
        return sorted(key for key, pod in self.pods.items() if not pod.spec.node_name)

    def preempted(self) -> list[str]:
        return sorted(a.key for a in self.log if isinstance(a, DeletePod))

    def used(self, namespace: str, resource: str = GPU) -> int:
        info = self.capacity.quota(namespace)
        assert info is not None
        return info.used.get(resource, 0)

    def message(self, key: str) -> str:
        pod = self.pods[key]
        for cond in (pod.status.conditions if pod.status else None) or ():
            if cond.get("type") == "PodScheduled":
                return str(cond.get("message", ""))
        return ""

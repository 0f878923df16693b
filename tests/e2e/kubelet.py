"""A kubelet stand-in for the pod scheduler's e2e tests on a real control plane (which has no
kubelet), after the embedded server's simulation (`controllers/embedded/kubelet.py`), talking to
the real apiserver through our gateway:

* `register()` creates its nodes, posts their status through the status subresource (capacity
  and allocatable, the conditions a healthy kubelet posts, an address, node info) and removes
  the `node.kubernetes.io/not-ready` taint TaintNodesByCondition admission put on each new node,
  as the node lifecycle controller does once the node is Ready;
* `run()` (an asyncio task: `async with Kubelet(...)`) polls the pods bound to its nodes: a
  pending one becomes `Running` (status subresource: phase, conditions, IPs, container
  statuses); a gracefully deleted one (deletionTimestamp set) is removed with
  `gracePeriodSeconds=0` once its grace period has passed, capped at `grace_cap` seconds;
* on exit it first deletes the namespaces it was given to `drain` and their pods at once (a
  terminating namespace takes no new pod: no controller leaves a replacement pending for a
  later test's nodes); then its nodes' pods are removed at once and its nodes deleted, so no
  other test's scheduler sees them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from controllers.kube.errors import ApiError, ConflictError, NotFoundError
from tests.e2e.pod_helpers import JsonGateway

__all__ = ["Kubelet", "NodeSpec"]

log = logging.getLogger(__name__)

NOT_READY = "node.kubernetes.io/not-ready"
_POD_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")


@dataclass(frozen=True)
class NodeSpec:
    """A node the stand-in registers: its name, allocatable resources and labels."""

    name: str
    cpu: str = "2"
    memory: str = "4Gi"
    pods: str = "110"
    labels: dict[str, str] = field(default_factory=dict)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Kubelet:
    """See the module docstring."""

    def __init__(
        self,
        gateway: JsonGateway,
        nodes: Iterable[NodeSpec],
        *,
        grace_cap: float = 1.0,
        interval: float = 0.1,
        drain: Iterable[str] = (),
    ) -> None:
        self.gateway = gateway
        self.nodes = {spec.name: spec for spec in nodes}
        self.grace_cap = grace_cap
        self.interval = interval
        self.drain = tuple(drain)
        self.started: set[str] = set()
        """Uids of the pods this kubelet turned Running."""
        self.removed: list[str] = []
        """`namespace/name` of the terminating pods it removed, in order."""
        self._terminating: dict[str, float] = {}  # uid -> when its grace ends (monotonic)
        self._task: asyncio.Task[None] | None = None
        self._address = 0

    async def __aenter__(self) -> Kubelet:
        await self.register()
        self._task = asyncio.get_running_loop().create_task(self.run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if exc[0] is None:  # a failing test leaves at once
            for namespace in self.drain:
                await self.gateway.drop_namespace(namespace)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.unregister()

    # --- nodes ---------------------------------------------------------------------------------

    async def register(self) -> None:
        for spec in self.nodes.values():
            await self._register(spec)

    async def add_node(self, spec: NodeSpec) -> None:
        """Register one more node (a node joining while the test runs)."""
        self.nodes[spec.name] = spec
        await self._register(spec)

    async def _register(self, spec: NodeSpec) -> None:
        path = f"/api/v1/nodes/{spec.name}"
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": spec.name,
                "labels": {"kubernetes.io/hostname": spec.name, **spec.labels},
            },
        }
        await self.gateway.post("/api/v1/nodes", body)
        self._address += 1
        resources = {"cpu": spec.cpu, "memory": spec.memory, "pods": spec.pods}
        now = _now()
        conditions = [
            ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
            ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
            ("PIDPressure", "False", "KubeletHasSufficientPID"),
            ("Ready", "True", "KubeletReady"),
        ]
        status = {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": kind,
                    "status": value,
                    "reason": reason,
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
                for kind, value, reason in conditions
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.9.0.{self._address}"},
                {"type": "Hostname", "address": spec.name},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.36.2",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "containerRuntimeVersion": "e2e-kubelet://1",
                "osImage": "",
                "kernelVersion": "",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kubeProxyVersion": "",
            },
        }
        await self.gateway.patch(f"{path}/status", {"status": status})
        # The node lifecycle controller's part: a Ready node loses the not-ready taint.
        node = await self.gateway.read(path)
        taints = (node.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != NOT_READY]
        if kept != taints:
            await self.gateway.patch(path, {"spec": {"taints": kept or None}})

    async def unregister(self) -> None:
        """Remove the pods left on the nodes at once, then the nodes."""
        for name in self.nodes:
            with contextlib.suppress(ApiError):
                for pod in await self._pods_on(name):
                    meta = pod["metadata"]
                    await self.gateway.remove(_pod_path(pod), grace=0, uid=meta.get("uid", ""))
        for name in self.nodes:
            with contextlib.suppress(ApiError):
                await self.gateway.remove(f"/api/v1/nodes/{name}")

    # --- pods ----------------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            for name in list(self.nodes):
                try:
                    for pod in await self._pods_on(name):
                        await self._sync(pod)
                except ApiError as exc:
                    log.info("kubelet %s: %s", name, exc)
            await asyncio.sleep(self.interval)

    async def _pods_on(self, node: str) -> list[dict[str, Any]]:
        return await self.gateway.items("/api/v1/pods", fieldSelector=f"spec.nodeName={node}")

    async def _sync(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        uid = meta.get("uid", "")
        if meta.get("deletionTimestamp"):
            grace = float(meta.get("deletionGracePeriodSeconds") or 0)
            ends = self._terminating.setdefault(uid, time.monotonic() + min(grace, self.grace_cap))
            if time.monotonic() >= ends:
                with contextlib.suppress(ConflictError, NotFoundError):
                    await self.gateway.remove(_pod_path(pod), grace=0, uid=uid)
                    self.removed.append(f"{meta['namespace']}/{meta['name']}")
                self._terminating.pop(uid, None)
            return
        status = pod.get("status") or {}
        if status.get("phase") not in (None, "Pending") or uid in self.started:
            return
        await self._start(pod)

    async def _start(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        uid = meta.get("uid", "")
        now = _now()
        old = (pod.get("status") or {}).get("conditions") or []
        conditions = [c for c in old if c.get("type") not in _POD_CONDITIONS]
        conditions += [
            {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
            for kind in _POD_CONDITIONS
        ]
        self._address += 1
        host = f"10.9.0.{list(self.nodes).index(pod['spec']['nodeName']) + 1}"
        status = {
            "phase": "Running",
            "conditions": conditions,
            "hostIP": host,
            "hostIPs": [{"ip": host}],
            "podIP": f"10.244.{self._address // 250}.{self._address % 250 + 2}",
            "startTime": now,
            "containerStatuses": [
                {
                    "name": c.get("name", ""),
                    "image": c.get("image", ""),
                    "imageID": "",
                    "containerID": f"e2e://{uid}/{c.get('name', '')}",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": now}},
                }
                for c in (pod.get("spec") or {}).get("containers") or []
            ],
        }
        with contextlib.suppress(NotFoundError, ConflictError):
            await self.gateway.patch(f"{_pod_path(pod)}/status", {"status": status})
            self.started.add(uid)


def _pod_path(pod: dict[str, Any]) -> str:
    meta = pod["metadata"]
    return f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"

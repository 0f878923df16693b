"""A kubelet simulation for the embedded API server, in the spirit of kwok: the cluster looks
alive to a scheduler and to `kubectl get` without running anything.

With `KubeletOptions` (the server's `kubelet=` argument, `--kubelet` on the command line):

* a Node without a `Ready` condition gets the conditions a healthy kubelet posts (`Ready` True,
  no memory, disk or PID pressure), node info, an InternalIP address and, when it has none, an
  `allocatable` equal to its `capacity`. Posted once: there is no heartbeat, so the node never
  goes stale. A node created with a `Ready` condition keeps it (tests make NotReady nodes so);
* a pod bound to an existing node becomes `Running` `start_delay` seconds after its binding
  (or after its node appears): `Ready`, `Initialized`, `ContainersReady` and
  `PodReadyToStartContainers` conditions, `startTime`, a pod IP, a running status per
  container. A pod bound to a node that does not exist stays `Pending`, as on a cluster;
* a pod deleted without a grace period gets its own (`terminationGracePeriodSeconds`, 30 s by
  default; see `pods.grace_period`), and goes once it has passed, or `grace_cap` seconds if
  that is shorter (the containers "stopped" sooner).

Without the simulation, a pod is deleted at once unless the delete names a grace period; one
that does is terminating for that long, then removed: the server stands in for the kubelet's
final delete, so nothing stays terminating forever.

Everything runs on the server's event loop with its timers (`loop.call_later`), so a test with
`start_delay=0` sees a bound pod running after a few loop turns; nothing reads the wall clock
to decide. Not simulated: pod completion, container restarts, node heartbeats, the pod garbage
collection of pods whose node is deleted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from apis.meta import format_time
from controllers.embedded.history import StoredEvent
from controllers.embedded.patch import copy_json
from controllers.embedded.pods import set_condition
from controllers.embedded.resources import SERVER_VERSION, Resource
from controllers.embedded.status import StatusError
from controllers.embedded.store import Store

__all__ = ["Kubelet", "KubeletOptions"]

_POD_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")
_NODE_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


@dataclass(frozen=True)
class KubeletOptions:
    """How the simulated kubelet behaves: `start_delay` seconds from a pod's binding to its
    running; `grace_cap` seconds at most of a graceful deletion (None: the full period)."""

    start_delay: float = 0.5
    grace_cap: float | None = None


def _now() -> str:
    return format_time(datetime.now(UTC))


class Kubelet:
    """The pod and node lifecycle of the embedded server: the final delete of terminating pods
    always; starting pods and readying nodes when `options` is given (`simulating`)."""

    def __init__(self, store: Store, options: KubeletOptions | None = None) -> None:
        self.store = store
        self.options = options
        by_key = {res.key: res for res in store.resources}
        self._pods: Resource | None = by_key.get(("", "pods"))
        self._nodes: Resource | None = by_key.get(("", "nodes"))
        self._loop: asyncio.AbstractEventLoop | None = None
        # Pending timers by (what, uid): ("start" | "finish" | "node", object uid).
        self._timers: dict[tuple[str, str], asyncio.TimerHandle] = {}
        self._addresses = 0
        self._idle = asyncio.Event()

    @property
    def simulating(self) -> bool:
        """Whether pods are started and nodes readied (the `--kubelet` simulation is on)."""
        return self.options is not None

    @property
    def pending(self) -> int:
        """How many timers are waiting (pods to start or remove, nodes to ready)."""
        return len(self._timers)

    def attach(self) -> None:
        """Start following the store on the running loop, and catch up with what it holds."""
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self.store.listeners.append(self._on_event)
        for res in (self._nodes, self._pods):
            if res is not None:
                for obj in list(self.store.list(res, "", None)):
                    self._consider(res, obj, added=True)

    def close(self) -> None:
        """Stop: cancel every timer and stop following the store."""
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        if self._on_event in self.store.listeners:
            self.store.listeners.remove(self._on_event)
        self._loop = None

    async def idle(self, timeout: float = 5.0) -> None:
        """Wait until no timer is pending (every bound pod started, every terminating pod gone;
        a long grace period makes this wait that long)."""
        async with asyncio.timeout(timeout):
            while self._timers:
                self._idle.clear()
                await self._idle.wait()

    # --- following the store -----------------------------------------------------------------

    def _on_event(self, event: StoredEvent) -> None:
        res = event.resource
        if res is not self._pods and res is not self._nodes:
            return
        if event.type == "DELETED":
            uid = event.obj["metadata"].get("uid", "")
            for what in ("start", "finish", "node"):
                self._cancel(what, uid)
            return
        self._consider(res, event.obj, added=event.type == "ADDED")

    def _consider(self, res: Resource, obj: dict[str, Any], added: bool) -> None:
        meta = obj["metadata"]
        uid = meta.get("uid", "")
        if res is self._nodes:
            if self.simulating and _needs_ready(obj):
                self._later("node", uid, 0.0, lambda: self._ready_node(meta["name"], uid))
            if self.simulating and added:
                self._start_pods_on(meta["name"])
            return
        grace = meta.get("deletionGracePeriodSeconds")
        if meta.get("deletionTimestamp") and isinstance(grace, int) and grace > 0:
            self._cancel("start", uid)
            cap = self.options.grace_cap if self.options is not None else None
            delay = float(grace) if cap is None else min(float(grace), cap)
            key = (meta.get("namespace", ""), meta["name"])
            self._cancel("finish", uid)  # a shortened period replaces the running one
            self._later("finish", uid, delay, lambda: self._finish(key, uid))
        elif self.simulating and self._startable(obj) and ("start", uid) not in self._timers:
            key = (meta.get("namespace", ""), meta["name"])
            delay = self.options.start_delay if self.options is not None else 0.0
            self._later("start", uid, delay, lambda: self._start(key, uid))

    def _startable(self, pod: dict[str, Any]) -> bool:
        node = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if not node or phase not in (None, "Pending") or pod["metadata"].get("deletionTimestamp"):
            return False
        return self._node(node) is not None

    def _start_pods_on(self, node: str) -> None:
        if self._pods is None:
            return
        for pod in list(self.store.list(self._pods, "", None)):
            if (pod.get("spec") or {}).get("nodeName") == node:
                self._consider(self._pods, pod, added=False)

    def _node(self, name: str) -> dict[str, Any] | None:
        if self._nodes is None:
            return None
        return self.store.objects[self._nodes.key].get(("", name))

    # --- timers --------------------------------------------------------------------------------

    def _later(self, what: str, uid: str, delay: float, work: Callable[[], None]) -> None:
        if self._loop is None or (what, uid) in self._timers:
            return

        def run() -> None:
            self._timers.pop((what, uid), None)
            try:
                work()
            except StatusError:
                pass  # the object changed or went meanwhile: nothing to do
            finally:
                if not self._timers:
                    self._idle.set()

        self._timers[(what, uid)] = self._loop.call_later(delay, run)

    def _cancel(self, what: str, uid: str) -> None:
        handle = self._timers.pop((what, uid), None)
        if handle is not None:
            handle.cancel()
            if not self._timers:
                self._idle.set()

    # --- what the kubelet writes -----------------------------------------------------------------

    def _current(self, res: Resource, key: tuple[str, str], uid: str) -> dict[str, Any] | None:
        obj = self.store.objects[res.key].get(key)
        return obj if obj is not None and obj["metadata"].get("uid") == uid else None

    def _ready_node(self, name: str, uid: str) -> None:
        assert self._nodes is not None
        node = self._current(self._nodes, ("", name), uid)
        if node is None or not _needs_ready(node):
            return
        new = copy_json(node)
        status = new.get("status")
        if not isinstance(status, dict):
            status = new["status"] = {}
        now = _now()
        for type_, value, reason, message in _NODE_CONDITIONS:
            status.setdefault("conditions", []).append(
                {
                    "type": type_,
                    "status": value,
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                    "reason": reason,
                    "message": message,
                }
            )
        if status.get("capacity") and not status.get("allocatable"):
            status["allocatable"] = dict(status["capacity"])
        if not status.get("addresses"):
            self._addresses += 1
            n = self._addresses
            status["addresses"] = [
                {"type": "InternalIP", "address": f"10.0.{n // 250}.{n % 250 + 1}"},
                {"type": "Hostname", "address": name},
            ]
        status.setdefault(
            "nodeInfo",
            {
                "kubeletVersion": SERVER_VERSION["gitVersion"],
                "containerRuntimeVersion": "ocm-kubelet-sim://1.0",
                "osImage": "ocm embedded kubelet simulation",
                "kernelVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        )
        self.store.update(self._nodes, "", name, new, status=True)

    def _start(self, key: tuple[str, str], uid: str) -> None:
        assert self._pods is not None
        pod = self._current(self._pods, key, uid)
        if pod is None or not self._startable(pod):
            return
        node = self._node(pod["spec"]["nodeName"]) or {}
        if _needs_ready(node):  # its kubelet registers the node before it runs pods
            self._cancel("node", node["metadata"]["uid"])
            self._ready_node(node["metadata"]["name"], node["metadata"]["uid"])
            node = self._node(pod["spec"]["nodeName"]) or {}
        new = copy_json(pod)
        status = new.get("status")
        if not isinstance(status, dict):
            status = new["status"] = {}
        now = _now()
        status["phase"] = "Running"
        for type_ in _POD_CONDITIONS:
            set_condition(status, type_, "True")
        addresses = (node.get("status") or {}).get("addresses") or []
        host = next((a.get("address") for a in addresses if a.get("type") == "InternalIP"), None)
        if host:
            status["hostIP"] = host
            status["hostIPs"] = [{"ip": host}]
        self._addresses += 1
        n = self._addresses
        status["podIP"] = f"10.244.{n // 250}.{n % 250 + 2}"
        status["podIPs"] = [{"ip": status["podIP"]}]
        status["startTime"] = now
        status["containerStatuses"] = [
            {
                "name": container.get("name", ""),
                "image": container.get("image", ""),
                "imageID": "",
                "containerID": f"sim://{uid}/{container.get('name', '')}",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            }
            for container in (pod.get("spec") or {}).get("containers") or []
        ]
        self.store.update(self._pods, key[0], key[1], new, status=True)

    def _finish(self, key: tuple[str, str], uid: str) -> None:
        assert self._pods is not None
        if self._current(self._pods, key, uid) is None:
            return
        self.store.delete(self._pods, key[0], key[1], grace=0, precondition_uid=uid)


def _needs_ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return not any(isinstance(c, dict) and c.get("type") == "Ready" for c in conditions)

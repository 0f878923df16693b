"""The pod cache: nodes, every pod the engine knows, and what is counted on each node
(kube: backend/cache/interface.go).

The numbers the Filter and Score plugins see (a node's requested resources) are the sums of
the pods *counted* on it: pods bound there and pods the scheduler has *assumed* there before
their binding is seen. An assumed pod goes through kube-scheduler's states:

```
            assume                    add (pod event: bound to that node)
  pending ----------> assumed -------------------------------------------> bound
     ^                 |   |  finish_binding (BindPod sent)                 |
     |  forget         |   +-- confirm (BindResult ok: PostBind, Scheduled) |
     +-----------------+                                                    | remove
     (Unreserve, a failed binding, a rejected Permit wait)                  v
                                                                          gone
```

* `assume(info, node, ...)`: counted on the node at once, so the next cycle (which runs before
  the binding lands) sees the room as taken.
* `forget(key)`: the assumption is dropped and the pod no longer counted (it goes back to the
  queue, or away).
* `settle(key)`: the pod event shows it bound; the assumption ends and the pod stays counted
  as bound (on the node it was seen on, which may not be ours: then the caller unreserves).
* **expire**: never. kube-scheduler expires an assumed pod whose binding finished but was
  never seen only after a TTL, which it sets to 0 (never) since the binding's answer settles
  it; so does this cache: a successful `BindResult` confirms, a failed one forgets.

Finished pods (Succeeded, Failed) are known but not counted. The cache also keeps the watched
objects plugins read (PodGroup, ElasticQuota, PriorityClass) and resolves pod priorities.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from apis.core import Node, Pod
from apis.meta import KubeObject
from apis.quantity import Quantity
from placement.pods.cluster.nodes import NodeSnapshot, NodeTable
from placement.pods.cluster.pod_index import PodIndex
from placement.pods.cluster.priority_layers import PriorityLayers
from placement.pods.cluster.requests import Requests, non_zero_requests, pod_requests
from placement.pods.framework.interface import PodCycle, PodInfo

__all__ = ["Assumed", "PodCache"]

MAX_SHAPES = 4096  # pod resource shapes whose requests are kept (then forgotten at once)


@dataclass
class Assumed:
    """A pod placed by a cycle and counted on its node until its binding is seen."""

    info: PodInfo
    node: str
    cycle: PodCycle
    attempts: int
    binding: bool = False  # finish_binding: a BindPod went out (or a Bind plugin took it)
    confirmed: bool = False  # PostBind ran and Scheduled was reported
    writes_by: str = ""  # the PreBind plugin whose API writes went out before the binding


class PodCache:
    """Nodes, pods and watched objects; see the module docstring."""

    def __init__(self) -> None:
        self.table = NodeTable()
        self._nodes: dict[str, Node] = {}
        self._pods: dict[str, PodInfo] = {}
        self._by_ns: dict[str, dict[str, PodInfo]] = {}
        self._on_node: dict[str, dict[str, PodInfo]] = {}  # counted: bound + assumed
        self._counted: dict[str, str] = {}  # pod key -> node it is counted on
        self._assumed: dict[str, Assumed] = {}
        self._objects: dict[str, dict[str, KubeObject]] = {}
        self.layers = PriorityLayers(self._counted_pods)
        self.index = PodIndex()  # the counted pods by label and feature, for pod-aware plugins
        # (requests, non-zero requests) per resource shape of a pod: most pods share a few.
        self._requests: dict[Hashable, tuple[Requests, Requests]] = {}

    # --- nodes -------------------------------------------------------------------------------

    def put_node(self, node: Node) -> bool:
        """Add or update a node; True when what fits on it may have changed."""
        name = node.metadata.name or ""
        old = self._nodes.get(name)
        self._nodes[name] = node
        if old is not None and not _node_changed(old, node):
            return False
        self.table.put_node(node)
        self.layers.invalidate()
        return True

    def remove_node(self, name: str) -> None:
        self._nodes.pop(name, None)
        self.table.remove_node(name)
        self.layers.invalidate()

    def snapshot(self) -> NodeSnapshot:
        return self.table.snapshot()

    def bulk(self) -> AbstractContextManager[None]:
        """Rebuild the node arrays once at the end of a burst of changes."""
        return self.table.bulk()

    # --- watched objects ---------------------------------------------------------------------

    def put_object(self, kind: str, key: str, obj: KubeObject | None) -> None:
        """Store (or, with None, forget) a watched object by kind and key."""
        objects = self._objects.setdefault(kind, {})
        if obj is None:
            objects.pop(key, None)
        else:
            objects[key] = obj

    def objects(self, kind: str) -> Mapping[str, KubeObject]:
        return self._objects.get(kind, {})

    # --- pods --------------------------------------------------------------------------------

    def pod(self, key: str) -> PodInfo | None:
        return self._pods.get(key)

    def pods_on(self, node: str) -> Mapping[str, PodInfo]:
        """The pods counted on a node, by key."""
        return self._on_node.get(node, {})

    def pods_in(self, namespace: str) -> Mapping[str, PodInfo]:
        return self._by_ns.get(namespace, {})

    def put(self, info: PodInfo) -> None:
        self._pods[info.key] = info
        self._by_ns.setdefault(info.namespace, {})[info.key] = info

    def remove(self, key: str) -> PodInfo | None:
        """Forget a pod the cluster no longer has (its counting and assumption stay with the
        caller, which must release them)."""
        info = self._pods.pop(key, None)
        if info is not None:
            ns = self._by_ns.get(info.namespace)
            if ns is not None:
                ns.pop(key, None)
                if not ns:
                    del self._by_ns[info.namespace]
        return info

    def info(self, pod: Pod, old: PodInfo | None) -> PodInfo:
        """PodInfo with the priority resolved (kept from the first sighting when the pod and
        its class did not say otherwise: admission fixes a pod's priority at creation)."""
        priority, never = self._priority(pod)
        if old is not None and pod.spec.priority is None:
            priority = old.priority
        shape = _resource_shape(pod)
        requests = self._requests.get(shape)
        if requests is None:
            if len(self._requests) >= MAX_SHAPES:
                self._requests.clear()
            requests = self._requests[shape] = (pod_requests(pod), non_zero_requests(pod))
        return PodInfo.of(pod, priority=priority, preempt_never=never, requests=requests)

    # --- counting ----------------------------------------------------------------------------

    def counted_on(self, key: str) -> str | None:
        return self._counted.get(key)

    def count(self, info: PodInfo, node: str) -> None:
        key = info.key
        if key in self._counted:
            self.uncount(key)
        self.table.add_pod(key, node, info.requests, info.non_zero)
        self._counted[key] = node
        self._on_node.setdefault(node, {})[key] = info
        self.layers.add(node, info.priority, info.requests)
        self.index.add(info, node)

    def uncount(self, key: str) -> bool:
        """Stop counting the pod; True when it was counted."""
        node = self._counted.pop(key, None)
        if node is None:
            return False
        self.table.remove_pod(key)
        self.index.remove(key)
        pods = self._on_node.get(node)
        info = pods.pop(key, None) if pods is not None else None
        if pods is not None and not pods:
            del self._on_node[node]
        if info is not None:
            self.layers.add(node, info.priority, info.requests, sign=-1)
        return True

    # --- assumptions -------------------------------------------------------------------------

    def assume(self, info: PodInfo, node: str, cycle: PodCycle, attempts: int) -> Assumed:
        assumed = self._assumed[info.key] = Assumed(info, node, cycle, attempts)
        self.count(info, node)
        return assumed

    def assumed(self, key: str) -> Assumed | None:
        return self._assumed.get(key)

    def all_assumed(self) -> Iterable[Assumed]:
        return self._assumed.values()

    def forget(self, key: str, node: str) -> Assumed | None:
        """Drop the assumption and stop counting the pod if it is counted on `node` (the
        node it was assumed on)."""
        assumed = self._assumed.pop(key, None)
        if self._counted.get(key) == node:
            self.uncount(key)
        return assumed

    def settle(self, key: str) -> Assumed | None:
        """The pod is seen bound: the assumption ends (the caller counts it where it is)."""
        return self._assumed.pop(key, None)

    def _counted_pods(self) -> Iterator[tuple[str, int, Mapping[str, int]]]:
        for node, pods in self._on_node.items():
            for info in pods.values():
                yield node, info.priority, info.requests

    def _priority(self, pod: Pod) -> tuple[int, bool]:
        spec = pod.spec
        classes = self._objects.get("PriorityClass", {})
        cls: Any = None
        if spec.priority_class_name:
            cls = classes.get(spec.priority_class_name)
        else:
            defaults = sorted(
                (name for name, c in classes.items() if getattr(c, "global_default", False)),
            )
            if defaults:
                cls = classes[defaults[0]]
        value = getattr(cls, "value", 0) if cls is not None else 0
        priority = spec.priority if spec.priority is not None else int(value)
        if spec.preemption_policy is not None:
            never = spec.preemption_policy == "Never"
        else:
            never = cls is not None and getattr(cls, "preemption_policy", None) == "Never"
        return priority, never


def _resource_shape(pod: Pod) -> Hashable:
    """What a pod's requests are computed from, as written (equal text, equal amounts)."""
    spec = pod.spec
    containers = tuple(
        _written(c.resources.requests if c.resources else None) for c in spec.containers
    )
    inits = tuple(
        (c.restart_policy, _written(c.resources.requests if c.resources else None))
        for c in spec.init_containers or ()
    )
    return containers, inits, _written(spec.overhead)


def _written(quantities: Mapping[str, Quantity] | None) -> tuple[tuple[str, str], ...]:
    return tuple((name, str(q.raw)) for name, q in quantities.items()) if quantities else ()


def _node_changed(old: Node, new: Node) -> bool:
    """A node update that may change what fits (kube's nodeSchedulingPropertiesChange)."""
    old_alloc = old.status.allocatable if old.status else None
    new_alloc = new.status.allocatable if new.status else None
    return (
        old.spec != new.spec or old.metadata.labels != new.metadata.labels or old_alloc != new_alloc
    )

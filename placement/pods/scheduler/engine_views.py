"""The engine's implementations of what plugins see of it (`placement.pods.framework.views`): the
read-only `ClusterView`, the `WaitingPods` handle on Permit holds, and the `CycleHost` services.

Each is built from the engine's parts (cache, nominator, cycles, queue), never the engine
itself, so plugins reach exactly what the protocol offers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType

from apis.meta import KubeObject
from placement.arrays import BoolMask
from placement.pods.backend.cache import PodCache
from placement.pods.backend.nominator import Nominator
from placement.pods.backend.queue import SchedulingQueue
from placement.pods.cluster.nodes import NodeSnapshot, ResourceMatrix
from placement.pods.cluster.pod_index import PodIndex
from placement.pods.cluster.priority_layers import PriorityLayers
from placement.pods.framework.interface import Diagnosis, PodCycle, PodInfo
from placement.pods.scheduler.binding import BindingCycle
from placement.pods.scheduler.cycle import SchedulingCycle

__all__ = ["EngineHost", "EngineView", "WaitingHandle"]


class EngineView:
    """The read-only `ClusterView` plugins get."""

    def __init__(self, cache: PodCache, nominator: Nominator) -> None:
        self._cache = cache
        self._nominator = nominator

    def pod(self, key: str) -> PodInfo | None:
        return self._cache.pod(key)

    def pods_on(self, node: str) -> Sequence[PodInfo]:
        return tuple(self._cache.pods_on(node).values())

    def nominated_on(self, node: str) -> Sequence[PodInfo]:
        return tuple(self._nominator.on(node).values())

    def nominated_node(self, key: str) -> str | None:
        return self._nominator.node_of(key)

    @property
    def counted(self) -> PodIndex:
        return self._cache.index

    def pods_in(self, namespace: str) -> Iterable[PodInfo]:
        return tuple(self._cache.pods_in(namespace).values())

    def objects(self, kind: str) -> Mapping[str, KubeObject]:
        return MappingProxyType(self._cache.objects(kind))


class WaitingHandle:
    """`WaitingPods` for plugins: allow or reject pods held at Permit."""

    def __init__(self, binding: BindingCycle) -> None:
        self._binding = binding

    def waiting(self) -> Iterable[PodInfo]:
        return self._binding.waiting_pods()

    def allow(self, key: str, plugin: str) -> None:
        self._binding.allow(key, plugin)

    def reject(self, key: str, plugin: str, message: str) -> None:
        self._binding.reject(key, plugin, message)


class EngineHost:
    """`CycleHost`: the engine's services for plugins that re-run filters (preemption)."""

    def __init__(
        self,
        cycles: SchedulingCycle,
        cache: PodCache,
        nominator: Nominator,
        queue: SchedulingQueue,
        plugins: Sequence[object],
        now: Callable[[], datetime],
    ) -> None:
        self._cycles = cycles
        self._cache = cache
        self._nominator = nominator
        self._queue = queue
        self._plugins = plugins
        self._now = now

    def run_filters(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> tuple[BoolMask, Diagnosis]:
        nodes = self._nominator.with_nominated(pod, nodes)
        return self._cycles.filter(cycle, pod, nodes, candidates)

    def fits(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> BoolMask:
        nodes = self._nominator.with_nominated(pod, nodes)
        mask, _ = self._cycles.filter(cycle, pod, nodes, candidates, explain=False)
        return mask

    def plugins(self) -> Sequence[object]:
        return self._plugins

    def requested_below(self, priority: int, nodes: NodeSnapshot) -> ResourceMatrix:
        return self._cache.layers.below(priority, nodes)

    def preempting(self, key: str) -> bool:
        return key in self._cycles.preempting

    def activate(self, keys: Iterable[str]) -> None:
        now = self._now()
        for key in keys:
            self._queue.activate(key, now)

    @property
    def layers(self) -> PriorityLayers:
        return self._cache.layers

"""The nominator: pending pods promised a node by a preemption (kube: backend/queue/nominator.go).

A preemptor is nominated to the node its victims free (`status.nominatedNodeName`), and until it
binds, every pod of its priority or lower sees that room as taken: the Filter plugins run on the
snapshot with the requests of the pods nominated at the pod's priority or above added to their
nodes (kube's RunFilterPluginsWithNominatedPods), the pod's own nomination left out.

Contract:

* `track(info)` on every pending pod event: its `nominatedNodeName`, else the node this
  nominator gave it (our status patch may not be seen yet), as kube's nominator keeps it.
* `nominate(info, node)` when a preemption picks a node; `drop(key)` when the pod is bound,
  assumed, deleted, or loses its nomination (True when it had one).
* `with_nominated(pod, nodes)` is the snapshot the pod's filters see. The added requests are
  kept per priority and adjusted as nominations come and go, so a gang preemption that
  nominates many pods and filters many times does not sum them again each time.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
from collections.abc import Mapping

import numpy as np

from placement.pods.cluster.nodes import NodeSnapshot, ResourceMatrix
from placement.pods.framework.interface import PodInfo

__all__ = ["Nominator"]

_KEPT_PRIORITIES = 16  # sums kept for this many priorities, then all forgotten at once
_Placed = tuple[int, PodInfo]


class Nominator:
    """Nominated pods by key and by node, with their requests summed per priority."""

    def __init__(self) -> None:
        self._node_of: dict[str, str] = {}  # pending pod key -> nominated node
        self._on: dict[str, dict[str, PodInfo]] = {}
        # priority -> (names, resources, per row the requests of the pods nominated at that
        # priority or above)
        self._extra: dict[int, tuple[tuple[str, ...], tuple[str, ...], ResourceMatrix]] = {}
        # priority -> (names, per nominated node in `_on`'s order the (row, pod) of its pods
        # nominated at that priority or above): the overlay's added pods, adjusted node by node
        # as nominations come and go; `_flat` holds them as one tuple until the next change.
        self._placed: dict[int, tuple[tuple[str, ...], dict[str, list[_Placed]]]] = {}
        self._flat: dict[int, tuple[_Placed, ...]] = {}

    def __bool__(self) -> bool:
        return bool(self._on)

    def node_of(self, key: str) -> str | None:
        return self._node_of.get(key)

    def on(self, node: str) -> Mapping[str, PodInfo]:
        """The pods nominated to a node, by key."""
        return self._on.get(node, {})

    def all(self) -> dict[str, str]:
        """pod key -> nominated node."""
        return dict(self._node_of)

    def track(self, info: PodInfo) -> None:
        """status.nominatedNodeName of a pending pod; an update without one keeps the node
        this nominator gave it."""
        node = info.nominated_node or self._node_of.get(info.key)
        if node:
            self.nominate(info, node)

    def nominate(self, info: PodInfo, node: str) -> None:
        self.drop(info.key)
        self._node_of[info.key] = node
        self._on.setdefault(node, {})[info.key] = info
        self._adjust(info, node, 1)

    def drop(self, key: str) -> bool:
        """Forget the pod's nomination; True when it had one."""
        node = self._node_of.pop(key, None)
        if node is None:
            return False
        pods = self._on.get(node)
        if pods is not None:
            info = pods.pop(key, None)
            if not pods:
                del self._on[node]
            if info is not None:
                self._adjust(info, node, -1)
        return True

    def with_nominated(self, pod: PodInfo, nodes: NodeSnapshot) -> NodeSnapshot:
        """The snapshot with the requests of the pods nominated at the pod's priority or
        above added on their nodes, the pod's own nomination left out."""
        if not self._on:
            return nodes
        cached = self._extra.get(pod.priority)
        if (
            cached is not None
            and (cached[0] is nodes.names or cached[0] == nodes.names)
            and (cached[1] is nodes.resources or cached[1] == nodes.resources)
        ):
            extra: ResourceMatrix | None = cached[2]
        else:
            extra = self._sum(pod.priority, nodes)
            if len(self._extra) >= _KEPT_PRIORITIES:
                self._extra.clear()
            kept = extra if extra is not None else np.zeros_like(nodes.requested)
            self._extra[pod.priority] = (nodes.names, nodes.resources, kept)
        if extra is not None and not extra.any():
            extra = None
        own = self._node_of.get(pod.key)
        if extra is not None and own is not None:
            mine = self._on.get(own, {}).get(pod.key)
            row = nodes.row_of(own)
            if mine is not None and mine.priority >= pod.priority and row is not None:
                extra = extra.copy()
                extra[row] -= nodes.vector(mine.requests)
        added = self._added(pod, nodes)
        if extra is None and not added:
            return nodes
        requested = nodes.requested if extra is None else nodes.requested + extra
        overlay = nodes.overlay.adding(added) if added else nodes.overlay
        return dataclasses.replace(nodes, requested=requested, overlay=overlay)

    def _added(self, pod: PodInfo, nodes: NodeSnapshot) -> tuple[_Placed, ...]:
        """The nominated pods the pod's filters count as running (`PodOverlay.added`), the
        pod's own nomination left out, in `_on`'s order (nodes, then pods on each)."""
        kept = self._placed.get(pod.priority)
        if kept is not None and (kept[0] is nodes.names or kept[0] == nodes.names):
            groups = kept[1]
        else:
            groups = {node: self._group(node, pod.priority, nodes.names) for node in self._on}
            if len(self._placed) >= _KEPT_PRIORITIES:
                self._placed.clear()
                self._flat.clear()
            self._placed[pod.priority] = (nodes.names, groups)
            self._flat.pop(pod.priority, None)
        placed = self._flat.get(pod.priority)
        if placed is None:
            placed = self._flat[pod.priority] = tuple(
                itertools.chain.from_iterable(groups.values())
            )
        own = self._node_of.get(pod.key)
        if own is not None:
            key = pod.key
            mine = next((item for item in groups.get(own, ()) if item[1].key == key), None)
            if mine is not None:  # the very tuple `placed` holds once
                at = placed.index(mine)
                return placed[:at] + placed[at + 1 :]
        return placed

    def _group(self, node: str, priority: int, names: tuple[str, ...]) -> list[_Placed]:
        """The (row, pod) of the pods nominated to `node` at `priority` or above."""
        row = bisect.bisect_left(names, node)
        if row >= len(names) or names[row] != node:
            return []
        return [(row, p) for p in self._on.get(node, {}).values() if p.priority >= priority]

    def _adjust(self, info: PodInfo, node: str, sign: int) -> None:
        """Add (or take away) one nominated pod in the kept sums and groups (`_on` holds the
        change already)."""
        self._flat.clear()
        for priority, (names, groups) in self._placed.items():
            if node not in self._on:
                groups.pop(node, None)
            elif info.priority >= priority or node not in groups:
                groups[node] = self._group(node, priority, names)  # a new node goes last
        for priority, (names, resources, extra) in list(self._extra.items()):
            if info.priority < priority:
                continue
            row = bisect.bisect_left(names, node)
            if row >= len(names) or names[row] != node:
                continue
            for col, resource in enumerate(resources):
                amount = info.requests.get(resource)
                if amount:
                    extra[row, col] += sign * amount

    def _sum(self, priority: int, nodes: NodeSnapshot) -> ResourceMatrix | None:
        """Per row, the requests of the pods nominated there at `priority` or above (None
        when there is none)."""
        extra: ResourceMatrix | None = None
        for node, pods in self._on.items():
            row = None
            for other in pods.values():
                if other.priority < priority:
                    continue
                if row is None:
                    row = nodes.row_of(node)
                    if row is None:
                        break
                if extra is None:
                    extra = np.zeros_like(nodes.requested)
                extra[row] += nodes.vector(other.requests)
        return extra

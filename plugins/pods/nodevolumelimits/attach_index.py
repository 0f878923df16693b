"""NodeVolumeLimits' index of the volumes attached per node: the counted pods' volumes resolved
once (`plugins.pods.nodevolumelimits.attachable`), kept up to date from the pod index's changes,
with per node how many pods use each volume and per driver how many distinct volumes each node
holds, as columns over the snapshot's rows for the vectorized Filter.

A change of a claim, volume or class may change what a pod's volumes resolve to: `invalidate`
makes the next `sync` resolve every counted pod again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.pod_index import PodIndex
from placement.pods.framework.interface import PodInfo
from plugins.pods.nodevolumelimits.attachable import VolumeKey, may_attach

__all__ = ["AttachIndex", "Column", "Volumes"]

Volumes = dict[VolumeKey, str]
Column = np.ndarray[Any, np.dtype[np.int64]]
USERS_SUBSET = "NodeVolumeLimits/volume-users"


def _uses_volumes(pod: PodInfo) -> bool:
    return may_attach(pod.pod)


class AttachIndex:
    """See the module docstring. `resolve(pod)` gives a counted pod's volumes."""

    def __init__(self) -> None:
        self._source: PodIndex | None = None
        self._generation = -1
        self._pods: dict[str, tuple[str, Volumes]] = {}  # pod key -> (node, its volumes)
        self.refs: dict[str, dict[VolumeKey, int]] = {}  # node -> volume -> pods using it
        self.where: dict[VolumeKey, set[str]] = {}  # volume -> the nodes it is attached to
        self._by_node: dict[str, set[str]] = {}  # node -> keys of its pods with volumes
        self._counts: dict[str, dict[str, int]] = {}  # driver -> node -> distinct volumes
        self._columns: dict[str, Column] = {}
        self._rows_of: object = None  # the snapshot's names the columns are laid out on
        self._dirty: dict[str, set[str]] = {}  # driver -> nodes whose count changed since

    def invalidate(self) -> None:
        self._source = None

    def sync(self, counted: PodIndex, resolve: Callable[[PodInfo], Volumes]) -> None:
        if self._source is counted and self._generation == counted.generation:
            return
        changes = counted.changes_since(self._generation) if self._source is counted else None
        if changes is None:
            self._pods, self.refs, self._counts, self.where, self._by_node = {}, {}, {}, {}, {}
            self._rows_of = None
            for key, info in counted.subset(USERS_SUBSET, _uses_volumes).items():
                node = counted.node_of(key)
                if node is not None:
                    self._add(info, node, resolve)
        else:
            for change in changes:
                if not _uses_volumes(change.info):
                    continue
                if change.sign > 0:
                    self._remove(change.info.key)
                    self._add(change.info, change.node, resolve)
                else:
                    self._remove(change.info.key)
        self._source, self._generation = counted, counted.generation

    def _add(self, info: PodInfo, node: str, resolve: Callable[[PodInfo], Volumes]) -> None:
        volumes = resolve(info)
        if not volumes:
            return
        self._pods[info.key] = (node, volumes)
        self._by_node.setdefault(node, set()).add(info.key)
        refs = self.refs.setdefault(node, {})
        for key, driver in volumes.items():
            if key not in refs:
                counts = self._counts.setdefault(driver, {})
                counts[node] = counts.get(node, 0) + 1
                self._dirty.setdefault(driver, set()).add(node)
                self.where.setdefault(key, set()).add(node)
            refs[key] = refs.get(key, 0) + 1

    def _remove(self, pod_key: str) -> None:
        found = self._pods.pop(pod_key, None)
        if found is None:
            return
        node, volumes = found
        self._by_node.get(node, set()).discard(pod_key)
        refs = self.refs.get(node, {})
        for key, driver in volumes.items():
            left = refs.get(key, 0) - 1
            if left > 0:
                refs[key] = left
                continue
            refs.pop(key, None)
            self.where.get(key, set()).discard(node)
            counts = self._counts.get(driver, {})
            counts[node] = counts.get(node, 0) - 1
            self._dirty.setdefault(driver, set()).add(node)
            if counts[node] <= 0:
                counts.pop(node, None)

    def volumes_of(self, pod_key: str) -> Volumes:
        found = self._pods.get(pod_key)
        return found[1] if found else {}

    def on_node(self, node: str) -> list[str]:
        """The keys of the counted pods with volumes on `node` (preemption's exact count)."""
        return sorted(self._by_node.get(node, ()))

    def attached(self, driver: str, nodes: NodeSnapshot) -> Column:
        """The distinct volumes of `driver` per row of the snapshot (kept as a column, the rows
        of the nodes whose count changed rewritten)."""
        if self._rows_of is not nodes.names:
            self._rows_of, self._columns, self._dirty = nodes.names, {}, {}
        counts = self._counts.get(driver, {})
        column = self._columns.get(driver)
        if column is None:
            column = self._columns[driver] = np.zeros(nodes.size, dtype=np.int64)
            changed: Iterable[str] = counts
        else:
            changed = self._dirty.get(driver, ())
        for node in changed:
            row = nodes.row_of(node)
            if row is not None:
                column[row] = counts.get(node, 0)
        self._dirty.pop(driver, None)
        return column

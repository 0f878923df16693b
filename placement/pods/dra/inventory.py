"""The devices the ResourceSlices publish, and which of them each node reaches.

`DeviceInventory` holds the slices and DeviceClasses (fed per event) and builds, once per
change, a `Catalog`: every device of every slice in one flat list, in the order the allocator
walks them — pools by (driver, pool name), a pool's slices by name, a slice's devices as
listed. kube-scheduler walks pools and slices in the order of a Go map and of its informer
cache (unspecified), devices in a slice as listed; for the usual driver, one slice per node,
the two walks are the same.

`Catalog.gather(node, labels)` is kube's GatherPools for one node: the slices reaching the
node (`nodeName`, `allNodes`, `nodeSelector`, or per device with `perDeviceNodeSelection`),
only the newest generation of a pool the node sees; a pool whose slices of that generation are
not all published (`resourceSliceCount`) is incomplete — none of its devices are used, and a
request for `All` devices fails — unless the node's own slices make up the count; a pool that
a newer generation (reaching other nodes only) replaces is ignored; a pool with two devices of
one name is invalid (not used). A slice of counter sets (partitionable devices: see
`counters`) reaches every node that sees its pool; a pool whose counter sets repeat a name, or
with a device consuming a counter it does not declare, is invalid. `Catalog.reach(nodes)` is
the same over a whole `NodeSnapshot` as arrays, for the vectorised first cut: it counts every
device of a targeting slice (a superset), and marks the rows where a pool being updated or
invalid makes that inexact.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from apis.core import NodeSelector
from apis.resource import Device, DeviceClass, ResourceSlice
from placement.arrays import BoolMask
from placement.pods.cluster.affinity import selector_terms_mask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.dra.counters import (
    Amount,
    CounterSets,
    consumption_of,
    counter_sets_of,
    valid_counter_sets,
)
from placement.pods.dra.devices import DeviceKey, DeviceView, Taint, node_matches
from placement.selectors import SelectorError

__all__ = ["Catalog", "DeviceInventory", "NodeReach", "PoolView"]

PoolId = tuple[str, str]
Labels = Callable[[], Mapping[str, str]]


@dataclass(frozen=True)
class _Reach:
    node_name: str | None
    all_nodes: bool
    selector: NodeSelector | None

    def matches(self, node: str, labels: Labels) -> bool:
        if self.node_name:
            return self.node_name == node
        if self.all_nodes:
            return True
        return self.selector is not None and node_matches(self.selector, node, labels())


@dataclass(frozen=True)
class _Slice:
    name: str
    pool: PoolId
    generation: int
    count: int
    reach: _Reach | None  # None: per device (or nothing known: never reaches a node)
    per_device: bool
    first: int  # its devices in the catalog: [first, stop)
    stop: int
    counter_sets: tuple[tuple[str, dict[str, Amount]], ...] = ()  # a slice of counter sets


@dataclass(frozen=True)
class PoolView:
    """One pool as one node sees it: its usable devices (catalog indices, walk order)."""

    driver: str
    pool: str
    incomplete: bool
    invalid: bool
    devices: tuple[int, ...]
    counter_sets: CounterSets = field(default_factory=dict, compare=False)
    accounted: tuple[int, ...] = ()  # devices of its generation that consume counters

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}"


@dataclass(frozen=True)
class NodeReach:
    """Devices reachable per row: `local_row[d]` the one row of a node-local device (-1 for
    none), `groups` the devices reaching a set of rows; `uncertain` rows are those a pool
    being updated or invalid touches, where counting is not exact."""

    local_row: npt.NDArray[np.int64]
    groups: tuple[tuple[npt.NDArray[np.int64], BoolMask], ...]
    uncertain: BoolMask

    def counts(self, usable: BoolMask, size: int) -> npt.NDArray[np.int64]:
        """Per row, how many of the `usable` devices it reaches."""
        rows = self.local_row[usable & (self.local_row >= 0)]
        out: npt.NDArray[np.int64] = np.bincount(rows, minlength=size).astype(np.int64)
        for index, mask in self.groups:
            hits = int(np.count_nonzero(usable[index]))
            if hits:
                out += mask * hits
        return out


@dataclass
class Catalog:
    """The devices of every slice, flat; immutable once built."""

    version: int
    devices: list[DeviceView] = field(default_factory=list)
    device_reach: dict[int, _Reach] = field(default_factory=dict)  # per-device selection
    slices: list[_Slice] = field(default_factory=list)
    pools: dict[PoolId, list[int]] = field(default_factory=dict)  # slice indices, name order
    by_node: dict[str, list[int]] = field(default_factory=dict)  # node-local slices
    shared: list[int] = field(default_factory=list)  # allNodes, nodeSelector, per device
    counter_slices: list[int] = field(default_factory=list)  # reach every node of the pool
    counter_by_pool: dict[PoolId, list[int]] = field(default_factory=dict)
    unclean_counters: list[int] = field(default_factory=list)  # of pools not clean
    counter_devices: list[int] = field(default_factory=list)  # devices consuming counters
    consuming: BoolMask | None = None  # the same as a mask, when there are some
    unclean: set[PoolId] = field(default_factory=set)
    label_dependent: bool = False  # some slice or device reaches nodes by a selector
    slice_of: list[int] = field(default_factory=list)  # device index -> slice index
    index_of: dict[DeviceKey, int] = field(default_factory=dict)
    special: list[int] = field(default_factory=list)  # tainted, or with binding conditions
    selections: dict[object, Any] = field(default_factory=dict)  # prepared.Selection by request
    _gathered: dict[object, tuple[PoolView, ...]] = field(default_factory=dict)
    _reach: tuple[object, object, NodeReach] | None = None

    @classmethod
    def build(cls, version: int, slices: Mapping[str, ResourceSlice]) -> Catalog:
        catalog = cls(version)
        ordered = sorted(slices.values(), key=lambda s: (s.spec.driver, s.spec.pool.name, s.name))
        for item in ordered:
            catalog._add(item)
        reaches = list(catalog.device_reach.values())
        reaches += [r for i in catalog.shared if (r := catalog.slices[i].reach) is not None]
        catalog.label_dependent = any(r.selector is not None for r in reaches)
        for index, entry in enumerate(catalog.slices):
            catalog.slice_of.extend([index] * (entry.stop - entry.first))
        for d, view in enumerate(catalog.devices):
            catalog.index_of.setdefault(view.key, d)
            if view.taints or view.binding_conditions:
                catalog.special.append(d)
            if view.consumes_counters:
                catalog.counter_devices.append(d)
        for pool, members in catalog.pools.items():
            if not _clean([catalog.slices[i] for i in members], catalog.devices):
                catalog.unclean.add(pool)
        if catalog.counter_devices:
            catalog.consuming = np.zeros(len(catalog.devices), dtype=bool)
            catalog.consuming[catalog.counter_devices] = True
        catalog.unclean_counters = [
            i for i in catalog.counter_slices if catalog.slices[i].pool in catalog.unclean
        ]
        return catalog

    def _add(self, item: ResourceSlice) -> None:
        spec = item.spec
        pool = (spec.driver, spec.pool.name)
        first = len(self.devices)
        counter_sets = counter_sets_of(spec)
        if counter_sets:
            # Counter sets and devices never share a slice (kube-apiserver refuses it; kube's
            # allocator would not use such devices): reaches every node seeing the pool.
            index = len(self.slices)
            entry = _Slice(
                item.name,
                pool,
                spec.pool.generation,
                spec.pool.resource_slice_count,
                None,
                False,
                first,
                first,
                counter_sets,
            )
            self.slices.append(entry)
            self.pools.setdefault(pool, []).append(index)
            self.counter_slices.append(index)
            self.counter_by_pool.setdefault(pool, []).append(index)
            return
        for device in spec.devices or ():
            self.devices.append(_view(spec.driver, spec.pool.name, device))
        per_device = bool(spec.per_device_node_selection)
        reach: _Reach | None = None
        if spec.node_name or spec.all_nodes or spec.node_selector is not None:
            reach = _Reach(spec.node_name, bool(spec.all_nodes), spec.node_selector)
        elif per_device:
            for offset, device in enumerate(spec.devices or ()):
                self.device_reach[first + offset] = _Reach(
                    device.node_name, bool(device.all_nodes), device.node_selector
                )
        index = len(self.slices)
        self.slices.append(
            _Slice(
                item.name,
                pool,
                spec.pool.generation,
                spec.pool.resource_slice_count,
                reach,
                per_device and reach is None,
                first,
                len(self.devices),
            )
        )
        self.pools.setdefault(pool, []).append(index)
        if reach is not None and reach.node_name:
            self.by_node.setdefault(reach.node_name, []).append(index)
        elif reach is not None or per_device:
            self.shared.append(index)

    # --- one node ------------------------------------------------------------------------

    def gather(self, node: str, labels: Labels) -> tuple[PoolView, ...]:
        """The pools reaching the node, in walk order (cached per node)."""
        # Labels matter only where a selector decides; otherwise one entry per node.
        cache_key: object = node
        if self.label_dependent:
            cache_key = (node, tuple(sorted(labels().items())))
        cached = self._gathered.get(cache_key)
        if cached is None:
            cached = self._gather(node, labels)
            self._gathered[cache_key] = cached
        return cached

    def _targets(self, index: int, node: str, labels: Labels) -> bool:
        entry = self.slices[index]
        if entry.reach is not None:
            return entry.reach.matches(node, labels)
        if not entry.per_device:
            return False
        return any(
            self.device_reach[d].matches(node, labels) for d in range(entry.first, entry.stop)
        )

    def _gather(self, node: str, labels: Labels) -> tuple[PoolView, ...]:
        seen: dict[PoolId, list[int]] = {}
        targeting = list(self.by_node.get(node, ()))
        targeting += [i for i in self.shared if self._targets(i, node, labels)]
        for index in targeting:
            seen.setdefault(self.slices[index].pool, []).append(index)
        # Counter sets reach every node (kube gathers them whatever their node selection).
        # A whole, valid pool that only they bring adds no device: left out, which is exact.
        alone = [i for i in self.unclean_counters if self.slices[i].pool not in seen]
        for pool, members in seen.items():
            members += self.counter_by_pool.get(pool, ())
        for index in alone:
            seen.setdefault(self.slices[index].pool, []).append(index)
        out: list[PoolView] = []
        for pool in sorted(seen):
            view = self._pool_view(pool, sorted(seen[pool]), node, labels)
            if view is not None:
                out.append(view)
        return tuple(out)

    def _pool_view(
        self, pool: PoolId, targeting: list[int], node: str, labels: Labels
    ) -> PoolView | None:
        newest = max(self.slices[i].generation for i in targeting)
        mine = [i for i in targeting if self.slices[i].generation == newest]
        wanted = self.slices[mine[0]].count
        generation = mine
        if len(mine) != wanted:
            members = self.pools[pool]
            if any(self.slices[i].generation > newest for i in members):
                return None  # a newer generation is being published: ignore this one
            generation = [i for i in members if self.slices[i].generation == newest]
            if len(generation) != wanted:
                return PoolView(pool[0], pool[1], True, False, ())
        names: set[str] = set()
        devices: list[int] = []
        invalid = False
        for index in mine:
            entry = self.slices[index]
            for d in range(entry.first, entry.stop):
                name = self.devices[d].name
                invalid = invalid or name in names
                names.add(name)
                if not entry.per_device or self.device_reach[d].matches(node, labels):
                    devices.append(d)
        if invalid:
            return PoolView(pool[0], pool[1], False, True, ())
        if not self.counter_slices and not self.counter_devices:
            return PoolView(pool[0], pool[1], False, False, tuple(devices))
        # Consumption is checked, and counted, over every slice of the generation (kube's
        # slices not targeting the node included): a device allocated on another node of
        # the pool uses the same counters.
        accounted = tuple(d for i in generation for d in self._consuming(i))
        declared = (self.slices[i].counter_sets for i in mine)
        sets = valid_counter_sets(declared, (self.devices[d] for d in accounted))
        if sets is None:
            return PoolView(pool[0], pool[1], False, True, ())
        return PoolView(pool[0], pool[1], False, False, tuple(devices), sets, accounted)

    def _consuming(self, index: int) -> list[int]:
        entry = self.slices[index]
        return [d for d in range(entry.first, entry.stop) if self.devices[d].consumes_counters]

    # --- a whole snapshot ----------------------------------------------------------------

    def reach(self, nodes: NodeSnapshot) -> NodeReach:
        """Arrays of which rows reach which devices (cached while names and labels are)."""
        if self._reach is not None:
            names, labels, cached = self._reach
            if names is nodes.names and labels is nodes.labels:
                return cached
        built = self._build_reach(nodes)
        self._reach = (nodes.names, nodes.labels, built)
        return built

    def _build_reach(self, nodes: NodeSnapshot) -> NodeReach:
        size = nodes.size
        rows = {name: row for row, name in enumerate(nodes.names)}
        local = np.full(len(self.devices), -1, dtype=np.int64)
        uncertain = np.zeros(size, dtype=bool)
        groups: list[tuple[npt.NDArray[np.int64], BoolMask]] = []
        for name, members in self.by_node.items():
            row = rows.get(name)
            if row is None:
                continue
            for index in members:
                entry = self.slices[index]
                local[entry.first : entry.stop] = row
                if entry.pool in self.unclean:
                    uncertain[row] = True
        for index in self.shared:
            entry = self.slices[index]
            if entry.reach is not None:
                pairs = [(np.arange(entry.first, entry.stop), _rows(entry.reach, nodes, rows))]
            else:
                pairs = []
                for d in range(entry.first, entry.stop):
                    reach = self.device_reach[d]
                    row = rows.get(reach.node_name) if reach.node_name else None
                    if row is not None:
                        local[d] = row
                        mask = np.zeros(size, dtype=bool)
                        mask[row] = True
                    else:
                        mask = _rows(reach, nodes, rows)
                        pairs.append((np.array([d]), mask))
                    if entry.pool in self.unclean:
                        uncertain |= mask
            for index_array, mask in pairs:
                groups.append((index_array.astype(np.int64), mask))
                if entry.pool in self.unclean:
                    uncertain |= mask
        if self.unclean_counters:
            uncertain[:] = True  # its counter sets bring the pool to every node
        return NodeReach(local, tuple(groups), uncertain)


def _rows(reach: _Reach, nodes: NodeSnapshot, rows: Mapping[str, int]) -> BoolMask:
    mask = np.zeros(nodes.size, dtype=bool)
    if reach.node_name:
        row = rows.get(reach.node_name)
        if row is not None:
            mask[row] = True
    elif reach.all_nodes:
        mask[:] = True
    elif reach.selector is not None:
        # A selector kube cannot build either reaches no node.
        with contextlib.suppress(SelectorError):
            mask = selector_terms_mask(reach.selector, nodes)
    return mask


def _clean(members: list[_Slice], devices: list[DeviceView]) -> bool:
    """One generation, every slice of it published, device names unique, counters valid:
    then each node sees the devices of the slices reaching it, no more, no fewer."""
    if len({m.generation for m in members}) != 1 or any(m.count != len(members) for m in members):
        return False
    names = [devices[d].name for m in members for d in range(m.first, m.stop)]
    every = (devices[d] for m in members for d in range(m.first, m.stop))
    return len(names) == len(set(names)) and (
        valid_counter_sets((m.counter_sets for m in members), every) is not None
    )


def _view(driver: str, pool: str, device: Device) -> DeviceView:
    extra = device.model_extra or {}
    return DeviceView(
        driver,
        pool,
        device.name,
        device.attributes or {},
        device.capacity or {},
        tuple(Taint(t.key, t.value or "", t.effect) for t in device.taints or ()),
        bool(extra.get("bindingConditions")),
        bool(device.consumes_counters),
        bool(device.allow_multiple_allocations),
        consumption_of(device),
    )


class DeviceInventory:
    """ResourceSlices and DeviceClasses as the informers last reported them."""

    def __init__(self) -> None:
        self._slices: dict[str, ResourceSlice] = {}
        self.classes: dict[str, DeviceClass] = {}
        self._version = 0
        self._catalog: Catalog | None = None

    @property
    def version(self) -> int:
        """Counts changes of the slices (classes are read live)."""
        return self._version

    def update_slice(self, name: str, slice: ResourceSlice | None) -> None:
        if slice is None:
            if self._slices.pop(name, None) is None:
                return
        else:
            self._slices[name] = slice
        self._version += 1
        self._catalog = None

    def update_class(self, name: str, cls: DeviceClass | None) -> None:
        if cls is None:
            self.classes.pop(name, None)
        else:
            self.classes[name] = cls

    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = Catalog.build(self._version, self._slices)
        return self._catalog

"""`ClaimAllocator`: allocates a pod's unallocated ResourceClaims as kube-scheduler's
DynamicResources plugin does (v1.36, its structured allocator).

`prepare` reads the claims once per cycle (PreFilter's checks); `allocate` runs the exact
search for one node and returns each claim's `status.allocation` in wire form;
`feasible` is the vectorised Filter over a `NodeSnapshot`. It first counts, per row and per
request, the devices the row reaches that the request may take (numpy over the whole
inventory), which is a necessary condition; a pod asking one claim for N devices of one
request with no constraint, on rows no pool being updated touches, is decided by that count
alone (the common shape: one GPU per pod), unless the row reaches devices that consume shared
counters (partitionable devices). Only the other rows that pass the count get the
exact search, so `feasible` agrees with `allocate` on every row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Any

import numpy as np

from apis.resource import ResourceClaim
from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.dra.devices import AllocationError, DeviceKey
from placement.pods.dra.inventory import Catalog, DeviceInventory
from placement.pods.dra.prepared import (
    PreparedClaims,
    RequestOption,
    SelectorSource,
    prepare_claims,
)
from placement.pods.dra.search import search_node

__all__ = ["ClaimAllocator"]


class ClaimAllocator:
    def __init__(self, inventory: DeviceInventory, selectors: SelectorSource) -> None:
        self.inventory = inventory
        self.selectors = selectors
        self._last_busy: tuple[frozenset[DeviceKey], int, BoolMask] | None = None

    def prepare(self, claims: Sequence[ResourceClaim]) -> PreparedClaims:
        """The claims (the pod's, not yet allocated) checked and resolved; raises
        AllocationError with kube's message (kind "unschedulable" for a missing class)."""
        return prepare_claims(claims, self.inventory.classes)

    def allocate(
        self,
        prepared: PreparedClaims,
        node: str,
        labels: Mapping[str, str],
        in_use: Set[DeviceKey],
    ) -> list[dict[str, Any]] | None:
        """One `status.allocation` per prepared claim, in order, or None when the claims do
        not fit on the node; raises AllocationError (kind "node": this node only)."""
        catalog = self.inventory.catalog()
        pools = catalog.gather(node, lambda: labels)
        return search_node(prepared, catalog, self.selectors, node, pools, in_use)

    def feasible(
        self,
        prepared: PreparedClaims,
        nodes: NodeSnapshot,
        candidates: BoolMask,
        in_use: Set[DeviceKey],
        reasons: dict[int, str] | None = None,
    ) -> BoolMask:
        """Rows of `candidates` where every claim can be allocated. A row failing for a
        reason of its own (kube's node-local error) gets it in `reasons`, if given; other
        AllocationErrors are raised."""
        out = np.zeros(nodes.size, dtype=bool)
        if not prepared.claims:
            return candidates.copy()
        catalog = self.inventory.catalog()
        reach = catalog.reach(nodes)
        busy = self._busy(catalog, in_use)
        passing = candidates.copy()
        union = np.zeros(len(catalog.devices), dtype=bool)
        least = 0
        for plan in prepared.claims:
            for slot in plan.slots:
                slot_ok = np.zeros(nodes.size, dtype=bool)
                fewest: int | None = None
                for option in slot.options:
                    usable = self._usable(prepared, catalog, option, busy)
                    union |= usable
                    need = 1 if option.all_devices else option.count
                    fewest = need if fewest is None else min(fewest, need)
                    slot_ok |= reach.counts(usable, nodes.size) >= need
                # Rows a pool being updated or invalid touches are searched: the search
                # raises for `All`, and tells the node its invalid pools when nothing fits.
                passing &= slot_ok | reach.uncertain
                least += fewest or 0
        passing &= (reach.counts(union, nodes.size) >= least) | reach.uncertain
        exact = passing
        if self._decided_by_counts(prepared, catalog):
            doubtful = reach.uncertain
            if catalog.consuming is not None:
                # Rows reaching devices the request may take that consume shared counters
                # are searched: a count does not say whether the counters allow them.
                option = prepared.claims[0].slots[0].options[0]
                usable = self._usable(prepared, catalog, option, busy) & catalog.consuming
                doubtful = doubtful | (reach.counts(usable, nodes.size) > 0)
            out |= passing & ~doubtful
            exact = passing & doubtful
        for row in np.flatnonzero(exact).tolist():
            out[row] = self._row(prepared, catalog, nodes, row, in_use, reasons)
        return out

    def _busy(self, catalog: Catalog, in_use: Set[DeviceKey]) -> BoolMask:
        """The devices in use as a mask over the catalog; remembered for a frozenset (it
        cannot change), so pods filtered against the same one share it."""
        cached = self._last_busy
        if cached is not None and cached[0] is in_use and cached[1] == catalog.version:
            return cached[2]
        busy = np.zeros(len(catalog.devices), dtype=bool)
        index_of = catalog.index_of
        found = [i for key in in_use if (i := index_of.get(key)) is not None]
        busy[found] = True
        if isinstance(in_use, frozenset):
            self._last_busy = (in_use, catalog.version, busy)
        return busy

    def _usable(
        self,
        prepared: PreparedClaims,
        catalog: Catalog,
        option: RequestOption,
        busy: BoolMask,
    ) -> BoolMask:
        usable = prepared.selection(option, catalog, self.selectors).usable
        return usable if option.admin else usable & ~busy

    def _decided_by_counts(self, prepared: PreparedClaims, catalog: Catalog) -> bool:
        """One claim, one request of `exactly` N devices, no constraint, no CEL error: then
        a row reaching N devices the request may take is a row where it fits."""
        if len(prepared.claims) != 1:
            return False
        plan = prepared.claims[0]
        if len(plan.slots) != 1 or plan.constraints or plan.slots[0].first_available:
            return False
        option = plan.slots[0].options[0]
        selection = prepared.selection(option, catalog, self.selectors)
        return not option.all_devices and not selection.errors

    def _row(
        self,
        prepared: PreparedClaims,
        catalog: Catalog,
        nodes: NodeSnapshot,
        row: int,
        in_use: Set[DeviceKey],
        reasons: dict[int, str] | None,
    ) -> bool:
        name = nodes.names[row]

        def labels() -> Mapping[str, str]:
            return _labels_of(nodes, row)

        pools = catalog.gather(name, labels)
        try:
            found = search_node(prepared, catalog, self.selectors, name, pools, in_use)
        except AllocationError as err:
            if err.kind != "node":
                raise
            if reasons is not None:
                reasons[row] = err.message
            return False
        return found is not None


def _labels_of(nodes: NodeSnapshot, row: int) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, column in nodes.labels.items():
        value = column.value_at(row)
        if value is not None:
            out[key] = value
    return out

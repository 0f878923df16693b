"""The DynamicResources plugin's allocator: `placement.pods.dra`'s device inventory and
structured allocator over the device CEL selectors (`placement.cel.devices`), behind the
plugin's `DraBackend` interface (its errors turned into `DraAllocationError`)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence, Set
from typing import Any, cast

from apis.resource import DeviceClass, ResourceClaim, ResourceSlice
from placement.arrays import BoolMask
from placement.cel.devices import DeviceSelectors
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.dra import (
    AllocationError,
    ClaimAllocator,
    DeviceInventory,
    DeviceKey,
    PreparedClaims,
    allocated_devices,
)
from plugins.pods.dynamicresources.claims import DraAllocationError

__all__ = ["StructuredBackend", "default_backend"]


def _problem(error: AllocationError) -> DraAllocationError:
    if error.kind == "unschedulable":
        return DraAllocationError(error.message, "unschedulable")
    return DraAllocationError(error.message)


class StructuredBackend:
    """One inventory and allocator per plugin (per profile), fed by the plugin's events."""

    def __init__(self) -> None:
        self.inventory = DeviceInventory()
        self.allocator = ClaimAllocator(self.inventory, DeviceSelectors())

    def update_slice(self, name: str, slice: ResourceSlice | None) -> None:
        self.inventory.update_slice(name, slice)

    def update_class(self, name: str, cls: DeviceClass | None) -> None:
        self.inventory.update_class(name, cls)

    def prepare(self, claims: Sequence[ResourceClaim]) -> Any:
        try:
            return self.allocator.prepare(claims)
        except AllocationError as error:
            raise _problem(error) from None

    def feasible(
        self, prepared: Any, nodes: NodeSnapshot, candidates: BoolMask, in_use: Set[Hashable]
    ) -> tuple[BoolMask, Mapping[int, str]]:
        reasons: dict[int, str] = {}
        try:
            fits = self.allocator.feasible(
                cast(PreparedClaims, prepared),
                nodes,
                candidates,
                cast(Set[DeviceKey], in_use),
                reasons,
            )
        except AllocationError as error:
            raise _problem(error) from None
        return fits, reasons

    def allocate(
        self, prepared: Any, node: str, labels: Mapping[str, str], in_use: Set[Hashable]
    ) -> list[dict[str, Any]] | None:
        try:
            return self.allocator.allocate(
                cast(PreparedClaims, prepared), node, labels, cast(Set[DeviceKey], in_use)
            )
        except AllocationError:
            return None  # this node only: Reserve reports it as not allocatable there

    def allocated_devices(self, claim: ResourceClaim) -> set[Hashable]:
        return set(allocated_devices(claim))


def default_backend() -> StructuredBackend:
    return StructuredBackend()

"""Dynamic resource allocation for the pod scheduler: the devices ResourceSlices publish
(`DeviceInventory`) and kube-scheduler's structured allocator over them (`ClaimAllocator`).

The DynamicResources plugin feeds the inventory from its informer events, keeps the devices in
use (`allocated_devices` of every allocated claim, plus those it assumed in flight), prepares
a pod's unallocated claims once per cycle, filters nodes with `feasible` and writes the
allocation `allocate` returns for the chosen node.
"""

from placement.pods.dra.allocator import ClaimAllocator
from placement.pods.dra.devices import (
    MAX_RESULTS,
    AllocationError,
    DeviceKey,
    DeviceView,
    allocated_devices,
)
from placement.pods.dra.inventory import DeviceInventory
from placement.pods.dra.prepared import PreparedClaims, SelectorSource

__all__ = [
    "MAX_RESULTS",
    "AllocationError",
    "ClaimAllocator",
    "DeviceInventory",
    "DeviceKey",
    "DeviceView",
    "PreparedClaims",
    "SelectorSource",
    "allocated_devices",
]

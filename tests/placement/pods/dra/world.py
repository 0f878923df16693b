"""Builders for the DRA allocator tests: nodes, slices, classes and claims in wire form."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from apis.core import Node
from apis.resource import DeviceClass, ResourceClaim, ResourceSlice
from placement.cel.devices import DeviceSelectors
from placement.pods.cluster.nodes import NodeSnapshot, NodeTable
from placement.pods.dra import ClaimAllocator, DeviceInventory, DeviceKey

DRIVER = "gpu.example.com"


def node(name: str, **labels: str) -> Node:
    return Node.model_validate(
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
            "status": {"allocatable": {"cpu": 8, "memory": "32Gi", "pods": 110}},
        }
    )


def snapshot(nodes: Sequence[Node]) -> NodeSnapshot:
    return NodeTable.build(nodes).snapshot()


def device(name: str, **attributes: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for key, value in attributes.items():
        kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "string"
        attrs[key] = {kind: value}
    return {"name": name, "attributes": attrs} if attrs else {"name": name}


def local_slice(
    node_name: str,
    devices: Sequence[Mapping[str, Any]],
    *,
    driver: str = DRIVER,
    pool: str | None = None,
    name: str | None = None,
    generation: int = 0,
    count: int = 1,
) -> ResourceSlice:
    return ResourceSlice.model_validate(
        {
            "metadata": {"name": name or f"{node_name}-{driver}"},
            "spec": {
                "driver": driver,
                "pool": {
                    "name": pool or node_name,
                    "generation": generation,
                    "resourceSliceCount": count,
                },
                "nodeName": node_name,
                "devices": list(devices),
            },
        }
    )


def shared_slice(name: str, devices: Sequence[Mapping[str, Any]], **reach: Any) -> ResourceSlice:
    return ResourceSlice.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "driver": DRIVER,
                "pool": {"name": name, "generation": 0, "resourceSliceCount": 1},
                **reach,
                "devices": list(devices),
            },
        }
    )


def device_class(name: str, *expressions: str) -> DeviceClass:
    selectors = [{"cel": {"expression": e}} for e in expressions]
    return DeviceClass.model_validate(
        {"metadata": {"name": name}, "spec": {"selectors": selectors}}
    )


def claim(name: str, *requests: Mapping[str, Any], **devices: Any) -> ResourceClaim:
    return ResourceClaim.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"devices": {"requests": list(requests), **devices}},
        }
    )


def exactly(name: str, cls: str = "gpu", **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, **fields}}


def allocator(slices: Sequence[ResourceSlice], classes: Sequence[DeviceClass]) -> ClaimAllocator:
    inventory = DeviceInventory()
    for item in slices:
        inventory.update_slice(item.name, item)
    for cls in classes:
        inventory.update_class(cls.name, cls)
    return ClaimAllocator(inventory, DeviceSelectors())


def everywhere(nodes: NodeSnapshot) -> np.ndarray:
    return np.ones(nodes.size, dtype=bool)


def results(allocation: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(request, device) of an allocation's results, in order."""
    return [(r["request"], r["device"]) for r in allocation["devices"]["results"]]


def key(pool: str, name: str, driver: str = DRIVER) -> DeviceKey:
    return DeviceKey(driver, pool, name)


def first(allocations: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The first claim's allocation, which must exist."""
    assert allocations is not None
    return allocations[0]

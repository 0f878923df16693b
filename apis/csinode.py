"""`storage.k8s.io/v1` CSINode: the CSI drivers a node runs (kubelet writes one per node, named
as the node) and how many volumes of each the node may have attached (`allocatable.count`).

The pod scheduler's NodeVolumeLimits reads it: a node whose CSINode gives a count for a driver
takes no more of that driver's volumes; a node without a CSINode, or a driver without a count,
has no limit.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from apis.meta import Int32, KubeModel, KubeObject

__all__ = [
    "MIGRATED_PLUGINS_ANNOTATION",
    "CSINode",
    "CSINodeDriver",
    "CSINodeSpec",
    "VolumeNodeResources",
    "attach_limits",
]

MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
"""The in-tree plugins whose volumes the node's CSI drivers took over (kubelet writes it)."""


class VolumeNodeResources(KubeModel):
    """How many volumes of the driver the node may use at once (unset: no limit)."""

    count: Int32 | None = None


class CSINodeDriver(KubeModel):
    name: str = ""
    node_id: str = Field(default="", alias="nodeID")
    topology_keys: list[str] | None = None
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(KubeModel):
    drivers: list[CSINodeDriver] | None = None


class CSINode(KubeObject):
    """The CSI drivers of the node of the same name (cluster-scoped)."""

    GROUP: ClassVar[str] = "storage.k8s.io"
    VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "CSINode"
    PLURAL: ClassVar[str] = "csinodes"
    NAMESPACED: ClassVar[bool] = False

    spec: CSINodeSpec | None = None


def attach_limits(csinode: CSINode | None) -> dict[str, int]:
    """The attach limit per driver name the CSINode gives (drivers without a count left out)."""
    limits: dict[str, int] = {}
    if csinode is None or csinode.spec is None:
        return limits
    for driver in csinode.spec.drivers or ():
        if driver.allocatable is not None and driver.allocatable.count is not None:
            limits[driver.name] = driver.allocatable.count
    return limits

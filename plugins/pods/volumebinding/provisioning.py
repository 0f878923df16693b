"""VolumeBinding's dynamic provisioning check, as kube's volume binder makes it (v1.36
`checkVolumeProvisions` and `hasEnoughCapacity`), and the per-node assignment of a pod's unbound
WaitForFirstConsumer claims.

A claim without a fitting static volume on a node can have one provisioned there when its class
names a provisioner (neither empty nor `kubernetes.io/no-provisioner`) and the node matches the
class's `allowedTopologies` (terms ORed, each term's expressions ANDed, a term without
expressions matching nothing, no terms matching every node); otherwise the node did not "find
available persistent volumes to bind". When the provisioner is a CSIDriver that publishes its
capacity (`storageCapacity: true`) and the claim requests storage, some CSIStorageCapacity of
the class must select the node (`nodeTopology`; none selects nothing) with `maximumVolumeSize`,
or else `capacity`, at least the request; otherwise the node "did not have enough free storage".

A claim whose `volume.kubernetes.io/selected-node` is set (by an earlier PreBind, or assumed by
an earlier Reserve) is provisioned on that node only: every other node fails at once. On a node
the claims with a selected node come first, then those left without a static volume (smallest
request first); the first that cannot be provisioned gives the node's reason, as in kube.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from apis.meta import LabelSelectorRequirement
from apis.storage import (
    NO_PROVISIONER,
    SELECTED_NODE_ANNOTATION,
    CSIDriver,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.volumes import STORAGE
from placement.pods.framework.interface import ClusterView
from placement.selectors import SelectorError, requirements_mask, selector_mask

__all__ = [
    "CAPACITY_KIND",
    "DRIVER_KIND",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "Claim",
    "assign",
    "provisioning_masks",
    "selected_node",
]

ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
DRIVER_KIND = "CSIDriver"
CAPACITY_KIND = "CSIStorageCapacity"


def selected_node(claim: PersistentVolumeClaim) -> str | None:
    """The node the claim's volume is being provisioned for, when a scheduler chose one."""
    return (claim.metadata.annotations or {}).get(SELECTED_NODE_ANNOTATION)


@dataclass
class Claim:
    """An unbound WaitForFirstConsumer claim as Filter and Reserve read it: the static volumes
    it may take, smallest first, with the rows each admits (`masks[i]` for `candidates[i]`);
    the node it is bound for (`selected`); where it cannot be provisioned (`conflict`: the class
    cannot provision there; `short`: the driver's published capacity is too small)."""

    claim: PersistentVolumeClaim
    key: str
    candidates: list[PersistentVolume]
    masks: npt.NDArray[np.bool_]
    selected: str | None
    conflict: BoolMask
    short: BoolMask


def provisioning_masks(
    cluster: ClusterView,
    claim: PersistentVolumeClaim,
    cls: StorageClass | None,
    nodes: NodeSnapshot,
) -> tuple[BoolMask, BoolMask]:
    """(conflict, short): the rows where the claim's class cannot provision, and the rows where
    it could but the published capacity is too small (module docstring)."""
    size = nodes.size
    provisioner = (cls.provisioner if cls else None) or ""
    if cls is None or provisioner in ("", NO_PROVISIONER):
        return np.ones(size, dtype=bool), np.zeros(size, dtype=bool)
    conflict = ~_topology_mask(cls, nodes)
    return conflict, ~_capacity_mask(cluster, claim, cls, provisioner, nodes) & ~conflict


def _topology_mask(cls: StorageClass, nodes: NodeSnapshot) -> BoolMask:
    terms = cls.allowed_topologies or []
    if not terms:
        return np.ones(nodes.size, dtype=bool)
    mask = np.zeros(nodes.size, dtype=bool)
    for term in terms:
        expressions = (term.get("matchLabelExpressions") or []) if isinstance(term, dict) else []
        if not expressions:
            continue  # an empty term selects nothing
        requirements = [
            LabelSelectorRequirement(
                key=str(e.get("key", "")), operator="In", values=list(e.get("values") or [])
            )
            for e in expressions
            if isinstance(e, dict)
        ]
        try:
            mask |= requirements_mask(requirements, nodes.label, nodes.size)
        except SelectorError:
            continue
    return mask


def _capacity_mask(
    cluster: ClusterView,
    claim: PersistentVolumeClaim,
    cls: StorageClass,
    provisioner: str,
    nodes: NodeSnapshot,
) -> BoolMask:
    every = np.ones(nodes.size, dtype=bool)
    resources = claim.spec.resources if claim.spec else None
    wanted = (resources.requests or {}).get(STORAGE) if resources else None
    if wanted is None:
        return every  # nothing to check
    driver = cluster.objects(DRIVER_KIND).get(provisioner)
    spec = driver.spec if isinstance(driver, CSIDriver) else None
    if spec is None or not spec.storage_capacity:
        return every  # not a CSI driver, or one that publishes no capacity
    request = wanted.ceil()
    mask = np.zeros(nodes.size, dtype=bool)
    for capacity in cluster.objects(CAPACITY_KIND).values():
        if not isinstance(capacity, CSIStorageCapacity):
            continue
        limit = capacity.maximum_volume_size or capacity.capacity
        if capacity.storage_class_name != (cls.metadata.name or "") or limit is None:
            continue
        if limit.ceil() < request or capacity.node_topology is None:
            continue
        try:
            mask |= selector_mask(capacity.node_topology, nodes.label, nodes.size)
        except SelectorError:
            continue
    return mask


def assign(
    claims: list[Claim], row: int, node: str
) -> tuple[list[tuple[Claim, PersistentVolume]], list[Claim]] | None:
    """On `row` (named `node`): the static volume each claim takes (smallest request first, the
    smallest volume admitting the row, none twice) and the claims to provision; None when some
    claim can neither (the node fails)."""
    taken: set[str] = set()
    picks: list[tuple[Claim, PersistentVolume]] = []
    provisions: list[Claim] = []
    for claim in claims:
        if claim.selected is not None:
            if claim.selected != node:
                return None
            provisions.append(claim)
            continue
        for i, pv in enumerate(claim.candidates):
            name = pv.metadata.name or ""
            if claim.masks[i, row] and name not in taken:
                taken.add(name)
                picks.append((claim, pv))
                break
        else:
            provisions.append(claim)
    if any(c.conflict[row] or c.short[row] for c in provisions):
        return None
    return picks, provisions

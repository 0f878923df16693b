"""Storage objects the pod scheduler reads: core/v1 PersistentVolume and PersistentVolumeClaim,
storage.k8s.io/v1 StorageClass, CSIDriver and CSIStorageCapacity.

Only what volume scheduling reads is typed (capacity, access modes, classes, claim references,
node affinity, binding mode); the volume sources and the rest of these large types are kept as
they came.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from apis.core import NodeSelector, ObjectReference
from apis.csinode import CSINode
from apis.meta import KubeModel, KubeObject, LabelSelector
from apis.quantity import QuantityField, ResourceList
from apis.volumeattachment import VolumeAttachment

__all__ = [
    "BETA_STORAGE_CLASS_ANNOTATION",
    "BIND_COMPLETED_ANNOTATION",
    "BOUND_BY_CONTROLLER_ANNOTATION",
    "NO_PROVISIONER",
    "SELECTED_NODE_ANNOTATION",
    "STORAGE_KINDS",
    "CSIDriver",
    "CSIDriverSpec",
    "CSIStorageCapacity",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "PersistentVolumeClaimSpec",
    "PersistentVolumeClaimStatus",
    "PersistentVolumeSpec",
    "PersistentVolumeStatus",
    "StorageClass",
    "VolumeNodeAffinity",
    "VolumeResourceRequirements",
    "claim_class",
    "volume_class",
]

BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
"""The class annotation that, when set, wins over `spec.storageClassName` (kube still reads it)."""
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER_ANNOTATION = "pv.kubernetes.io/bound-by-controller"
"""Set by whoever bound a volume or claim for the user (kube-scheduler on the volume it
pre-binds, the PV controller on the claim it completes)."""
NO_PROVISIONER = "kubernetes.io/no-provisioner"
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
"""Set on a WaitForFirstConsumer claim by the scheduler's PreBind: the node its volume is to be
provisioned for (a provisioner that fails removes it, sending the pod back to scheduling)."""
"""The provisioner of classes whose volumes are all created by hand (local volumes)."""


class VolumeResourceRequirements(KubeModel):
    """A claim's storage request."""

    requests: ResourceList | None = None
    limits: ResourceList | None = None


class PersistentVolumeClaimSpec(KubeModel):
    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"dataSource", "dataSourceRef", "volumeAttributesClassName"}
    )

    access_modes: list[str] | None = None
    selector: LabelSelector | None = None
    resources: VolumeResourceRequirements | None = None
    volume_name: str | None = None
    storage_class_name: str | None = None
    volume_mode: Literal["Filesystem", "Block"] | None = None


class PersistentVolumeClaimStatus(KubeModel):
    ALL_FIELDS_KNOWN: ClassVar[bool] = False

    phase: str | None = None
    access_modes: list[str] | None = None
    capacity: ResourceList | None = None


class PersistentVolumeClaim(KubeObject):
    """A claim on storage (namespaced). Bound once `spec.volumeName` names its volume."""

    KIND: ClassVar[str] = "PersistentVolumeClaim"
    PLURAL: ClassVar[str] = "persistentvolumeclaims"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("pvc",)
    HAS_STATUS: ClassVar[bool] = True

    spec: PersistentVolumeClaimSpec | None = None
    status: PersistentVolumeClaimStatus | None = None


class VolumeNodeAffinity(KubeModel):
    """The nodes a volume can be reached from (a local volume: one node)."""

    required: NodeSelector | None = None


class PersistentVolumeSpec(KubeModel):
    # The volume sources (local, hostPath, csi, nfs, ...) and mount details are kept untyped.
    ALL_FIELDS_KNOWN: ClassVar[bool] = False

    capacity: ResourceList | None = None
    access_modes: list[str] | None = None
    claim_ref: ObjectReference | None = None
    storage_class_name: str | None = None
    node_affinity: VolumeNodeAffinity | None = None
    volume_mode: Literal["Filesystem", "Block"] | None = None
    persistent_volume_reclaim_policy: str | None = None
    mount_options: list[str] | None = None


class PersistentVolumeStatus(KubeModel):
    ALL_FIELDS_KNOWN: ClassVar[bool] = False

    phase: str | None = None
    message: str | None = None
    reason: str | None = None


class PersistentVolume(KubeObject):
    """A piece of storage (cluster-scoped); `spec.claimRef` names the claim it is bound to."""

    KIND: ClassVar[str] = "PersistentVolume"
    PLURAL: ClassVar[str] = "persistentvolumes"
    NAMESPACED: ClassVar[bool] = False
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("pv",)
    HAS_STATUS: ClassVar[bool] = True

    spec: PersistentVolumeSpec | None = None
    status: PersistentVolumeStatus | None = None


class StorageClass(KubeObject):
    """`storage.k8s.io/v1` StorageClass (cluster-scoped): who provisions its volumes and when
    its claims bind (`Immediate`, the default, or `WaitForFirstConsumer`)."""

    GROUP: ClassVar[str] = "storage.k8s.io"
    VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "StorageClass"
    PLURAL: ClassVar[str] = "storageclasses"
    NAMESPACED: ClassVar[bool] = False
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("sc",)

    provisioner: str | None = None
    parameters: dict[str, str] | None = None
    reclaim_policy: str | None = None
    mount_options: list[str] | None = None
    allow_volume_expansion: bool | None = None
    volume_binding_mode: Literal["Immediate", "WaitForFirstConsumer"] | None = None
    allowed_topologies: list[dict[str, Any]] | None = None


class CSIDriverSpec(KubeModel):
    """What the scheduler reads of a CSI driver: whether it publishes CSIStorageCapacity objects
    (`storageCapacity`) and whether its volumes are attached (`attachRequired`)."""

    ALL_FIELDS_KNOWN: ClassVar[bool] = False

    attach_required: bool | None = None
    storage_capacity: bool | None = None


class CSIDriver(KubeObject):
    """`storage.k8s.io/v1` CSIDriver (cluster-scoped, named after the driver)."""

    GROUP: ClassVar[str] = "storage.k8s.io"
    VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "CSIDriver"
    PLURAL: ClassVar[str] = "csidrivers"
    NAMESPACED: ClassVar[bool] = False

    spec: CSIDriverSpec | None = None


class CSIStorageCapacity(KubeObject):
    """`storage.k8s.io/v1` CSIStorageCapacity (namespaced): the storage a driver can still
    provision for a class on the nodes its `nodeTopology` selects (`capacity`, and the largest
    single volume, `maximumVolumeSize`, when known). Its fields are at the top level."""

    GROUP: ClassVar[str] = "storage.k8s.io"
    VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "CSIStorageCapacity"
    PLURAL: ClassVar[str] = "csistoragecapacities"

    node_topology: LabelSelector | None = None
    storage_class_name: str = ""
    capacity: QuantityField | None = None
    maximum_volume_size: QuantityField | None = None


def claim_class(claim: PersistentVolumeClaim) -> str:
    """The claim's class name: the beta annotation, else `spec.storageClassName`, else ""."""
    annotated = (claim.metadata.annotations or {}).get(BETA_STORAGE_CLASS_ANNOTATION)
    if annotated is not None:
        return annotated
    return (claim.spec.storage_class_name if claim.spec else None) or ""


def volume_class(volume: PersistentVolume) -> str:
    """The volume's class name, read as `claim_class` reads a claim's."""
    annotated = (volume.metadata.annotations or {}).get(BETA_STORAGE_CLASS_ANNOTATION)
    if annotated is not None:
        return annotated
    return (volume.spec.storage_class_name if volume.spec else None) or ""


STORAGE_KINDS: tuple[type[KubeObject], ...] = (
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    CSIDriver,
    CSIStorageCapacity,
    CSINode,
    VolumeAttachment,
)
"""What volume scheduling watches (VolumeAttachments: the attach slots NodeVolumeLimits counts)."""

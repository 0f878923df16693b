"""`storage.k8s.io/v1` VolumeAttachment: a volume the attach/detach controller attached (or is
attaching, or detaching) to a node, through the CSI driver named `spec.attacher`.

The pod scheduler's NodeVolumeLimits counts them: a volume still attached to a node after its
pod left keeps its attach slot there until the attachment is gone. Only attachments of a
PersistentVolume (`spec.source.persistentVolumeName`) whose source is `csi` count; the rest of
the object (inline specs, status) is kept as it came.
"""

from __future__ import annotations

from typing import Any, ClassVar

from apis.meta import KubeModel, KubeObject

__all__ = [
    "VolumeAttachment",
    "VolumeAttachmentSource",
    "VolumeAttachmentSpec",
    "VolumeAttachmentStatus",
]


class VolumeAttachmentSource(KubeModel):
    """The volume attached: a PersistentVolume by name, or an inline volume's spec."""

    persistent_volume_name: str | None = None
    inline_volume_spec: dict[str, Any] | None = None


class VolumeAttachmentSpec(KubeModel):
    attacher: str = ""
    node_name: str = ""
    source: VolumeAttachmentSource | None = None


class VolumeAttachmentStatus(KubeModel):
    ALL_FIELDS_KNOWN: ClassVar[bool] = False

    attached: bool | None = None
    attachment_metadata: dict[str, str] | None = None


class VolumeAttachment(KubeObject):
    """A volume attached to a node (cluster-scoped)."""

    GROUP: ClassVar[str] = "storage.k8s.io"
    VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "VolumeAttachment"
    PLURAL: ClassVar[str] = "volumeattachments"
    NAMESPACED: ClassVar[bool] = False
    HAS_STATUS: ClassVar[bool] = True

    spec: VolumeAttachmentSpec | None = None
    status: VolumeAttachmentStatus | None = None

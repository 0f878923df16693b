"""NodeVolumeLimits' view of the VolumeAttachments: per node, the volumes attached there as kube
v1.36 counts them, so that a volume still attached after its pod left keeps its slot.

An attachment counts when it names its `attacher` and a PersistentVolume
(`spec.source.persistentVolumeName`) that exists and has a `csi` source: it stands for the
volume (attacher, the PV's `volumeHandle`), the key a pod's claim bound to that PV resolves to,
so a volume both attached and used by a pod on the node is counted once. Attachments of inline
volumes, of PVs not found or not CSI are not counted.

The map is rebuilt after an event of a VolumeAttachment or a PersistentVolume (`invalidate`);
with no attachment in the cluster every lookup is empty and costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from apis.storage import PersistentVolume
from apis.volumeattachment import VolumeAttachment
from placement.pods.cluster.nodes import NodeSnapshot
from plugins.pods.nodevolumelimits.attach_index import Column, Volumes
from plugins.pods.nodevolumelimits.attachable import VolumeKey

__all__ = ["ATTACHMENT_KIND", "Attachments", "attached_volume"]

ATTACHMENT_KIND = "VolumeAttachment"


def attached_volume(
    attachment: VolumeAttachment, volume: Callable[[str], Any]
) -> tuple[str, VolumeKey] | None:
    """(node, volume key) of an attachment that counts (module docstring), else None."""
    spec = attachment.spec
    if spec is None or not spec.attacher or spec.source is None:
        return None
    name = spec.source.persistent_volume_name
    pv = volume(name) if name else None
    if not isinstance(pv, PersistentVolume) or pv.spec is None:
        return None
    csi = (pv.spec.model_extra or {}).get("csi")
    if not isinstance(csi, Mapping):
        return None
    return spec.node_name, (spec.attacher, "handle", str(csi.get("volumeHandle") or ""))


class Attachments:
    """See the module docstring: `on(node)` gives the volumes attached to a node."""

    def __init__(self) -> None:
        self._fresh = False
        self._nodes: dict[str, Volumes] = {}  # node -> volume -> driver (the attacher)
        self.where: dict[VolumeKey, set[str]] = {}  # volume -> the nodes it is attached to

    def invalidate(self) -> None:
        self._fresh = False

    def sync(
        self, attachments: Mapping[str, Any], volume: Callable[[str], Any], evented: bool
    ) -> None:
        """Rebuild the map unless it is up to date (`evented`: the plugin hears the events; a
        plugin fed without events rebuilds each time)."""
        if self._fresh and evented:
            return
        self._nodes, self.where = {}, {}
        for obj in attachments.values():
            found = attached_volume(obj, volume) if isinstance(obj, VolumeAttachment) else None
            if found is not None:
                node, key = found
                self._nodes.setdefault(node, {})[key] = key[0]
                self.where.setdefault(key, set()).add(node)
        self._fresh = True

    def on(self, node: str) -> Volumes:
        return self._nodes.get(node, {})

    def extra(
        self, driver: str, nodes: NodeSnapshot, used: Mapping[str, Mapping[VolumeKey, int]]
    ) -> Column | None:
        """Per row, the attached volumes of `driver` no pod on the node uses (`used`: node ->
        the pods' volumes there); None when there are none anywhere."""
        column: Column | None = None
        for node, volumes in self._nodes.items():
            row = nodes.row_of(node)
            if row is None:
                continue
            refs = used.get(node, {})
            count = sum(1 for k, d in volumes.items() if d == driver and k not in refs)
            if count:
                if column is None:
                    column = np.zeros(nodes.size, dtype=np.int64)
                column[row] = count
        return column

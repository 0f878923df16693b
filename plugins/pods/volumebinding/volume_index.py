"""VolumeBinding's index of volumes: the unclaimed ones per class as arrays (capacity, access
and volume modes, being deleted, node masks), so finding the volumes a claim may take is a few
numpy operations rather than a match per volume; the claimed ones per claim.

Kept from the volume events once some came (`update`); without any (a plugin used without an
engine), rebuilt from the cluster's objects on each look-up.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from apis.storage import PersistentVolume, PersistentVolumeClaim, volume_class
from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.volumes import claim_request, volume_capacity, volume_claimed_by
from placement.pods.framework.interface import ClusterView
from placement.selectors import SelectorError, labels_match
from plugins.pods.helper.volume_claims import VolumeMasks, volumes

__all__ = ["Pool", "VolumeIndex"]

_Modes = tuple[frozenset[str], str]  # (access modes, volume mode)


def _modes(spec_modes: list[str] | None, volume_mode: str | None) -> _Modes:
    return frozenset(spec_modes or ()), volume_mode or "Filesystem"


class Pool:
    """The unclaimed volumes of one class, smallest capacity first (then by name)."""

    def __init__(self, members: list[PersistentVolume]) -> None:
        self.volumes = sorted(members, key=lambda v: (volume_capacity(v), v.metadata.name or ""))
        self.row_of = {v.metadata.name or "": i for i, v in enumerate(self.volumes)}
        self.capacity = np.array([volume_capacity(v) for v in self.volumes], dtype=np.int64)
        self.deleting = np.array(
            [v.metadata.deletion_timestamp is not None for v in self.volumes], dtype=bool
        )
        self._modes = [
            _modes(v.spec.access_modes, v.spec.volume_mode) if v.spec else _modes(None, None)
            for v in self.volumes
        ]
        self._compatible: dict[_Modes, BoolMask] = {}
        self._nodes: tuple[object, object] | None = None
        self._masks: npt.NDArray[np.bool_] | None = None

    def matching(self, claim: PersistentVolumeClaim, excluded: set[str]) -> npt.NDArray[np.intp]:
        """The volumes (indexes, smallest first) the claim may take, the node aside: access
        modes and volume mode, capacity, selector, not being deleted, not `excluded`."""
        spec = claim.spec
        want = _modes(spec.access_modes, spec.volume_mode) if spec else _modes(None, None)
        ok = self.capacity >= claim_request(claim)
        ok &= ~self.deleting
        ok &= self._compatible_with(want)
        for name in excluded:
            row = self.row_of.get(name)
            if row is not None:
                ok[row] = False
        found = np.flatnonzero(ok)
        selector = spec.selector if spec else None
        if selector is not None:
            kept = []
            for i in found:
                try:
                    if labels_match(selector, self.volumes[i].metadata.labels or {}):
                        kept.append(i)
                except SelectorError:
                    pass
            found = np.array(kept, dtype=np.intp)
        return found

    def _compatible_with(self, want: _Modes) -> BoolMask:
        known = self._compatible.get(want)
        if known is None:
            modes, volume_mode = want
            known = np.array(
                [modes <= have and volume_mode == mode for have, mode in self._modes], dtype=bool
            )
            self._compatible[want] = known
        return known

    def masks(self, nodes: NodeSnapshot, masker: VolumeMasks) -> npt.NDArray[np.bool_]:
        """Row i: the nodes volume i admits (kept while the snapshot's nodes are the same)."""
        key = self._nodes
        if (
            self._masks is None
            or key is None
            or key[0] is not nodes.labels
            or (key[1] is not nodes.names)
        ):
            matrix = np.zeros((len(self.volumes), nodes.size), dtype=bool)
            for i, pv in enumerate(self.volumes):
                matrix[i] = masker.of(pv, nodes)
            self._masks, self._nodes = matrix, (nodes.labels, nodes.names)
        return self._masks


class VolumeIndex:
    """See the module docstring."""

    def __init__(self) -> None:
        self._fed = False
        self._volumes: dict[str, PersistentVolume] = {}
        self._free: dict[str, dict[str, PersistentVolume]] = {}
        self._claimed: dict[str, dict[str, PersistentVolume]] = {}
        self._pools: dict[str, Pool] = {}

    def update(self, name: str, pv: PersistentVolume | None) -> None:
        """A volume event: the volume as it is now (None: deleted)."""
        self._fed = True
        self._drop(name)
        if pv is not None:
            self._add(name, pv)

    def _add(self, name: str, pv: PersistentVolume) -> None:
        self._volumes[name] = pv
        ref = volume_claimed_by(pv)
        if ref is not None:
            self._claimed.setdefault(ref[0], {})[name] = pv
        else:
            cls = volume_class(pv)
            self._free.setdefault(cls, {})[name] = pv
            self._pools.pop(cls, None)

    def _drop(self, name: str) -> None:
        old = self._volumes.pop(name, None)
        if old is None:
            return
        ref = volume_claimed_by(old)
        if ref is not None:
            self._claimed.get(ref[0], {}).pop(name, None)
        else:
            cls = volume_class(old)
            self._free.get(cls, {}).pop(name, None)
            self._pools.pop(cls, None)

    def _sync(self, cluster: ClusterView) -> None:
        if self._fed:
            return
        self._volumes, self._free, self._claimed, self._pools = {}, {}, {}, {}
        for name, obj in volumes(cluster).items():
            if isinstance(obj, PersistentVolume):
                self._add(name, obj)

    def pool(self, cluster: ClusterView, cls: str) -> Pool:
        """The unclaimed volumes of a class."""
        self._sync(cluster)
        found = self._pools.get(cls)
        if found is None:
            found = self._pools[cls] = Pool(list(self._free.get(cls, {}).values()))
        return found

    def claimed_by(self, cluster: ClusterView, claim_key: str) -> list[PersistentVolume]:
        """The volumes whose claimRef names the claim."""
        self._sync(cluster)
        return list(self._claimed.get(claim_key, {}).values())

    def volume(self, name: str) -> PersistentVolume | None:
        return self._volumes.get(name)

"""PreBind's volume writes on a cluster (`BindVolumes`), as kube-scheduler's VolumeBinding plugin
makes them (kube 1.36):

* for each claim, the chosen volume is pre-bound: one write of the PersistentVolume giving it
  `spec.claimRef` (the claim's kind, namespace, name, uid and, when cached, resourceVersion)
  and the annotation `pv.kubernetes.io/bound-by-controller: "yes"`, with the volume's
  resourceVersion as a precondition (a volume claimed meanwhile is a conflict, never
  overwritten). The claim is not written: kube-controller-manager's PV controller sees a
  volume pre-bound to an unbound claim and completes the binding (the claim's `volumeName`,
  its `pv.kubernetes.io/bind-completed` and `bound-by-controller` annotations, both phases
  `Bound`), as it does for kube-scheduler;
* then the pod's binding waits until each claim is fully bound — `volumeName` naming the volume
  and `bind-completed` set — read from the informers every `poll` seconds (as kube's
  `checkBindings` reads its informers' latest objects), up to the plugin's `bindTimeoutSeconds`
  (600 s by default). It fails, and the pod goes back to the queue, when the volume's
  claimRef is reset, the claim is bound to another volume, the pod is gone, or the time is up.

The waiting holds no write slot: other pods bind meanwhile. Dynamic provisioning (the claim's
`volume.kubernetes.io/selected-node` annotation, kube's other PreBind write) is not done: the
scheduler never chooses a node for a claim without an existing volume.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from apis.core import Pod
from apis.meta import KubeObject
from apis.storage import (
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    PersistentVolume,
    PersistentVolumeClaim,
)
from controllers.addons.gateway import PodGateway
from controllers.kube.errors import ApiError
from placement.pods.events import BindVolumes

__all__ = ["VolumeBindError", "VolumeBinder"]

Lookup = Callable[[str, str], KubeObject | None]


class VolumeBindError(Exception):
    """A volume cannot be pre-bound to its claim (claimed by another)."""


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.rpartition("/")
    return namespace, name


def _older(cached: str | None, written: str | None) -> bool:
    """Whether the cached resourceVersion predates the one written (etcd's are integers)."""
    try:
        return int(cached or "0") < int(written or "0")
    except ValueError:
        return False


class VolumeBinder:
    """The writes and the wait of one scheduler (module docstring)."""

    def __init__(self, gateway: PodGateway, lookup: Lookup, *, poll: float = 0.2) -> None:
        self._gateway = gateway
        self._lookup = lookup
        self.poll = poll

    async def prebind(self, action: BindVolumes) -> dict[str, str]:
        """Pre-bind each volume to its claim; the resourceVersions written, by volume. Raises
        `ApiError` (a write refused) or `VolumeBindError`."""
        written: dict[str, str] = {}
        for claim_key, claim_uid, volume in action.claims:
            namespace, name = _split(claim_key)
            if not claim_uid:
                claim = self._claim(claim_key)
                claim_uid = claim.metadata.uid or ""
            # The informer's volume, as kube's assume cache: its resourceVersion is the write's
            # precondition, so a stale copy is a conflict (the pod is tried again), never a
            # lost write.
            pv = self._lookup(PersistentVolume.KIND, volume)
            if not isinstance(pv, PersistentVolume):
                raise VolumeBindError(f'persistentvolume "{volume}" not found')
            ref = pv.spec.claim_ref if pv.spec else None
            mine = ref is not None and (ref.namespace, ref.name) == (namespace, name)
            if mine and ref is not None and ref.uid in (None, "", claim_uid):
                written[volume] = pv.metadata.resource_version or ""
                continue  # pre-bound already (a retry after a failed wait)
            if ref is not None and (ref.name or ref.uid):
                raise VolumeBindError(f'persistentvolume "{volume}" is bound to another claim')
            claim_ref = {"apiVersion": "v1", "kind": "PersistentVolumeClaim"}
            claim_ref |= {"namespace": namespace, "name": name, "uid": claim_uid}
            known = self._lookup(PersistentVolumeClaim.KIND, claim_key)
            if known is not None and known.metadata.uid == claim_uid:
                claim_ref["resourceVersion"] = known.metadata.resource_version or ""
            patch = {
                "metadata": {
                    "resourceVersion": pv.metadata.resource_version,
                    "annotations": {BOUND_BY_CONTROLLER_ANNOTATION: "yes"},
                },
                "spec": {"claimRef": claim_ref},
            }
            updated = await self._gateway.merge_patch(PersistentVolume, volume, patch)
            written[volume] = updated.metadata.resource_version or ""
        return written

    def _claim(self, key: str) -> PersistentVolumeClaim:
        """The claim as the informer holds it (kube's `checkBindings` reads its informers)."""
        cached = self._lookup(PersistentVolumeClaim.KIND, key)
        if not isinstance(cached, PersistentVolumeClaim):
            raise VolumeBindError(f'persistentvolumeclaim "{key}" not found')
        return cached

    async def wait_bound(self, action: BindVolumes, written: dict[str, str]) -> str | None:
        """Wait until the PV controller has bound every claim; None then, else why not."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, action.timeout)
        while True:
            try:
                problem, done = await self._check(action, written)
            except (ApiError, VolumeBindError) as exc:
                problem, done = str(exc), False
            if problem is not None:
                return f"binding volumes: {problem}"
            if done:
                return None
            if loop.time() >= deadline:
                return "binding volumes: timed out waiting for the PV controller to bind the claims"
            await asyncio.sleep(self.poll)

    async def _check(self, action: BindVolumes, written: dict[str, str]) -> tuple[str | None, bool]:
        pod = self._lookup(Pod.KIND, action.key)
        if pod is None or (action.uid and pod.metadata.uid != action.uid):
            return "pod does not exist any more", False
        done = True
        for claim_key, _, volume in action.claims:
            pv = self._lookup(PersistentVolume.KIND, volume)
            if isinstance(pv, PersistentVolume) and not _older(
                pv.metadata.resource_version, written.get(volume)
            ):
                ref = pv.spec.claim_ref if pv.spec else None
                if ref is None or not ref.uid:
                    return f'claimRef got reset for pv "{volume}"', False
            claim = self._claim(claim_key)
            bound_to = claim.spec.volume_name if claim.spec else None
            if bound_to and bound_to != volume:
                return f'claim "{claim_key}" is bound to volume "{bound_to}"', False
            annotations = claim.metadata.annotations or {}
            if bound_to != volume or BIND_COMPLETED_ANNOTATION not in annotations:
                done = False
        return None, done

"""A stand-in for a CSI volume provisioner (external-provisioner and its driver), for the tests
of dynamic provisioning on the embedded API server and on the real control plane.

It polls the claims: a claim of a class whose provisioner is `name`, carrying the scheduler's
`volume.kubernetes.io/selected-node` and not yet bound, gets a PersistentVolume
`pvc-<claim uid>` made for the node: the claim's request as capacity, its access modes, its
class, the class's reclaim policy, node affinity on the node's `kubernetes.io/hostname` label, a
CSI source of the driver, and a `claimRef` naming the claim (uid included), as real
provisioners leave it. The PV controller (kube-controller-manager's, or the embedded server's)
then binds the claim to it.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Any

from apis.core import Node
from apis.storage import (
    SELECTED_NODE_ANNOTATION,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    claim_class,
)
from controllers.kube.errors import AlreadyExistsError
from controllers.kube.gateway import Gateway

HOSTNAME = "kubernetes.io/hostname"


class StandInProvisioner:
    """See the module docstring. `made`: (claim namespace/name, node, volume) in order."""

    def __init__(self, gateway: Gateway, name: str, *, poll: float = 0.05) -> None:
        self.gateway = gateway
        self.name = name
        self.poll = poll
        self.made: list[tuple[str, str, str]] = []
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> StandInProvisioner:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _run(self) -> None:
        while True:
            await self.tick()
            await asyncio.sleep(self.poll)

    async def tick(self) -> None:
        classes = {
            c.name: c
            for c in (await self.gateway.list(StorageClass)).items
            if c.provisioner == self.name
        }
        if not classes:
            return
        done = {volume for _, _, volume in self.made}
        for claim in (await self.gateway.list(PersistentVolumeClaim)).items:
            node = (claim.metadata.annotations or {}).get(SELECTED_NODE_ANNOTATION)
            cls = classes.get(claim_class(claim))
            volume = f"pvc-{claim.metadata.uid}"
            if not node or cls is None or (claim.spec and claim.spec.volume_name) or volume in done:
                continue
            labels = (await self.gateway.get(Node, node)).metadata.labels or {}
            wire = _volume(claim, cls, volume, labels.get(HOSTNAME, node), self.name)
            with contextlib.suppress(AlreadyExistsError):
                await self.gateway.create(PersistentVolume.model_validate(wire))
            self.made.append((f"{claim.metadata.namespace}/{claim.name}", node, volume))


def _volume(
    claim: PersistentVolumeClaim, cls: StorageClass, name: str, hostname: str, driver: str
) -> dict[str, Any]:
    spec = claim.to_wire()["spec"]
    host = {"key": HOSTNAME, "operator": "In", "values": [hostname]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": driver}},
        "spec": {
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "accessModes": spec["accessModes"],
            "storageClassName": claim_class(claim),
            "persistentVolumeReclaimPolicy": cls.reclaim_policy or "Delete",
            "csi": {"driver": driver, "volumeHandle": name},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [host]}]}},
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": claim.metadata.namespace,
                "name": claim.name,
                "uid": claim.metadata.uid,
            },
        },
    }

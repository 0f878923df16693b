"""The storage kinds on the embedded server: served as kube serves them (PersistentVolumes
cluster-scoped, claims namespaced, StorageClasses in storage.k8s.io), a claim naming no class
given the default one (kube's DefaultStorageClass admission), and the PV controller's phases:
Available and Pending, Bound once volume and claim name each other, Released when the claim
goes."""

from __future__ import annotations

from typing import Any

import pytest

from apis.storage import PersistentVolume, PersistentVolumeClaim, StorageClass
from tests.controllers.embedded.hub import eventually, hub
from tests.plugins.pods.volume_builders import claim, local_pv, storage_class


def phase(obj: Any) -> str | None:
    return obj.status.phase if obj.status else None


@pytest.mark.asyncio
async def test_claims_get_the_default_class_and_phases_follow_the_binding() -> None:
    async with hub() as (_, gw):
        marked = storage_class("fast").to_wire()
        marked["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
        await gw.create(StorageClass.model_validate(marked))
        await gw.create(storage_class("slow"))
        made = await gw.create(claim("data", cls=None))
        assert made.spec is not None and made.spec.storage_class_name == "fast"
        named = await gw.create(claim("named", cls="slow"))
        assert named.spec is not None and named.spec.storage_class_name == "slow"
        await gw.create(local_pv("pv1", "n1", cls="fast"))

        async def phases(want: tuple[str, str]) -> bool:
            pv = await gw.get(PersistentVolume, "pv1")
            pvc = await gw.get(PersistentVolumeClaim, "data", "default")
            return (phase(pv), phase(pvc)) == want

        await eventually(lambda: phases(("Available", "Pending")), timeout=10)
        ref = {"namespace": "default", "name": "data", "uid": made.metadata.uid}
        await gw.merge_patch(PersistentVolume, "pv1", {"spec": {"claimRef": ref}})
        await gw.merge_patch(
            PersistentVolumeClaim, "data", {"spec": {"volumeName": "pv1"}}, "default"
        )
        await eventually(lambda: phases(("Bound", "Bound")), timeout=10)
        bound = await gw.get(PersistentVolumeClaim, "data", "default")
        assert bound.status is not None and bound.status.access_modes == ["ReadWriteOnce"]
        await gw.delete(PersistentVolumeClaim, "data", "default")

        async def released() -> bool:
            return phase(await gw.get(PersistentVolume, "pv1")) == "Released"

        await eventually(released, timeout=10)

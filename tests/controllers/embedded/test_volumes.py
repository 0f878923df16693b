"""The storage kinds on the embedded server: served as kube serves them (PersistentVolumes
cluster-scoped, claims namespaced, StorageClasses in storage.k8s.io), a claim naming no class
given the default one (kube's DefaultStorageClass admission), and the PV controller's phases:
Available and Pending, Bound once volume and claim name each other, a claim completed when a
scheduler pre-binds a volume to it (as kube's PV controller does), Released when the claim goes;
the ephemeral volume controller's claims."""

from __future__ import annotations

from typing import Any

import pytest

from apis.storage import PersistentVolume, PersistentVolumeClaim, StorageClass
from tests.controllers.embedded.hub import eventually, hub, pod
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


@pytest.mark.asyncio
async def test_a_volume_pre_bound_to_a_claim_gets_the_claim_completed() -> None:
    async with hub() as (_, gw):
        await gw.create(storage_class("local"))
        made = await gw.create(claim("data", cls="local"))
        other = await gw.create(claim("other", cls="local"))
        await gw.create(local_pv("pv1", "n1", cls="local"))
        await gw.create(local_pv("pv2", "n1", cls="local"))
        # Only the volumes are written, as kube-scheduler's PreBind writes them.
        ref = {"namespace": "default", "name": "data", "uid": made.metadata.uid}
        await gw.merge_patch(PersistentVolume, "pv1", {"spec": {"claimRef": ref}})
        stale = {"namespace": "default", "name": "other", "uid": "u-a-replaced-claim"}
        await gw.merge_patch(PersistentVolume, "pv2", {"spec": {"claimRef": stale}})

        async def bound() -> bool:
            pvc = await gw.get(PersistentVolumeClaim, "data", "default")
            return phase(pvc) == "Bound" and phase(await gw.get(PersistentVolume, "pv1")) == "Bound"

        await eventually(bound, timeout=10)
        pvc = await gw.get(PersistentVolumeClaim, "data", "default")
        assert pvc.spec is not None and pvc.spec.volume_name == "pv1"
        assert pvc.metadata.annotations == {
            "pv.kubernetes.io/bind-completed": "yes",
            "pv.kubernetes.io/bound-by-controller": "yes",
        }
        # A claimRef naming another uid (the claim was replaced) completes nothing.
        left = await gw.get(PersistentVolumeClaim, "other", "default")
        assert left.metadata.uid == other.metadata.uid
        assert left.spec is not None and not left.spec.volume_name
        assert phase(left) == "Pending"


@pytest.mark.asyncio
async def test_a_pod_with_an_ephemeral_volume_gets_its_claim() -> None:
    async with hub() as (_, gw):
        marked = storage_class("fast").to_wire()
        marked["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
        await gw.create(StorageClass.model_validate(marked))
        template = {
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            }
        }
        made = await gw.create(
            pod(
                "job", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}]
            )
        )

        async def claim_made() -> PersistentVolumeClaim | None:
            found = (await gw.list(PersistentVolumeClaim, "default")).items
            return found[0] if found else None

        got = await eventually(claim_made, timeout=10)
        assert got is not None and got.name == "job-scratch"
        assert got.spec is not None and got.spec.storage_class_name == "fast"
        (owner,) = got.metadata.owner_references or []
        assert (owner.kind, owner.name, owner.uid) == ("Pod", "job", made.metadata.uid)

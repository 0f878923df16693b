"""The executor's BindVolumes against the embedded API server, through the real client, as
kube-scheduler's VolumeBinding does it: the volume pre-bound (its claimRef and the
bound-by-controller annotation), the claim left to the PV controller (the server plays its part:
the claim's volumeName and bind-completed), the pod bound only once its claims are; a write that
fails, or a claim the PV controller does not bind in time, fails the pod's binding, which is then
not sent."""

from __future__ import annotations

import asyncio

import pytest

from apis.core import Pod
from apis.storage import PersistentVolume, PersistentVolumeClaim
from placement.pods.framework.events import BindPod, BindVolumes
from tests.controllers.addons.test_executor import Rig, rig
from tests.controllers.embedded.hub import eventually
from tests.plugins.pods.volume_builders import claim, local_pv


async def available(r: Rig, name: str) -> None:
    """Wait until the cached volume is the one the server's PV controller made Available (the
    write's resourceVersion precondition is the cached one, as kube's assume cache)."""

    async def seen() -> bool:
        pv = r.objects.get((PersistentVolume.KIND, name))
        return (
            isinstance(pv, PersistentVolume)
            and pv.status is not None
            and (pv.status.phase == "Available")
        )

    await eventually(seen, timeout=5)


@pytest.mark.asyncio
async def test_volumes_are_bound_before_the_pod() -> None:
    async with rig() as r:
        made = await r.gateway.create(claim("data", namespace="team"))
        await r.cache(made, await r.gateway.create(local_pv("pv1", "n1")))
        await available(r, "pv1")
        web = await r.pod(
            "web", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
        )
        uid = web.metadata.uid or ""
        r.gateway.requests.clear()
        claims = (("team/data", made.metadata.uid or "", "pv1"),)
        r.executor.submit([BindVolumes(web.key, uid, "n1", claims), BindPod(web.key, uid, "n1")])
        await r.settle()
        writes = [w for w in r.gateway.requests if not w.startswith("GET")]
        assert writes == ["PATCH pv1", "POST binding"]  # the claim is the PV controller's
        assert [(x.key, x.ok) for x in r.results] == [("team/web", True)]
        pvc = await r.gateway.get(PersistentVolumeClaim, "data", "team")
        assert pvc.spec is not None and pvc.spec.volume_name == "pv1"
        assert pvc.metadata.annotations == {
            "pv.kubernetes.io/bind-completed": "yes",
            "pv.kubernetes.io/bound-by-controller": "yes",
        }

        async def bound() -> bool:
            pvc = await r.gateway.get(PersistentVolumeClaim, "data", "team")
            pv = await r.gateway.get(PersistentVolume, "pv1")
            phases = (
                pvc.status.phase if pvc.status else None,
                pv.status.phase if pv.status else None,
            )
            return phases == ("Bound", "Bound")

        await eventually(bound, timeout=10)
        pv = await r.gateway.get(PersistentVolume, "pv1")
        assert pv.spec is not None and pv.spec.claim_ref is not None
        assert (pv.spec.claim_ref.namespace, pv.spec.claim_ref.name) == ("team", "data")
        assert pv.spec.claim_ref.uid == made.metadata.uid
        assert (pv.metadata.annotations or {}).get("pv.kubernetes.io/bound-by-controller") == "yes"
        assert (await r.gateway.get(Pod, "web", "team")).spec.node_name == "n1"


@pytest.mark.asyncio
async def test_a_failed_volume_write_fails_the_binding_and_the_pod_stays_unbound() -> None:
    async with rig() as r:
        web = await r.pod("web")
        uid = web.metadata.uid or ""
        r.gateway.requests.clear()
        claims = (("team/data", "u-data", "missing-pv"),)  # in no cache: gone since Filter
        r.executor.submit([BindVolumes(web.key, uid, "n1", claims), BindPod(web.key, uid, "n1")])
        await r.settle()
        (result,) = r.results
        assert (result.key, result.ok, result.conflict) == ("team/web", False, False)
        assert result.message == 'binding volumes: persistentvolume "missing-pv" not found'
        assert r.gateway.requests == []  # no write, no binding
        assert (await r.gateway.get(Pod, "web", "team")).spec.node_name is None


@pytest.mark.asyncio
async def test_the_pod_is_not_bound_until_the_pv_controller_binds_its_claims() -> None:
    async with rig() as r:
        data = await r.gateway.create(claim("data", namespace="team"))
        await r.cache(data, await r.gateway.create(local_pv("pv1", "n1")))
        await available(r, "pv1")
        web = await r.pod("web")
        uid = web.metadata.uid or ""
        # A claimRef with another uid: the PV controller never completes this binding.
        claims = (("team/data", "u-another-claim", "pv1"),)
        started = asyncio.get_running_loop().time()
        r.executor.submit(
            [BindVolumes(web.key, uid, "n1", claims, timeout=0.5), BindPod(web.key, uid, "n1")]
        )
        await r.settle()
        assert asyncio.get_running_loop().time() - started >= 0.5
        (result,) = r.results
        assert (result.ok, result.conflict) == (False, False)
        assert "binding volumes: context deadline exceeded" in result.message  # kube's words
        assert "POST binding" not in r.gateway.requests
        assert (await r.gateway.get(Pod, "web", "team")).spec.node_name is None
        pvc = await r.gateway.get(PersistentVolumeClaim, "data", "team")
        assert pvc.spec is not None and not pvc.spec.volume_name


@pytest.mark.asyncio
async def test_a_volume_claimed_by_another_claim_is_not_overwritten() -> None:
    async with rig() as r:
        other = await r.gateway.create(claim("other", namespace="team"))
        data = await r.gateway.create(claim("data", namespace="team"))
        await r.gateway.create(local_pv("pv1", "n1"))
        taken = await r.gateway.merge_patch(
            PersistentVolume,
            "pv1",
            {
                "spec": {
                    "claimRef": {"namespace": "team", "name": "other", "uid": other.metadata.uid}
                }
            },
        )
        await r.cache(data, taken)  # the informers have seen the volume claimed
        web = await r.pod("web")
        uid = web.metadata.uid or ""
        r.gateway.requests.clear()
        claims = (("team/data", "u-data", "pv1"),)
        r.executor.submit([BindVolumes(web.key, uid, "n1", claims), BindPod(web.key, uid, "n1")])
        await r.settle()
        (result,) = r.results
        assert not result.ok and "bound to another claim" in result.message
        assert [w for w in r.gateway.requests if not w.startswith("GET")] == []  # no write
        pv = await r.gateway.get(PersistentVolume, "pv1")
        assert pv.spec is not None and pv.spec.claim_ref is not None
        assert pv.spec.claim_ref.name == "other"

"""The executor's BindVolumes against the embedded API server, through the real client: the
volume's claimRef and the claim's volumeName written before the pod's binding (the server's PV
controller then shows both Bound); a write that fails fails the pod's binding, which is then
not sent."""

from __future__ import annotations

import pytest

from apis.core import Pod
from apis.storage import PersistentVolume, PersistentVolumeClaim
from placement.pods.events import BindPod, BindVolumes
from tests.controllers.addons.test_executor import rig
from tests.controllers.embedded.hub import eventually
from tests.plugins.pods.volume_builders import claim, local_pv


@pytest.mark.asyncio
async def test_volumes_are_bound_before_the_pod() -> None:
    async with rig() as r:
        made = await r.gateway.create(claim("data", namespace="team"))
        await r.gateway.create(local_pv("pv1", "n1"))
        web = await r.pod(
            "web", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
        )
        uid = web.metadata.uid or ""
        r.gateway.requests.clear()
        claims = (("team/data", made.metadata.uid or "", "pv1"),)
        r.executor.submit([BindVolumes(web.key, uid, "n1", claims), BindPod(web.key, uid, "n1")])
        await r.settle()
        assert r.gateway.requests == ["PATCH pv1", "PATCH data", "POST binding"]
        assert [(x.key, x.ok) for x in r.results] == [("team/web", True)]

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
        assert (await r.gateway.get(Pod, "web", "team")).spec.node_name == "n1"


@pytest.mark.asyncio
async def test_a_failed_volume_write_fails_the_binding_and_the_pod_stays_unbound() -> None:
    async with rig() as r:
        web = await r.pod("web")
        uid = web.metadata.uid or ""
        r.gateway.requests.clear()
        claims = (("team/data", "", "missing-pv"),)  # no such volume: 404
        r.executor.submit([BindVolumes(web.key, uid, "n1", claims), BindPod(web.key, uid, "n1")])
        await r.settle()
        (result,) = r.results
        assert (result.key, result.ok, result.conflict) == ("team/web", False, False)
        assert "binding volumes" in result.message
        assert r.gateway.requests == ["PATCH missing-pv"]  # no claim patch, no binding
        assert (await r.gateway.get(Pod, "web", "team")).spec.node_name is None

"""The embedded server's resourceclaim controller with `scheduler run` (DynamicResources enabled
by configuration) and the simulated kubelets: the e2e scenario of tests/e2e/test_pod_dra.py
without a real control plane. Two nodes publish two GPUs each; five pods ask for one GPU each
through a ResourceClaimTemplate. The stand-in makes each pod's claim and names it in the pod's
status, the scheduler allocates and reserves four of them (one device each, of the pod's node)
and binds those pods; the fifth waits with kube's message. A bound pod deleted takes its claim
with it (released, then gone) and the fifth pod gets the freed device."""

from __future__ import annotations

from typing import Any

import pytest

from apis.core import Pod
from apis.registry import parse_as, parse_object
from apis.resource import ResourceClaim
from controllers.addons.gateway import PodGateway
from controllers.addons.scheduler import PodScheduler, SchedulerOptions, _start
from controllers.embedded.apiserver import EmbeddedApiServer
from controllers.embedded.kubelet import KubeletOptions
from controllers.kube.config import ClusterAccess, new_api_client
from controllers.kube.errors import NotFoundError
from placement.pods.config.scheduler_config import load_config
from plugins.pods import POD_PLUGINS
from tests.controllers.addons.cluster import SCHEDULER, node, pod
from tests.controllers.embedded.hub import eventually

DRIVER = "gpu.example.com"
MESSAGE = (
    "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
    "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
)
"""kube-scheduler v1.36.2's words for the fifth pod (tests/e2e/test_pod_dra.py compares ours
with them on a real control plane, where other nodes add their NodeAffinity count)."""


def world() -> list[Any]:
    docs: list[dict[str, Any]] = [
        {
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        },
        {
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]
                    }
                }
            },
        },
    ]
    for name in ("n0", "n1"):
        docs.append(
            {
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpu"},
                "spec": {
                    "driver": DRIVER,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "nodeName": name,
                    "devices": [{"name": f"gpu-{i}"} for i in range(2)],
                },
            }
        )
    return [parse_object({"apiVersion": "resource.k8s.io/v1", **doc}) for doc in docs]


def gpu_pod(name: str) -> Pod:
    made = pod(name, terminationGracePeriodSeconds=1)
    doc = made.to_wire()
    doc["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    doc["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return parse_as(Pod, doc)


def claim_of(found: Pod) -> str:
    for status in (found.status.resource_claim_statuses if found.status else None) or ():
        if status.name == "gpu" and status.resource_claim_name:
            return status.resource_claim_name
    return ""


def message_of(found: Pod) -> str:
    conditions = (found.to_wire().get("status") or {}).get("conditions") or []
    return str(next((c.get("message", "") for c in conditions if c["type"] == "PodScheduled"), ""))


@pytest.mark.asyncio
async def test_scheduler_run_allocates_template_claims_the_stand_in_makes() -> None:
    server = EmbeddedApiServer(kubelet=KubeletOptions())
    url = await server.start()
    gw = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
    opened: list[Any] = []
    try:
        for name in ("n0", "n1"):
            await gw.create(node(name, cpu="4"))
        for obj in world():
            await gw.create(obj)
        config = load_config(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": SCHEDULER}],  # the defaults: DynamicResources
            },
            POD_PLUGINS,
        )
        options = SchedulerOptions(url=url, http_addr=None, status_controller="off", loaded=config)
        await _start(options, opened)
        assert any(isinstance(c, PodScheduler) for c in opened)
        for i in range(5):
            await gw.create(gpu_pod(f"p{i}"))

        async def settled() -> dict[str, Pod]:
            pods = {p.name: p for p in (await gw.list(Pod, "default")).items}
            bound = [p for p in pods.values() if p.spec.node_name]
            waiting = [p for p in pods.values() if "cannot allocate" in message_of(p)]
            return pods if (len(bound), len(waiting)) == (4, 1) else {}

        pods = await eventually(settled, timeout=30)
        devices = set()
        for found in pods.values():
            if not found.spec.node_name:
                assert found.name == "p4" and message_of(found) == MESSAGE
                continue
            claim = await gw.get(ResourceClaim, claim_of(found), "default")
            assert claim.status is not None and claim.status.allocation is not None
            results = claim.status.allocation.devices
            assert results is not None and results.results is not None
            (result,) = results.results
            assert (result.driver, result.pool) == (DRIVER, found.spec.node_name)
            devices.add((result.pool, result.device))
            refs = claim.status.reserved_for or []
            assert [(r.name, r.uid) for r in refs] == [(found.name, found.metadata.uid)]
        assert len(devices) == 4

        freed = pods["p0"].spec.node_name
        freed_claim = claim_of(pods["p0"])
        await gw.delete(Pod, "p0", "default")

        async def fifth_bound() -> bool:
            return (await gw.get(Pod, "p4", "default")).spec.node_name == freed

        await eventually(fifth_bound, timeout=30)
        with pytest.raises(NotFoundError):  # released by the stand-in, then gone
            await gw.get(ResourceClaim, freed_claim, "default")
    finally:
        for controller in opened:
            if isinstance(controller, PodScheduler):
                await controller.stop()
        for gateway in opened:
            if isinstance(gateway, PodGateway):
                await gateway.close()
        await gw.close()
        await server.stop()

"""The resource.k8s.io kinds reach the pod scheduler's engine as a cluster serves them: against
the embedded API server (which serves resource.k8s.io/v1, as kube-apiserver v1.36 does by
default), `scheduler run` watches DeviceClasses, ResourceClaims, ResourceClaimTemplates and
ResourceSlices, and every change (added, modified, deleted) lands in the engine's cache, where
DynamicResources reads them."""

from __future__ import annotations

from typing import Any

import pytest

from apis.meta import KubeObject
from apis.registry import parse_as
from apis.resource import (
    RESOURCE_KINDS,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from controllers.addons.gateway import PodGateway
from controllers.addons.informers import OPTIONAL_KINDS
from controllers.addons.scheduler import PodScheduler, SchedulerOptions, _start
from controllers.embedded.apiserver import EmbeddedApiServer
from controllers.kube.config import ClusterAccess, new_api_client
from placement.pods.scheduler.engine import Engine
from tests.controllers.embedded.hub import ensure_namespaces, eventually

DRIVER = "gpu.example.com"
SPEC = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}


def objects() -> list[KubeObject]:
    selector = {"cel": {"expression": f'device.driver == "{DRIVER}"'}}
    devices = [{"name": f"gpu-{i}"} for i in range(2)]
    pool = {"name": "n1", "generation": 1, "resourceSliceCount": 1}
    docs: list[tuple[type[KubeObject], dict[str, Any]]] = [
        (DeviceClass, {"metadata": {"name": "gpu"}, "spec": {"selectors": [selector]}}),
        (
            ResourceSlice,
            {
                "metadata": {"name": "n1-gpu"},
                "spec": {"driver": DRIVER, "pool": pool, "nodeName": "n1", "devices": devices},
            },
        ),
        (
            ResourceClaimTemplate,
            {"metadata": {"name": "one-gpu", "namespace": "team"}, "spec": {"spec": SPEC}},
        ),
        (ResourceClaim, {"metadata": {"name": "shared", "namespace": "team"}, "spec": SPEC}),
    ]
    return [parse_as(cls, {"apiVersion": "resource.k8s.io/v1", **doc}) for cls, doc in docs]


def test_the_four_kinds_are_optional_kinds() -> None:
    assert set(RESOURCE_KINDS) <= set(OPTIONAL_KINDS)


@pytest.mark.asyncio
async def test_every_change_of_the_four_kinds_reaches_the_engine() -> None:
    server = EmbeddedApiServer()
    url = await server.start()
    gw = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
    opened: list[Any] = []
    try:
        await ensure_namespaces(gw, ["team"])
        await _start(SchedulerOptions(url=url, http_addr=None, status_controller="off"), opened)
        (scheduler,) = [c for c in opened if isinstance(c, PodScheduler)]
        engine = scheduler.engine
        assert isinstance(engine, Engine)  # one profile: one engine
        made = [await gw.create(obj) for obj in objects()]

        def cached(obj: KubeObject) -> KubeObject | None:
            return engine.cache.objects(obj.KIND).get(obj.key)

        await eventually(lambda: all(cached(obj) is not None for obj in made))
        assert {type(cached(obj)) for obj in made} == set(RESOURCE_KINDS)

        # Modified: the claim's status as PreBind writes it is what the engine then holds.
        claim = next(obj for obj in made if isinstance(obj, ResourceClaim))
        doc = claim.to_wire()
        doc["status"] = {"reservedFor": [{"resource": "pods", "name": "web", "uid": "u-web"}]}
        await gw.replace_status(parse_as(ResourceClaim, doc))

        def reserved() -> bool:
            seen = cached(claim)
            status = seen.status if isinstance(seen, ResourceClaim) else None
            return bool(status and status.reserved_for)

        await eventually(reserved)
        # Deleted: the slice's devices are gone from the engine's view.
        await gw.delete(ResourceSlice, "n1-gpu")
        await eventually(lambda: engine.cache.objects(ResourceSlice.KIND).get("n1-gpu") is None)
    finally:
        for controller in opened:
            if isinstance(controller, PodScheduler):
                await controller.stop()
        for gateway in opened:
            if isinstance(gateway, PodGateway):
                await gateway.close()
        await gw.close()
        await server.stop()

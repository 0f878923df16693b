"""The audit log: every resource request counted under the verb RBAC would check, with its
group, resource, subresource and namespace, through the real client and through kubectl."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from apis.cluster import ManagedCluster
from apis.core import Pod
from apis.placements import Placement
from controllers.embedded import AuditEntry
from tests.controllers.embedded.hub import cluster, hub, kubectl, placement, pod

pytestmark = pytest.mark.asyncio

GROUP = "cluster.open-cluster-management.io"


async def test_each_gateway_call_is_recorded_under_its_rbac_verb() -> None:
    async with hub() as (server, gw):
        await gw.create(placement("web"))
        await gw.get(Placement, "web", "default")
        await gw.list(Placement)
        await gw.list(Placement, "default")
        await gw.merge_patch(Placement, "web", {"metadata": {"labels": {"a": "b"}}}, "default")
        await gw.patch_status(
            Placement, "web", {"status": {"numberOfSelectedClusters": 0}}, "default"
        )
        current = await gw.get(Placement, "web", "default")
        await gw.replace(current)
        async for _ in gw.watch(Placement, "0", "default", timeout_seconds=1, bookmarks=False):
            pass
        await gw.delete(Placement, "web", "default")
        await gw.create(cluster("c1"))
        await gw.create(pod("p"))
        await gw.bind("default", "p", "node-1")
        await gw.evict("default", "p")

        assert server.audit == {
            AuditEntry("create", GROUP, "placements", "", "default"): 1,
            AuditEntry("get", GROUP, "placements", "", "default"): 2,
            AuditEntry("list", GROUP, "placements", "", ""): 1,
            AuditEntry("list", GROUP, "placements", "", "default"): 1,
            AuditEntry("patch", GROUP, "placements", "", "default"): 1,
            AuditEntry("patch", GROUP, "placements", "status", "default"): 1,
            AuditEntry("update", GROUP, "placements", "", "default"): 1,
            AuditEntry("watch", GROUP, "placements", "", "default"): 1,
            AuditEntry("delete", GROUP, "placements", "", "default"): 1,
            AuditEntry("create", GROUP, "managedclusters", "", ""): 1,
            AuditEntry("create", "", "pods", "", "default"): 1,
            AuditEntry("create", "", "pods", "binding", "default"): 1,
            AuditEntry("create", "", "pods", "eviction", "default"): 1,
        }
        assert server.audit.verbs()[(GROUP, "placements/status")] == {"patch"}
        assert server.audit.verbs()[(GROUP, "placements")] == {
            "create",
            "get",
            "list",
            "patch",
            "update",
            "watch",
            "delete",
        }


async def test_failed_requests_are_recorded_and_discovery_is_not() -> None:
    async with hub() as (server, gw):
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{server.url}/apis") as response:
                assert response.status == 200
            async with http.get(f"{server.url}/api/v1/namespaces/default/pods/nope") as response:
                assert response.status == 404
            path = f"{server.url}/apis/{GROUP}/v1/managedclusters"
            async with http.delete(path) as response:
                assert response.status == 200
        assert server.audit == {
            AuditEntry("get", "", "pods", "", "default"): 1,
            AuditEntry("deletecollection", GROUP, "managedclusters", "", ""): 1,
        }
        server.audit.clear()
        await gw.list(ManagedCluster)
        assert list(server.audit) == [AuditEntry("list", GROUP, "managedclusters", "", "")]


async def test_kubectl_apply_and_get_are_recorded(tmp_path: Path) -> None:
    async with hub() as (server, gw):
        await gw.create(pod("p"))
        server.audit.clear()
        config = server.kubeconfig(tmp_path / "kubeconfig")
        code, _, err = await kubectl(config, "get", "pods", "-A")
        assert code == 0, err
        code, _, err = await kubectl(config, "get", "pod", "p", "-w", "--request-timeout=1s")
        verbs = {(e.verb, e.resource, e.namespace) for e in server.audit}
        assert ("list", "pods", "") in verbs
        assert ("get", "pods", "default") in verbs or ("list", "pods", "default") in verbs
        assert ("watch", "pods", "default") in verbs
        assert (await gw.get(Pod, "p", "default")).name == "p"

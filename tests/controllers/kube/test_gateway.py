"""The gateway's own behaviour: configuration, retries of reads only, transport errors."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from apis.cluster import ManagedCluster
from apis.placements import Placement
from controllers.embedded import EmbeddedApiServer
from controllers.kube.config import ClusterAccess
from controllers.kube.errors import ServerError, TooManyRequestsError, TransportError
from controllers.kube.gateway import Gateway, object_path
from tests.controllers.embedded.hub import cluster, hub


@pytest.mark.asyncio
async def test_gateway_connects_through_a_kubeconfig_file_and_context(tmp_path: Path) -> None:
    async with hub() as (server, gw):
        await gw.create(cluster("c1"))
        config = server.kubeconfig(tmp_path / "config", context="hub")
        access = ClusterAccess(kubeconfig=config, context="hub")
        async with await Gateway.connect(access) as other:
            assert [c.name for c in (await other.list(ManagedCluster)).items] == ["c1"]


@pytest.mark.asyncio
async def test_reads_are_retried_after_server_errors() -> None:
    async with hub() as (server, gw):
        await gw.create(cluster("c1"))
        server.faults.fail_next("get", 503, times=2)
        server.faults.fail_next("list", 429, times=1)
        assert (await gw.get(ManagedCluster, "c1")).name == "c1"
        assert len((await gw.list(ManagedCluster)).items) == 1


@pytest.mark.asyncio
async def test_list_pages_gives_every_object_once_in_pages_of_the_limit() -> None:
    async with hub() as (server, gw):
        for i in range(5):
            await gw.create(cluster(f"c{i}"))
        whole = await gw.list(ManagedCluster)
        server.faults.fail_next("list", 503, times=1)  # a page is a read: retried
        pages = [page async for page in gw.list_pages(ManagedCluster, limit=2)]
        assert [[c.name for c in page.items] for page in pages] == [
            ["c0", "c1"],
            ["c2", "c3"],
            ["c4"],
        ]
        assert {page.resource_version for page in pages} == {whole.resource_version}
        selected = [
            p async for p in gw.list_pages(ManagedCluster, field_selector="metadata.name=c3")
        ]
        assert [[c.name for c in page.items] for page in selected] == [["c3"]]


@pytest.mark.asyncio
async def test_reads_give_up_after_the_last_attempt() -> None:
    async with hub() as (server, gw):
        server.faults.fail_next("get", 500, times=gw.read_attempts)
        with pytest.raises(ServerError):
            await gw.get(ManagedCluster, "c1")
        server.faults.fail_next("list", 429, times=gw.read_attempts)
        with pytest.raises(TooManyRequestsError):
            await gw.list(ManagedCluster)


@pytest.mark.asyncio
async def test_writes_are_never_retried() -> None:
    async with hub() as (server, gw):
        start = server.store.rv  # the cluster's own Namespaces were written before
        server.faults.fail_next("create", 500)
        with pytest.raises(ServerError):
            await gw.create(cluster("c1"))
        # The failed create was not replayed behind our back: the next one is the first to land.
        assert server.store.rv == start
        await gw.create(cluster("c1"))
        assert server.store.rv == start + 1


@pytest.mark.asyncio
async def test_unreachable_server_is_a_transport_error() -> None:
    server = EmbeddedApiServer()
    url = await server.start()
    await server.stop()
    async with await Gateway.connect(ClusterAccess(url=url), read_attempts=1) as gw:
        with pytest.raises(TransportError):
            await gw.get(ManagedCluster, "c1")


@pytest.mark.asyncio
async def test_injected_latency_delays_every_request() -> None:
    async with hub() as (server, gw):
        server.faults.latency = 0.2
        loop = asyncio.get_running_loop()
        began = loop.time()
        await gw.list(ManagedCluster)
        assert loop.time() - began >= 0.2


@pytest.mark.asyncio
async def test_error_rate_fails_about_that_share_of_requests() -> None:
    async with hub() as (server, gw):
        start = server.store.rv  # the cluster's own Namespaces were written before
        server.faults.error_rates["create"] = 0.5
        failures = 0
        for i in range(40):
            try:
                await gw.create(cluster(f"c{i}"))
            except ServerError:
                failures += 1
        assert 8 <= failures <= 32
        assert server.store.rv == start + 40 - failures


def test_namespaced_object_path_needs_a_namespace() -> None:
    with pytest.raises(ValueError, match="namespaced"):
        object_path(Placement, "web", None)
    assert object_path(ManagedCluster, "c1", None, "status") == (
        "/apis/cluster.open-cluster-management.io/v1/managedclusters/c1/status"
    )

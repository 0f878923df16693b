"""Conformance of the embedded API server's watch: event order, resume from a resourceVersion,
bookmarks, 410 Gone for a compacted one, selectors, and the dropped streams of fault injection."""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import pytest

from apis.cluster import ManagedCluster
from controllers.kube.errors import GoneError, TransportError
from controllers.kube.gateway import Gateway, WatchEvent
from tests.controllers.embedded.hub import WAIT, cluster, eventually, hub

pytestmark = pytest.mark.asyncio


async def _collect(
    gw: Gateway, rv: str, count: int, **options: object
) -> list[WatchEvent[ManagedCluster]]:
    events: list[WatchEvent[ManagedCluster]] = []
    async with asyncio.timeout(WAIT):
        async for event in gw.watch(ManagedCluster, rv, **options):  # type: ignore[arg-type]
            events.append(event)
            if len(events) == count:
                break
    return events


def _summary(events: list[WatchEvent[ManagedCluster]]) -> list[tuple[str, str]]:
    return [(e.type, e.object.name if e.object else "") for e in events]


async def test_watch_delivers_added_modified_deleted_in_order() -> None:
    async with hub() as (server, gw):
        start = (await gw.list(ManagedCluster)).resource_version
        watching = asyncio.create_task(_collect(gw, start, 3, bookmarks=False))
        await server.wait_for_watchers(1)
        await gw.create(cluster("c1"))
        await gw.merge_patch(ManagedCluster, "c1", {"metadata": {"labels": {"a": "b"}}})
        await gw.delete(ManagedCluster, "c1")
        events = await watching
        assert _summary(events) == [("ADDED", "c1"), ("MODIFIED", "c1"), ("DELETED", "c1")]
        rvs = [int(e.resource_version) for e in events]
        assert rvs == sorted(rvs) and len(set(rvs)) == 3


async def test_watch_resumes_from_last_resource_version() -> None:
    async with hub() as (_, gw):
        first = await gw.create(cluster("c1"))
        await gw.create(cluster("c2"))
        await gw.merge_patch(ManagedCluster, "c1", {"metadata": {"labels": {"x": "y"}}})
        events = await _collect(gw, first.metadata.resource_version or "", 2, bookmarks=False)
        assert _summary(events) == [("ADDED", "c2"), ("MODIFIED", "c1")]


async def test_watch_without_resource_version_starts_with_the_current_objects() -> None:
    async with hub() as (_, gw):
        await gw.create(cluster("c1"))
        await gw.create(cluster("c2"))
        events = await _collect(gw, "0", 2, bookmarks=False)
        assert _summary(events) == [("ADDED", "c1"), ("ADDED", "c2")]


async def test_watch_sends_bookmarks_with_the_current_resource_version() -> None:
    async with hub(bookmark_interval=0.05) as (server, gw):
        created = await gw.create(cluster("c1"))
        events = await _collect(gw, created.metadata.resource_version or "", 1)
        assert events[0].type == "BOOKMARK" and events[0].object is None
        assert events[0].resource_version == str(server.store.rv)


async def test_watch_without_bookmarks_allowed_gets_none() -> None:
    async with hub(bookmark_interval=0.01) as (_, gw):
        created = await gw.create(cluster("c1"))
        events: list[WatchEvent[ManagedCluster]] = []
        async for event in gw.watch(
            ManagedCluster,
            created.metadata.resource_version or "",
            bookmarks=False,
            timeout_seconds=1,
        ):
            events.append(event)
        assert events == []


async def test_watch_from_a_compacted_resource_version_is_gone() -> None:
    async with hub() as (server, gw):
        first = await gw.create(cluster("c1"))
        await gw.create(cluster("c2"))
        server.store.compact()
        with pytest.raises(GoneError) as err:
            await _collect(gw, first.metadata.resource_version or "", 1)
        assert err.value.code == 410
        # The current resourceVersion is still watchable.
        listed = await gw.list(ManagedCluster)
        watching = asyncio.create_task(_collect(gw, listed.resource_version, 1, bookmarks=False))
        await server.wait_for_watchers(1)
        await gw.create(cluster("c3"))
        assert _summary(await watching) == [("ADDED", "c3")]


async def test_history_limit_compacts_old_resource_versions() -> None:
    async with hub(history=3) as (_, gw):
        first = await gw.create(cluster("c1"))
        for name in ("c2", "c3", "c4", "c5"):
            await gw.create(cluster(name))
        with pytest.raises(GoneError):
            await _collect(gw, first.metadata.resource_version or "", 1)


async def test_forced_gone_fault_answers_the_next_watch_with_410() -> None:
    async with hub() as (server, gw):
        created = await gw.create(cluster("c1"))
        server.faults.force_gone()
        with pytest.raises(GoneError):
            await _collect(gw, created.metadata.resource_version or "", 1)
        events = await _collect(gw, "0", 1, bookmarks=False)
        assert _summary(events) == [("ADDED", "c1")]


async def test_label_selected_watch_sees_an_object_leaving_as_deleted_and_joining_as_added() -> (
    None
):
    async with hub() as (server, gw):
        await gw.create(cluster("c1", {"env": "prod"}))
        start = (await gw.list(ManagedCluster)).resource_version
        watching = asyncio.create_task(
            _collect(gw, start, 2, bookmarks=False, label_selector="env=prod")
        )
        await server.wait_for_watchers(1)
        await gw.merge_patch(ManagedCluster, "c1", {"metadata": {"labels": {"env": "dev"}}})
        await gw.merge_patch(ManagedCluster, "c1", {"metadata": {"labels": {"env": "prod"}}})
        assert _summary(await watching) == [("DELETED", "c1"), ("ADDED", "c1")]


async def test_abruptly_dropped_watch_is_a_transport_error() -> None:
    async with hub() as (server, gw):
        start = (await gw.list(ManagedCluster)).resource_version
        watching = asyncio.create_task(_collect(gw, start, 5, bookmarks=False))
        await server.wait_for_watchers(1)
        assert server.drop_watches(abrupt=True) == 1
        with pytest.raises(TransportError):
            await watching


async def test_cleanly_ended_watch_just_stops() -> None:
    async with hub() as (server, gw):
        start = (await gw.list(ManagedCluster)).resource_version
        watching = asyncio.create_task(_collect(gw, start, 5, bookmarks=False))
        await server.wait_for_watchers(1)
        server.drop_watches(abrupt=False)
        assert await watching == []


async def test_watch_ends_after_timeout_seconds() -> None:
    async with hub(bookmark_interval=10) as (_, gw):
        start = (await gw.list(ManagedCluster)).resource_version
        loop = asyncio.get_running_loop()
        began = loop.time()
        assert await _collect(gw, start, 1, timeout_seconds=1) == []
        assert 0.9 <= loop.time() - began < WAIT


async def test_a_watch_client_going_away_is_no_error_in_the_servers_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # kubectl get -w ended with Ctrl-C, a controller restarting: a normal event, at most DEBUG.
    caplog.set_level(logging.DEBUG)
    async with hub() as (server, gw):
        url = f"{server.url}/apis/cluster.open-cluster-management.io/v1/managedclusters?watch=1"
        async with aiohttp.ClientSession() as session:
            response = await session.get(url)
            await server.wait_for_watchers(1)
            response.close()  # the client goes away with the stream open
        for n in range(20):  # the server writes into the closed connection
            await gw.create(cluster(f"c{n}"))
        await eventually(lambda: not server.store.watchers)
    noisy = [
        r for r in caplog.records if r.levelno > logging.DEBUG and r.name.startswith("aiohttp")
    ]
    noisy += [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert noisy == [], [r.getMessage() for r in noisy]
    assert not any(r.exc_info for r in caplog.records)

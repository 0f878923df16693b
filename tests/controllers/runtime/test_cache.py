"""The informer cache against the embedded API server: list then watch, callbacks in order,
resume after a dropped watch without losing an update, relist after 410 Gone reconciling the
deletions missed while disconnected."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from apis.cluster import ManagedCluster
from apis.errors import ObjectValidationError
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway, InvalidResponseError
from controllers.runtime.cache import Informer
from tests.controllers.embedded.hub import cluster, eventually, hub

pytestmark = pytest.mark.asyncio


class Recorder:
    """The callbacks of an informer, as (event, name, labels) in delivery order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, str]]] = []

    def add(self, obj: ManagedCluster) -> None:
        self.calls.append(("add", obj.name, obj.metadata.labels or {}))

    def update(self, old: ManagedCluster, new: ManagedCluster) -> None:
        self.calls.append(("update", new.name, new.metadata.labels or {}))

    def delete(self, obj: ManagedCluster) -> None:
        self.calls.append(("delete", obj.name, obj.metadata.labels or {}))

    def of(self, name: str) -> list[tuple[str, dict[str, str]]]:
        return [(kind, labels) for kind, who, labels in self.calls if who == name]


@asynccontextmanager
async def informing(
    gw: Gateway, recorder: Recorder
) -> AsyncIterator[Informer[ManagedCluster, ManagedCluster]]:
    informer = Informer(
        gw,
        ManagedCluster,
        on_add=recorder.add,
        on_update=recorder.update,
        on_delete=recorder.delete,
        retry_delay=0.01,
    )
    informer.start()
    try:
        await informer.wait_synced(timeout=5)
        yield informer
    finally:
        await informer.stop()


async def _labels(gw: Gateway, name: str, value: str) -> None:
    await gw.merge_patch(ManagedCluster, name, {"metadata": {"labels": {"v": value}}})


async def test_informer_lists_then_delivers_watch_events_in_order_per_key() -> None:
    async with hub() as (server, gw):
        await gw.create(cluster("c1", {"v": "0"}))
        recorder = Recorder()
        async with informing(gw, recorder) as informer:
            assert informer.synced and [c.name for c in informer.list()] == ["c1"]
            await server.wait_for_watchers(1)
            await gw.create(cluster("c2", {"v": "0"}))
            for i in range(1, 6):
                await _labels(gw, "c1", str(i))
                await _labels(gw, "c2", str(i))
            await gw.delete(ManagedCluster, "c2")
            await eventually(lambda: ("delete", "c2", {"v": "5"}) in recorder.calls)
            assert recorder.of("c1") == [("add", {"v": "0"})] + [
                ("update", {"v": str(i)}) for i in range(1, 6)
            ]
            assert recorder.of("c2") == [("add", {"v": "0"})] + [
                ("update", {"v": str(i)}) for i in range(1, 6)
            ] + [("delete", {"v": "5"})]
            assert informer.keys() == {"c1"}
            assert informer.resource_version == str(server.store.rv)


async def test_no_update_is_lost_across_a_dropped_watch() -> None:
    async with hub() as (server, gw):
        await gw.create(cluster("c1", {"v": "0"}))
        recorder = Recorder()
        async with informing(gw, recorder) as informer:
            await server.wait_for_watchers(1)
            server.stall_watches()  # writes from now on do not reach the open stream
            await _labels(gw, "c1", "1")
            await gw.create(cluster("c2"))
            await _labels(gw, "c1", "2")
            assert recorder.of("c1") == [("add", {"v": "0"})]
            server.drop_watches(abrupt=True)
            await eventually(lambda: len(recorder.calls) == 4)
            assert recorder.of("c1") == [
                ("add", {"v": "0"}),
                ("update", {"v": "1"}),
                ("update", {"v": "2"}),
            ]
            assert recorder.of("c2") == [("add", {})]
            assert (informer.relists, informer.resumes) == (1, 1)


async def test_bookmarks_move_the_resume_point_on() -> None:
    async with hub(bookmark_interval=0.02) as (server, gw):
        await gw.create(cluster("c1"))
        recorder = Recorder()
        async with informing(gw, recorder) as informer:
            before = informer.resource_version
            await server.wait_for_watchers(1)
            server.stall_watches()
            await gw.create(cluster("other"))  # unseen by the stalled stream
            server.drop_watches(abrupt=False)
            await eventually(lambda: informer.get("other") is not None)
            # A bookmark after the reconnect reports the latest RV even with nothing to send.
            await eventually(lambda: informer.resource_version == str(server.store.rv))
            assert int(informer.resource_version) > int(before)


async def test_relist_after_gone_reconciles_deletions_missed_while_disconnected() -> None:
    async with hub() as (server, gw):
        for name in ("c1", "c2", "c3"):
            await gw.create(cluster(name, {"v": "0"}))
        recorder = Recorder()
        async with informing(gw, recorder) as informer:
            await server.wait_for_watchers(1)
            server.stall_watches()
            await gw.delete(ManagedCluster, "c1")
            await _labels(gw, "c2", "1")
            await gw.create(cluster("c4"))
            server.store.compact()  # the informer's resourceVersion is now too old
            server.drop_watches(abrupt=True)
            await eventually(lambda: informer.relists == 2)
            assert informer.keys() == {"c2", "c3", "c4"}
            assert recorder.calls[3:] == [
                ("delete", "c1", {"v": "0"}),
                ("update", "c2", {"v": "1"}),
                ("add", "c4", {}),
            ]
            # And it watches again after the relist.
            await server.wait_for_watchers(1)
            await gw.delete(ManagedCluster, "c3")
            await eventually(lambda: informer.get("c3") is None)


async def test_informer_retries_after_server_errors_on_watch() -> None:
    async with hub() as (server, gw):
        await gw.create(cluster("c1"))
        server.faults.fail_next("watch", 503, times=2)
        recorder = Recorder()
        async with informing(gw, recorder) as informer:
            await server.wait_for_watchers(1)
            await gw.create(cluster("c2"))
            await eventually(lambda: informer.get("c2") is not None)
            assert informer.resumes == 2


async def test_a_failing_callback_does_not_stop_the_informer() -> None:
    async with hub() as (server, gw):
        calls: list[str] = []

        def explode(obj: ManagedCluster) -> None:
            calls.append(obj.name)
            raise RuntimeError("handler bug")

        informer = Informer(gw, ManagedCluster, on_add=explode)
        informer.start()
        try:
            await informer.wait_synced(timeout=5)
            await server.wait_for_watchers(1)
            await gw.create(cluster("c1"))
            await gw.create(cluster("c2"))
            await eventually(lambda: calls == ["c1", "c2"])
        finally:
            await informer.stop()


class Refusing(Gateway):
    """Reads a cluster labelled `refuse=yes` as the models read an object they refuse (a
    check only OCM's webhook makes, on a hub without it: found on a real kube-apiserver)."""

    @staticmethod
    def _typed(cls: Any, doc: Any) -> Any:
        if ((doc.get("metadata") or {}).get("labels") or {}).get("refuse") == "yes":
            problem = ObjectValidationError(doc["metadata"]["name"], [])
            raise InvalidResponseError(f"server sent an invalid object: {problem}") from problem
        return Gateway._typed(cls, doc)


async def test_an_object_the_models_refuse_is_left_out_and_never_stops_the_cache() -> None:
    async with hub() as (server, gw):
        await gw.create(cluster("a"))
        await gw.create(cluster("b", {"refuse": "yes"}))
        refusing = await Refusing.connect(ClusterAccess(url=server.url), backoff=0.01)
        recorder = Recorder()
        try:
            async with informing(refusing, recorder) as informer:
                assert informer.keys() == {"a"}  # the list did not fail for b
                assert set(informer.unreadable) == {"b"}
                await _labels(gw, "a", "1")
                await gw.merge_patch(
                    ManagedCluster, "a", {"metadata": {"labels": {"refuse": "yes"}}}
                )
                await gw.create(cluster("c", {"refuse": "yes"}))
                await gw.create(cluster("d"))
                await eventually(lambda: informer.get("d") is not None)
                # a's unreadable update keeps the version read before; c is never added
                assert recorder.of("a") == [("add", {}), ("update", {"v": "1"})]
                assert informer.keys() == {"a", "d"}
                assert set(informer.unreadable) == {"a", "b", "c"}
                await gw.delete(ManagedCluster, "a")  # a deletion still deletes
                await gw.delete(ManagedCluster, "b")
                await eventually(lambda: informer.get("a") is None)
                assert recorder.of("a")[-1] == ("delete", {"v": "1"})
                await eventually(lambda: set(informer.unreadable) == {"c"})
                assert recorder.of("b") == []
                assert informer.watching and informer.failures == 0
        finally:
            await refusing.close()

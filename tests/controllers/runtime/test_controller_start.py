"""A controller's start-up against the embedded API server: it returns once the caches have
synced, and otherwise raises `StartError` with one line saying what failed: which kinds could not
be listed and why, an informer that stopped, or an HTTP address it cannot listen on. A start
cancelled half-way (a signal) leaves nothing running after `stop`."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from pathlib import Path
from typing import Any

import pytest

from apis.cluster import ManagedCluster, ManagedClusterSet
from apis.meta import KubeObject
from controllers.kube.gateway import Gateway
from controllers.runtime.cache import Informer, Keep
from controllers.runtime.controller import Controller, ControllerOptions, StartError
from controllers.runtime.metrics import MetricsRegistry
from controllers.runtime.queue import Handler
from tests.controllers.embedded.hub import cluster, eventually, hub

pytestmark = pytest.mark.asyncio


async def _done(key: str) -> None:
    return None


class Watching(Controller):
    """A controller that only watches `kinds` (each projected by `keep`, if given)."""

    def __init__(
        self,
        gateway: Gateway,
        kinds: list[type[KubeObject]],
        *,
        keep: Keep[Any, Any] | None = None,
        http_addr: str | None = None,
    ) -> None:
        super().__init__(
            gateway, ControllerOptions(http_addr=http_addr), name="test", metrics=MetricsRegistry()
        )
        self.informers = [Informer(gateway, kind, keep=keep, retry_delay=0.01) for kind in kinds]

    def keys(self) -> list[str]:
        return []

    @property
    def handler(self) -> Handler:
        return _done


async def test_start_returns_once_every_cache_has_synced() -> None:
    async with hub() as (_, gateway):
        await gateway.create(cluster("c1"))
        controller = Watching(gateway, [ManagedCluster, ManagedClusterSet])
        await controller.start(sync_timeout=30)
        try:
            assert controller.synced
            assert controller.informers[0].keys() == {"c1"}
            assert all(i.last_error is None for i in controller.informers)
        finally:
            await controller.stop()


async def test_caches_not_synced_in_time_name_the_kinds_and_the_servers_answer(
    tmp_path: Path,
) -> None:
    no_crds = tmp_path / "no-crds"
    no_crds.mkdir()
    async with hub(crd_dir=no_crds) as (_, gateway):
        controller = Watching(gateway, [ManagedCluster, ManagedClusterSet])
        with pytest.raises(StartError) as failure:
            await controller.start(sync_timeout=0.3)
        await controller.stop()
    assert str(failure.value) == (
        "caches not synced after 0.3s: ManagedCluster, ManagedClusterSet: not served by the "
        "server (404 on list: is its CRD installed?)"
    )


async def test_an_informer_that_keeps_failing_is_retried_and_named_when_start_up_times_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Issue 20: an unexpected exception never ends an informer; it is logged and retried.
    def broken(obj: ManagedCluster) -> str:
        raise ValueError(f"cannot keep {obj.name}")

    async with hub() as (_, gateway):
        await gateway.create(cluster("c1"))
        controller = Watching(gateway, [ManagedCluster], keep=Keep(broken, lambda item: None))
        with pytest.raises(StartError) as failure:
            await controller.start(sync_timeout=0.5)
        assert controller.informers[0].failures >= 2  # retried, not stopped
        await controller.stop()
    assert str(failure.value) == (
        "caches not synced after 0.5s: ManagedCluster: list failed: ValueError: cannot keep c1"
    )
    assert "ManagedCluster list failed unexpectedly (ValueError: cannot keep c1)" in caplog.text


async def test_an_address_in_use_is_named_and_nothing_keeps_running() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with hub() as (_, gateway):
            controller = Watching(gateway, [ManagedCluster], http_addr=f"127.0.0.1:{port}")
            with pytest.raises(StartError) as failure:
                await controller.start()
            await controller.stop()
    assert str(failure.value).startswith(f"HTTP endpoint 127.0.0.1:{port}: cannot listen: ")
    assert "\n" not in str(failure.value)


async def test_a_start_cancelled_while_syncing_is_stopped_cleanly(tmp_path: Path) -> None:
    no_crds = tmp_path / "no-crds"
    no_crds.mkdir()
    async with hub(crd_dir=no_crds) as (_, gateway):
        controller = Watching(gateway, [ManagedCluster], http_addr="127.0.0.1:0")
        starting = asyncio.create_task(controller.start(sync_timeout=None))
        while controller.informers[0].last_error is None:  # listing, and failing
            await asyncio.sleep(0.01)
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting
        await controller.stop()
        informer_task = controller.informers[0]._task
    assert informer_task is None
    assert controller.http is not None
    assert controller.http._runner is None


async def test_a_server_gone_after_start_up_is_one_line_per_retry_round_then_one_on_recovery(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with hub(bookmark_interval=0.05) as (server, gateway):
        controller = Watching(gateway, [ManagedCluster, ManagedClusterSet])
        await controller.start(sync_timeout=30)
        try:
            server.faults.error_rates["watch"] = 1.0
            server.drop_watches(abrupt=True)
            await eventually(lambda: min(i.failures_in_a_row for i in controller.informers) >= 3)
            del server.faults.error_rates["watch"]
            await eventually(lambda: "every informer lists and watches again" in caplog.text)
        finally:
            await controller.stop()
    rounds = [
        int(m[1])
        for r in caplog.records
        if (m := re.match(r"informers not watching \(attempt (\d+)\): ", r.getMessage()))
    ]
    assert rounds[:3] == [1, 2, 3], rounds
    assert rounds == list(range(1, len(rounds) + 1))
    per_kind = [r for r in caplog.records if r.name == "controllers.runtime.cache"]
    assert all(r.levelno == logging.DEBUG for r in per_kind if "failed" in r.getMessage())

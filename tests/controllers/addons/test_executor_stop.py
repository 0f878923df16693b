"""The executor's part of a stop (SIGTERM): from `close` on nothing more is sent, the writes on
the wire get a grace period and are then cancelled; each pod is bound or pending on the server,
never anything else."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from apis.core import Node, Pod
from apis.registry import parse_as
from controllers.embedded import EmbeddedApiServer
from controllers.kube.config import ClusterAccess, new_api_client
from placement.pods.framework.events import BindPod, BindResult
from tests.controllers.addons.test_executor import Rig, SlowPatches
from tests.controllers.embedded.hub import ensure_namespaces

PODS = 10  # the rig's executor sends 4 writes at a time


class SlowAnswers(SlowPatches):
    """A binding lands on the server at once; its answer comes `delay` seconds later."""

    delay = 0.0

    async def _open(self, method: str, path: str, **kwargs: Any) -> aiohttp.ClientResponse:
        answer = await super()._open(method, path, **kwargs)
        if path.endswith("/binding"):
            await asyncio.sleep(self.delay)
        return answer


async def bound_on_server(gateway: SlowAnswers) -> set[str]:
    pods = (await gateway.list(Pod, namespace="team")).items
    return {p.metadata.name or "" for p in pods if p.spec.node_name}


async def binds(rig: Rig) -> list[BindPod]:
    pods = [await rig.pod(f"p{i}") for i in range(PODS)]
    return [BindPod(p.key, p.metadata.uid or "", "n1") for p in pods]


async def started(delay: float) -> tuple[EmbeddedApiServer, SlowAnswers, Rig]:
    server = EmbeddedApiServer()
    await server.start()
    gateway = SlowAnswers(await new_api_client(ClusterAccess(url=server.url)), backoff=0.01)
    gateway.requests = []
    gateway.delay = delay
    await ensure_namespaces(gateway, ["team"])
    await gateway.create(parse_as(Node, {"kind": "Node", "metadata": {"name": "n1"}}))
    return server, gateway, Rig(server, gateway)


@pytest.mark.asyncio
async def test_a_stop_cancels_the_binds_on_the_wire_after_the_grace_and_sends_no_other() -> None:
    server, gateway, rig = await started(delay=30.0)  # answers that never come in time
    try:
        rig.executor.submit(await binds(rig))
        while gateway.requests.count("POST binding") < 4:
            await asyncio.sleep(0.01)
        await rig.executor.stop(0.1)
        assert gateway.requests.count("POST binding") == 4  # the 6 queued never went out
        assert rig.executor.pending == 0
        assert rig.executor.counts.abandoned == 4
        assert rig.executor.counts.unsent == PODS - 4
        # The 4 cancelled had landed: bound; the others pending, nothing else in between.
        assert len(await bound_on_server(gateway)) == 4
        late = await rig.pod("late")
        rig.executor.submit([BindPod(late.key, late.metadata.uid or "", "n1")])  # dropped
        await asyncio.sleep(0.05)
        assert gateway.requests.count("POST binding") == 4
        assert rig.executor.counts.unsent == PODS - 3
    finally:
        await gateway.close()
        await server.stop()


@pytest.mark.asyncio
async def test_binds_answered_within_the_grace_finish_with_their_results() -> None:
    server, gateway, rig = await started(delay=0.05)
    try:
        rig.executor.submit(await binds(rig))
        while gateway.requests.count("POST binding") < 4:
            await asyncio.sleep(0.01)
        rig.executor.close()
        await asyncio.wait_for(rig.executor.wait_room(), 1)  # a closed executor never waits
        await rig.executor.stop(5.0)
        assert rig.executor.counts.abandoned == 0
        assert rig.executor.counts.bound == 4
        assert all(isinstance(r, BindResult) and r.ok for r in rig.results)
        assert len(rig.results) == 4
        assert len(await bound_on_server(gateway)) == 4
    finally:
        await gateway.close()
        await server.stop()

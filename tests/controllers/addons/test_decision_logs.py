"""The pod scheduler says what it decides, as kube-scheduler does at `-v=2`: one INFO line per
binding, and one per unschedulable pod each time its diagnosis changes (an unchanged diagnosis
is not patched again, so a pod waiting in backoff does not repeat it). Against the embedded API
server through the real client."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from apis.core import Pod
from controllers.addons.gateway import PodGateway
from controllers.addons.scheduler import PodScheduler, load_scheduler_config
from controllers.kube.config import ClusterAccess, new_api_client
from tests.controllers.addons.cluster import node, pod
from tests.controllers.embedded.hub import eventually, hub

pytestmark = pytest.mark.asyncio
EXECUTOR = "controllers.addons.executor"


def unschedulable(p: Pod) -> bool:
    conditions: list[dict[str, Any]] = (p.status.conditions if p.status else None) or []
    return any(c.get("reason") == "Unschedulable" for c in conditions)


async def test_a_binding_and_an_unschedulable_pod_are_each_one_info_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=EXECUTOR)
    async with hub() as (server, _):
        gateway = PodGateway(await new_api_client(ClusterAccess(url=server.url)), backoff=0.01)
        scheduler = PodScheduler(gateway, load_scheduler_config(None), http_addr=None)
        try:
            await scheduler.start(sync_timeout=20)
            await gateway.create(node("n-0", cpu="1"))
            await gateway.create(pod("fits", cpu="600m"))
            await gateway.create(pod("too-big", cpu="2"))

            async def settled() -> bool:
                fits = await gateway.get(Pod, "fits", namespace="default")
                big = await gateway.get(Pod, "too-big", namespace="default")
                return bool(fits.spec.node_name) and unschedulable(big)

            await eventually(settled, timeout=20)
        finally:
            await scheduler.stop()
            await gateway.close()
    lines = [r.getMessage() for r in caplog.records if r.name == EXECUTOR]
    assert lines.count("bound default/fits to n-0") == 1, lines
    said = [line for line in lines if line.startswith("default/too-big unschedulable: ")]
    assert said and said[0] == (
        "default/too-big unschedulable: 0/1 nodes are available: 1 Insufficient cpu. "
        "no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    ), lines
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == EXECUTOR)

"""Host ports end to end: an embedded API server in a separate process, the pod scheduler
through the real client. Pods asking for the same host port, created before the scheduler
starts and bound by concurrent binding cycles (an assumed pod holds its port until its binding
is seen), land one per node; the one too many is reported with kube's reason."""

from __future__ import annotations

from collections import Counter

import pytest

from apis.core import Pod
from apis.registry import parse_as
from tests.controllers.addons.cluster import create_all, node, pod, server_process
from tests.controllers.addons.test_scheduler_e2e import condition, pods, scheduler
from tests.controllers.embedded.hub import eventually


def agent(name: str) -> Pod:
    """A node agent's pod: one container listening on host port 9100."""
    wire = pod(name).to_wire()
    wire["spec"]["containers"][0]["ports"] = [{"containerPort": 9100, "hostPort": 9100}]
    return parse_as(Pod, wire)


@pytest.mark.asyncio
async def test_pods_sharing_a_host_port_land_one_per_node() -> None:
    async with server_process() as (url, gw):
        await create_all(gw, [node(f"n{i}") for i in range(4)])
        await create_all(gw, [agent(f"agent-{i}") for i in range(5)])
        async with scheduler(url):

            async def settled() -> dict[str, Pod]:
                now = await pods(gw)
                bound = [p for p in now.values() if p.spec.node_name]
                waiting = [p for p in now.values() if condition(p).get("reason")]
                return now if len(bound) == 4 and waiting else {}

            now = await eventually(settled, timeout=30)
            per_node = Counter(p.spec.node_name for p in now.values() if p.spec.node_name)
            assert per_node == {"n0": 1, "n1": 1, "n2": 1, "n3": 1}
            [left] = [p for p in now.values() if not p.spec.node_name]
            got = condition(left)
            assert (got["reason"], got["message"]) == (
                "Unschedulable",
                "0/4 nodes are available: 4 node(s) didn't have free ports for the requested pod "
                "ports. no new claims to deallocate, "
                "preemption: 0/4 nodes are available: 4 No preemption victims found for "
                "incoming pod.",
            )

"""Gang scheduling end to end (issue 15; the target in docs/performance.md): G gangs of M members on
N nodes of 4 cpu, each member asking 1 cpu, so that only some gangs fit. The embedded API server
runs in its own process with simulated kubelets, the scheduler (Coscheduling on, as by default) in
this one through the real client. Timed from the scheduler's start until every gang is placed whole
or rejected: as many members bound as whole gangs fit, and every other member tried at least once.
Each run also checks that no gang ended partly bound.

The benchmark run uses small sizes. The issue's size:

    python -m perf.test_gang_bench --gangs 100 --members 50 --nodes 1000

prints one JSON line (seconds, pods bound, gangs whole, CPU seconds of both processes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from apis.core import Pod
from apis.registry import parse_as
from apis.scheduling import POD_GROUP_LABEL, PodGroup
from controllers.addons.scheduler import PodScheduler
from perf.test_pod_scheduler_e2e_bench import _cpu_seconds, _process_cpu_seconds
from placement.pods.config.scheduler_config import load_config
from tests.controllers.addons.cluster import create_all, node, pod, server_process

CPU_PER_NODE = 4
# Competing gangs need a group backoff to settle (docs/gangs-and-quotas.md): one second.
CONFIG = {"pluginArgs": {"Coscheduling": {"podGroupBackoffSeconds": 1}}}


def _group(name: str, members: int) -> PodGroup:
    doc = {"metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": members}}
    return parse_as(
        PodGroup, {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", **doc}
    )


def _member(name: str, gang: str) -> Pod:
    p = pod(name, "1", "16Mi")
    meta = p.metadata.model_copy(update={"labels": {POD_GROUP_LABEL: gang}})
    return p.model_copy(update={"metadata": meta})


async def measure(gangs: int, members: int, nodes: int, timeout: float = 600.0) -> dict[str, Any]:
    """Create nodes, groups and members, start the scheduler, wait until every gang is placed
    or rejected (module docstring)."""
    from controllers.addons.gateway import PodGateway
    from controllers.kube.config import ClusterAccess, new_api_client

    fit = min(gangs, nodes * CPU_PER_NODE // members)
    server_pid: list[int] = []
    async with server_process("--kubelet", started=server_pid.append) as (url, gw):
        await create_all(gw, [node(f"n-{i:05d}", cpu=str(CPU_PER_NODE)) for i in range(nodes)])
        names = [f"g{i:03d}" for i in range(gangs)]
        await create_all(gw, [_group(g, members) for g in names])
        pods = [_member(f"{g}-m{j:03d}", g) for g in names for j in range(members)]
        await create_all(gw, pods, width=64)
        gateway = PodGateway(await new_api_client(ClusterAccess(url=url)))
        scheduler = PodScheduler(gateway, load_config(CONFIG), http_addr=None)
        keys = [f"default/{p.metadata.name}" for p in pods]
        try:
            server_cpu = _process_cpu_seconds(server_pid[0])
            cpu, began = _cpu_seconds(), time.perf_counter()
            await scheduler.start(sync_timeout=600)
            stats = scheduler.engine.stats
            while time.perf_counter() - began < timeout:
                bound = scheduler.executor.counts.bound
                if bound >= fit * members and all(stats.pod_attempts.get(k, 0) for k in keys):
                    break
                await asyncio.sleep(0.05)
            done = time.perf_counter()
            cpu = _cpu_seconds() - cpu
            server_cpu = _process_cpu_seconds(server_pid[0]) - server_cpu
        finally:
            await scheduler.stop()
            await gateway.close()
        listed = (await gw.list(Pod, "default")).items
    per_gang = Counter(
        (p.metadata.labels or {}).get(POD_GROUP_LABEL) for p in listed if p.spec.node_name
    )
    return {
        "gangs": gangs,
        "members": members,
        "nodes": nodes,
        "seconds": round(done - began, 2),
        "bound": sum(per_gang.values()),
        "whole_gangs": sum(1 for n in per_gang.values() if n == members),
        "partial_gangs": sum(1 for n in per_gang.values() if n != members),
        "fit": fit,
        "scheduler_cpu_s": round(cpu, 2),
        "server_cpu_s": round(server_cpu, 2),
        "attempts": dict(scheduler.engine.stats.attempts),
        "timed_out": done - began >= timeout,
    }


@pytest.mark.parametrize(("gangs", "members", "nodes"), [(10, 10, 20)])
def test_gangs_placed_or_rejected_end_to_end(
    benchmark: BenchmarkFixture, gangs: int, members: int, nodes: int
) -> None:
    result = benchmark.pedantic(lambda: asyncio.run(measure(gangs, members, nodes)), rounds=1)
    benchmark.extra_info.update(result)
    assert not result["timed_out"]
    assert result["whole_gangs"] == result["fit"] == 8
    assert result["partial_gangs"] == 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m perf.test_gang_bench")
    parser.add_argument("--gangs", type=int, default=100)
    parser.add_argument("--members", type=int, default=50)
    parser.add_argument("--nodes", type=int, default=1000)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.gangs, args.members, args.nodes))))


if __name__ == "__main__":
    main()

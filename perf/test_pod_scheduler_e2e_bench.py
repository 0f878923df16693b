"""End-to-end pod scheduler throughput: N nodes x M pending pods on the embedded API server in a
separate process, the scheduler (`controllers.addons.PodScheduler`) in this one through the real
client, timed from its start until every pod is bound (pods/s). Each pod costs the API server a
binding and an Event (and two watch events); the scheduler its cycle, the bind, the Event and
three watch events parsed into models.

The benchmark run uses small sizes. The target's size (docs/performance.md, 'Targets'):

    python -m perf.test_pod_scheduler_e2e_bench --nodes 5000 --pods 10000

prints one JSON line (pods/s, seconds, both processes' CPU seconds). Target: >= 1,000 pods/s.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from controllers.addons.scheduler import PodScheduler, load_scheduler_config
from tests.controllers.addons.cluster import create_all, node, pod, server_process


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _process_cpu_seconds(pid: int) -> float:
    """User + system CPU of another process (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(
    nodes: int,
    pods: int,
    bind_concurrency: int = 32,
    *,
    profile_scheduler: Path | None = None,
    profile_server: Path | None = None,
) -> dict[str, Any]:
    """Create the nodes and the pending pods, start the scheduler, wait until all are bound.
    The profiles (cProfile stats files) cover the scheduler from its start to the last bind,
    and the server's whole life."""
    from controllers.addons.gateway import PodGateway
    from controllers.kube.config import ClusterAccess, new_api_client

    per_node = max(110, -(-pods // nodes) * 2)
    server_pid: list[int] = []
    profiler = cProfile.Profile() if profile_scheduler is not None else None
    async with server_process(profile=profile_server, started=server_pid.append) as (url, gw):
        await create_all(gw, [node(f"n-{i:05d}", cpu="64", pods=per_node) for i in range(nodes)])
        await create_all(gw, [pod(f"p-{i:06d}", "10m", "16Mi") for i in range(pods)], width=64)
        gateway = PodGateway(await new_api_client(ClusterAccess(url=url)))
        scheduler = PodScheduler(
            gateway, load_scheduler_config(None), http_addr=None, bind_concurrency=bind_concurrency
        )
        try:
            server_cpu = _process_cpu_seconds(server_pid[0])
            cpu, began = _cpu_seconds(), time.perf_counter()
            if profiler is not None:
                profiler.enable()
            await scheduler.start(sync_timeout=600)
            synced = time.perf_counter()
            while scheduler.executor.counts.bound < pods:
                await asyncio.sleep(0.01)
            done = time.perf_counter()
            if profiler is not None:
                profiler.disable()
            cpu = _cpu_seconds() - cpu
            server_cpu = _process_cpu_seconds(server_pid[0]) - server_cpu
        finally:
            await scheduler.stop()
            await gateway.close()
    result = {
        "nodes": nodes,
        "pods": pods,
        "sync_s": round(synced - began, 3),
        "bind_s": round(done - synced, 3),
        "pods_per_s": round(pods / (done - synced), 1),
        "pods_per_s_with_sync": round(pods / (done - began), 1),
        "scheduler_cpu_s": round(cpu, 2),
        "server_cpu_s": round(server_cpu, 2),
        "bound": scheduler.executor.counts.bound,
        "conflicts": scheduler.executor.counts.bind_conflicts,
        "bind_failures": scheduler.executor.counts.bind_failures,
        "events": scheduler.executor.counts.events,
        "attempts": dict(scheduler.engine.stats.attempts),
    }
    if profiler is not None and profile_scheduler is not None:
        profiler.dump_stats(profile_scheduler)
    return result


@pytest.mark.parametrize(("nodes", "pods"), [(100, 500)])
def test_pod_scheduler_end_to_end(benchmark: BenchmarkFixture, nodes: int, pods: int) -> None:
    result = benchmark.pedantic(lambda: asyncio.run(measure(nodes, pods)), rounds=1)
    benchmark.extra_info.update(result)
    assert result["bound"] == pods
    assert result["conflicts"] == 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m perf.test_pod_scheduler_e2e_bench")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--bind-concurrency", type=int, default=32)
    parser.add_argument("--profile-scheduler", type=Path, help="cProfile stats of the scheduler")
    parser.add_argument("--profile-server", type=Path, help="cProfile stats of the API server")
    args = parser.parse_args()
    result = asyncio.run(
        measure(
            args.nodes,
            args.pods,
            args.bind_concurrency,
            profile_scheduler=args.profile_scheduler,
            profile_server=args.profile_server,
        )
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()

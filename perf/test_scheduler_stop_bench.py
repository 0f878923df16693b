"""SIGTERM to exit of `placement scheduler run` (issue 43: at most 1 s, nothing lost): N nodes x
M pending pods on the embedded API server in a separate process, the scheduler as a user runs
it (a process, `--kubeconfig`), SIGTERM as soon as it has bound its first pod (writes queued
and on the wire), timed until the process has exited; then the pods left pending are counted
(`tests/controllers/cli/test_scheduler_stop.py` checks that a next scheduler binds them).

    python -m perf.test_scheduler_stop_bench --nodes 500 --pods 3000

prints one JSON line: `stop_s` (SIGTERM to exit while binding), the pods bound by then, the
scheduler's own account of the stop (writes not sent, cancelled on the wire).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from apis.core import Pod
from tests.controllers.addons.cluster import create_all, node, pod, server_process
from tests.controllers.cli.test_scheduler_stop import Scheduler, kubeconfig_for


async def measure(nodes: int, pods: int) -> dict[str, Any]:
    async with server_process() as (url, gateway):
        await create_all(gateway, [node(f"n-{i:05d}", cpu="64", pods=500) for i in range(nodes)])
        await create_all(gateway, [pod(f"p-{i:06d}", "10m", "16Mi") for i in range(pods)], 64)
        with tempfile.TemporaryDirectory() as folder:
            scheduler = await Scheduler.start(kubeconfig_for(url, Path(folder)))
            await scheduler.wait_for(" bound default/")
            code, seconds = await scheduler.stop()
        items = (await gateway.list(Pod)).items
        stopping = [line for line in scheduler.lines if "stopping:" in line]
    return {
        "nodes": nodes,
        "pods": pods,
        "exit_code": code,
        "stop_s": round(seconds, 3),
        "bound_at_stop": sum(1 for p in items if p.spec.node_name),
        "stop_line": stopping[0].split("stopping: ", 1)[-1] if stopping else "",
    }


@pytest.mark.parametrize(("nodes", "pods"), [(50, 1000)])
def test_scheduler_stop(benchmark: BenchmarkFixture, nodes: int, pods: int) -> None:
    result = benchmark.pedantic(lambda: asyncio.run(measure(nodes, pods)), rounds=1)
    benchmark.extra_info.update(result)
    print(json.dumps(result))
    assert result["exit_code"] == 0
    assert 0 < result["bound_at_stop"] < pods


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m perf.test_scheduler_stop_bench")
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=3000)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.nodes, args.pods))))


if __name__ == "__main__":
    main()

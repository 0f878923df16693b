"""`placement scheduler simulate|run --config` with kube-scheduler's own file: a
KubeSchedulerConfiguration of two profiles places the pods of both names (simulate, and run
against an embedded API server through the real client); a bad file is one line per problem,
each naming the file and the field."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from apis.core import Lease, Pod
from controllers.addons.gateway import PodGateway
from controllers.cli.common import EXIT_ERROR, EXIT_OK
from controllers.kube.config import ClusterAccess, new_api_client
from tests.controllers.addons.cluster import node, pod
from tests.controllers.cli.samples import run

ROOT = Path(__file__).resolve().parents[3]
NOW = ["--now", "2026-01-01T00:00:00Z"]

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: scheduler-plugins-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
      - name: CapacityScheduling
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
- schedulerName: bin-packer
  plugins:
    multiPoint:
      disabled: [{name: CapacityScheduling}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy: {type: MostAllocated}
"""

WORLD = """\
apiVersion: v1
kind: Node
metadata: {name: big}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: busy}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: resident, namespace: shop}
spec:
  nodeName: busy
  containers: [{name: c, resources: {requests: {cpu: "3"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: spread, namespace: shop}
spec:
  schedulerName: scheduler-plugins-scheduler
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: packed, namespace: shop}
spec:
  schedulerName: bin-packer
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: elsewhere, namespace: shop}
spec:
  schedulerName: someone-else
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def simulate_with_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], world_text: str
) -> tuple[list[str], list[dict[str, Any]]]:
    """`scheduler simulate` of `world_text` with CONFIG: its arguments, and its `-o json` items."""
    config = write(tmp_path, "config.yaml", CONFIG)
    world = write(tmp_path, "world.yaml", world_text)
    argv = ["scheduler", "simulate", "-f", world, "--config", config, *NOW]
    code, out, err = run(capsys, *argv, "-o", "json")
    assert code == EXIT_OK, err
    items: list[dict[str, Any]] = json.loads(out)["items"]
    return argv, items


def test_simulate_runs_every_profile_of_a_kube_scheduler_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, items = simulate_with_config(tmp_path, capsys, WORLD)
    nodes = {
        item["metadata"]["name"]: item["spec"].get("nodeName")
        for item in items
        if item["kind"] == "Pod"
    }
    # LeastAllocated (first profile) takes the emptier node, MostAllocated the fuller one.
    assert nodes == {"resident": "busy", "spread": "big", "packed": "busy", "elsewhere": None}
    code, out, err = run(capsys, *argv, "-o", "wide")
    assert code == EXIT_OK, err
    (row,) = [line for line in out.splitlines() if " elsewhere " in line]
    assert "OtherScheduler" in row
    assert "this simulation runs 'scheduler-plugins-scheduler', 'bin-packer'" in row


PREEMPTION = """\
apiVersion: v1
kind: Node
metadata: {name: only}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: low, namespace: shop}
spec:
  nodeName: only
  priority: 0
  containers: [{name: c, resources: {requests: {cpu: "2"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: vip, namespace: shop}
spec:
  schedulerName: bin-packer
  priority: 100
  containers: [{name: c, resources: {requests: {cpu: "2"}}}]
"""


def test_a_victim_is_told_the_name_of_the_profile_that_preempted_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, items = simulate_with_config(tmp_path, capsys, PREEMPTION)
    assert [i["spec"].get("nodeName") for i in items if i["metadata"]["name"] == "vip"] == ["only"]
    (low,) = [i for i in items if i["kind"] == "Pod" and i["metadata"]["name"] == "low"]
    (mark,) = [c for c in low["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    # kube's words with the preemptor's scheduler: the second profile, not the first.
    assert (mark["status"], mark["reason"], mark["message"]) == (
        "True",
        "PreemptionByScheduler",
        "bin-packer: preempting to accommodate a higher priority pod",
    )


def test_a_bad_kube_scheduler_configuration_is_one_line_per_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = CONFIG.replace("permitWaitingTimeSeconds: 10", "permitWaitingTimeSeconds: -1").replace(
        "- name: CapacityScheduling\n", "- name: CapacitySchedulng\n"
    )
    config = write(tmp_path, "config.yaml", bad)
    world = write(tmp_path, "world.yaml", WORLD)
    code, out, err = run(capsys, "scheduler", "simulate", "-f", world, "--config", config)
    assert code == EXIT_ERROR
    assert out == ""
    assert err.strip().splitlines() == [
        f"{config}: profiles[0].plugins.multiPoint.enabled[1].name: unknown plugin "
        '"CapacitySchedulng" (did you mean "CapacityScheduling"?)',
        f"{config}: profiles[0].pluginConfig[0].args.permitWaitingTimeSeconds: "
        "Invalid value: -1: must be non-negative",
    ]


def _env() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")
    }


async def _bound(gateway: PodGateway, name: str) -> Pod:
    async with asyncio.timeout(20):
        while True:
            found = await gateway.get(Pod, name, namespace="default")
            phase = found.status.phase if found.status else None
            if found.spec.node_name and phase == "Running":
                return found
            await asyncio.sleep(0.1)


async def _metrics(address: str) -> str:
    """/metrics once each profile's binding is counted (confirmed by the informer)."""
    async with aiohttp.ClientSession() as session:
        async with asyncio.timeout(10):
            while True:
                async with session.get(f"http://{address}/metrics") as response:
                    text = await response.text()
                if text.count('result="scheduled"} 1.0') >= 2:
                    return text
                await asyncio.sleep(0.1)


@pytest.mark.asyncio
async def test_run_starts_with_a_kube_scheduler_configuration_and_serves_both_profiles(
    tmp_path: Path,
) -> None:
    # No leaderElection: kube-scheduler's default elects a leader, over a Lease named after
    # the first profile (in kube-system), with the file's timings.
    text = CONFIG.replace("leaderElect: false", "leaseDuration: 8s\n  renewDeadline: 6s")
    config = write(tmp_path, "config.yaml", text)
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "controllers.cli.main", "scheduler", "run", "--kubelet"),
        *("--http-addr", "127.0.0.1:0", "--config", config),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=_env(),
    )
    assert process.stdout is not None and process.stderr is not None
    try:
        async with asyncio.timeout(30):
            first = (await process.stdout.readline()).decode()
            await process.stdout.readline()  # export KUBECONFIG=...
            running = (await process.stdout.readline()).decode()
        assert "embedded API server with simulated kubelets listening on" in first, first
        assert "scheduler scheduler-plugins-scheduler, bin-packer running" in running, running
        url = first.rsplit(" ", 1)[1].strip()
        gateway = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
        try:
            await gateway.create(node("big", cpu="8"))
            await gateway.create(node("small", cpu="2"))
            await gateway.create(pod("spread", cpu="1", scheduler="scheduler-plugins-scheduler"))
            spread = await _bound(gateway, "spread")
            await gateway.create(pod("packed", cpu="1", scheduler="bin-packer"))
            packed = await _bound(gateway, "packed")
            lease = await gateway.get(Lease, "scheduler-plugins-scheduler", namespace="kube-system")
            address = running.rsplit("http on ", 1)[1].strip()
            metrics = await _metrics(address)
        finally:
            await gateway.close()
        for profile in ("scheduler-plugins-scheduler", "bin-packer"):
            series = f'scheduler_schedule_attempts_total{{profile="{profile}",result="scheduled"}}'
            assert f"{series} 1.0" in metrics, metrics
        assert spread.spec.node_name == "big"  # LeastAllocated: the emptier node
        assert packed.spec.node_name == "small"  # MostAllocated: the fuller node
        assert lease.spec is not None and lease.spec.lease_duration_seconds == 8
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(20):
            code = await process.wait()
        assert code == 0, (await process.stderr.read()).decode()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

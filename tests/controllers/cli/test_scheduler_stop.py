"""`placement scheduler run` stopped by SIGTERM in the middle of binding, as a user (or the
kubelet, or a rolling update) stops it: exit 0, nothing lost, and a next scheduler finishes.

Nothing lost, as the API shows it: each pod is bound or pending, never pending with a node
nominated; no node holds more than it fits; and a scheduler started afterwards (the next
leader) binds every pod left pending, each node then exactly full, so the first one's binds
in flight either landed or left their pods for it. The time from SIGTERM to exit is printed
(`pytest -s`), not asserted: it depends on the machine; `perf/test_scheduler_stop_bench.py`
reports it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from apis.core import Pod
from controllers.addons.gateway import PodGateway
from tests.controllers.addons.cluster import create_all, node, pod, server_process

ROOT = Path(__file__).resolve().parents[3]
NODES = 10
PER_NODE = 60  # 100m pods on 6-cpu nodes: the cluster fits exactly NODES x PER_NODE pods


def kubeconfig_for(url: str, folder: Path) -> Path:
    path = folder / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: '{url}'}}}}]\n"
        "users: [{name: u, user: {}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    return path


class Scheduler:
    """`placement scheduler run` as a subprocess, its output (log lines on stderr) read as it
    comes, so that a full pipe never holds it up."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def start(cls, kubeconfig: Path) -> Scheduler:
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "controllers.cli.main", "scheduler", "run"),
            *("--kubeconfig", str(kubeconfig), "--http-addr", "127.0.0.1:0"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=env,
        )
        return cls(process)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for line in self.process.stdout:
            self.lines.append(line.decode().rstrip())

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    async def wait_for(self, needle: str) -> None:
        async with asyncio.timeout(30):
            while not any(needle in line for line in self.lines):
                assert self.process.returncode is None, f"exited:\n{self.output}"
                await asyncio.sleep(0.005)

    async def stop(self) -> tuple[int, float]:
        """SIGTERM; the exit code and the seconds until the process exited."""
        started = time.perf_counter()
        self.process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(20):
            code = await self.process.wait()
        seconds = time.perf_counter() - started
        await self._reader
        return code, seconds


def check_nothing_lost(pods: list[Pod]) -> dict[str, int]:
    """Each pod bound or plainly pending, no node over what it fits; pods per node."""
    per_node: dict[str, int] = {}
    for item in pods:
        status = item.status
        nominated = status.nominated_node_name if status is not None else None
        assert not nominated, f"{item.metadata.name} pending, nominated to {nominated}"
        if item.spec.node_name:
            per_node[item.spec.node_name] = per_node.get(item.spec.node_name, 0) + 1
    assert all(count <= PER_NODE for count in per_node.values()), per_node
    return per_node


@pytest.mark.asyncio
async def test_sigterm_while_binding_exits_0_and_the_next_scheduler_binds_the_rest(
    tmp_path: Path,
) -> None:
    total = NODES * PER_NODE
    async with server_process() as (url, gateway):
        await create_all(gateway, [node(f"n-{i}", cpu="6", pods=200) for i in range(NODES)])
        await create_all(gateway, [pod(f"p-{i}", cpu="100m") for i in range(total)])
        kubeconfig = kubeconfig_for(url, tmp_path)

        first = await Scheduler.start(kubeconfig)
        await first.wait_for(" bound default/")  # binding has begun
        code, seconds = await first.stop()
        assert code == 0, first.output
        stopping = [line for line in first.lines if "stopping:" in line]
        assert stopping, first.output  # what the stop left: writes not sent, cancelled
        pods = (await gateway.list(Pod)).items
        bound = sum(check_nothing_lost(pods).values())
        assert 0 < bound < total, f"the stop did not come while binding ({bound} bound)"
        print(f"\nSIGTERM to exit while binding: {seconds:.3f}s ({bound}/{total} bound)")
        print(stopping[0])

        second = await Scheduler.start(kubeconfig)
        await second.wait_for("running")
        await wait_all_bound(gateway, total)
        code, seconds = await second.stop()
        assert code == 0, second.output
        per_node = check_nothing_lost((await gateway.list(Pod)).items)
        assert per_node == {f"n-{i}": PER_NODE for i in range(NODES)}
        print(f"SIGTERM to exit of the next one, all bound: {seconds:.3f}s")


async def wait_all_bound(gateway: PodGateway, total: int) -> None:
    async with asyncio.timeout(30):
        while True:
            pods = (await gateway.list(Pod)).items
            if sum(1 for p in pods if p.spec.node_name) == total:
                return
            await asyncio.sleep(0.1)

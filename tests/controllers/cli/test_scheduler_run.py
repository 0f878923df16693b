"""`placement scheduler run` as a user starts it: a process, an embedded API server with
simulated kubelets when no cluster is configured, pods bound and running through the real
client, a clean stop on SIGTERM; and its start-up errors as one line."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from apis.core import Pod
from controllers.addons.gateway import PodGateway
from controllers.kube.config import ClusterAccess, new_api_client
from tests.controllers.addons.cluster import node, pod

ROOT = Path(__file__).resolve().parents[3]


def _env() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")
    }


@pytest.mark.asyncio
async def test_run_without_a_cluster_starts_an_embedded_one_and_binds_its_pods() -> None:
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "controllers.cli.main", "scheduler", "run", "--kubelet"),
        *("--http-addr", "127.0.0.1:0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=_env(),
    )
    assert process.stdout is not None and process.stderr is not None
    try:
        async with asyncio.timeout(30):
            first = (await process.stdout.readline()).decode()
            kubeconfig_line = (await process.stdout.readline()).decode()
            running = (await process.stdout.readline()).decode()
        assert "embedded API server with simulated kubelets listening on" in first, first
        assert kubeconfig_line.startswith("export KUBECONFIG="), kubeconfig_line
        assert "scheduler ocm-pod-scheduler running" in running, running
        kubeconfig = Path(kubeconfig_line.split("=", 1)[1].strip())
        assert kubeconfig.is_file()
        url = first.rsplit(" ", 1)[1].strip()
        gateway = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
        try:
            await gateway.create(node("n-0", cpu="1"))
            await gateway.create(pod("fits", cpu="600m"))
            await gateway.create(pod("too-big", cpu="2"))
            async with asyncio.timeout(20):
                while True:
                    fits = await gateway.get(Pod, "fits", namespace="default")
                    phase = fits.status.phase if fits.status else None
                    if fits.spec.node_name and phase == "Running":
                        break
                    await asyncio.sleep(0.1)
                while True:
                    big = await gateway.get(Pod, "too-big", namespace="default")
                    conditions = (big.status.conditions if big.status else None) or []
                    if any(c.get("reason") == "Unschedulable" for c in conditions):
                        break
                    await asyncio.sleep(0.1)
            assert fits.spec.node_name == "n-0"
            assert big.spec.node_name is None
            (message,) = [c["message"] for c in conditions if c.get("type") == "PodScheduled"]
            assert message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
        finally:
            await gateway.close()
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(20):
            code = await process.wait()
        assert code == 0
        assert not kubeconfig.exists(), "the embedded server's kubeconfig folder is removed"
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


ARGS = ("--kubelet", "--kubeconfig")


def test_kubelet_without_an_embedded_server_is_refused(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "controllers.cli.main", "scheduler", "run"),
            *ARGS,
            str(kubeconfig),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=60,
    )
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "--kubelet simulates kubelets of an embedded server only" in line

"""Volumes end to end: `placement scheduler run --kubelet` as a user starts it (its own process,
an embedded API server with simulated kubelets), the StatefulSet-on-local-volumes sample applied
with kubectl, the StatefulSet's claims and pods created as its controller would: each claim is
bound by the scheduler's PreBind to a local volume, each pod runs on its volume's node, and
`kubectl get pv`, `pvc` and `storageclass` show them as kubectl prints them."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from apis.core import Node, Pod
from apis.storage import PersistentVolume, PersistentVolumeClaim
from apis.workloads import StatefulSet
from controllers.addons.gateway import PodGateway
from controllers.cli.crds import SAMPLES_DIR
from controllers.cli.manifests import load_paths
from controllers.kube.config import ClusterAccess, new_api_client
from placement.pods.simulator.workloads import expand
from tests.controllers.cli.test_scheduler_run import ROOT, _env
from tests.controllers.embedded.hub import eventually, kubectl

SAMPLE = SAMPLES_DIR / "pods" / "volumes" / "statefulset-local-pvs.yaml"


def as_created(wire: dict[str, object]) -> dict[str, object]:
    """What a controller sends: no uid, creation time or owner (the server sets the first two;
    the StatefulSet stored by kubectl has another uid than the one expansion derives)."""
    meta = dict(wire["metadata"])  # type: ignore[call-overload]
    for key in ("uid", "creationTimestamp", "ownerReferences"):
        meta.pop(key, None)
    return {**wire, "metadata": meta}


async def started(process: asyncio.subprocess.Process) -> tuple[str, Path]:
    assert process.stdout is not None
    async with asyncio.timeout(30):
        first = (await process.stdout.readline()).decode()
        kubeconfig_line = (await process.stdout.readline()).decode()
        running = (await process.stdout.readline()).decode()
    assert "listening on" in first and "running" in running, (first, running)
    return first.rsplit(" ", 1)[1].strip(), Path(kubeconfig_line.split("=", 1)[1].strip())


@pytest.mark.asyncio
async def test_scheduler_run_binds_each_statefulset_claim_to_a_local_volume() -> None:
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "controllers.cli.main", "scheduler", "run", "--kubelet"),
        *("--http-addr", "127.0.0.1:0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=_env(),
    )
    try:
        url, config = await started(process)
        code, _, err = await kubectl(config, "apply", "-f", str(SAMPLE))
        assert code == 0, err
        objects = [o.obj for o in load_paths([SAMPLE]).objects]
        (sts,) = [o for o in objects if isinstance(o, StatefulSet)]
        expansion = expand(sts, datetime.now(UTC))
        gateway = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
        try:
            for node in (o for o in objects if isinstance(o, Node)):  # apply leaves status out
                status = node.to_wire()["status"]
                await gateway.patch_status(Node, node.name, {"status": status})
            for claim in expansion.objects:
                await gateway.create(
                    PersistentVolumeClaim.model_validate(as_created(claim.to_wire()))
                )
            for member in expansion.pods:
                await gateway.create(Pod.model_validate(as_created(member.to_wire())))

            async def all_running() -> list[Pod]:
                pods = (await gateway.list(Pod, "storage")).items
                running = [p for p in pods if p.status and p.status.phase == "Running"]
                return running if len(running) == 3 else []

            pods = await eventually(all_running, timeout=30)

            async def claims_bound() -> dict[str, PersistentVolumeClaim]:
                found = {
                    c.name: c for c in (await gateway.list(PersistentVolumeClaim, "storage")).items
                }
                done = all(c.status and c.status.phase == "Bound" for c in found.values())
                return found if done and len(found) == 3 else {}

            claims = await eventually(claims_bound, timeout=30)
            volumes = {v.name: v for v in (await gateway.list(PersistentVolume)).items}
        finally:
            await gateway.close()
        for member in pods:
            claim = claims[f"data-{member.name}"]
            assert claim.spec is not None and claim.spec.volume_name
            volume = volumes[claim.spec.volume_name]
            assert volume.spec is not None and volume.spec.claim_ref is not None
            assert volume.spec.claim_ref.name == claim.name
            assert volume.status is not None and volume.status.phase == "Bound"
            assert member.spec.node_name == volume.name.rsplit("-", 1)[0]  # disk-N-...
        assert len({p.spec.node_name for p in pods}) == 3
        code, out, err = await kubectl(config, "get", "pv")
        assert code == 0, err
        rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
        assert out.split()[:7] == [
            *("NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY", "STATUS"),
        ]
        on_disk_3 = rows["disk-3-spare"][5]  # the member on disk-3 took its smallest volume
        assert rows["disk-3-spare"][1:5] == ["10Gi", "RWO", "Retain", "Bound"]
        assert on_disk_3.startswith("storage/data-kv-"), on_disk_3
        assert rows["disk-1-tiny"][4] == "Available" and rows["disk-3-ssd"][4] == "Available"
        code, out, err = await kubectl(config, "get", "pvc", "-n", "storage")
        assert code == 0, err
        claim_rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
        assert claim_rows[on_disk_3.split("/")[1]][1:6] == [
            *("Bound", "disk-3-spare", "10Gi", "RWO", "local-ssd"),
        ]
        code, out, err = await kubectl(config, "get", "storageclass")
        assert code == 0, err
        (row,) = [line.split() for line in out.splitlines()[1:]]
        assert row[:5] == [
            "local-ssd",
            "kubernetes.io/no-provisioner",
            "Retain",
            "WaitForFirstConsumer",
            "false",
        ]
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(20):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

"""VolumeAttachments in `placement scheduler run --kubelet` (its own process, an embedded API
server with simulated kubelets): the attach-limits sample applied with kubectl, plus a volume
still attached to attach-2 with no pod; the scheduler's VolumeAttachment informer gives
NodeVolumeLimits the attachment, so attach-2's only slot is taken and just attach-1's two slots
are used; `kubectl get volumeattachments` prints kube's columns; once the attachment is deleted
(the volume detached) a waiting pod is retried and takes attach-2's slot."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from apis.core import Node, Pod
from controllers.addons.gateway import PodGateway
from controllers.cli.manifests import load_paths
from controllers.kube.config import ClusterAccess, new_api_client
from tests.controllers.addons.test_volume_limits_run import scheduled_message
from tests.controllers.addons.test_volumes_e2e import started
from tests.controllers.cli.test_scheduler_run import ROOT, _env
from tests.controllers.embedded.hub import eventually, kubectl
from tests.placement.pods.test_volume_limits_engine import SAMPLE

LINGERING = """
apiVersion: v1
kind: PersistentVolume
metadata: {name: ebs-old}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ebs
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-old}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: csi-old}
spec:
  attacher: ebs.csi.aws.com
  nodeName: attach-2
  source: {persistentVolumeName: ebs-old}
"""


def placed(pods: list[Pod]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for pod in pods:
        if pod.status and pod.status.phase == "Running" and pod.spec.node_name:
            found.setdefault(pod.spec.node_name, []).append(pod.name)
    return found


@pytest.mark.asyncio
async def test_scheduler_run_counts_a_lingering_attachment_until_it_is_deleted() -> None:
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
        gateway = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
        try:
            code, _, err = await kubectl(config, "apply", "-f", "-", stdin=LINGERING)
            assert code == 0, err
            code, _, err = await kubectl(config, "apply", "-f", str(SAMPLE))
            assert code == 0, err
            for node in (o.obj for o in load_paths([SAMPLE]).objects):
                if isinstance(node, Node):  # apply leaves the status out
                    await gateway.patch_status(
                        Node, node.name, {"status": node.to_wire()["status"]}
                    )

            async def settled() -> list[Pod]:
                pods = (await gateway.list(Pod, "attach")).items
                waiting = [p for p in pods if "exceed max volume count" in scheduled_message(p)]
                return (
                    pods if len(waiting) == 2 and sum(map(len, placed(pods).values())) == 3 else []
                )

            pods = await eventually(settled, timeout=20)
            on = placed(pods)
            assert "attach-2" not in on  # its one slot is held by the attached volume
            assert len(on["attach-1"]) == 3  # two slots, the third pod sharing a volume
            code, out, err = await kubectl(config, "get", "volumeattachments")
            assert code == 0, err
            lines = [line.split() for line in out.splitlines()]
            assert lines[0] == ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"]
            assert lines[1][:5] == ["csi-old", "ebs.csi.aws.com", "ebs-old", "attach-2", "false"]

            code, _, err = await kubectl(config, "delete", "volumeattachment", "csi-old")
            assert code == 0, err

            async def detached() -> list[Pod]:
                pods = (await gateway.list(Pod, "attach")).items
                return pods if len(placed(pods).get("attach-2", [])) == 1 else []

            await eventually(detached, timeout=20)
        finally:
            await gateway.close()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

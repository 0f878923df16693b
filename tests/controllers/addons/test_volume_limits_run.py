"""NodeVolumeLimits in `placement scheduler run --kubelet` (its own process, an embedded API
server with simulated kubelets): the attach-limits sample applied with kubectl, CSINodes
included; the scheduler's CSINode informer gives it the limits, three pods take the three attach
slots, the fourth waits with kube's message, the pod sharing a volume runs beside its owner;
`kubectl get csinodes` prints kube's columns."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from apis.core import Node, Pod
from apis.storage import PersistentVolume, PersistentVolumeClaim
from controllers.addons.gateway import PodGateway
from controllers.cli.manifests import load_paths
from controllers.kube.config import ClusterAccess, new_api_client
from tests.controllers.addons.test_volumes_e2e import started
from tests.controllers.cli.test_scheduler_run import ROOT, _env
from tests.controllers.embedded.hub import eventually, kubectl
from tests.placement.pods.test_volume_limits_engine import SAMPLE

LIMITS = {"attach-1": 2, "attach-2": 1}


def scheduled_message(pod: Pod) -> str:
    conditions = (pod.to_wire().get("status") or {}).get("conditions") or []
    return str(next((c.get("message", "") for c in conditions if c["type"] == "PodScheduled"), ""))


@pytest.mark.asyncio
async def test_scheduler_run_keeps_each_node_within_its_csinode_attach_limit() -> None:
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
            code, _, err = await kubectl(config, "apply", "-f", str(SAMPLE))
            assert code == 0, err
            for node in (o.obj for o in load_paths([SAMPLE]).objects):
                if isinstance(node, Node):  # apply leaves the status out
                    await gateway.patch_status(
                        Node, node.name, {"status": node.to_wire()["status"]}
                    )

            async def settled() -> list[Pod]:
                pods = (await gateway.list(Pod, "attach")).items
                running = [p for p in pods if p.status and p.status.phase == "Running"]
                waiting = [p for p in pods if "exceed max volume count" in scheduled_message(p)]
                return pods if len(running) == 4 and len(waiting) == 1 else []

            pods = await eventually(settled, timeout=30)
            claims = {
                c.name: c for c in (await gateway.list(PersistentVolumeClaim, "attach")).items
            }
            volumes = {v.name: v for v in (await gateway.list(PersistentVolume)).items}
        finally:
            await gateway.close()
        attached: dict[str, set[str]] = {}
        for pod in pods:
            if not pod.spec.node_name:
                assert pod.name.startswith("app-")
                assert scheduled_message(pod).startswith(
                    "0/2 nodes are available: 2 node(s) exceed max volume count."
                )
                continue
            for source in pod.spec.volumes or ():
                assert source.persistent_volume_claim is not None
                claim = claims[source.persistent_volume_claim.claim_name]
                assert claim.spec is not None and claim.spec.volume_name
                pv = volumes[claim.spec.volume_name]
                assert pv.spec is not None
                handle = (pv.spec.model_extra or {})["csi"]["volumeHandle"]
                attached.setdefault(pod.spec.node_name, set()).add(handle)
        assert {n: len(v) for n, v in attached.items()} == LIMITS  # every slot taken, none over
        by_name = {p.name: p.spec.node_name for p in pods}
        assert by_name["backup"] == by_name["app-0"]  # its volume is attached there already
        code, out, err = await kubectl(config, "get", "csinodes")
        assert code == 0, err
        lines = [line.split() for line in out.splitlines()]
        assert lines[0] == ["NAME", "DRIVERS", "AGE"]
        assert [row[:2] for row in lines[1:]] == [["attach-1", "1"], ["attach-2", "1"]]
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

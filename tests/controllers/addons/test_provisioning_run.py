"""Dynamic provisioning in `scheduler run` on the embedded API server, with a stand-in
provisioner: PreBind writes the chosen node on the claim (`volume.kubernetes.io/selected-node`)
and waits; with no provisioner the wait times out after `bindTimeoutSeconds`, the pod goes back
to the queue with the claim's node kept (as kube leaves it), and once a provisioner makes the
volume the PV controller binds the claim and the pod is bound to that node."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from apis.core import Pod
from apis.registry import parse_as
from apis.storage import (
    SELECTED_NODE_ANNOTATION,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from controllers.addons.gateway import PodGateway
from controllers.addons.scheduler import SchedulerOptions, _start
from controllers.embedded.apiserver import EmbeddedApiServer
from controllers.kube.config import ClusterAccess, new_api_client
from tests.controllers.addons.cluster import SCHEDULER, node, pod
from tests.controllers.embedded.hub import eventually
from tests.e2e.provisioner import StandInProvisioner

ZONE = "topology.kubernetes.io/zone"
DRIVER = "disk.csi.example.com"


def config(path: Path) -> Path:
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": SCHEDULER,
                "pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 1}}],
            }
        ],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def fast_class() -> StorageClass:
    doc: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "fast"},
        "provisioner": DRIVER,
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": ["z2"]}]}],
    }
    return parse_as(StorageClass, doc)


def data_claim() -> PersistentVolumeClaim:
    doc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "fast",
            "resources": {"requests": {"storage": "2Gi"}},
        },
    }
    return parse_as(PersistentVolumeClaim, doc)


@pytest.mark.asyncio
async def test_a_timed_out_provisioning_is_retried_and_bound_once_a_provisioner_answers(
    tmp_path: Path,
) -> None:
    server = EmbeddedApiServer()
    url = await server.start()
    gw = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
    opened: list[Any] = []
    try:
        for name, zone in (("n1", "z1"), ("n2", "z2"), ("n3", "z1")):
            await gw.create(node(name, labels={ZONE: zone}))
        await gw.create(fast_class())
        await gw.create(data_claim())
        path = config(tmp_path / "config.yaml")
        options = SchedulerOptions(url=url, http_addr=None, config=path, status_controller="off")
        await _start(options, opened)
        volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
        await gw.create(pod("db", volumes=volumes))

        async def timed_out() -> str:
            found = await gw.get(Pod, "db", "default")
            for c in (found.status.conditions if found.status else None) or []:
                if c["type"] == "PodScheduled" and "deadline exceeded" in c.get("message", ""):
                    return str(c["message"])
            return ""

        message = await eventually(timed_out, timeout=10)
        # kube's words for a wait that ran out
        assert message == (
            'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'
        )
        claim = await gw.get(PersistentVolumeClaim, "data", "default")
        assert (claim.metadata.annotations or {})[SELECTED_NODE_ANNOTATION] == "n2"
        assert not (claim.spec and claim.spec.volume_name)
        assert not (await gw.get(Pod, "db", "default")).spec.node_name

        async with StandInProvisioner(gw, DRIVER) as provisioner:

            async def bound() -> str:
                return (await gw.get(Pod, "db", "default")).spec.node_name or ""

            assert await eventually(bound, timeout=10) == "n2"
        (made,) = provisioner.made
        claim = await gw.get(PersistentVolumeClaim, "data", "default")
        assert made == ("default/data", "n2", f"pvc-{claim.metadata.uid}")
        assert claim.spec is not None and claim.spec.volume_name == made[2]
        volume = await gw.get(PersistentVolume, made[2])
        assert volume.spec is not None and volume.spec.claim_ref is not None
        assert volume.spec.claim_ref.name == "data"
        await asyncio.sleep(0)
    finally:
        for item in reversed(opened):
            await item.stop() if hasattr(item, "stop") else await item.close()
        await gw.close()
        await server.stop()

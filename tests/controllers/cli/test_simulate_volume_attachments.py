"""The attach-limits sample with VolumeAttachments through `placement scheduler simulate`: a
volume still attached to attach-2 after its pod left holds attach-2's only slot, and the
attachment of app-0's own volume to attach-1 is counted once with app-0, so two pods fit where
three did, and the rest wait with kube's message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controllers.cli.common import EXIT_OK
from controllers.cli.crds import SAMPLES_DIR
from tests.controllers.cli.samples import run

SAMPLE = SAMPLES_DIR / "pods" / "volumes" / "attach-limits.yaml"
ATTACHMENTS = """
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: ebs-old}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ebs
  persistentVolumeReclaimPolicy: Retain
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-old}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: csi-old}
spec:
  attacher: ebs.csi.aws.com
  nodeName: attach-2
  source: {persistentVolumeName: ebs-old}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: csi-data-0}
spec:
  attacher: ebs.csi.aws.com
  nodeName: attach-1
  source: {persistentVolumeName: ebs-data-0}
"""


def test_attached_volumes_take_their_nodes_slots(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    scenario = tmp_path / "attached.yaml"
    scenario.write_text(SAMPLE.read_text(encoding="utf-8") + ATTACHMENTS, encoding="utf-8")
    argv = ["scheduler", "simulate", "-f", str(scenario), "-o", "json"]
    code, out, _ = run(capsys, *argv, "--now", "2026-11-23T00:00:00Z")
    assert code == EXIT_OK
    pods = {i["metadata"]["name"]: i for i in json.loads(out)["items"] if i["kind"] == "Pod"}
    nodes = {name: p["spec"].get("nodeName") for name, p in pods.items()}
    assert nodes == {
        "app-0": "attach-1",
        "app-1": "attach-1",
        "app-2": None,
        "app-3": None,
        "backup": "attach-1",
    }
    for name in ("app-2", "app-3"):
        (condition,) = pods[name]["status"]["conditions"]
        assert condition["message"].startswith(
            "0/2 nodes are available: 2 node(s) exceed max volume count."
        )

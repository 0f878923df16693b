"""Dynamic provisioning through `placement scheduler simulate`: the StatefulSet sample on a
CSI class (allowedTopologies, published CSIStorageCapacity) places every member where the class
can provision, one volume each made by the simulated provisioner on the member's node; a
what-if with less capacity leaves the members Pending with kube's reasons."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controllers.cli.common import EXIT_OK
from controllers.cli.crds import SAMPLES_DIR
from tests.controllers.cli.samples import run

SAMPLE = SAMPLES_DIR / "pods" / "volumes" / "statefulset-dynamic.yaml"
HOST = "kubernetes.io/hostname"


def simulate(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, dict[str, Any]]:
    argv = ["scheduler", "simulate", "-f", str(path), "-o", "json"]
    code, out, _ = run(capsys, *argv, "--now", "2026-11-23T00:00:00Z")
    assert code == EXIT_OK
    by_kind: dict[str, dict[str, Any]] = {}
    for item in json.loads(out)["items"]:
        by_kind.setdefault(item["kind"], {})[item["metadata"]["name"]] = item
    return by_kind


def test_every_member_is_placed_with_one_provisioned_volume_on_its_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = simulate(capsys, SAMPLE)
    pods, claims, volumes = (found[k] for k in ("Pod", "PersistentVolumeClaim", "PersistentVolume"))
    assert sorted(claims) == ["data-db-0", "data-db-1", "data-db-2"]
    assert len(volumes) == 3  # one each, none before
    for ordinal in range(3):
        node = pods[f"db-{ordinal}"]["spec"]["nodeName"]
        assert node in ("disk-a1", "disk-a2")  # eu-west-1a: 1b lacks space, 1c is not allowed
        claim = claims[f"data-db-{ordinal}"]
        annotations = claim["metadata"]["annotations"]
        assert annotations["volume.kubernetes.io/selected-node"] == node
        assert annotations["volume.kubernetes.io/storage-provisioner"] == "disk.csi.example.com"
        assert claim["status"]["phase"] == "Bound"
        volume = volumes[claim["spec"]["volumeName"]]
        assert volume["metadata"]["name"] == f"pvc-{claim['metadata']['uid']}"
        assert volume["spec"]["claimRef"]["name"] == f"data-db-{ordinal}"
        assert volume["spec"]["capacity"] == {"storage": "10Gi"}
        assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
        (term,) = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert term["matchExpressions"] == [{"key": HOST, "operator": "In", "values": [node]}]
        assert volume["status"]["phase"] == "Bound"


def test_without_room_in_any_allowed_zone_the_members_wait_with_kubes_reasons(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    smaller = tmp_path / "smaller.yaml"
    smaller.write_text(
        SAMPLE.read_text().replace("maximumVolumeSize: 100Gi", "maximumVolumeSize: 5Gi")
    )
    found = simulate(capsys, smaller)
    assert "PersistentVolume" not in found  # nothing provisioned
    pod = found["Pod"]["db-0"]  # OrderedReady: the first member waits, the others are not made
    (scheduled,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled["message"] == (
        "0/4 nodes are available: 1 node(s) didn't find available persistent volumes to bind,"
        " 3 node(s) did not have enough free storage."
        " no new claims to deallocate, "
        "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )

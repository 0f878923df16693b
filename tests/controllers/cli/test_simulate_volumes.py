"""The StatefulSet-on-local-volumes sample through `placement scheduler simulate`: each member's
claim (from the volumeClaimTemplate) bound to the smallest local volume that fits, the member on
that volume's node, the volumes left over still Available."""

from __future__ import annotations

import json

import pytest

from controllers.cli.common import EXIT_OK
from controllers.cli.crds import SAMPLES_DIR
from tests.controllers.cli.samples import run

SAMPLE = SAMPLES_DIR / "pods" / "volumes" / "statefulset-local-pvs.yaml"


def test_the_statefulset_sample_binds_each_member_to_a_local_volume(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["scheduler", "simulate", "-f", str(SAMPLE), "-o", "json"]
    code, out, _ = run(capsys, *argv, "--now", "2026-11-23T00:00:00Z")
    assert code == EXIT_OK
    items = json.loads(out)["items"]
    by_kind: dict[str, dict[str, dict[str, object]]] = {}
    for item in items:
        by_kind.setdefault(item["kind"], {})[item["metadata"]["name"]] = item
    pods, claims, volumes = (
        by_kind["Pod"],
        by_kind["PersistentVolumeClaim"],
        by_kind["PersistentVolume"],
    )
    assert sorted(claims) == ["data-kv-0", "data-kv-1", "data-kv-2"]
    placed = {}
    for ordinal in range(3):
        claim: dict[str, object] = claims[f"data-kv-{ordinal}"]
        assert claim["status"]["phase"] == "Bound"  # type: ignore[index]
        assert claim["metadata"]["labels"] == {"tier": "storage", "app": "kv"}  # type: ignore[index]
        volume = volumes[claim["spec"]["volumeName"]]  # type: ignore[index]
        assert volume["spec"]["claimRef"]["name"] == f"data-kv-{ordinal}"  # type: ignore[index]
        assert volume["status"]["phase"] == "Bound"  # type: ignore[index]
        node = pods[f"kv-{ordinal}"]["spec"]["nodeName"]  # type: ignore[index]
        assert node == volume["metadata"]["name"].rsplit("-", 1)[0]  # type: ignore[index]
        placed[node] = volume["metadata"]["name"]  # type: ignore[index]
    # One member per node; on disk-3 the smallest volume that fits (10Gi, not 50Gi).
    assert placed == {"disk-1": "disk-1-ssd", "disk-2": "disk-2-ssd", "disk-3": "disk-3-spare"}
    left = {n for n, v in volumes.items() if v["status"]["phase"] == "Available"}  # type: ignore[index]
    assert left == {"disk-1-tiny", "disk-3-ssd"}

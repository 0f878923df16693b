"""The example add-on manager against the embedded hub: the placement controller decides the
Placement in four decision groups, and the ConfigMap goes out group 0 first (mandatory), then
`maxConcurrency` clusters at a time, into every selected cluster's namespace; `--dry-run` prints
the same rounds and writes nothing."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from apis.core import ConfigMap
from apis.rollout import RolloutStrategy
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway
from ocm_placement.examples.progressive_configmap import (
    NAMESPACE,
    PLACEMENT,
    embedded_hub,
    roll_out,
)

ROOT = Path(__file__).resolve().parents[2]


def progressive(concurrency: int | str) -> RolloutStrategy:
    return RolloutStrategy.model_validate(
        {
            "type": "Progressive",
            "progressive": {
                "mandatoryDecisionGroups": [{"groupIndex": 0}],
                "maxConcurrency": concurrency,
            },
        }
    )


@pytest.mark.asyncio
async def test_the_config_map_goes_out_canary_group_first_then_by_concurrency() -> None:
    async with embedded_hub() as url:
        gateway = await Gateway.connect(ClusterAccess(url=url))
        try:
            out = io.StringIO()
            rounds = await roll_out(gateway, NAMESPACE, PLACEMENT, progressive(4), out=out)
            assert rounds[0] == ["cluster-01", "cluster-02", "cluster-03"]  # decision group 0
            assert [len(r) for r in rounds[1:]] == [4, 4, 1]
            everywhere = sorted(c for r in rounds for c in r)
            assert everywhere == [f"cluster-{i:02d}" for i in range(1, 13)]
            for cluster in everywhere:
                cm = await gateway.get(ConfigMap, "example-config", cluster)
                assert cm.data is not None and cm.data["round"] in {"1", "2", "3", "4"}
            assert "rolled out to 12 clusters in 4 rounds" in out.getvalue()
        finally:
            await gateway.close()


def test_the_command_line_dry_run_prints_the_rounds_in_groups() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ocm_placement.examples.progressive_configmap",
            "--embedded",
            "--dry-run",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "placement addons/config-rollout: 12 clusters; group 0: 3, group 1: 3, group 2: 3, "
        "group 3: 3"
    )
    assert lines[1].startswith(
        "round 1: would apply ConfigMap example-config to cluster-01 (group 0)"
    )
    assert lines[-1] == "rolled out to 12 clusters in 4 rounds"


@pytest.mark.asyncio
async def test_the_command_line_against_a_hub_by_kubeconfig_dry_run(tmp_path: Path) -> None:
    async with embedded_hub() as url:
        kubeconfig = tmp_path / "hub.yaml"
        kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "hub", "cluster": {"server": url}}],
                    "users": [{"name": "hub", "user": {}}],
                    "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "hub"}}],
                    "current-context": "hub",
                }
            )
        )
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "ocm_placement.examples.progressive_configmap"),
            *("--kubeconfig", str(kubeconfig), "--dry-run"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=ROOT,
        )
        async with asyncio.timeout(120):  # a guard only
            out, err = await process.communicate()
        gateway = await Gateway.connect(ClusterAccess(url=url))
        try:
            written = (await gateway.list(ConfigMap)).items
        finally:
            await gateway.close()
    assert process.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[0].startswith("placement addons/config-rollout: 12 clusters; group 0: 3")
    assert lines[-1] == "rolled out to 12 clusters in 4 rounds"
    assert not [cm for cm in written if cm.name == "example-config"]  # a dry run writes nothing

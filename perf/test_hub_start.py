"""`python -m perf.hub_start` at a tiny size (a real control plane: only with
$KUBEBUILDER_ASSETS, as the e2e tier), and its pure parts: the objects, what counts as decided,
the table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from perf.hub_start import COLUMNS, cluster_docs, decided, placement_docs, table

ROOT = Path(__file__).resolve().parents[1]


def test_the_fleet_and_the_placements() -> None:
    clusters = cluster_docs(7)
    assert [c["metadata"]["name"] for c in clusters][:2] == ["c00000", "c00001"]
    assert {
        c["metadata"]["labels"]["cluster.open-cluster-management.io/clusterset"] for c in clusters
    } == {"hub-start"}
    placements = placement_docs(4, 3)
    assert [p["spec"]["numberOfClusters"] for p in placements] == [3] * 4
    assert ["predicates" in p["spec"] for p in placements] == [False, True, False, True]


def test_a_placement_is_decided_once_a_decision_of_it_holds_a_cluster() -> None:
    def pd(placement: str, clusters: list[str]) -> dict[str, Any]:
        labels = {"cluster.open-cluster-management.io/placement": placement}
        status = {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]}
        return {"metadata": {"labels": labels}, "status": status}

    written: list[dict[str, Any]] = [pd("a", ["c1"]), pd("b", [])]
    written.append({"metadata": {}, "status": {"decisions": [1]}})
    assert decided(written) == {"a"}
    assert decided([{"metadata": {"labels": {}}}]) == set()


def test_the_table_shows_medians_and_every_run() -> None:
    run = dict.fromkeys(COLUMNS, 1.0)
    runs = [
        {"controller": "ours", **run},
        {"controller": "ours", **run, "ready": 3.0},
        {"controller": "ocm", **run, "all_decided": None},
    ]
    text = table({"runs": runs})
    assert "| ours | 1.00 (1.00 / 1.00) | 2.00 (1.00 / 3.00) |" in text
    assert "— (never)" in text


@pytest.mark.skipif(not os.environ.get("KUBEBUILDER_ASSETS"), reason="needs a real control plane")
def test_both_controllers_start_decide_and_stop_on_a_real_apiserver() -> None:
    argv = ["--clusters", "10", "--placements", "2", "--select", "2", "--rounds", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "perf.hub_start", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(done.stdout.splitlines()[0])
    assert [r["controller"] for r in result["runs"]] == ["ours", "ocm"]
    for figures in result["runs"]:
        assert figures["exit_code"] == 0, figures
        assert None not in (figures[c] for c in COLUMNS), figures
        assert figures["first_decision"] <= figures["all_decided"]
